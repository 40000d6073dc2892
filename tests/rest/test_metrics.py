"""``/ws/v1/metrics`` after real scheduling, read with prometheus-client's own parser: every family
upstream YuniKorn exposes is there with upstream's name, type and labels, and the values add up."""

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from actors.core.stats import LATENCY_BUCKETS, Histogram
from rest.metrics import metric_name
from si import si_pb2
from si.constants import FOREIGN_DEFAULT, TAG_FOREIGN
from si.resources import Resource
from tests.queues import config, queue

CONFIG = config(queue("capped", guaranteed={"vcore": 1}, max={"vcore": 2}, maxapplications=3))
PREEMPTING_C = queue("c", guaranteed={"vcore": 1}, properties={"preemption.delay": "0s"})

# name as the parser reports it -> (type, labels of its samples besides "le")
EXPECTED = {
    "yunikorn_scheduler_container_allocation_attempt": ("counter", {"state"}),
    "yunikorn_scheduler_application_submission": ("counter", {"result"}),
    "yunikorn_scheduler_application_total": ("gauge", {"state"}),
    "yunikorn_scheduler_node": ("gauge", {"state"}),
    "yunikorn_scheduler_vcore_node_usage_total": ("gauge", {"range"}),
    "yunikorn_scheduler_memory_node_usage_total": ("gauge", {"range"}),
    "yunikorn_scheduler_scheduling_latency_milliseconds": ("histogram", set()),
    "yunikorn_scheduler_scheduling_cycle_milliseconds": ("histogram", set()),
    "yunikorn_scheduler_node_sorting_latency_milliseconds": ("histogram", {"level"}),
    "yunikorn_scheduler_trynode_latency_milliseconds": ("histogram", set()),
    "yunikorn_scheduler_trynode_evaluation_milliseconds": ("histogram", set()),
    "yunikorn_scheduler_trypreemption_latency_milliseconds": ("histogram", set()),
    "yunikorn_queue_app": ("gauge", {"queue", "state"}),
    "yunikorn_queue_resource": ("gauge", {"queue", "state", "resource"}),
    "yunikorn_root_queue_container": ("counter", {"state"}),
    "yunikorn_root_capped_queue_container": ("counter", {"state"}),
    "yunikorn_root_open_queue_container": ("counter", {"state"}),
    **{f"yunikorn_event_total_{name}": ("gauge", set()) for name in (
        "created", "channeled", "not_channeled", "dropped", "processed", "stored", "not_stored", "collected")},
    "process_cpu_seconds": ("counter", set()),
    "process_resident_memory_bytes": ("gauge", set()),
    "python_info": ("gauge", {"implementation", "major", "minor", "patchlevel", "version"}),
    "python_gc_collections": ("counter", {"generation"}),
}


def scrape(client) -> list:
    status, headers, body = client.request("GET", "/ws/v1/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return list(text_string_to_metric_families(body.decode()))


def by_name(families) -> dict:
    found: dict = {}
    for family in families:
        found.setdefault(family.name, []).append(family)
    return found


def values(family, **labels) -> dict:
    """Sample value by the one label not given, for the samples that match ``labels``."""
    result = {}
    for sample in family.samples:
        if all(sample.labels.get(k) == v for k, v in labels.items()):
            rest = {k: v for k, v in sample.labels.items() if k not in labels}
            result[tuple(rest.values())[0] if rest else sample.name] = sample.value
    return result


@pytest.fixture
def scheduled(core_factory):
    from rest.app import SchedulerView
    from rest.server import RestServer
    from tests.rest.conftest import Client

    core = core_factory(CONFIG)
    core.nodes(2)
    core.app("capped-app", queue="root.capped")
    core.asks("capped-app", 3, vcore=1000)  # the queue's max lets two run
    core.app("open-app", queue="root.open")
    core.asks("open-app", 2, vcore=500)
    core.asks("ghost-app", 1)  # an ask for no application: a scheduling error
    core.app("gone-app", queue="root.open")
    core.asks("gone-app", 1, vcore=100)
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey="foreign", nodeID="node-0", partitionName="default", allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT},
        resourcePerAlloc=Resource.of(vcore=100).to_proto())]))
    core.settle()
    core.release("open-app", "open-app-0")
    core.scheduler.update_application(si_pb2.ApplicationRequest(rmID="rm", remove=[
        si_pb2.RemoveApplicationRequest(applicationID="gone-app", partitionName="default")]))
    core.settle()
    server = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0)
    yield core, Client(server.url)
    server.stop()


