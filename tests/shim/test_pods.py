"""Pod classification, application/queue/user precedence and resource arithmetic."""

import copy
import dataclasses
import functools
import json
import pathlib
from unittest import mock

import hypothesis
import orjson
import pytest
from hypothesis import strategies as st

from actors.shim import constraints, pods
from actors.shim.pods import parse_pod, pod_resource, read_pod
from si.resources import Resource
from tests.reliability import tenants
from tests.shim.factories import parsed_or_refused, pod_json

GiB = 2**30


def test_scheduler_name_classifies_the_pod():
    assert parse_pod(pod_json(scheduler="yunikorn")).yunikorn
    assert not parse_pod(pod_json(scheduler="default-scheduler")).yunikorn
    raw = pod_json()
    del raw["spec"]["schedulerName"]
    assert not parse_pod(raw).yunikorn


@pytest.mark.parametrize("labels, annotations, expected", [
    ({"yunikorn.apache.org/app-id": "a1", "applicationId": "a3", "spark-app-selector": "a4"},
     {"yunikorn.apache.org/app-id": "a2"}, "a1"),
    ({"applicationId": "a3", "spark-app-selector": "a4"}, {"yunikorn.apache.org/app-id": "a2"}, "a2"),
    ({"applicationId": "a3", "spark-app-selector": "a4"}, {}, "a3"),
    ({"spark-app-selector": "a4"}, {}, "a4"),
    ({}, {}, "yunikorn-team-a-autogen"),
])
def test_application_id_precedence(labels, annotations, expected):
    pod = parse_pod(pod_json(namespace="team-a", labels=labels, annotations=annotations))
    assert pod.app_id == expected


def test_unique_autogen_suffix_becomes_the_pod_uid():
    pod = parse_pod(pod_json(labels={"applicationId": "team-a-uniqueautogen"}, uid="1234-abcd"))
    assert pod.app_id == "team-a-1234-abcd"


@pytest.mark.parametrize("labels, annotations, expected", [
    ({"yunikorn.apache.org/queue": "root.q1", "queue": "root.q3"}, {"yunikorn.apache.org/queue": "root.q2"},
     "root.q1"),
    ({"queue": "root.q3"}, {"yunikorn.apache.org/queue": "root.q2"}, "root.q2"),
    ({"queue": "root.q3"}, {}, "root.q3"),
    ({}, {}, ""),
])
def test_queue_precedence(labels, annotations, expected):
    assert parse_pod(pod_json(labels=labels, annotations=annotations)).queue == expected


def test_user_info_annotation_and_default_user():
    info = json.dumps({"user": "alice", "groups": ["dev", "ops"]})
    pod = parse_pod(pod_json(annotations={"yunikorn.apache.org/user.info": info}))
    assert (pod.user, pod.groups) == ("alice", ("dev", "ops"))
    assert (parse_pod(pod_json()).user, parse_pod(pod_json()).groups) == ("nobody", ())


def test_unreadable_user_info_makes_the_pod_invalid_with_a_reason():
    pod = parse_pod(pod_json(annotations={"yunikorn.apache.org/user.info": "alice"}))
    assert "user.info" in pod.invalid
    assert pod.user == "nobody"


def test_disable_state_aware_label():
    assert parse_pod(pod_json(labels={"disableStateAware": "true"})).disable_state_aware
    assert not parse_pod(pod_json(labels={"disableStateAware": "false"})).disable_state_aware


def test_resource_is_max_of_init_and_sum_of_containers_plus_overhead_and_one_pod():
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}],
        "overhead": {"cpu": "100m", "memory": "64Mi"},
    }
    assert pod_resource(spec) == Resource({"vcore": 2100, "memory": 2 * GiB + 64 * 2**20, "pods": 1})


def test_sidecars_count_with_the_containers_and_under_later_init_containers():
    spec = {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
            {"name": "init", "resources": {"requests": {"cpu": "2"}}},
        ],
    }
    # running: 1 + 0.5 sidecar = 1.5; init phase peak: 2 + 0.5 sidecar = 2.5
    assert pod_resource(spec) == Resource({"vcore": 2500, "pods": 1})


def test_limits_stand_in_for_missing_requests():
    spec = {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                       "requests": {"cpu": "200m"}}}]}
    assert pod_resource(spec) == Resource({"vcore": 200, "memory": GiB, "pods": 1})


def test_pod_without_requests_counts_one_pod():
    assert pod_resource({"containers": [{"name": "a"}]}) == Resource({"pods": 1})


def test_malformed_quantity_makes_the_pod_invalid_not_an_exception():
    pod = parse_pod(pod_json(cpu="lots"))
    assert "invalid resources" in pod.invalid and "lots" in pod.invalid


@pytest.mark.parametrize("cpu", ["1e" + "0" * 5000, "9" * 5000])
def test_a_quantity_too_long_for_python_makes_the_pod_invalid_with_a_short_reason(cpu):
    pod = parse_pod(pod_json(cpu=cpu))
    assert "invalid resources" in pod.invalid and cpu[:10] in pod.invalid and len(pod.invalid) < 400


def test_states_and_identity():
    pod = parse_pod(pod_json(name="p", namespace="ns", node="n1", phase="Succeeded", owner_kind="Node"))
    assert pod.assigned and pod.terminated and pod.static
    assert pod.full_name == "ns/p"
    assert pod.created == 1714557600.0
    with pytest.raises(ValueError, match="uid"):
        parse_pod({"metadata": {"name": "x"}})


def test_scheduling_gates_mark_the_pod_gated():
    assert parse_pod(pod_json(spec={"schedulingGates": [{"name": "wait"}]})).gated
    assert not parse_pod(pod_json()).gated


