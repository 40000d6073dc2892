"""The ServiceAccount controller of kube-controller-manager: every active namespace has a ``default``
ServiceAccount, made when the namespace is and made again when it is deleted. Tokens are not played."""

from __future__ import annotations

from kubesim.resources import BY_PLURAL, NAMESPACE
from kubesim.store import Event, Store
from kubesim.worker import Worker


def controller_user(controller: str) -> dict:
    """The user kube-controller-manager's ``controller`` acts as (its service account, with
    ``--use-service-account-credentials``), as an AdmissionReview's ``userInfo`` names it."""
    return {"username": f"system:serviceaccount:kube-system:{controller}",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]}

SERVICE_ACCOUNT = BY_PLURAL["serviceaccounts"]
DEFAULT = "default"


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
