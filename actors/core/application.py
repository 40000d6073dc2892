"""Applications: the state machine, pending asks in order, allocations, usage, the state log, and a
gang's placeholders (counted per task group, with the timer that ends the reservation)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from enum import Enum

from sortedcontainers import SortedKeyList

from actors.core.allocation import Allocation
from si import si_pb2
from si.constants import APP_TAG_DISABLE_STATE_AWARE
from si.resources import Resource, component_max
from si.statemachine import Transitions
from si.states import ApplicationState, GangStyle, Reason

_S = ApplicationState
NEW, ACCEPTED, STARTING, RUNNING = _S.NEW, _S.ACCEPTED, _S.STARTING, _S.RUNNING
COMPLETING, COMPLETED, FAILING, FAILED = _S.COMPLETING, _S.COMPLETED, _S.FAILING, _S.FAILED
REJECTED, RESUMING, EXPIRED = _S.REJECTED, _S.RESUMING, _S.EXPIRED
SOFT, HARD = GangStyle.SOFT, GangStyle.HARD
DEFAULT_PLACEHOLDER_TIMEOUT = 15 * 60.0
RESERVATION_TIMEOUT = Reason.RESERVATION_TIMEOUT  # why a Hard gang that timed out fails
ACTIVE = (NEW, ACCEPTED, STARTING, RUNNING, COMPLETING, FAILING, RESUMING)
TERMINATED = (COMPLETED, FAILED, REJECTED)


class ToState(Enum):
    """The core's application events: each leads to the state it names (the partition decides which, from
    what happened and the state the application is in)."""

    ACCEPTED = ACCEPTED
    STARTING = STARTING
    RUNNING = RUNNING
    COMPLETING = COMPLETING
    COMPLETED = COMPLETED
    FAILING = FAILING
    FAILED = FAILED
    REJECTED = REJECTED
    RESUMING = RESUMING
    EXPIRED = EXPIRED


# The transitions YuniKorn allows (plus the stateaware Starting state); anything else is a bug.
_LIVE = (NEW, ACCEPTED, STARTING, RUNNING, COMPLETING)
TRANSITIONS = Transitions({
    ToState.ACCEPTED: ((NEW, RESUMING), ACCEPTED),
    ToState.STARTING: ((ACCEPTED,), STARTING),
    ToState.RUNNING: ((ACCEPTED, STARTING, RUNNING, COMPLETING), RUNNING),
    ToState.COMPLETING: ((ACCEPTED, STARTING, RUNNING), COMPLETING),
    ToState.COMPLETED: (_LIVE, COMPLETED),
    ToState.FAILING: (_LIVE, FAILING),
    ToState.FAILED: ((FAILING,), FAILED),
    ToState.REJECTED: ((NEW,), REJECTED),
    ToState.RESUMING: ((NEW, ACCEPTED), RESUMING),
    ToState.EXPIRED: (TERMINATED, EXPIRED),
})
_EVENTS = {event.value: event for event in ToState}
STATE_EVENTS = {
    NEW: si_pb2.EventRecord.APP_NEW, ACCEPTED: si_pb2.EventRecord.APP_ACCEPTED,
    STARTING: si_pb2.EventRecord.APP_STARTING, RUNNING: si_pb2.EventRecord.APP_RUNNING,
    COMPLETING: si_pb2.EventRecord.APP_COMPLETING, COMPLETED: si_pb2.EventRecord.APP_COMPLETED,
    FAILING: si_pb2.EventRecord.APP_FAILING, FAILED: si_pb2.EventRecord.APP_FAILED,
    REJECTED: si_pb2.EventRecord.APP_REJECT, RESUMING: si_pb2.EventRecord.APP_RESUMING,
    EXPIRED: si_pb2.EventRecord.APP_EXPIRED,
}


class PlaceholderData:
    """One task group's placeholders: asked or found (``count``), taken over by a real pod
    (``replaced``), and ended otherwise (``timed_out``: the timer, an oversized real pod, a deleted pod)."""

    __slots__ = ("task_group", "count", "replaced", "timed_out", "min_resource")

    def __init__(self, task_group: str, min_resource: Resource) -> None:
        self.task_group = task_group
        self.min_resource = min_resource
        self.count = self.replaced = self.timed_out = 0

    @property
    def replaceable(self) -> bool:
        return self.count > self.replaced + self.timed_out


class Application:
    __slots__ = ("application_id", "partition", "queue_path", "user", "groups", "tags", "state", "state_since",
                 "state_log", "submission_time", "arrived", "finished_time", "asks", "ask_index", "allocations", "used", "max_used",
                 "pending", "rejected_message", "state_aware", "placeholder_ask", "placeholder_timeout", "gang_style",
                 "placeholders", "allocated_placeholder", "placeholder_deadline", "replacing", "version",
                 "unplaced_attempts", "backoff_until")

    def __init__(self, request: si_pb2.AddApplicationRequest, partition: str, queue_path: str, now: int,
                 arrived: int = 0) -> None:
        self.application_id = request.applicationID
        self.partition = partition
        self.queue_path = queue_path
        self.user = request.ugi.user or "nobody"
        self.groups = tuple(request.ugi.groups)
        self.tags: Mapping[str, str] = dict(request.tags)
        self.state = NEW
        self.state_since = now
        self.state_log: list[tuple[int, str]] = [(now, NEW)]
        self.submission_time = now
        self.arrived = arrived  # the order the partition received it in: under a virtual clock many share a time
        self.finished_time = 0
        self.asks: SortedKeyList = SortedKeyList(key=Allocation.sort_key)
        self.ask_index: dict[str, Allocation] = {}
        self.allocations: dict[str, Allocation] = {}
        self.used = Resource()
        self.max_used = self.used  # the same object while usage is at its peak (add_allocation)
        self.pending = Resource()
        self.rejected_message = ""
        disable = (self.tags.get(APP_TAG_DISABLE_STATE_AWARE, "") or self.tags.get("disableStateAware", ""))
        self.state_aware = disable.lower() != "true"
        self.placeholder_ask = Resource.from_proto(request.placeholderAsk)
        timeout_ms = request.executionTimeoutMilliSeconds
        self.placeholder_timeout = timeout_ms / 1000 if timeout_ms > 0 else DEFAULT_PLACEHOLDER_TIMEOUT
        self.gang_style = HARD if request.gangSchedulingStyle == HARD else SOFT
        self.placeholders: dict[str, PlaceholderData] = {}  # task group -> its placeholders
        self.allocated_placeholder = Resource()
        self.placeholder_deadline = 0  # ns since the epoch when the reservation times out; 0: no timer
        self.replacing: dict[str, Allocation] = {}  # real ask key -> the placeholder it takes over
        self.version = 0  # bumped on every change, so snapshots rebuild only what changed
        self.unplaced_attempts = 0  # scheduling attempts in a row that placed none of its asks
        self.backoff_until = 0  # ns since the epoch: skipped until then (its queue's unschedulable-ask backoff)

    def bump(self) -> None:
        """Something readers see changed (an ask's failure, a hold, a victim): its snapshot is rebuilt."""
        self.version += 1

    def back_off(self, until: int) -> None:
        """Skipped by the cycle until ``until`` (ns; 0: tried again now)."""
        self.unplaced_attempts = 0
        self.backoff_until = until
        self.version += 1

    def unplaced(self, limit: int) -> bool:
        """A scheduling attempt placed none of its asks; True at the ``limit``-th in a row (counted anew)."""
        self.unplaced_attempts += 1
        if self.unplaced_attempts < limit:
            return False
        self.unplaced_attempts = 0
        return True

    def placed(self) -> None:
        self.unplaced_attempts = 0

    def transition(self, state: str, now: int) -> bool:
        """Move to ``state``; False when already there. Raises on a transition YuniKorn forbids."""
        self.version += 1
        if state == self.state:
            return False
        self.state = TRANSITIONS.target(self.state, _EVENTS.get(state, state), f"application {self.application_id}")
        self.state_since = now
        self.state_log.append((now, state))
        if state in TERMINATED:
            self.finished_time = now
        return True

    # Asks.
    def add_ask(self, ask: Allocation) -> Allocation | None:
        """Add or replace a pending ask; returns the replaced one."""
        self.version += 1
        old = self.find_ask(ask.key)
        if old is not None:
            self.asks.remove(old)
            self.pending = self.pending - old.resource
        self.asks.add(ask)
        self.ask_index[ask.key] = ask
        self.pending = self.pending + ask.resource
        return old

    def find_ask(self, key: str) -> Allocation | None:
        return self.ask_index.get(key)

    def remove_ask(self, ask: Allocation) -> None:
        self.version += 1
        asks = self.asks
        if asks and asks[0] is ask:  # the cycle places the first ask in order: no key to compute and look up
            asks.pop(0)
        else:
            asks.remove(ask)
        del self.ask_index[ask.key]
        self.pending = self.pending - ask.resource

    def pending_asks(self) -> Iterator[Allocation]:
        return iter(self.asks)

    @property
    def priority(self) -> int:
        """The highest priority among pending asks (0 without asks)."""
        return self.asks[0].priority if self.asks else 0

    # Allocations.
    def add_allocation(self, allocation: Allocation) -> None:
        self.place(allocation)
        self._use(allocation.resource, all(value >= 0 for value in allocation.resource.values()))

    def place(self, allocation: Allocation) -> None:
        """Add an allocation whose resource ``add_used`` counts later, with others."""
        self.version += 1
        self.allocations[allocation.key] = allocation
        if allocation.placeholder:
            self.allocated_placeholder = self.allocated_placeholder + allocation.resource

    def add_used(self, resources: Sequence[Resource], total: Resource, growing: bool) -> None:
        """Count the resources of allocations added by ``place`` (``total``: their sum; ``growing``: none
        is negative) as ``add_allocation`` counts them one by one, peak included."""
        self.version += 1
        if growing:
            self._use(total, True)  # usage that only grows peaks at its end
            return
        for resource in resources:
            self._use(resource, all(value >= 0 for value in resource.values()))

    def _use(self, resource: Resource, growing: bool) -> None:
        at_peak = self.max_used is self.used
        self.used = self.used + resource
        # Usage that only grew is its own peak: the common case (a recovery, a burst) skips the comparison.
        if at_peak and growing:
            self.max_used = self.used
        else:
            peak = component_max(self.max_used, self.used)
            self.max_used = self.used if peak == self.used else peak

    def remove_allocation(self, key: str) -> Allocation | None:
        self.version += 1
        allocation = self.allocations.pop(key, None)
        if allocation is not None:
            self.used = self.used - allocation.resource
            if allocation.placeholder:
                self.allocated_placeholder = self.allocated_placeholder - allocation.resource
        return allocation

    def resize(self, allocation: Allocation, resource: Resource) -> None:
        self.version += 1
        self.used = self.used + (resource - allocation.resource)
        self.max_used = component_max(self.max_used, self.used)

    @property
    def is_empty(self) -> bool:
        return not self.asks and not self.allocations and not self.replacing

    # Gang placeholders.
    def count_placeholder(self, placeholder: Allocation, now: int) -> None:
        """A placeholder asked for or found running; the first one starts the reservation's timer."""
        data = self.placeholders.get(placeholder.task_group)
        if data is None:
            data = self.placeholders[placeholder.task_group] = PlaceholderData(placeholder.task_group,
                                                                                 placeholder.resource)
        data.count += 1
        if not self.placeholder_deadline:
            self.placeholder_deadline = now + int(self.placeholder_timeout * 1e9)
        self.version += 1

    def placeholder_ended(self, placeholder: Allocation, replaced: bool) -> None:
        data = self.placeholders.get(placeholder.task_group)
        if data is not None:
            if replaced:
                data.replaced += 1
            else:
                data.timed_out += 1
        if not any(d.replaceable for d in self.placeholders.values()):
            self.placeholder_deadline = 0
        self.version += 1

    def stop_placeholder_timer(self) -> None:
        self.placeholder_deadline = 0
        self.version += 1

    def waits_for_placeholder(self, ask: Allocation) -> bool:
        """Whether a real pod's ask is to take over a placeholder of its task group rather than be
        placed on its own (placeholders of its group remain)."""
        if ask.placeholder or not ask.task_group:
            return False
        data = self.placeholders.get(ask.task_group)
        return data is not None and data.replaceable

    def all_placeholders_allocated(self) -> bool:
        return not self.placeholder_ask.is_zero() and self.placeholder_ask.fits_in(self.allocated_placeholder)
