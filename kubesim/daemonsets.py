"""The DaemonSet controller of kube-controller-manager, for apps/v1.

A DaemonSet keeps one pod on each node its template admits: the node's labels match the template's
``nodeSelector`` and required node affinity, and its ``NoSchedule`` and ``NoExecute`` taints are
tolerated (the controller adds the tolerations every daemon pod gets: not-ready and unreachable
``NoExecute``, the disk, memory and PID pressure and unschedulable ``NoSchedule`` ones, network-unavailable
with ``hostNetwork``). Each pod is named ``<set>-<5 random characters>`` with a controller owner
reference, the template's labels plus ``controller-revision-hash`` and ``pod-template-generation``, and
the required node affinity ``matchFields metadata.name In [<node>]`` in place of the template's
(as ``ReplaceDaemonSetPodNodeNameNodeAffinity``); the scheduler binds it there. Pods on nodes no longer
admitted, or gone, are deleted; a failed pod is deleted and made again. A template change rolls out as
``OnDelete`` does, whatever the strategy says: pods of the old template are replaced only when deleted.
The status counts desired, current, misscheduled, ready, available (ready is available), unavailable
and updated pods.
"""

from __future__ import annotations

from typing import NamedTuple

from kubesim import errors
from kubesim.deployments import OwnerController, pod_active, pod_from_template, pod_ready, template_hash
from kubesim.resources import DAEMON_SET, NODE, POD
from kubesim.serviceaccounts import controller_user
from kubesim.store import Event, Store, clone
from si.kubernetes import tolerates

REVISION = "controller-revision-hash"
GENERATION = "pod-template-generation"
NODE_NAME_FIELD = "metadata.name"
USER = controller_user("daemon-set-controller")
_DAEMON_TOLERATIONS = (  # AddOrUpdateDaemonPodTolerations
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
_HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                            "effect": "NoSchedule"}


class _Toleration(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str


class _Taint(NamedTuple):
    key: str
    value: str
    effect: str


def daemon_tolerations(pod_spec: dict) -> list[dict]:
    """The pod's tolerations with those every daemon pod gets (an existing one of the same key and effect kept)."""
    tolerations = [t for t in pod_spec.get("tolerations") or () if isinstance(t, dict)]
    added = [*_DAEMON_TOLERATIONS, *((_HOST_NETWORK_TOLERATION,) if pod_spec.get("hostNetwork") else ())]
    for toleration in added:
        if not any((t.get("key"), t.get("effect")) == (toleration["key"], toleration["effect"]) for t in tolerations):
            tolerations.append(dict(toleration))
    return tolerations


def admits(pod_spec: dict, node: dict) -> bool:
    """Whether a daemon pod of this spec should run on ``node`` (``NodeShouldRunDaemonPod``)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = pod_spec.get("nodeSelector") or {}
    if not isinstance(selector, dict) or any(labels.get(k) != v for k, v in selector.items()):
        return False
    if pod_spec.get("nodeName") and pod_spec["nodeName"] != node["metadata"]["name"]:
        return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if isinstance(required, dict) and not any(_term_matches(term, node) for term in
                                              required.get("nodeSelectorTerms") or ()):
        return False
    tolerations = [_Toleration(t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "",
                               t.get("effect") or "") for t in daemon_tolerations(pod_spec)]
    for taint in (node.get("spec") or {}).get("taints") or ():
        if not isinstance(taint, dict):
            continue
        seen = _Taint(taint.get("key") or "", taint.get("value") or "", taint.get("effect") or "")
        if seen.effect in ("NoSchedule", "NoExecute") and not any(tolerates(t, seen) for t in tolerations):
            return False
    return True


def _term_matches(term, node: dict) -> bool:
    """A node selector term: every expression over the labels and field over the name (an empty term matches
    no node)."""
    if not isinstance(term, dict):
        return False
    labels = node["metadata"].get("labels") or {}
    expressions = [(e, labels) for e in term.get("matchExpressions") or ()]
    fields = [(f, {NODE_NAME_FIELD: node["metadata"]["name"]}) for f in term.get("matchFields") or ()]
    return bool(expressions or fields) and all(_requirement_holds(r, values) for r, values in expressions + fields)


def _requirement_holds(requirement, values: dict) -> bool:
    if not isinstance(requirement, dict):
        return False
    key, operator, wanted = requirement.get("key"), requirement.get("operator"), requirement.get("values") or []
    value = values.get(key)
    if operator == "In":
        return value in wanted
    if operator == "NotIn":
        return value not in wanted
    if operator == "Exists":
        return key in values
    if operator == "DoesNotExist":
        return key not in values
    if operator in ("Gt", "Lt") and len(wanted) == 1:
        try:
            have, bound = int(value), int(wanted[0])
        except (TypeError, ValueError):
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def target_node(pod: dict) -> str | None:
    """The node a daemon pod is for: where it is bound, else its ``metadata.name`` affinity (``GetTargetNodeName``)."""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"]
    affinity = pod["spec"].get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") \
        if isinstance(node_affinity, dict) else None
    for term in required.get("nodeSelectorTerms") or () if isinstance(required, dict) else ():
        for field in term.get("matchFields") or () if isinstance(term, dict) else ():
            values = field.get("values") if isinstance(field, dict) else None
            if field.get("key") == NODE_NAME_FIELD and field.get("operator") == "In" and isinstance(values, list) \
                    and len(values) == 1 and isinstance(values[0], str):
                return values[0]
    return None


def node_affinity_for(affinity: dict | None, node: str) -> dict:
    """The pod's affinity with its required node terms replaced by the one naming ``node``."""
    affinity = clone(affinity) if isinstance(affinity, dict) else {}
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}]}
    return affinity


