"""What the shim and the admission controller agree on about Kubernetes objects: the label, annotation
and configmap names both read or write, the application id of a pod (the one it names, or the one
generated for it) and how a configmap's entries are read. Pure Python: no Kubernetes client.

Precedence follows YuniKorn: the application is the label ``yunikorn.apache.org/app-id``, else that
annotation, else the label ``applicationId``, else ``spark-app-selector``; the queue is the label
``yunikorn.apache.org/queue``, else that annotation, else the label ``queue``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from si.bounded import MAX_ENCODED, gunzip, shown
from si.constants import DOMAIN_YUNIKORN

SCHEDULER_NAME = "yunikorn"

LABEL_APP_ID = DOMAIN_YUNIKORN + "app-id"
ANNOTATION_APP_ID = DOMAIN_YUNIKORN + "app-id"
LABEL_APPLICATION_ID = "applicationId"
LABEL_SPARK_APP_SELECTOR = "spark-app-selector"
LABEL_QUEUE = DOMAIN_YUNIKORN + "queue"
ANNOTATION_QUEUE = DOMAIN_YUNIKORN + "queue"
LABEL_QUEUE_LEGACY = "queue"
LABEL_DISABLE_STATE_AWARE = "disableStateAware"
ANNOTATION_USER_INFO = DOMAIN_YUNIKORN + "user.info"

# The scheduler's configuration in its namespace: defaults merged under the user's configs.
CONFIGMAP_DEFAULTS = "yunikorn-defaults"
CONFIGMAP_CONFIGS = "yunikorn-configs"
CONF_POLICY_GROUP = "service.policyGroup"
CONF_HOT_REFRESH = "service.enableConfigHotRefresh"
DEFAULT_POLICY_GROUP = "queues"

MAX_LABEL_VALUE = 63
UNIQUE_AUTOGEN_SUFFIX = "-uniqueautogen"


def named_application_id(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    """The application the pod names itself; ``""`` when it names none."""
    return (labels.get(LABEL_APP_ID) or annotations.get(ANNOTATION_APP_ID)
            or labels.get(LABEL_APPLICATION_ID) or labels.get(LABEL_SPARK_APP_SELECTOR) or "")


def autogen_application_id(namespace: str, unique: bool = False) -> str:
    """The id given to a pod that names no application (a label value, so at most 63 characters):
    ``yunikorn-<namespace>-autogen``, one application per namespace; or, ``unique``,
    ``<namespace[:26]>-uniqueautogen``, which :func:`application_id` completes with the pod's UID."""
    if unique:
        return f"{namespace[:26]}{UNIQUE_AUTOGEN_SUFFIX}"[:MAX_LABEL_VALUE]
    return f"{SCHEDULER_NAME}-{namespace}-autogen"[:MAX_LABEL_VALUE]


def application_id(labels: Mapping[str, str], annotations: Mapping[str, str], namespace: str, uid: str) -> str:
    """The application a pod belongs to: the one it names (a unique autogen id completed with ``uid``),
    else the namespace's generated one."""
    app_id = named_application_id(labels, annotations)
    if not app_id:
        return autogen_application_id(namespace)
    if app_id.endswith(UNIQUE_AUTOGEN_SUFFIX):
        return app_id[: -len(UNIQUE_AUTOGEN_SUFFIX)] + "-" + uid
    return app_id


def named_queue(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    """The queue the pod asks for; ``""`` when it names none."""
    return labels.get(LABEL_QUEUE) or annotations.get(ANNOTATION_QUEUE) or labels.get(LABEL_QUEUE_LEGACY) or ""


def binary_entry(key: str, encoded: str | bytes) -> tuple[str, str]:
    """One ``binaryData`` entry as text (base64, or raw bytes); a key ending in ``.gz`` is gunzipped
    and named without the suffix. Sizes are checked before anything is allocated (at most
    :data:`~si.bounded.MAX_ENCODED` characters, unpacking to at most :data:`~si.bounded.MAX_UNPACKED`
    bytes). ``ValueError`` when it cannot be read."""
    if not isinstance(encoded, str | bytes):
        raise ValueError(f"binaryData {shown(key)} is not a string")
    if len(encoded) > MAX_ENCODED:
        raise ValueError(f"binaryData {shown(key)} is longer than {MAX_ENCODED} characters")
    try:
        raw = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else bytes(encoded)
        if key.endswith(".gz"):
            return key[:-3], gunzip(raw).decode("utf-8")
        return key, raw.decode("utf-8")
    except (binascii.Error, ValueError) as error:  # ValueError: not ASCII, not UTF-8, or gunzip's refusals
        raise ValueError(f"binaryData {shown(key)} is unreadable: {error}") from None


def configmap_entries(data: Mapping[str, str], binary_data: Mapping[str, str | bytes]) -> dict[str, str]:
    """A configmap's entries as text: ``data`` as is, ``binaryData`` read by :func:`binary_entry`."""
    entries = dict(data)
    entries.update(binary_entry(key, encoded) for key, encoded in binary_data.items())
    return entries


def tolerates(toleration, taint) -> bool:
    """Kubernetes' rule (``Toleration.ToleratesTaint``) for whether ``toleration`` (key, operator, value,
    effect) tolerates ``taint`` (key, value, effect): the shim's predicates and the simulator both apply it."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and toleration.value == taint.value
