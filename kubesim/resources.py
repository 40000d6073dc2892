"""The kinds kubesim serves, and where they live in the API."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()  # empty: every verb (create, delete, get, list, patch, update, watch)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """The name used in fault rules and the request log (``pods``, ``priorityclasses``)."""
        return self.plural


KINDS = (
    Kind("", "v1", "pods", "Pod", True, ("status", "binding", "eviction", "resize"), ("po",)),
    Kind("", "v1", "nodes", "Node", False, ("status",), ("no",)),
    Kind("", "v1", "namespaces", "Namespace", False, ("status",), ("ns",)),
    Kind("", "v1", "configmaps", "ConfigMap", True, (), ("cm",)),
    Kind("", "v1", "secrets", "Secret", True),
    Kind("", "v1", "events", "Event", True, (), ("ev",)),
    Kind("", "v1", "services", "Service", True, ("status",), ("svc",)),
    Kind("", "v1", "serviceaccounts", "ServiceAccount", True, ("token",), ("sa",)),
    Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, (), ("pc",)),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("status",), ("pvc",)),
    Kind("", "v1", "persistentvolumes", "PersistentVolume", False, ("status",), ("pv",)),
    Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, (), ("sc",)),
    Kind("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    Kind("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    Kind("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    Kind("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    Kind("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs=("create",)),
    Kind("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
         "MutatingWebhookConfiguration", False),
    Kind("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
         "ValidatingWebhookConfiguration", False),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("status",), ("pdb",)),
    Kind("batch", "v1", "jobs", "Job", True, ("status",)),
    Kind("batch", "v1", "cronjobs", "CronJob", True, ("status",), ("cj",)),
    Kind("apps", "v1", "deployments", "Deployment", True, ("status",), ("deploy",)),
    Kind("apps", "v1", "replicasets", "ReplicaSet", True, ("status",), ("rs",)),
    Kind("apps", "v1", "statefulsets", "StatefulSet", True, ("status",), ("sts",)),
    Kind("apps", "v1", "daemonsets", "DaemonSet", True, ("status",), ("ds",)),
)

BY_PATH = {(k.group, k.version, k.plural): k for k in KINDS}
BY_PLURAL = {k.plural: k for k in KINDS}
BY_KIND = {(k.group_version, k.kind): k for k in KINDS}
POD = BY_PATH[("", "v1", "pods")]
NODE = BY_PATH[("", "v1", "nodes")]
NAMESPACE = BY_PATH[("", "v1", "namespaces")]
JOB = BY_PATH[("batch", "v1", "jobs")]
DEPLOYMENT = BY_PATH[("apps", "v1", "deployments")]
REPLICA_SET = BY_PATH[("apps", "v1", "replicasets")]
STATEFUL_SET = BY_PATH[("apps", "v1", "statefulsets")]
DAEMON_SET = BY_PATH[("apps", "v1", "daemonsets")]
CRON_JOB = BY_PATH[("batch", "v1", "cronjobs")]
APPS_WORKLOADS = (DEPLOYMENT, REPLICA_SET, STATEFUL_SET, DAEMON_SET)
