"""The Deployment and ReplicaSet controllers of kube-controller-manager, for apps/v1.

A ReplicaSet keeps ``replicas`` active pods (not finished, not terminating) that it controls: it makes
them from its template, named ``<replicaset>-<5 random characters>`` with a controller owner reference,
replaces those deleted, evicted or failed, and deletes the surplus when scaled down (unscheduled, then
pending, then not ready, then the youngest first). Its status counts ``replicas``,
``fullyLabeledReplicas``, ``readyReplicas`` and ``availableReplicas`` (``minReadySeconds`` is not played:
ready is available). Orphaned pods matching its selector are not adopted.

A Deployment owns one ReplicaSet per pod template: ``<deployment>-<pod-template-hash>``, whose selector,
labels and template carry the ``pod-template-hash`` label, with the ``deployment.kubernetes.io/revision``
annotation. Scaling the Deployment scales its current ReplicaSet. A template change rolls out as
``Recreate`` does, whatever the strategy says: the old ReplicaSets are scaled to 0, and the new one gets
its replicas once their pods are gone. The status adds ``updatedReplicas`` and ``unavailableReplicas``,
and the ``Available`` and ``Progressing`` conditions. Pausing, revision history limits and progress
deadlines are not played.

A pod or ReplicaSet a controller cannot make (an admission webhook refuses it, say) is tried again a
second later; the refusal is a ``FailedCreate`` Warning event on the owner, as kube-controller-manager
records it (``Error creating: <why>`` for a pod).

The defaults and validation of every apps/v1 workload, and the base its controllers share (an owner
syncing from its own events and its dependents'), are here too.
"""

from __future__ import annotations

import hashlib
import logging

import orjson

from kubesim import errors, priority
from kubesim.resources import (
    BY_PLURAL,
    DAEMON_SET,
    DEPLOYMENT,
    NAMESPACE,
    POD,
    REPLICA_SET,
    STATEFUL_SET,
    Kind,
)
from kubesim.selectors import label_selector
from kubesim.serviceaccounts import controller_user
from kubesim.store import Event, Store, clone, now_rfc3339
from kubesim.worker import Worker

log = logging.getLogger(__name__)
TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
RETRY_SECONDS = 1.0
EVENT = BY_PLURAL["events"]
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.SafeEncodeString
_TERMINAL = ("Succeeded", "Failed")