class DaemonSetController(OwnerController):
    owner_kind, dependent_kind = DAEMON_SET, POD

    def __init__(self, store: Store, api) -> None:
        super().__init__("kubesim-daemonset-controller", store, api)
        self._sets: set[tuple[str, str]] = set()  # (namespace, name) of every DaemonSet

    def start(self) -> None:
        with self._store.lock:
            self._sets.update((d["metadata"]["namespace"], d["metadata"]["name"])
                              for d in self._store.list(DAEMON_SET)[0])
            super().start()

    def _on_event(self, event: Event) -> None:
        super()._on_event(event)
        if event.kind is DAEMON_SET:
            key = (event.new["metadata"]["namespace"], event.new["metadata"]["name"])
            (self._sets.discard if event.type == "DELETED" else self._sets.add)(key)
        elif event.kind is NODE and (event.type != "MODIFIED" or _placement(event.old) != _placement(event.new)):
            for key in self._sets:
                self.schedule(key)

    def handle(self, item) -> None:
        namespace, name = item
        with self._store.lock:
            daemon_set = self._store.find(DAEMON_SET, namespace, name)
            if daemon_set is None:
                return
            template_spec = daemon_set["spec"]["template"]["spec"]
            nodes = {node["metadata"]["name"]: node for node in self._store.list(NODE)[0]}
            wanted = {node for node, obj in nodes.items() if admits(template_spec, obj)}
            by_node: dict[str | None, list[dict]] = {}
            for pod in self._dependents(daemon_set):
                by_node.setdefault(target_node(pod), []).append(pod)
            if not daemon_set["metadata"].get("deletionTimestamp"):
                self._sync(daemon_set, wanted, by_node)
            self._status(daemon_set, wanted)

    def _sync(self, daemon_set: dict, wanted: set[str], by_node: dict[str | None, list[dict]]) -> None:
        for node, pods in by_node.items():
            live = [p for p in pods if pod_active(p) or (p.get("status") or {}).get("phase") == "Succeeded"]
            for pod in pods:
                if (pod.get("status") or {}).get("phase") == "Failed" and not pod["metadata"].get("deletionTimestamp"):
                    self._delete(pod)  # made again once it is gone
            if node not in wanted:
                for pod in live:
                    self._delete(pod)
            else:
                oldest_first = sorted(live, key=lambda p: p["metadata"].get("creationTimestamp") or "")
                for pod in oldest_first[1:]:
                    self._delete(pod)
        for node in sorted(wanted - by_node.keys()):
            if not self._create(daemon_set, node):
                return

    def _create(self, daemon_set: dict, node: str) -> bool:
        meta = daemon_set["metadata"]
        pod = pod_from_template(daemon_set, DAEMON_SET, labels={
            REVISION: template_hash(daemon_set["spec"]["template"]), GENERATION: str(meta.get("generation", 1))})
        pod["spec"]["tolerations"] = daemon_tolerations(pod["spec"])
        pod["spec"]["affinity"] = node_affinity_for(pod["spec"].get("affinity"), node)
        try:
            self._api.create(POD, meta["namespace"], pod, user=USER)
        except errors.ApiError as error:
            self._retry_later(daemon_set, error)
            return False
        return True

    def _status(self, daemon_set: dict, wanted: set[str]) -> None:
        revision = template_hash(daemon_set["spec"]["template"])
        scheduled = misscheduled = ready = updated = 0
        placed: set[str] = set()
        for pod in self._dependents(daemon_set):
            node = target_node(pod)
            if not pod_active(pod) or node in placed:
                continue
            placed.add(node)
            if node not in wanted:
                misscheduled += 1
                continue
            scheduled += 1
            ready += pod_ready(pod)
            updated += (pod["metadata"].get("labels") or {}).get(REVISION) == revision
        status = clone(daemon_set.get("status") or {})
        status.update(desiredNumberScheduled=len(wanted), currentNumberScheduled=scheduled,
                      numberMisscheduled=misscheduled, numberReady=ready)
        for field, value in (("numberAvailable", ready), ("numberUnavailable", len(wanted) - ready),
                             ("updatedNumberScheduled", updated)):
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        self._write_status(daemon_set, status)


def _placement(node: dict | None) -> tuple:
    """What of a node decides which daemon pods it takes."""
    if node is None:
        return ()
    return (node["metadata"].get("labels"), (node.get("spec") or {}).get("taints"))
