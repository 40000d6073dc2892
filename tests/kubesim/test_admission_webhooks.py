"""kubesim's calls to admission webhooks, through the official client: an HTTPS webhook on loopback (its
certificate for the service's DNS name, trusted through caBundle) reached by url or through a Service;
reviews as kube-apiserver sends them, JSONPatch answers applied, refusals in kube-apiserver's words,
rules and selectors, failurePolicy and timeoutSeconds, and the switch."""

from __future__ import annotations

import base64
import datetime as dt
import json
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.waiting import wait_for
from webhook import pki


class Hook:
    """An HTTPS admission webhook: ``answer(request) -> response fields``; every review it got is kept."""

    def __init__(self, service: str = "hook") -> None:
        now = dt.datetime.now(dt.UTC)
        self.ca = pki.generate_ca(now, dt.timedelta(days=1), key_bits=2048)
        served = pki.generate_server_certificate(self.ca, service, "default", now)
        self.reviews: list[dict] = []
        self.answer = lambda request: {"allowed": True}
        self.delay = 0.0
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.reviews.append({"path": self.path, **review})
                time.sleep(hook.delay)
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
                    "uid": review["request"]["uid"], **hook.answer(review["request"])}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.NamedTemporaryFile() as chain:
            chain.write(served.pem)
            chain.flush()
            context.load_cert_chain(chain.name)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def core(sim_api):
    return client.CoreV1Api(sim_api)


@pytest.fixture
def hook(sim_core):
    """The webhook, behind the Service ``default/hook`` (its cluster IP on loopback, its port 443 mapped)."""
    made = Hook()
    sim_core.create_namespaced_service("default", {"metadata": {"name": "hook"}, "spec": {
        "clusterIP": "127.0.0.1", "ports": [{"port": 443, "targetPort": made.port}]}})
    yield made
    made.stop()


@pytest.fixture
def admission(sim_api):
    return client.AdmissionregistrationV1Api(sim_api)


def register(admission, hook: Hook, kind: str = "Validating", name: str = "check.example.com", by_service=True,
             resources=("configmaps",), operations=("CREATE", "UPDATE"), **more) -> None:
    config = ({"service": {"name": "hook", "namespace": "default", "path": "/check", "port": 443}}
              if by_service else {"url": f"https://localhost:{hook.port}/check"})
    webhook = {"name": name, "clientConfig": {**config, "caBundle": hook.bundle},
               "rules": [{"operations": list(operations), "apiGroups": [""], "apiVersions": ["v1"],
                          "resources": list(resources)}],
               "sideEffects": "None", "admissionReviewVersions": ["v1"], **more}
    body = {"metadata": {"name": name}, "webhooks": [webhook]}
    if kind == "Validating":
        admission.create_validating_webhook_configuration(body)
    else:
        admission.create_mutating_webhook_configuration(body)


def config_map(name: str, labels: dict | None = None, **data) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


def test_a_refusal_is_kube_apiservers_and_changes_nothing(sim, hook, admission, core):
    hook.answer = lambda request: ({"allowed": False, "status": {"message": "queue name is invalid", "code": 403}}
                                   if request["object"]["data"].get("queues") == "bad" else {"allowed": True})
    register(admission, hook)
    core.create_namespaced_config_map("default", config_map("conf", queues="good"))
    with pytest.raises(client.ApiException) as refused:
        core.replace_namespaced_config_map("conf", "default", config_map("conf", queues="bad"))
    assert refused.value.status == 403
    status = json.loads(refused.value.body)
    assert status["message"] == 'admission webhook "check.example.com" denied the request: queue name is invalid'
    assert "reason" not in status  # the webhook gave none
    assert core.read_namespaced_config_map("conf", "default").data == {"queues": "good"}
    create, update = (r["request"] for r in hook.reviews[:2])
    assert hook.reviews[0]["path"] == "/check" and hook.reviews[0]["apiVersion"] == "admission.k8s.io/v1"
    assert (create["operation"], create["oldObject"], create["namespace"], create["name"]) == (
        "CREATE", None, "default", "conf")
    assert create["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert create["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert (update["operation"], update["oldObject"]["data"], update["object"]["data"]) == (
        "UPDATE", {"queues": "good"}, {"queues": "bad"})


def test_a_mutating_webhooks_json_patch_is_stored(sim, hook, admission, core):
    patch = [{"op": "add", "path": "/metadata/annotations", "value": {"mutated": "yes"}}]
    hook.answer = lambda request: {"allowed": True, "patchType": "JSONPatch",
                                   "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
    register(admission, hook, kind="Mutating", resources=("pods",), operations=("CREATE",))
    made = core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "x"}]}})
    assert made.metadata.annotations == {"mutated": "yes"}
    assert hook.reviews[0]["request"]["kind"]["kind"] == "Pod"


