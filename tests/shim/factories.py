"""Kubernetes JSON documents for the shim's tests, shaped as the API server returns them."""

from __future__ import annotations

import dataclasses
import itertools
import uuid

_serial = itertools.count(1)


def pod_json(name: str = "", namespace: str = "default", *, scheduler: str = "yunikorn", node: str = "",
             cpu: str = "100m", memory: str = "128Mi", labels: dict | None = None,
             annotations: dict | None = None, phase: str = "Pending", spec: dict | None = None,
             owner_kind: str = "", uid: str = "", resource_version: str = "1") -> dict:
    """A pod with one container requesting ``cpu`` and ``memory``; ``spec`` entries override."""
    name = name or f"pod-{next(_serial)}"
    body = {
        "metadata": {
            "name": name, "namespace": namespace, "uid": uid or str(uuid.uuid4()),
            "resourceVersion": resource_version, "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": dict(labels or {}), "annotations": dict(annotations or {}),
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        },
        "status": {"phase": phase},
    }
    if node:
        body["spec"]["nodeName"] = node
    if owner_kind:
        body["metadata"]["ownerReferences"] = [{"kind": owner_kind, "name": "owner", "uid": "o-1",
                                                "apiVersion": "v1"}]
    body["spec"].update(spec or {})
    return body


def node_json(name: str, *, cpu: str = "8", memory: str = "32Gi", pods: str = "110", labels: dict | None = None,
              taints: list | None = None, unschedulable: bool = False, resource_version: str = "1") -> dict:
    return {
        "metadata": {"name": name, "resourceVersion": resource_version, "uid": str(uuid.uuid4()),
                     "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints or []), "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                   "capacity": {"cpu": cpu, "memory": memory, "pods": pods}},
    }


def parsed_or_refused(parse, value) -> dict | tuple[str, str]:
    """The fields by name of the record ``parse`` makes of ``value``, or the ``ValueError`` it raised: what
    two parsers of one object are compared by."""
    try:
        record = parse(value)
    except ValueError as error:
        return type(error).__name__, str(error)
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
