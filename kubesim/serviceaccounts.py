"""The ServiceAccount and tokens controllers of kube-controller-manager: every active namespace has a
``default`` ServiceAccount, made when the namespace is and made again when it is deleted; a
``kubernetes.io/service-account-token`` Secret naming an account (annotation
``kubernetes.io/service-account.name``) gets its ``token``, ``ca.crt`` and ``namespace``, and goes when
its account goes."""

from __future__ import annotations

import base64

from kubesim import auth
from kubesim.resources import BY_PLURAL, NAMESPACE
from kubesim.store import Event, Store, clone
from kubesim.worker import Worker


def controller_user(controller: str) -> dict:
    """The user kube-controller-manager's ``controller`` acts as (its service account, with
    ``--use-service-account-credentials``), as an AdmissionReview's ``userInfo`` names it."""
    return auth.service_account_user("kube-system", controller).user_info()

SERVICE_ACCOUNT = BY_PLURAL["serviceaccounts"]
SECRET = BY_PLURAL["secrets"]
DEFAULT = "default"
# kubesim serves plain HTTP: the CA a pod would trust is a placeholder, as clients of kubesim never use it.
CA_PLACEHOLDER = base64.b64encode(b"kubesim serves plain HTTP: no certificate authority\n").decode()


class ServiceAccountController(Worker):
    def __init__(self, store: Store) -> None:
        super().__init__("kubesim-serviceaccount-controller")
        self._store = store

    def start(self) -> None:
        with self._store.lock:
            for namespace in self._store.list(NAMESPACE)[0]:
                self.handle(namespace["metadata"]["name"])  # at once: a client's first look finds them
            self._store.listeners.append(self._on_event)
        super().start()

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: a new namespace, or a default account deleted."""
        meta = event.new["metadata"]
        if event.kind is NAMESPACE and event.type == "ADDED":
            self.schedule(meta["name"])
        elif event.kind is SERVICE_ACCOUNT and event.type == "DELETED" and meta["name"] == DEFAULT:
            self.schedule(meta["namespace"])

    def handle(self, item) -> None:
        with self._store.lock:
            namespace = self._store.find(NAMESPACE, "", item)
            if namespace is None or namespace["metadata"].get("deletionTimestamp") \
                    or self._store.find(SERVICE_ACCOUNT, item, DEFAULT) is not None:
                return
            self._store.create(SERVICE_ACCOUNT, item, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                       "metadata": {"name": DEFAULT, "namespace": item}})


class TokensController(Worker):
    """Fills service-account-token Secrets and deletes those of a deleted account."""

    def __init__(self, store: Store, tokens: auth.Tokens) -> None:
        super().__init__("kubesim-tokens-controller")
        self._store, self._tokens = store, tokens

    def start(self) -> None:
        with self._store.lock:
            self._store.listeners.append(self._on_event)
        super().start()

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: a token Secret written, or an account deleted."""
        meta = event.new["metadata"]
        if event.kind is SECRET and event.type != "DELETED" and event.new.get("type") == auth.TOKEN_SECRET_TYPE:
            self.schedule((meta["namespace"], meta["name"]))
        elif event.kind is SERVICE_ACCOUNT and event.type == "DELETED":
            for secret in self._store.list(SECRET, meta["namespace"])[0]:
                if _account_of(secret) == (meta["name"], meta["uid"]):
                    self.schedule((meta["namespace"], secret["metadata"]["name"]))

    def handle(self, item) -> None:
        namespace, name = item
        with self._store.lock:
            secret = self._store.find(SECRET, namespace, name)
            if secret is None:
                return
            account_name, uid = _account_of(secret)
            account = self._store.find(SERVICE_ACCOUNT, namespace, account_name or "")
            if account is None or (uid and uid != account["metadata"]["uid"]):
                self._store.delete(SECRET, namespace, name)  # its account is gone (or replaced): so is the token
                return
            if (secret.get("data") or {}).get("token"):
                return
            uid = account["metadata"]["uid"]
            filled = clone(secret)
            filled["metadata"].setdefault("annotations", {})[auth.SA_UID_ANNOTATION] = uid
            token = self._tokens.legacy(namespace, account_name, uid, name)
            filled["data"] = {**(secret.get("data") or {}), "ca.crt": CA_PLACEHOLDER,
                              "namespace": base64.b64encode(namespace.encode()).decode(),
                              "token": base64.b64encode(token.encode()).decode()}
            self._store.replace(SECRET, namespace, name, filled, None)


def _account_of(secret: dict) -> tuple[str | None, str | None]:
    annotations = secret["metadata"].get("annotations")
    annotations = annotations if isinstance(annotations, dict) else {}
    name, uid = annotations.get(auth.SA_NAME_ANNOTATION), annotations.get(auth.SA_UID_ANNOTATION)
    return (name if isinstance(name, str) else None), (uid if isinstance(uid, str) else None)
