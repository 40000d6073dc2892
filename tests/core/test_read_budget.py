"""The readers' share of the core's time: a snapshot of a changed core waits until what the last ones
cost is earned back, readers arriving meanwhile share it, and it still shows every change before it."""

import threading

import pytest

from actors.core.readbudget import ReadBudget
from actors.core.snapshot import NODES
from tests.waiting import wait_for


def test_a_snapshot_waits_until_what_the_last_cost_is_earned_back():
    budget = ReadBudget(share=0.05, saved=0.5, longest_wait=2.0, now=0.0)
    assert budget.wait(now=0.0) == 0.0
    budget.spend(0.075, now=0.0)  # 0.025 s saved, 0.05 s owed: a second at 5%
    assert budget.wait(now=0.0) == pytest.approx(1.0)
    assert budget.wait(now=0.5) == pytest.approx(0.5)
    assert budget.wait(now=1.0) == 0.0


def test_a_quiet_core_saves_only_so_much_for_the_next_reads():
    budget = ReadBudget(share=0.05, saved=0.5, longest_wait=2.0, now=0.0)
    budget.spend(0.025, now=100.0)  # a hundred quiet seconds saved half a second's growth, no more
    assert budget.wait(now=100.0) == 0.0
    budget.spend(0.01, now=100.0)
    assert budget.wait(now=100.0) == pytest.approx(0.2)


def test_no_reader_waits_longer_than_the_longest_wait():
    budget = ReadBudget(share=0.05, saved=0.5, longest_wait=2.0, now=0.0)
    budget.spend(10.0, now=0.0)
    assert budget.wait(now=0.0) == pytest.approx(2.0)


def test_a_share_of_one_never_waits():
    budget = ReadBudget(share=1.0, now=0.0)
    budget.spend(10.0, now=0.0)
    assert budget.wait(now=0.0) == 0.0


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5, float("nan")])
def test_a_share_out_of_range_is_refused(share):
    with pytest.raises(ValueError, match="share"):
        ReadBudget(share=share)


def test_readers_of_a_changed_core_wait_for_the_budget_share_one_snapshot_and_see_every_change(core_factory):
    budget = ReadBudget(share=0.001, saved=0.0, longest_wait=600.0)
    core = core_factory(read_budget=budget)
    core.nodes(1, prefix="first-")
    core.settle()
    first = core.scheduler.snapshot(frozenset({NODES}))
    assert first.partition("default").cost > 0 and core.scheduler.read_seconds >= first.partition("default").cost
    budget.spend(600.0)  # owed for the longest wait, ten minutes
    assert core.scheduler.snapshot(frozenset({NODES})) is first  # nothing changed: shared at once
    core.nodes(1, prefix="later-")
    core.scheduler.barrier()
    later: list = []
    readers = [threading.Thread(target=lambda: later.append(core.scheduler.snapshot(frozenset({NODES}))))
               for _ in range(3)]
    for reader in readers:
        reader.start()
    wait_for(lambda: getattr(core.scheduler._next_snapshot, "readers", 0) == 3, timeout=10,
             message="three readers waiting for the budget")
    assert later == [] and all(reader.is_alive() for reader in readers)
    urgent = core.scheduler.snapshot(frozenset({NODES}), budgeted=False)  # the history's sampler reads so
    for reader in readers:
        reader.join(10)
    assert len(later) == 3 and all(snapshot is urgent for snapshot in later)
    assert {n.node_id for n in urgent.partition("default").nodes} == {"first-0", "later-0"}
