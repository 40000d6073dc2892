"""The core's event ring: a bounded, id-numbered history of EventRecords, readable while it is written.

It is the one publication channel the core shares with readers (REST batch and stream endpoints); it
is written by partition actors and read by HTTP threads, so it guards itself with a lock and hands out
only immutable protobuf copies. It keeps the events as the partitions noted them and builds a record
when a reader takes one: a recovery notes one per allocation found, which nobody may ever read.

It is also upstream's event store: what the resource manager is told, at most ``event.requestCapacity``
events per push interval (upstream's publisher collects the store every 2 s; the store takes no more
meanwhile), and, beyond that, every event about an ask (the shim's pod events).
"""

from __future__ import annotations

import functools
import itertools
import queue
import threading
import uuid
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

from si import si_pb2
from si.resources import Resource


def resource_wire(resource: Resource) -> bytes:
    """``resource`` as a serialized ``si.Resource``: merging it into a message costs a fraction of setting
    each quantity (the core writes one per allocation and per event). Known by the vector itself first:
    the allocations of a workload share one (``actors.core.allocation``), and vectors never change."""
    known = _wires_of_vectors.get(id(resource))
    if known is not None and known[0] is resource:
        return known[1]
    wire = _wire(tuple(resource.items()))
    if len(_wires_of_vectors) >= WIRES_KEPT:
        _wires_of_vectors.clear()  # one atomic step: partitions of other threads share the cache
    _wires_of_vectors[id(resource)] = (resource, wire)  # the vector held: its id is not reused meanwhile
    return wire


WIRES_KEPT = 4096
_wires_of_vectors: dict[int, tuple[Resource, bytes]] = {}


@functools.lru_cache(maxsize=4096)  # by shape: a cluster's pods come in few
def _wire(shape: tuple[tuple[str, int], ...]) -> bytes:
    return Resource(dict(shape)).to_proto().SerializeToString()


@functools.lru_cache(maxsize=4096)
def _kind_record(type_: int, detail: int, change: int, resource: bytes) -> si_pb2.EventRecord:
    """A record of the fields events of one kind and resource share (only ever copied: a record per
    running allocation a recovery finds copies it, and sets its own few fields)."""
    event = si_pb2.EventRecord(type=type_, eventChangeDetail=detail, eventChangeType=change)
    if resource:
        event.resource.MergeFromString(resource)
    return event


class PendingEvent(NamedTuple):
    """An event as a partition notes it (immutable: its resource vector never changes). Its EventRecord
    is built only if a reader takes it: a recovery notes one per allocation found."""

    type: int
    object_id: str
    detail: int
    change: int
    message: str
    reference: str
    resource: Resource | None
    timestamp: int

    def record(self) -> si_pb2.EventRecord:
        resource = self.resource
        # Copied from a record of the fields its kind and resource share (an empty vector sets no field),
        # then its own set one by one: less than building it from keywords, or parsing the shared fields.
        event = EventRecord()
        event.CopyFrom(_kind_record(self.type, self.detail, self.change, resource_wire(resource) if resource else b""))
        event.objectID = self.object_id
        if self.message:
            event.message = self.message
        if self.reference:
            event.referenceID = self.reference
        event.timestampNano = self.timestamp
        return event


EventRecord = si_pb2.EventRecord
REQUEST = si_pb2.EventRecord.REQUEST
PUSH_INTERVAL_NS = 2 * 10**9  # upstream's publisher sends the store's events to the resource manager this often


def _recorded(entries: Sequence[tuple[int, PendingEvent]]) -> list[tuple[int, si_pb2.EventRecord]]:
    return [(event_id, event.record()) for event_id, event in entries]