# Whatever a pod holds, parsing it gives a record: what the API server would have refused is a reason
# in ``invalid`` (the task is rejected with it), never an exception in the informer.
USER_INFO = "yunikorn.apache.org/user.info"
HOSTILE_PODS = {
    "user-info-nested-5000-deep": ({"annotations": {USER_INFO: "[" * 5000 + "]" * 5000}}, "nests deeper than"),
    "node-affinity-a-string": ({"spec": {"affinity": {"nodeAffinity": "anywhere"}}}, "invalid constraints"),
    "affinity-a-list": ({"spec": {"affinity": ["a"]}}, "invalid constraints"),
    "priority-2-to-the-31": ({"spec": {"priority": 2**31}}, "priority must be a whole number"),
    "priority-a-float": ({"spec": {"priority": 1.5}}, "priority must be a whole number"),
    "labels-not-strings": ({"labels": {"a": 1}}, "labels must be a map of strings"),
    "annotations-a-list": ({"annotations": ["a"]}, "annotations must be a map of strings"),
    "containers-a-string": ({"spec": {"containers": "main"}}, "invalid resources"),
    "two-containers-past-int64": ({"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"memory": "4Ei"}}},
        {"name": "b", "resources": {"requests": {"memory": "4Ei"}}}]}}, "more memory than an int64 holds"),
    "volumes-strings": ({"spec": {"volumes": ["v"]}}, "invalid volumes"),
    "host-port-unicode-digits": ({"spec": {"containers": [{"name": "a", "ports": [{"hostPort": "²"}]}]}},
                                 "invalid constraints"),
    "spec-a-list": ({"spec": ["containers"]}, "spec is not an object"),
}


@pytest.mark.parametrize(("changes", "problem"), HOSTILE_PODS.values(), ids=HOSTILE_PODS.keys())
def test_a_hostile_pod_is_a_record_with_its_problem(changes, problem):
    raw = pod_json()
    raw["metadata"].update({k: v for k, v in changes.items() if k != "spec"})
    if isinstance(changes.get("spec"), dict):
        raw["spec"].update(changes["spec"])
    elif "spec" in changes:
        raw["spec"] = changes["spec"]
    pod = parse_pod(raw)
    assert problem in pod.invalid, pod.invalid
    assert pod.priority is None or -(2**31) <= pod.priority < 2**31
    pod.resource.to_proto()  # what the SI message of its ask carries


def test_user_info_is_read_with_gos_rules():
    pod = parse_pod(pod_json(annotations={USER_INFO: '{"User": "alice", "GROUPS": ["dev", null], "x": 1}'}))
    assert (pod.user, pod.groups, pod.invalid) == ("alice", ("dev", ""), "")
    assert parse_pod(pod_json(annotations={USER_INFO: '{"user": ""}'})).user == "nobody"
    assert "groups must be a JSON list of strings" in parse_pod(pod_json(annotations={
        USER_INFO: '{"user": "a", "groups": "dev"}'})).invalid


def test_fields_of_the_wrong_type_read_as_absent():
    pod = parse_pod(pod_json(spec={"nodeName": 5, "priorityClassName": ["x"], "schedulerName": {"a": 1}}))
    assert (pod.node_name, pod.priority_class, pod.scheduler_name) == ("", "", "default-scheduler")


@pytest.mark.parametrize("node", [0, False, [], {}, 5, ["n1"]])
def test_a_node_name_of_another_type_reads_as_no_node_listed_or_watched(node):
    raw = pod_json(spec={"nodeName": node}, labels={"applicationId": "typed-node"})
    watched = parse_pod(raw)
    assert (watched.node_name, watched.assigned, watched.app_id) == ("", False, "typed-node")
    assert read_pod(orjson.dumps(raw)) == watched


def test_a_pod_without_identity_is_the_only_value_error():
    raw = pod_json()
    raw["metadata"]["uid"] = ["x"]
    with pytest.raises(ValueError, match="without uid"):
        parse_pod(raw)
    with pytest.raises(ValueError, match="without uid"):
        parse_pod({"metadata": "x"})


def _resized(cpu: str, allocated: str, applied: str, conditions=(), resize: str | None = None) -> dict:
    """A running pod whose request is ``cpu`` while its kubelet allocated ``allocated`` and applied ``applied``."""
    return {"containers": [{"name": "a", "resources": {"requests": {"cpu": cpu}}}]}, {
        "phase": "Running", "conditions": list(conditions), **({"resize": resize} if resize else {}),
        "containerStatuses": [{"name": "a", "allocatedResources": {"cpu": allocated},
                               "resources": {"requests": {"cpu": applied}}}]}


@pytest.mark.parametrize("cpu, allocated, applied, vcore", [
    ("2", "1", "1", 2000),  # a resize up asked: counted at once
    ("500m", "1", "1", 1000),  # a resize down asked: counted once the kubelet has applied it
    ("500m", "500m", "1", 1000),  # allocated, not yet applied
    ("500m", "500m", "500m", 500),
])
def test_a_resized_container_counts_the_most_of_its_request_allocation_and_applied_resources(
        cpu, allocated, applied, vcore):
    assert pod_resource(*_resized(cpu, allocated, applied)) == Resource({"vcore": vcore, "pods": 1})


@pytest.mark.parametrize("status", [
    {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]},
    {"resize": "Infeasible"},  # before Kubernetes 1.33
])
def test_an_infeasible_resize_counts_what_the_kubelet_applied(status):
    assert pod_resource(*_resized("100", "1", "1", **status)) == Resource({"vcore": 1000, "pods": 1})


def test_a_deferred_resize_counts_the_request():
    deferred = [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]
    assert pod_resource(*_resized("3", "1", "1", deferred)) == Resource({"vcore": 3000, "pods": 1})


@pytest.mark.parametrize("status", [None, "Running", {"containerStatuses": {"a": 1}},
                                    {"containerStatuses": ["a", {"name": "a", "resources": "lots"}]}])
def test_a_status_of_the_wrong_shape_leaves_the_request(status):
    spec = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}
    assert pod_resource(spec, status) == Resource({"vcore": 1000, "pods": 1})


def test_parse_pod_reads_the_kubelets_resize_verdict():
    raw = pod_json(cpu="100")
    raw["spec"]["containers"][0]["name"] = "a"
    raw["status"] = _resized("100", "1", "1", [{"type": "PodResizePending", "reason": "Infeasible"}])[1]
    assert parse_pod(raw).resource["vcore"] == 1000 and not parse_pod(raw).invalid


def test_pods_of_one_workload_share_what_their_specs_say_and_keep_their_own_identity():
    first = parse_pod(pod_json(labels={"applicationId": "app-1"}, uid="u-1"))
    second = parse_pod(pod_json(labels={"applicationId": "app-1"}, uid="u-2", node="node-7", phase="Running"))
    assert first.resource is second.resource and first.labels is second.labels
    assert (first.uid, first.node_name, first.phase, first.constraints) == ("u-1", "", "Pending", "")
    assert (second.uid, second.node_name, second.phase) == ("u-2", "node-7", "Running")
    assert second.constraints == '{"nodeName":"node-7"}'
    elsewhere = parse_pod(pod_json(labels={"applicationId": "app-1"}, node="node-8", phase="Running"))
    assert (elsewhere.constraints, second.constraints) == ('{"nodeName":"node-8"}', '{"nodeName":"node-7"}')


