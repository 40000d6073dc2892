"""The shim context: the one actor that turns the cluster's state into SI requests and the core's
answers into bindings and Kubernetes events.

State machine (resilience design): ``New`` until every informer has listed; then it registers with the
core (``Registered``), recovers (``Recovering``: nodes registered draining, the applications of pods
already on nodes, then their allocations, YuniKorn and foreign, oldest first, in batches the core
confirms), makes the recovered nodes schedulable and only then submits pending pods (``Running``).
``Shutdown`` moves it to ``Draining``; cluster changes are then ignored. A start-up error leads to
``Failed``.

Pods: ``spec.schedulerName == yunikorn`` pods are tasks of applications, with state machines
(``lifecycle``); other pods on a node are foreign allocations. What the context sends is collected
while further messages wait (or until it grows large) and then sent together: SI requests through an
``Outbox`` (one request per kind for a burst of informer batches), bind requests as one ``Binds``,
events and pod conditions as one ``Feedback``.

In plugin mode (``ContextSettings.plugin_mode``) the binder is the ``handoff`` actor: kube-scheduler
binds, a failed attempt comes back as ``RetractTask``, and the context tells the handoff when a pod it
placed is bound or gone.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pykka

from actors.shim import kinds, translate
from actors.shim.binder import BindOutcome, BindRequest, Binds, DeletePod
from actors.shim.corelink import CoreEvents, CoreLink, ShimCallback
from actors.shim.eventbuffer import NORMAL, WARNING, Feedback, KubeEvent, PodCondition
from actors.shim.handoff import RetractTask, Settled, WaitingReason
from actors.shim.informer import Changes, Deleted, Listed, Updated
from actors.shim.keys import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS
from actors.shim.lifecycle import (
    APP_TERMINAL,
    APP_TRANSITIONS,
    SCHEDULER_TRANSITIONS,
    TASK_TERMINAL,
    TASK_TRANSITIONS,
    AppState,
    SchedulerState,
    StateMachine,
    TaskState,
)
from actors.shim.messages import (
    FlushToCore,
    NodeChanged,
    NodeDeleted,
    NodeGone,
    NodeRecovered,
    PlacedPod,
    PodsLeft,
    PodsOnNode,
    Registered,
    Settle,
    ToCore,
)
from actors.shim.nodeactor import NodeActor
from actors.shim.nodes import NodeRecord
from actors.shim.pods import FAILED, PodRecord
from actors.shim.schedconfig import SchedulerConfigError, ShimConfig, merge
from actors.shim.state import (
    AppView,
    PodView,
    PodViews,
    RecoveryProgress,
    ShimStateRequest,
    ShimStateSnapshot,
    StateBoard,
)
from actors.shim.ticker import Alarms
from si import constants, si_pb2

log = logging.getLogger(__name__)

PARTITION = constants.DEFAULT_PARTITION
FLUSH_AT = 2000  # requests collected before the outbox is sent even though messages still wait
ALL_KINDS = frozenset({kinds.PODS, kinds.NODES, kinds.CONFIGMAPS, kinds.NAMESPACES, kinds.PRIORITY_CLASSES})
_CORE_APP_EVENTS = {"Accepted": ("accept",), "Starting": ("run",), "Running": ("run",),
                    "Completed": ("complete",), "Failing": ("fail",), "Failed": ("fail", "failed")}


@dataclass(frozen=True, slots=True)
class Connect:
    """Tell the context where the binder, the event recorder and the core outlet are, and the alarms
    its node actors use (sent once, before informers start)."""

    binder: pykka.ActorRef
    recorder: pykka.ActorRef
    outlet: pykka.ActorRef
    alarms: Alarms


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Ask: stop taking cluster changes (``Draining``)."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """Ask: the shim has shut down (``Stopped``)."""


@dataclass(frozen=True, slots=True)
class Publish:
    """Publish a snapshot if something changed (told by the service's timer)."""


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """``namespace`` is the scheduler's (where its configmaps live). ``node_lost_after``: seconds a node may stay NotReady before it counts as lost. ``plugin_mode``: kube-scheduler binds (see ``handoff``),
    and only pods that name their application are YuniKorn's; the others are left to kube-scheduler."""

    namespace: str = "default"
    required_kinds: frozenset[str] = ALL_KINDS
    plugin_mode: bool = False
    node_lost_after: float = 300.0


class Task:
    """A YuniKorn pod and its state; its view in ``views`` (for snapshots) follows every transition."""

    __slots__ = ("pod", "machine", "node", "views", "placed_by_core")

    def __init__(self, pod: PodRecord, views: PodViews) -> None:
        self.pod = pod
        self.machine = StateMachine(TASK_TRANSITIONS, TaskState.NEW, f"task {pod.full_name}")
        self.node = ""
        self.views = views
        self.placed_by_core = False
        views.show(self._view())

    @property
    def state(self) -> str:
        return self.machine.state

    def can(self, event: str) -> bool:
        return self.machine.can(event)

    def fire(self, event: str, node: str | None = None) -> str:
        """Fire ``event`` (see ``lifecycle``); ``node`` sets the node the pod is placed on."""
        state = self.machine.fire(event)
        if node is not None:
            self.node = node
            self.placed_by_core = event == "allocate"
        self.views.show(self._view())
        return state

    def _view(self) -> PodView:
        pod = self.pod
        return PodView(pod.uid, pod.namespace, pod.name, pod.app_id, self.machine.state, self.node, False)


class App:
    """An application and the UIDs of its tasks."""

    __slots__ = ("app_id", "queue", "user", "machine", "tasks")

    def __init__(self, pod: PodRecord) -> None:
        self.app_id = pod.app_id
        self.queue = pod.queue
        self.user = pod.user
        self.machine = StateMachine(APP_TRANSITIONS, AppState.NEW, f"application {pod.app_id}")
        self.tasks: set[str] = set()


class ShimContext(pykka.ThreadingActor):
    """See the module docstring."""

    def __init__(self, core: CoreLink, board: StateBoard, settings: ContextSettings = ContextSettings()) -> None:
        super().__init__()
        self._core = core
        self._board = board
        self._settings = settings
        self._machine = StateMachine(SCHEDULER_TRANSITIONS, SchedulerState.NEW, "scheduler")
        self._binder: pykka.ActorRef | None = None
        self._recorder: pykka.ActorRef | None = None
        self._outlet: pykka.ActorRef | None = None
        self._alarms: Alarms | None = None
        self._listed: set[str] = set()
        self._nodes: dict[str, NodeRecord] = {}
        self._node_actors: dict[str, pykka.ActorRef] = {}
        self._node_mail: dict[str, list[Any]] = {}
        self._namespaces: dict[str, Any] = {}
        self._priority_classes: dict[str, int] = {}
        self._configmaps: dict[str, Any] = {}
        self._pods: dict[str, PodRecord] = {}
        self._tasks: dict[str, Task] = {}
        self._apps: dict[str, App] = {}
        self._config: ShimConfig | None = None
        self._to_core: list[Any] = []
        self._binds: list[BindRequest] = []
        self._feedback: list[KubeEvent | PodCondition] = []
        self._views = board.pods
        self._registered_at = 0
        self._recovering: set[str] = set()
        self._nodes_total = 0
        self._pods_recovered = 0
        self._published = None

    # ---- dispatch ------------------------------------------------------------------------------

    def on_start(self) -> None:
        self._publish()

    def on_stop(self) -> None:
        for ref in self._node_actors.values():
            ref.stop(block=False)

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, ShimStateRequest):
            self._settle()  # what a reader sees has been sent to the core
            return self._snapshot()
        if isinstance(message, Publish):
            self._flush()
            if self._published != self._board.version:
                self._publish()
            return None
        if isinstance(message, Changes):
            self._on_changes(message)
        elif isinstance(message, si_pb2.AllocationResponse):
            self._on_allocations(message)
        elif isinstance(message, BindOutcome):
            self._on_bind_outcome(message)
        elif isinstance(message, RetractTask):
            self._on_retract(message)
        elif isinstance(message, si_pb2.ApplicationResponse):
            self._on_applications(message)
        elif isinstance(message, si_pb2.UpdateContainerSchedulingStateRequest):
            self._on_scheduling_state(message)
        elif isinstance(message, CoreEvents):
            self._on_core_events(message.events)
        elif isinstance(message, si_pb2.NodeResponse):
            self._on_node_response(message)
        elif isinstance(message, NodeRecovered):
            self._on_node_recovered(message)
        elif isinstance(message, NodeGone):
            self._on_node_gone(message)
        elif isinstance(message, Listed):
            self._on_listed(message)
        elif isinstance(message, Connect):
            self._binder, self._recorder = message.binder, message.recorder
            self._outlet, self._alarms = message.outlet, message.alarms
        elif isinstance(message, Shutdown):
            self._flush()
            self._fire("drain")
        elif isinstance(message, Stopped):
            self._fire("stop")
        else:
            raise TypeError(f"shim context: unexpected message {type(message).__name__}")
        # Group commit: while more messages wait, keep collecting, so a burst of small informer
        # batches reaches the core as a few large requests; an idle context sends at once.
        if len(self._to_core) + len(self._binds) >= FLUSH_AT or self.actor_inbox.empty():
            self._flush()
        return None

    @property
    def _running(self) -> bool:
        return self._machine.state == SchedulerState.RUNNING

    def _fire(self, event: str) -> None:
        state = self._machine.fire(event)
        log.info("scheduler state: %s", state)
        self._publish()

    def _flush(self) -> None:
        if self._binds:
            self._binder.tell(Binds(tuple(self._binds)))
            self._binds = []
        if self._feedback:
            if self._recorder is not None:
                self._recorder.tell(Feedback(tuple(self._feedback)))
            self._feedback = []
        if self._to_core:
            self._outlet.tell(ToCore(tuple(self._to_core)))
            self._to_core = []
        # After the context's own requests: a node reporting a pod of ours needs its application first.
        for name, mail in self._node_mail.items():
            ref = self._node_actors.get(name)
            if ref is not None:
                for message in _merged(mail):
                    ref.tell(message)
        self._node_mail = {}

    def _settle(self) -> None:
        """Flush, and wait until the node actors and the outlet have handled what they were told."""
        self._flush()
        for _ in range(3):  # a node's recovery is a round trip through the outlet
            version = self._board.version
            for future in [ref.ask(Settle(), block=False) for ref in self._node_actors.values()]:
                future.get()
            self._outlet.ask(FlushToCore())
            if version == self._board.version:
                return

    # ---- informers -----------------------------------------------------------------------------

    def _on_listed(self, message: Listed) -> None:
        for record in message.records:
            self._remember(message.kind, record)
        self._listed.add(message.kind)
        log.info("listed %d %s", len(message.records), message.kind)
        if self._machine.state == SchedulerState.NEW and self._listed >= self._settings.required_kinds:
            self._start_up()

    def _remember(self, kind: str, record: Any, deleted: bool = False) -> None:
        """Keep the latest record of every object (the caches recovery and lookups read)."""
        cache = {kinds.PODS: self._pods, kinds.NODES: self._nodes, kinds.NAMESPACES: self._namespaces,
                 kinds.CONFIGMAPS: self._configmaps}.get(kind)
        if kind == kinds.PRIORITY_CLASSES:
            cache, record_value = self._priority_classes, record.value
        else:
            record_value = record
        if cache is None:
            return
        if deleted:
            cache.pop(record.key, None)
        else:
            cache[record.key] = record_value

    def _on_changes(self, message: Changes) -> None:
        state = self._machine.state
        if state in (SchedulerState.DRAINING, SchedulerState.STOPPED):
            return
        live = state in (SchedulerState.RECOVERING, SchedulerState.RUNNING)
        kind = message.kind
        for change in message.changes:
            if isinstance(change, Deleted):
                previous = self._pods.get(change.record.key) if kind == kinds.PODS else None
                self._remember(kind, change.record, deleted=True)
                if live:
                    self._deleted(kind, change.record)
                    if previous is not None:
                        self._route_to_node(previous, None)
            else:
                record = change.new if isinstance(change, Updated) else change.record
                old = change.old if isinstance(change, Updated) else None
                previous = self._pods.get(record.key) if kind == kinds.PODS else None
                self._remember(kind, record)
                if live:
                    self._seen(kind, old, record)
                    if kind == kinds.PODS:
                        self._route_to_node(previous, record)

    def _seen(self, kind: str, old: Any, record: Any) -> None:
        if kind == kinds.PODS:
            self._pod_seen(record)
        elif kind == kinds.NODES:
            self._node_seen(old, record)
        elif kind == kinds.CONFIGMAPS:
            self._config_changed()

    def _deleted(self, kind: str, record: Any) -> None:
        if kind == kinds.PODS:
            self._pod_gone(record)
        elif kind == kinds.NODES:
            self._node_gone(record)
        elif kind == kinds.CONFIGMAPS:
            self._config_changed()

    # ---- start-up and recovery -----------------------------------------------------------------

    def _start_up(self) -> None:
        try:
            self._register()
        except Exception as error:  # any refusal or failure of the core ends start-up in Failed
            log.exception("registration with the core failed")
            self._fire("fail")
            self._event("ConfigMap", self._settings.namespace, CONFIGMAP_CONFIGS, "", WARNING,
                        "SchedulerFailed", f"registration with the scheduler core failed: {error}")
            return
        self._fire("recover")
        self._recover()

    def _register(self) -> None:
        try:
            config = merge(self._configmaps.get(CONFIGMAP_DEFAULTS), self._configmaps.get(CONFIGMAP_CONFIGS))
        except SchedulerConfigError as error:
            log.error("scheduler configuration unreadable, starting with the default: %s", error)
            self._config_refused(str(error))
            config = merge(None, None)
        request = si_pb2.RegisterResourceManagerRequest(
            rmID=config.cluster_id, version="yunikorn-py", policyGroup=config.policy_group,
            config=config.queues_yaml, extraConfig=dict(config.extra), buildInfo={"shim": "yunikorn-py"})
        self._core.register(request, ShimCallback(self.actor_ref))
        self._config = config
        self._outlet.tell(Registered(config.cluster_id))
        self._registered_at = time.time_ns()
        self._fire("register")

    def _recover(self) -> None:
        """Applications and tasks of the pods already on nodes first (their requests go out first), then
        one node actor per node, each recovering itself; ``Running`` once every node has recovered."""
        assigned = sorted((p for p in self._pods.values() if p.assigned and not p.terminated),
                          key=lambda p: (p.created, p.uid))
        on_node: dict[str, list[PlacedPod]] = defaultdict(list)
        for pod in assigned:
            if self._managed(pod):
                if pod.invalid:
                    continue
                self._task_seen(pod)
            on_node[pod.node_name].append(PlacedPod(pod, self._priority(pod), True, not self._managed(pod)))
        self._flush()
        for name, node in self._nodes.items():
            if node.invalid:
                self._node_event(name, WARNING, "NodeRejected", f"node {name} not registered: {node.invalid}")
                continue
            self._recovering.add(name)
            self._start_node(name, node, tuple(on_node.pop(name, ())))
        for name, pods in on_node.items():  # named by pods, not listed: lost until they appear
            self._start_node(name, None, tuple(pods))
        self._nodes_total = len(self._recovering)
        for pod in sorted(self._pods.values(), key=lambda p: (p.created, p.uid)):
            if not pod.assigned and not pod.terminated:
                self._pod_seen(pod)  # pending pods become tasks; they are submitted once Running
        self._publish()
        if not self._recovering:
            self._recovery_done()

    def _on_node_recovered(self, message: NodeRecovered) -> None:
        if message.name in self._recovering:
            self._recovering.discard(message.name)
            self._pods_recovered += message.pods
            if not self._recovering and self._machine.state == SchedulerState.RECOVERING:
                self._recovery_done()

    def _recovery_done(self) -> None:
        self._fire("recovered")
        for task in sorted(self._tasks.values(), key=lambda t: (t.pod.created, t.pod.uid)):
            if task.state == TaskState.PENDING and not task.pod.gated:
                self._submit(task)

    # ---- pods ----------------------------------------------------------------------------------

    def _managed(self, pod: PodRecord) -> bool:
        """A task of ours; any other pod is foreign: it only takes room on its node."""
        return pod.yunikorn and (pod.app_id_named or not self._settings.plugin_mode)

    def _pod_seen(self, pod: PodRecord) -> None:
        if self._managed(pod):
            self._task_seen(pod)

    def _pod_gone(self, pod: PodRecord) -> None:
        task = self._tasks.pop(pod.uid, None)
        if task is None:
            return
        self._settle_handoff(task)
        if _released_by_context(task):
            self._to_core.append(translate.release(task.pod, "pod deleted", PARTITION))
        if task.can("kill"):
            task.fire("kill")
        self._views.hide(pod.uid)
        self._detach(task)

    def _route_to_node(self, previous: PodRecord | None, pod: PodRecord | None) -> None:
        """Tell the nodes a pod left or is on them: the pod's node actor counts it."""
        was = previous.node_name if previous is not None and previous.assigned and not previous.terminated else ""
        now = pod.node_name if pod is not None and pod.assigned and not pod.terminated else ""
        if was and was != now:
            self._node_mail.setdefault(was, []).append(PodsLeft((previous,)))
        if not now:
            return
        if now == was and (previous.resource == pod.resource or pod.yunikorn):
            return  # nothing the node reports changed
        foreign = not self._managed(pod)
        task = self._tasks.get(pod.uid)
        placed = PlacedPod(pod, self._priority(pod), foreign or task is None or not task.placed_by_core, foreign)
        if now not in self._node_actors:
            self._start_node(now, None, (placed,))
        else:
            self._node_mail.setdefault(now, []).append(PodsOnNode((placed,)))

    def _task_seen(self, pod: PodRecord) -> None:
        task = self._tasks.get(pod.uid)
        if task is None:
            if pod.terminated:
                return  # finished before we knew it: nothing to schedule or count
            self._new_task(pod)
            return
        previous, task.pod = task.pod, pod
        state = task.state
        if pod.terminated:
            self._settle_handoff(task)
            self._finish_task(task, "fail" if pod.phase == FAILED else "complete")
        elif state in TASK_TERMINAL:
            return
        elif pod.assigned and state == TaskState.ALLOCATED and pod.node_name == task.node:
            self._task_bound(task)
            self._settle_handoff(task)  # plugin mode: bound by kube-scheduler before the handoff reported
        elif pod.assigned and not previous.assigned and state == TaskState.BOUND:
            self._settle_handoff(task)  # plugin mode: kube-scheduler bound the pod (its PostBind)
        elif pod.assigned and state in (TaskState.PENDING, TaskState.SCHEDULING):
            self._task_placed_elsewhere(task)
        elif state == TaskState.BOUND and pod.resource != previous.resource:
            self._to_core.append(translate.allocation(pod, self._priority(pod), PARTITION, task.node))
        elif state == TaskState.PENDING and previous.gated and not pod.gated:
            self._submit(task)

    def _new_task(self, pod: PodRecord) -> None:
        task = Task(pod, self._views)
        self._tasks[pod.uid] = task
        if pod.invalid:
            task.fire("reject")
            self._task_unschedulable(task, "TaskRejected", f"task {pod.full_name} rejected: {pod.invalid}")
            return
        self._ensure_app(pod, force=pod.assigned).tasks.add(pod.uid)
        if pod.assigned:
            self._recover_task(task)
            return
        task.fire("init")
        if not pod.gated and self._running:
            self._submit(task)

    def _recover_task(self, task: Task) -> None:
        """A pod of ours found on a node: its node actor reports the allocation."""
        task.fire("recover", node=task.pod.node_name)

    def _submit(self, task: Task) -> None:
        pod = task.pod
        task.fire("submit")
        self._to_core.append(translate.allocation(pod, self._priority(pod), PARTITION))
        self._pod_event(pod, NORMAL, "Scheduling", f"{pod.full_name} is queued and waiting for allocation")

    def _task_placed_elsewhere(self, task: Task) -> None:
        """A pending pod got a node without us (bound by another party, or a bind we gave up on
        succeeded after all): withdraw the ask and count it where it is."""
        if task.state == TaskState.SCHEDULING:
            self._to_core.append(translate.release(task.pod, "pod bound outside the scheduler", PARTITION))
        self._recover_task(task)

    def _task_bound(self, task: Task) -> None:
        task.fire("bind")
        pod = task.pod
        if self._settings.plugin_mode:
            self._pod_event(pod, NORMAL, "QuotaApproved",
                            f"Pod {pod.full_name} is approved for node {task.node}; kube-scheduler binds it")
            return
        self._pod_event(pod, NORMAL, "Scheduled", f"Successfully assigned {pod.full_name} to node {task.node}")
        self._pod_event(pod, NORMAL, "PodBindSuccessful",
                        f"Pod {pod.full_name} is successfully bound to node {task.node}")

    def _finish_task(self, task: Task, event: str) -> None:
        if _released_by_context(task):
            self._to_core.append(translate.release(task.pod, f"pod {task.pod.phase.lower()}", PARTITION))
        if task.can(event):
            task.fire(event)

    def _detach(self, task: Task) -> None:
        app = self._apps.get(task.pod.app_id)
        if app is None:
            return
        app.tasks.discard(task.pod.uid)
        if app.tasks:
            return
        if app.machine.can("kill"):
            app.machine.fire("kill")
            self._to_core.append(_remove_application(app.app_id))
            app.machine.fire("killed")
        del self._apps[app.app_id]

    def _priority(self, pod: PodRecord) -> int:
        if pod.priority is not None:
            return pod.priority
        return self._priority_classes.get(pod.priority_class, 0)

    # ---- applications --------------------------------------------------------------------------

    def _ensure_app(self, pod: PodRecord, force: bool) -> App:
        app = self._apps.get(pod.app_id)
        if app is not None and app.machine.state not in APP_TERMINAL:
            return app
        fresh = App(pod)
        if app is not None:
            fresh.tasks = app.tasks  # the finished app's remaining pods stay accounted for here
        self._apps[pod.app_id] = fresh
        namespace = self._namespaces.get(pod.namespace)
        tags = translate.application_tags(pod, namespace.app_tags if namespace else None, force)
        self._to_core.append(translate.add_application(pod, tags, PARTITION))
        fresh.machine.fire("submit")
        return fresh

    def _on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        for accepted in response.accepted:
            self._app_event(accepted.applicationID, "accept")
        for rejected in response.rejected:
            self._app_rejected(rejected.applicationID, rejected.reason)
        for updated in response.updated:
            if updated.state == "Rejected":
                self._app_rejected(updated.applicationID, updated.message)
                continue
            for event in _CORE_APP_EVENTS.get(updated.state, ()):
                self._app_event(updated.applicationID, event)

    def _app_event(self, app_id: str, event: str) -> None:
        app = self._apps.get(app_id)
        if app is None or not app.machine.can(event):
            return
        state = app.machine.fire(event)
        log.debug("application %s: %s", app_id, state)
        if state == AppState.COMPLETED:
            self._to_core.append(_remove_application(app_id))

    def _app_rejected(self, app_id: str, reason: str) -> None:
        app = self._apps.get(app_id)
        if app is None or not app.machine.can("reject"):
            return
        app.machine.fire("reject")
        log.info("application %s rejected: %s", app_id, reason)
        for uid in app.tasks:
            task = self._tasks.get(uid)
            if task is not None and task.can("reject"):
                task.fire("reject")
                self._task_unschedulable(task, "TaskRejected", f"application {app_id} rejected: {reason}")

    # ---- the core's decisions ------------------------------------------------------------------

    def _on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        for allocation in response.new:
            self._allocated(allocation)
        for release in response.released:
            self._released_by_core(release)
        for rejected in response.rejectedAllocations:
            task = self._tasks.get(rejected.allocationKey)
            if task is not None and task.can("reject"):
                task.fire("reject")
                self._task_unschedulable(task, "TaskRejected", rejected.reason)

    def _allocated(self, allocation: si_pb2.Allocation) -> None:
        key, node = allocation.allocationKey, allocation.nodeID
        task = self._tasks.get(key)
        if task is None or task.state != TaskState.SCHEDULING:
            if task is not None and task.node == node and task.state in (TaskState.ALLOCATED, TaskState.BOUND):
                return  # the core repeating itself
            log.warning("allocation %s on %s for a pod that does not wait for one (%s): releasing it", key, node,
                        task.state if task else "unknown pod")
            if task is None or task.state in TASK_TERMINAL:
                self._to_core.append(si_pb2.AllocationRelease(
                    partitionName=PARTITION, applicationID=allocation.applicationID, allocationKey=key,
                    terminationType=si_pb2.STOPPED_BY_RM, message="no pod waits for this allocation"))
            return
        task.fire("allocate", node=node)
        app = self._apps.get(task.pod.app_id)
        if app is not None and app.machine.can("run"):
            app.machine.fire("run")
        pod = task.pod
        self._binds.append(BindRequest(pod.uid, pod.namespace, pod.name, node))

    def _released_by_core(self, release: si_pb2.AllocationRelease) -> None:
        if release.terminationType != si_pb2.PREEMPTED_BY_SCHEDULER:
            return  # our own releases confirmed, or node removal: the pod itself tells the rest
        task = self._tasks.get(release.allocationKey)
        if task is None:
            return
        pod = task.pod
        self._pod_event(pod, WARNING, "Preempted", f"{pod.full_name} preempted: {release.message}")
        self._binder.tell(DeletePod(pod.uid, pod.namespace, pod.name, release.message or "preempted"))

    def _on_bind_outcome(self, outcome: BindOutcome) -> None:
        task = self._tasks.get(outcome.uid)
        if task is None or task.state != TaskState.ALLOCATED or task.node != outcome.node:
            return  # already settled by the informer, or the pod is gone
        if outcome.bound:
            self._task_bound(task)
            return
        if outcome.gone:
            return  # the informer's delete releases the allocation
        pod = task.pod
        log.warning("binding %s to %s failed, scheduling it again: %s", pod.full_name, outcome.node, outcome.reason)
        self._to_core.append(translate.release(pod, f"bind failed: {outcome.reason}", PARTITION))
        task.fire("unbind", node="")
        self._pod_event(pod, WARNING, "PodBindFailure", outcome.reason)
        if self._running:
            self._submit(task)

    def _on_retract(self, message: RetractTask) -> None:
        """Plugin mode: kube-scheduler did not bind the pod where the core placed it; place it again."""
        task = self._tasks.get(message.uid)
        if task is None or task.state != TaskState.BOUND or task.node != message.node or task.pod.assigned:
            return  # bound meanwhile, placed again already, or gone
        pod = task.pod
        self._to_core.append(translate.release(pod, message.reason, PARTITION))
        task.fire("retract", node="")
        self._pod_event(pod, WARNING, "PodBindFailure", message.reason)
        if self._running:
            self._submit(task)

    def _settle_handoff(self, task: Task) -> None:
        if self._settings.plugin_mode and self._binder is not None:
            self._binder.tell(Settled(task.pod.uid))

    def _on_scheduling_state(self, request: si_pb2.UpdateContainerSchedulingStateRequest) -> None:
        task = self._tasks.get(request.allocationKey)
        if task is None or task.state != TaskState.SCHEDULING:
            return
        if request.state == si_pb2.UpdateContainerSchedulingStateRequest.FAILED:
            self._task_unschedulable(task, "FailedScheduling", request.reason)

    def _task_unschedulable(self, task: Task, reason: str, message: str) -> None:
        pod = task.pod
        if self._settings.plugin_mode and self._binder is not None:
            self._binder.tell(WaitingReason(pod.uid, message))
        self._pod_event(pod, WARNING, reason, message)
        self._send(PodCondition(pod.namespace, pod.name, pod.uid, "Unschedulable", message))

    def _on_core_events(self, events: Iterable[si_pb2.EventRecord]) -> None:
        for record in events:
            if record.type != si_pb2.EventRecord.REQUEST or record.eventChangeDetail == si_pb2.EventRecord.REQUEST_ALLOC:
                continue
            task = self._tasks.get(record.objectID)
            if task is not None:
                self._pod_event(task.pod, NORMAL, "Informational", record.message)

    # ---- nodes ---------------------------------------------------------------------------------

    def _start_node(self, name: str, record: NodeRecord | None, pods: tuple[PlacedPod, ...]) -> None:
        self._node_actors[name] = NodeActor.start(
            name, record, pods, context=self.actor_ref, outlet=self._outlet, recorder=self._recorder,
            board=self._board, alarms=self._alarms, lost_after=self._settings.node_lost_after)

    def _node_seen(self, old: NodeRecord | None, node: NodeRecord) -> None:
        if node.invalid:
            if old is None or not old.invalid:
                self._node_event(node.name, WARNING, "NodeRejected", f"node {node.name} not registered: {node.invalid}")
            return
        if node.name in self._node_actors:
            self._node_mail.setdefault(node.name, []).append(NodeChanged(node))
        else:
            self._start_node(node.name, node, ())

    def _node_gone(self, node: NodeRecord) -> None:
        if node.name in self._node_actors:
            self._node_mail.setdefault(node.name, []).append(NodeDeleted())

    def _on_node_gone(self, message: NodeGone) -> None:
        """A node actor with no record and no pods left: stop it, unless the node came back meanwhile."""
        if message.name not in self._nodes:
            ref = self._node_actors.pop(message.name, None)
            if ref is not None:
                ref.stop(block=False)

    def _on_node_response(self, response: si_pb2.NodeResponse) -> None:
        for accepted in response.accepted:
            self._node_event(accepted.nodeID, NORMAL, "NodeAccepted", f"node {accepted.nodeID} is accepted by the scheduler")
        for rejected in response.rejected:
            self._node_event(rejected.nodeID, WARNING, "NodeRejected",
                             f"node {rejected.nodeID} is rejected by the scheduler: {rejected.reason}")

    # ---- configuration -------------------------------------------------------------------------

    def _config_changed(self) -> None:
        if self._config is None:
            return
        if not self._config.hot_refresh:
            log.info("configmaps changed; hot refresh is disabled, the configuration in force stays")
            return
        try:
            config = merge(self._configmaps.get(CONFIGMAP_DEFAULTS), self._configmaps.get(CONFIGMAP_CONFIGS))
        except SchedulerConfigError as error:
            self._config_refused(str(error))
            return
        if config == self._config:
            return
        refusal = self._core.update_configuration(si_pb2.UpdateConfigurationRequest(
            rmID=self._config.cluster_id, policyGroup=config.policy_group, config=config.queues_yaml,
            extraConfig=dict(config.extra)))
        if refusal:
            self._config_refused(refusal)
            return
        log.info("scheduler configuration reloaded")
        self._config = config

    def _config_refused(self, reason: str) -> None:
        log.error("scheduler configuration refused, the configuration in force stays: %s", reason)
        self._event("ConfigMap", self._settings.namespace, CONFIGMAP_CONFIGS, "", WARNING, "ConfigurationRefused",
                    f"configuration refused, the previous one stays in force: {reason}"[:1024])

    # ---- feedback ------------------------------------------------------------------------------

    def _send(self, message: KubeEvent | PodCondition) -> None:
        self._feedback.append(message)

    def _event(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str, message: str) -> None:
        self._send(KubeEvent(kind, namespace, name, uid, type_, reason, message))

    def _pod_event(self, pod: PodRecord, type_: str, reason: str, message: str) -> None:
        self._event("Pod", pod.namespace, pod.name, pod.uid, type_, reason, message)

    def _node_event(self, name: str, type_: str, reason: str, message: str) -> None:
        self._event("Node", "", name, "", type_, reason, message)

    # ---- snapshots -----------------------------------------------------------------------------

    def _publish(self) -> None:
        self._published = self._board.version
        self._board.publish(self._snapshot())

    def _snapshot(self) -> ShimStateSnapshot:
        apps = tuple(AppView(app.app_id, app.queue, app.user, app.machine.state, len(app.tasks))
                     for app in self._apps.values())
        recovery = RecoveryProgress(self._nodes_total, self._nodes_total - len(self._recovering),
                                    self._pods_recovered)
        return self._board.snapshot(self._machine.state, self._registered_at, recovery, apps)


def _released_by_context(task: Task) -> bool:
    """Whether the core holds an ask or allocation of the task that the context sent or the core made;
    an allocation the task's node reported is released by the node when the pod leaves it."""
    return task.state in (TaskState.SCHEDULING, TaskState.ALLOCATED) or (
        task.state == TaskState.BOUND and task.placed_by_core)


def _remove_application(app_id: str) -> si_pb2.RemoveApplicationRequest:
    return si_pb2.RemoveApplicationRequest(applicationID=app_id, partitionName=PARTITION)


def _merged(mail: list[Any]) -> list[Any]:
    """A node's messages of one step, consecutive pod messages of one kind joined into one."""
    merged: list[Any] = []
    for message in mail:
        last = merged[-1] if merged else None
        if isinstance(message, PodsOnNode) and isinstance(last, PodsOnNode):
            merged[-1] = PodsOnNode(last.pods + message.pods)
        elif isinstance(message, PodsLeft) and isinstance(last, PodsLeft):
            merged[-1] = PodsLeft(last.pods + message.pods)
        else:
            merged.append(message)
    return merged