class EventRing:
    """The ring, sized and switched by the ``event.*`` settings (``configure``): ``tracking`` off stores
    nothing; at most ``request_capacity`` events of one batch are taken, the rest are counted as not
    channeled (upstream's events beyond its intake channel); ``max_streams`` readers listen at once, at
    most ``max_streams_per_host`` from one host."""

    def __init__(self, capacity: int = 100_000, max_streams: int = 100) -> None:
        self.instance_uuid = str(uuid.uuid4())
        self.capacity = capacity
        self.max_streams = max_streams
        self.max_streams_per_host = 15
        self.tracking = True
        self.request_capacity = 1000
        self.rest_response_size = 10_000
        self._events: deque[tuple[int, PendingEvent]] = deque(maxlen=capacity)
        self._next_id = 0
        self._lock = threading.Lock()
        self._streams: dict[queue.Queue, str] = {}  # -> the reader's host
        self.dropped = 0  # events stalled stream readers lost
        self.not_channeled = 0  # events of a batch beyond request_capacity
        # The store: when its push interval began (the events' own clock), and what it took since.
        self._interval_began: int | None = None
        self._stored_in_interval = 0
        self.stored = 0  # events told to the resource manager
        self.not_stored = 0  # events the store had no room for (none about an ask)

    def configure(self, tracking: bool, capacity: int, request_capacity: int, max_streams: int,
                  max_streams_per_host: int, rest_response_size: int) -> None:
        """Apply the ``event.*`` settings; a smaller ring keeps its newest events."""
        with self._lock:
            self.tracking, self.request_capacity = tracking, request_capacity
            self.max_streams, self.max_streams_per_host = max_streams, max_streams_per_host
            self.rest_response_size = rest_response_size
            if capacity != self.capacity or not tracking:
                self.capacity = capacity
                self._events = deque(self._events if tracking else (), maxlen=capacity)

    @property
    def created(self) -> int:
        """Events added since the start (ids are 0 .. created - 1)."""
        return self._next_id

    def add(self, events: Sequence[PendingEvent]) -> list[si_pb2.EventRecord]:
        """Keep the first ``request_capacity`` of a batch (count the rest as not channeled); returns the
        records of the events the store takes for the resource manager."""
        told = self._store(events)
        records = self._keep(events) if self.tracking else None
        # A record built for stream readers is the one the resource manager is told (a history store reads
        # the stream, so most are built there): each is built once.
        return [records[i] if records is not None and i < len(records) else events[i].record() for i in told]

    def _keep(self, events: Sequence[PendingEvent]) -> list[si_pb2.EventRecord] | None:
        """Keep the first ``request_capacity`` of ``events`` in the ring and hand them to stream readers;
        the records built for those readers (None when there were none)."""
        kept = events[:self.request_capacity]
        # Stream readers take records: built before readers are held up (a reader's arrival meanwhile
        # has them built under the lock).
        records = [event.record() for event in kept] if self._streams else None
        with self._lock:
            if not self.tracking:  # switched off meanwhile
                return records
            self.not_channeled += len(events) - len(kept)
            first = self._next_id
            self._next_id = first + len(kept)
            self._events.extend(zip(itertools.count(first), kept))
            if self._streams:
                if records is None:
                    records = [event.record() for event in kept]
                self._publish(list(zip(itertools.count(first), records)))
        return records

    def _store(self, events: Sequence[PendingEvent]) -> list[int]:
        """The indexes in ``events`` of those the resource manager is told: every event about an ask, and
        the others while the store has room in their push interval (none while tracking is off)."""
        room = self.request_capacity if self.tracking else 0
        with self._lock:
            began, stored = self._interval_began, self._stored_in_interval
            if stored >= room and began is not None and events and events[-1].timestamp - began < PUSH_INTERVAL_NS:
                # The store is full for the whole batch (most of a recovery's batches): only asks' events go.
                told = [i for i, event in enumerate(events) if event.type == REQUEST]
            else:
                told = []
                for i, event in enumerate(events):
                    if event.type != REQUEST:
                        if began is None or event.timestamp - began >= PUSH_INTERVAL_NS:
                            began, stored = event.timestamp, 0
                        if stored >= room:
                            continue
                        stored += 1
                    told.append(i)
                self._interval_began, self._stored_in_interval = began, stored
            self.stored += len(told)
            self.not_stored += len(events) - len(told)
        return told

    def _publish(self, entries: list[tuple[int, si_pb2.EventRecord]]) -> None:
        """Hand ``entries`` to every stream reader (the lock held)."""
        for stream in self._streams:
            for entry in entries:
                try:
                    stream.put_nowait(entry)
                except queue.Full:  # a stalled reader loses events rather than holding the core back
                    self.dropped += len(entries) - entries.index(entry)
                    break

    def batch(self, start: int = 0, count: int = 10_000) -> tuple[int, int, tuple[tuple[int, si_pb2.EventRecord], ...]]:
        """``(lowest_id, highest_id, events)`` with ids from ``start``, at most ``count`` of them."""
        with self._lock:
            if not self._events:
                return 0, -1, ()
            lowest, highest = self._events[0][0], self._events[-1][0]
            offset = max(start - lowest, 0)
            if offset >= len(self._events):
                return lowest, highest, ()
            picked = [self._events[i] for i in range(offset, min(offset + count, len(self._events)))]
        return lowest, highest, tuple(_recorded(picked))

    def subscribe(self, host: str = "", limit: int | None = None, size: int = 10_000) -> queue.Queue | None:
        """A queue of new ``(id, event)`` entries; None when ``max_streams`` readers (or ``limit``, if
        lower), or ``max_streams_per_host`` from ``host``, already listen."""
        with self._lock:
            from_host = sum(1 for h in self._streams.values() if h == host)
            most = self.max_streams if limit is None else min(limit, self.max_streams)
            if len(self._streams) >= most or from_host >= self.max_streams_per_host:
                return None
            stream: queue.Queue = queue.Queue(maxsize=size)
            self._streams[stream] = host
            return stream

    def unsubscribe(self, stream: queue.Queue) -> None:
        with self._lock:
            self._streams.pop(stream, None)

    def __len__(self) -> int:
        return len(self._events)
