"""Health checks: upstream's seven checks, run every ``health.checkInterval`` (or on demand when that is
0 or less), and what makes each of them fail."""

import falcon.testing
import pytest

from actors.core import health
from actors.core.config import parse
from actors.core.partition import Partition
from actors.core.scheduler import DEFAULT_HEALTH_INTERVAL, health_interval
from rest.app import SchedulerView, create_app
from si import si_pb2
from si.resources import Resource

UPSTREAM = [
    ("Scheduling errors", "Check for scheduling error entries in metrics"),
    ("Failed nodes", "Check for failed nodes entries in metrics"),
    ("Negative resources", "Check for negative resources in the partitions"),
    ("Negative resources", "Check for negative resources in the nodes"),
    ("Consistency of data", "Check if a partition's allocated resource <= total resource of the partition"),
    ("Consistency of data", "Check if total partition resource == sum of the node resources from the partition"),
    ("Consistency of data", "Check if node total resource = allocated resource + occupied resource + available resource"),
    ("Consistency of data", "Check if node capacity >= allocated resources on the node"),
    ("Reservation check", "Check the reservation nr compared to the number of nodes"),
    ("Orphan allocation on node check", "Check if there are orphan allocations on the nodes"),
    ("Orphan allocation on app check", "Check if there are orphan allocations on the applications"),
]


def failing(report) -> list[str]:
    return [f"{c.name}: {c.description}" for c in report.checks if not c.succeeded]


def test_the_report_lists_upstreams_checks_in_upstreams_order(core_factory):
    core = core_factory()
    core.nodes(2)
    core.app("app", queue="root.a")
    core.asks("app", 2)
    core.settle()
    report = core.scheduler.check_health()
    assert report.healthy, failing(report)
    assert len({c.name for c in report.checks}) == 7
    for check, (name, description) in zip(report.checks, UPSTREAM, strict=True):
        assert check.name == name and check.description.startswith(description)
    reservation = report.checks[8]
    assert reservation.diagnosis_message == "Reservation/node nr ratio: [0.000000]", "nothing waits: no reservation"
    assert report.checks[0].diagnosis_message == "There were 0 scheduling errors logged in the metrics"


def test_scheduling_errors_and_failed_nodes_come_from_the_counters(core_factory):
    core = core_factory()
    core.asks("no-such-app", 1)  # an ask for an application the core does not have
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[
        si_pb2.NodeInfo(nodeID="bad", action=si_pb2.NodeInfo.CREATE,
                        schedulableResource=Resource.of(vcore=-1).to_proto()),
        si_pb2.NodeInfo(nodeID="elsewhere", action=si_pb2.NodeInfo.CREATE, attributes={"si/node-partition": "gpu"},
                        schedulableResource=Resource.of(vcore=1).to_proto())]))
    core.settle()
    report = core.scheduler.check_health()
    assert failing(report) == ["Scheduling errors: Check for scheduling error entries in metrics",
                               "Failed nodes: Check for failed nodes entries in metrics"]
    assert report.checks[0].diagnosis_message == "There were 1 scheduling errors logged in the metrics"
    assert report.checks[1].diagnosis_message == "There were 2 failed nodes logged in the metrics"


def test_each_data_check_finds_what_it_is_about():
    partition = Partition(parse(None).partitions[0], "rm")
    partition.update_nodes([si_pb2.NodeInfo(nodeID="n", action=si_pb2.NodeInfo.CREATE,
                                            schedulableResource=Resource.of(vcore=2000).to_proto())])
    partition.add_applications([si_pb2.AddApplicationRequest(applicationID="app", ugi=si_pb2.UserGroupInformation(
        user="u"), tags={"namespace": "ns"})])
    partition.update_allocations([si_pb2.Allocation(allocationKey="a", applicationID="app", nodeID="n",
                                                    resourcePerAlloc=Resource.of(vcore=1000).to_proto())], [])
    assert health.check(partition).healthy
    node = partition.nodes["n"]
    app = partition.apps["app"]
    # Allocations only the node knows, one only the application knows, and a node over capacity.
    allocation = app.allocations.pop("a")
    node.allocations["stray"] = allocation
    app.allocations["lost"] = allocation
    node.allocated = node.allocated + Resource.of(vcore=5000)
    node.version += 1
    partition.total = partition.total + Resource.of(vcore=1)
    report = health.check(partition)
    failed = failing(report)
    assert "Orphan allocation on node check: Check if there are orphan allocations on the nodes" in failed
    assert "Consistency of data: Check if node capacity >= allocated resources on the node" in failed
    assert ("Consistency of data: Check if total partition resource == sum of the node resources from the partition"
            in failed)
    assert "Negative resources: Check for negative resources in the nodes" in failed, "available went negative"
    assert "Consistency of data: Check if a partition's allocated resource <= total resource of the partition" in failed
    message = next(c.diagnosis_message for c in report.checks if c.name == "Orphan allocation on node check")
    assert message == 'Orphan allocations: ["a on n" "stray on n"]'
    assert "Orphan allocation on app check: Check if there are orphan allocations on the applications" in failed


@pytest.mark.parametrize(("value", "seconds"), [(None, 30.0), ("10s", 10.0), ("1m30s", 90.0), ("0", 0.0),
                                                ("-5s", 0.0), ("soon", DEFAULT_HEALTH_INTERVAL)])
def test_the_interval_is_read_as_upstream_reads_it(value, seconds):
    extra = {} if value is None else {"health.checkInterval": value}
    assert health_interval(extra) == seconds


def test_checks_run_periodically_and_the_endpoint_answers_the_last_result(core_factory):
    core = core_factory(extra={"health.checkInterval": "300ms"})
    scheduler = core.scheduler
    first = scheduler.last_health
    assert first is not None and first.healthy, "the first check runs when the resource manager registers"
    client = falcon.testing.TestClient(create_app(SchedulerView(scheduler)))
    core.asks("no-such-app", 1)
    core.settle()
    core.advance(0.25)
    assert scheduler.last_health is first, "the next periodic run is not due yet"
    assert client.simulate_get("/ws/v1/scheduler/healthcheck").json["Healthy"] is True, "the last result stands"
    core.advance(0.05)
    assert scheduler.last_health is not first and not scheduler.last_health.healthy, "run again 300 ms on"
    answer = client.simulate_get("/ws/v1/scheduler/healthcheck").json
    assert answer["Healthy"] is False
    assert [c["Name"] for c in answer["HealthChecks"] if not c["Succeeded"]] == ["Scheduling errors"]


def test_an_interval_of_zero_or_less_disables_periodic_runs_and_the_endpoint_runs_one(core_factory):
    core = core_factory(extra={"health.checkInterval": "0s"})
    scheduler = core.scheduler
    assert scheduler.health_interval == 0 and scheduler.last_health is None
    client = falcon.testing.TestClient(create_app(SchedulerView(scheduler)))
    assert client.simulate_get("/ws/v1/scheduler/healthcheck").json["Healthy"] is True
    core.asks("no-such-app", 1)
    core.settle()
    assert client.simulate_get("/ws/v1/scheduler/healthcheck").json["Healthy"] is False, "checked on demand"
    assert scheduler.last_health is None


def test_a_configuration_update_changes_the_interval(core_factory):
    core = core_factory()
    assert core.scheduler.health_interval == 30.0
    from tests.coreharness import OPEN_CONFIG

    refused = core.scheduler.update_configuration(si_pb2.UpdateConfigurationRequest(
        rmID="rm", config=OPEN_CONFIG, extraConfig={"health.checkInterval": "-1s"}))
    assert refused is None and core.scheduler.health_interval == 0
