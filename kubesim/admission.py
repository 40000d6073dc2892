"""Dynamic admission, as kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins.

A create or update (PUT) of an object is sent as an AdmissionReview v1 to each webhook of the stored
MutatingWebhookConfigurations (by configuration name), whose JSONPatch answers are applied in turn, then
to each webhook of the ValidatingWebhookConfigurations. A webhook is called when one of its ``rules``
names the operation, the kind's group, version and resource (``*`` for any), and its
``namespaceSelector`` (the namespace's labels) and ``objectSelector`` (the object's labels) match. It is
reached at ``clientConfig.url``, or for ``clientConfig.service`` at the Service's ``clusterIP`` and the
``targetPort`` of its port (kubesim plays kube-proxy on loopback), over HTTPS trusting ``caBundle`` and
checking the name ``<service>.<namespace>.svc``. ``allowed: false`` refuses the request with
kube-apiserver's ``admission webhook "<name>" denied the request: <message>``; a webhook that cannot be
called (or answers nonsense) within ``timeoutSeconds`` refuses it under ``failurePolicy: Fail`` (the
default) and is skipped under ``Ignore``. Patches, deletions and subresources are not sent. A review's
``userInfo`` is the request's user (authenticated or impersonated, see kubesim.auth), or for a
controller's write its service account.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import ssl
import uuid
from urllib.parse import urlsplit

from kubesim import auth, errors, patch
from kubesim.deployments import _selector_text
from kubesim.resources import BY_PLURAL, NAMESPACE, Kind
from kubesim.selectors import label_selector
from kubesim.store import Event, Store

log = logging.getLogger(__name__)
MUTATING = BY_PLURAL["mutatingwebhookconfigurations"]
VALIDATING = BY_PLURAL["validatingwebhookconfigurations"]
SERVICE = BY_PLURAL["services"]
ADMIN = auth.ADMIN.user_info()


class _Unreachable(Exception):
    """The webhook could not be called or gave no usable answer."""


class Webhooks:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._configurations: dict[tuple[str, str], dict] = {}  # (plural, name) -> stored configuration
        with store.lock:
            for kind in (MUTATING, VALIDATING):
                for obj in store.list(kind)[0]:
                    self._configurations[(kind.plural, obj["metadata"]["name"])] = obj
            store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.kind is MUTATING or event.kind is VALIDATING:
            key = (event.kind.plural, event.new["metadata"]["name"])
            if event.type == "DELETED":
                self._configurations.pop(key, None)
            else:
                self._configurations[key] = event.new

    def admit(self, kind: Kind, operation: str, namespace: str, obj: dict, old: dict | None,
              user: dict | None = None) -> dict:
        """``obj`` as the mutating webhooks leave it, once the validating ones allow it (else an ApiError);
        ``user`` is the ``userInfo`` of who asks (the request's authenticated or impersonated user, a
        controller's service account; None: the admin).
        Called without the store lock: a webhook may call the API itself."""
        if not self._configurations or kind is MUTATING or kind is VALIDATING:
            return obj
        for plural in (MUTATING.plural, VALIDATING.plural):
            for key in sorted(k for k in self._configurations if k[0] == plural):
                configuration = self._configurations.get(key) or {}
                for webhook in configuration.get("webhooks") or ():
                    if isinstance(webhook, dict) and self._matches(webhook, kind, operation, namespace, obj, old):
                        obj = self._call(webhook, kind, operation, namespace, obj, old, plural == MUTATING.plural,
                                         user or ADMIN)
        return obj

    def _matches(self, webhook: dict, kind: Kind, operation: str, namespace: str, obj: dict, old: dict | None) -> bool:
        def names(rule: dict, field: str, value: str) -> bool:
            listed = rule.get(field) or ()
            return "*" in listed or value in listed
        if not any(isinstance(rule, dict) and names(rule, "operations", operation) and names(rule, "apiGroups", kind.group)
                   and names(rule, "apiVersions", kind.version) and names(rule, "resources", kind.plural)
                   for rule in webhook.get("rules") or ()):
            return False
        if kind.namespaced or kind is NAMESPACE:
            labels = ((obj if kind is NAMESPACE else self._store.find(NAMESPACE, "", namespace)) or {}).get(
                "metadata", {}).get("labels") or {}
            if not _selects(webhook.get("namespaceSelector"), labels):
                return False
        return any(_selects(webhook.get("objectSelector"), (o.get("metadata") or {}).get("labels") or {})
                   for o in (obj, old) if o is not None)

    def _call(self, webhook: dict, kind: Kind, operation: str, namespace: str, obj: dict, old: dict | None,
              mutating: bool, user: dict) -> dict:
        name = webhook.get("name", "")
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": str(uuid.uuid4()), "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "resource": {"group": kind.group, "version": kind.version, "resource": kind.plural},
            "requestKind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "requestResource": {"group": kind.group, "version": kind.version, "resource": kind.plural},
            "name": (obj.get("metadata") or {}).get("name", ""), "namespace": namespace, "operation": operation,
            "userInfo": user, "object": obj, "oldObject": old, "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1",
                        "kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions"}}}
        try:
            response = self._post(webhook, review)
            if response.get("uid") != review["request"]["uid"] or not isinstance(response.get("allowed"), bool):
                raise _Unreachable("the response carries no matching uid and allowed")
            if response["allowed"] and mutating and response.get("patch"):
                if response.get("patchType") != "JSONPatch":
                    raise _Unreachable(f"unsupported patch type {response.get('patchType')!r}")
                operations = json.loads(base64.b64decode(response["patch"]))
        except (_Unreachable, OSError, http.client.HTTPException, ValueError) as error:
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                log.info("webhook %s ignored: %s", name, error)
                return obj
            raise errors.ApiError(500, "InternalError", f'Internal error occurred: failed calling webhook "{name}": '
                                                        f"failed to call webhook: {error}") from None
        if not response["allowed"]:
            raise _denied(name, response.get("status"))
        if mutating and response.get("patch"):
            return patch.json_patch(obj, operations)
        return obj

    def _post(self, webhook: dict, review: dict) -> dict:
        config = webhook.get("clientConfig") or {}
        timeout = webhook.get("timeoutSeconds") or 10
        if config.get("url"):
            url = urlsplit(config["url"])
            host, port, server_name, path = url.hostname, url.port or 443, url.hostname, url.path or "/"
        elif config.get("service"):
            host, port, server_name, path = self._resolve(config["service"])
        else:
            raise _Unreachable("the webhook has no clientConfig url or service")
        context = ssl.create_default_context(cadata=base64.b64decode(config["caBundle"]).decode()
                                             if config.get("caBundle") else None)
        connection = _Connection(host, port, server_name, timeout=timeout, context=context)
        try:
            connection.request("POST", path, body=json.dumps(review),
                               headers={"Content-Type": "application/json", "Accept": "application/json"})
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        if answer.status != 200:
            raise _Unreachable(f"the server answered {answer.status}")
        response = json.loads(body).get("response")
        if not isinstance(response, dict):
            raise _Unreachable("the answer carries no response")
        return response

    def _resolve(self, service_ref: dict) -> tuple[str, int, str, str]:
        name, namespace = service_ref.get("name", ""), service_ref.get("namespace", "")
        service = self._store.find(SERVICE, namespace, name)
        if service is None:
            raise _Unreachable(f'service "{name}" not found')
        spec = service.get("spec") or {}
        wanted = service_ref.get("port") or 443
        port = next((p for p in spec.get("ports") or () if isinstance(p, dict) and p.get("port") == wanted), None)
        if port is None or not spec.get("clusterIP") or spec["clusterIP"] == "None":
            raise _Unreachable(f'service "{name}" has no cluster IP with port {wanted}')
        target = port.get("targetPort", wanted)
        if not isinstance(target, int):
            raise _Unreachable(f"named target port {target!r} (kubesim serves no endpoints)")
        return spec["clusterIP"], target, f"{name}.{namespace}.svc", service_ref.get("path") or "/"


class _Connection(http.client.HTTPSConnection):
    """HTTPS to an address, checking the certificate for another name (a service's DNS name)."""

    def __init__(self, host: str, port: int, server_name: str, **kwargs) -> None:
        super().__init__(host, port, **kwargs)
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_name)


def _selects(selector, labels: dict) -> bool:
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return True
    matcher = label_selector(_selector_text(selector))
    return matcher is None or matcher({"metadata": {"labels": labels}})


def _denied(name: str, status) -> errors.ApiError:
    """kube-apiserver's refusal for a webhook's ``allowed: false`` (its status code, at least 400)."""
    status = status if isinstance(status, dict) else {}
    denied_by = f'admission webhook "{name}" denied the request'
    message = status.get("message") or status.get("reason")
    code = status.get("code") if isinstance(status.get("code"), int) and status["code"] >= 400 else 400
    return errors.ApiError(code, status.get("reason") or "", f"{denied_by}: {message}" if message
                           else f"{denied_by} without explanation")
