"""Hostile tenants: objects of arbitrary shape and value a user with the right to create them can write
(pods, namespaces, nodes, the scheduler's configmap), and the probe that submits one to kubesim and
then checks the scheduler still schedules: an ordinary canary pod binds, every pod of the scheduler has
an outcome (bound, pending with a reason, or refused), and the health checks pass.

Objects go to kubesim as raw JSON (the official client refuses wrong shapes before sending them); what
kubesim itself refuses never reaches the scheduler, and that is fine. ``CORPUS`` (``corpus.json``) holds
every value that ever crashed something, replayed by the tests as explicit cases.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import urllib.error
import urllib.request
from dataclasses import dataclass

from hypothesis import strategies as st

from tests.coreharness import OPEN_CONFIG as OPEN_QUEUES
from tests.reliability.hostile import ALIAS_BOMB, DEEP_BRACKETS
from tests.reliability.invariants import assert_invariants
from tests.shim.cluster import Cluster
from tests.waiting import wait_for

CORPUS = pathlib.Path(__file__).with_name("corpus.json")
Y = "yunikorn.apache.org/"
POD_ANNOTATIONS = (Y + "task-groups", Y + "task-group-name", Y + "schedulingPolicyParameters", Y + "user.info",
                   Y + "app-id", Y + "queue", Y + "allow-preemption", "yunikorn.apache.org/placeholder",
                   "cni.projectcalico.org/podIP")  # one no fact reads: it still counts for the map's validity
POD_LABELS = ("applicationId", "queue", Y + "app-id", Y + "queue", "disableStateAware", "spark-app-selector",
              "statefulset.kubernetes.io/pod-name", "spark-exec-id")  # the last two: a pod's own, out of the facts' key
NAMESPACE_ANNOTATIONS = (Y + "namespace.quota", Y + "namespace.guaranteed", Y + "namespace.maxApps",
                         Y + "namespace.max.cpu", Y + "namespace.max.memory", Y + "parentqueue")
SETTINGS = ("kubernetes.qps", "kubernetes.burst", "service.placeholderRunAsUser", "service.placeholderFsGroup",
            "service.disableGangScheduling", "service.volumeBindTimeout", "service.instanceTypeNodeLabelKey",
            "service.enableConfigHotRefresh", "health.checkInterval", "log.level")
TASK_GROUP_FIELDS = ("name", "minMember", "minResource", "nodeSelector", "tolerations", "affinity",
                     "topologySpreadConstraints", "labels", "annotations")

# ---- values ------------------------------------------------------------------------------------

_numbers = st.one_of(st.integers(), st.sampled_from([2**31, 2**31 - 1, -(2**31) - 1, 2**63, 2**63 - 1, -1, 0,
                                                    10**21, 2**64]),
                     st.floats(allow_nan=False, allow_infinity=False))
_digits = st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=6)
_numeric_text = st.one_of(_digits, _numbers.map(str), st.sampled_from(["²", "١٢", "+5", " 5", "1_0", "0x10", "1e3",
                                                                      "-0", "NaN", "Inf", "99999999999999999999"]))
_quantities = st.one_of(_numeric_text, st.sampled_from(["1Ei", "8Ei", "7Ei", "9e18", "1e30", "-1", "100m", "4Ei",
                                                        "1.5", ".5", "0.0001m"]))
_json = st.recursive(st.none() | st.booleans() | _numbers | st.text(max_size=8) | _numeric_text,
                     lambda children: st.lists(children, max_size=3)
                     | st.dictionaries(st.text(max_size=8), children, max_size=3), max_leaves=12)
_deep = st.one_of(st.integers(30, 6000).map(lambda n: "[" * n + "]" * n),
                  st.integers(30, 6000).map(lambda n: '{"a":' * n + "1" + "}" * n),
                  st.just(DEEP_BRACKETS))


def _cased(name: str):
    """``name`` in Go's case-insensitive spellings."""
    return st.sampled_from([name, name.upper(), name.lower(), name[:1].upper() + name[1:]])


@st.composite
def task_groups(draw) -> str:
    groups = []
    for _ in range(draw(st.integers(0, 3))):
        group = {"name": "g", "minMember": 1, "minResource": {"cpu": "10m"}}
        for field in draw(st.lists(st.sampled_from(TASK_GROUP_FIELDS), max_size=3)):
            group[draw(_cased(field))] = draw(st.one_of(_json, _numbers, st.dictionaries(
                st.sampled_from(["cpu", "memory", "pods", "vcore", "nvidia.com/gpu"]), _quantities, max_size=3)))
        groups.append(group)
    return draw(st.one_of(st.just(json.dumps(groups)), st.just("null"), _deep, _json.map(json.dumps)))


