"""The state machines refuse what their tables do not allow, and events of another machine."""

import pytest

from actors.shim.lifecycle import (
    APP_TRANSITIONS,
    SCHEDULER_TRANSITIONS,
    TASK_TRANSITIONS,
    AppEvent,
    AppState,
    InvalidTransition,
    SchedulerEvent,
    SchedulerState,
    StateMachine,
    TaskEvent,
    TaskState,
)

E = SchedulerEvent


def test_scheduler_start_up_path_and_refusals():
    machine = StateMachine(SCHEDULER_TRANSITIONS, SchedulerState.NEW, "scheduler")
    with pytest.raises(InvalidTransition, match="'recover' not allowed in state New"):
        machine.fire(E.RECOVER)
    assert machine.state == SchedulerState.NEW
    for event, state in ((E.REGISTER, "Registered"), (E.RECOVER, "Recovering"), (E.RECOVERED, "Running"),
                         (E.DRAIN, "Draining"), (E.STOP, "Stopped")):
        assert machine.fire(event) == state


def test_task_happy_path_and_bind_failure_returns_to_pending():
    task = StateMachine(TASK_TRANSITIONS, TaskState.NEW, "task")
    for event in (TaskEvent.INIT, TaskEvent.SUBMIT, TaskEvent.ALLOCATE):
        task.fire(event)
    assert task.fire(TaskEvent.UNBIND) == TaskState.PENDING
    for event in (TaskEvent.SUBMIT, TaskEvent.ALLOCATE, TaskEvent.BIND, TaskEvent.COMPLETE):
        task.fire(event)
    assert task.state == TaskState.COMPLETED
    assert not task.can(TaskEvent.BIND)


def test_app_states():
    app = StateMachine(APP_TRANSITIONS, AppState.NEW, "app")
    assert [app.fire(e) for e in (AppEvent.SUBMIT, AppEvent.ACCEPT, AppEvent.RUN, AppEvent.COMPLETE)] == [
        "Submitted", "Accepted", "Running", "Completed"]
    rejected = StateMachine(APP_TRANSITIONS, AppState.NEW, "app")
    rejected.fire(AppEvent.SUBMIT)
    assert rejected.fire(AppEvent.REJECT) == "Rejected"


@pytest.mark.parametrize("event", ["submit", TaskEvent.SUBMIT])
def test_an_event_of_another_machine_or_a_bare_string_is_refused(event):
    app = StateMachine(APP_TRANSITIONS, AppState.NEW, "app")
    assert not app.can(event)
    with pytest.raises(InvalidTransition, match="unknown event"):
        app.fire(event)
    assert app.state == AppState.NEW
