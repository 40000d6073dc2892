"""Issue 27: no object a tenant may write stops the scheduler. Hostile pods, namespaces, nodes and
configmaps of arbitrary shape and value go to kubesim; after each, an ordinary pod must bind, every pod
of the scheduler must have an outcome, and health must be green. The corpus (every value that ever
crashed something) is replayed first; ``benchmarks/tenant_fuzz.py`` runs the same for longer."""

import pytest
from hypothesis import HealthCheck, given, settings

from tests.reliability.tenants import OPEN_QUEUES, Case, TenantProbe, corpus, hostile_objects

EXAMPLES = 60  # about 0.1 s each


@pytest.fixture
def probe(cluster, scheduler):
    return TenantProbe(cluster, scheduler(OPEN_QUEUES))


@pytest.mark.parametrize("case", corpus(), ids=lambda case: case.finding.split(" (")[0])
def test_a_value_that_once_crashed_the_scheduler_is_harmless(probe, case):
    probe.run(case)


def test_the_corpus_together_leaves_a_scheduler_that_restarts_and_schedules(probe, cluster, scheduler):
    for case in corpus():
        if case.kind != "configmap":  # (one configuration at a time: each is replayed alone above)
            probe.submit(case)
    probe.check()
    cluster.stop_scheduler()
    probe.rest_url = scheduler(OPEN_QUEUES)  # a restart lists every hostile object again
    probe.check()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=hostile_objects)
def test_no_hostile_object_stops_scheduling(probe, case: Case):
    probe.run(case)
