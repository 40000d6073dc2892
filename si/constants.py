"""Names the shim and the core agree on: resource names, allocation and application tag keys,
node attributes. Values follow Apache YuniKorn's scheduler-interface constants."""

# Resource names. Kubernetes ``cpu`` travels as ``vcore`` millicores.
CPU = "cpu"
VCORE = "vcore"
MEMORY = "memory"
PODS = "pods"

# Tag key domains and groups.
DOMAIN_K8S = "kubernetes.io/"
DOMAIN_YUNIKORN = "yunikorn.apache.org/"
DOMAIN_YUNIKORN_INTERNAL = "internal.yunikorn.apache.org/"
GROUP_META = "meta/"
GROUP_LABEL = "label/"
GROUP_ANNOTATION = "annotation/"

# Allocation tags.
TAG_NAMESPACE = DOMAIN_K8S + GROUP_META + "namespace"
TAG_POD_NAME = DOMAIN_K8S + GROUP_META + "podName"
TAG_LABEL_PREFIX = DOMAIN_K8S + GROUP_LABEL
TAG_REQUIRED_NODE = DOMAIN_YUNIKORN + "requiredNode"
TAG_CREATION_TIME = "creationTime"
TAG_FOREIGN = "foreign"
FOREIGN_STATIC = "static"
FOREIGN_DEFAULT = "default"

# Application tags.
APP_TAG_NAMESPACE = "namespace"
APP_TAG_NAMESPACE_QUOTA = "namespace.resourcequota"
APP_TAG_NAMESPACE_GUARANTEED = "namespace.resourceguaranteed"
APP_TAG_NAMESPACE_MAX_APPS = "namespace.resourcemaxapps"
APP_TAG_PARENT_QUEUE = "namespace.parentqueue"
APP_TAG_CREATE_FORCE = "application.create.force"
APP_TAG_DISABLE_STATE_AWARE = "application.stateaware.disable"

# Node attributes.
NODE_ATTR_HOSTNAME = "si/hostname"
NODE_ATTR_RACKNAME = "si/rackname"
NODE_ATTR_ARCH = "si/arch"
NODE_ATTR_OS = "si/os"
NODE_ATTR_INSTANCE_TYPE = "si/instance-type"
NODE_ATTR_ZONE = "si/zone"
NODE_ATTR_REGION = "si/region"
NODE_ATTR_PARTITION = "si/node-partition"

DEFAULT_PARTITION = "default"
RECOVERY_QUEUE = "root.@recovery@"

# An ask's allocation log (REST ``allocationLog``): upstream's texts, which it marks as constant because
# clients (its e2e suite) match them.
NOT_ENOUGH_USER_QUOTA = "Not enough user quota"
NOT_ENOUGH_QUEUE_QUOTA = "Not enough queue quota"
PREEMPTION_DOES_NOT_HELP = "Preemption does not help"
NO_VICTIM_FOR_REQUIRED_NODE = "No fit on required node, preemption does not help"
PREEMPTION_MAX_ATTEMPTS_EXHAUSTED = "Preemption max attempts exhausted"


def label_tag(label: str) -> str:
    """The allocation tag that carries a pod label."""
    return TAG_LABEL_PREFIX + label
