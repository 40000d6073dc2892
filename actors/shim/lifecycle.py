"""The state machines of the shim: the scheduler itself, applications, tasks (pods) and nodes.

Each machine is a table ``event -> (states it may fire from, state it leads to)`` over its own event
enum (``si.statemachine``); firing an event from any other state raises ``InvalidTransition`` and
changes nothing.
"""

from __future__ import annotations

from enum import Enum

from si.statemachine import InvalidTransition, StateMachine, Transitions
from si.states import ShimApplicationState, TaskState

__all__ = ["InvalidTransition", "StateMachine", "TaskState"]


class SchedulerState:
    """The shim's own states (resilience design): New -> Registered -> Recovering -> Running, Failed on
    an error during start-up, Draining -> Stopped on shutdown."""

    NEW = "New"
    REGISTERED = "Registered"
    RECOVERING = "Recovering"
    RUNNING = "Running"
    FAILED = "Failed"
    DRAINING = "Draining"
    STOPPED = "Stopped"


AppState = ShimApplicationState


class SchedulerEvent(Enum):
    REGISTER = "register"
    RECOVER = "recover"
    RECOVERED = "recovered"
    FAIL = "fail"
    DRAIN = "drain"
    STOP = "stop"


_S = SchedulerState
SCHEDULER_TRANSITIONS = Transitions({
    SchedulerEvent.REGISTER: (frozenset({_S.NEW}), _S.REGISTERED),
    SchedulerEvent.RECOVER: (frozenset({_S.REGISTERED}), _S.RECOVERING),
    SchedulerEvent.RECOVERED: (frozenset({_S.RECOVERING}), _S.RUNNING),
    SchedulerEvent.FAIL: (frozenset({_S.NEW, _S.REGISTERED, _S.RECOVERING}), _S.FAILED),
    SchedulerEvent.DRAIN: (frozenset({_S.NEW, _S.REGISTERED, _S.RECOVERING, _S.RUNNING, _S.FAILED}), _S.DRAINING),
    SchedulerEvent.STOP: (frozenset({_S.DRAINING}), _S.STOPPED),
})


class AppEvent(Enum):
    SUBMIT = "submit"
    ACCEPT = "accept"
    RESERVE = "reserve"
    RESUME = "resume"
    RUN = "run"
    COMPLETE = "complete"
    REJECT = "reject"
    FAIL = "fail"
    FAILED = "failed"
    KILL = "kill"
    KILLED = "killed"


_A = AppState
_APP_LIVE = frozenset({_A.NEW, _A.SUBMITTED, _A.ACCEPTED, _A.RESERVING, _A.RESUMING, _A.RUNNING})
APP_TRANSITIONS = Transitions({
    AppEvent.SUBMIT: (frozenset({_A.NEW}), _A.SUBMITTED),
    AppEvent.ACCEPT: (frozenset({_A.SUBMITTED}), _A.ACCEPTED),
    AppEvent.RESERVE: (frozenset({_A.ACCEPTED}), _A.RESERVING),
    AppEvent.RESUME: (frozenset({_A.RESERVING}), _A.RESUMING),
    AppEvent.RUN: (frozenset({_A.SUBMITTED, _A.ACCEPTED, _A.RESERVING, _A.RESUMING}), _A.RUNNING),
    AppEvent.COMPLETE: (frozenset({_A.ACCEPTED, _A.RUNNING}), _A.COMPLETED),
    AppEvent.REJECT: (frozenset({_A.NEW, _A.SUBMITTED}), _A.REJECTED),
    AppEvent.FAIL: (frozenset({_A.SUBMITTED, _A.ACCEPTED, _A.RESERVING, _A.RESUMING, _A.RUNNING}), _A.FAILING),
    AppEvent.FAILED: (frozenset({_A.FAILING}), _A.FAILED),
    AppEvent.KILL: (_APP_LIVE | {_A.FAILING}, _A.KILLING),
    AppEvent.KILLED: (frozenset({_A.KILLING}), _A.KILLED),
})
APP_TERMINAL = frozenset({_A.COMPLETED, _A.REJECTED, _A.FAILED, _A.KILLED})