def test_a_bound_pod_with_constraints_of_its_own_keeps_its_node_in_them():
    selector = {"nodeSelector": {"disk": "ssd"}}
    pending = parse_pod(pod_json(spec=selector))
    bound = parse_pod(pod_json(spec=selector, node="node-3"))
    assert json.loads(pending.constraints) == {"nodeSelector": {"disk": "ssd"}}
    assert json.loads(bound.constraints) == {"nodeName": "node-3", "nodeSelector": {"disk": "ssd"}}


def test_a_unique_autogen_id_is_completed_with_each_pods_own_uid_when_their_specs_are_shared():
    labels = {"applicationId": "team-a-uniqueautogen"}
    assert [parse_pod(pod_json(labels=labels, uid=uid)).app_id for uid in ("u-1", "u-2")] == [
        "team-a-u-1", "team-a-u-2"]


def test_a_pod_whose_content_is_not_plain_json_is_read_all_the_same():
    raw = pod_json(labels={"applicationId": "app-x"})
    raw["spec"]["containers"] = tuple(raw["spec"]["containers"])
    raw["metadata"]["annotations"] = {"note": {1, 2}}  # not JSON at all: nothing to share it under
    pod = parse_pod(raw)
    assert (pod.app_id, pod.resource.get("vcore")) == ("app-x", 100)
    assert "annotations must be a map of strings" in pod.invalid


def test_the_shared_facts_are_bounded(monkeypatch):
    from actors.shim import pods
    monkeypatch.setattr(pods, "FACTS_KEPT", 8)
    for index in range(20):
        parse_pod(pod_json(labels={"applicationId": f"bounded-{index}"}))
    assert len(pods._facts) <= 8


def test_a_resize_under_way_sizes_its_own_pod_only_not_the_workload_sharing_its_spec():
    plain, resized = pod_json(cpu="1", uid="u-1"), pod_json(cpu="1", uid="u-2", node="n1", phase="Running")
    resized["status"]["containerStatuses"] = [{"name": "main", "allocatedResources": {"cpu": "3"},
                                               "resources": {"requests": {"cpu": "3"}}}]
    assert parse_pod(resized).resource["vcore"] == 3000
    assert parse_pod(plain).resource["vcore"] == 1000


