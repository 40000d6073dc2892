"""The state machines refuse what their tables do not allow."""

import pytest

from actors.shim.lifecycle import (
    APP_TRANSITIONS,
    SCHEDULER_TRANSITIONS,
    TASK_TRANSITIONS,
    AppState,
    InvalidTransition,
    SchedulerState,
    StateMachine,
    TaskState,
)


def test_scheduler_start_up_path_and_refusals():
    machine = StateMachine(SCHEDULER_TRANSITIONS, SchedulerState.NEW, "scheduler")
    with pytest.raises(InvalidTransition, match="'recover' not allowed in state New"):
        machine.fire("recover")
    assert machine.state == SchedulerState.NEW
    for event, state in (("register", "Registered"), ("recover", "Recovering"), ("recovered", "Running"),
                         ("drain", "Draining"), ("stop", "Stopped")):
        assert machine.fire(event) == state


def test_task_happy_path_and_bind_failure_returns_to_pending():
    task = StateMachine(TASK_TRANSITIONS, TaskState.NEW, "task")
    for event in ("init", "submit", "allocate"):
        task.fire(event)
    assert task.fire("unbind") == TaskState.PENDING
    for event in ("submit", "allocate", "bind", "complete"):
        task.fire(event)
    assert task.state == TaskState.COMPLETED
    assert not task.can("bind")


def test_app_states():
    app = StateMachine(APP_TRANSITIONS, AppState.NEW, "app")
    assert [app.fire(e) for e in ("submit", "accept", "run", "complete")] == [
        "Submitted", "Accepted", "Running", "Completed"]
    with pytest.raises(InvalidTransition, match="unknown event"):
        app.fire("explode")
    rejected = StateMachine(APP_TRANSITIONS, AppState.NEW, "app")
    rejected.fire("submit")
    assert rejected.fire("reject") == "Rejected"
