"""Kubernetes keys only the shim reads or writes, and the tag and attribute keys it adds on top of the
SI's own (``si.constants``); those it shares with the admission controller are in ``si.kubernetes``."""

from si.constants import DOMAIN_YUNIKORN, DOMAIN_YUNIKORN_INTERNAL

# Plugin mode: written on a pod once the core placed it, so kube-scheduler sees an update and retries it.
ANNOTATION_QUOTA_APPROVED = DOMAIN_YUNIKORN + "quota-approved"
DEFAULT_USER = "nobody"

# Gang scheduling: a pod's task groups (JSON), its own group, the policy parameters, and the mark of
# the placeholder pods the shim makes.
ANNOTATION_TASK_GROUPS = DOMAIN_YUNIKORN + "task-groups"
ANNOTATION_TASK_GROUP_NAME = DOMAIN_YUNIKORN + "task-group-name"
ANNOTATION_SCHEDULING_POLICY = DOMAIN_YUNIKORN + "schedulingPolicyParameters"
ANNOTATION_PLACEHOLDER = DOMAIN_YUNIKORN_INTERNAL + "placeholder"
ANNOTATION_ALLOW_PREEMPTION = DOMAIN_YUNIKORN + "allow-preemption"  # on a pod or its PriorityClass


def allow_preemption(annotations) -> bool | None:
    """The ``allow-preemption`` annotation: False for "false", True for "true", None when absent or other."""
    value = (annotations.get(ANNOTATION_ALLOW_PREEMPTION) or "").strip().lower()
    return {"false": False, "true": True}.get(value)

# Namespace annotations that become application tags.
ANNOTATION_PARENT_QUEUE = DOMAIN_YUNIKORN + "parentqueue"
ANNOTATION_NAMESPACE_QUOTA = DOMAIN_YUNIKORN + "namespace.quota"
ANNOTATION_NAMESPACE_GUARANTEED = DOMAIN_YUNIKORN + "namespace.guaranteed"
ANNOTATION_NAMESPACE_MAX_APPS = DOMAIN_YUNIKORN + "namespace.maxApps"

# An ask tag: the pod's node constraints as one compact JSON document (only when it has any).
TAG_CONSTRAINTS = DOMAIN_YUNIKORN + "constraints"
# Node attributes: the taints that filter (JSON list) and the cordon flag.
ATTR_TAINTS = DOMAIN_YUNIKORN + "taints"
ATTR_UNSCHEDULABLE = DOMAIN_YUNIKORN + "unschedulable"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_RACK = "/rack-default"

# Scheduler configuration (the configmaps are named in ``si.kubernetes``).
CONF_CLUSTER_ID = "service.clusterId"
DEFAULT_CLUSTER_ID = "mycluster"
