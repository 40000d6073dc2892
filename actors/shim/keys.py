"""Kubernetes label, annotation and configuration keys the shim reads, and the tag and attribute keys
it adds on top of the SI's own (``si.constants``)."""

from si.constants import DOMAIN_YUNIKORN

SCHEDULER_NAME = "yunikorn"

# Where a pod names its application, in order of precedence.
LABEL_APP_ID = DOMAIN_YUNIKORN + "app-id"
ANNOTATION_APP_ID = DOMAIN_YUNIKORN + "app-id"
LABEL_APPLICATION_ID = "applicationId"
LABEL_SPARK_APP_ID = "spark-app-selector"
AUTOGEN_APP_FORMAT = "yunikorn-{namespace}-autogen"
UNIQUE_AUTOGEN_SUFFIX = "-uniqueautogen"

# Where a pod names its queue, in order of precedence.
LABEL_QUEUE = DOMAIN_YUNIKORN + "queue"
ANNOTATION_QUEUE = DOMAIN_YUNIKORN + "queue"
LABEL_QUEUE_LEGACY = "queue"

ANNOTATION_USER_INFO = DOMAIN_YUNIKORN + "user.info"
# Plugin mode: written on a pod once the core placed it, so kube-scheduler sees an update and retries it.
ANNOTATION_QUOTA_APPROVED = DOMAIN_YUNIKORN + "quota-approved"
DEFAULT_USER = "nobody"
LABEL_DISABLE_STATE_AWARE = "disableStateAware"

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

# Scheduler configuration in the scheduler's namespace: defaults merged under the user's configs.
CONFIGMAP_DEFAULTS = "yunikorn-defaults"
CONFIGMAP_CONFIGS = "yunikorn-configs"
CONF_POLICY_GROUP = "service.policyGroup"
CONF_HOT_REFRESH = "service.enableConfigHotRefresh"
CONF_CLUSTER_ID = "service.clusterId"
DEFAULT_POLICY_GROUP = "queues"
DEFAULT_CLUSTER_ID = "mycluster"
