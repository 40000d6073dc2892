"""The StatefulSet controller of kube-controller-manager, for apps/v1.

A StatefulSet keeps ``replicas`` pods named ``<set>-<ordinal>`` (ordinals from ``spec.ordinals.start``,
0 by default), each with a controller owner reference, the template's labels plus
``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``,
``hostname`` set to its name and ``subdomain`` to ``serviceName``. Each ``volumeClaimTemplates`` entry
becomes a claim ``<template>-<pod>`` mounted as the volume of that name (claims are retained when pods
go). Under ``OrderedReady`` (the default) a pod is made only once every lower one is Running and Ready,
and scaling down deletes the highest ordinal first, one at a time; under ``Parallel`` all are made or
deleted at once. A failed pod is deleted and made again. A template change rolls out as
``RollingUpdate`` does: from the highest ordinal down to ``partition``, one pod at a time, each once all
are ready (under ``OnDelete``, a pod takes the new template only when deleted). The status counts ``replicas``, ``readyReplicas``, ``availableReplicas`` (``minReadySeconds``
is not played: ready is available), ``currentReplicas`` and ``updatedReplicas``, with the revisions.
"""

from __future__ import annotations

from kubesim import errors
from kubesim.deployments import OwnerController, pod_from_template, pod_ready, template_hash
from kubesim.resources import BY_PLURAL, POD, STATEFUL_SET
from kubesim.serviceaccounts import controller_user
from kubesim.store import Store, clone

POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
REVISION = "controller-revision-hash"
CLAIM = BY_PLURAL["persistentvolumeclaims"]
USER = controller_user("statefulset-controller")


def _ordinal(set_name: str, pod: dict) -> int | None:
    suffix = pod["metadata"]["name"][len(set_name) + 1:]
    return int(suffix) if pod["metadata"]["name"].startswith(f"{set_name}-") and suffix.isdigit() else None


def _running_and_ready(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod) \
        and not pod["metadata"].get("deletionTimestamp")


class StatefulSetController(OwnerController):
    owner_kind, dependent_kind = STATEFUL_SET, POD

    def __init__(self, store: Store, api) -> None:
        super().__init__("kubesim-statefulset-controller", store, api)

    def handle(self, item) -> None:
        namespace, name = item
        with self._store.lock:
            stateful_set = self._store.find(STATEFUL_SET, namespace, name)
            if stateful_set is None:
                return
            spec = stateful_set["spec"]
            revision = f"{name}-{template_hash(spec['template'])}"
            pods = {}
            for pod in self._dependents(stateful_set):
                ordinal = _ordinal(name, pod)
                if ordinal is not None:
                    pods[ordinal] = pod
            if not stateful_set["metadata"].get("deletionTimestamp"):
                self._sync(stateful_set, pods, revision)
            self._status(stateful_set, revision)

    def _sync(self, stateful_set: dict, pods: dict[int, dict], revision: str) -> None:
        spec = stateful_set["spec"]
        start = (spec.get("ordinals") or {}).get("start", 0)
        wanted = range(start, start + spec.get("replicas", 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is not None and (pod.get("status") or {}).get("phase") == "Failed" \
                    and not pod["metadata"].get("deletionTimestamp"):
                self._delete(pod)  # made again once it is gone
                if ordered:
                    return
            elif pod is None:
                if not self._create(stateful_set, ordinal, revision) or ordered:
                    return
            elif ordered and not _running_and_ready(pod):
                return
        surplus = sorted((o for o in pods if o not in wanted), reverse=True)
        for ordinal in surplus[:1] if ordered else surplus:
            if not pods[ordinal]["metadata"].get("deletionTimestamp"):
                self._delete(pods[ordinal])
        if surplus or (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") != "RollingUpdate":
            return
        if not all(ordinal in pods and _running_and_ready(pods[ordinal]) for ordinal in wanted):
            return
        partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition", 0)
        stale = [o for o in reversed(wanted) if o - start >= partition
                 and (pods[o]["metadata"].get("labels") or {}).get(REVISION) != revision]
        if stale:
            self._delete(pods[stale[0]])

    def _create(self, stateful_set: dict, ordinal: int, revision: str) -> bool:
        meta, spec = stateful_set["metadata"], stateful_set["spec"]
        name = f"{meta['name']}-{ordinal}"
        pod = pod_from_template(stateful_set, STATEFUL_SET, name, {REVISION: revision, POD_NAME: name,
                                                                    POD_INDEX: str(ordinal)})
        pod_spec = pod["spec"]
        pod_spec["hostname"] = name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        try:
            for claim_template in spec.get("volumeClaimTemplates") or ():
                claim_name = self._claim(stateful_set, claim_template, name)
                volumes = [v for v in pod_spec.get("volumes") or () if v.get("name") != claim_template["metadata"]["name"]]
                pod_spec["volumes"] = [*volumes, {"name": claim_template["metadata"]["name"],
                                                  "persistentVolumeClaim": {"claimName": claim_name}}]
            self._api.create(POD, meta["namespace"], pod, user=USER)
        except errors.ApiError as error:  # kube-controller-manager's words for it
            self._retry_later(stateful_set, error, f"create Pod {name} in StatefulSet {meta['name']} failed error: "
                                                   f"{error.message}")
            return False
        return True

    def _claim(self, stateful_set: dict, claim_template: dict, pod_name: str) -> str:
        """The pod's claim from one of the set's templates, made unless it is there (claims outlive pods)."""
        namespace = stateful_set["metadata"]["namespace"]
        claim_meta = clone(claim_template.get("metadata") or {})
        claim_name = f"{claim_meta.get('name', '')}-{pod_name}"
        if self._store.find(CLAIM, namespace, claim_name) is None:
            labels = (stateful_set["spec"].get("selector") or {}).get("matchLabels") or {}
            claim_meta.update(name=claim_name, labels={**(claim_meta.get("labels") or {}), **labels})
            self._api.create(CLAIM, namespace, {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                "metadata": claim_meta, "spec": clone(claim_template.get("spec") or {})},
                             user=USER)
        return claim_name

    def _status(self, stateful_set: dict, revision: str) -> None:
        pods = [p for p in self._dependents(stateful_set) if _ordinal(stateful_set["metadata"]["name"], p) is not None]
        ready = sum(1 for p in pods if _running_and_ready(p))
        updated = sum(1 for p in pods if (p["metadata"].get("labels") or {}).get(REVISION) == revision)
        status = clone(stateful_set.get("status") or {})
        status.update(replicas=len(pods), availableReplicas=ready, collisionCount=0, updateRevision=revision)
        for field, value in (("readyReplicas", ready), ("updatedReplicas", updated)):
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        if updated == len(pods):  # the rollout is done: the update revision is now the current one
            status["currentRevision"] = revision
        status.setdefault("currentRevision", revision)
        current = sum(1 for p in pods if (p["metadata"].get("labels") or {}).get(REVISION) == status["currentRevision"])
        if current:
            status["currentReplicas"] = current
        else:
            status.pop("currentReplicas", None)
        self._write_status(stateful_set, status)
