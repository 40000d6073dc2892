"""The mutation rules: what a pod or workload admitted to YuniKorn gets, and who may set user.info.

``mutate(request, view)`` is pure given the view: it returns a :class:`~webhook.review.Decision` whose
patch only uses ``add`` operations that each replace a whole map (labels, annotations), so no JSON
pointer escaping is needed and the result does not depend on which keys already exist.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

import orjson

from si.bounded import elide
from si.kubernetes import (
    ANNOTATION_USER_INFO,
    LABEL_APP_ID,
    LABEL_APPLICATION_ID,
    LABEL_DISABLE_STATE_AWARE,
    LABEL_QUEUE_LEGACY,
    SCHEDULER_NAME,
    autogen_application_id,
    named_application_id,
    named_queue,
)
from webhook import constants as c
from webhook.review import Decision, ReviewRequest
from webhook.view import ClusterView

log = logging.getLogger(__name__)

_TEMPLATE_PATHS = {  # where the pod template's metadata lives in each workload kind
    "CronJob": ("spec", "jobTemplate", "spec", "template", "metadata"),
}
_DEFAULT_TEMPLATE_PATH = ("spec", "template", "metadata")


def mutate(request: ReviewRequest, view: ClusterView, scheduler_user: str = "") -> Decision:
    """The verdict for one ``/mutate`` review; ``scheduler_user`` is the scheduler's user name, the only
    one that may create placeholder pods."""
    if not (scheduler_user and request.username == scheduler_user):
        refusal = _placeholder_refusal(request)
        if refusal:
            return refusal
    if request.kind in c.WORKLOAD_KINDS and request.operation in ("CREATE", "UPDATE"):
        return _workload(request, view)
    if request.kind != "Pod" or request.operation not in ("CREATE", "UPDATE"):
        return Decision.allow()
    return _pod_update(request, view) if request.operation == "UPDATE" else _pod_create(request, view)


# Pods.
def _pod_create(request: ReviewRequest, view: ClusterView) -> Decision:
    pod = request.object
    if not isinstance(pod, dict):
        return Decision.deny("pod object is missing or not a JSON object")
    metadata = _mapping(pod.get("metadata"))
    labels = _strings(metadata.get("labels"), "label")
    annotations = _strings(metadata.get("annotations"), "annotation")
    conf = view.conf

    if not conf.bypass_auth and ANNOTATION_USER_INFO in annotations:
        refusal = _check_user_info(request, annotations[ANNOTATION_USER_INFO], view)
        if refusal:
            return refusal
    if labels.get(c.LABEL_APP) == c.LABEL_APP_VALUE or not view.should_process(request.namespace):
        return Decision.allow()

    patch: list[dict] = []
    if "metadata" not in pod:
        patch.append({"op": "add", "path": "/metadata", "value": {}})
    if not isinstance(pod.get("spec"), dict):
        patch.append({"op": "add", "path": "/spec", "value": {}})
    patch.append({"op": "add", "path": "/spec/schedulerName", "value": SCHEDULER_NAME})

    new_annotations = dict(annotations)
    if not conf.bypass_auth and ANNOTATION_USER_INFO not in annotations:
        new_annotations[ANNOTATION_USER_INFO] = user_info_json(request.username, request.groups)
    labelled = view.should_label(request.namespace)
    # As upstream, the preemption opt-out belongs to the labelling step: a namespace whose pods get no
    # labels gets only the scheduler name and the user.
    if labelled and new_annotations.get(c.ANNOTATION_ALLOW_PREEMPTION) not in ("true", "false"):
        priority_class = _mapping(pod.get("spec")).get("priorityClassName")
        if priority_class is not None and not isinstance(priority_class, str):
            return Decision.deny("spec.priorityClassName is not a string")
        allowed = view.allows_preemption(priority_class)
        new_annotations[c.ANNOTATION_ALLOW_PREEMPTION] = "true" if allowed else "false"
    if new_annotations != annotations:
        patch.append({"op": "add", "path": "/metadata/annotations", "value": new_annotations})

    if labelled:
        new_labels = _labels(labels, annotations, request.namespace, view)
        if new_labels != labels:
            patch.append({"op": "add", "path": "/metadata/labels", "value": new_labels})
    return Decision.allow(patch)


def _labels(labels: dict[str, str], annotations: dict[str, str], namespace: str,
            view: ClusterView) -> dict[str, str]:
    """The pod's labels with the application id, queue and state-aware marker YuniKorn needs."""
    conf = view.conf
    result = dict(labels)
    app_id = named_application_id(labels, annotations)
    if not app_id:
        app_id = autogen_application_id(namespace, conf.generate_unique_app_id)
        result[LABEL_DISABLE_STATE_AWARE] = "true"
    result[LABEL_APPLICATION_ID] = app_id
    result[LABEL_APP_ID] = app_id
    queue = named_queue(labels, annotations) or conf.default_queue
    if queue:
        result[LABEL_QUEUE_LEGACY] = queue
    return result


