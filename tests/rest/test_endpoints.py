"""The REST API over real HTTP against a running core."""

import json
import pathlib
import urllib.parse

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from rest.app import SchedulerView
from rest.server import RestServer
from si import si_pb2
from si.constants import FOREIGN_DEFAULT, TAG_FOREIGN
from si.resources import Resource
from tests.rest.conftest import Client

BAD = sorted((pathlib.Path(__file__).parents[1] / "core" / "configs" / "bad").glob("*.yaml"))


def scheduled(core):
    core.nodes(2)
    core.app("app-1", queue="root.team", user="alice", groups=("dev",))
    core.asks("app-1", 3)
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey="foreign-uid", nodeID="node-0", partitionName="default", allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT},
        resourcePerAlloc=Resource.of(vcore=500, memory=2**28).to_proto())]))
    core.settle()


def test_partitions_and_clusters(rest):
    core, client = rest
    scheduled(core)
    status, partitions = client.get("/ws/v1/partitions")
    assert status == 200
    partition = partitions[0]
    assert partition["name"] == "default" and partition["clusterId"] == "rm" and partition["totalNodes"] == 2
    assert partition["applications"] == {"Running": 1, "total": 1} and partition["totalContainers"] == 3
    assert partition["capacity"]["capacity"]["vcore"] == 8000
    assert partition["capacity"]["usedCapacity"]["vcore"] == 3500
    assert partition["nodeSortingPolicy"] == {"type": "fair", "resourceWeights": {"vcore": 1.0, "memory": 1.0}}
    status, clusters = client.get("/ws/v1/clusters")
    assert status == 200 and clusters[0]["partition"] == "default"


def test_nodes_add_up_and_foreign_allocations_are_listed_apart(rest):
    core, client = rest
    scheduled(core)
    status, nodes = client.get("/ws/v1/partition/default/nodes")
    assert status == 200
    for node in nodes:
        assert node["allocated"].get("vcore", 0) == sum(a["resource"]["vcore"] for a in node["allocations"])
        for name, capacity in node["capacity"].items():
            assert node["available"][name] == capacity - node["allocated"].get(name, 0) - node["occupied"].get(name, 0)
    node0 = next(n for n in nodes if n["nodeID"] == "node-0")
    assert [a["allocationKey"] for a in node0["foreign_allocations"]] == ["foreign-uid"]
    assert set(node0["foreign_allocations"][0]) == {"allocationKey", "allocationTags", "allocationTime", "resource",
                                                    "priority", "nodeId", "preemptable"}
    assert "foreign-uid" not in [a["allocationKey"] for a in node0["allocations"]]
    assert node0["occupied"]["vcore"] == 500
    status, one = client.get("/ws/v1/partition/default/node/node-0")
    assert status == 200 and one["nodeID"] == "node-0"


def test_queues_and_applications(rest):
    core, client = rest
    scheduled(core)
    core.asks("app-1", 1, vcore=10**9, prefix="huge-")
    core.settle()
    status, root = client.get("/ws/v1/partition/default/queues")
    assert status == 200 and root["queuename"] == "root" and root["childNames"] == ["team"]
    team = root["children"][0]
    assert team["allocatedResource"]["vcore"] == 3000 and team["isLeaf"] is True and team["isManaged"] is False
    assert isinstance(team["runningApps"], int) and team["runningApps"] == 1
    status, queue = client.get("/ws/v1/partition/default/queue/root.team")
    assert status == 200 and "children" not in queue
    status, queue = client.get("/ws/v1/partition/default/queue/root?subtree")
    assert status == 200 and len(queue["children"]) == 1
    status, apps = client.get("/ws/v1/partition/default/applications/active")
    assert [a["applicationID"] for a in apps] == ["app-1"]
    app = apps[0]
    assert app["applicationState"] == "Running" and app["user"] == "alice" and app["groups"] == ["dev"]
    assert app["usedResource"]["vcore"] == sum(a["resource"]["vcore"] for a in app["allocations"]) == 3000
    assert [r["allocationKey"] for r in app["requests"]] == ["huge-0"]
    assert app["requests"][0]["allocationLog"][0]["message"].endswith("Insufficient vcore.")
    assert [s["applicationState"] for s in app["stateLog"]] == ["New", "Accepted", "Running"]
    for path in ("/ws/v1/partition/default/application/app-1", "/ws/v1/partition/default/queue/root.team/application/app-1"):
        status, body = client.get(path)
        assert status == 200 and body["applicationID"] == "app-1"
    status, apps = client.get("/ws/v1/partition/default/queue/root.team/applications/active?status=running")
    assert status == 200 and len(apps) == 1
    status, apps = client.get("/ws/v1/partition/default/applications/active?status=new")
    assert status == 200 and apps == []