class TaskEvent(Enum):
    INIT = "init"
    SUBMIT = "submit"
    ALLOCATE = "allocate"
    BIND = "bind"
    RECOVER = "recover"
    UNBIND = "unbind"
    RETRACT = "retract"
    REJECT = "reject"
    COMPLETE = "complete"
    FAIL = "fail"
    KILL = "kill"


_T = TaskState
_TASK_LIVE = frozenset({_T.NEW, _T.PENDING, _T.SCHEDULING, _T.ALLOCATED, _T.BOUND})
TASK_TRANSITIONS = Transitions({
    TaskEvent.INIT: (frozenset({_T.NEW}), _T.PENDING),
    TaskEvent.SUBMIT: (frozenset({_T.PENDING}), _T.SCHEDULING),
    TaskEvent.ALLOCATE: (frozenset({_T.SCHEDULING}), _T.ALLOCATED),
    TaskEvent.BIND: (frozenset({_T.ALLOCATED}), _T.BOUND),
    # a pod found already on a node (recovery, placed by someone else, or a bind that reached the
    # cluster although its answer said otherwise): counted where it is
    TaskEvent.RECOVER: (frozenset({_T.NEW, _T.PENDING, _T.SCHEDULING, _T.ALLOCATED}), _T.BOUND),
    TaskEvent.UNBIND: (frozenset({_T.ALLOCATED}), _T.PENDING),
    # plugin mode: kube-scheduler did not bind the pod where the core placed it, so it is placed again
    TaskEvent.RETRACT: (frozenset({_T.BOUND}), _T.PENDING),
    TaskEvent.REJECT: (frozenset({_T.NEW, _T.PENDING, _T.SCHEDULING}), _T.REJECTED),
    TaskEvent.COMPLETE: (_TASK_LIVE, _T.COMPLETED),
    TaskEvent.FAIL: (_TASK_LIVE | {_T.REJECTED}, _T.FAILED),
    TaskEvent.KILL: (_TASK_LIVE | {_T.REJECTED}, _T.KILLED),
})
TASK_TERMINAL = frozenset({_T.REJECTED, _T.COMPLETED, _T.KILLED, _T.FAILED})


class NodeState:
    """A node as the shim sees it (resilience design): New -> Recovering -> Schedulable; Draining while
    cordoned, NotReady while its kubelet is not ready, Lost when it is gone (deleted, NotReady too long,
    or only named by pods) and Recovering again when it returns; Removed when it is gone for good."""

    NEW = "New"
    RECOVERING = "Recovering"
    SCHEDULABLE = "Schedulable"
    DRAINING = "Draining"
    NOT_READY = "NotReady"
    LOST = "Lost"
    REMOVED = "Removed"


class NodeEvent(Enum):
    RECOVER = "recover"
    SCHEDULABLE = "schedulable"
    DRAIN = "drain"
    NOT_READY = "not_ready"
    LOSE = "lose"
    REMOVE = "remove"


_N = NodeState
_NODE_IN_CORE = frozenset({_N.RECOVERING, _N.SCHEDULABLE, _N.DRAINING, _N.NOT_READY})
NODE_TRANSITIONS = Transitions({
    NodeEvent.RECOVER: (frozenset({_N.NEW, _N.LOST}), _N.RECOVERING),
    NodeEvent.SCHEDULABLE: (frozenset({_N.RECOVERING, _N.DRAINING, _N.NOT_READY}), _N.SCHEDULABLE),
    NodeEvent.DRAIN: (frozenset({_N.RECOVERING, _N.SCHEDULABLE, _N.NOT_READY}), _N.DRAINING),
    NodeEvent.NOT_READY: (frozenset({_N.RECOVERING, _N.SCHEDULABLE, _N.DRAINING}), _N.NOT_READY),
    NodeEvent.LOSE: (frozenset({_N.NEW}) | _NODE_IN_CORE, _N.LOST),
    NodeEvent.REMOVE: (frozenset({_N.NEW, _N.LOST}) | _NODE_IN_CORE, _N.REMOVED),
})
NODE_IN_CORE = _NODE_IN_CORE