def _pod_update(request: ReviewRequest, view: ClusterView) -> Decision:
    new, old = request.object, request.old_object
    if not isinstance(new, dict) or not isinstance(old, dict):
        return Decision.deny("pod update without both object and oldObject")
    new_meta, old_meta = _mapping(new.get("metadata")), _mapping(old.get("metadata"))
    labels = _strings(new_meta.get("labels"), "label")
    if labels.get(c.LABEL_APP) == c.LABEL_APP_VALUE or not _should_review(request.namespace, labels, view):
        return Decision.allow()
    if (_strings(new_meta.get("annotations"), "annotation").get(ANNOTATION_USER_INFO, "")
            != _strings(old_meta.get("annotations"), "annotation").get(ANNOTATION_USER_INFO, "")):
        return Decision.deny("user info annotation change is not allowed")
    return Decision.allow()


# Workloads: only the pod template's user.info, which the controllers the webhook trusts copy into pods.
def _workload(request: ReviewRequest, view: ClusterView) -> Decision:
    workload = request.object
    if not isinstance(workload, dict):
        return Decision.deny(f"{request.kind} object is missing or not a JSON object")
    conf = view.conf
    if request.kind == "ReplicaSet" and _matches_any(conf.system_users, request.username):
        return Decision.allow()  # a controller re-creating its ReplicaSet: a patch here would loop forever
    path = _TEMPLATE_PATHS.get(request.kind, _DEFAULT_TEMPLATE_PATH)
    template = _template_metadata(workload, path)
    labels = _strings(template.get("labels"), "label")
    annotations = _strings(template.get("annotations"), "annotation")
    if not _should_review(request.namespace, labels, view) or conf.bypass_auth:
        return Decision.allow()
    user_info = annotations.get(ANNOTATION_USER_INFO)
    previous = None
    if request.operation == "UPDATE":
        if not isinstance(request.old_object, dict):
            return Decision.deny(f"{request.kind} update without both object and oldObject")
        previous = _annotations_at(request.old_object, path).get(ANNOTATION_USER_INFO)
        if user_info == previous:  # kept as it was (or never there: adding it now would roll out the pods)
            return Decision.allow()
    if user_info is not None:  # set, or changed, by the submitter: only trusted users may
        return _check_user_info(request, user_info, view) or Decision.allow()
    patch = []
    parent: Mapping = workload
    for depth in range(1, len(path) + 1):  # create any missing parent so the final add has somewhere to go
        if path[depth - 1] not in parent:
            patch.append({"op": "add", "path": "/" + "/".join(path[:depth]), "value": {}})
        parent = _mapping(parent.get(path[depth - 1]))
    annotations = {**annotations, ANNOTATION_USER_INFO: user_info_json(request.username, request.groups)}
    patch.append({"op": "add", "path": "/" + "/".join(path) + "/annotations", "value": annotations})
    return Decision.allow(patch)


def _template_metadata(workload: Mapping, path: tuple[str, ...]) -> Mapping:
    node = workload
    for step in path:
        node = _mapping(node.get(step))
    return node


