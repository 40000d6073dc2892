"""Helpers for end-to-end tests: a real core and shim against kubesim, driven with the official client,
and the invariants every scenario checks (each pod bound at most once, no node over-committed)."""

from __future__ import annotations

from collections import Counter, defaultdict

from kubernetes import client as k8s

from actors.base import Supervision
from actors.core.partition import Timing
from actors.core.scheduler import Scheduler, Tuning
from actors.shim.client import KubeClient, RetryPolicy
from actors.shim.fence import OPEN, LeaderFence
from actors.shim.informer import WatchSettings
from actors.shim.predicates import KubernetesPredicates
from actors.shim.service import SchedulerService, ServiceSettings
from si.clock import REAL_CLOCK, Clock
from si.quantity import from_kubernetes
from tests.shim.doubles import wait_for

FAST_WATCH = WatchSettings(timeout=5, read_timeout=3.0, max_backoff=0.2)
FAST_RETRY = RetryPolicy(attempts=5, deadline=10, initial=0.01, maximum=0.2)


class Cluster:
    """kubesim plus, once ``start_scheduler`` ran, the core and the shim scheduling its pods."""

    def __init__(self, sim, kubeconfig: str) -> None:
        self.sim = sim
        self.kubeconfig = kubeconfig
        self.api = sim.api_client()
        self.core_api = k8s.CoreV1Api(self.api)
        self.scheduler: Scheduler | None = None
        self.service: SchedulerService | None = None
        self.client: KubeClient | None = None

    # ---- the scheduler -------------------------------------------------------------------------

    def start_scheduler(self, running_timeout: float = 30.0, plugin_mode: bool = False,
                        node_lost_after: float = 300.0, standby: LeaderFence | None = None,
                        core_clock: Clock = REAL_CLOCK, completing: float = 0.5) -> SchedulerService:
        """``standby``: start as a leader-election standby whose writes pass ``standby`` (a fence that
        stays closed until the test opens it), and return once it has recovered ahead of leading.
        ``core_clock``: the core's (the shim against kubesim keeps real time). ``completing``: seconds an
        application without pods stays Completing (the core's 30 s, shortened)."""
        self.client = KubeClient.connect(self.kubeconfig, pool_size=32, retry=FAST_RETRY, fence=standby or OPEN)
        supervision = Supervision()  # of the core's and the shim's actors, as the command does
        self.scheduler = Scheduler(predicates=KubernetesPredicates(), tuning=Tuning(timing=Timing(completing=completing)),
                                   tick_interval=0.2, supervisor=supervision, clock=core_clock)
        self.service = SchedulerService(self.client, self.scheduler, ServiceSettings(
            bind_workers=8, event_qps=500, event_burst=500, publish_period=0.2, watch=FAST_WATCH,
            plugin_mode=plugin_mode, node_lost_after=node_lost_after, await_lead=standby is not None),
            supervision).start()
        if standby is not None:
            wait_for(self.service.recovered, timeout=running_timeout, message="the standby recovering ahead of leading")
        else:
            assert self.service.wait_until("Running", running_timeout), self.service.latest_state()
        return self.service

    def stop_scheduler(self) -> None:
        if self.service is not None:
            self.service.stop()
            self.scheduler.stop()
            self.client.close()
            self.service = self.scheduler = self.client = None

    def close(self) -> None:
        self.stop_scheduler()
        self.api.close()

    # ---- cluster content -----------------------------------------------------------------------

    def node(self, name: str, cpu: str = "4", memory: str = "16Gi", labels: dict | None = None,
             taints: list | None = None, **extended: str) -> None:
        """``extended``: more resources the node has (``{"hugepages-2Mi": "1Gi"}``)."""
        capacity = {"cpu": cpu, "memory": memory, "pods": "110", **extended}
        self.core_api.create_node({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {"capacity": capacity, "allocatable": capacity,
                       "conditions": [{"type": "Ready", "status": "True"}]}})

    def pod(self, name: str, cpu: str = "100m", memory: str = "64Mi", namespace: str = "default",
            scheduler: str = "yunikorn", node: str = "", labels: dict | None = None, **spec) -> str:
        body = {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
                "spec": {"schedulerName": scheduler,
                         "containers": [{"name": "main", "image": "busybox",
                                         "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                         **spec}}
        if node:
            body["spec"]["nodeName"] = node
        return self.core_api.create_namespaced_pod(namespace, body).metadata.uid

    def configure(self, queues_yaml: str, namespace: str = "default", **extra: str) -> None:
        body = {"metadata": {"name": "yunikorn-configs", "namespace": namespace},
                "data": {"queues.yaml": queues_yaml, **extra}}
        try:
            self.core_api.create_namespaced_config_map(namespace, body)
        except k8s.ApiException as error:
            if error.status != 409:
                raise
            self.core_api.replace_namespaced_config_map("yunikorn-configs", namespace, body)

    # ---- observations --------------------------------------------------------------------------

    def pods(self) -> dict[str, dict]:
        return {p["metadata"]["name"]: p for p in self.sim.objects("pods")}

    def node_of(self, name: str) -> str | None:
        pod = self.pods().get(name)
        return (pod or {}).get("spec", {}).get("nodeName")

    def bound(self, *names: str) -> bool:
        pods = self.pods()
        return all(pods.get(n, {}).get("spec", {}).get("nodeName") for n in names)

    def wait_bound(self, *names: str, timeout: float = 20.0) -> None:
        wait_for(lambda: self.bound(*names), timeout=timeout)

    def events(self, reason: str, name: str | None = None) -> list:
        return [e for e in self.core_api.list_event_for_all_namespaces().items
                if e.reason == reason and (name is None or e.involved_object.name == name)]

    def core_node(self, name: str):
        """The core's snapshot of node ``name`` in the default partition; ``None`` when it has none."""
        partition = self.scheduler.snapshot().partition("default")
        return next((node for node in partition.nodes if node.node_id == name), None)

    def binds_per_pod(self) -> Counter:
        """Successful binding requests per pod name (kubesim's request log)."""
        return Counter(r.name for r in self.sim.request_log if r.subresource == "binding" and r.code == 201)

    def assert_consistent(self) -> None:
        """No pod was bound twice, and no node holds more than it can."""
        twice = {name: n for name, n in self.binds_per_pod().items() if n > 1}
        assert not twice, f"pods bound more than once: {twice}"
        used: dict[str, Counter] = defaultdict(Counter)
        for pod in self.sim.objects("pods"):
            node = pod["spec"].get("nodeName")
            if node and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                for container in pod["spec"]["containers"]:
                    used[node].update(from_kubernetes(container.get("resources", {}).get("requests", {})))
        for node in self.sim.objects("nodes"):
            name = node["metadata"]["name"]
            allocatable = from_kubernetes(node["status"]["allocatable"])
            for resource, amount in used[name].items():
                assert amount <= allocatable.get(resource, 0), f"node {name} over-committed on {resource}"
