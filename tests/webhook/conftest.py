"""Fixtures for the admission controller tests: kubesim plus the real command, and HTTPS clients."""

from __future__ import annotations

import itertools

import pytest
from kubernetes import client

from kubesim import KubeSim
from rest.app import SchedulerView
from rest.server import RestServer
from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS, LABEL_APPLICATION_ID
from tests.coreharness import Core
from tests.waiting import wait_for
from tests.webhook.harness import Controller, HttpsClient, patched, pod, registered_bundle, review
from webhook import constants as c

_barriers = itertools.count()


@pytest.fixture
def start_controller(kubesim, tmp_path):
    """``start_controller(*args, workers=2, env=None)`` -> a healthy Controller against the function's kubesim."""
    kubeconfig = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(kubeconfig)
    started = []

    def start(*args: str, workers: int = 2, wait: bool = True, env: dict[str, str] | None = None) -> Controller:
        controller = Controller(kubeconfig, tmp_path / f"controller-{len(started)}.log", *args, workers=workers,
                                env=env)
        started.append(controller)
        if wait:
            controller.wait_healthy(lambda port: HttpsClient(port, registered_bundle(kubesim)))
        return controller

    yield start
    for controller in started:
        controller.stop()


class RulesCluster:
    """One kubesim and one single-worker controller shared by a module of request/response cases."""

    def __init__(self, sim: KubeSim, controller: Controller) -> None:
        self.sim = sim
        self.controller = controller
        self.api_client = sim.api_client()
        self.core = client.CoreV1Api(self.api_client)
        self.client = HttpsClient(controller.port, registered_bundle(sim))

    def mutate(self, obj, **kwargs) -> dict:
        return self.client.review(c.MUTATE_PATH, review(obj, **kwargs))

    def validate(self, obj, **kwargs) -> dict:
        return self.client.review(c.VALIDATE_PATH, review(obj, kind="ConfigMap", **kwargs))

    def configure(self, values: dict[str, str]) -> None:
        """Replace ``yunikorn-configs`` with ``values`` and wait until the controller has applied it.

        The barrier: a namespace ``sync-<n>`` added to ``noLabelNamespaces`` stops getting labels exactly
        when the new configuration is live (a configmap is applied as a whole).
        """
        barrier = f"sync-{next(_barriers)}"
        data = dict(values)
        key = "admissionController.filtering.noLabelNamespaces"
        data[key] = ",".join(filter(None, [data.get(key, ""), f"^{barrier}$"]))
        body = {"metadata": {"name": CONFIGMAP_CONFIGS, "namespace": "default"}, "data": data}
        try:
            self.core.replace_namespaced_config_map(CONFIGMAP_CONFIGS, "default", body)
        except client.ApiException as error:
            if error.status != 404:
                raise
            self.core.create_namespaced_config_map("default", body)

        def applied():
            result = patched(pod(), self.mutate(pod(), namespace=barrier))
            return LABEL_APPLICATION_ID not in (result["metadata"].get("labels") or {})
        wait_for(applied, timeout=10, interval=0.05, message="the configuration change to be applied")

    def close(self) -> None:
        self.client.close()
        self.api_client.close()


@pytest.fixture(scope="module")
def rules(tmp_path_factory, scheduler_rest):
    sim = KubeSim(bookmark_interval=0.2).start()
    api = sim.api_client()
    scheduling = client.SchedulingV1Api(api)
    scheduling.create_priority_class({"metadata": {"name": "no-preempt",
                                                   "annotations": {c.ANNOTATION_ALLOW_PREEMPTION: "false"}},
                                      "value": 1000})
    scheduling.create_priority_class({"metadata": {"name": "plain"}, "value": 10})
    sim.create_namespace("ns-disabled", {c.ANNOTATION_ENABLE_YUNIKORN: "false"})
    sim.create_namespace("ns-enabled", {c.ANNOTATION_ENABLE_YUNIKORN: "true"})
    sim.create_namespace("ns-nolabel", {c.ANNOTATION_GENERATE_APP_ID: "false"})
    client.CoreV1Api(api).create_namespaced_config_map("default", {
        "metadata": {"name": CONFIGMAP_DEFAULTS},
        "data": {"admissionController.webHook.schedulerServiceAddress": scheduler_rest.address}})
    api.close()
    folder = tmp_path_factory.mktemp("rules")
    sim.write_kubeconfig(folder / "kubeconfig")
    controller = Controller(folder / "kubeconfig", folder / "controller.log", workers=1)
    cluster = None
    try:
        controller.wait_healthy(lambda port: HttpsClient(port, registered_bundle(sim)))
        cluster = RulesCluster(sim, controller)
        yield cluster
    finally:
        if cluster:
            cluster.close()
        controller.stop()
        sim.stop()


@pytest.fixture
def configured(rules):
    """``configured({...})`` applies a configuration for one test; the default one is restored after."""
    yield rules.configure
    rules.configure({})


class _RecordingScheduler:
    """The core's handle, unchanged, except that it remembers every YAML text it was asked to validate."""

    def __init__(self, scheduler) -> None:
        self._scheduler = scheduler
        self.received: list[str] = []

    def validate(self, text: str):
        self.received.append(text)
        return self._scheduler.validate(text)

    def __getattr__(self, name):
        return getattr(self._scheduler, name)


class SchedulerRest:
    """A real core behind the real REST app on loopback: what the webhook's validation calls."""

    def __init__(self) -> None:
        self.core = Core()
        self._recorder = _RecordingScheduler(self.core.scheduler)
        self.server = RestServer(SchedulerView(self._recorder), host="127.0.0.1", port=0)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    @property
    def received(self) -> list[str]:
        """The YAML bodies the scheduler validated, in order."""
        return self._recorder.received

    def stop(self) -> None:
        self.server.stop()
        self.core.scheduler.stop()


@pytest.fixture(scope="module")
def scheduler_rest():
    scheduler = SchedulerRest()
    yield scheduler
    scheduler.stop()
