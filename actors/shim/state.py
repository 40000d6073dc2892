"""The shim's state as readers see it: immutable views, snapshots of them, and the board holding both.

Node and application actors publish the views of what they own on the ``StateBoard`` as it changes
(immutable records, under the board's locks: a publication channel, never state an actor reads back).
``ShimContext`` answers ``ShimStateRequest`` with a fresh ``ShimStateSnapshot`` once the actors have
handled what they were told, and publishes its own part (the scheduler state and the recovery's
progress) on every change. ``board.latest()`` pictures the views on the reader's thread, at most once
per ``max_age`` while only views change (at once when the scheduler state does), so REST reads without
stopping the shim, and nothing is pictured while nobody reads.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable

from actors.base import constructor, message, record
from actors.shim.lifecycle import SchedulerState, TaskState
from si.resources import Resource

FOREIGN = "Foreign"  # the state shown for a pod of another scheduler
PLACED = frozenset({TaskState.ALLOCATED, TaskState.BOUND, FOREIGN})


@record
class RecoveryProgress:
    nodes_total: int
    nodes_recovered: int
    pods_recovered: int
    complete: bool = False  # every node the recovery started with has recovered


@message  # set through its slots, as messages are: a node shows a view at each of its states
class NodeView:
    """``pods`` is filled in when a snapshot is taken (the board counts placed pods per node)."""

    name: str
    schedulable: bool
    recovered: bool
    allocatable: Resource
    pods: int
    state: str = ""


@message  # a frozen slotted dataclass set through its slots: a view is made for every pod a recovery counts
class PodView:
    uid: str
    namespace: str
    name: str
    application_id: str
    state: str
    node: str
    foreign: bool


pod_view = constructor(PodView)  # as ``PodView(...)``, at half the cost: a view is made for every pod


@record
class AppView:
    application_id: str
    queue: str
    user: str
    state: str
    tasks: int


@record
class ShimStateSnapshot:
    """``state`` is the scheduler state (``New`` ... ``Running``); times are ns since the epoch
    (0 = not yet); ``pods`` holds YuniKorn tasks and the foreign pods counted on nodes."""

    state: str
    registered_at: int
    recovery: RecoveryProgress
    nodes: tuple[NodeView, ...]
    pods: tuple[PodView, ...]
    applications: tuple[AppView, ...]
    taken_at: int


def recovered(state: str, recovery: RecoveryProgress) -> bool:
    """Every node has recovered: ``Running``, or a standby that recovered ahead of leading."""
    return state == SchedulerState.RUNNING or (state == SchedulerState.RECOVERING and recovery.complete)


class PodViews:
    """The latest ``PodView`` of every pod the shim shows, and how many of them are placed on each
    node, kept up to date as views change: a snapshot copies them instead of recounting every pod
    (at 50,000 pods the recount was 7% of the scheduler's time). Written by the actors that own the
    pods, read by whoever takes a snapshot: every call holds the lock."""

    def __init__(self) -> None:
        self._views: dict[str, PodView] = {}
        self._placed_per_node: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.version = 0

    def show(self, view: PodView) -> None:
        self.show_all((view,))

    def show_all(self, views: Iterable[PodView]) -> None:
        with self._lock:
            for view in views:
                old = self._views.get(view.uid)
                self._views[view.uid] = view
                placed = view.state in PLACED
                if old is not None and old.node == view.node and (old.state in PLACED) == placed:
                    continue  # the per-node count is unchanged (e.g. Allocated -> Bound)
                if old is not None:
                    self._uncount(old)
                if placed:
                    self._placed_per_node[view.node] += 1
            self.version += 1

    def hide(self, uid: str) -> None:
        with self._lock:
            self._hide(uid)
            self.version += 1

    def _hide(self, uid: str) -> None:
        view = self._views.pop(uid, None)
        if view is not None:
            self._uncount(view)

    def _uncount(self, view: PodView) -> None:
        if view.state in PLACED:
            self._placed_per_node[view.node] -= 1
            if not self._placed_per_node[view.node]:
                del self._placed_per_node[view.node]

    def all(self) -> tuple[tuple[PodView, ...], dict[str, int]]:
        """Every view, and the placed pods per node, as of one moment."""
        with self._lock:
            return tuple(self._views.values()), dict(self._placed_per_node)


class Views:
    """The latest view each actor published of what it owns (a node, an application), by key."""

    def __init__(self) -> None:
        self._views: dict[str, NodeView | AppView] = {}
        self._lock = threading.Lock()
        self.version = 0

    def show(self, key: str, view: NodeView | AppView) -> None:
        with self._lock:
            self._views[key] = view
            self.version += 1

    def hide(self, key: str) -> None:
        with self._lock:
            self._views.pop(key, None)
            self.version += 1

    def all(self) -> tuple:
        with self._lock:
            return tuple(self._views.values())


class StateBoard:
    """The views the shim's actors publish as they change (``pods``, ``nodes``, ``apps``), the context's
    part of the state, the latest picture of both (``latest``), and the pods' constraints the scheduler
    does not enforce, counted per kind (``unenforced``): safe to read from any thread."""

    def __init__(self, max_age: float = 1.0) -> None:
        self.pods = PodViews()
        self.nodes = Views()
        self.apps = Views()
        self._unenforced: Counter[str] = Counter()
        self._unenforced_lock = threading.Lock()
        self.max_age = max_age
        self._header: tuple[str, int, RecoveryProgress] | None = None  # the context's part
        self._changed = threading.Condition()
        self._latest: ShimStateSnapshot | None = None
        self._latest_of: tuple | None = None  # the header and views version it pictures
        self._latest_at = 0.0
        self._picturing = threading.Lock()

    def count_unenforced(self, constraints: tuple[str, ...]) -> None:
        """A pod was warned that these constraints of it are not enforced (once per pod)."""
        with self._unenforced_lock:
            self._unenforced.update(constraints)

    def unenforced(self) -> dict[str, int]:
        """Pods warned of each constraint the scheduler does not enforce, since the shim started."""
        with self._unenforced_lock:
            return dict(self._unenforced)

    @property
    def version(self) -> tuple[int, int, int]:
        return self.pods.version, self.nodes.version, self.apps.version

    def snapshot(self, state: str, registered_at: int, recovery: RecoveryProgress) -> ShimStateSnapshot:
        pods, placed = self.pods.all()
        nodes = tuple(NodeView(n.name, n.schedulable, n.recovered, n.allocatable, placed.get(n.name, 0), n.state)
                      for n in self.nodes.all())
        return ShimStateSnapshot(state, registered_at, recovery, nodes, pods, self.apps.all(), time.time_ns())

    def publish(self, state: str, registered_at: int, recovery: RecoveryProgress) -> None:
        """The context's part of the state, as it changes."""
        with self._changed:
            self._header = (state, registered_at, recovery)
            self._changed.notify_all()

    def scheduler_state(self) -> tuple[str, RecoveryProgress] | None:
        """The context's part alone (nothing pictured): the scheduler state and the recovery's progress."""
        header = self._header
        return None if header is None else (header[0], header[2])

    def latest(self) -> ShimStateSnapshot | None:
        """The state as last pictured: pictured again when the context's part changed, or when views
        changed and the last picture is ``max_age`` seconds old; ``None`` before the context published."""
        header = self._header
        if header is None:
            return None
        with self._picturing:
            latest, pictured = self._latest, (header, self.version)
            if latest is None or (self._latest_of != pictured and (
                    self._latest_of[0] != header or time.monotonic() - self._latest_at >= self.max_age)):
                latest = self._latest = self.snapshot(*header)
                self._latest_of, self._latest_at = pictured, time.monotonic()
            return latest

    def wait_for_state(self, state: str, timeout: float) -> bool:
        """Block until the context publishes ``state`` (or ``timeout`` seconds pass)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._header is not None and self._header[0] == state, timeout)
