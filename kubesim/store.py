"""The object store: one lock, one cluster-wide resourceVersion, a bounded history, live watchers.

Stored objects are never mutated after they are stored (writers store new dicts), so readers and
watchers may hold references to them outside the lock.
"""

from __future__ import annotations

import copy
import queue
import random
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson

from kubesim import errors
from kubesim.resources import Kind

Key = tuple[str, str, str]  # (plural, namespace, name)
# apimachinery's alphabet of generated name suffixes (no vowels, no look-alikes).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def clone(obj: dict) -> dict:
    """A deep copy of a stored object, to modify and store anew. Stored objects are plain JSON data,
    so an orjson round trip copies them (about ten times faster than ``copy.deepcopy``)."""
    return orjson.loads(orjson.dumps(obj))


_stamp = (0, "")  # (second, its RFC 3339 text): a burst of writes formats each second once


def now_rfc3339() -> str:
    global _stamp
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _stamp[1]


@dataclass(slots=True)
class Event:
    """One change; ``old`` is the object before it (None for ADDED)."""

    rv: int
    kind: Kind
    type: str  # ADDED, MODIFIED, DELETED
    old: dict | None
    new: dict


class Watcher:
    """A live watch: events go into a bounded queue drained by the serving thread."""

    CLOSED = object()
    DROPPED = object()

    def __init__(self, kind: Kind, namespace: str | None, matcher: Callable[[dict], bool] | None,
                 capacity: int) -> None:
        self.kind = kind
        self.namespace = namespace
        self.matcher = matcher
        self.queue: queue.Queue = queue.Queue(maxsize=capacity)
        self.overflowed = False

    def translate(self, event: Event) -> tuple[str, dict] | None:
        """The event as this watcher sees it, given its namespace and selectors (None: not seen)."""
        obj = event.new
        if self.namespace and obj.get("metadata", {}).get("namespace") != self.namespace:
            return None
        if self.matcher is None:
            return event.type, obj
        was = event.old is not None and self.matcher(event.old)
        if event.type == "DELETED":
            return ("DELETED", obj) if self.matcher(obj) or was else None
        now = self.matcher(obj)
        if now and was:
            return "MODIFIED", obj
        if now:
            return "ADDED", obj
        if was:  # the object left the selection: the watcher sees it deleted, as a real server does
            return "DELETED", obj
        return None

    def offer(self, item) -> None:
        try:
            self.queue.put_nowait(item)
        except queue.Full:
            self.overflowed = True


