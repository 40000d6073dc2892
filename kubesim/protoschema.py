"""The Kubernetes messages kubesim reads from protobuf, and how each field shows in the JSON form.

Field numbers and names are those of upstream's ``generated.proto`` files (k8s.io/api and
k8s.io/apimachinery), trimmed to the kinds client-go's typed clients write to kubesim. Each field also
says how Go's JSON encoding treats it, so a decoded object is the JSON a JSON client would have sent:

- ``OMIT``: a value with ``omitempty``: left out when zero ("", 0, false, a zero time).
- ``KEEP``: always written; a struct (``spec``, ``status``) or a value without ``omitempty``.
- ``PTR``: a pointer: written, even when zero, exactly when it is on the wire (gogo writes only non-nil ones).
- ``LIST`` / ``MAP``: a slice or map with ``omitempty``; a map is a repeated ``{1: key, 2: value}`` entry.

A type is a scalar (``string``, ``int32``, ``int64``, ``bool``, ``bytes`` shown base64 as Go does), one of
apimachinery's special types (``Time``, ``MicroTime``, ``IntOrString``, ``FieldsV1``) or a message below.
"""

from __future__ import annotations

from typing import NamedTuple

OMIT, KEEP, PTR, LIST, MAP = "omit", "keep", "ptr", "list", "map"
STRING, INT32, INT64, BOOL, BYTES = "string", "int32", "int64", "bool", "bytes"
TIME, MICRO_TIME, INT_OR_STRING, FIELDS_V1 = "Time", "MicroTime", "IntOrString", "FieldsV1"
SCALARS = frozenset({STRING, INT32, INT64, BOOL, BYTES})


class Field(NamedTuple):
    name: str
    type: str
    shape: str


def _message(*fields: tuple[int, str, str, str]) -> dict[int, Field]:
    return {number: Field(name, type_, shape) for number, name, type_, shape in fields}


_META = "ObjectMeta"