@pytest.mark.parametrize("raw", [
    pod_json(node="n1", phase="Running", labels={"applicationId": "app-1"}, owner_kind="Node"),
    pod_json(annotations={"yunikorn.apache.org/task-group-name": "g", "yunikorn.apache.org/placeholder": "true"}),
    pod_json(spec={"priority": "high"}),  # invalid: its record says why
])
def test_a_parsed_record_is_whole_and_frozen_as_the_dataclass_makes_one(raw):
    pod = parse_pod(raw)
    # Made field by field: the dataclass's own constructor, given every field read back, makes an equal record.
    assert dataclasses.replace(pod) == pod
    assert (pod.name, pod.node_name, pod.resource_version, pod.volume_wait, pod.late_claims) == (
        raw["metadata"]["name"], raw["spec"].get("nodeName", ""), "1", "", ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        pod.node_name = "elsewhere"


def test_the_tags_of_bound_pods_are_bounded_and_name_each_pods_own_node(monkeypatch):
    from actors.shim import pods
    monkeypatch.setattr(pods, "BOUND_TAGS_KEPT", 4)
    tags = [parse_pod(pod_json(node=f"node-{index}", labels={"applicationId": "a"})).constraints for index in range(10)]
    assert tags == [json.dumps({"nodeName": f"node-{index}"}, separators=(",", ":")) for index in range(10)]
    assert len(pods._bound_tags) <= 4


def test_pods_read_from_json_text_name_their_own_node_and_creation_time_however_many_are_kept(monkeypatch):
    from actors.shim import pods
    monkeypatch.setattr(pods, "BOUND_TAGS_KEPT", 4)
    monkeypatch.setattr(pods, "TIMES_KEPT", 4)
    for index in range(10):
        raw = pod_json(node=f"node-{index}", uid=f"u-{index}", labels={"applicationId": "kept"})
        raw["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{index:02d}Z"
        pod = read_pod(json.dumps(raw, separators=(",", ":")).encode())
        assert pod == parse_pod(raw)
        assert (pod.node_name, pod.created) == (f"node-{index}", 1767225600.0 + index)
    assert len(pods._bound_tags) <= 4 and len(pods._times) <= 4


def test_a_spec_given_as_a_read_only_mapping_reads_as_the_same_spec_in_a_dict():
    import types
    raw = pod_json(node="node-1", labels={"applicationId": "a"}, cpu="2")
    frozen = {**raw, "spec": types.MappingProxyType(raw["spec"])}
    assert parse_pod(frozen) == parse_pod(raw)


# ---- a pod read straight from its JSON text (``read_pod``, what the informer's lists use) ------------

def _with(raw: dict, *, node: object = None, phase: str | None = None, uid: str | None = None,
          deleting: bool = False, namespace: str | None = None) -> dict:
    """``raw`` as another pod of its workload, or the same pod later: what a record reads for each pod."""
    other = copy.deepcopy(raw)
    metadata = other.setdefault("metadata", {}) if isinstance(other.get("metadata"), dict) else {}
    spec = other.get("spec") if isinstance(other.get("spec"), dict) else {}
    if uid is not None:
        metadata["uid"] = uid
    if node is not None:
        spec["nodeName"] = node
    if phase is not None and isinstance(other.get("status"), dict):
        other["status"]["phase"] = phase
    if deleting:
        metadata["deletionTimestamp"] = "2024-05-01T11:00:00Z"
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["resourceVersion"] = str(len(str(other)))
    return other


def _hostile(changes: dict) -> dict:
    raw = pod_json(labels={"applicationId": "hostile"})
    raw["metadata"].update({k: v for k, v in changes.items() if k != "spec"})
    if isinstance(changes.get("spec"), dict):
        raw["spec"].update(changes["spec"])
    elif "spec" in changes:
        raw["spec"] = changes["spec"]
    return raw


def _tenant_corpus() -> list[dict]:
    """The pods that once crashed something (the tenants' fuzzing corpus), given an identity."""
    entries = json.loads((pathlib.Path(__file__).parents[1] / "reliability" / "corpus.json").read_text())
    pods = [entry["body"] for entry in entries if entry["kind"] == "pod"]
    for index, body in enumerate(pods):
        body["metadata"]["uid"] = f"corpus-{index}"
    return pods


# A running pod's container statuses as kubelets report them, each with the spec's containers when given: what
# a container allocated and applied read from the text where it is the text its container asks, else decoded.
_ASKED = {"cpu": "1", "memory": "128Mi"}
KUBELET_REPORTS = [
    ([{"name": "main", "allocatedResources": _ASKED, "resources": {"requests": _ASKED}}], None),  # as asked
    ([{"name": "main", "allocatedResources": {"memory": "128Mi", "cpu": "1"}, "resources": {"requests": _ASKED}}],
     None),  # in another order
    ([{"name": "main", "allocatedResources": {"cpu": "1000m", "memory": "128Mi"},
       "resources": {"requests": {"cpu": "1000m", "memory": "128Mi"}}}], None),  # spelled otherwise
    ([{"name": "main", "allocatedResources": _ASKED, "resources": {"requests": {"cpu": "2", "memory": "128Mi"}}}],
     None),  # a resize applied, not yet allocated
    ([{"name": "main", "allocatedResources": _ASKED, "resources": {"requests": _ASKED, "limits": {"cpu": "4"}}}],
     [{"name": "main", "resources": {"requests": _ASKED, "limits": {"cpu": "4"}}}]),  # limits too
    ([{"name": "b", "allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}},
      {"name": "a", "allocatedResources": {"cpu": "1"}, "resources": {"requests": {"cpu": "1"}}}],
     [{"name": "a", "resources": {"requests": {"cpu": "1"}}},
      {"name": "b", "resources": {"requests": {"cpu": "2"}}}]),  # reported in another order than the spec's
    ([{"name": "main", "allocatedResources": _ASKED}], None),  # allocated only
    ([{"name": "main", "resources": None}], [{"name": "main"}]),  # applied nothing, asked nothing
    ([{"name": "main", "allocatedResources": None, "resources": {"requests": None}}],
     [{"name": "main", "resources": {"requests": None}}]),
    ([{"allocatedResources": _ASKED, "resources": {"requests": _ASKED}}], None),  # no name
    ([{"name": "main", "allocatedResources": _ASKED, "resources": "lots"}], None),
    ([{"name": "main", "allocatedResources": _ASKED, "resources": {"requests": _ASKED}}],
     [{"name": "main", "resources": "lots"}]),
    ([{"name": "main", "allocatedResources": _ASKED, "resources": {"requests": _ASKED}}], "main"),
    ([{"name": "main", "allocatedResources": _ASKED, "resources": {"requests": _ASKED}},
      {"name": "extra", "allocatedResources": _ASKED}], None),  # a status of no container
]


def _kubelet_reported(statuses: list, containers: object) -> dict:
    raw = pod_json(cpu="1", labels={"applicationId": "kubelet"}, node="n1", phase="Running")
    raw["status"]["containerStatuses"] = statuses
    raw["status"]["initContainerStatuses"] = statuses[:1]
    if containers is not None:
        raw["spec"]["containers"] = containers
    raw["spec"]["initContainers"] = raw["spec"]["containers"][:1] if isinstance(raw["spec"]["containers"], list) else []
    return raw


def test_a_running_pods_resources_reported_as_asked_are_read_without_decoding_the_pod_whole(monkeypatch):
    """The kubelet reports what each container allocated and applied (every running pod's, since Kubernetes
    1.33): where that is the JSON text its container asks, a pod of a workload seen before is read from its
    text alone; a resize under way is weighed from the pod decoded whole."""
    as_asked, resized = (_kubelet_reported(KUBELET_REPORTS[i][0], None) for i in (0, 3))
    texts = [json.dumps(_with(raw, uid=uid, node=node), separators=(",", ":")).encode()
             for raw in (as_asked, resized) for uid, node in (("u-1", "n1"), ("u-2", "n1"))]
    read_pod(texts[0])  # the workload's facts and the node's constraint, kept
    decoded = []
    monkeypatch.setattr(orjson, "loads", lambda data, loads=orjson.loads: decoded.append(1) or loads(data))
    assert read_pod(texts[1]).resource == Resource({"vcore": 1000, "memory": 128 * 2**20, "pods": 1})
    assert decoded == []
    assert [read_pod(text).resource["vcore"] for text in texts[2:]] == [2000, 2000]
    assert decoded


def _varied_pods() -> list[dict]:
    resized = pod_json(cpu="1", labels={"applicationId": "resized"}, node="n1", phase="Running")
    resized["status"]["containerStatuses"] = [{"name": "main", "allocatedResources": {"cpu": "3"},
                                               "resources": {"requests": {"cpu": "3"}}}]
    applied = pod_json(cpu="1", labels={"applicationId": "applied"}, node="n1", phase="Running")
    applied["status"]["containerStatuses"] = [{"name": "main", "allocatedResources": {"cpu": "1", "memory": "128Mi"},
                                               "resources": {"requests": {"cpu": "1", "memory": "128Mi"}}}]
    reported = pod_json(cpu="1", labels={"applicationId": "reported"}, node="n1", phase="Running")
    reported["status"]["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 2**70}]
    reported["status"]["initContainerStatuses"] = None
    no_status, null_spec, not_a_pod = pod_json(), pod_json(), pod_json()
    del no_status["status"]
    kubelets = [_kubelet_reported(statuses, spec) for statuses, spec in KUBELET_REPORTS]
    null_spec["spec"] = None
    not_a_pod["metadata"] = ["x"]
    managed = pod_json(labels={"applicationId": "managed"}, node="n2")
    managed["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:x": {}}}}]
    managed["metadata"]["generation"] = 2**64  # an integer orjson reads as a float, in a field no record reads
    return [
        pod_json(), pod_json(scheduler="default-scheduler", node="n1", phase="Running"),
        pod_json(labels={"applicationId": "app-1", "queue": "root.a"}, annotations={USER_INFO: '{"user": "u"}'}),
        pod_json(labels={"applicationId": "team-uniqueautogen"}),
        pod_json(owner_kind="Node", node="n1"), pod_json(owner_kind="Pod"),
        pod_json(spec={"schedulingGates": [{"name": "wait"}], "priority": 7, "priorityClassName": "high"}),
        pod_json(spec={"nodeSelector": {"disk": "ssd"}}, node="n3"),
        pod_json(spec={"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        pod_json(spec={"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
                       "overhead": {"cpu": "10m"}, "preemptionPolicy": "Never"}),
        pod_json(spec={"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}),
        pod_json(annotations={"yunikorn.apache.org/task-group-name": "g", "yunikorn.apache.org/placeholder": "true",
                              "yunikorn.apache.org/allow-preemption": "false"}),
        pod_json(spec={"nodeName": 5, "priorityClassName": ["x"], "schedulerName": {"a": 1}}),
        pod_json(spec={"nodeName": "", "affinity": {"nodeName": "n1"}}),  # a nested nodeName is no node
        pod_json(name="ö-pod", node="nöde-1", labels={"applicationId": "ü"}),
        _hostile({"spec": {"priority": 2**70}}),
        resized, applied, reported, no_status, null_spec, not_a_pod, managed, *kubelets,
        *(_hostile(changes) for changes, _ in HOSTILE_PODS.values()),
        *_tenant_corpus(),
    ]


def test_a_pod_read_from_its_json_text_is_the_record_parsed_from_its_dict():
    """Every pod, as itself and as other pods of its workload (other uid, node, phase, deletion, namespace), read from
    its JSON text compact (the API server's) and spaced, twice (the second time from the facts the first
    kept) and in both orders with the dict path: the same fields, or the same error."""
    for raw in _varied_pods():
        uid = (raw.get("metadata") or {}).get("uid") if isinstance(raw.get("metadata"), dict) else None
        versions = [raw, _with(raw, node="node-a", phase="Running", uid=f"{uid}-a"),
                    _with(raw, node="node-b", uid=f"{uid}-b", deleting=True), _with(raw, node="node-a"),
                    _with(raw, uid=f"{uid}-c", namespace="elsewhere")]
        for version in versions:
            for text in (json.dumps(version, separators=(",", ":"), ensure_ascii=False).encode(),
                         json.dumps(version).encode()):
                expected = parsed_or_refused(parse_pod, orjson.loads(text))
                for _ in range(2):
                    assert parsed_or_refused(read_pod, text) == expected, text[:300]


@hypothesis.settings(max_examples=300, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(tenants.pods(), st.sampled_from(["", "node-1", "node-2"]), st.booleans())
def test_a_tenants_pod_read_from_its_json_text_is_the_record_parsed_from_its_dict(raw, node, compact):
    raw["metadata"]["uid"] = f"uid-{node}"
    if node:
        raw["spec"]["nodeName"] = node
    text = json.dumps(raw, separators=(",", ":") if compact else None).encode()
    expected = parsed_or_refused(parse_pod, orjson.loads(text))
    assert parsed_or_refused(read_pod, text) == expected
    assert parsed_or_refused(read_pod, text) == expected


def test_pods_read_from_json_text_share_their_workloads_facts():
    texts = [json.dumps(pod_json(labels={"applicationId": "shared"}, node=node), separators=(",", ":")).encode()
             for node in ("node-1", "node-2")]
    first, second = (read_pod(text) for text in texts)
    assert first.resource is second.resource and first.labels is second.labels
    assert (first.constraints, second.constraints) == ('{"nodeName":"node-1"}', '{"nodeName":"node-2"}')


# The tolerations the API server gives every pod that has none of its own (DefaultTolerationSeconds).
DEFAULT_TOLERATIONS = [{"key": f"node.kubernetes.io/{condition}", "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 300} for condition in ("not-ready", "unreachable")]


# Specs constraining their pods besides the node.
CONSTRAINED_SPECS = [
    {"tolerations": DEFAULT_TOLERATIONS},
    {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "gpu", "operator": "Equal", "value": "yes"}]},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["app"],
             "topologyKey": "kubernetes.io/hostname"}]}}},
    {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                    "labelSelector": {"matchLabels": {"app": "web"}}}],
     "containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}],
                     "resources": {"requests": {"cpu": "1"}}}]},
]