def test_not_found_and_bad_parameters(rest):
    core, client = rest
    scheduled(core)
    cases = {
        "/ws/v1/partition/nope/nodes": (404, "Partition not found"),
        "/ws/v1/partition/default/queue/root.nope": (404, "Queue not found"),
        "/ws/v1/partition/default/application/nope": (404, "Application not found"),
        "/ws/v1/partition/default/node/nope": (404, "Node not found"),
        "/ws/v1/partition/default/usage/user/nobody-here": (404, "User not found"),
        "/ws/v1/partition/default/applications/sleeping": (400, "Invalid application state"),
        "/ws/v1/partition/default/applications/active?status=bogus": (400, "Invalid status"),
        "/ws/v1/events/batch?count=0": (400, "Invalid parameter"),
        "/ws/v1/events/batch?start=x": (400, "Invalid parameter"),
    }
    for path, (code, message) in cases.items():
        status, body = client.get(path)
        assert (status, body["message"]) == (code, message), path
        assert body["status_code"] == code and body["description"]


def test_validate_conf_accepts_good_and_refuses_every_bad_config_with_its_reason(rest):
    _, client = rest
    status, _, body = client.request("POST", "/ws/v1/validate-conf", b"partitions:\n  - name: default\n    queues: [{name: root}]\n")
    assert status == 200 and json.loads(body) == {"allowed": True, "reason": ""}
    for path in BAD:
        expected = path.read_text().splitlines()[0][len("# expect: "):]
        status, _, body = client.request("POST", "/ws/v1/validate-conf", path.read_bytes())
        answer = json.loads(body)
        assert status == 200 and answer["allowed"] is False and expected in answer["reason"], path.name


def test_config_as_yaml_and_json(rest):
    _, client = rest
    status, headers, body = client.request("GET", "/ws/v1/config")
    assert status == 200 and headers["Content-Type"] == "application/x-yaml" and b"partitions" in body
    status, config = client.get("/ws/v1/config", Accept="application/json")
    assert status == 200 and config["Partitions"][0]["Name"] == "default" and len(config["Checksum"]) == 64


CONFIG_DAO_YAML = """
partitions:
  - name: default
    placementrules:
      - {name: tag, value: namespace, create: true, parent: {name: fixed, value: root.teams}}
    limits:
      - {limit: each, users: ['*'], maxapplications: 5}
    preemption: {enabled: false}
    queues:
      - name: teams
        parent: true
        submitacl: '*'
        properties: {application.sort.policy: fifo}
        resources: {max: {memory: 200M, vcore: 10}}
        childtemplate: {maxapplications: 3}
"""


def test_config_is_upstreams_config_dao_field_for_field(core_factory):
    """yunikorn-core's getClusterConfig: the validated SchedulerConfig (a root inserted, partition limits on
    it) with Go's field names, its strings as written, and Go's omitempty (a nested struct always written)."""
    core = core_factory(CONFIG_DAO_YAML, extra={"log.level": "info"})
    server = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0)
    try:
        status, config = Client(server.url).get("/ws/v1/config", Accept="application/json")
        status_yaml, _, body = Client(server.url).request("GET", "/ws/v1/config")
    finally:
        server.stop()
    assert status == 200 and status_yaml == 200
    limit = {"Limit": "each", "Users": ["*"], "MaxApplications": 5}
    teams = {"Name": "teams", "Parent": True, "Resources": {"Max": {"memory": "200M", "vcore": "10"}},
             "Properties": {"application.sort.policy": "fifo"}, "SubmitACL": "*",
             "ChildTemplate": {"MaxApplications": 3, "Resources": {}}}
    assert config["Partitions"] == [{
        "Name": "default",
        "Queues": [{"Name": "root", "Parent": True, "Resources": {}, "ChildTemplate": {"Resources": {}},
                    "Queues": [teams], "Limits": [limit]}],
        "PlacementRules": [{"Name": "tag", "Create": True, "Filter": {"Type": ""},
                            "Parent": {"Name": "fixed", "Filter": {"Type": ""}, "Value": "root.teams"},
                            "Value": "namespace"}],
        "Limits": [limit], "Preemption": {"Enabled": False}, "NodeSortPolicy": {"Type": ""}, "UserGroupResolver": {}}]
    assert len(config["Checksum"]) == 64 and config["Extra"] == {"log.level": "info"}
    assert (config["DeadlockDetectionEnabled"], config["DeadlockTimeoutSeconds"]) == (False, 60)
    document = yaml.safe_load(body)
    assert list(document) == ["partitions", "checksum", "extra", "deadlockdetectionenabled",
                              "deadlocktimeoutseconds", "unsupported"]
    root = document["partitions"][0]["queues"][0]
    assert root["queues"][0] == {"name": "teams", "parent": True, "resources": {"max": {"memory": "200M", "vcore": "10"}},
                                 "properties": {"application.sort.policy": "fifo"}, "submitacl": "*",
                                 "childtemplate": {"maxapplications": 3}}
    assert document["partitions"][0]["preemption"] == {"enabled": False}
    assert "nodesortpolicy" not in document["partitions"][0], "go-yaml leaves out an empty struct"


