"""The injected clock: a virtual clock runs its timers at their exact times, in order, as it is advanced;
the real one runs them on threads."""

import threading

import pytest

from si.clock import ALARMS_IDLE, NS, REAL_CLOCK, VIRTUAL_EPOCH_NS, RealClock, VirtualClock
from tests.waiting import wait_for


def test_a_virtual_clock_stands_still_until_advanced():
    clock = VirtualClock()
    assert clock.now_ns() == VIRTUAL_EPOCH_NS and clock.monotonic_ns() == 0
    clock.advance(1.5)
    assert clock.now_ns() == VIRTUAL_EPOCH_NS + 3 * NS // 2 and clock.monotonic_ns() == 3 * NS // 2
    with pytest.raises(ValueError, match="never goes back"):
        clock.advance(-1)
    assert clock.monotonic_ns() == 3 * NS // 2


def test_timers_run_at_their_exact_times_in_due_order():
    clock = VirtualClock()
    runs = []
    clock.every(lambda: 0.3, lambda: runs.append(("tick", clock.monotonic_ns())))
    clock.after(0.5, lambda: runs.append(("alarm", clock.monotonic_ns())))
    clock.after(0.3, lambda: runs.append(("first alarm", clock.monotonic_ns())))
    clock.advance(0.29)
    assert runs == []
    clock.advance(0.71)
    ms = 1_000_000
    assert runs == [("tick", 300 * ms), ("first alarm", 300 * ms), ("alarm", 500 * ms), ("tick", 600 * ms),
                    ("tick", 900 * ms)], "same due time: in the order they were set"
    assert clock.monotonic_ns() == NS


def test_a_periodic_timer_reads_its_interval_after_each_run_and_ends_when_stopped_or_false():
    clock = VirtualClock()
    interval = [1.0]
    seen, ended = [], []
    timer = clock.every(lambda: interval[0], lambda: seen.append(clock.monotonic_ns() // NS))
    clock.every(lambda: 1.0, lambda: ended.append(1) or len(ended) < 2)
    clock.advance(1)
    interval[0] = 2.0
    clock.advance(4)
    assert seen == [1, 2, 4], "the run at 1 s set the next at 2 s; from there, every 2 s"
    assert len(ended) == 2, "False ended it"
    timer.stop()
    clock.advance(10)
    assert seen == [1, 2, 4]


def test_between_runs_after_each_timer_before_time_moves_on():
    clock = VirtualClock()
    order = []
    clock.every(lambda: 1.0, lambda: order.append(("run", clock.monotonic_ns() // NS)))
    clock.advance(2, between=lambda: order.append(("between", clock.monotonic_ns() // NS)))
    assert order == [("run", 1), ("between", 1), ("run", 2), ("between", 2)]


def test_the_real_clock_runs_alarms_in_due_order_on_one_thread_and_skips_stopped_ones():
    ran, threads = [], set()

    def note(name):
        ran.append(name)
        threads.add(threading.current_thread().name)
    REAL_CLOCK.after(0.06, lambda: note("late"))
    REAL_CLOCK.after(0.02, lambda: note("early"))
    REAL_CLOCK.after(0.04, lambda: note("stopped")).stop()
    wait_for(lambda: len(ran) == 2, timeout=5, message="both alarms")
    assert ran == ["early", "late"] and threads == {"clock-alarms"}
    stopping = threading.Event()
    ticks = []
    timer = REAL_CLOCK.every(lambda: 0.01, lambda: ticks.append(1) or not stopping.is_set(), "test-ticker")
    wait_for(lambda: len(ticks) >= 3, timeout=5, message="three ticks")
    timer.stop()
    count = len(ticks)
    REAL_CLOCK.after(0.05, stopping.set)
    wait_for(stopping.is_set, timeout=5, message="an alarm after the ticker stopped")
    assert len(ticks) == count, "no tick after stop() returned"


def test_the_real_clocks_alarm_thread_runs_alarms_set_one_after_another_then_ends_when_idle():
    clock = RealClock()
    ran = []
    clock.after(0, lambda: ran.append(threading.current_thread()))
    wait_for(lambda: ran, timeout=5, message="the first alarm")
    clock.after(0.01, lambda: ran.append(threading.current_thread()))  # set once the first one has run
    wait_for(lambda: len(ran) == 2, timeout=5, message="the second alarm")
    assert ran[0] is ran[1], "the thread waited for the next alarm rather than ending"
    wait_for(lambda: not ran[0].is_alive(), timeout=ALARMS_IDLE + 5, message="the idle thread's end")


def test_an_action_that_raises_is_logged_and_the_clocks_other_timers_go_on(caplog):
    clock = RealClock()
    ran, ticks = [], []

    def broken():
        raise RuntimeError("broken action")
    clock.after(0, broken, "broken-alarm")
    clock.after(0.01, lambda: ran.append("after the broken one"), "next-alarm")
    wait_for(lambda: ran, timeout=5, message="the alarm due after the one that raised")

    def tick():
        ticks.append(1)
        if len(ticks) == 1:
            raise RuntimeError("broken tick")
    timer = clock.every(lambda: 0.01, tick, "broken-ticker")
    wait_for(lambda: len(ticks) >= 2, timeout=5, message="a tick after the one that raised")
    timer.stop()
    failures = [record for record in caplog.records if record.levelname == "ERROR" and record.name == "si.clock"]
    assert [record.getMessage() for record in failures] == [
        "timer broken-alarm failed; the clock's other timers go on",
        "timer broken-ticker failed; the clock's other timers go on"]
