"""Placeholder pods: what holds a task group's room until its real pods come.

A placeholder runs the pause image with the group's ``minResource`` as requests and limits and the
group's node selector, tolerations, affinity and topology spread, so the core places it where a real
member could run. It belongs to its application (same application id and queue), names its task
group, is marked ``internal.yunikorn.apache.org/placeholder``, and is owned by the application's
originating pod, so deleting that pod deletes the gang's placeholders too. Names follow upstream:
``tg-<application id, 28>-<task group, 20>-<10 random characters>``.

A gang makes at most what it could ever use (:func:`allowance`): no more placeholders than the
cluster's nodes together have pod slots, and no more than ``service.maxPlaceholdersPerGang``. Its
cpu and memory are not a bound: a gang may wait for nodes to be added (a cluster autoscaler reads its
pending placeholders). A gang larger than a max of its queue never gets this far: the core rejects it.
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Mapping

from actors.base import record
from actors.shim.gang import Gang, TaskGroup
from actors.shim.keys import ANNOTATION_PLACEHOLDER, ANNOTATION_TASK_GROUP_NAME
from actors.shim.pods import PodRecord
from si.kubernetes import ANNOTATION_APP_ID, ANNOTATION_QUEUE, SCHEDULER_NAME

DEFAULT_IMAGE = "registry.k8s.io/pause:3.7"
DEFAULT_MAX_PER_GANG = 5000  # ~15 s of pod creation at the API's pace; far above any real gang
_ALPHABET = string.ascii_lowercase + string.digits
_NOT_DNS = re.compile(r"[^a-z0-9-]+")


@record
class PlaceholderSettings:
    """``service.placeholderImage``, ``service.placeholderRunAsUser|RunAsGroup|FsGroup`` and
    ``service.disableGangScheduling`` (task groups ignored, no placeholders),
    ``service.maxPlaceholdersPerGang``."""

    image: str = DEFAULT_IMAGE
    run_as_user: int | None = None
    run_as_group: int | None = None
    fs_group: int | None = None
    disabled: bool = False
    max_per_gang: int = DEFAULT_MAX_PER_GANG


@record
class Allowance:
    """How many placeholders of each task group a gang may have, and why fewer than it declares
    (``""`` when it may have them all)."""

    counts: Mapping[str, int]
    capped: str = ""

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def allowance(gang: Gang, pod_slots: int, limit: int) -> Allowance:
    """What ``gang`` may have: its groups in order, each as many members as are left of ``limit`` and
    of the ``pod_slots`` of the cluster's nodes together."""
    counts: dict[str, int] = {}
    left = min(limit, pod_slots)
    for group in gang.groups:
        counts[group.name] = min(group.min_member, left)
        left -= counts[group.name]
    if sum(counts.values()) == gang.size:
        return Allowance(counts)
    reason = (f"service.maxPlaceholdersPerGang is {limit}" if limit <= pod_slots
              else f"the cluster's nodes together hold {pod_slots} pods")
    return Allowance(counts, reason)


def placeholder_name(app_id: str, group: str) -> str:
    nonce = "".join(secrets.choice(_ALPHABET) for _ in range(10))
    return f"tg-{_dns(app_id)[:28]}-{_dns(group)[:20]}-{nonce}"


def made(pod: PodRecord, owner: PodRecord | None) -> bool:
    """Whether ``pod``, marked as a placeholder, is one the scheduler made: named by
    :func:`placeholder_name` for its application and task group, and owned by ``owner``, an ordinary pod
    of the same application and namespace. Anyone may mark a pod; only the scheduler names and owns it so."""
    prefix = f"tg-{_dns(pod.app_id)[:28]}-{_dns(pod.task_group)[:20]}-"
    nonce = pod.name[len(prefix):]
    return (pod.name.startswith(prefix) and len(nonce) == 10 and all(char in _ALPHABET for char in nonce)
            and owner is not None and not owner.placeholder and owner.app_id == pod.app_id
            and owner.namespace == pod.namespace)


def _dns(text: str) -> str:
    return _NOT_DNS.sub("-", text.lower()).strip("-") or "x"


def placeholder_pod(originator: PodRecord, queue: str, group: TaskGroup, settings: PlaceholderSettings) -> dict:
    """The manifest of one placeholder of ``group`` for ``originator``'s application."""
    labels = dict(group.labels)
    annotations = {**group.annotations, ANNOTATION_APP_ID: originator.app_id, ANNOTATION_PLACEHOLDER: "true",
                   ANNOTATION_TASK_GROUP_NAME: group.name}
    if queue:  # annotations: an application id or queue path may not be a valid label value
        annotations[ANNOTATION_QUEUE] = queue
    security = {key: value for key, value in (("runAsUser", settings.run_as_user),
                                              ("runAsGroup", settings.run_as_group),
                                              ("fsGroup", settings.fs_group)) if value is not None}
    spec: dict = {
        "schedulerName": SCHEDULER_NAME,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "pause", "image": settings.image, "imagePullPolicy": "IfNotPresent",
                        "resources": {"requests": dict(group.requests), "limits": dict(group.requests)}}],
    }
    if originator.priority_class:
        spec["priorityClassName"] = originator.priority_class
    if group.node_selector:
        spec["nodeSelector"] = dict(group.node_selector)
    if group.tolerations:
        spec["tolerations"] = list(group.tolerations)
    if group.affinity:
        spec["affinity"] = group.affinity
    if group.topology_spread:
        spec["topologySpreadConstraints"] = list(group.topology_spread)
    if security:
        spec["securityContext"] = security
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": placeholder_name(originator.app_id, group.name), "namespace": originator.namespace,
            "labels": labels, "annotations": annotations,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": originator.name,
                                 "uid": originator.uid, "controller": False, "blockOwnerDeletion": True}],
        },
        "spec": spec,
    }
