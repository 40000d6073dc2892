"""The kinds the shim watches: where each is listed and how one object becomes a record."""

from __future__ import annotations

from actors.shim.informer import Kind
from actors.shim.nodes import parse_node
from actors.shim.objects import parse_configmap, parse_namespace, parse_priority_class
from actors.shim.pods import parse_pod

PODS = "pods"
NODES = "nodes"
CONFIGMAPS = "configmaps"
NAMESPACES = "namespaces"
PRIORITY_CLASSES = "priorityclasses"


def watched_kinds(namespace: str) -> tuple[Kind, ...]:
    """Pods of every namespace, nodes, the configmaps of the scheduler's ``namespace``, namespaces and
    priority classes."""
    return (
        Kind(CONFIGMAPS, f"/api/v1/namespaces/{namespace}/configmaps", parse_configmap),
        Kind(PRIORITY_CLASSES, "/apis/scheduling.k8s.io/v1/priorityclasses", parse_priority_class),
        Kind(NAMESPACES, "/api/v1/namespaces", parse_namespace),
        Kind(NODES, "/api/v1/nodes", parse_node),
        Kind(PODS, "/api/v1/pods", parse_pod),
    )