@pytest.mark.parametrize("spec", CONSTRAINED_SPECS)
def test_a_bound_pod_constrained_besides_its_node_carries_the_tag_of_its_whole_spec(spec):
    """Such a pod shares the facts of its workload, which are read once, and its tag is what its spec,
    node included, encodes to (as when each such pod was read alone)."""
    records = []
    for node in ("node-1", "node-2", "nöde-3", "node-1"):
        raw = pod_json(node=node, labels={"applicationId": "constrained", "app": "web"}, spec=spec, phase="Running")
        text = json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode()
        expected = constraints.encode(raw["spec"], "default", raw["metadata"]["labels"])
        assert f'"nodeName":"{node}"' in expected
        assert parse_pod(raw).constraints == expected
        records.append(read_pod(text))
        assert records[-1].constraints == expected
    assert all(record.resource is records[0].resource for record in records)


def test_a_spec_naming_its_node_elsewhere_too_is_read_for_each_pod():
    """The facts' key leaves the spec's node out, not a field the facts read that names it too (here as a
    resource, which makes the pod invalid, saying so)."""
    for node in ("node-1", "node-2"):
        text = json.dumps(pod_json(node=node, labels={"applicationId": "twice"}, spec={"overhead": {"nodeName": node}}),
                          separators=(",", ":")).encode()
        assert parsed_or_refused(read_pod, text) == parsed_or_refused(parse_pod, orjson.loads(text))
        assert node in read_pod(text).invalid


@pytest.mark.parametrize("text", [b"", b"{", b"[" * 5000 + b"]" * 5000, b'{"metadata":{"uid":"\xff"}}', b"5"])
def test_text_that_is_no_pod_is_a_value_error(text):
    with pytest.raises(ValueError):
        read_pod(text)


# ---- the facts a workload's pods share: read from, and keyed on, what the facts read of a spec ------

