"""The unschedulable-ask backoff: an application whose asks find no node for ``backoff`` attempts in a row
is not tried again for ``backoff.delay``, and REST shows until when."""

from rest.daos import GO_ZERO_TIME, application
from tests.queues import config, queue

QUEUES = config(queue("patient", properties={"application.unschedasks.backoff": "2",
                                              "application.unschedasks.backoff.delay": "1s"}),
                queue("eager"), create=False)


def app_of(core, app_id):
    return next(a for a in core.snapshot().partitions[0].applications if a.application_id == app_id)


def test_an_application_without_placements_backs_off_then_is_tried_again(core_factory):
    core = core_factory(QUEUES)
    core.nodes(1, vcore=1000)
    core.app("big", queue="root.patient")
    core.asks("big", 1, vcore=2000, prefix="big-")
    core.settle()
    assert not app_of(core, "big").backoff_deadline, "one attempt: not yet"
    core.nodes(1, vcore=1000, prefix="other-")  # a change: the cycle runs again, the ask fits nowhere still
    core.settle()
    deadline = app_of(core, "big").backoff_deadline
    assert deadline == core.clock.now_ns() + 10**9, "the backoff after two attempts, for the queue's delay"
    assert application(app_of(core, "big"))["backoffDeadline"].endswith("Z")
    core.nodes(1, vcore=4000, prefix="large-")  # room now, but the application waits out its backoff
    core.advance(0.95)
    assert "big-0" not in {a.allocationKey for a in core.callback.new()}, "not tried again before the deadline"
    core.advance(0.05)
    assert core.clock.now_ns() == deadline
    assert "big-0" in {a.allocationKey for a in core.callback.new()}, "placed at the deadline"
    assert application(app_of(core, "big"))["backoffDeadline"] == GO_ZERO_TIME


def test_a_queue_without_backoff_keeps_trying(core_factory):
    core = core_factory(QUEUES)
    core.nodes(1, vcore=1000)
    core.app("eager-app", queue="root.eager")
    core.asks("eager-app", 1, vcore=2000)
    for i in range(3):
        core.nodes(1, vcore=1000, prefix=f"more-{i}-")
        core.settle()
    assert not app_of(core, "eager-app").backoff_deadline
    core.nodes(1, vcore=4000, prefix="large-")
    core.settle()
    assert core.callback.new(), "placed at once"
