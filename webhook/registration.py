"""The two webhook configurations that make the API server call this controller.

:func:`install` creates them, or replaces them only when a field this controller owns differs (so
replicas that agree on the CA pair write nothing and converge); :func:`remove` deletes them for a
clean uninstall.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook import constants as c
from webhook import kube

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 10
_WORKLOAD_RESOURCES = ["pods", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs"]


@dataclass(frozen=True)
class _Kind:
    kind: str
    name: str
    webhook: str
    path: str
    rule: dict

    def methods(self, api: client.AdmissionregistrationV1Api):
        suffix = "validating_webhook_configuration" if self.kind.startswith("Validating") \
            else "mutating_webhook_configuration"
        return tuple(getattr(api, f"{verb}_{suffix}") for verb in ("read", "create", "replace", "delete"))


VALIDATING = _Kind("ValidatingWebhookConfiguration", c.VALIDATING_CONFIGURATION, c.VALIDATING_WEBHOOK,
                   c.VALIDATE_PATH, {"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]})
MUTATING = _Kind("MutatingWebhookConfiguration", c.MUTATING_CONFIGURATION, c.MUTATING_WEBHOOK, c.MUTATE_PATH,
                 {"operations": ["CREATE", "UPDATE"], "apiGroups": ["", "apps", "batch"], "apiVersions": ["v1"],
                  "resources": list(_WORKLOAD_RESOURCES)})
KINDS = (VALIDATING, MUTATING)


def desired_webhooks(kind: _Kind, service: str, namespace: str, bundle: bytes) -> list[dict]:
    return [{"name": kind.webhook,
             "clientConfig": {"service": {"name": service, "namespace": namespace, "path": kind.path},
                              "caBundle": base64.b64encode(bundle).decode()},
             "rules": [dict(kind.rule)],
             "failurePolicy": "Ignore",
             "sideEffects": "None",
             "admissionReviewVersions": ["v1"]}]


def _owned(webhooks: list) -> list[dict]:
    """The fields this controller sets, out of stored webhooks (the API server defaults others)."""
    owned = []
    for hook in webhooks or []:
        service = (hook.get("clientConfig") or {}).get("service") or {}
        owned.append({
            "name": hook.get("name"),
            "service": (service.get("name"), service.get("namespace"), service.get("path")),
            "caBundle": (hook.get("clientConfig") or {}).get("caBundle"),
            "rules": [(r.get("operations"), r.get("apiGroups"), r.get("apiVersions"), r.get("resources"))
                      for r in hook.get("rules") or []],
            "failurePolicy": hook.get("failurePolicy"),
            "sideEffects": hook.get("sideEffects"),
            "admissionReviewVersions": hook.get("admissionReviewVersions"),
        })
    return owned


def install(api: client.AdmissionregistrationV1Api, service: str, namespace: str, bundle: bytes) -> None:
    """Make both configurations point at ``service`` in ``namespace`` and trust ``bundle``."""
    for kind in KINDS:
        _install_one(api, kind, service, namespace, bundle)


def _install_one(api, kind: _Kind, service: str, namespace: str, bundle: bytes) -> None:
    read, create, replace, _ = kind.methods(api)
    webhooks = desired_webhooks(kind, service, namespace, bundle)
    for _attempt in range(MAX_ATTEMPTS):
        current = kube.read_raw(read, kind.name)
        try:
            if current is None:
                body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind.kind,
                        "metadata": {"name": kind.name, "labels": {c.LABEL_APP: c.LABEL_APP_VALUE}},
                        "webhooks": webhooks}
                kube.call(create, body)
                log.info("created %s %s", kind.kind, kind.name)
                return
            labels = (current.get("metadata") or {}).get("labels") or {}
            if labels.get(c.LABEL_APP) == c.LABEL_APP_VALUE and _owned(current.get("webhooks")) == _owned(webhooks):
                log.debug("%s %s is up to date", kind.kind, kind.name)
                return
            body = dict(current)
            body["metadata"] = dict(current["metadata"], labels={**labels, c.LABEL_APP: c.LABEL_APP_VALUE})
            body["webhooks"] = webhooks
            kube.call(replace, kind.name, body)
            log.info("updated %s %s", kind.kind, kind.name)
            return
        except ApiException as error:
            if kube.status_of(error) not in (404, 409):
                raise
            log.info("%s %s changed under us (%s); retrying", kind.kind, kind.name, error.status)
    raise RuntimeError(f"unable to install {kind.kind} {kind.name} after {MAX_ATTEMPTS} attempts")


def remove(api: client.AdmissionregistrationV1Api) -> list[str]:
    """Delete both configurations; returns the names that existed."""
    removed = []
    for kind in KINDS:
        delete = kind.methods(api)[3]
        try:
            kube.call(delete, kind.name, _preload_content=False).release_conn()
            removed.append(kind.name)
            log.info("deleted %s %s", kind.kind, kind.name)
        except ApiException as error:
            if kube.status_of(error) != 404:
                raise
    return removed