@pytest.mark.parametrize("selector, labels, called", [
    ({"namespaceSelector": {"matchLabels": {"team": "a"}}}, {}, False),
    ({"objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}}, {"skip": "1"}, False),
    ({"objectSelector": {"matchLabels": {"app": "web"}}}, {"app": "web"}, True),
    ({}, {}, True),
], ids=["other namespace", "object excluded", "object selected", "no selectors"])
def test_rules_and_selectors_choose_the_requests_sent(sim, hook, admission, core, selector, labels, called):
    register(admission, hook, **selector)
    core.create_namespaced_config_map("default", config_map("conf", labels))
    core.create_namespaced_secret("default", {"metadata": {"name": "s"}})  # no rule names secrets
    assert [r["request"]["name"] for r in hook.reviews] == (["conf"] if called else [])


@pytest.mark.parametrize("policy, refused", [("Fail", True), ("Ignore", False)])
def test_an_unreachable_or_slow_webhook_follows_its_failure_policy(sim, hook, admission, core, policy, refused):
    hook.delay = 5.0  # far beyond the timeout, so that a loaded machine's slowness cannot pass for either
    register(admission, hook, failurePolicy=policy, timeoutSeconds=1)
    register(admission, hook, name="gone.example.com", failurePolicy=policy,
             clientConfig={"service": {"name": "gone", "namespace": "default"}, "caBundle": hook.bundle})
    started = time.monotonic()
    if refused:
        with pytest.raises(client.ApiException) as failed:
            core.create_namespaced_config_map("default", config_map("conf"))
        assert failed.value.status == 500
        assert 'failed calling webhook "check.example.com"' in json.loads(failed.value.body)["message"]
        assert core.list_namespaced_config_map("default").items == []
    else:
        core.create_namespaced_config_map("default", config_map("conf"))
    assert time.monotonic() - started < 4.0  # timeoutSeconds, not the webhook's delay


def test_a_webhook_is_reached_by_url(sim, admission, core):
    by_url = Hook(service="localhost")
    try:
        by_url.answer = lambda request: {"allowed": False, "status": {"reason": "Forbidden"}}
        register(admission, by_url, by_service=False)
        with pytest.raises(client.ApiException) as refused:
            core.create_namespaced_config_map("default", config_map("conf"))
    finally:
        by_url.stop()
    assert refused.value.status == 400  # the webhook gave no code
    assert json.loads(refused.value.body)["message"] == \
        'admission webhook "check.example.com" denied the request: Forbidden'


def test_a_certificate_not_trusted_by_the_ca_bundle_is_a_failure(sim, hook, admission, core):
    other = pki.generate_ca(dt.datetime.now(dt.UTC), dt.timedelta(days=1), key_bits=2048)
    register(admission, hook)
    configuration = admission.read_validating_webhook_configuration("check.example.com")
    configuration.webhooks[0].client_config.ca_bundle = base64.b64encode(other.cert_pem).decode()
    admission.replace_validating_webhook_configuration("check.example.com", configuration)
    with pytest.raises(client.ApiException) as failed:
        core.create_namespaced_config_map("default", config_map("conf"))
    assert failed.value.status == 500 and hook.reviews == []


def test_admission_webhooks_are_switched_off(hook):
    with KubeSim(admission_webhooks=False) as sim, sim.api_client() as api:
        hook.answer = lambda request: {"allowed": False}
        register(client.AdmissionregistrationV1Api(api), hook)
        client.CoreV1Api(api).create_namespaced_config_map("default", config_map("conf"))
        assert hook.reviews == []


def test_a_controllers_write_names_its_service_account(sim, hook, admission, core, sim_api):
    """A client is the admin user; the Deployment and ReplicaSet controllers are their service accounts, as
    an admission controller trusting only system users sees them."""
    register(admission, hook, resources=("pods",), operations=("CREATE",))
    admission.create_validating_webhook_configuration({"metadata": {"name": "apps.example.com"}, "webhooks": [{
        "name": "apps.example.com", "clientConfig": {
            "service": {"name": "hook", "namespace": "default", "path": "/apps", "port": 443}, "caBundle": hook.bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                   "resources": ["replicasets"]}], "sideEffects": "None", "admissionReviewVersions": ["v1"]}]})
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "x"}]}})
    client.AppsV1Api(sim_api).create_namespaced_deployment("default", {
        "metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    wait_for(lambda: len(hook.reviews) >= 3, timeout=10, message="the replica set's and its pod's reviews")
    assert sorted((r["request"]["kind"]["kind"], r["request"]["userInfo"]["username"]) for r in hook.reviews) == [
        ("Pod", "kubernetes-admin"), ("Pod", "system:serviceaccount:kube-system:replicaset-controller"),
        ("ReplicaSet", "system:serviceaccount:kube-system:deployment-controller")]


def test_a_refused_pod_of_a_replica_set_is_a_failed_create_event(sim, hook, admission, core, sim_api):
    """As kube-controller-manager's replicaset controller: the webhook's refusal is a Warning event on the
    ReplicaSet, counted up as the controller tries again, and the pod is made once the webhook allows it."""
    hook.answer = lambda request: {"allowed": False, "status": {"message": "not now", "code": 403}}
    register(admission, hook, resources=("pods",), operations=("CREATE",))
    client.AppsV1Api(sim_api).create_namespaced_replica_set("default", {
        "metadata": {"name": "rs"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs"}}, "template": {
            "metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})

    def failures() -> list:
        return [e for e in core.list_namespaced_event("default").items if e.reason == "FailedCreate"]
    wait_for(lambda: failures() and failures()[0].count >= 2, timeout=10, message="a FailedCreate event counted twice")
    (event,) = failures()
    assert (event.type, event.involved_object.kind, event.involved_object.name) == ("Warning", "ReplicaSet", "rs")
    assert event.message == 'Error creating: admission webhook "check.example.com" denied the request: not now'
    assert event.source.component == "replicaset-controller"
    assert not core.list_namespaced_pod("default").items
    hook.answer = lambda request: {"allowed": True}
    wait_for(lambda: core.list_namespaced_pod("default").items, timeout=10, message="the pod, once allowed")


def test_the_workload_controllers_write_as_their_service_accounts(sim, hook, admission, core, sim_api):
    """StatefulSets, DaemonSets and CronJobs are sent as a client's writes; the pods of the first two and the
    Jobs of the third come from their controllers' service accounts, the Jobs' pods from the Job controller's."""
    admission.create_validating_webhook_configuration({"metadata": {"name": "workloads.example.com"}, "webhooks": [{
        "name": "workloads.example.com", "clientConfig": {
            "service": {"name": "hook", "namespace": "default", "path": "/workloads", "port": 443},
            "caBundle": hook.bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["", "apps", "batch"], "apiVersions": ["v1"],
                   "resources": ["pods", "statefulsets", "daemonsets", "jobs", "cronjobs"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]}]})
    template = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    apps = client.AppsV1Api(sim_api)
    apps.create_namespaced_stateful_set("default", {"metadata": {"name": "sts"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "w"}}, "template": template}})
    apps.create_namespaced_daemon_set("default", {"metadata": {"name": "ds"}, "spec": {
        "selector": {"matchLabels": {"app": "w"}}, "template": template}})
    client.BatchV1Api(sim_api).create_namespaced_cron_job("default", {"metadata": {"name": "cj"}, "spec": {
        "schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
            "spec": {**template["spec"], "restartPolicy": "Never"}}}}}})

    def by_kind() -> dict[str, set[str]]:
        seen: dict[str, set[str]] = {}
        for review in list(hook.reviews):
            user = review["request"]["userInfo"]["username"].removeprefix("system:serviceaccount:kube-system:")
            seen.setdefault(review["request"]["kind"]["kind"], set()).add(user)
        return seen
    wait_for(lambda: len(by_kind().get("Pod", ())) == 3 and "Job" in by_kind(), timeout=10,
             message="pods from each controller and a Job from the CronJob controller")
    assert by_kind() == {"StatefulSet": {"kubernetes-admin"}, "DaemonSet": {"kubernetes-admin"},
                         "CronJob": {"kubernetes-admin"}, "Job": {"cronjob-controller"},
                         "Pod": {"statefulset-controller", "daemon-set-controller", "job-controller"}}


@pytest.mark.parametrize(("kind", "create", "resources", "message"), [
    pytest.param("StatefulSet", lambda api, template: client.AppsV1Api(api).create_namespaced_stateful_set(
        "default", {"metadata": {"name": "w"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                                                        "template": template}}),
                 ("pods",), "create Pod w-0 in StatefulSet w failed error: ", id="StatefulSet"),
    pytest.param("DaemonSet", lambda api, template: client.AppsV1Api(api).create_namespaced_daemon_set(
        "default", {"metadata": {"name": "w"}, "spec": {"selector": {"matchLabels": {"app": "w"}},
                                                        "template": template}}),
                 ("pods",), "Error creating: ", id="DaemonSet"),
    pytest.param("CronJob", lambda api, template: client.BatchV1Api(api).create_namespaced_cron_job(
        "default", {"metadata": {"name": "w"}, "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {
            "template": {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}}}}}),
                 ("jobs",), "Error creating job: ", id="CronJob"),
])
def test_a_refused_write_of_a_workload_controller_is_its_failed_create_event(sim, hook, admission, core, sim_api,
                                                                            kind, create, resources, message):
    """Each controller's FailedCreate event in kube-controller-manager's words, on the workload."""
    hook.answer = lambda request: {"allowed": False, "status": {"message": "not now", "code": 403}}
    group = {"pods": "", "jobs": "batch"}[resources[0]]
    admission.create_validating_webhook_configuration({"metadata": {"name": "deny.example.com"}, "webhooks": [{
        "name": "deny.example.com", "clientConfig": {
            "service": {"name": "hook", "namespace": "default", "path": "/deny", "port": 443}, "caBundle": hook.bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": [group], "apiVersions": ["v1"], "resources": list(resources)}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]}]})
    if kind == "CronJob":
        sim.cronjobs.time_factor = 1 / 60  # a schedule's minute in a second
    create(sim_api, {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    event = wait_for(lambda: next((e for e in core.list_namespaced_event("default").items
                                   if e.reason == "FailedCreate"), None), timeout=10, message="a FailedCreate event")
    assert (event.type, event.involved_object.kind, event.involved_object.name) == ("Warning", kind, "w")
    assert event.message == f'{message}admission webhook "deny.example.com" denied the request: not now'
    assert event.source.component == f"{kind.lower()}-controller"