MESSAGES: dict[str, dict[int, Field]] = {
    # k8s.io/apimachinery/pkg/apis/meta/v1
    "ObjectMeta": _message(
        (1, "name", STRING, OMIT), (2, "generateName", STRING, OMIT), (3, "namespace", STRING, OMIT),
        (4, "selfLink", STRING, OMIT), (5, "uid", STRING, OMIT), (6, "resourceVersion", STRING, OMIT),
        (7, "generation", INT64, OMIT), (8, "creationTimestamp", TIME, OMIT),
        (9, "deletionTimestamp", TIME, PTR), (10, "deletionGracePeriodSeconds", INT64, PTR),
        (11, "labels", STRING, MAP), (12, "annotations", STRING, MAP),
        (13, "ownerReferences", "OwnerReference", LIST), (14, "finalizers", STRING, LIST),
        (17, "managedFields", "ManagedFieldsEntry", LIST)),
    "OwnerReference": _message(
        (5, "apiVersion", STRING, KEEP), (1, "kind", STRING, KEEP), (3, "name", STRING, KEEP),
        (4, "uid", STRING, KEEP), (6, "controller", BOOL, PTR), (7, "blockOwnerDeletion", BOOL, PTR)),
    "ManagedFieldsEntry": _message(
        (1, "manager", STRING, OMIT), (2, "operation", STRING, OMIT), (3, "apiVersion", STRING, OMIT),
        (4, "time", TIME, PTR), (6, "fieldsType", STRING, OMIT), (7, "fieldsV1", FIELDS_V1, PTR),
        (8, "subresource", STRING, OMIT)),
    "LabelSelector": _message(
        (1, "matchLabels", STRING, MAP), (2, "matchExpressions", "LabelSelectorRequirement", LIST)),
    "LabelSelectorRequirement": _message(
        (1, "key", STRING, KEEP), (2, "operator", STRING, KEEP), (3, "values", STRING, LIST)),
    "Condition": _message(
        (1, "type", STRING, KEEP), (2, "status", STRING, KEEP), (3, "observedGeneration", INT64, OMIT),
        (4, "lastTransitionTime", TIME, KEEP), (5, "reason", STRING, KEEP), (6, "message", STRING, KEEP)),
    "DeleteOptions": _message(
        (1, "gracePeriodSeconds", INT64, PTR), (2, "preconditions", "Preconditions", PTR),
        (3, "orphanDependents", BOOL, PTR), (4, "propagationPolicy", STRING, PTR), (5, "dryRun", STRING, LIST),
        (6, "ignoreStoreReadErrorWithClusterBreakingPotential", BOOL, PTR)),
    "Preconditions": _message((1, "uid", STRING, PTR), (2, "resourceVersion", STRING, PTR)),
    # k8s.io/api/core/v1
    "Namespace": _message(
        (1, "metadata", _META, KEEP), (2, "spec", "NamespaceSpec", KEEP), (3, "status", "NamespaceStatus", KEEP)),
    "NamespaceSpec": _message((1, "finalizers", STRING, LIST)),
    "NamespaceStatus": _message((1, "phase", STRING, OMIT), (2, "conditions", "NamespaceCondition", LIST)),
    "NamespaceCondition": _message(
        (1, "type", STRING, KEEP), (2, "status", STRING, KEEP), (4, "lastTransitionTime", TIME, OMIT),
        (5, "reason", STRING, OMIT), (6, "message", STRING, OMIT)),
    "ConfigMap": _message(
        (1, "metadata", _META, KEEP), (4, "immutable", BOOL, PTR), (2, "data", STRING, MAP),
        (3, "binaryData", BYTES, MAP)),
    "Secret": _message(
        (1, "metadata", _META, KEEP), (5, "immutable", BOOL, PTR), (2, "data", BYTES, MAP),
        (4, "stringData", STRING, MAP), (3, "type", STRING, OMIT)),
    "ServiceAccount": _message(
        (1, "metadata", _META, KEEP), (2, "secrets", "ObjectReference", LIST),
        (3, "imagePullSecrets", "LocalObjectReference", LIST), (4, "automountServiceAccountToken", BOOL, PTR)),
    "ObjectReference": _message(
        (1, "kind", STRING, OMIT), (2, "namespace", STRING, OMIT), (3, "name", STRING, OMIT),
        (4, "uid", STRING, OMIT), (5, "apiVersion", STRING, OMIT), (6, "resourceVersion", STRING, OMIT),
        (7, "fieldPath", STRING, OMIT)),
    "LocalObjectReference": _message((1, "name", STRING, OMIT)),
    "Service": _message(
        (1, "metadata", _META, KEEP), (2, "spec", "ServiceSpec", KEEP), (3, "status", "ServiceStatus", KEEP)),
    "ServiceSpec": _message(
        (1, "ports", "ServicePort", LIST), (2, "selector", STRING, MAP), (3, "clusterIP", STRING, OMIT),
        (18, "clusterIPs", STRING, LIST), (4, "type", STRING, OMIT), (5, "externalIPs", STRING, LIST),
        (7, "sessionAffinity", STRING, OMIT), (8, "loadBalancerIP", STRING, OMIT),
        (9, "loadBalancerSourceRanges", STRING, LIST), (10, "externalName", STRING, OMIT),
        (11, "externalTrafficPolicy", STRING, OMIT), (12, "healthCheckNodePort", INT32, OMIT),
        (13, "publishNotReadyAddresses", BOOL, OMIT),
        (14, "sessionAffinityConfig", "SessionAffinityConfig", PTR), (19, "ipFamilies", STRING, LIST),
        (17, "ipFamilyPolicy", STRING, PTR), (20, "allocateLoadBalancerNodePorts", BOOL, PTR),
        (21, "loadBalancerClass", STRING, PTR), (22, "internalTrafficPolicy", STRING, PTR),
        (23, "trafficDistribution", STRING, PTR)),
    "ServicePort": _message(
        (1, "name", STRING, OMIT), (2, "protocol", STRING, OMIT), (6, "appProtocol", STRING, PTR),
        (3, "port", INT32, KEEP), (4, "targetPort", INT_OR_STRING, KEEP), (5, "nodePort", INT32, OMIT)),
    "SessionAffinityConfig": _message((1, "clientIP", "ClientIPConfig", PTR)),
    "ClientIPConfig": _message((1, "timeoutSeconds", INT32, PTR)),
    "ServiceStatus": _message(
        (1, "loadBalancer", "LoadBalancerStatus", KEEP), (2, "conditions", "Condition", LIST)),
    "LoadBalancerStatus": _message((1, "ingress", "LoadBalancerIngress", LIST)),
    "LoadBalancerIngress": _message(
        (1, "ip", STRING, OMIT), (2, "hostname", STRING, OMIT), (3, "ipMode", STRING, PTR),
        (4, "ports", "PortStatus", LIST)),
    "PortStatus": _message((1, "port", INT32, KEEP), (2, "protocol", STRING, KEEP), (3, "error", STRING, PTR)),
    # k8s.io/api/scheduling/v1
    "PriorityClass": _message(
        (1, "metadata", _META, KEEP), (2, "value", INT32, KEEP), (3, "globalDefault", BOOL, OMIT),
        (4, "description", STRING, OMIT), (5, "preemptionPolicy", STRING, PTR)),
    # k8s.io/api/policy/v1
    "PodDisruptionBudget": _message(
        (1, "metadata", _META, KEEP), (2, "spec", "PodDisruptionBudgetSpec", KEEP),
        (3, "status", "PodDisruptionBudgetStatus", KEEP)),
    "PodDisruptionBudgetSpec": _message(
        (1, "minAvailable", INT_OR_STRING, PTR), (2, "selector", "LabelSelector", PTR),
        (3, "maxUnavailable", INT_OR_STRING, PTR), (4, "unhealthyPodEvictionPolicy", STRING, PTR)),
    "PodDisruptionBudgetStatus": _message(
        (1, "observedGeneration", INT64, OMIT), (2, "disruptedPods", TIME, MAP),
        (3, "disruptionsAllowed", INT32, KEEP), (4, "currentHealthy", INT32, KEEP),
        (5, "desiredHealthy", INT32, KEEP), (6, "expectedPods", INT32, KEEP), (7, "conditions", "Condition", LIST)),
    "Eviction": _message((1, "metadata", _META, KEEP), (2, "deleteOptions", "DeleteOptions", PTR)),
    # k8s.io/api/authentication/v1
    "TokenRequest": _message(
        (1, "metadata", _META, KEEP), (2, "spec", "TokenRequestSpec", KEEP), (3, "status", "TokenRequestStatus", KEEP)),
    "TokenRequestSpec": _message(
        (1, "audiences", STRING, LIST), (4, "expirationSeconds", INT64, PTR),
        (3, "boundObjectRef", "BoundObjectReference", PTR)),
    "BoundObjectReference": _message(
        (1, "kind", STRING, OMIT), (2, "apiVersion", STRING, OMIT), (3, "name", STRING, OMIT), (4, "uid", STRING, OMIT)),
    "TokenRequestStatus": _message((1, "token", STRING, KEEP), (2, "expirationTimestamp", TIME, KEEP)),
    # k8s.io/api/rbac/v1
    "Role": _message((1, "metadata", _META, KEEP), (2, "rules", "PolicyRule", LIST)),
    "ClusterRole": _message(
        (1, "metadata", _META, KEEP), (2, "rules", "PolicyRule", LIST), (3, "aggregationRule", "AggregationRule", PTR)),
    "AggregationRule": _message((1, "clusterRoleSelectors", "LabelSelector", LIST)),
    "PolicyRule": _message(
        (1, "verbs", STRING, LIST), (2, "apiGroups", STRING, LIST), (3, "resources", STRING, LIST),
        (4, "resourceNames", STRING, LIST), (5, "nonResourceURLs", STRING, LIST)),
    "RoleBinding": _message((1, "metadata", _META, KEEP), (2, "subjects", "Subject", LIST), (3, "roleRef", "RoleRef", KEEP)),
    "ClusterRoleBinding": _message(
        (1, "metadata", _META, KEEP), (2, "subjects", "Subject", LIST), (3, "roleRef", "RoleRef", KEEP)),
    "Subject": _message(
        (1, "kind", STRING, KEEP), (2, "apiGroup", STRING, OMIT), (3, "name", STRING, KEEP), (4, "namespace", STRING, OMIT)),
    "RoleRef": _message((1, "apiGroup", STRING, KEEP), (2, "kind", STRING, KEEP), (3, "name", STRING, KEEP)),
    # k8s.io/api/authorization/v1
    "SelfSubjectAccessReview": _message(
        (1, "metadata", _META, KEEP), (2, "spec", "SelfSubjectAccessReviewSpec", KEEP),
        (3, "status", "SubjectAccessReviewStatus", KEEP)),
    "SelfSubjectAccessReviewSpec": _message(
        (1, "resourceAttributes", "ResourceAttributes", PTR), (2, "nonResourceAttributes", "NonResourceAttributes", PTR)),
    "ResourceAttributes": _message(
        (1, "namespace", STRING, OMIT), (2, "verb", STRING, OMIT), (3, "group", STRING, OMIT),
        (4, "version", STRING, OMIT), (5, "resource", STRING, OMIT), (6, "subresource", STRING, OMIT),
        (7, "name", STRING, OMIT)),
    "NonResourceAttributes": _message((1, "path", STRING, OMIT), (2, "verb", STRING, OMIT)),
    "SubjectAccessReviewStatus": _message(
        (1, "allowed", BOOL, KEEP), (4, "denied", BOOL, OMIT), (2, "reason", STRING, OMIT),
        (3, "evaluationError", STRING, OMIT)),
    # k8s.io/api/coordination/v1
    "Lease": _message((1, "metadata", _META, KEEP), (2, "spec", "LeaseSpec", KEEP)),
    "LeaseSpec": _message(
        (1, "holderIdentity", STRING, PTR), (2, "leaseDurationSeconds", INT32, PTR),
        (3, "acquireTime", MICRO_TIME, PTR), (4, "renewTime", MICRO_TIME, PTR), (5, "leaseTransitions", INT32, PTR),
        (6, "strategy", STRING, PTR), (7, "preferredHolder", STRING, PTR)),
}

# The top-level kinds, by the ``(apiVersion, kind)`` a body's envelope names; the kind is its message.
KINDS = frozenset({
    ("v1", "Namespace"), ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "ServiceAccount"), ("v1", "Service"),
    ("scheduling.k8s.io/v1", "PriorityClass"), ("policy/v1", "PodDisruptionBudget"), ("policy/v1", "Eviction"),
    ("coordination.k8s.io/v1", "Lease"), ("meta.k8s.io/v1", "DeleteOptions"), ("v1", "DeleteOptions"),
    ("authentication.k8s.io/v1", "TokenRequest"), ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
})
