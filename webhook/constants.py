"""Names shared with Kubernetes and the shim: labels, annotations, configmaps, webhook objects.

They live in one module so a later move to ``si/constants.py`` is a one-line import change.
"""

SCHEDULER_NAME = "yunikorn"

# Pod labels.
LABEL_APP = "app"
LABEL_APP_VALUE = "yunikorn"
LABEL_APPLICATION_ID = "applicationId"
LABEL_SPARK_APP_SELECTOR = "spark-app-selector"
LABEL_QUEUE = "queue"
LABEL_DISABLE_STATE_AWARE = "disableStateAware"
CANONICAL_APP_ID = "yunikorn.apache.org/app-id"
CANONICAL_QUEUE = "yunikorn.apache.org/queue"

# Pod and namespace annotations.
ANNOTATION_USER_INFO = "yunikorn.apache.org/user.info"
ANNOTATION_ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"
ANNOTATION_ENABLE_YUNIKORN = "yunikorn.apache.org/namespace.enableYuniKorn"
ANNOTATION_GENERATE_APP_ID = "yunikorn.apache.org/namespace.generateAppId"

AUTOGEN_SUFFIX = "autogen"
UNIQUE_AUTOGEN_SUFFIX = "uniqueautogen"

# Configuration maps (defaults overridden by configs).
CONFIGMAP_DEFAULTS = "yunikorn-defaults"
CONFIGMAP_CONFIGS = "yunikorn-configs"
CONFIGMAP_NAMES = (CONFIGMAP_DEFAULTS, CONFIGMAP_CONFIGS)

# Certificates and webhook registration.
SECRET_NAME = "admission-controller-secrets"
CA_CERT_KEYS = ("cacert1.pem", "cacert2.pem")
CA_KEY_KEYS = ("cakey1.pem", "cakey2.pem")
ORGANIZATION = "yunikorn.apache.org"
VALIDATING_CONFIGURATION = "yunikorn-admission-controller-validations"
MUTATING_CONFIGURATION = "yunikorn-admission-controller-mutations"
VALIDATING_WEBHOOK = "admission-webhook.yunikorn.validate-conf"
MUTATING_WEBHOOK = "admission-webhook.yunikorn.mutate-pods"
MUTATE_PATH = "/mutate"
VALIDATE_PATH = "/validate-conf"
HEALTH_PATH = "/health"

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")