def test_every_upstream_family_has_its_name_type_and_labels(scheduled):
    _, client = scheduled
    families = by_name(scrape(client))
    for name, (kind, labels) in EXPECTED.items():
        assert name in families, name
        family = next(f for f in families[name] if f.type == kind)
        assert family.samples, name
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample)
    # A gauge and a counter share the stem "yunikorn_queue_app", as upstream's queue_app and queue_app_total.
    assert {f.type for f in families["yunikorn_queue_app"]} == {"gauge", "counter"}
    counter = next(f for f in families["yunikorn_queue_app"] if f.type == "counter")
    assert {s.name for s in counter.samples} == {"yunikorn_queue_app_total"}
    assert {s.labels["state"] for s in counter.samples} == {"completed", "failed", "rejected"}


def test_the_text_carries_upstream_names_exactly(scheduled):
    _, client = scheduled
    text = client.request("GET", "/ws/v1/metrics")[2].decode()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    assert types["yunikorn_scheduler_container_allocation_attempt_total"] == "counter"
    assert types["yunikorn_scheduler_application_submission_total"] == "counter"
    assert types["yunikorn_scheduler_application_total"] == "gauge"
    assert types["yunikorn_queue_app_total"] == "counter" and types["yunikorn_queue_app"] == "gauge"
    assert types["yunikorn_root_capped_queue_container"] == "counter", "no _total, as upstream's Go name"
    assert re.search(r'^yunikorn_root_capped_queue_container\{state="allocated"\} 2\.0$', text, re.MULTILINE)
    assert types["yunikorn_scheduler_scheduling_cycle_milliseconds"] == "histogram"
    bounds = re.findall(r'^yunikorn_scheduler_scheduling_cycle_milliseconds_bucket\{le="([^"]+)"\}', text, re.MULTILINE)
    assert [float(b) for b in bounds[:-1]] == list(LATENCY_BUCKETS) and bounds[-1] == "+Inf"


def test_values_follow_what_the_core_did(scheduled):
    core, client = scheduled
    families = by_name(scrape(client))

    def one(name, kind=None):
        return next(f for f in families[name] if kind is None or f.type == kind)

    attempts = values(one("yunikorn_scheduler_container_allocation_attempt"))
    assert attempts == {"allocated": 5.0, "rejected": 1.0, "error": 1.0, "released": 2.0}
    assert values(one("yunikorn_scheduler_application_submission")) == {"new": 3.0, "accepted": 3.0, "rejected": 0.0}
    apps = values(one("yunikorn_scheduler_application_total"))
    assert apps["running"] == 2 and apps["completed"] == 1 and apps["failed"] == 0
    nodes = values(one("yunikorn_scheduler_node"))
    assert nodes == {"active": 2.0, "draining": 0.0, "decommissioned": 0.0, "failed": 0.0}
    usage = values(one("yunikorn_scheduler_vcore_node_usage_total"))
    assert sum(usage.values()) == 2 and set(usage) == {"[0,10%]", "(10%,20%]", "(20%,30%]", "(30%,40%]", "(40%,50%]",
                                                        "(50%,60%]", "(60%,70%]", "(70%,80%]", "(80%,90%]",
                                                        "(90%,100%]"}
    cycles = values(one("yunikorn_scheduler_scheduling_cycle_milliseconds"))
    assert cycles["yunikorn_scheduler_scheduling_cycle_milliseconds_count"] >= 1
    latency = values(one("yunikorn_scheduler_scheduling_latency_milliseconds"))
    assert latency["yunikorn_scheduler_scheduling_latency_milliseconds_count"] == 5, "one per allocation made"
    sorting = one("yunikorn_scheduler_node_sorting_latency_milliseconds")
    assert {s.labels["level"] for s in sorting.samples} == {"app", "queue"}

    queue_apps = values(one("yunikorn_queue_app", "gauge"), queue="root.capped")
    assert queue_apps["running"] == 1 and queue_apps["new"] == 0 and queue_apps["completed"] == 0
    assert values(one("yunikorn_queue_app", "counter"), queue="root.open")["completed"] == 1
    capped = values(one("yunikorn_queue_resource"), queue="root.capped", resource="vcore")
    assert capped == {"guaranteed": 1000, "max": 2000, "allocated": 2000, "pending": 1000}
    assert values(one("yunikorn_queue_resource"), queue="root.capped", state="maxRunningApps") == {"apps": 3}
    root_max = values(one("yunikorn_queue_resource"), queue="root", state="max")
    assert root_max["vcore"] == 8000, "as upstream, the root's max is the partition's capacity"
    assert values(one("yunikorn_root_open_queue_container")) == {"allocated": 3.0, "released": 2.0}
    created = core.scheduler.events.created
    assert values(one("yunikorn_event_total_created"))["yunikorn_event_total_created"] == created > 0
    told = len(core.callback.events)
    assert values(one("yunikorn_event_total_stored"))["yunikorn_event_total_stored"] == told > 0
    assert values(one("yunikorn_event_total_collected"))["yunikorn_event_total_collected"] == told