_annotation_values = st.one_of(st.text(max_size=30), _numeric_text, _json.map(json.dumps), _deep)
_policy = st.lists(st.sampled_from(["placeholderTimeoutInSeconds", "gangSchedulingStyle", "x"]).flatmap(
    lambda key: st.one_of(_numeric_text, st.sampled_from(["Soft", "Hard", ""])).map(lambda v: f"{key}={v}")),
    max_size=3).map(" ".join)


def _annotation(key: str):
    if key.endswith("task-groups"):
        return task_groups()
    if key.endswith("schedulingPolicyParameters"):
        return _policy
    return _annotation_values


# ---- objects -----------------------------------------------------------------------------------

_serial = itertools.count()


def pod_body(name: str, namespace: str = "default", cpu: str = "10m") -> dict:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulerName": "yunikorn", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Mi"}}}]}}


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


@st.composite
def pods(draw) -> dict:
    body = pod_body(f"tenant-{next(_serial)}")
    metadata, spec = body["metadata"], body["spec"]
    for _ in range(draw(st.integers(1, 3))):
        choice = draw(st.sampled_from(["annotation", "label", "annotations", "priority", "affinity", "constraint",
                                       "requests", "overhead", "plain"]))
        if choice == "annotation":
            key = draw(st.sampled_from(POD_ANNOTATIONS))
            metadata["annotations"] = {**_dict(metadata.get("annotations")), key: draw(_annotation(key))}
        elif choice == "label":
            metadata["labels"] = {**_dict(metadata.get("labels")), draw(st.sampled_from(POD_LABELS)): draw(st.text(max_size=20))}
        elif choice == "annotations":
            metadata["annotations"] = draw(_json)
        elif choice == "priority":
            spec["priority"] = draw(st.one_of(_numbers, _json))
        elif choice == "affinity":
            spec["affinity"] = draw(st.one_of(_json, st.fixed_dictionaries({draw(st.sampled_from(
                ["nodeAffinity", "podAffinity", "podAntiAffinity"])): _json})))
        elif choice == "constraint":
            spec[draw(st.sampled_from(["tolerations", "nodeSelector", "topologySpreadConstraints", "volumes",
                                       "priorityClassName", "preemptionPolicy", "overhead"]))] = draw(_json)
        elif choice == "requests":
            spec["containers"] = [{"name": "main", "image": "busybox"}]
            spec["containers"][0]["resources"] = draw(st.one_of(_json, st.fixed_dictionaries({
                draw(st.sampled_from(["requests", "limits"])): st.dictionaries(
                    st.sampled_from(["cpu", "memory", "pods", "example.com/x"]), _quantities, max_size=3)})))
        elif choice == "overhead":
            spec["overhead"] = draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), _quantities, max_size=2))
    return body


@st.composite
def namespaces(draw) -> dict:
    annotations = draw(st.dictionaries(st.sampled_from(NAMESPACE_ANNOTATIONS), _annotation_values, min_size=1,
                                       max_size=3))
    return {"metadata": {"name": f"tenant-ns-{next(_serial)}", "annotations": draw(st.one_of(
        st.just(annotations), _json))}}