def test_events_batch_paging(rest):
    core, client = rest
    scheduled(core)
    status, first = client.get("/ws/v1/events/batch?count=3")
    assert status == 200 and len(first["EventRecords"]) == 3 and first["LowestID"] == 0
    status, rest_of = client.get(f"/ws/v1/events/batch?start=3&count={first['HighestID']}")
    ids = [e["id"] for e in first["EventRecords"] + rest_of["EventRecords"]]
    assert ids == list(range(first["HighestID"] + 1))
    status, past = client.get(f"/ws/v1/events/batch?start={first['HighestID'] + 100}")
    assert status == 200 and past["EventRecords"] == []


def test_event_stream_is_ndjson_and_bounded(rest):
    import http.client
    import threading

    core, client = rest
    host, port = client.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", "/ws/v1/events/stream?count=2")
    response = connection.getresponse()
    assert response.status == 200
    first = json.loads(response.readline())
    assert "InstanceUUID" in first
    feeder = threading.Thread(target=lambda: (core.nodes(2), core.settle()))
    feeder.start()
    lines = []
    while len(lines) < 2:
        line = response.readline()
        if line.strip():  # blank lines are keep-alives
            lines.append(json.loads(line))
    assert all("eventChangeDetail" in line for line in lines)
    connection.close()
    feeder.join(timeout=10)  # the core must outlive the feeder's settle: the fixture stops it after the test


def test_event_stream_limit_answers_503(rest, core_factory):
    import falcon.testing

    from rest.app import SchedulerView, create_app

    core = core_factory()
    app = create_app(SchedulerView(core.scheduler), max_streams=0)
    result = falcon.testing.TestClient(app).simulate_get("/ws/v1/events/stream")
    assert result.status_code == 503 and result.json["message"] == "Too many streaming connections"


def test_health_metrics_and_probes(rest):
    core, client = rest
    scheduled(core)
    status, health = client.get("/ws/v1/scheduler/healthcheck")
    assert status == 200 and health["Healthy"] is True
    assert {c["Name"] for c in health["HealthChecks"]} >= {"Consistency of data", "Negative resources"}
    status, _, body = client.request("GET", "/ws/v1/metrics")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    attempts = {s.labels["state"]: s.value for s in families["yunikorn_scheduler_container_allocation_attempt"].samples
                if s.name.endswith("_total")}
    assert attempts["allocated"] == 3
    running = {s.labels["state"]: s.value for s in families["yunikorn_scheduler_application_total"].samples}
    assert running["running"] == 1
    assert families["yunikorn_scheduler_scheduling_cycle_milliseconds"].type == "histogram"
    assert client.get("/ws/v1/health/live")[0] == 200
    assert client.get("/ws/v1/health/ready") == (200, {"ready": True, "shimState": None})
    status, utilizations = client.get("/ws/v1/scheduler/node-utilizations")
    assert status == 200 and utilizations[0]["utilizations"][0]["type"] in ("memory", "vcore")


def test_readiness_follows_the_shim_state(core_factory):
    from types import SimpleNamespace

    import falcon.testing

    from rest.app import SchedulerView, create_app

    core = core_factory()
    state = {"value": SimpleNamespace(state="Recovering")}
    client = falcon.testing.TestClient(create_app(SchedulerView(core.scheduler, shim_state=lambda: state["value"])))
    assert client.simulate_get("/ws/v1/health/ready").status_code == 503
    state["value"] = SimpleNamespace(state="Running")
    assert client.simulate_get("/ws/v1/health/ready").status_code == 200
    dump = client.simulate_get("/debug/fullstatedump").json
    assert dump["rmDiagnostics"] == {"state": "Running"} or dump["rmDiagnostics"] == "namespace(state='Running')"


