"""The kinds the shim watches: where each is listed and how one object becomes a record."""

from __future__ import annotations

from actors.shim.informer import Kind
from actors.shim.nodes import parse_node, read_node
from actors.shim.objects import parse_configmap, parse_namespace, parse_priority_class
from actors.shim.pods import parse_pod, read_pod
from actors.shim.volumes import parse_claim, parse_storage_class, parse_volume

PODS = "pods"
NODES = "nodes"
CONFIGMAPS = "configmaps"
NAMESPACES = "namespaces"
PRIORITY_CLASSES = "priorityclasses"
CLAIMS = "persistentvolumeclaims"
VOLUMES = "persistentvolumes"
STORAGE_CLASSES = "storageclasses"
VOLUME_KINDS = frozenset({CLAIMS, VOLUMES, STORAGE_CLASSES})


def watched_kinds(namespace: str) -> tuple[Kind, ...]:
    """Pods of every namespace, nodes, the configmaps of the scheduler's ``namespace``, namespaces and
    priority classes, persistent volume claims, volumes and storage classes."""
    return (
        Kind(CONFIGMAPS, f"/api/v1/namespaces/{namespace}/configmaps", parse_configmap),
        Kind(PRIORITY_CLASSES, "/apis/scheduling.k8s.io/v1/priorityclasses", parse_priority_class),
        Kind(NAMESPACES, "/api/v1/namespaces", parse_namespace),
        Kind(STORAGE_CLASSES, "/apis/storage.k8s.io/v1/storageclasses", parse_storage_class),
        Kind(VOLUMES, "/api/v1/persistentvolumes", parse_volume),
        Kind(CLAIMS, "/api/v1/persistentvolumeclaims", parse_claim),
        Kind(NODES, "/api/v1/nodes", parse_node, read=read_node),
        Kind(PODS, "/api/v1/pods", parse_pod, lingers=True, read=read_pod),
    )
