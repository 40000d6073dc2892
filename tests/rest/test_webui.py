"""What YuniKorn's web UI (yunikorn-web) reads: the dashboard's history, nodes' foreign pods under
upstream's key, the root queue's max and every queue's absolute used capacity, the build information."""

import time

import pytest

from rest.app import SchedulerView
from rest.server import RestServer
from si import si_pb2
from si.constants import FOREIGN_DEFAULT, TAG_FOREIGN
from si.resources import Resource
from tests.queues import config, queue
from tests.rest.conftest import Client

CONFIG = config(queue("capped", max={"vcore": 3, "memory": "4Gi"}), preemption={"quotapreemptionenabled": True})


@pytest.fixture
def served(core_factory):
    servers = []

    def serve(**options):
        core = core_factory(CONFIG, **options)
        server = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0)
        servers.append(server)
        return core, Client(server.url)

    yield serve
    for server in servers:
        server.stop()


def workload(core):
    core.nodes(2)  # 2 x (4 vcore, 8 GiB)
    core.app("capped-app", queue="root.capped")
    core.asks("capped-app", 2, vcore=1000, memory=2**30)
    core.app("open-app", queue="root.open")
    core.asks("open-app", 1, vcore=500, memory=2**29)
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey="foreign-uid", nodeID="node-0", partitionName="default", allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT},
        resourcePerAlloc=Resource.of(vcore=250, memory=2**28).to_proto())]))
    core.settle()


def test_no_history_before_the_first_sample(served):
    _, client = served(history_period=3600)
    assert client.get("/ws/v1/history/apps") == (200, [])
    assert client.get("/ws/v1/history/containers") == (200, [])


def test_history_is_a_bounded_ring_of_timed_samples(served):
    core, client = served(history_period=0.1, history_size=3)
    start = core.clock.now_ns()
    workload(core)
    core.advance(0.3)
    period = 10**8  # ns
    full = client.get("/ws/v1/history/containers")[1]
    assert [sample["timestamp"] for sample in full] == [start + n * period for n in (1, 2, 3)], \
        "nanoseconds since the epoch, one sample a period"
    core.advance(0.1)  # one more period: the ring keeps the newest three, dropping the oldest
    status, apps = client.get("/ws/v1/history/apps")
    assert status == 200 and [sample["timestamp"] for sample in apps] == [start + n * period for n in (2, 3, 4)]
    assert all(set(sample) == {"timestamp", "totalApplications"} for sample in apps)
    assert apps[-1]["totalApplications"] == "2", "a string, as upstream's DAO"
    containers = client.get("/ws/v1/history/containers")[1]
    assert containers[-1]["totalContainers"] == "3" and set(containers[-1]) == {"timestamp", "totalContainers"}
    dump = client.get("/ws/v1/fullstatedump")[1]
    assert len(dump["appHistory"]) == 3 and len(dump["containerHistory"]) == 3


def test_the_default_history_samples_once_a_minute_and_keeps_a_day(core_factory):
    history = core_factory().scheduler.history
    assert history.limit == 1440 and history.records() == ()


def test_nodes_carry_foreign_allocations_under_both_keys(served):
    core, client = served()
    workload(core)
    nodes = client.get("/ws/v1/partition/default/nodes")[1]
    node0 = next(n for n in nodes if n["nodeID"] == "node-0")
    assert [a["allocationKey"] for a in node0["foreignAllocations"]] == ["foreign-uid"]
    assert node0["foreignAllocations"] == node0["foreign_allocations"]
    assert set(node0["foreignAllocations"][0]) == {"allocationKey", "allocationTags", "allocationTime", "resource",
                                                   "priority", "nodeId", "preemptable"}
    assert client.get("/ws/v1/partition/default/node/node-1")[1]["foreignAllocations"] == []


def test_nodes_page_utilisation_counts_allocations_only_in_upstream_buckets(served):
    core, client = served()
    core.nodes(4, vcore=10000, memory=10 * 2**30)
    core.app("running", queue="root.open")

    def found(key, node, vcore, memory, tags=None):
        core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
            allocationKey=key, applicationID="" if tags else "running", nodeID=node, partitionName="default",
            allocationTags=tags or {}, resourcePerAlloc=Resource.of(vcore=vcore, memory=memory).to_proto())]))

    found("at-10", "node-0", 1000, 2**30)  # exactly 10%: the first bucket
    found("above-10", "node-1", 1100, 2**30 + 2**27)  # 11%: the second
    found("full", "node-2", 10000, 10 * 2**30)  # 100%: the last
    found("foreign", "node-3", 9000, 9 * 2**30, {TAG_FOREIGN: FOREIGN_DEFAULT})  # not the scheduler's: 0%
    core.settle()
    nodes = {n["nodeID"]: n for n in client.get("/ws/v1/partition/default/nodes")[1]}
    assert nodes["node-3"]["utilized"] == {} and nodes["node-3"]["occupied"]["vcore"] == 9000
    assert nodes["node-1"]["utilized"] == {"vcore": 11, "memory": 11}
    (partition,) = client.get("/ws/v1/scheduler/node-utilizations")[1]
    vcore = next(u["utilization"] for u in partition["utilizations"] if u["type"] == "vcore")
    assert [b["bucketName"] for b in vcore] == [f"{i * 10}-{i * 10 + 10}%" for i in range(10)]
    assert vcore[0] == {"bucketName": "0-10%", "numOfNodes": 2, "nodeNames": ["node-0", "node-3"]}
    assert vcore[1] == {"bucketName": "10-20%", "numOfNodes": 1, "nodeNames": ["node-1"]}
    assert vcore[9] == {"bucketName": "90-100%", "numOfNodes": 1, "nodeNames": ["node-2"]}
    assert vcore[5] == {"bucketName": "50-60%"}, "as upstream, an empty bucket has no count and no list"