def default_workload(kind: Kind, obj: dict) -> None:
    """The API server's defaults for a new apps/v1 workload (before validation)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind is not DAEMON_SET:
        spec.setdefault("replicas", 1)
    if kind is not STATEFUL_SET:
        spec.setdefault("minReadySeconds", 0)
    if kind is not REPLICA_SET:
        spec.setdefault("revisionHistoryLimit", 10)
    if kind is DEPLOYMENT:
        spec.setdefault("strategy", {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        spec.setdefault("progressDeadlineSeconds", 600)
    elif kind is STATEFUL_SET:
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    elif kind is DAEMON_SET:
        spec.setdefault("updateStrategy", {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        template["spec"].setdefault("restartPolicy", "Always")
        template["spec"].setdefault("terminationGracePeriodSeconds", 30)
        template["spec"].setdefault("schedulerName", "default-scheduler")


def initial_status(kind: Kind) -> dict:
    """A new workload's status: the counts its Go type does not omit when zero."""
    if kind is REPLICA_SET or kind is STATEFUL_SET:
        return {"replicas": 0, "availableReplicas": 0} if kind is STATEFUL_SET else {"replicas": 0}
    if kind is DAEMON_SET:
        return dict.fromkeys(("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                              "numberReady"), 0)
    return {}


# Where a field the controllers read must have its JSON type, or kube-apiserver cannot decode the object:
# (path below spec, Python type, Go struct field's struct, Go type; a list's "[]" type applies to its items).
_POD_TEMPLATE_SHAPES = (
    (("template",), dict, "{kind}Spec", "v1.PodTemplateSpec"),
    (("template", "metadata"), dict, "PodTemplateSpec", "v1.ObjectMeta"),
    (("template", "metadata", "labels"), dict, "ObjectMeta", "map[string]string"),
    (("template", "metadata", "annotations"), dict, "ObjectMeta", "map[string]string"),
    (("template", "spec"), dict, "PodTemplateSpec", "v1.PodSpec"),
    (("template", "spec", "nodeSelector"), dict, "PodSpec", "map[string]string"),
    (("template", "spec", "tolerations"), list, "PodSpec", "[]v1.Toleration"),
    (("template", "spec", "affinity"), dict, "PodSpec", "v1.Affinity"),
    (("template", "spec", "affinity", "nodeAffinity"), dict, "Affinity", "v1.NodeAffinity"),
    (("template", "spec", "volumes"), list, "PodSpec", "[]v1.Volume"),
)
_SHAPES = {
    "StatefulSet": (
        (("serviceName",), str, "StatefulSetSpec", "string"),
        (("ordinals",), dict, "StatefulSetSpec", "v1.StatefulSetOrdinals"),
        (("ordinals", "start"), int, "StatefulSetOrdinals", "int32"),
        (("updateStrategy",), dict, "StatefulSetSpec", "v1.StatefulSetUpdateStrategy"),
        (("updateStrategy", "rollingUpdate"), dict, "StatefulSetUpdateStrategy", "v1.RollingUpdateStatefulSetStrategy"),
        (("updateStrategy", "rollingUpdate", "partition"), int, "RollingUpdateStatefulSetStrategy", "int32"),
        (("volumeClaimTemplates",), list, "StatefulSetSpec", "[]v1.PersistentVolumeClaim"),
    ),
    "DaemonSet": ((("updateStrategy",), dict, "DaemonSetSpec", "v1.DaemonSetUpdateStrategy"),),
}
_SHAPES["CronJob"] = (
    (("timeZone",), str, "CronJobSpec", "string"),
    (("jobTemplate",), dict, "CronJobSpec", "v1.JobTemplateSpec"),
    (("jobTemplate", "metadata"), dict, "JobTemplateSpec", "v1.ObjectMeta"),
    (("jobTemplate", "metadata", "labels"), dict, "ObjectMeta", "map[string]string"),
    (("jobTemplate", "metadata", "annotations"), dict, "ObjectMeta", "map[string]string"),
    (("jobTemplate", "spec"), dict, "JobTemplateSpec", "v1.JobSpec"),
    *((("jobTemplate", "spec", *path), wanted, "JobSpec" if struct == "{kind}Spec" else struct, go_type)
      for path, wanted, struct, go_type in _POD_TEMPLATE_SHAPES),
)
_ITEM_TYPES = {"[]v1.Toleration": (dict, "v1.Toleration"), "[]v1.Volume": (dict, "v1.Volume"),
               "[]v1.PersistentVolumeClaim": (dict, "v1.PersistentVolumeClaim"), "map[string]string": (str, "string")}
_STRATEGIES = {"StatefulSet": ("OnDelete", "RollingUpdate"), "DaemonSet": ("OnDelete", "RollingUpdate")}


def check_decodable(kind: Kind, spec: dict) -> None:
    """kube-apiserver's 400 for a field the workload's controller reads that has the wrong JSON type."""
    shapes = _SHAPES[kind.kind] if kind.kind == "CronJob" else _POD_TEMPLATE_SHAPES + _SHAPES.get(kind.kind, ())
    for path, wanted, struct, go_type in shapes:
        value = spec
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        field = f"{struct.format(kind=kind.kind)}.spec.{'.'.join(path)}"
        item = _ITEM_TYPES.get(go_type)
        if not isinstance(value, wanted) or wanted is int and isinstance(value, bool):
            raise priority.undecodable(kind, value, field, go_type)
        if item is not None:
            for element in value.values() if isinstance(value, dict) else value:
                if not isinstance(element, item[0]):
                    raise priority.undecodable(kind, element, field, item[1])


def validate_workload(obj: dict, kind: Kind = DEPLOYMENT) -> list[tuple[str, str]]:
    """Field errors of an apps/v1 workload (the API server's validation, for what the controllers read)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec.selector", "Required value")]
    check_decodable(kind, spec)
    causes = _strategy_errors(kind, spec)
    replicas = spec.get("replicas")
    if kind is not DAEMON_SET and (not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0):
        causes.append(("spec.replicas", f"Invalid value: {replicas!r}: must be greater than or equal to 0"))
    if kind is STATEFUL_SET and spec.get("podManagementPolicy") not in ("OrderedReady", "Parallel"):
        causes.append(("spec.podManagementPolicy", f'Unsupported value: "{spec.get("podManagementPolicy")}": '
                                                   'supported values: "OrderedReady", "Parallel"'))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return [*causes, ("spec.selector", "Required value")]
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        named = "deployment" if kind is REPLICA_SET else kind.kind.lower()  # a ReplicaSet's says deployment too
        return [*causes, ("spec.selector", f"Invalid value: {{}}: empty selector is invalid for {named}")]
    template = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return [*causes, ("spec.template.spec", "Required value")]
    labels = (template.get("metadata") or {}).get("labels")
    try:
        matches = isinstance(labels, dict) and label_selector(_selector_text(selector))({"metadata": {"labels": labels}})
    except errors.ApiError as error:
        return [*causes, ("spec.selector", f"Invalid value: {error.message}")]
    if not matches:
        causes.append(("spec.template.metadata.labels", f"Invalid value: {orjson.dumps(labels).decode()}: "
                                                        "`selector` does not match template `labels`"))
    if not template["spec"].get("containers"):
        causes.append(("spec.template.spec.containers", "Required value"))
    if template["spec"].get("restartPolicy", "Always") != "Always":
        causes.append(("spec.template.spec.restartPolicy", 'Unsupported value: supported values: "Always"'))
    return causes


def _strategy_errors(kind: Kind, spec: dict) -> list[tuple[str, str]]:
    """The 422s of a StatefulSet's or DaemonSet's update strategy, ordinals and claim templates."""
    causes = []
    strategy = spec.get("updateStrategy") or {}
    if kind.kind in _STRATEGIES and strategy.get("type") not in _STRATEGIES[kind.kind]:
        causes.append(("spec.updateStrategy.type", f'Unsupported value: "{strategy.get("type")}": supported values: '
                                                   '"OnDelete", "RollingUpdate"'))
    for field, value in (("spec.ordinals.start", (spec.get("ordinals") or {}).get("start")),
                         ("spec.updateStrategy.rollingUpdate.partition",
                          (strategy.get("rollingUpdate") or {}).get("partition"))):
        if kind is STATEFUL_SET and value is not None and value < 0:
            causes.append((field, f"Invalid value: {value}: must be greater than or equal to 0"))
    for index, claim in enumerate(spec.get("volumeClaimTemplates") or () if kind is STATEFUL_SET else ()):
        if not isinstance(claim.get("metadata"), dict) or not claim["metadata"].get("name"):
            causes.append((f"spec.volumeClaimTemplates[{index}].metadata.name", "Required value"))
    return causes


def template_hash(template: dict) -> str:
    """A name-safe hash of a pod template, shaped as kube-controller-manager's (fnv-32a, safe-encoded)."""
    value = 0x811C9DC5
    for byte in orjson.dumps(template, option=orjson.OPT_SORT_KEYS):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(digit) % len(_SAFE_ALPHABET)] for digit in str(value))