@st.composite
def nodes(draw) -> dict:
    allocatable = draw(st.one_of(_json, st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "vcore"]),
                                                        _quantities, max_size=4)))
    return {"metadata": {"name": f"tenant-node-{next(_serial)}",
                         "labels": draw(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=10),
                                                        max_size=3))},
            "spec": {"taints": draw(_json), "unschedulable": draw(_json)},
            "status": {"allocatable": allocatable, "capacity": allocatable,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


@st.composite
def configmaps(draw) -> dict:
    """The scheduler's configmap with something it must refuse: the configuration in force stays."""
    data = {"queues.yaml": draw(st.sampled_from([ALIAS_BOMB, DEEP_BRACKETS, "partitions: [", "partitions: 5"]))}
    if draw(st.booleans()):
        data = {"queues.yaml": OPEN_QUEUES, draw(st.sampled_from(SETTINGS)): draw(st.one_of(
            _digits, st.sampled_from(["-5", "99999999999999999999999", "1_000", "nan", "inf", "²s", "١m"])))}
    shape = draw(st.sampled_from(["data", "wrong-types", "binary"]))
    if shape == "wrong-types":
        data = {**data, draw(st.sampled_from(SETTINGS)): draw(_json.filter(lambda v: not isinstance(v, str)))}
    body = {"metadata": {"name": "yunikorn-configs", "namespace": "default"}, "data": data}
    if shape == "binary":
        body["binaryData"] = {draw(st.sampled_from(["queues.yaml", "queues.yaml.gz"])): draw(st.one_of(
            st.text(max_size=20), _json))}
    return body


KINDS = {"pod": pods(), "namespace": namespaces(), "node": nodes(), "configmap": configmaps()}
# Pods twice: they carry most of what a tenant writes.
hostile_objects = st.one_of(*(strategy.map(lambda body, kind=kind: Case(kind, body))
                              for kind, strategy in [("pod", KINDS["pod"]), *KINDS.items()]))

# ---- the probe ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One object to submit: ``kind`` is pod, namespace, node or configmap."""

    kind: str
    body: dict
    finding: str = ""  # what it once crashed (the corpus)


_PATHS = {"pod": "/api/v1/namespaces/{namespace}/pods", "namespace": "/api/v1/namespaces",
          "node": "/api/v1/nodes", "configmap": "/api/v1/namespaces/default/configmaps/yunikorn-configs"}


class TenantProbe:
    """A cluster with one large node and the scheduler running on ``OPEN_QUEUES``."""

    def __init__(self, cluster: Cluster, rest_url: str) -> None:
        self.cluster, self.rest_url = cluster, rest_url
        self._canaries = itertools.count()
        self._made: list[str] = []  # API paths of what the current case made
        capacity = {"cpu": "1000", "memory": "1000Gi", "pods": "100000"}
        self.cluster.core_api.create_node({
            "metadata": {"name": "stable", "labels": {"kubernetes.io/hostname": "stable"}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]}})

    def submit(self, case: Case) -> int:
        """Send the object as raw JSON; the API's status code (kubesim may refuse it)."""
        body = json.loads(json.dumps(case.body))  # a copy: the case stays as drawn
        if case.kind == "pod":
            body["metadata"]["name"] = f"{body['metadata'].get('name', 'tenant')}-{next(self._canaries)}"
        method = "PUT" if case.kind == "configmap" else "POST"
        path = _PATHS[case.kind].format(namespace=(body.get("metadata") or {}).get("namespace", "default"))
        status = self._request(method, path, body)
        if status >= 300:
            return status
        if case.kind == "pod":
            self._made.append(f"{path}/{body['metadata']['name']}")
        if case.kind == "namespace":  # its annotations reach the core with the application of a pod in it
            namespace = body["metadata"]["name"]
            self.cluster.core_api.create_namespaced_pod(namespace, pod_body(f"in-{namespace}", namespace))
            self._made.append(f"{path}/{namespace}")
        return status

    def _request(self, method: str, path: str, body: dict | None = None) -> int:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.cluster.sim.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    def run(self, case: Case) -> int:
        """Submit ``case`` and :meth:`check`, then delete the pods and namespace it made (so a long run
        does not slow down with them; deleting is exercised too) and undo a configmap case."""
        try:
            status = self.submit(case)
            self.check()
            for path in self._made:
                self._request("DELETE", path)
            return status
        finally:
            self._made.clear()
            if case.kind == "configmap":
                self.restore()

    def check(self, timeout: float = 15.0) -> None:
        """An ordinary pod binds, every pod of the scheduler has an outcome, and health is green."""
        name = f"canary-{next(self._canaries)}"
        self.cluster.core_api.create_namespaced_pod("default", pod_body(name))
        self._made.append(f"/api/v1/namespaces/default/pods/{name}")
        wait_for(lambda: self.cluster.bound(name), timeout=timeout, message=f"the canary {name} to bind")
        assert_invariants(self.cluster.sim, self.rest_url, timeout=timeout)

    def restore(self) -> None:
        """The scheduler's configuration back to ``OPEN_QUEUES`` (a configmap case replaced it)."""
        self.cluster.configure(OPEN_QUEUES, **{"health.checkInterval": "0"})


def corpus() -> list[Case]:
    """Every value that ever crashed something, as cases."""
    return [Case(entry["kind"], entry["body"], entry["finding"]) for entry in json.loads(CORPUS.read_text())]


def record(case: Case, finding: str) -> None:
    """Add a case that crashed something to the corpus (the long run does, on failure)."""
    entries = json.loads(CORPUS.read_text())
    entries.append({"finding": finding, "kind": case.kind, "body": case.body})
    CORPUS.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n")