def test_root_max_is_the_partition_capacity_and_abs_used_capacity_is_a_percentage_of_max(served):
    core, client = served()
    workload(core)
    partition = client.get("/ws/v1/partitions")[1][0]
    root = client.get("/ws/v1/partition/default/queues")[1]
    assert root["maxResource"] == partition["capacity"]["capacity"] == {"vcore": 8000, "memory": 16 * 2**30}
    allocated = root["allocatedResource"]
    assert allocated == {"vcore": 2500, "memory": 2 * 2**30 + 2**29}
    assert root["absUsedCapacity"] == {"vcore": 31, "memory": 15}  # 2500/8000, 2.5/16 GiB, truncated
    assert root["headroom"] == {"vcore": 5500, "memory": 16 * 2**30 - allocated["memory"]}
    capped = client.get("/ws/v1/partition/default/queue/root.capped")[1]
    assert capped["maxResource"] == {"vcore": 3000, "memory": 4 * 2**30}
    assert capped["absUsedCapacity"] == {"vcore": 66, "memory": 50}
    opened = client.get("/ws/v1/partition/default/queue/root.open")[1]
    assert opened["maxResource"] is None and opened["absUsedCapacity"] == {}, "no max: nothing to be a share of"
    assert opened["headroom"] == root["headroom"], "the cluster limits every queue's headroom"


def test_cluster_build_information_and_partition_settings(served):
    core, client = served(build_info={"shim": "yunikorn-py"})
    clusters = client.get("/ws/v1/clusters")[1]
    build = clusters[0]["rmBuildInformation"][0]
    assert {"buildDate", "buildVersion", "arch", "pythonVersion", "coreSHA", "siSHA", "shimSHA", "isPluginVersion",
            "rmId"} <= set(build)
    assert build["rmId"] == "rm" and build["isPluginVersion"] == "false" and build["shim"] == "yunikorn-py"
    assert time.strptime(build["buildDate"], "%Y-%m-%dT%H:%M:%S+0000")
    assert all(len(build[key]) == 40 for key in ("coreSHA", "siSHA", "shimSHA"))
    assert clusters[0]["clusterName"] == "kubernetes" and clusters[0]["startTime"] > 0
    assert client.get("/ws/v1/partitions")[1][0]["quotaPreemptionEnabled"] is True


def test_asks_and_allocations_say_what_the_core_knows_of_them(served):
    core, client = served()
    core.nodes(1)
    core.app("app", queue="root.open")
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[
        si_pb2.Allocation(allocationKey="driver", applicationID="app", partitionName="default", originator=True,
                          resourcePerAlloc=Resource.of(vcore=1000).to_proto()),
        si_pb2.Allocation(allocationKey="huge", applicationID="app", partitionName="default",
                          resourcePerAlloc=Resource.of(vcore=10**6).to_proto()),
        si_pb2.Allocation(allocationKey="ph-0", applicationID="app", partitionName="default", placeholder=True,
                          taskGroupName="workers", resourcePerAlloc=Resource.of(vcore=100).to_proto())]))
    core.settle()
    app = client.get("/ws/v1/partition/default/application/app")[1]
    driver = next(a for a in app["allocations"] if a["allocationKey"] == "driver")
    assert driver["originator"] is True
    huge = next(r for r in app["requests"] if r["allocationKey"] == "huge")
    assert huge["triggeredScaleUp"] is True and huge["originator"] is False
    (entry,) = huge["allocationLog"]
    assert "nodes are available" in entry["message"] and entry["count"] == 1
    assert entry["lastOccurrence"] >= huge["requestTime"]
    assert app["placeholderData"] == [{"taskGroupName": "workers", "count": 1, "minResource": {"vcore": 100},
                                       "replaced": 0, "timedout": 0}]
    running_since = next(s["time"] for s in app["stateLog"] if s["applicationState"] == "Running")
    assert app["startTime"] == running_since > 0