def test_full_state_dump_and_usage(rest):
    core, client = rest
    scheduled(core)
    for path in ("/ws/v1/fullstatedump", "/debug/fullstatedump"):
        status, dump = client.get(path)
        assert status == 200
        assert {"partitions", "applications", "nodes", "queues", "placementRules", "config", "rmDiagnostics"} <= set(dump)
    status, users = client.get("/ws/v1/partition/default/usage/users")
    assert status == 200 and users[0]["userName"] == "alice"
    status, user = client.get("/ws/v1/partition/default/usage/user/alice")
    assert status == 200 and user["queues"]["queuePath"] == "root"
    leaf = user["queues"]
    while leaf["children"]:
        leaf = leaf["children"][0]
    assert leaf["resourceUsage"]["vcore"] == 3000
    status, rules = client.get("/ws/v1/partition/default/placementrules")
    assert status == 200 and rules[-1]["name"] == "recovery"


@pytest.mark.parametrize("escape", [
    pytest.param(lambda name: urllib.parse.quote(name, safe=""), id="escaped once, as a browser does"),
    pytest.param(lambda name: urllib.parse.quote(urllib.parse.quote(name, safe=""), safe=""),
                 id="escaped twice, as upstream's Go client does"),
])
def test_names_holding_a_slash_are_found_by_their_escaped_path(rest, escape):
    core, client = rest
    queue, user = "root.a_#_/_b@dom:ain", "svc/bob@dom:ain"
    core.nodes(1)
    core.app("app-1", queue=queue, user=user)
    core.asks("app-1", 1)
    core.settle()
    status, found = client.get(f"/ws/v1/partition/default/queue/{escape(queue)}")
    assert status == 200 and found["queuename"] == queue
    status, apps = client.get(f"/ws/v1/partition/default/queue/{escape(queue)}/applications")
    assert status == 200 and [a["applicationID"] for a in apps] == ["app-1"]
    status, app = client.get(f"/ws/v1/partition/default/queue/{escape(queue)}/application/app-1")
    assert status == 200 and app["queueName"] == queue
    status, usage = client.get(f"/ws/v1/partition/default/usage/user/{escape(user)}")
    assert status == 200 and usage["userName"] == user
    status, body = client.get(f"/ws/v1/partition/default/queue/{escape('root.a_#_/_nothing')}")
    assert status == 404 and body["message"] == "Queue not found"


@pytest.mark.parametrize("path", ["/ws/v1/partition/default/queue/root.%20bad", "/ws/v1/nothing"])
def test_unknown_paths_answer_json_errors(rest, path):
    _, client = rest
    status, body = client.get(path)
    assert status == 404 and body["status_code"] == 404


def test_reads_share_a_snapshot_until_the_core_changes(core_factory):
    import falcon.testing

    from actors.core.snapshot import NODES
    from rest.app import SchedulerView, create_app

    core = core_factory()
    core.nodes(1)
    core.settle()
    client = falcon.testing.TestClient(create_app(SchedulerView(core.scheduler)))
    first = client.simulate_get("/ws/v1/partition/default/nodes")
    taken = core.scheduler.snapshot(frozenset({NODES}))
    assert client.simulate_get("/ws/v1/partition/default/nodes").content == first.content
    assert core.scheduler.snapshot(frozenset({NODES})) is taken, "nothing changed: the same snapshot"
    core.nodes(1, prefix="later-")
    core.settle()
    assert len(client.simulate_get("/ws/v1/partition/default/nodes").json) == 2, "a read after a change sees it"


