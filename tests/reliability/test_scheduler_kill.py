"""The scheduler process SIGKILLed at random points of a burst of pods, then started again: every pod
is bound exactly once, none is lost, and the restarted core agrees with the cluster."""

import random

import pytest

from tests.coreharness import OPEN_CONFIG
from tests.reliability.invariants import HEALTH_ON_READ, assert_invariants
from tests.reliability.process import SchedulerProcess
from tests.reliability.workload import burst
from tests.waiting import wait_for

SEED = 7  # the kill points: how many pods are bound when each kill comes

@pytest.mark.slow
@pytest.mark.timeout(150)
def test_sigkill_at_random_points_of_a_burst_binds_every_pod_once(cluster, tmp_path):
    rng = random.Random(SEED)
    cluster.sim.seed_nodes(8, cpu="4")  # room for every pod but the oversized ones
    cluster.configure(OPEN_CONFIG, **HEALTH_ON_READ)
    cluster.sim.faults.latency(verb="create", resource="pods/binding", seconds=0.02)  # binds in flight at the kill
    names, log = [], tmp_path / "scheduler.log"
    running = SchedulerProcess(cluster.kubeconfig, log, "--bind-workers", "4")
    try:
        for wave in range(2):
            names += burst(cluster, f"k{wave}", 40, oversized_every=20, rng=rng)
            target = rng.randint(len(names) - 35, len(names) - 5)
            wait_for(lambda: sum(map(cluster.bound, names)) >= target, timeout=60,  # noqa: B023 - used at once
                     message=f"{target} pods bound before the kill (seed {SEED})")
            running.kill()
            running = SchedulerProcess(cluster.kubeconfig, log, "--bind-workers", "4")
        running.wait_ready()
        found = assert_invariants(cluster.sim, running.url, timeout=60)
    finally:
        code = running.stop()
    assert (found.bound, found.pending) == (76, 4), f"seed {SEED}"
    assert code == 0, log.read_text()[-2000:]
