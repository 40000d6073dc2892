"""Names only the admission controller uses: labels, annotations, webhook objects. Those it shares
with the shim (application and queue labels, user info, the configmaps) are in ``si.kubernetes``."""

from si.constants import DOMAIN_YUNIKORN_INTERNAL
from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS

# Pod labels.
LABEL_APP = "app"
LABEL_APP_VALUE = "yunikorn"

# Pod and namespace annotations.
ANNOTATION_ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"
ANNOTATION_ENABLE_YUNIKORN = "yunikorn.apache.org/namespace.enableYuniKorn"
ANNOTATION_GENERATE_APP_ID = "yunikorn.apache.org/namespace.generateAppId"
ANNOTATION_PLACEHOLDER = DOMAIN_YUNIKORN_INTERNAL + "placeholder"  # the scheduler's own: only it may set it

# Configuration maps (defaults overridden by configs).
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