def test_a_failed_application_is_among_the_completed_ones(rest):
    """As upstream, an application that enters Failed moves to the partition's completed applications."""
    core, client = rest
    core.nodes(1, vcore=500)  # none of the gang's placeholders fits
    ask = Resource.of(vcore=2000, memory=2**30)
    core.scheduler.update_application(si_pb2.ApplicationRequest(rmID="rm", new=[si_pb2.AddApplicationRequest(
        applicationID="hard-gang", queueName="root.batch", partitionName="default",
        ugi=si_pb2.UserGroupInformation(user="alice"), placeholderAsk=ask.to_proto(),
        executionTimeoutMilliSeconds=200, gangSchedulingStyle="Hard")]))
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey=f"ph-{i}", applicationID="hard-gang", partitionName="default", taskGroupName="workers",
        placeholder=True, resourcePerAlloc=Resource.of(vcore=1000, memory=2**29).to_proto()) for i in range(2)]))
    core.advance(0.2)
    assert core.callback.app_states("hard-gang")[-1:] == ["Failed"], "the gang fails at its timeout"
    status, completed = client.get("/ws/v1/partition/default/applications/completed")
    assert status == 200 and [(a["applicationID"], a["applicationState"]) for a in completed] == [
        ("hard-gang", "Failed")]
    assert client.get("/ws/v1/partition/default/applications/active")[1] == []


def _rendered_whole(core):
    """The nodes, applications and partition summary of the core's current snapshot, each rendered on its
    own from the snapshot (no piece kept from an earlier answer), as JSON bytes."""
    import orjson

    from actors.core.snapshot import APPLICATIONS, NODES
    from rest import daos

    partition = core.scheduler.snapshot(frozenset({NODES, APPLICATIONS})).partition("default")
    return (orjson.dumps([daos.node(n) for n in partition.nodes]),
            orjson.dumps([daos.application(a) for a in partition.applications + partition.terminated_applications]),
            daos.partition(partition))


def test_answers_put_together_from_kept_pieces_equal_a_whole_rendering(rest):
    """The nodes and applications an answer reuses from earlier answers, the allocations the dump
    serializes under their nodes and splices under their applications (whatever their keys and tags
    hold), and the used capacity the core keeps up to date from the nodes that changed, are what
    rendering everything anew gives, byte for byte, after every kind of change, whichever of the nodes
    and the dump is read first."""
    import orjson

    core, client = rest
    core.nodes(3)
    core.app("app-1", queue="root.team", user="alice")
    core.app("app-2", queue="root.other", user="bob")

    def changes():
        core.asks("app-1", 3)
        yield
        core.asks("app-2", 2, prefix="b-")
        yield
        core.release("app-1", "app-1-0")
        yield
        core.nodes(1, prefix="later-")  # a node added: the list is no longer the same objects
        yield
        core.asks("app-2", 4, vcore=500, prefix="c-", tags={"kubernetes.io/label/x": 'a "quoted" ,\x00 tag'})
        yield
        # keys and tags that hold the text between two allocations of a serialized array
        core.asks("app-1", 2, vcore=100, prefix='k"},{"allocationKey":"', tags={'"},{"allocationKey":': '},{\\"a'})
        yield
        core.nodes(1, prefix="later-", action=si_pb2.NodeInfo.DECOMISSION)
        yield
        core.scheduler.update_application(si_pb2.ApplicationRequest(rmID="rm", remove=[
            si_pb2.RemoveApplicationRequest(applicationID="app-2", partitionName="default")]))
        yield  # the application ended: it moved to the terminated ones

    for step, _ in enumerate(changes()):
        core.settle()
        paths = ("/ws/v1/fullstatedump", "/ws/v1/partition/default/nodes")
        for _ in range(2):  # the second read is served from what the first one kept
            bodies = {path: client.request("GET", path)[2] for path in (paths[::-1] if step % 2 else paths)}
            dump, nodes = bodies[paths[0]], bodies[paths[1]]
            whole_nodes, whole_apps, whole_partition = _rendered_whole(core)
            assert nodes == whole_nodes
            dump = orjson.loads(dump)  # keeps the order of keys: serialized again, the same bytes
            assert orjson.dumps(dump["nodes"]) == whole_nodes
            assert orjson.dumps(dump["applications"]) == whole_apps
            assert dump["partitions"] == [whole_partition]
            used = {}
            for node in dump["nodes"]:
                for name, value in (*node["allocated"].items(), *node["occupied"].items()):
                    used[name] = used.get(name, 0) + value
            assert dump["partitions"][0]["capacity"]["usedCapacity"] == used


