"""The chart's RBAC covers every API call the real commands make, and its probe paths answer.

Each command runs as a process against kubesim, does its job (the scheduler binds a pod, reports an
unschedulable one and records events; the admission controller sets up its CA secret, installs its
webhooks, answers a review and shuts down, then ``--remove-webhooks`` cleans up), and kubesim's request
log is checked call by call against the rules the rendered chart grants the command's service account.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kubesim import KubeSim
from kubesim.resources import BY_PATH
from tests.chart.rbac import Authorizer, calls_from
from tests.chart.rendering import RELEASE_NAMESPACE
from tests.waiting import wait_for

pytestmark = pytest.mark.slow  # the scheduler and the admission controller run against an auditing API server

REPO = Path(__file__).resolve().parents[2]
POD = BY_PATH[("", "v1", "pods")]
CONFIGMAP = BY_PATH[("", "v1", "configmaps")]


def require_command(module: str) -> None:
    if importlib.util.find_spec(module.rpartition(".")[0]) is None or importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not importable yet, so its RBAC cannot be derived from a real run")


def command_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a command run by a test: kubesim's kubeconfig, no in-cluster service account."""
    return {**os.environ, "NAMESPACE": RELEASE_NAMESPACE, "KUBECONFIG": str(tmp_path / "kubeconfig"),
            "KUBERNETES_SERVICE_HOST": ""}


@pytest.fixture
def sim(tmp_path):
    cluster = KubeSim(bookmark_interval=0.2).start()
    cluster.create_namespace(RELEASE_NAMESPACE)
    cluster.write_kubeconfig(str(tmp_path / "kubeconfig"))
    yield cluster
    cluster.stop()


def start(module: str, args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with (tmp_path / f"{module}.log").open("w") as log:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO,
                                env={**command_env(tmp_path), **(env or {})}, stdout=log, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen, tmp_path: Path, module: str) -> str:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            raise AssertionError(f"{module} did not stop within 30 s of SIGTERM") from None
    return (tmp_path / f"{module}.log").read_text()


def assert_covered(sim: KubeSim, objects, account: str) -> None:
    calls = calls_from(sim.request_log)
    authorizer = Authorizer(objects, account, RELEASE_NAMESPACE)
    denied = sorted(str(call) for call in calls if not authorizer.allows(call))
    assert not denied, f"the chart does not let {account} make these calls:\n  " + "\n  ".join(denied)


def made_by(sim: KubeSim) -> set[tuple[str, str, str]]:
    return {(call.verb, call.resource, call.subresource) for call in calls_from(sim.request_log)}


PREEMPTING_QUEUES = """
partitions:
  - name: default
    placementrules: [{name: provided, create: true}]
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: default
          - name: urgent
            resources: {guaranteed: {vcore: 1}}
            properties: {preemption.delay: 0s}
"""


def pending_pod(name: str, cpu: str, queue: str = "root.default") -> dict:
    app = "rbac-app" if queue == "root.default" else "rbac-urgent"
    return {"metadata": {"name": name, "labels": {"applicationId": app, "queue": queue}},
            "spec": {"schedulerName": "yunikorn",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]},
            "status": {"phase": "Pending"}}


