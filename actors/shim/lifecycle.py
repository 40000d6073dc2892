"""The state machines of the shim: the scheduler itself, applications and tasks (pods).

Each machine is a table ``event -> (states it may fire from, state it leads to)``; firing an event
from any other state raises ``InvalidTransition`` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from si.states import ShimApplicationState, TaskState


class InvalidTransition(Exception):
    """An event fired in a state that does not allow it."""


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


Table = Mapping[str, tuple[frozenset[str], str]]

_S = SchedulerState
SCHEDULER_TRANSITIONS: Table = {
    "register": (frozenset({_S.NEW}), _S.REGISTERED),
    "recover": (frozenset({_S.REGISTERED}), _S.RECOVERING),
    "recovered": (frozenset({_S.RECOVERING}), _S.RUNNING),
    "fail": (frozenset({_S.NEW, _S.REGISTERED, _S.RECOVERING}), _S.FAILED),
    "drain": (frozenset({_S.NEW, _S.REGISTERED, _S.RECOVERING, _S.RUNNING, _S.FAILED}), _S.DRAINING),
    "stop": (frozenset({_S.DRAINING}), _S.STOPPED),
}

_A = AppState
_APP_LIVE = frozenset({_A.NEW, _A.SUBMITTED, _A.ACCEPTED, _A.RESERVING, _A.RESUMING, _A.RUNNING})
APP_TRANSITIONS: Table = {
    "submit": (frozenset({_A.NEW}), _A.SUBMITTED),
    "accept": (frozenset({_A.SUBMITTED}), _A.ACCEPTED),
    "reserve": (frozenset({_A.ACCEPTED}), _A.RESERVING),
    "resume": (frozenset({_A.RESERVING}), _A.RESUMING),
    "run": (frozenset({_A.SUBMITTED, _A.ACCEPTED, _A.RESERVING, _A.RESUMING}), _A.RUNNING),
    "complete": (frozenset({_A.ACCEPTED, _A.RUNNING}), _A.COMPLETED),
    "reject": (frozenset({_A.NEW, _A.SUBMITTED}), _A.REJECTED),
    "fail": (frozenset({_A.SUBMITTED, _A.ACCEPTED, _A.RESERVING, _A.RESUMING, _A.RUNNING}), _A.FAILING),
    "failed": (frozenset({_A.FAILING}), _A.FAILED),
    "kill": (_APP_LIVE | {_A.FAILING}, _A.KILLING),
    "killed": (frozenset({_A.KILLING}), _A.KILLED),
}
APP_TERMINAL = frozenset({_A.COMPLETED, _A.REJECTED, _A.FAILED, _A.KILLED})

_T = TaskState
_TASK_LIVE = frozenset({_T.NEW, _T.PENDING, _T.SCHEDULING, _T.ALLOCATED, _T.BOUND})
TASK_TRANSITIONS: Table = {
    "init": (frozenset({_T.NEW}), _T.PENDING),
    "submit": (frozenset({_T.PENDING}), _T.SCHEDULING),
    "allocate": (frozenset({_T.SCHEDULING}), _T.ALLOCATED),
    "bind": (frozenset({_T.ALLOCATED}), _T.BOUND),
    # a pod found already on a node (recovery, placed by someone else, or a bind that reached the
    # cluster although its answer said otherwise): counted where it is
    "recover": (frozenset({_T.NEW, _T.PENDING, _T.SCHEDULING, _T.ALLOCATED}), _T.BOUND),
    "unbind": (frozenset({_T.ALLOCATED}), _T.PENDING),
    # plugin mode: kube-scheduler did not bind the pod where the core placed it, so it is placed again
    "retract": (frozenset({_T.BOUND}), _T.PENDING),
    "reject": (frozenset({_T.NEW, _T.PENDING, _T.SCHEDULING}), _T.REJECTED),
    "complete": (_TASK_LIVE, _T.COMPLETED),
    "fail": (_TASK_LIVE | {_T.REJECTED}, _T.FAILED),
    "kill": (_TASK_LIVE | {_T.REJECTED}, _T.KILLED),
}
TASK_TERMINAL = frozenset({_T.REJECTED, _T.COMPLETED, _T.KILLED, _T.FAILED})


class StateMachine:
    """One object's current state under a transition table."""

    __slots__ = ("state", "_table", "_what")

    def __init__(self, table: Table, initial: str, what: str) -> None:
        self._table = table
        self._what = what
        self.state = initial

    def can(self, event: str) -> bool:
        sources, _ = self._table[event]
        return self.state in sources

    def fire(self, event: str) -> str:
        """Move to the state ``event`` leads to and return it; raise ``InvalidTransition`` if the
        current state does not allow ``event``."""
        try:
            sources, target = self._table[event]
        except KeyError:
            raise InvalidTransition(f"{self._what}: unknown event {event!r}") from None
        if self.state not in sources:
            raise InvalidTransition(f"{self._what}: event {event!r} not allowed in state {self.state}")
        self.state = target
        return target


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


_N = NodeState
_NODE_IN_CORE = frozenset({_N.RECOVERING, _N.SCHEDULABLE, _N.DRAINING, _N.NOT_READY})
NODE_TRANSITIONS: Table = {
    "recover": (frozenset({_N.NEW, _N.LOST}), _N.RECOVERING),
    "schedulable": (frozenset({_N.RECOVERING, _N.DRAINING, _N.NOT_READY}), _N.SCHEDULABLE),
    "drain": (frozenset({_N.RECOVERING, _N.SCHEDULABLE, _N.NOT_READY}), _N.DRAINING),
    "not_ready": (frozenset({_N.RECOVERING, _N.SCHEDULABLE, _N.DRAINING}), _N.NOT_READY),
    "lose": (frozenset({_N.NEW}) | _NODE_IN_CORE, _N.LOST),
    "remove": (frozenset({_N.NEW, _N.LOST}) | _NODE_IN_CORE, _N.REMOVED),
}
NODE_IN_CORE = _NODE_IN_CORE