def _selector_text(selector: dict) -> str:
    """A LabelSelector as the ``labelSelector`` query says it."""
    parts = [f"{key}={value}" for key, value in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or ()
        if operator in ("In", "NotIn"):
            parts.append(f"{key} {operator.lower()} ({','.join(values)})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def controller_ref(meta: dict, owner_kind: Kind) -> dict | None:
    """The object's controller owner reference to an owner of ``owner_kind``, if it has one."""
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("kind") == owner_kind.kind \
                and ref.get("apiVersion") == owner_kind.group_version:
            return ref
    return None


def owner_ref(owner: dict, owner_kind: Kind) -> dict:
    return {"apiVersion": owner_kind.group_version, "kind": owner_kind.kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def pod_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def pod_active(pod: dict) -> bool:
    """Not finished and not terminating."""
    return (pod.get("status") or {}).get("phase") not in _TERMINAL and not pod["metadata"].get("deletionTimestamp")


def pod_from_template(owner: dict, owner_kind: Kind, name: str = "", labels: dict | None = None) -> dict:
    """A pod of ``owner`` made from its template: the template's labels (and ``labels``) and annotations, a
    controller owner reference, named ``name`` or else ``<owner>-<5 random characters>``."""
    template = clone(owner["spec"]["template"])
    template_meta = template.get("metadata") or {}
    meta = {"name": name} if name else {"generateName": f"{owner['metadata']['name']}-"}
    meta.update(labels={**(template_meta.get("labels") or {}), **(labels or {})},
                ownerReferences=[owner_ref(owner, owner_kind)])
    if template_meta.get("annotations"):
        meta["annotations"] = template_meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


def set_counts(status: dict, counts: dict[str, int]) -> None:
    """Counts as the API writes them: zero ones omitted, but ``replicas`` always there."""
    for field, value in counts.items():
        if value or field == "replicas":
            status[field] = value
        else:
            status.pop(field, None)


class OwnerController(Worker):
    """Syncs one kind of owner (``owner_kind``) from its own events and those of its dependents."""

    owner_kind: Kind
    dependent_kind: Kind

    def __init__(self, name: str, store: Store, api) -> None:
        super().__init__(name)
        self._store = store
        self._api = api
        self._owned: dict[str, set[str]] = {}  # owner uid -> the names of the dependents it controls

    def start(self) -> None:
        with self._store.lock:
            for owner in self._store.list(self.owner_kind)[0]:
                self.schedule((owner["metadata"]["namespace"], owner["metadata"]["name"]))
            for dependent in self._store.list(self.dependent_kind)[0]:
                ref = controller_ref(dependent["metadata"], self.owner_kind)
                if ref is not None:
                    self._owned.setdefault(ref["uid"], set()).add(dependent["metadata"]["name"])
            self._store.listeners.append(self._on_event)
        super().start()

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: note which owner to sync, and which dependents each controls."""
        meta = event.new["metadata"]
        if event.kind is self.owner_kind:
            if event.type == "DELETED":
                self._owned.pop(meta["uid"], None)
            else:
                self.schedule((meta["namespace"], meta["name"]))
        elif event.kind is self.dependent_kind:
            before = controller_ref(event.old["metadata"], self.owner_kind) if event.old else None
            owner = controller_ref(meta, self.owner_kind)
            if before is not None and (owner is None or event.type == "DELETED"):
                self._owned.get(before["uid"], set()).discard(meta["name"])
            if owner is not None:
                if event.type != "DELETED":
                    self._owned.setdefault(owner["uid"], set()).add(meta["name"])
                self.schedule((meta["namespace"], owner["name"]))

    def _dependents(self, owner: dict) -> list[dict]:
        namespace, uid = owner["metadata"]["namespace"], owner["metadata"]["uid"]
        found = (self._store.find(self.dependent_kind, namespace, name) for name in self._owned.get(uid, ()))
        return [obj for obj in found
                if obj is not None and (controller_ref(obj["metadata"], self.owner_kind) or {}).get("uid") == uid]

    def _write_status(self, owner: dict, status: dict) -> None:
        status["observedGeneration"] = owner["metadata"].get("generation", 1)
        if status != owner.get("status"):
            updated = clone(owner)
            updated["status"] = status
            self._store.replace(self.owner_kind, owner["metadata"]["namespace"], owner["metadata"]["name"],
                                updated, None)

    def _delete(self, dependent: dict) -> None:
        try:
            self._api.delete(self.dependent_kind, dependent["metadata"]["namespace"], dependent["metadata"]["name"])
        except errors.ApiError:
            pass  # already gone

    def _retry_later(self, owner: dict, error: errors.ApiError, message: str | None = None) -> None:
        """As kube-controller-manager: a ``FailedCreate`` Warning event on the owner (``message``, else
        ``Error creating: <why>``; the same message again counts up on one event), and another try later."""
        meta = owner["metadata"]
        message = message or f"Error creating: {error.message}"
        log.info("%s %s/%s: %s", self.owner_kind.kind, meta["namespace"], meta["name"], message)
        now = now_rfc3339()
        name = f"{meta['name']}.{hashlib.sha1(message.encode()).hexdigest()[:16]}"
        with self._store.lock:
            seen = self._store.find(EVENT, meta["namespace"], name)
            if seen is not None:
                counted = clone(seen)
                counted.update(count=seen.get("count", 1) + 1, lastTimestamp=now)
                self._store.replace(EVENT, meta["namespace"], name, counted, None)
            elif self._store.find(NAMESPACE, "", meta["namespace"]) is not None:
                component = f"{self.owner_kind.kind.lower()}-controller"  # replicaset-controller, ...
                self._store.create(EVENT, meta["namespace"], {
                    "metadata": {"name": name, "namespace": meta["namespace"]},
                    "involvedObject": {"kind": self.owner_kind.kind, "namespace": meta["namespace"],
                                       "name": meta["name"], "uid": meta["uid"],
                                       "apiVersion": self.owner_kind.group_version,
                                       "resourceVersion": meta.get("resourceVersion", "")},
                    "reason": "FailedCreate", "message": message, "source": {"component": component},
                    "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": "Warning", "eventTime": None,
                    "reportingComponent": component, "reportingInstance": ""})
        self.schedule((meta["namespace"], meta["name"]), RETRY_SECONDS)


class ReplicaSetController(OwnerController):
    owner_kind, dependent_kind = REPLICA_SET, POD

    def __init__(self, store: Store, api) -> None:
        super().__init__("kubesim-replicaset-controller", store, api)

    def handle(self, item) -> None:
        namespace, name = item
        with self._store.lock:
            replica_set = self._store.find(REPLICA_SET, namespace, name)
            if replica_set is None:
                return
            active = [pod for pod in self._dependents(replica_set) if pod_active(pod)]
            wanted = replica_set["spec"].get("replicas", 1)
            if not replica_set["metadata"].get("deletionTimestamp"):
                for _ in range(wanted - len(active)):
                    try:
                        active.append(self._api.create(POD, namespace, pod_from_template(replica_set, REPLICA_SET),
                                                       user=controller_user("replicaset-controller"))[1])
                    except errors.ApiError as error:
                        self._retry_later(replica_set, error)
                        break
                for pod in sorted(active, key=_deletion_rank)[:max(len(active) - wanted, 0)]:
                    self._delete(pod)
                    active.remove(pod)
            selector = (replica_set["spec"].get("template") or {}).get("metadata", {}).get("labels") or {}
            ready = sum(1 for pod in active if pod_ready(pod))
            status = clone(replica_set.get("status") or {})
            set_counts(status, {"replicas": len(active), "fullyLabeledReplicas": sum(
                1 for pod in active if selector.items() <= (pod["metadata"].get("labels") or {}).items()),
                "readyReplicas": ready, "availableReplicas": ready})
            self._write_status(replica_set, status)


def _deletion_rank(pod: dict) -> tuple:
    """Which surplus pod goes first, as the ReplicaSet controller ranks them."""
    status = pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase"), 0)
    created = pod["metadata"].get("creationTimestamp") or ""
    return (bool(pod["spec"].get("nodeName")), phase_rank, pod_ready(pod),
            tuple(-ord(c) for c in created))  # the youngest first


class DeploymentController(OwnerController):
    owner_kind, dependent_kind = DEPLOYMENT, REPLICA_SET

    def __init__(self, store: Store, api) -> None:
        super().__init__("kubesim-deployment-controller", store, api)

    def handle(self, item) -> None:
        namespace, name = item
        with self._store.lock:
            deployment = self._store.find(DEPLOYMENT, namespace, name)
            if deployment is None:
                return
            owned = self._dependents(deployment)
            template_hash_now = template_hash(deployment["spec"]["template"])
            current = next((rs for rs in owned
                            if (rs["metadata"].get("labels") or {}).get(TEMPLATE_HASH) == template_hash_now), None)
            old = [rs for rs in owned if rs is not current]
            if not deployment["metadata"].get("deletionTimestamp"):
                for replica_set in old:
                    self._scale(replica_set, 0)
                draining = any((rs.get("status") or {}).get("replicas") for rs in old)
                wanted = 0 if draining else deployment["spec"].get("replicas", 1)
                if current is None:
                    current = self._create(deployment, owned, template_hash_now, wanted)
                elif current["spec"].get("replicas") != wanted:
                    current = self._scale(current, wanted)
            self._status(deployment, current, old)

    def _create(self, deployment: dict, owned: list[dict], hash_: str, replicas: int) -> dict | None:
        meta, spec = deployment["metadata"], deployment["spec"]
        template = clone(spec["template"])
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), TEMPLATE_HASH: hash_}
        selector = clone(spec["selector"])
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), TEMPLATE_HASH: hash_}
        revision = 1 + max((int((rs["metadata"].get("annotations") or {}).get(REVISION, "0") or 0) for rs in owned),
                           default=0)
        replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                       "metadata": {"name": f"{meta['name']}-{hash_}", "labels": template_meta["labels"],
                                    "annotations": {REVISION: str(revision),
                                                    "deployment.kubernetes.io/desired-replicas":
                                                        str(spec.get("replicas", 1))},
                                    "ownerReferences": [owner_ref(deployment, DEPLOYMENT)]},
                       "spec": {"replicas": replicas, "minReadySeconds": spec.get("minReadySeconds", 0),
                                "selector": selector, "template": template}}
        try:
            return self._api.create(REPLICA_SET, meta["namespace"], replica_set,
                                    user=controller_user("deployment-controller"))[1]
        except errors.ApiError as error:
            self._retry_later(deployment, error, f'Failed to create new replica set '
                                                 f'"{replica_set["metadata"]["name"]}": {error.message}')
            return None

    def _scale(self, replica_set: dict, replicas: int) -> dict:
        if replica_set["spec"].get("replicas") == replicas:
            return replica_set
        updated = clone(replica_set)
        updated["spec"]["replicas"] = replicas
        meta = replica_set["metadata"]
        return self._store.replace(REPLICA_SET, meta["namespace"], meta["name"], updated, None)

    def _status(self, deployment: dict, current: dict | None, old: list[dict]) -> None:
        every = [rs.get("status") or {} for rs in ([current] if current else []) + old]
        replicas = sum(s.get("replicas", 0) for s in every)
        available = sum(s.get("availableReplicas", 0) for s in every)
        updated = (current.get("status") or {}).get("replicas", 0) if current else 0
        wanted = deployment["spec"].get("replicas", 1)
        status = clone(deployment.get("status") or {})
        set_counts(status, {"replicas": replicas, "updatedReplicas": updated,
                             "readyReplicas": sum(s.get("readyReplicas", 0) for s in every),
                             "availableReplicas": available,
                             "unavailableReplicas": max(wanted - available, 0)})
        name = current["metadata"]["name"] if current else ""
        done = current is not None and not old_pods(old) and updated == wanted and available >= wanted
        conditions = {c.get("type"): c for c in status.get("conditions") or ()}
        _condition(conditions, "Available", available >= wanted,
                   *(("MinimumReplicasAvailable", "Deployment has minimum availability.") if available >= wanted
                     else ("MinimumReplicasUnavailable", "Deployment does not have minimum availability.")))
        _condition(conditions, "Progressing", True,
                   *(("NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully progressed.') if done
                     else ("ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.')))
        status["conditions"] = [conditions[t] for t in ("Available", "Progressing")]
        self._write_status(deployment, status)


def old_pods(old: list[dict]) -> int:
    return sum((rs.get("status") or {}).get("replicas", 0) for rs in old)


def _condition(conditions: dict, type_: str, held: bool, reason: str, message: str) -> None:
    now = now_rfc3339()
    before = conditions.get(type_) or {}
    status = "True" if held else "False"
    if (before.get("status"), before.get("reason"), before.get("message")) == (status, reason, message):
        return
    conditions[type_] = {"type": type_, "status": status, "lastUpdateTime": now,
                         "lastTransitionTime": before.get("lastTransitionTime", now) if before.get("status") == status
                         else now, "reason": reason, "message": message}
