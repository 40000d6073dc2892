"""Asks and allocations as the core keeps them: one record per allocation key."""

from __future__ import annotations

from sys import intern

from actors.core.events import resource_wire
from si import si_pb2
from si.constants import TAG_FOREIGN, TAG_REQUIRED_NODE
from si.resources import Resource

NO_NODES = "no nodes available to schedule pods"
SHAPES_KEPT = 4096

# Serialized resource -> (its vector, its sorted items): the pods of a workload share one shape, so
# their records share one immutable vector instead of each parsing its own (a recovery reads 100,000).
_shapes: dict[bytes, tuple[Resource, tuple]] = {}


def _shape(message: si_pb2.Resource) -> tuple[Resource, tuple]:
    wire = message.SerializeToString()
    known = _shapes.get(wire)
    if known is None:
        if len(_shapes) >= SHAPES_KEPT:
            _shapes.clear()  # one atomic step: partitions of other threads share the cache
        resource = Resource.from_proto(message)  # from the message: its order is the one shown
        known = _shapes[wire] = (resource, tuple(sorted(resource.items())))
    return known


def shared_resource(message: si_pb2.Resource) -> Resource:
    """The vector of ``message``, shared with every other of its shape (nodes of one machine type, too)."""
    return _shape(message)[0]


def is_node_failure(reason: str) -> bool:
    """Whether ``reason`` says that no node takes the ask (rather than a quota or limit holding it)."""
    return reason.startswith("0/") or reason == NO_NODES


class Allocation:
    """An ask (``node_id`` empty) or an allocation on a node. Mutable only inside its owning partition."""

    __slots__ = ("key", "application_id", "partition", "resource", "priority", "tags", "node_id", "request_time",
                 "allocation_time", "arrived", "booked", "placeholder", "task_group", "originator", "foreign", "preemptable",
                 "required_node", "constrained", "shape", "last_failure", "attempted", "failure_log",
                 "scale_up_triggered", "placeholder_released", "replacement", "placeholder_used", "preempts_others",
                 "preempted", "eviction_refused", "triggered_preemption", "preempting", "preempted_by", "reserved",
                 "picture", "json")

    def __init__(self, message: si_pb2.Allocation, partition: str, now: int, arrived: int = 0,
                 constrained: bool = False) -> None:
        self.key = message.allocationKey
        self.application_id = message.applicationID
        self.partition = partition
        self.resource, items = _shape(message.resourcePerAlloc)
        self.priority = message.priority
        tags = message.allocationTags
        # One copy of each name for all records (upb makes a new one at each read: a recovery's 100,000
        # records held about 40 MiB of them). dict(map) goes through Mapping's generic views, slower.
        self.tags = tags = {intern(name): tags[name] for name in tags}
        self.node_id = node_id = message.nodeID
        self.request_time = now
        self.allocation_time = now if node_id else 0
        # The order the partition received and booked it in: under a virtual clock many share a time.
        self.arrived = arrived
        self.booked = 0
        self.placeholder = message.placeholder
        self.task_group = message.taskGroupName
        self.originator = message.originator
        self.foreign = bool(tags.get(TAG_FOREIGN))
        if message.HasField("preemptionPolicy"):
            policy = message.preemptionPolicy
            self.preemptable, self.preempts_others = policy.allowPreemptSelf, policy.allowPreemptOther
        else:
            self.preemptable = self.preempts_others = True
        self.required_node = required_node = tags.get(TAG_REQUIRED_NODE, "")
        self.constrained = constrained
        # Asks of one shape that fail on every node this cycle fail alike: the cycle skips the rest.
        self.shape = (items, required_node) if not constrained else None
        self.last_failure = ""
        self.attempted = False
        self.failure_log: dict[str, list[int]] | None = None  # reason -> [last time it was given, times]
        self.scale_up_triggered = False  # the resource manager heard that no node fits it
        # A placeholder the core gave up (its termination type; 0: not given up): it stays booked on its
        # node until the resource manager confirms its pod is gone, then ``replacement`` takes its place.
        self.placeholder_released = 0
        self.replacement: Allocation | None = None
        self.placeholder_used = False  # a real allocation that took over a placeholder
        # Preemption (actors.core.preemption): a victim is ``preempted`` (by the InFlight in
        # ``preempted_by``) and stays booked until the resource manager confirms it gone; an ask that
        # preempted holds its node meanwhile (``preempting``); a refused eviction makes no victim again.
        self.preempted = False
        self.eviction_refused = False
        self.triggered_preemption = False
        self.preempting = None
        self.preempted_by = None
        self.reserved = None  # the Reservation of a node this ask holds (actors.core.reservation)
        # Its last snapshot for readers (actors.core.views) and its JSON as a node lists it
        # (actors.core.nodejson), kept while it is unchanged: whatever changes a field they show (its
        # resource, node, allocation time, placeholder_used, preempted) sets both to None, so a changed
        # node takes its unchanged allocations' pictures and JSON as they are.
        self.picture = None
        self.json: bytes | None = None

    def note_failure(self, reason: str, now: int, logged: str = "") -> None:
        """``reason`` is now why this ask waits (called when the reason changes); the allocation log
        counts ``logged`` for it when given (one of upstream's constant texts)."""
        self.last_failure = reason
        self.log_failure(logged or reason, now)

    def log_failure(self, reason: str, now: int) -> None:
        """Count ``reason`` in the allocation log."""
        log = self.failure_log
        if log is None:
            log = self.failure_log = {}
        entry = log.get(reason)
        if entry is None:
            log[reason] = [now, 1]
        else:
            entry[0] = now
            entry[1] += 1

    def youth(self) -> tuple[int, int]:
        """Sorts the youngest allocation first."""
        return (-self.allocation_time, -self.booked)

    def sort_key(self) -> tuple:
        """Pending asks: highest priority first, then oldest."""
        return (-self.priority, self.request_time, self.arrived, self.key)

    def to_proto(self) -> si_pb2.Allocation:
        message = si_pb2.Allocation()
        self.fill(message)
        return message

    def fill(self, message: si_pb2.Allocation) -> None:
        """Write this allocation into an empty ``message`` in place: a message of a response filled where
        it lies costs half of one built, then copied in (the core does it for every allocation)."""
        message.allocationKey = self.key
        message.applicationID = self.application_id
        message.partitionName = self.partition
        message.nodeID = self.node_id
        message.priority = self.priority
        message.resourcePerAlloc.MergeFromString(resource_wire(self.resource))
        tags = message.allocationTags
        for name, value in self.tags.items():  # the map built from a dict goes through Mapping's generic update
            tags[name] = value
        message.taskGroupName = self.task_group
        message.placeholder = self.placeholder
        message.originator = self.originator
