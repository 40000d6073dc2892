"""The configmap flapping between a good configuration and hostile ones while pods are scheduled: each
hostile one is refused with an event, scheduling goes on under the last good one, nothing crashes."""

import threading

from tests.queues import config, queue
from tests.reliability.hostile import ALIAS_BOMB, DEEP_BRACKETS, HUGE_EXPONENT
from tests.reliability.invariants import HEALTH_ON_READ, assert_invariants, get_json
from tests.reliability.workload import burst
from tests.waiting import wait_for

GOOD = config(queue("capped", max={"vcore": 1}), queue("open"), create=False)  # capped: one core, ten pods of 100m
HOSTILE = (HUGE_EXPONENT, DEEP_BRACKETS, ALIAS_BOMB)
# What each refusal names (identical refusals aggregate into one event with a count).
REFUSED_FOR = ("longer than 100 characters", "nested deeper than 100 levels", "aliases expand")


def refusals(cluster) -> dict[str, int]:
    """Refusal events by the hostile input they name: how many times each was refused."""
    events = [e for e in cluster.sim.objects("events") if e.get("reason") == "ConfigurationRefused"]
    return {cause: sum(e.get("count", 1) for e in events if cause in e["message"]) for cause in REFUSED_FOR}


def test_hostile_configurations_are_refused_while_scheduling_goes_on_under_the_good_one(cluster, scheduler):
    cluster.sim.seed_nodes(2, cpu="4")
    url = scheduler(GOOD)
    stop, writes = threading.Event(), []

    def flap():
        while not stop.is_set():
            for text in (*HOSTILE, GOOD):
                cluster.configure(text, **HEALTH_ON_READ)
                writes.append(text)
                if stop.wait(0.1):
                    return

    flapper = threading.Thread(target=flap, daemon=True)
    flapper.start()
    try:
        burst(cluster, "c", 30, queue="root.capped", cpu="100m")
        opened = burst(cluster, "o", 30, queue="root.open")
        wait_for(lambda: len(writes) >= 12, message="several rounds of flapping")
    finally:
        stop.set()
        flapper.join(timeout=10)
    wait_for(lambda: all(refusals(cluster).values()), message="a refusal event for each hostile configuration")
    before = refusals(cluster)[REFUSED_FOR[0]]
    cluster.configure(HUGE_EXPONENT, **HEALTH_ON_READ)  # the last word is a hostile one
    wait_for(lambda: refusals(cluster)[REFUSED_FOR[0]] > before, message="the last refusal")
    found = assert_invariants(cluster.sim, url)
    # Under the good configuration: 10 pods of 100m fill root.capped, the rest wait; root.open takes all.
    assert (found.bound, found.pending) == (40, 20)
    assert all(cluster.bound(name) for name in opened)
    capped = get_json(f"{url}/ws/v1/partition/default/queue/root.capped")
    assert capped["maxResource"]["vcore"] == 1000 and capped["allocatedResource"]["vcore"] == 1000
    assert cluster.service.latest_state().state == "Running"