class Store:
    def __init__(self, history_size: int = 10000, watch_queue_size: int = 100000) -> None:
        self.lock = threading.RLock()
        self.objects: dict[Key, dict] = {}
        # The same objects by kind, as an API server's per-resource cache: a list of one kind never walks
        # the others (a list of the priority classes walked every pod).
        self._of_kind: defaultdict[str, dict[Key, dict]] = defaultdict(dict)
        self.rv = 0
        self.history: deque[Event] = deque()
        self.history_size = history_size
        self.compacted_rv = 0  # events with rv <= this one may have left the history
        self.watchers: dict[str, list[Watcher]] = {}
        self.watch_queue_size = watch_queue_size
        self.listeners: list[Callable[[Event], None]] = []

    # Reads.
    def get(self, kind: Kind, namespace: str, name: str) -> dict:
        obj = self.objects.get((kind.plural, namespace, name))
        if obj is None:
            raise errors.not_found(kind, name)
        return obj

    def find(self, kind: Kind, namespace: str, name: str) -> dict | None:
        return self.objects.get((kind.plural, namespace, name))

    def list(self, kind: Kind, namespace: str | None = None,
             matcher: Callable[[dict], bool] | None = None) -> tuple[list[dict], int]:
        with self.lock:
            return list(self._current(kind, namespace, matcher)), self.rv

    # Writes. Each returns the stored object.
    def create(self, kind: Kind, namespace: str, obj: dict, uid: str | None = None) -> dict:
        meta = obj.setdefault("metadata", {})
        with self.lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self.generated_name(kind, namespace, meta["generateName"])
            name = meta.get("name", "")
            key = (kind.plural, namespace, name)
            if key in self.objects:
                raise errors.already_exists(kind, name)
            meta["uid"] = uid or str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if kind.namespaced:
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            if "spec" in obj:
                meta["generation"] = 1
            obj["kind"], obj["apiVersion"] = kind.kind, kind.group_version
            return self._commit(kind, key, "ADDED", None, obj)

    def replace(self, kind: Kind, namespace: str, name: str, obj: dict, expected_rv: str | None) -> dict:
        """Store ``obj`` in place of the current object (optimistic concurrency on ``expected_rv``)."""
        with self.lock:
            key = (kind.plural, namespace, name)
            current = self.objects.get(key)
            if current is None:
                raise errors.not_found(kind, name)
            if expected_rv and expected_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(kind, name)
            meta = obj.setdefault("metadata", {})
            for immutable in ("uid", "creationTimestamp", "namespace", "name", "generation"):
                if immutable in current["metadata"]:
                    meta[immutable] = current["metadata"][immutable]
                else:
                    meta.pop(immutable, None)
            obj["kind"], obj["apiVersion"] = kind.kind, kind.group_version
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
            if obj == current:  # a no-op write keeps the resourceVersion and emits nothing
                return current
            if "spec" in obj and obj.get("spec") != current.get("spec"):
                meta["generation"] = current["metadata"].get("generation", 0) + 1
            return self._commit(kind, key, "MODIFIED", current, obj)

    def delete(self, kind: Kind, namespace: str, name: str) -> dict:
        with self.lock:
            key = (kind.plural, namespace, name)
            current = self.objects.get(key)
            if current is None:
                raise errors.not_found(kind, name)
            final = copy.copy(current)
            final["metadata"] = dict(current["metadata"])
            return self._commit(kind, key, "DELETED", current, final)

    def generated_name(self, kind: Kind, namespace: str, prefix: str) -> str:
        while True:
            name = prefix + "".join(random.choices(_NAME_ALPHABET, k=5))
            if (kind.plural, namespace, name) not in self.objects:
                return name

    def _commit(self, kind: Kind, key: Key, type_: str, old: dict | None, new: dict) -> dict:
        self.rv += 1
        new["metadata"]["resourceVersion"] = str(self.rv)
        if type_ == "DELETED":
            del self.objects[key]
            del self._of_kind[key[0]][key]
        else:
            self.objects[key] = self._of_kind[key[0]][key] = new
        event = Event(self.rv, kind, type_, old, new)
        self.history.append(event)
        while len(self.history) > self.history_size:
            self.compacted_rv = self.history.popleft().rv
        for watcher in self.watchers.get(kind.plural, ()):
            seen = watcher.translate(event)
            if seen is not None:
                watcher.offer(seen)
        for listener in self.listeners:
            listener(event)
        return new

    # Watches.
    def watch(self, kind: Kind, namespace: str | None, matcher, resource_version: str | None) -> Watcher:
        """Register a watcher, replaying history after ``resource_version`` (410 when it has gone)."""
        watcher = Watcher(kind, namespace, matcher, self.watch_queue_size)
        with self.lock:
            if resource_version in (None, "", "0"):
                for obj in self._current(kind, namespace, matcher):
                    watcher.offer(("ADDED", obj))
            else:
                try:
                    since = int(resource_version)
                except ValueError:
                    raise errors.bad_request(f"invalid resource version {resource_version!r}") from None
                if since < self.compacted_rv:
                    raise errors.gone(f"too old resource version: {since} ({self.compacted_rv + 1})")
                for event in self._events_after(since, kind):
                    seen = watcher.translate(event)
                    if seen is not None:
                        watcher.offer(seen)
            self.watchers.setdefault(kind.plural, []).append(watcher)
        return watcher

    def _current(self, kind, namespace, matcher) -> Iterator[dict]:
        for (_, ns, _), obj in self._of_kind.get(kind.plural, {}).items():
            if (not namespace or ns == namespace) and (matcher is None or matcher(obj)):
                yield obj

    def _events_after(self, since: int, kind: Kind) -> Iterator[Event]:
        for event in self.history:
            if event.rv > since and event.kind.plural == kind.plural:
                yield event

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            active = self.watchers.get(watcher.kind.plural, [])
            if watcher in active:
                active.remove(watcher)

    def bookmark_rv(self, watcher: Watcher) -> int | None:
        """The resourceVersion a bookmark may carry now: every earlier event is already queued or sent."""
        with self.lock:
            return self.rv if watcher.queue.empty() else None

    def all_watchers(self) -> list[Watcher]:
        with self.lock:
            return [w for group in self.watchers.values() for w in group]
