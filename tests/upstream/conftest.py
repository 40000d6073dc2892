"""A kind-like cluster for the ported suites: kubesim with a tainted control-plane node and two workers
(upstream's scripts/kind.yaml), the scheduler in process, its REST API on a local port, and upstream's
``yunikorn-configs`` (one suite per module, as upstream runs one scheduler per suite)."""

from __future__ import annotations

import contextlib
import pathlib

import pytest
import yaml
from kubernetes import client as k8s

from kubesim import KubeSim
from kubesim.kubelet import set_phase
from rest.app import SchedulerView
from rest.server import RestServer
from tests.shim.cluster import Cluster
from tests.upstream.framework import ConfigMaps, KubeCtl, RClient, create_basic_config_map
from tests.webhook.harness import Controller, HttpsClient, registered_bundle

# Upstream's configmap lives in the scheduler's namespace ("yunikorn"); the test cluster's scheduler reads
# it from "default".
YK_NAMESPACE = "default"
KUBELET_DELAY = 0.05
# health checks are taken when asked rather than every 30 s, so upstream's AfterEach sees the present.
SETTINGS = {"health.checkInterval": "0"}
WORKER_CPU, WORKER_MEMORY = "8", "16Gi"
HUGEPAGES, WORKER_HUGEPAGES = "hugepages-2Mi", "1Gi"
COMPLETING_SECONDS = 30.0
ADMISSION_SERVICE = "yunikorn-admission-controller-service"


class YuniKorn:
    """The cluster a suite runs against: ``kube`` (KubeCtl), ``rest`` (RClient), ``configmaps``."""

    def __init__(self, directory, worker_cpu: str, worker_memory: str) -> None:
        self.sim = KubeSim(bookmark_interval=0.2, kubelet_delay=KUBELET_DELAY).start()
        self.sim.write_kubeconfig(str(directory / "kubeconfig"))
        self.cluster = Cluster(self.sim, str(directory / "kubeconfig"))
        self.kube = KubeCtl(self.sim, self.cluster.api)
        self.cluster.node("kind-control-plane", cpu=worker_cpu, memory=worker_memory,
                          labels={"node-role.kubernetes.io/control-plane": ""},
                          taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])
        for name in ("kind-worker", "kind-worker2"):  # with huge pages, for the gang suite's Verify_HugePage
            self.cluster.node(name, cpu=worker_cpu, memory=worker_memory, **{HUGEPAGES: WORKER_HUGEPAGES})
        self._kube_system()
        self.cluster.configure(yaml.safe_dump(create_basic_config_map(), sort_keys=False),
                               namespace=YK_NAMESPACE, **SETTINGS)
        self.server: RestServer | None = None
        self.rest = RClient("")
        self.configmaps = ConfigMaps(self.kube, self.rest, YK_NAMESPACE)
        self.start()

    def _kube_system(self) -> None:
        """kind's kube-system pods, bound by the default scheduler or static, Running: the scheduler tracks
        them as foreign allocations."""
        control_plane = "kind-control-plane"
        pods = [(f"{c}-{control_plane}", control_plane, cpu, memory)
                for c, cpu, memory in (("etcd", "100m", "100Mi"), ("kube-apiserver", "250m", ""),
                                       ("kube-controller-manager", "200m", ""), ("kube-scheduler", "100m", ""))]
        pods += [(f"coredns-{i}", control_plane, "100m", "70Mi") for i in range(2)]
        for i, node in enumerate((control_plane, "kind-worker", "kind-worker2")):
            pods += [(f"kindnet-{i}", node, "100m", "50Mi"), (f"kube-proxy-{i}", node, "", "")]
        for name, node, cpu, memory in pods:
            requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
            self.cluster.core_api.create_namespaced_pod("kube-system", {
                "metadata": {"name": name, "namespace": "kube-system"},
                "spec": {"nodeName": node, "schedulerName": "default-scheduler",
                         "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "main", "image": name, "resources": {"requests": requests}}]}})
            set_phase(self.sim.store, "kube-system", name, "Running")

    def start(self) -> None:
        # upstream's completing timeout: its suites read an application whose pods are gone while it is Completing
        service = self.cluster.start_scheduler(completing=COMPLETING_SECONDS)
        self.server = RestServer(SchedulerView(self.cluster.scheduler, shim_state=service.latest_state,
                                               actor_failures=service.supervision.failures),
                                 host="127.0.0.1", port=0)
        self.rest.base_url = self.server.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.cluster.stop_scheduler()

    def restart_yunikorn(self) -> None:
        """RestartYunikorn: the scheduler's pod is deleted and a new one recovers the cluster."""
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        self.cluster.close()
        self.sim.stop()


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/upstream/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.upstream)


@pytest.fixture(scope="module")
def yk(tmp_path_factory):
    """One scheduler per suite."""
    made = YuniKorn(tmp_path_factory.mktemp("upstream"), WORKER_CPU, WORKER_MEMORY)
    yield made
    made.close()


@pytest.fixture(scope="module")
def suite(yk, request):
    """BeforeSuite's UpdateConfigMapWrapper(oldConfigMap, SCHED_POLICY) and AfterSuite's restore; a module sets
    ``SCHED_POLICY`` (default none) or defines its own ``suite``."""
    old = yk.configmaps.update(getattr(request.module, "SCHED_POLICY", ""))
    yield yk
    yk.configmaps.restore(old)


@contextlib.contextmanager
def running_admission_controller(yk, folder: pathlib.Path):
    """The chart's admission controller beside the scheduler, as upstream's cluster runs it: the
    ``yunikorn-admission-controller`` command, its Service (kubesim routes the cluster IP on loopback), and
    the scheduler's REST address in ``yunikorn-defaults``. It registers its webhooks itself."""
    core = yk.kube.core
    namespace = yk.configmaps.namespace
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "yunikorn-defaults"}, "data": {
        "admissionController.webHook.schedulerServiceAddress": yk.rest.base_url.split("://")[1].rstrip("/")}})
    controller = Controller(pathlib.Path(yk.cluster.kubeconfig), folder / "controller.log", workers=1)
    try:
        core.create_namespaced_service(namespace, {"metadata": {"name": ADMISSION_SERVICE}, "spec": {
            "clusterIP": "127.0.0.1", "ports": [{"port": 443, "targetPort": controller.port}]}})
        controller.wait_healthy(lambda port: HttpsClient(port, registered_bundle(
            yk.sim, "validatingwebhookconfigurations")))
        yield controller
    finally:
        controller.stop()
        registration = k8s.AdmissionregistrationV1Api(core.api_client)
        for made in registration.list_validating_webhook_configuration().items:
            registration.delete_validating_webhook_configuration(made.metadata.name)
        for made in registration.list_mutating_webhook_configuration().items:
            registration.delete_mutating_webhook_configuration(made.metadata.name)
        core.delete_namespaced_service(ADMISSION_SERVICE, namespace)
        core.delete_namespaced_config_map("yunikorn-defaults", namespace)


@pytest.fixture(scope="module")
def admission_controller(yk, tmp_path_factory):
    """The admission controller for a whole suite (see ``running_admission_controller``)."""
    with running_admission_controller(yk, tmp_path_factory.mktemp("admission")) as controller:
        yield controller


@pytest.fixture
def spec_admission_controller(yk, tmp_path):
    """The admission controller for one spec of a suite whose other specs run without it."""
    with running_admission_controller(yk, tmp_path) as controller:
        yield controller
