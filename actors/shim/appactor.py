"""One actor per application: upstream's application state machine and its tasks (the pods).

The actor submits the application (``AddApplicationRequest``, sent when it is created, so that it
reaches the core before anything about the application's pods), asks for its pending tasks once the
core has accepted it (as upstream's shim: a rejected application never had asks), releases
what the core holds for a task when its pod finishes or goes, binds what the core allocates (through
the binder, whose outcome comes back here) and follows the core's answers about the application: a
rejected or failed application fails its pods that have no node, as upstream does.

A task's allocation found on a node (recovery, or a pod bound by someone else) is reported by the
node's actor, which also releases it; the application only releases what it asked for or what the
core placed (``Task.placed_by_core``). A pending pod bound where the core did not place it is handed
to its node (through the context) only after the application has withdrawn its ask.

A gang (``actors.shim.gang``) is declared by the application's first pod. Once the core accepts the
application, it is Reserving: the binder creates the placeholder pods, and only they are asked for,
all in one go once every one is seen.
The core says Running when every placeholder holds its room; then the real pods are asked for, and
each real pod of a task group takes over a placeholder's room (the core releases the placeholder with
``PLACEHOLDER_REPLACED``, the placeholder's pod is deleted, and the real pod is allocated on its node).
When the reservation times out the core says Resuming (Soft: once the placeholders are gone the real
pods are scheduled as ordinary pods) or Failing (Hard: the pods fail with ``ResourceReservationTimeout``).

One pod's failure is its own: an update of a pod that raises rejects that task (a Warning event says
why) and the other pods go on; any other message that raises is dropped, said once on the originating
pod, and the application goes on from where it was.

In plugin mode the binder is the handoff: binds are recorded decisions, ``RetractTask`` returns a
placement kube-scheduler did not carry out, and the handoff is told when a placed pod is settled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pykka

from actors.base import Batch, PooledActor
from actors.shim import translate
from actors.shim.eventbuffer import NORMAL, WARNING
from actors.shim.gang import Gang, read_gang
from actors.shim.lifecycle import (
    APP_TERMINAL,
    APP_TRANSITIONS,
    TASK_TERMINAL,
    TASK_TRANSITIONS,
    AppEvent,
    AppState,
    InvalidTransition,
    StateMachine,
    TaskEvent,
    TaskState,
)
from actors.shim.messages import (
    BindOutcome,
    BindOutcomes,
    BindRequest,
    Binds,
    CoreEvents,
    CreatePlaceholders,
    DeletePod,
    EvictionRefused,
    EvictPod,
    FailPod,
    Feedback,
    KubeEvent,
    Leading,
    PlacedElsewhere,
    PlacedPod,
    PlaceholdersCreated,
    PodCondition,
    RetractTask,
    Settle,
    Settled,
    StopPlaceholders,
    TaskUpdate,
    TaskUpdates,
    ToCore,
    WaitingReason,
)
from actors.shim.placeholders import Allowance, PlaceholderSettings, allowance
from actors.shim.pods import FAILED, PodRecord
from actors.shim.state import AppView, PodView, StateBoard, pod_view
from si import constants, si_pb2
from si.states import ApplicationState as CoreState
from si.states import Reason

log = logging.getLogger(__name__)

PARTITION = constants.DEFAULT_PARTITION
_CORE_APP_EVENTS = {CoreState.ACCEPTED: (AppEvent.ACCEPT,), CoreState.STARTING: (AppEvent.RUN,),
                    CoreState.RUNNING: (AppEvent.RUN,),
                    CoreState.COMPLETED: (AppEvent.COMPLETE,), CoreState.FAILING: (AppEvent.FAIL,),
                    CoreState.FAILED: (AppEvent.FAIL, AppEvent.FAILED)}
_UNPLACED = frozenset({TaskState.NEW, TaskState.PENDING, TaskState.SCHEDULING, TaskState.REJECTED})
_ASKING = frozenset({AppState.ACCEPTED, AppState.RUNNING})  # and, while Reserving, the placeholders
_GAVE_UP = frozenset({AppState.RESUMING, AppState.FAILING, AppState.FAILED})  # placeholders left to delete
_GANG_ENDS = {si_pb2.PLACEHOLDER_REPLACED, si_pb2.TIMEOUT}
# Where a new task found on a node goes (``_bound_task``), read from the table once: every pod a recovery finds.
_FOUND_BOUND = TASK_TRANSITIONS.target(TaskState.NEW, TaskEvent.RECOVER, "a new task")


class Task:
    """A pod of ours and its state (under ``TASK_TRANSITIONS``); its view on the board follows its
    transitions: a task that changed joins ``changed``, whose views its actor shows once the message
    is handled. One per pod: it keeps its state itself rather than in a ``StateMachine`` of its own."""

    __slots__ = ("pod", "priority", "state", "node", "placed_by_core", "_changed")

    def __init__(self, pod: PodRecord, priority: int, changed: dict[str, Task]) -> None:
        self.pod = pod
        self.priority = priority
        self.state = TaskState.NEW
        self.node = ""
        self.placed_by_core = False
        self._changed = changed
        changed[pod.uid] = self

    def can(self, event: TaskEvent) -> bool:
        return TASK_TRANSITIONS.allows(self.state, event)

    def fire(self, event: TaskEvent, node: str | None = None) -> str:
        """Fire ``event`` (see ``lifecycle``); ``node`` sets the node the pod is placed on."""
        try:
            self.state = TASK_TRANSITIONS.target(self.state, event, "")
        except InvalidTransition:  # said again naming the task: its name is made only when needed
            TASK_TRANSITIONS.target(self.state, event, f"task {self.pod.full_name}")
            raise
        if node is not None:
            self.node = node
            self.placed_by_core = event is TaskEvent.ALLOCATE
        self._changed[self.pod.uid] = self
        return self.state

    def holds_core_request(self) -> bool:
        """Whether the core holds an ask or allocation of this task that the application must release."""
        return self.state in (TaskState.SCHEDULING, TaskState.ALLOCATED) or (
            self.state == TaskState.BOUND and self.placed_by_core)

    def view(self) -> PodView:
        pod = self.pod
        return pod_view(pod.uid, pod.namespace, pod.name, pod.app_id, self.state, self.node, False)


class ApplicationActor(PooledActor):
    """See the module docstring. ``first`` is the pod that made the application known; ``tags`` are
    its namespace's application tags; ``force``: the application already runs pods (recovery);
    ``placeholders``: how the gang's placeholders are made, or that gangs are off; ``pod_slots``: how
    many pods the cluster's nodes together hold (a gang makes no more placeholders)."""

    kind = "application"
    contain_failures = True

    def __init__(self, first: PodRecord, tags: Mapping[str, str] | None, force: bool, *, outlet: pykka.ActorRef,
                 context: pykka.ActorRef, binder: pykka.ActorRef, recorder: pykka.ActorRef | None, board: StateBoard, plugin_mode: bool,
                 placeholders: PlaceholderSettings | None = None, pod_slots: int = 0,
                 supervisor=None) -> None:
        super().__init__(supervisor)
        self.app_id = first.app_id
        self._queue = first.queue
        self._user = first.user
        self._tags = dict(tags or {})
        self._outlet = outlet
        self._context = context
        self._binder = binder
        self._recorder = recorder
        self._board = board
        self._plugin_mode = plugin_mode
        self._tasks: dict[str, Task] = {}
        self._changed: dict[str, Task] = {}  # tasks whose view is to be shown after this message
        self._to_core: Batch[Any] = self.batch(outlet, ToCore)
        self._binds: Batch[BindRequest] = self.batch(binder, Binds)
        self._feedback: Batch[KubeEvent | PodCondition] = self.batch(recorder, Feedback)
        self._placed_elsewhere: list[PlacedPod] = []
        self._shown: tuple[str, int] | None = None
        self._machine = StateMachine(APP_TRANSITIONS, AppState.NEW, f"application {self.app_id}")
        self._placeholder_settings = placeholders = placeholders or PlaceholderSettings()
        self._originator = first
        self._gang: Gang | None = None
        self._pod_slots = pod_slots
        self._allowed: Allowance | None = None  # the placeholders the gang may have, once it reserves
        self._timeout_told = False
        self._reserve_fenced = False  # placeholders a standby could not make: made once it leads
        self._error_told = False
        self._failed_pods: set[str] = set()  # uids whose handling raised: told once
        self._asked = False  # the core had an ask or an allocation of this application
        if not placeholders.disabled:
            self._gang, problems = read_gang(first.task_groups, first.policy_parameters)
            if problems:
                self._pod_event(first, WARNING, "TaskGroupsError",
                                "GangScheduling: " + "; ".join(problems)
                                + ("" if self._gang else ": the application is scheduled without a gang"))
        # Sent from the creating thread, before the context routes the application's first pod.
        self._submit_application(first, force)
        self.after_message()
        self._publish()

    @property
    def state(self) -> str:
        return self._machine.state

    def on_dropped(self, msg: Any, error: Exception) -> None:
        super().on_dropped(msg, error)
        if not self._error_told:
            self._error_told = True
            self._pod_event(self._originator, WARNING, "ApplicationError",
                            f"application {self.app_id}: a {type(msg).__name__} could not be handled and was "
                            f"dropped: {error!r}"[:1024])

    def on_stop(self) -> None:
        self._board.apps.hide(self.app_id)

    def on_Settle(self, msg: Settle) -> None:
        return None

    # ---- pods ----------------------------------------------------------------------------------

    def on_TaskUpdates(self, msg: TaskUpdates) -> None:
        tasks = self._tasks
        ended = self.state in APP_TERMINAL  # read again after what may end the application
        for update in msg.updates:
            pod = update.pod
            if update.deleted:
                self._contained(pod, self._task_gone, pod)
                ended = self.state in APP_TERMINAL
            elif pod.uid in tasks or not pod.node_name or pod.invalid or pod.terminated or ended:
                self._contained(pod, self._task_seen, update)
                ended = self.state in APP_TERMINAL
            else:  # a new task already on a node (a recovery's every pod): what ``_task_seen`` would do, directly
                try:  # as ``_contained``; nothing is sent to withdraw
                    self._bound_task(pod, update.priority)
                except Exception as error:
                    self._task_failed(pod, error)
                    ended = self.state in APP_TERMINAL
        # Upstream's shim keeps an application whose pods are gone until the core, which had its asks or
        # allocations, completes it (Completing, then Completed after its timer); one it never asked for
        # would never complete there, so it is removed at once.
        if not self._tasks and self._machine.can(AppEvent.KILL) and not self._core_completes():
            self._machine.fire(AppEvent.KILL)
            self._to_core.add(si_pb2.RemoveApplicationRequest(applicationID=self.app_id, partitionName=PARTITION))
            self._machine.fire(AppEvent.KILLED)
        self._publish()

    def _core_completes(self) -> bool:
        return self._asked and self.state in (AppState.ACCEPTED, AppState.RESERVING, AppState.RESUMING,
                                              AppState.RUNNING)

    def _task_seen(self, update: TaskUpdate) -> None:
        pod = update.pod
        task = self._tasks.get(pod.uid)
        if task is None:
            if not pod.terminated:
                self._new_task(pod, update.priority)
            return
        previous, task.pod, task.priority = task.pod, pod, update.priority
        state = task.state
        if pod.terminated:
            self._settle_handoff(task)
            self._finish_task(task, TaskEvent.FAIL if pod.phase == FAILED else TaskEvent.COMPLETE)
        elif state in TASK_TERMINAL:
            return
        elif pod.assigned and state == TaskState.ALLOCATED and pod.node_name == task.node:
            self._task_bound(task)
            self._settle_handoff(task)  # plugin mode: bound by kube-scheduler before the handoff reported
        elif pod.assigned and not previous.assigned and state == TaskState.BOUND:
            self._settle_handoff(task)  # plugin mode: kube-scheduler bound the pod (its PostBind)
        elif pod.assigned and state in (TaskState.PENDING, TaskState.SCHEDULING, TaskState.ALLOCATED):
            self._task_placed_elsewhere(task)
        elif state == TaskState.PENDING and previous.held and not pod.held and self._asking()(task):
            self._submit(task)
        elif state == TaskState.SCHEDULING and (pod.constraints != previous.constraints
                                                or pod.resource != previous.resource):
            self._to_core.add(self._allocation(task))  # its volumes changed, or it was resized while pending
        if pod.resource != previous.resource and task.placed_by_core \
                and task.state in (TaskState.ALLOCATED, TaskState.BOUND):  # resized in place, bound or being bound
            self._to_core.add(self._allocation(task, task.node))
        if pod.volume_wait and pod.volume_wait != previous.volume_wait and state in (TaskState.PENDING, TaskState.SCHEDULING):
            self._task_unschedulable(task, "FailedScheduling", pod.volume_wait)

    def _bound_task(self, pod: PodRecord, priority: int) -> None:
        """A valid pod of a live application, first seen on a node: its task is bound there."""
        task = self._tasks[pod.uid] = Task(pod, priority, self._changed)
        task.state, task.node = _FOUND_BOUND, pod.node_name  # as ``task.fire(TaskEvent.RECOVER, pod.node_name)``
        self._asked = True  # its node reports it to the core

    def _new_task(self, pod: PodRecord, priority: int) -> None:
        if pod.assigned and not pod.invalid and self.state not in APP_TERMINAL:
            self._bound_task(pod, priority)
            return
        task = Task(pod, priority, self._changed)
        self._tasks[pod.uid] = task
        if pod.invalid:
            task.fire(TaskEvent.REJECT)
            self._task_unschedulable(task, "TaskRejected", f"task {pod.full_name} rejected: {pod.invalid}")
            return
        if self.state in APP_TERMINAL:
            self._resubmit(pod)
        if pod.assigned:
            task.fire(TaskEvent.RECOVER, node=pod.node_name)
            self._asked = True  # its node reports it to the core
            return
        task.fire(TaskEvent.INIT)
        if pod.ignored:
            self._board.count_unenforced(pod.ignored)
            self._pod_event(pod, WARNING, "UnenforcedConstraints",
                            f"{pod.full_name}: not enforced by this scheduler: {'; '.join(pod.ignored)}")
        if pod.volume_wait:
            self._task_unschedulable(task, "FailedScheduling", pod.volume_wait)
        if pod.placeholder and self.state in _GAVE_UP:  # made just before the gang was given up
            self._delete(task, "the gang's reservation ended")
        elif pod.placeholder and self.state == AppState.RESERVING:
            self._submit_pending()
        elif not pod.held and self._asking()(task):
            self._submit(task)

    def _contained(self, pod: PodRecord, handle: Callable[..., None], *args: Any) -> None:
        """``handle(*args)`` for one pod; if it raises, that pod alone fails (``_task_failed``), and the
        others of the message go on."""
        sent = len(self._to_core)
        try:
            handle(*args)
        except Exception as error:
            self._to_core.undo(sent)
            self._task_failed(pod, error)

    def _task_failed(self, pod: PodRecord, error: Exception) -> None:
        """Handling ``pod`` raised: a task not placed yet is rejected; said on the pod and logged once."""
        if pod.uid in self._failed_pods:
            log.debug("application %s: pod %s failed again: %r", self.app_id, pod.full_name, error)
            return
        self._failed_pods.add(pod.uid)
        log.error("application %s: handling pod %s failed: %r", self.app_id, pod.full_name, error, exc_info=error)
        task = self._tasks.get(pod.uid)
        if task is None and not pod.terminated:
            task = self._tasks[pod.uid] = Task(pod, 0, self._changed)
        message = f"the scheduler could not handle pod {pod.full_name}: {error!r}"[:1024]
        if task is not None and task.can(TaskEvent.REJECT):
            task.fire(TaskEvent.REJECT)
            self._task_unschedulable(task, "TaskRejected", message)
        else:
            self._pod_event(pod, WARNING, "TaskError", message)

    def _task_gone(self, pod: PodRecord) -> None:
        self._failed_pods.discard(pod.uid)
        if pod.uid == self._originator.uid and self.state == AppState.RESERVING:
            self._binder.tell(StopPlaceholders(self.actor_ref))  # what it would make now has no owner
        task = self._tasks.pop(pod.uid, None)
        if task is None:
            return
        self._settle_handoff(task)
        if task.holds_core_request():
            self._to_core.add(translate.release(task.pod, "pod deleted", PARTITION))
        if task.can(TaskEvent.KILL):
            task.fire(TaskEvent.KILL)
        self._changed.pop(pod.uid, None)
        self._board.pods.hide(pod.uid)
        if pod.placeholder and self.state == AppState.RESUMING and not self._placeholders():
            self._machine.fire(AppEvent.RUN)  # the gang is over: its pods are scheduled as ordinary ones
            self._submit_pending()

    def _allocation(self, task: Task, node: str = "") -> si_pb2.Allocation:
        """The task's ask, or its allocation on ``node``; the pod that declared the application is its originator."""
        pod = task.pod
        return translate.allocation(pod, task.priority, PARTITION, node, originator=pod.uid == self._originator.uid)

    def _submit(self, task: Task) -> None:
        pod = task.pod
        task.fire(TaskEvent.SUBMIT)
        self._asked = True
        self._to_core.add(self._allocation(task))
        self._pod_event(pod, NORMAL, "Scheduling", f"{pod.full_name} is queued and waiting for allocation")
        if pod.task_group and not pod.placeholder and self._gang is not None:
            if self._gang.group(pod.task_group) is not None:
                self._pod_event(pod, NORMAL, "TaskGroupMatch",
                                f"Pod {pod.full_name} belongs to task group {pod.task_group}: it takes over one "
                                "of the group's placeholders")
            else:
                self._pod_event(pod, WARNING, "TaskGroupsError",
                                f"GangScheduling: task group {pod.task_group} is not declared by application "
                                f"{self.app_id}: the pod is scheduled on its own")

    def _asking(self) -> Callable[[Task], bool]:
        """Which tasks may be asked for now. Asks go to the core only once it has accepted the application
        (as upstream's shim does: an application it rejects never had asks to refuse); while the gang
        reserves, only its placeholders, all together once every one is seen, so that two gangs do not
        split a queue between them. Decided once per call: a large gang is not counted per task."""
        if self.state == AppState.RESERVING:
            complete = len(self._placeholders()) >= self._allowed.total
            return lambda task: complete and task.pod.placeholder
        asking = self.state in _ASKING
        return lambda task: asking and not task.pod.placeholder

    def _submit_pending(self) -> None:
        may_ask = self._asking()
        # Only the pending are sorted: a recovered application's tasks are mostly bound.
        pending = [task for task in self._tasks.values() if task.state == TaskState.PENDING]
        for task in sorted(pending, key=lambda t: (t.pod.created, t.pod.uid)):
            if not task.pod.held and may_ask(task):
                self._contained(task.pod, self._submit, task)

    def _placeholders(self) -> list[Task]:
        return [t for t in self._tasks.values() if t.pod.placeholder and t.state not in TASK_TERMINAL]

    def _delete(self, task: Task, reason: str) -> None:
        pod = task.pod
        self._binder.tell(DeletePod(pod.uid, pod.namespace, pod.name, reason))

    def _task_placed_elsewhere(self, task: Task) -> None:
        """A pod got a node the core did not choose for it (bound by another party, or a bind we gave
        up on reached the cluster after all): the cluster wins. Withdraw the ask or the allocation the
        core holds elsewhere; the pod's node counts it where it is."""
        if task.state in (TaskState.SCHEDULING, TaskState.ALLOCATED):
            log.warning("pod %s is bound to %s, not where the core placed it (%s): counting it where it is",
                        task.pod.full_name, task.pod.node_name, task.node or "nowhere yet")
            self._to_core.add(translate.release(task.pod, "pod bound outside the scheduler", PARTITION))
        task.fire(TaskEvent.RECOVER, node=task.pod.node_name)
        self._placed_elsewhere.append(PlacedPod(task.pod, task.priority, report=True,
                                                originator=task.pod.uid == self._originator.uid))

    def _task_bound(self, task: Task) -> None:
        task.fire(TaskEvent.BIND)
        pod = task.pod
        if self._plugin_mode:
            self._pod_event(pod, NORMAL, "QuotaApproved",
                            f"Pod {pod.full_name} is approved for node {task.node}; kube-scheduler binds it")
            return
        self._pod_event(pod, NORMAL, "Scheduled", f"Successfully assigned {pod.full_name} to node {task.node}")
        self._pod_event(pod, NORMAL, "PodBindSuccessful",
                        f"Pod {pod.full_name} is successfully bound to node {task.node}")

    def _finish_task(self, task: Task, event: TaskEvent) -> None:
        if task.holds_core_request():
            self._to_core.add(translate.release(task.pod, f"pod {task.pod.phase.lower()}", PARTITION))
        if task.can(event):
            task.fire(event)

    # ---- the application -----------------------------------------------------------------------

    def _submit_application(self, pod: PodRecord, force: bool) -> None:
        tags = translate.application_tags(pod, self._tags, force)
        self._to_core.add(translate.add_application(pod, tags, PARTITION, self._gang))
        self._machine.fire(AppEvent.SUBMIT)

    def _resubmit(self, pod: PodRecord) -> None:
        """A new pod of a finished application: submit the application again."""
        self._machine = StateMachine(APP_TRANSITIONS, AppState.NEW, f"application {self.app_id}")
        self._asked = False
        self._submit_application(pod, pod.assigned)

    def on_ApplicationResponse(self, response: si_pb2.ApplicationResponse) -> None:
        for _ in response.accepted:
            self._app_event(AppEvent.ACCEPT)
        for rejected in response.rejected:
            self._rejected(rejected.reason)
        for updated in response.updated:
            if updated.state == CoreState.REJECTED:
                self._rejected(updated.message)
                continue
            if updated.message == Reason.RESERVATION_TIMEOUT:
                self._reservation_timed_out(updated.state)
                continue
            for event in _CORE_APP_EVENTS.get(updated.state, ()):
                self._app_event(event)
            if updated.state == CoreState.FAILED:
                self._fail_unplaced(Reason.APPLICATION_FAILED, f"application {self.app_id} failed: {updated.message}")
        self._publish()

    # ---- the gang ------------------------------------------------------------------------------

    def _reserve(self) -> None:
        """Accepted with a gang that has not started: make the placeholders that are not there yet (a
        restart finds some or all of them) and ask only for them. A gang capped (see ``placeholders``)
        says why, reserves what it may and times out; one allowed none is scheduled without a gang."""
        self._allowed = allowed = allowance(self._gang, self._pod_slots, self._placeholder_settings.max_per_gang)
        if allowed.capped:
            log.warning("application %s: gang of %d placeholders capped at %d: %s", self.app_id, self._gang.size,
                        allowed.total, allowed.capped)
            self._pod_event(self._originator, WARNING, "PlaceholdersCapped",
                            f"Application {self.app_id}: {allowed.total} of the gang's {self._gang.size} placeholders "
                            f"are created: {allowed.capped}"[:1024])
        if not allowed.total:
            return
        self._machine.fire(AppEvent.RESERVE)
        self._make_missing_placeholders()

    def on_Leading(self, message: Leading) -> None:
        if self._reserve_fenced and self.state == AppState.RESERVING:
            self._reserve_fenced = False
            self._make_missing_placeholders()

    def _make_missing_placeholders(self) -> None:
        present: dict[str, int] = {}
        for task in self._placeholders():
            present[task.pod.task_group] = present.get(task.pod.task_group, 0) + 1
        counts = self._allowed.counts
        missing = tuple((g, counts[g.name] - present.get(g.name, 0)) for g in self._gang.groups
                        if counts[g.name] > present.get(g.name, 0))
        if missing:
            self._binder.tell(CreatePlaceholders(self._originator, self._queue, missing, self._placeholder_settings,
                                                 self.actor_ref))

    def on_PlaceholdersCreated(self, message: PlaceholdersCreated) -> None:
        if message.fenced:
            self._reserve_fenced = True
            return
        if not message.error:
            return
        # Never half a gang: what was made goes, and the application fails, as upstream's.
        for uid, namespace, name in message.created:
            self._binder.tell(DeletePod(uid, namespace, name, "the gang's placeholders could not all be made"))
        for task in self._placeholders():
            self._delete(task, "the gang's placeholders could not all be made")
        if self._machine.can(AppEvent.FAIL):
            self._machine.fire(AppEvent.FAIL)
            self._machine.fire(AppEvent.FAILED)
        self._fail_unplaced(Reason.PLACEHOLDER_CREATION_FAILED,
                            f"application {self.app_id}: creating its placeholder pods failed: {message.error}")
        self._publish()

    def _reservation_timed_out(self, core_state: str) -> None:
        """The core gave up the gang's reservation: Soft resumes as ordinary pods once the placeholders
        are gone, Hard fails the pods."""
        self._placeholder_timeout_event()
        if core_state == CoreState.RESUMING and self._machine.can(AppEvent.RESUME):
            self._machine.fire(AppEvent.RESUME)
            for task in self._placeholders():
                if not task.pod.assigned:
                    self._delete(task, "the gang's reservation timed out")
            if not self._placeholders():
                self._machine.fire(AppEvent.RUN)
                self._submit_pending()
        elif core_state == CoreState.FAILING and self._machine.can(AppEvent.FAIL):
            self._machine.fire(AppEvent.FAIL)
            self._fail_unplaced(Reason.RESERVATION_TIMEOUT,
                                f"application {self.app_id}: the gang's resources were not all reserved in time")
        elif core_state == CoreState.FAILED and self._machine.can(AppEvent.FAILED):
            self._machine.fire(AppEvent.FAILED)

    def _placeholder_timeout_event(self) -> None:
        if not self._timeout_told:
            self._timeout_told = True
            self._pod_event(self._originator, WARNING, "PlaceholderTimeOut",
                            f"Application {self.app_id}: placeholders timed out")

    def _app_event(self, event: AppEvent) -> None:
        if not self._machine.can(event):
            return
        state = self._machine.fire(event)
        log.debug("application %s: %s", self.app_id, state)
        if state == AppState.ACCEPTED and self._gang is not None and not self._real_pod_bound():
            self._reserve()
        if state in (AppState.ACCEPTED, AppState.RUNNING):
            self._submit_pending()
        if state == AppState.COMPLETED:
            self._to_core.add(si_pb2.RemoveApplicationRequest(applicationID=self.app_id, partitionName=PARTITION))

    def _rejected(self, reason: str) -> None:
        if not self._machine.can(AppEvent.REJECT):
            return
        self._machine.fire(AppEvent.REJECT)
        log.info("application %s rejected: %s", self.app_id, reason)
        self._fail_unplaced("ApplicationRejected", f"application {self.app_id} rejected: {reason}")

    def _real_pod_bound(self) -> bool:
        """Whether a real pod of the application already runs (a restart during or after the gang)."""
        return any(t.state == TaskState.BOUND and not t.pod.placeholder for t in self._tasks.values())

    def _fail_unplaced(self, reason: str, message: str) -> None:
        for task in self._tasks.values():
            if task.pod.placeholder and task.state not in TASK_TERMINAL:
                self._delete(task, message)
            elif task.state in _UNPLACED:
                self._contained(task.pod, self._fail_task, task, reason, message)

    def _fail_task(self, task: Task, reason: str, message: str) -> None:
        """The task will never run: reject it, say why on the pod, and fail the pod (as upstream)."""
        if task.can(TaskEvent.REJECT):
            task.fire(TaskEvent.REJECT)
        pod = task.pod
        self._task_unschedulable(task, reason, message)
        self._binder.tell(FailPod(pod.namespace, pod.name, reason, message))

    def _publish(self) -> None:
        shown = (self.state, len(self._tasks))
        if shown != self._shown:  # most messages change tasks, not the application's view
            self._shown = shown
            self._board.apps.show(self.app_id, AppView(self.app_id, self._queue, self._user, *shown))

    # ---- the core's decisions ------------------------------------------------------------------

    def on_AllocationResponse(self, response: si_pb2.AllocationResponse) -> None:
        for allocation in response.new:
            self._allocated(allocation)
        for release in response.released:
            self._released_by_core(release)
        for rejected in response.rejectedAllocations:
            task = self._tasks.get(rejected.allocationKey)
            if task is not None and task.can(TaskEvent.REJECT):
                task.fire(TaskEvent.REJECT)
                self._task_unschedulable(task, "TaskRejected", rejected.reason)
        self._publish()

    def _allocated(self, allocation: si_pb2.Allocation) -> None:
        key, node = allocation.allocationKey, allocation.nodeID
        task = self._tasks.get(key)
        if task is None or task.state != TaskState.SCHEDULING:
            if task is not None and task.node == node and task.state in (TaskState.ALLOCATED, TaskState.BOUND):
                return  # the core repeating itself
            log.warning("allocation %s on %s for a pod that does not wait for one (%s): releasing it", key, node,
                        task.state if task else "unknown pod")
            if task is None or task.state in TASK_TERMINAL:
                self._to_core.add(translate.stray_release(allocation))
            return
        task.fire(TaskEvent.ALLOCATE, node=node)
        if not task.pod.placeholder and self._machine.can(AppEvent.RUN):  # a gang runs when the core says so
            self._machine.fire(AppEvent.RUN)
        pod = task.pod
        self._binds.add(BindRequest(pod.uid, pod.namespace, pod.name, node, self.actor_ref, pod.late_claims))

    def _released_by_core(self, release: si_pb2.AllocationRelease) -> None:
        task = self._tasks.get(release.allocationKey)
        if task is not None and task.pod.placeholder and release.terminationType in _GANG_ENDS:
            if release.terminationType == si_pb2.TIMEOUT:
                self._placeholder_timeout_event()
            self._delete(task, release.message)  # its deletion confirms the release to the core
            return
        if release.terminationType != si_pb2.PREEMPTED_BY_SCHEDULER:
            return  # our own releases confirmed, or node removal: the pod itself tells the rest
        if task is None:
            return
        pod = task.pod
        self._pod_event(pod, WARNING, "Preempted", f"{pod.full_name} {release.message or 'preempted'}")
        self._binder.tell(EvictPod(pod.uid, pod.namespace, pod.name, release.message or "preempted", self.actor_ref))

    def on_EvictionRefused(self, message: EvictionRefused) -> None:
        """The victim stays: the core hears it still runs, keeps it, and finds its preemptor other room."""
        task = self._tasks.get(message.uid)
        if task is None or task.state not in (TaskState.ALLOCATED, TaskState.BOUND) or not task.node:
            return  # gone meanwhile: its deletion released it
        pod = task.pod
        self._pod_event(pod, WARNING, "PreemptionRefused", f"{pod.full_name} not evicted: {message.reason}")
        self._to_core.add(self._allocation(task, task.node))

    def on_BindOutcomes(self, message: BindOutcomes) -> None:
        for outcome in message.outcomes:  # one pod's failure is its own, as for its updates
            task = self._tasks.get(outcome.uid)
            if task is not None:
                self._contained(task.pod, self.on_BindOutcome, outcome)

    def on_BindOutcome(self, outcome: BindOutcome) -> None:
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
        self._to_core.add(translate.release(pod, f"bind failed: {outcome.reason}", PARTITION))
        task.fire(TaskEvent.UNBIND, node="")
        self._pod_event(pod, WARNING, "PodVolumesBindFailure" if outcome.volumes else "PodBindFailure", outcome.reason)
        self._submit(task)

    def on_RetractTask(self, message: RetractTask) -> None:
        """Plugin mode: kube-scheduler did not bind the pod where the core placed it; place it again."""
        task = self._tasks.get(message.uid)
        if task is None or task.state != TaskState.BOUND or task.node != message.node or task.pod.assigned:
            return  # bound meanwhile, placed again already, or gone
        pod = task.pod
        self._to_core.add(translate.release(pod, message.reason, PARTITION))
        task.fire(TaskEvent.RETRACT, node="")
        self._pod_event(pod, WARNING, "PodBindFailure", message.reason)
        self._submit(task)

    def on_UpdateContainerSchedulingStateRequest(self, request: si_pb2.UpdateContainerSchedulingStateRequest) -> None:
        task = self._tasks.get(request.allocationKey)
        if task is None or task.state != TaskState.SCHEDULING:
            return
        if request.state == si_pb2.UpdateContainerSchedulingStateRequest.FAILED:
            self._task_unschedulable(task, "FailedScheduling", request.reason)

    def on_CoreEvents(self, message: CoreEvents) -> None:
        for record in message.events:
            task = self._tasks.get(record.objectID)
            if task is not None:
                self._pod_event(task.pod, NORMAL, "Informational", record.message)

    # ---- feedback ------------------------------------------------------------------------------

    def _settle_handoff(self, task: Task) -> None:
        if self._plugin_mode:
            self._binder.tell(Settled(task.pod.uid))

    def _task_unschedulable(self, task: Task, reason: str, message: str) -> None:
        pod = task.pod
        if self._plugin_mode:
            self._binder.tell(WaitingReason(pod.uid, message))
        self._pod_event(pod, WARNING, reason, message)
        self._feedback.add(PodCondition(pod.namespace, pod.name, pod.uid, "Unschedulable", message))

    def _pod_event(self, pod: PodRecord, type_: str, reason: str, message: str) -> None:
        self._feedback.add(KubeEvent("Pod", pod.namespace, pod.name, pod.uid, type_, reason, message))

    def after_message(self) -> None:
        if self._changed:
            self._board.pods.show_all([task.view() for task in self._changed.values()])
            self._changed.clear()
        self.flush_batches()
        for placed in self._placed_elsewhere:  # after the withdrawn ask, so the core sees it gone first
            self._context.tell(PlacedElsewhere(placed))
        self._placed_elsewhere = []
