"""Aggregation and rate limiting of events, without I/O."""

import pytest

from actors.shim.eventbuffer import EventBuffer
from actors.shim.messages import KubeEvent, PodCondition


def event(name="p1", type_="Normal", reason="Scheduled", message="m"):
    return KubeEvent("Pod", "default", name, "uid-" + name, type_, reason, message)


def test_identical_events_aggregate_into_one_with_a_count():
    buffer = EventBuffer(qps=10, burst=10, max_pending=100)
    for _ in range(5):
        buffer.add_event(event())
    buffer.add_event(event(message="other"))
    assert buffer.due(0.0) == [(event(), 5, None), (event(message="other"), 1, None)]


def test_a_written_event_is_updated_not_duplicated():
    buffer = EventBuffer(qps=10, burst=10, max_pending=100)
    buffer.add_event(event())
    [(written, count, previous)] = buffer.due(0.0)
    buffer.posted(written, "p1.abc", "default", count)
    buffer.add_event(event())
    buffer.add_event(event())
    assert buffer.due(1.0) == [(event(), 2, ("p1.abc", "default", 1))]


def test_rate_is_bounded_by_the_token_bucket():
    buffer = EventBuffer(qps=10, burst=20, max_pending=10000)
    for i in range(1000):
        buffer.add_event(event(name=f"p{i}"))
    assert len(buffer.due(0.0)) == 20          # the burst
    assert len(buffer.due(0.5)) == 5           # then qps
    assert len(buffer.due(0.5)) == 0
    assert len(buffer.due(100.0)) == 20        # never more than the burst at once
    assert buffer.pending == 1000 - 45


def test_warnings_go_first_then_conditions_then_normal_events():
    buffer = EventBuffer(qps=1, burst=3, max_pending=100)
    buffer.add_event(event(name="n"))
    buffer.add_condition(PodCondition("default", "c", "uid-c", "Unschedulable", "full"))
    buffer.add_event(event(name="w", type_="Warning", reason="FailedScheduling"))
    items = buffer.due(0.0)
    assert items[0][0].name == "w" and isinstance(items[1], PodCondition) and items[2][0].name == "n"


def test_overflow_drops_normal_events_before_warnings():
    buffer = EventBuffer(qps=1, burst=100, max_pending=3)
    buffer.add_event(event(name="n1"))
    buffer.add_event(event(name="w1", type_="Warning"))
    buffer.add_event(event(name="w2", type_="Warning"))
    buffer.add_event(event(name="w3", type_="Warning"))   # evicts n1
    buffer.add_event(event(name="n2"))                    # only warnings wait: dropped
    assert buffer.dropped == 2
    assert [item[0].name for item in buffer.due(0.0)] == ["w1", "w2", "w3"]


def test_the_same_condition_is_written_once():
    buffer = EventBuffer(qps=100, burst=100, max_pending=10)
    condition = PodCondition("default", "p", "uid-p", "Unschedulable", "queue full")
    buffer.add_condition(condition)
    buffer.add_condition(condition)
    assert buffer.due(0.0) == [condition]
    buffer.add_condition(condition)
    assert buffer.due(1.0) == []
    changed = PodCondition("default", "p", "uid-p", "Unschedulable", "no node fits")
    buffer.add_condition(changed)
    assert buffer.due(2.0) == [changed]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        EventBuffer(qps=0, burst=1, max_pending=1)