def _token_volume(raw: dict, suffix: str) -> dict:
    """``raw`` with the service account's token volume the ServiceAccount admission gives every pod of a real
    cluster, named ``kube-api-access-`` and five random characters, mounted in each of its containers."""
    name = f"kube-api-access-{suffix}"
    spec = raw["spec"]
    spec["volumes"] = [*(spec.get("volumes") if type(spec.get("volumes")) is list else ()), {
        "name": name, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}]
    for container in spec.get("containers") if type(spec.get("containers")) is list else ():
        if isinstance(container, dict):
            container["volumeMounts"] = [{"name": name, "readOnly": True,
                                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    return raw


def _real_cluster_pod(uid: str, node: str, suffix: str) -> dict:
    """A running pod as a real cluster lists it: the API server's default tolerations, the kubelet's report of
    what its container allocated and applied, and its token volume."""
    raw = _kubelet_reported(KUBELET_REPORTS[0][0][:1], None)
    raw["metadata"].update(uid=uid, labels={"applicationId": "real-cluster", "queue": "root.a"})
    raw["spec"].update(nodeName=node, tolerations=DEFAULT_TOLERATIONS,
                       volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "shared-data"}}])
    return _token_volume(raw, suffix)


def _read_whole(raw: dict):
    """The record ``parse_pod`` makes of ``raw`` with its facts read from its whole spec (its node aside), alone."""
    def whole(metadata, spec, namespace):
        if isinstance(spec, dict):
            spec = {name: value for name, value in spec.items() if name != "nodeName"}
        return pods._read_facts(metadata, spec, namespace), None
    with mock.patch.object(pods, "_shared_facts", whole):
        return parse_pod(raw)


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
def test_pods_differing_only_in_their_token_volumes_name_share_their_workloads_facts(read, monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    raws = [_real_cluster_pod(f"u-{suffix}", node, suffix)
            for node, suffix in (("node-1", "x7k2p"), ("node-2", "b9qzr"), ("node-1", "4mwtd"))]
    records = [read(raw) for raw in raws]
    assert records == [_read_whole(raw) for raw in raws]
    assert len(pods._facts) == 1
    assert all(record.resource is records[0].resource and record.labels is records[0].labels for record in records)
    assert (records[0].claims, records[0].node_name, records[1].node_name) == (("shared-data",), "node-1", "node-2")


# What a CNI (Calico) writes on every running pod: its own values in each.
CNI_ANNOTATIONS = {"cni.projectcalico.org/containerID": "0f3c9a", "cni.projectcalico.org/podIP": "10.1.2.3/32",
                   "cni.projectcalico.org/podIPs": "10.1.2.3/32"}
READ_ANNOTATIONS = {"yunikorn.apache.org/user.info": '{"user": "alice", "groups": ["dev"]}',
                    "yunikorn.apache.org/task-group-name": "workers", "yunikorn.apache.org/allow-preemption": "false"}


def _annotated(uid: str, node: str, index: int, annotations: dict) -> dict:
    """A running pod of one workload with the annotations a real cluster's pod carries, ``index`` its own."""
    raw = _real_cluster_pod(uid, node, "x7k2p")
    raw["metadata"]["annotations"] = {**annotations, "cni.projectcalico.org/containerID": f"{index:064x}",
                                      "cni.projectcalico.org/podIP": f"10.1.0.{index}/32",
                                      "batch.kubernetes.io/job-completion-index": str(index)}
    return raw


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
def test_pods_differing_only_in_annotations_no_fact_reads_share_their_workloads_facts(read, monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    raws = [_annotated(f"u-{index}", f"node-{index % 2}", index, READ_ANNOTATIONS) for index in range(3)]
    records = [read(raw) for raw in raws]
    assert records == [_read_whole(raw) for raw in raws]
    assert len(pods._facts) == 1
    assert (records[0].user, records[0].groups, records[0].task_group, records[0].allow_preemption) == (
        "alice", ("dev",), "workers", False)


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
@pytest.mark.parametrize("name", sorted(pods._ANNOTATIONS_READ))
def test_an_annotation_the_facts_read_sets_a_pod_apart(read, name, monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    first, second = (_annotated(f"u-{index}", "node-1", index, READ_ANNOTATIONS) for index in range(2))
    second["metadata"]["annotations"][name] = "changed"
    assert [read(raw) for raw in (first, second)] == [_read_whole(raw) for raw in (first, second)]
    assert len(pods._facts) == 2


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
@pytest.mark.parametrize("value", [1, None, ["a"], {"a": "b"}, True])
def test_an_annotation_no_fact_reads_that_is_not_a_string_makes_the_pod_invalid_alone(read, value, monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    first, second = (_annotated(f"u-{index}", "node-1", index, READ_ANNOTATIONS) for index in range(2))
    second["metadata"]["annotations"]["cni.projectcalico.org/podIP"] = value
    records = [read(raw) for raw in (first, second)]
    assert records == [_read_whole(raw) for raw in (first, second)]
    assert (records[0].invalid, records[1].invalid) == ("", "annotations must be a map of strings")


def _stateful(index: int, *, own: bool = True, spec: dict | None = None) -> dict:
    """A running pod of a StatefulSet: its name and index are labels of its own."""
    raw = _real_cluster_pod(f"u-{index}", f"node-{index}", "x7k2p")
    raw["metadata"]["labels"] = {"app": "db", **({"statefulset.kubernetes.io/pod-name": f"db-{index}",
                                                  "apps.kubernetes.io/pod-index": str(index)} if own else {}),
                                 "controller-revision-hash": "db-7c9f", "queue": "root.a"}
    raw["spec"].update(spec or {})
    return raw


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
@pytest.mark.parametrize("plain_first", [False, True], ids=["own labels first", "plain first"])
def test_pods_with_labels_of_their_own_share_their_workloads_facts_each_with_its_labels(read, plain_first, monkeypatch):
    """Whichever is read first, a pod of the workload without such labels or one with them."""
    monkeypatch.setattr(pods, "_facts", {})
    raws = [_stateful(index) for index in range(3)]
    raws.insert(0 if plain_first else 3, _stateful(3, own=False))
    records = [read(raw) for raw in raws]
    assert records == [_read_whole(raw) for raw in raws]
    assert len(pods._facts) == 1
    assert [dict(record.labels) for record in records] == [raw["metadata"]["labels"] for raw in raws]
    plain = records[0 if plain_first else 3]
    assert plain.labels is pods._facts.popitem()[1].values[pods._LABELS_AT]
    assert all(record.resource is plain.resource for record in records)


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
@pytest.mark.parametrize("field", ["matchLabelKeys", "mismatchLabelKeys"])
def test_pods_whose_constraints_name_labels_to_match_are_keyed_on_their_labels_whole(read, field, monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname",
            field: ["statefulset.kubernetes.io/pod-name"]}
    raws = [_stateful(index, spec={"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}})
            for index in range(2)]
    records = [read(raw) for raw in raws]
    assert records == [_read_whole(raw) for raw in raws]
    assert len(pods._facts) == 2 and records[0].constraints != records[1].constraints


@pytest.mark.parametrize("read", [parse_pod, lambda raw: read_pod(orjson.dumps(raw))], ids=["watched", "listed"])
@pytest.mark.parametrize("value", [1, None, ["db-1"], {"a": "b"}, True])
def test_a_label_of_a_pods_own_that_is_not_a_string_makes_the_pod_invalid_alone(read, value, monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    first, second = _stateful(0), _stateful(1)
    second["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = value
    records = [read(raw) for raw in (first, second)]
    assert records == [_read_whole(raw) for raw in (first, second)]
    assert (records[0].invalid, records[1].invalid) == ("", "labels must be a map of strings")


def test_a_pod_with_labels_of_its_own_listed_then_watched_is_read_once_for_both(monkeypatch):
    monkeypatch.setattr(pods, "_facts", {})
    listed = read_pod(orjson.dumps(_stateful(0)))
    watched = parse_pod(_stateful(1))
    assert len(pods._facts) == 1 and watched.resource is listed.resource
    assert (listed.labels["apps.kubernetes.io/pod-index"], watched.labels["apps.kubernetes.io/pod-index"]) == ("0", "1")


def test_a_pod_listed_then_watched_is_read_once_for_both(monkeypatch):
    """The listing's key, from the pod's JSON text as the API server writes it, is the key of its dict."""
    monkeypatch.setattr(pods, "_facts", {})
    raw = _real_cluster_pod("u-1", "node-1", "x7k2p")
    listed = read_pod(orjson.dumps(raw))
    watched = parse_pod(_with(raw, phase="Succeeded"))
    assert len(pods._facts) == 1 and watched.resource is listed.resource
    assert (listed.phase, watched.phase) == ("Running", "Succeeded")


# Spec fields no fact reads, and fields no fact reads of the containers, init containers and volumes.
_UNREAD = ("serviceAccountName", "restartPolicy", "dnsPolicy", "terminationGracePeriodSeconds", "securityContext",
           "hostname", "enableServiceLinks")
_UNREAD_OF_ITEMS = ("name", "image", "env", "volumeMounts", "command", "projected", "configMap", "secret")
_LISTS = ("containers", "initContainers", "volumes")


# A spec giving each field the facts read a value that counts.
EVERY_FACT = {
    "schedulerName": "yunikorn", "priority": 10, "priorityClassName": "high", "preemptionPolicy": "Never",
    "schedulingGates": [{"name": "wait"}], "hostNetwork": True, "overhead": {"cpu": "10m"},
    "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
    **CONSTRAINED_SPECS[1], **CONSTRAINED_SPECS[2], **CONSTRAINED_SPECS[3],
    "containers": [{"name": "main", "resources": {"limits": {"cpu": "2"}}, "ports": [{"containerPort": 8080}]}],
    "initContainers": [{"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}},
                        "ports": [{"containerPort": 9090, "protocol": "UDP"}]},
                       {"name": "setup", "resources": {"requests": {"cpu": "3"}}}],
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                *({"name": kind, kind: {"driver": "d"}} for kind in constraints.IN_TREE_DISKS)],
}


@functools.cache
def _keyed_pods() -> tuple[dict, ...]:
    """The varied pods with a spec to vary (an object), real cluster pods, and pods constrained otherwise."""
    found = [raw for raw in _varied_pods() if isinstance(raw.get("metadata"), dict) and isinstance(raw.get("spec"), dict)]
    alone = [{field: value} for field, value in EVERY_FACT.items()] + [{"volumes": [volume]} for volume in EVERY_FACT["volumes"]]
    return (*found, _real_cluster_pod("real", "node-1", "x7k2p"), _stateful(0), _annotated("annotated", "node-1", 0, READ_ANNOTATIONS),
            *(pod_json(spec=spec, labels={"app": "web"}) for spec in (EVERY_FACT, *alone, *CONSTRAINED_SPECS)))


@functools.cache
def _pool() -> dict[str, list]:
    """The values the keyed pods give each spec field (``field``) and each field of its lists' items
    (``field.name``)."""
    pool: dict[str, list] = {}
    for raw in _keyed_pods():
        for field, value in raw["spec"].items():
            pool.setdefault(field, []).append(value)
            for item in value if field in _LISTS and type(value) is list else ():
                for name, inner in item.items() if isinstance(item, dict) else ():
                    pool.setdefault(f"{field}.{name}", []).append(inner)
    return pool


_deep = st.integers(30, 200).map(lambda depth: functools.reduce(lambda value, _: {"a": [value]}, range(depth), 1))


def _values(where: str):
    return st.one_of(st.sampled_from(_pool().get(where) or [None]), tenants._json, _deep)


@st.composite
def _varied_specs(draw) -> dict:
    """A keyed pod whose spec has fields, and fields of its lists' items, set to values other pods give them
    or to hostile ones (of any type, nested deep), or removed; with or without its token volume."""
    raw = copy.deepcopy(draw(st.sampled_from(_keyed_pods())))
    spec = raw["spec"]
    for _ in range(draw(st.integers(0, 6))):
        field = draw(st.sampled_from([*_pool(), *_UNREAD, *(f"{field}.{name}" for field in _LISTS for name in _UNREAD_OF_ITEMS)]))
        if "." in field:
            items = spec.get(field.partition(".")[0])
            item = draw(st.sampled_from(items)) if type(items) is list and items else None
            if isinstance(item, dict):
                item[field.partition(".")[2]] = draw(_values(field))
        elif draw(st.integers(0, 4)) == 0:
            spec.pop(field, None)
        else:
            spec[field] = draw(_values(field))
    return _token_volume(raw, "x7k2p") if draw(st.booleans()) else raw


def _sibling(raw: dict) -> dict:
    """Another pod of ``raw``'s workload: its own uid and node, its containers, volumes and mounts named
    otherwise, and the spec fields no fact reads set otherwise."""
    other = _with(raw, uid="sibling", node="node-sibling")
    spec = other["spec"]
    for field in _LISTS:
        for item in spec.get(field) if type(spec.get(field)) is list else ():
            for name in _UNREAD_OF_ITEMS if isinstance(item, dict) else ():
                if name in item:
                    item[name] = ["otherwise", item[name]]
    spec.update((field, ["otherwise", spec.get(field)]) for field in _UNREAD)
    if type(other["metadata"].get("annotations")) is dict:  # and annotations no fact reads, a pod's own
        other["metadata"]["annotations"].update(CNI_ANNOTATIONS)
    if type(other["metadata"].get("labels")) is dict:  # and labels of its own
        other["metadata"]["labels"].update({"statefulset.kubernetes.io/pod-name": "sibling", "spark-exec-id": "7"})
    return other


def _read_after_a_sibling(raw: dict, compact: bool) -> None:
    """Whatever its spec holds, a pod read, listed or watched, after another of its workload (``_sibling``) is the
    record its whole spec makes read alone: what the facts are read from loses nothing they read."""
    text = json.dumps(raw, separators=(",", ":") if compact else None, ensure_ascii=False).encode()
    raw = orjson.loads(text)
    sibling = _sibling(raw)
    parse_pod(sibling), read_pod(json.dumps(sibling, separators=(",", ":") if compact else None).encode())
    expected = parsed_or_refused(_read_whole, raw)
    assert parsed_or_refused(parse_pod, raw) == expected
    assert parsed_or_refused(read_pod, text) == expected


def test_each_fact_of_a_spec_read_with_its_workloads_facts_is_the_spec_read_whole():
    for raw in _keyed_pods():
        _read_after_a_sibling(raw, compact=True)


@hypothesis.settings(max_examples=300, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(_varied_specs(), st.booleans())
def test_a_pod_read_with_its_workloads_facts_is_the_pod_read_whole(raw, compact):
    _read_after_a_sibling(raw, compact)


class _Traced(dict):
    """A JSON object that notes in ``reads`` each of its fields read, by its ``path`` and the field's name
    (``*``: all of them, as iterating, copying, sizing or comparing it does)."""

    def __init__(self, value: dict, reads: set, path: tuple) -> None:
        super().__init__(value)
        self.reads, self.path = reads, path

    def _read(self, name: object) -> None:
        self.reads.add((*self.path, name))

    def get(self, name, default=None):
        self._read(name)
        return super().get(name, default)

    def __getitem__(self, name):
        self._read(name)
        return super().__getitem__(name)

    def __contains__(self, name):
        self._read(name)
        return super().__contains__(name)

    def _whole(method):
        def whole(self, *args):
            self._read("*")
            return method(self, *args)
        return whole

    keys, values, items, copy = _whole(dict.keys), _whole(dict.values), _whole(dict.items), _whole(dict.copy)
    __iter__, __len__, __or__ = _whole(dict.__iter__), _whole(dict.__len__), _whole(dict.__or__)
    __eq__, __ne__ = _whole(dict.__eq__), _whole(dict.__ne__)
    del _whole
    __hash__ = None


def _fields_read(raw: dict) -> set[tuple]:
    """The fields ``_read_facts`` reads of ``raw``'s whole spec (its node aside) and of its lists' items."""
    reads: set[tuple] = set()
    spec = {name: value for name, value in raw["spec"].items() if name != "nodeName"}
    for field in _LISTS:
        if type(spec.get(field)) is list:
            spec[field] = [_Traced(item, reads, (field,)) if type(item) is dict else item for item in spec[field]]
    pods._read_facts(raw["metadata"], _Traced(spec, reads, ()), raw["metadata"]["namespace"])
    return reads - {("nodeName",)}  # the spec's node is no fact: read apart, for each pod


def _keys(raw: dict) -> set[bytes]:
    """The keys under which reading ``raw`` as watched, then as listed (compact, as orjson writes it), keeps its facts."""
    with mock.patch.object(pods, "_facts", {}):
        parse_pod(raw)
        try:
            read_pod(orjson.dumps(raw))
        except TypeError:  # nested deeper than orjson writes
            pass
        return set(pods._facts)


@hypothesis.settings(max_examples=300, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(_varied_specs())
def test_the_facts_read_no_field_of_a_spec_they_are_not_read_from(raw):
    """Read as the pod's facts are, noting each field read, of its spec and its containers, init containers and
    volumes: each is one they are read from (``_SPEC_READ``), whatever the spec holds."""
    reads = _fields_read(orjson.loads(json.dumps(raw)))
    assert not {(field, *rest) for field, *rest in reads
                if field not in pods._SPEC_READ or rest and rest[0] not in (pods._SPEC_READ[field] or ())}


@hypothesis.settings(max_examples=150, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(_varied_specs())
def test_the_facts_are_keyed_on_every_field_they_read_and_on_no_other(raw):
    """Changing a field the facts read of a spec, or of its containers, init containers and volumes (noted as
    they are read), changes their key; changing one no fact reads (names, images, mounts, the service account,
    ...) does not, where its list is one of objects."""
    raw = orjson.loads(json.dumps(raw))
    reads = _fields_read(raw)
    keys = _keys(raw)
    hypothesis.assume(keys)  # else not kept: its node of another type, or nested deeper than orjson writes
    assert len(keys) == 1  # listed or watched
    spec = raw["spec"]
    for path in reads | {(field,) for field in _UNREAD} | {(field, name) for field in _LISTS for name in _UNREAD_OF_ITEMS}:
        field, *rest = path
        changed = copy.deepcopy(raw)
        if not rest:
            changed["spec"][field] = {"changed": 1}
        elif type(spec.get(field)) is list and any(type(item) is dict for item in spec[field]):
            for item in changed["spec"][field]:
                if type(item) is dict:
                    item[rest[0]] = {"changed": 1}
        else:
            continue
        changed_keys = _keys(changed)
        if path in reads:
            assert changed_keys and changed_keys != keys, path
        elif not rest or all(type(item) is dict for item in spec[field]):
            assert changed_keys == keys, path