def test_a_node_s_allocations_kept_and_appended_to_equal_a_whole_rendering(rest):
    """A node's allocations' JSON is its last rendering's with the new allocations appended only while
    the earlier ones are the very same, in order, at the head of its list: a removal, a reorder or a
    replacement (even of a list as long, or longer) has them all serialized again; in the dump too,
    where each allocation's piece is cut from that JSON."""
    import dataclasses

    import orjson

    from actors.core.snapshot import NODES
    from rest import daos
    from rest.fragments import Fragments

    core, _ = rest
    core.nodes(1, vcore=16000)
    core.app("app-1", queue="root.team", user="alice")
    core.asks("app-1", 4, tags={"kubernetes.io/label/x": '"},{"allocationKey":'})
    core.settle()
    node = core.scheduler.snapshot(frozenset({NODES})).partition("default").nodes[0]
    a, b, c, d = node.allocations
    # attributes written before the allocations that spell their key
    node = dataclasses.replace(node, attributes={"allocations": '"allocations":[', '"allocations":[': "[]"})
    lists = [(), (a,), (a, b), (a, b, c), (a, b, c), (b, a, c), (b, a, c, d), (a, c), (a, c, d), (a, b, d),
             (a, b, d, c), (d,), (d, a, b, c), ()]
    fragments, dump = Fragments(), Fragments()
    pictures = []  # as the last list of nodes answered does, keeps a node's last picture alive
    for allocations in lists:
        pictured = dataclasses.replace(node, allocations=allocations)
        pictures.append(pictured)
        whole = orjson.dumps(daos.node(pictured))
        assert fragments.node(pictured) == whole, [x.allocation_key for x in allocations]
        cut = {}
        assert dump.nodes((pictured,), cut) == [whole]
        opening = len(b'{"allocationKey":')
        assert [cut[id(x)] for x in allocations] == [orjson.dumps(daos.allocation(x))[opening:-1] for x in allocations]


def test_a_node_s_json_is_kept_for_its_last_snapshot_only_and_entries_of_nodes_gone_are_pruned(rest):
    """A node's JSON is found again for the very snapshot object it was made of, under the node's name: a
    newer snapshot of the node is rendered anew and replaces it; entries of nodes no longer listed are
    dropped once there are more than twice as many as the longest list rendered (and 1,000)."""
    import dataclasses

    import orjson

    from actors.core.snapshot import NODES
    from rest import daos
    from rest.fragments import Fragments

    core, _ = rest
    core.nodes(10)
    core.settle()
    listed = core.scheduler.snapshot(frozenset({NODES})).partition("default").nodes
    fragments = Fragments()
    first = fragments.nodes(listed)
    assert fragments.nodes(listed)[0] is first[0]  # kept, not rendered again
    changed = dataclasses.replace(listed[0], schedulable=False)
    assert fragments.node(changed) == orjson.dumps(daos.node(changed)) != first[0]
    assert fragments.node(listed[0]) == first[0]  # its entry was replaced: rendered anew, the same text
    for i in range(3000):  # nodes that come and go, one at a time
        fragments.node(dataclasses.replace(listed[0], node_id=f"gone-{i}"))
        assert len(fragments) <= 2 * len(listed) + 1001


def test_a_node_s_json_shows_each_change_of_its_name_attributes_capacity_and_usage(rest):
    """A node's first fields are kept with its JSON while they are unchanged: each change of one of
    them, as of its usage, reaches the next rendering, and the text is the one rendered whole."""
    import dataclasses

    import orjson

    from actors.core.snapshot import NODES
    from rest import daos
    from rest.fragments import Fragments
    from si.resources import Resource

    core, _ = rest
    core.nodes(1, vcore=16000)
    core.app("app-1", queue="root.team", user="alice")
    core.asks("app-1", 2)
    core.settle()
    node = core.scheduler.snapshot(frozenset({NODES})).partition("default").nodes[0]
    changes = [{}, {"attributes": {**node.attributes, "zone": "b"}}, {"capacity": Resource.of(vcore=32000)},
               {"host_name": "elsewhere"}, {"rack_name": "rack-9"}, {"allocated": Resource.of(vcore=1)},
               {"allocations": node.allocations[:1]}, {"schedulable": False}, {"reservations": ("app-1|x",)}]
    fragments, pictures = Fragments(), []
    for change in changes:
        node = dataclasses.replace(node, **change)
        pictures.append(node)
        rendered = fragments.node(node)
        assert rendered == orjson.dumps(daos.node(node)), change
        shown = orjson.loads(rendered)
        for name, value in change.items():
            field = {"host_name": "hostName", "rack_name": "rackName"}.get(name, name)
            if name == "allocations":
                assert [a["allocationKey"] for a in shown[field]] == [a.allocation_key for a in value]
            else:
                assert shown[field] == (value.as_dict() if isinstance(value, Resource) else
                                        list(value) if isinstance(value, tuple) else value), name