def test_histograms_take_a_batch_as_many_observations_of_its_mean():
    histogram = Histogram()
    histogram.observe_total(0.05, 10)  # ten decisions in 50 ms: 5 ms each
    histogram.observe(0.0001)  # on a bound: counted in that bucket (le)
    snapshot = histogram.snapshot()
    assert snapshot.count == 11 and snapshot.total == pytest.approx(0.0501)
    cumulative = dict(snapshot.cumulative())
    assert cumulative[0.0001] == 1 and cumulative[0.001] == 1 and cumulative[0.01] == 11 and cumulative[float("inf")] == 11


def test_queue_names_become_metric_names_as_upstream():
    assert metric_name("root.team-a.@recovery@") == "root_team_a__recovery_"


def test_preemption_shows_in_the_daos_and_the_metrics(core_factory):
    from rest.app import SchedulerView
    from rest.server import RestServer
    from tests.rest.conftest import Client

    core = core_factory(config(queue("a", guaranteed={"vcore": 1}, properties={"preemption.delay": "90s"}),
                               queue("b", properties={"preemption.policy": "fence"}), PREEMPTING_C))
    core.nodes(1, vcore=2000)
    core.app("b-app", queue="root.b")
    core.asks("b-app", 2, vcore=1000, memory=1)
    core.settle()
    core.app("c-app", queue="root.c")
    core.asks("c-app", 1, vcore=1000, memory=1)  # root.b is fenced: root.c may not take its pods
    core.settle()
    server = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0)
    try:
        client = Client(server.url)
        _, queues = client.get("/ws/v1/partition/default/queues")
        queues_by_name = {q["queuename"]: q for q in queues["children"]}
        assert queues_by_name["root.a"]["preemptionDelay"] == "1m30s" and not queues_by_name["root.a"]["isPreemptionFence"]
        assert queues_by_name["root.c"]["preemptionDelay"] == "0s" and queues_by_name["root.b"]["preemptionDelay"] == "30s"
        assert queues_by_name["root.b"]["quotaPreemptionDelay"] == "0s"
        assert queues_by_name["root.b"]["isPreemptionFence"]
        assert queues_by_name["root.b"]["preemptingResource"] == {}, "a fenced queue is not preempted from outside"
        core.configure(CONFIG_UNFENCED)
        core.asks("c-app", 1, vcore=1000, memory=1, prefix="again-")
        core.settle()
        _, queues = client.get("/ws/v1/partition/default/queues")
        queues_by_name = {q["queuename"]: q for q in queues["children"]}
        assert queues_by_name["root.b"]["preemptingResource"] == {"vcore": 1000, "memory": 1}
        _, app = client.get("/ws/v1/partition/default/queue/root.b/application/b-app")
        assert sorted(a["preempted"] for a in app["allocations"]) == [False, True]
        _, app = client.get("/ws/v1/partition/default/queue/root.c/application/c-app")
        assert any(r["triggeredPreemption"] for r in app["requests"])
        families = by_name(scrape(client))
        histogram = next(f for f in families["yunikorn_scheduler_trypreemption_latency_milliseconds"])
        assert values(histogram)["yunikorn_scheduler_trypreemption_latency_milliseconds_count"] >= 1
        resources = values(families["yunikorn_queue_resource"][0], queue="root.b", state="preempting")
        assert resources == {"vcore": 1000.0, "memory": 1.0}
    finally:
        server.stop()


CONFIG_UNFENCED = config(queue("a", guaranteed={"vcore": 1}), queue("b"), PREEMPTING_C)