def _annotations_at(obj, path: tuple[str, ...]) -> dict[str, str]:
    """The annotations of the metadata at ``path`` in ``obj`` (empty when any part is missing)."""
    return _strings(_template_metadata(_mapping(obj), path).get("annotations"), "annotation")


# Placeholders: the shim takes pods marked so for a gang's reservation, so only the scheduler may mark one.
def _placeholder_refusal(request: ReviewRequest) -> Decision | None:
    """The denial of a pod, or a workload's pod template, that a user marks as a placeholder; in every
    namespace, since the shim schedules any pod that names it, processed or not."""
    if request.kind == "Pod":
        path: tuple[str, ...] = ("metadata",)
    elif request.kind in c.WORKLOAD_KINDS:
        path = _TEMPLATE_PATHS.get(request.kind, _DEFAULT_TEMPLATE_PATH)
    else:
        return None
    if request.operation not in ("CREATE", "UPDATE"):
        return None
    mark = _annotations_at(request.object, path).get(c.ANNOTATION_PLACEHOLDER)
    if request.operation == "UPDATE":
        if mark != _annotations_at(request.old_object, path).get(c.ANNOTATION_PLACEHOLDER):
            return Decision.deny("placeholder annotation change is not allowed")
        return None
    if mark is None:
        return None
    log.info("denied %s %s/%s: user %s may not mark a placeholder", request.kind, request.namespace, request.name,
             request.username)
    return Decision.deny(f"user {request.username} is not allowed to set annotation {c.ANNOTATION_PLACEHOLDER}: "
                         "only the scheduler creates placeholder pods")


# user.info.
def user_info_json(user: str, groups: tuple[str, ...]) -> str:
    """``{"user":..,"groups":[..]}`` compact; an empty user or group list is left out."""
    info: dict = {}
    if user:
        info["user"] = user
    if groups:
        info["groups"] = list(groups)
    return json.dumps(info, separators=(",", ":"))


def _check_user_info(request: ReviewRequest, value: str, view: ClusterView) -> Decision | None:
    """None when the submitter may set ``value`` and it is well formed; otherwise the denial."""
    conf = view.conf
    trusted = ((conf.trust_controllers and _matches_any(conf.system_users, request.username))
               or _matches_any(conf.external_users, request.username)
               or any(_matches_any(conf.external_groups, group) for group in request.groups))
    if not trusted:
        log.info("denied %s %s/%s: user %s may not set %s", request.kind, request.namespace, request.name,
                 request.username, ANNOTATION_USER_INFO)
        return Decision.deny(f"user {request.username} with groups [{','.join(request.groups)}] "
                             "is not allowed to set user annotation")
    try:
        info = orjson.loads(value)  # nesting is limited (1,024 levels): a deep value is an error, not a crash
    except ValueError as error:
        return Decision.deny(f"invalid {ANNOTATION_USER_INFO} annotation: {error}")
    if (not isinstance(info, dict) or not isinstance(info.get("user", ""), str)
            or not isinstance(info.get("groups", []), list)
            or not all(isinstance(g, str) for g in info.get("groups", []))):
        return Decision.deny(f'invalid {ANNOTATION_USER_INFO} annotation: expected {{"user":string,'
                             '"groups":[string]}')
    return None


# Helpers.
def _should_review(namespace: str, labels: Mapping, view: ClusterView) -> bool:
    has_app_id = bool(named_application_id(labels, {}))
    return view.should_process(namespace) and (has_app_id or view.should_label(namespace))


def _matches_any(patterns, text: str) -> bool:
    return any(pattern.search(text) for pattern in patterns)


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value, what: str) -> dict[str, str]:
    """A labels or annotations map, whose values must be strings (the API server refuses anything else;
    converting a nested value would recurse without bound)."""
    mapping = _mapping(value)
    for key, item in mapping.items():
        if not isinstance(item, str):
            raise ValueError(f"{what} {elide(key)} is not a string")
    return mapping
