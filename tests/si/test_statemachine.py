"""One state-machine style: the core's application and the shim's machines refuse with the same
InvalidTransition, and change nothing when they do."""

from enum import Enum

import pytest

from actors.core.application import Application
from actors.shim import lifecycle
from si import si_pb2
from si.statemachine import InvalidTransition, Transitions
from si.states import ApplicationState


def application() -> Application:
    return Application(si_pb2.AddApplicationRequest(applicationID="app-1"), "default", "root.a", now=1)


def test_the_core_refuses_a_transition_yunikorn_forbids():
    app = application()
    with pytest.raises(InvalidTransition, match="application app-1: event 'Running' not allowed in state New"):
        app.transition(ApplicationState.RUNNING, now=2)
    with pytest.raises(InvalidTransition, match="unknown event"):
        app.transition("Exploded", now=2)
    assert app.state == ApplicationState.NEW and app.state_log == [(1, ApplicationState.NEW)]


def test_the_core_follows_an_allowed_path():
    app = application()
    for state in (ApplicationState.ACCEPTED, ApplicationState.STARTING, ApplicationState.RUNNING,
                  ApplicationState.COMPLETING, ApplicationState.COMPLETED, ApplicationState.EXPIRED):
        assert app.transition(state, now=5)
    assert not app.transition(ApplicationState.EXPIRED, now=6), "already there"
    assert app.finished_time == 5


def test_core_and_shim_share_the_exception():
    assert lifecycle.InvalidTransition is InvalidTransition


def test_a_table_mixing_event_types_is_refused():
    with pytest.raises(TypeError):
        Transitions({"go": (("A",), "B")})
    with pytest.raises(TypeError):
        Transitions({lifecycle.AppEvent.RUN: (("A",), "B"), lifecycle.TaskEvent.BIND: (("A",), "B")})


def test_an_event_of_another_machine_is_refused_even_of_the_same_name():
    class Door(Enum):
        OPEN = "open"

    class Valve(Enum):
        OPEN = "open"

    table = Transitions({Door.OPEN: (("Closed",), "Open")})
    assert table.allows("Closed", Door.OPEN) and table.target("Closed", Door.OPEN, "door") == "Open"
    assert not table.allows("Closed", Valve.OPEN) and not table.allows("Closed", "OPEN")
    with pytest.raises(InvalidTransition, match="unknown event"):
        table.target("Closed", Valve.OPEN, "door")
