"""The simulated resource manager drives the core's partition on a virtual clock: pods start when the
core allocates them and end after their duration, victims leave after their grace period and come back,
gangs get placeholders that real pods replace, and a run is a function of its inputs and seed."""

from tests import queues as built
from tests.simulator.simrun import pods, run

FIFO = built.config(built.queue("a"), built.queue("b"))
GUARANTEED = built.config(built.queue("a", guaranteed={"vcore": 2, "memory": "2Gi"}),
                          built.queue("b", guaranteed={"vcore": 2, "memory": "2Gi"}))
NODE = {"count": 1, "cpu": "2", "memory": "8Gi"}


def app(name, submit, count=1, cpu="1", duration=10.0, queue="root.a", **more):
    pod = {"count": count, "cpu": cpu, "memory": "1Gi", "duration": duration}
    pod.update(more.pop("pod", {}))
    return {"submit": submit, "app": name, "queue": queue, "user": more.pop("user", "u1"), "pods": [pod], **more}


def test_pods_start_when_allocated_and_end_after_their_duration_in_fifo_order():
    outcome = run(FIFO, [NODE], [app("a1", 0, count=2), app("a2", 1, cpu="2", duration=5), app("a3", 2)])
    got = {key: (p.start, p.end, p.node) for key, p in pods(outcome).items()}
    # a2 (older) takes the node when a1's pods end at 10; a3 waits for a2 to end although it would fit earlier
    # beside nothing: the node is reserved for a2 after its reservation delay.
    assert got == {"a1-0-0": (0.0, 10.0, "node-0-0"), "a1-0-1": (0.0, 10.0, "node-0-0"),
                   "a2-0-0": (10.0, 15.0, "node-0-0"), "a3-0-0": (15.0, 25.0, "node-0-0")}
    assert outcome.makespan == 25.0
    assert outcome.placements["root.a"] == ["a1-0-0", "a1-0-1", "a2-0-0", "a3-0-0"]
    # Two cores busy for 10s, two for 5s, one for 10s, out of 2 cores x 25s.
    assert outcome.used_area["vcore"] / (2000 * 25.0) == (2 * 10 + 2 * 5 + 1 * 10) / 50


def test_a_victim_leaves_after_its_grace_period_and_is_submitted_again():
    outcome = run(GUARANTEED, [{"count": 1, "cpu": "4", "memory": "4Gi"}], [
        app("a1", 0, count=4, duration=1000),
        app("b1", 10, count=2, duration=100, queue="root.b", pod={"grace": 5})])
    by_key = pods(outcome)
    first = outcome.preemptions[0]
    # b1 waits its queue's preemption.delay (30s) before it may preempt; the victim's own grace (30s) follows.
    assert (first.time, first.victim_queue) == (40.0, "root.a")
    assert "b1-0-0 of application b1 in queue root.b" in first.message
    victim = by_key[first.victim]
    assert victim.preempted and victim.end == 70.0
    assert by_key["b1-0-0"].start == 70.0
    again = by_key[f"{first.victim}~1"]
    assert again.submit == 70.0 and again.start is not None and again.start > 70.0
    assert {p.victim_queue for p in outcome.preemptions} == {"root.a"}
    assert all(p.start is not None for p in outcome.pods)


def test_a_gang_gets_placeholders_that_its_real_pods_replace():
    gang = app("g1", 0, count=2, duration=50, pod={"taskGroup": "workers"},
               taskGroups=[{"name": "workers", "minMember": 2, "minResource": {"cpu": "1", "memory": "1Gi"}}])
    outcome = run(FIFO, [NODE], [app("a1", 0, duration=20), gang])
    by_key = pods(outcome)
    placeholders = [p for p in outcome.pods if p.placeholder]
    assert len(placeholders) == 2
    # One placeholder fits beside a1 at once, the other when a1 ends at 20; then the real pods replace them.
    assert sorted(p.start for p in placeholders) == [0.0, 20.0]
    assert all(p.end is not None and p.end >= 20.0 for p in placeholders)
    assert by_key["g1-0-0"].start == by_key["g1-0-1"].start == 20.0
    assert outcome.gangs["g1"].running == 20.0 and outcome.gangs["g1"].timed_out is None
    assert outcome.makespan == 70.0


