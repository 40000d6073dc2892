"""KubeSim: the emulator as one object to start, fill, fault and stop."""

from __future__ import annotations

import threading
from collections import deque
from typing import NamedTuple

from kubesim import auth, priority
from kubesim.admission import Webhooks
from kubesim.api import Api
from kubesim.collector import GarbageCollector
from kubesim.cronjobs import CronJobController
from kubesim.daemonsets import DaemonSetController
from kubesim.deployments import DeploymentController, ReplicaSetController
from kubesim.faults import Faults
from kubesim.jobs import JobController
from kubesim.kubelet import Kubelets, set_phase
from kubesim.rbac import Attributes, Rbac
from kubesim.resources import NAMESPACE, NODE
from kubesim.server import Server
from kubesim.serviceaccounts import ServiceAccountController, TokensController
from kubesim.statefulsets import StatefulSetController
from kubesim.store import Store, Watcher, clone, now_rfc3339
from kubesim.volumes import PersistentVolumeController
from kubesim.worker import Worker


class RequestRecord(NamedTuple):
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int


class KubeSim:
    """A Kubernetes API emulator on loopback; ``KubeSim(port=0).start()``, then ``.url``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, history_size: int = 10000,
                 bookmark_interval: float = 1.0, kubelet_delay: float | None = None,
                 request_log_size: int = 500_000, priority_admission: bool = True, time_factor: float = 1.0,
                 job_controller: bool = True, garbage_collector: bool = True, deployment_controller: bool = True,
                 replicaset_controller: bool = True, volume_controller: bool = True,
                 serviceaccount_controller: bool = True, admission_webhooks: bool = True,
                 statefulset_controller: bool = True, daemonset_controller: bool = True,
                 cronjob_controller: bool = True, rbac: bool = True, kubelet_resize: bool = True) -> None:
        """``kubelet_delay``: seconds from binding until a pod runs (None: no kubelets, so pods never run
        and a deletion is immediate); ``time_factor`` multiplies the kubelets' run times and grace periods
        and the length of a CronJob schedule's minute (``cronjobs.time_factor`` changes the latter later);
        ``rbac``: authorise requests by the stored RBAC objects (else every authenticated user may do
        anything, as ``--authorization-mode=AlwaysAllow``); ``kubelet_resize``: the kubelets apply in-place
        resizes; the other switches turn the Priority admission plugin and each controller on or off."""
        self.host = host
        self.port = port
        self.bookmark_interval = bookmark_interval
        self.store = Store(history_size=history_size)
        self.api = Api(self.store, priority_admission=priority_admission, graceful_pods=kubelet_delay is not None)
        self.tokens = self.api.tokens = auth.Tokens(self.store)
        self.rbac = Rbac(self.store) if rbac else None
        if admission_webhooks:
            self.api.webhooks = Webhooks(self.store)
        self.faults = Faults(self)
        self.request_log: deque[RequestRecord] = deque(maxlen=request_log_size)
        self._controllers: list[Worker] = []
        if kubelet_delay is not None:
            self._controllers.append(Kubelets(self.store, kubelet_delay, time_factor, resize=kubelet_resize))
        if job_controller:
            self._controllers.append(JobController(self.store, self.api))
        if deployment_controller:
            self._controllers.append(DeploymentController(self.store, self.api))
        if replicaset_controller:
            self._controllers.append(ReplicaSetController(self.store, self.api))
        if statefulset_controller:
            self._controllers.append(StatefulSetController(self.store, self.api))
        if daemonset_controller:
            self._controllers.append(DaemonSetController(self.store, self.api))
        self.cronjobs = CronJobController(self.store, self.api, time_factor) if cronjob_controller else None
        if self.cronjobs is not None:
            self._controllers.append(self.cronjobs)
        if volume_controller:
            self._controllers.append(PersistentVolumeController(self.store))
        if serviceaccount_controller:
            self._controllers.append(ServiceAccountController(self.store))
            self._controllers.append(TokensController(self.store, self.tokens))
        if garbage_collector:
            self.api.collector = GarbageCollector(self.store, self.api)
            self._controllers.append(self.api.collector)
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._watches: set[Watcher] = set()
        self._watches_lock = threading.Lock()
        for namespace in ("default", "kube-system"):
            self.store.create(NAMESPACE, "", {"metadata": {"name": namespace}, "spec": {"finalizers": ["kubernetes"]},
                                              "status": {"phase": "Active"}})
        if priority_admission:
            for name, value, description in priority.SYSTEM_CLASSES:
                self.store.create(priority.PRIORITY_CLASS, "", priority.system_class(name, value, description))

    # Life cycle.
    def start(self) -> KubeSim:
        self._server = Server((self.host, self.port), self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="kubesim-server", daemon=True)
        self._thread.start()
        for controller in self._controllers:
            controller.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        server.shutdown()
        with self._watches_lock:
            for watcher in self._watches:
                watcher.offer(Watcher.CLOSED)
        server.close_all_connections()
        server.server_close()
        self._thread.join(timeout=5)
        for controller in self._controllers:
            controller.stop()

    def __enter__(self) -> KubeSim:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # Clients.
    def kubeconfig(self) -> dict:
        return {"apiVersion": "v1", "kind": "Config", "current-context": "kubesim",
                "clusters": [{"name": "kubesim", "cluster": {"server": self.url}}],
                "users": [{"name": "kubesim", "user": {"token": auth.ADMIN_TOKEN}}],
                "contexts": [{"name": "kubesim", "context": {"cluster": "kubesim", "user": "kubesim"}}]}

    def write_kubeconfig(self, path) -> None:
        import yaml

        with open(path, "w") as stream:
            yaml.safe_dump(self.kubeconfig(), stream)

    def api_client(self, pool_size: int = 16):
        """An official-client ApiClient for this emulator."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        configuration.connection_pool_maxsize = pool_size
        return client.ApiClient(configuration)

    # Cluster content.
    def seed_nodes(self, count: int, cpu: str = "8", memory: str = "32Gi", pods: str = "110",
                   labels: dict[str, str] | None = None, prefix: str = "node-", zones: int = 0) -> list[str]:
        """``count`` ready nodes; with ``zones``, labelled ``topology.kubernetes.io/zone`` zone-0... in turn."""
        names = []
        for index in range(count):
            name = f"{prefix}{index:05d}"
            capacity = {"cpu": cpu, "memory": memory, "pods": pods}
            zone = {"topology.kubernetes.io/zone": f"zone-{index % zones}"} if zones else {}
            node = {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                          "kubernetes.io/os": "linux", **zone, **(labels or {})}},
                    "spec": {},
                    "status": {"capacity": dict(capacity), "allocatable": dict(capacity),
                               "conditions": [{"type": "Ready", "status": "True",
                                               "lastHeartbeatTime": now_rfc3339(), "reason": "KubeletReady"}],
                               "addresses": [{"type": "Hostname", "address": name}]}}
            self.store.create(NODE, "", node)
            names.append(name)
        return names

    def create_namespace(self, name: str, annotations: dict[str, str] | None = None) -> dict:
        return self.store.create(NAMESPACE, "", {"metadata": {"name": name, "annotations": dict(annotations or {})},
                                                 "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})

    def complete_pod(self, namespace: str, name: str, phase: str = "Succeeded") -> dict | None:
        """The pod's containers end: phase Succeeded or Failed, as its kubelet would report."""
        return set_phase(self.store, namespace, name, phase)

    def objects(self, plural: str, namespace: str | None = None) -> list[dict]:
        """Deep copies of the stored objects of one kind (for assertions)."""
        with self.store.lock:
            return [clone(obj) for (kind, ns, _), obj in self.store.objects.items()
                    if kind == plural and (namespace is None or ns == namespace)]

    # Used by the server.
    def allows(self, user: auth.User, attributes: Attributes | None) -> bool:
        return self.rbac is None or self.rbac.allows(user, attributes)

    def log_request(self, verb, resource, subresource, namespace, name, code) -> None:
        self.request_log.append(RequestRecord(verb, resource, subresource, namespace, name, code))

    def watch_opened(self, watcher: Watcher) -> None:
        with self._watches_lock:
            self._watches.add(watcher)

    def watch_closed(self, watcher: Watcher) -> None:
        with self._watches_lock:
            self._watches.discard(watcher)

    def open_watches(self) -> int:
        with self._watches_lock:
            return len(self._watches)

    def drop_watches(self) -> int:
        with self._watches_lock:
            open_now = list(self._watches)
        for watcher in open_now:
            watcher.offer(Watcher.DROPPED)
        return len(open_now)