@pytest.mark.timeout(120)
def test_scheduler_rbac_covers_its_api_calls(sim, render, tmp_path):
    require_command("actors.cli")
    objects = render()
    account = objects.one("Deployment", "yunikorn-scheduler")["spec"]["template"]["spec"]["serviceAccountName"]
    sim.seed_nodes(2, cpu="2")
    # Created in the store, not over HTTP, so that the request log holds the scheduler's calls only.
    sim.store.create(CONFIGMAP, RELEASE_NAMESPACE, {"metadata": {"name": "yunikorn-configs"},
                                                    "data": {"queues.yaml": PREEMPTING_QUEUES}})
    sim.store.create(POD, "default", pending_pod("fits", "500m"))
    sim.store.create(POD, "default", pending_pod("too-big", "64"))
    # The chart's leader election (on by default): the process's own pod, which it labels.
    sim.store.create(POD, RELEASE_NAMESPACE, {"metadata": {"name": "yunikorn-scheduler-0"},
                                              "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    # A WaitForFirstConsumer claim: the binder binds it to the volume before the pod.
    sim.store.create(BY_PATH[("storage.k8s.io", "v1", "storageclasses")], "", {
        "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"})
    sim.store.create(BY_PATH[("", "v1", "persistentvolumes")], "", {"metadata": {"name": "pv-1"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local"},
        "status": {"phase": "Available"}})
    sim.store.create(BY_PATH[("", "v1", "persistentvolumeclaims")], "default", {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "local", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"}})
    # A gang of one: its placeholder is created, then deleted when the real pod takes its place.
    gang = pending_pod("gang", "100m")
    gang["metadata"]["annotations"] = {"yunikorn.apache.org/task-group-name": "g", "yunikorn.apache.org/task-groups":
                                       '[{"name": "g", "minMember": 1, "minResource": {"cpu": "100m", "memory": "64Mi"}}]'}
    gang["metadata"]["labels"]["applicationId"] = "rbac-gang"
    sim.store.create(POD, "default", gang)
    with_volume = pending_pod("with-volume", "100m")
    with_volume["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    sim.store.create(POD, "default", with_volume)
    module = "actors.cli"
    port = free_port()
    container = objects.one("Deployment", "yunikorn-scheduler")["spec"]["template"]["spec"]["containers"][0]
    election = [arg for arg in container["args"] if arg.startswith("--leader-elect")]
    assert election, "leader election is on in the chart by default"
    health_port = free_port()
    process = start(module, ["--kubeconfig", str(tmp_path / "kubeconfig"), "--rest-port", str(port),
                             "--health-port", str(health_port), *election],
                    tmp_path, env={"POD_NAME": "yunikorn-scheduler-0"})
    try:
        # The probes the chart gives the kubelet answer 200 on the real command, on the port they name.
        port_named = {"http": port, "health": health_port}
        for probe in ("livenessProbe", "readinessProbe"):
            get = container[probe]["httpGet"]
            url = f"http://127.0.0.1:{port_named[get['port']]}{get['path']}"
            wait_for(lambda url=url: process.poll() is not None or http_ok(url), timeout=60, interval=0.1,
                     message=f"{url} to answer 200")
            assert process.poll() is None, (tmp_path / f"{module}.log").read_text()
        for name in ("fits", "with-volume", "gang"):
            wait_for(lambda name=name: any(pod["spec"].get("nodeName") for pod in sim.objects("pods", "default")
                                           if pod["metadata"]["name"] == name), timeout=60,
                     message=f"the pod {name} to be bound")
        for wanted in (("create", "events", ""), ("patch", "pods", "status")):
            wait_for(lambda wanted=wanted: wanted in made_by(sim), timeout=30, message=f"the call {wanted}")
        # Fill the cluster, then a pod of a queue under its guarantee preempts one (an eviction).
        fills = [f"fill-{i}" for i in range(33)]  # 100m each: the 3.3 cpus left, however the others lie
        for name in fills:
            sim.store.create(POD, "default", pending_pod(name, "100m"))
        wait_for(lambda: all(p["spec"].get("nodeName") for p in sim.objects("pods", "default")
                             if p["metadata"]["name"] in fills), timeout=60, message="the cluster to be full")
        sim.store.create(POD, "default", pending_pod("urgent", "500m", queue="root.urgent"))
        wait_for(lambda: ("create", "pods", "eviction") in made_by(sim), timeout=30, message="an eviction")
    finally:
        output = stop(process, tmp_path, module)
    assert process.returncode == 0, output
    assert_covered(sim, objects, account)
    made = made_by(sim)
    # The run did exercise the scheduler's main calls, so the check above was not vacuous.
    assert {("list", "pods", ""), ("watch", "pods", ""), ("list", "nodes", ""), ("create", "pods", "binding"),
            ("list", "configmaps", ""), ("create", "events", ""), ("patch", "pods", "status"),
            ("get", "leases", ""), ("watch", "leases", ""), ("create", "leases", ""), ("update", "leases", ""),
            ("patch", "pods", ""),
            ("watch", "persistentvolumeclaims", ""), ("list", "storageclasses", ""), ("patch", "persistentvolumes", ""),
            ("patch", "persistentvolumeclaims", "status"), ("create", "pods", ""), ("delete", "pods", ""),
            ("create", "pods", "eviction")} <= made, made
    own = next(p for p in sim.objects("pods", RELEASE_NAMESPACE) if p["metadata"]["name"] == "yunikorn-scheduler-0")
    assert own["metadata"]["labels"]["yunikorn.apache.org/leader"] == "false"  # released at SIGTERM


@pytest.mark.timeout(120)
def test_plugin_mode_scheduler_rbac_covers_its_api_calls(sim, render, tmp_path):
    """In plugin mode the scheduler also annotates pods, and binds through the extender's bind verb."""
    require_command("actors.cli")
    objects = render({"pluginMode": {"enabled": True}})
    account = objects.one("Deployment", "yunikorn-scheduler")["spec"]["template"]["spec"]["serviceAccountName"]
    sim.seed_nodes(2, cpu="2")
    sim.store.create(POD, "default", pending_pod("fits", "500m"))
    module = "actors.cli"
    port = free_port()
    process = start(module, ["--kubeconfig", str(tmp_path / "kubeconfig"), "--rest-port", str(port),
                             "--plugin-mode"], tmp_path)
    try:
        def approved() -> dict | None:
            assert process.poll() is None, (tmp_path / f"{module}.log").read_text()
            pod = next(p for p in sim.objects("pods", "default") if p["metadata"]["name"] == "fits")
            return pod if "yunikorn.apache.org/quota-approved" in (pod["metadata"].get("annotations") or {}) else None
        pod = wait_for(approved, timeout=60, interval=0.1, message="the pod to be approved")
        ready = f"http://127.0.0.1:{port}/ws/v1/health/ready"
        wait_for(lambda: process.poll() is not None or http_ok(ready), timeout=60, interval=0.1,
                 message=f"{ready} to answer 200")
        node = pod["metadata"]["annotations"]["yunikorn.apache.org/quota-approved"].split(" ")[0]
        extender = f"http://127.0.0.1:{port}/scheduler/extender"
        passed = post_json(f"{extender}/filter", {"Pod": pod, "NodeNames": ["node-00000", "node-00001"]})
        assert passed["NodeNames"] == [node]
        assert post_json(f"{extender}/bind", {"PodName": "fits", "PodNamespace": "default",
                                               "PodUID": pod["metadata"]["uid"], "Node": node}) == {"Error": ""}
    finally:
        output = stop(process, tmp_path, module)
    assert process.returncode == 0, output
    assert_covered(sim, objects, account)
    assert {("patch", "pods", ""), ("create", "pods", "binding")} <= made_by(sim)


def post_json(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def https_ok(url: str) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def post_review(port: int, review: dict) -> dict:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{port}/mutate", data=json.dumps(review).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, context=context, timeout=10) as reply:
        return json.loads(reply.read())


def pod_review() -> dict:
    pod = pending_pod("web", "100m")
    pod["metadata"]["namespace"] = "default"
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "rbac-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": "default", "operation": "CREATE",
                        "userInfo": {"username": "alice", "groups": ["devs"]}, "object": pod}}


@pytest.mark.timeout(180)
def test_admission_controller_rbac_covers_its_api_calls(sim, render, tmp_path):
    require_command("webhook.cli")
    objects = render()
    account = (objects.one("Deployment", "yunikorn-admission-controller")
               ["spec"]["template"]["spec"]["serviceAccountName"])
    port = free_port()
    container = (objects.one("Deployment", "yunikorn-admission-controller")
                 ["spec"]["template"]["spec"]["containers"][0])
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
    health = f"https://127.0.0.1:{port}{container['readinessProbe']['httpGet']['path']}"
    module = "webhook.cli"
    flags = kubeconfig_flag(module, tmp_path)
    process = start(module, [*flags, "--namespace", RELEASE_NAMESPACE, "--listen", f"127.0.0.1:{port}",
                             "--workers", "1"], tmp_path)
    try:
        # The chart's startup and readiness probe (HTTPS) answers 200 on the real command.
        wait_for(lambda: process.poll() is not None or https_ok(health), timeout=120, interval=0.2,
                 message=f"{health} to answer 200")
        assert process.poll() is None, (tmp_path / f"{module}.log").read_text()
        wait_for(lambda: sim.objects("mutatingwebhookconfigurations") and sim.objects("validatingwebhookconfigurations"),
                 timeout=30, message="the webhook configurations")
        installed = sim.objects("mutatingwebhookconfigurations") + sim.objects("validatingwebhookconfigurations")
        assert post_review(port, pod_review())["response"]["allowed"] is True
    finally:
        output = stop(process, tmp_path, module)
    assert process.returncode == 0, output
    assert_covered(sim, objects, account)
    made = made_by(sim)
    assert {("get", "secrets", ""), ("create", "mutatingwebhookconfigurations", ""),
            ("create", "validatingwebhookconfigurations", "")} <= made, made

    # The documented clean-up after a controller that was killed: its webhook configurations are left
    # behind; --remove-webhooks, run under the same account, deletes them.
    for webhook in installed:
        plural = webhook["kind"].lower() + "s"
        if not any(obj["metadata"]["name"] == webhook["metadata"]["name"] for obj in sim.objects(plural)):
            sim.store.create(BY_PATH[("admissionregistration.k8s.io", "v1", plural)], "",
                             {key: webhook[key] for key in ("apiVersion", "kind", "webhooks")}
                             | {"metadata": {"name": webhook["metadata"]["name"],
                                             "labels": webhook["metadata"].get("labels", {})}})
    sim.request_log.clear()
    remover = subprocess.run([sys.executable, "-m", module, *flags, "--namespace", RELEASE_NAMESPACE,
                              "--remove-webhooks"], cwd=REPO, capture_output=True, text=True, timeout=60,
                             env=command_env(tmp_path))
    assert remover.returncode == 0, remover.stdout + remover.stderr
    assert sim.objects("mutatingwebhookconfigurations") == [] == sim.objects("validatingwebhookconfigurations")
    assert_covered(sim, objects, account)


def kubeconfig_flag(module: str, tmp_path: Path) -> list[str]:
    """``--kubeconfig PATH`` if the command offers it; otherwise it finds the file through $KUBECONFIG."""
    usage = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True, text=True,
                           timeout=60, env=command_env(tmp_path))
    assert usage.returncode == 0, usage.stderr
    return ["--kubeconfig", str(tmp_path / "kubeconfig")] if "--kubeconfig" in usage.stdout else []