def test_a_hard_gang_that_never_gets_its_room_times_out_and_fails():
    gang = app("g1", 0, count=3, duration=50, pod={"taskGroup": "workers"}, gangStyle="Hard", placeholderTimeout=60,
               taskGroups=[{"name": "workers", "minMember": 3, "minResource": {"cpu": "1", "memory": "1Gi"}}])
    outcome = run(FIFO, [NODE], [gang])
    assert outcome.gangs["g1"].timed_out == 60.0
    real = [p for p in outcome.pods if not p.placeholder]
    assert all(p.start is None and p.failed for p in real)
    assert all("gang failed" in p.reason for p in real)
    assert all(p.end is not None for p in outcome.pods if p.placeholder)  # no placeholder is left holding room


def test_node_selectors_and_taints_choose_the_nodes():
    nodes = [{"count": 1, "cpu": "2", "memory": "8Gi", "labels": {"disk": "ssd"}, "name": "ssd"},
             {"count": 1, "cpu": "2", "memory": "8Gi", "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
              "name": "gpu"}]
    outcome = run(FIFO, nodes, [
        app("plain", 0, count=3),
        app("picky", 1, pod={"nodeSelector": {"disk": "hdd"}}),
        app("tolerant", 2, pod={"tolerations": [{"key": "gpu", "operator": "Exists"}], "nodeSelector": {"disk": "ssd"}})])
    by_key = pods(outcome)
    assert {by_key[f"plain-0-{i}"].node for i in range(3)} == {"ssd-0"}  # the tainted node takes none of them
    assert by_key["plain-0-2"].start == 10.0
    assert by_key["picky-0-0"].start is None
    assert "didn't match Pod's node affinity/selector" in by_key["picky-0-0"].reason
    assert by_key["tolerant-0-0"].node == "ssd-0"


def test_a_queue_max_holds_pods_back_with_its_reason():
    outcome = run(built.config(built.queue("a", max={"vcore": 1, "memory": "8Gi"})), [NODE],
                  [app("a1", 0, count=2, duration=10)])
    by_key = pods(outcome)
    assert (by_key["a1-0-0"].start, by_key["a1-0-1"].start) == (0.0, 10.0)


def test_the_same_inputs_and_seed_give_the_same_run():
    lines = [app(f"x{i}", i // 3, count=1 + i % 3, duration=5 + i % 7, queue=("root.a", "root.b")[i % 2])
             for i in range(30)]

    def placements(seed):
        outcome = run(FIFO, [NODE], lines, seed=seed)
        return [(p.key, p.start, p.node) for p in outcome.pods]

    assert placements(7) == placements(7)
    assert placements(0) == placements(0)
    assert placements(0) != placements(7)  # the seed orders applications submitted at the same time


def test_a_soft_gang_that_times_out_runs_its_pods_as_ordinary_ones():
    gang = app("g1", 0, count=3, duration=50, pod={"taskGroup": "workers"}, gangStyle="Soft", placeholderTimeout=60,
               taskGroups=[{"name": "workers", "minMember": 3, "minResource": {"cpu": "1", "memory": "1Gi"}}])
    outcome = run(FIFO, [NODE], [gang])
    assert outcome.gangs["g1"].timed_out == 60.0 and outcome.gangs["g1"].running is None
    starts = sorted(p.start for p in outcome.pods if not p.placeholder)
    assert starts == [60.0, 60.0, 110.0]  # once the placeholders are gone, two fit; the third when one ends


def test_a_victim_comes_back_with_its_node_selector():
    nodes = [{"count": 1, "cpu": "4", "memory": "4Gi", "labels": {"disk": "ssd"}, "name": "ssd"},
             {"count": 1, "cpu": "4", "memory": "4Gi", "name": "plain"}]
    ssd = {"nodeSelector": {"disk": "ssd"}}
    outcome = run(GUARANTEED, nodes, [app("a1", 0, count=4, duration=1000, pod=ssd),
                                      app("b1", 10, count=1, duration=100, queue="root.b", pod=ssd)])
    [preemption] = outcome.preemptions
    again = pods(outcome)[f"{preemption.victim}~1"]
    assert again.node == "ssd-0"  # not the free node without the label
