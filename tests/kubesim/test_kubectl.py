"""Real kubectl (v1.35, from the npm registry) against kubesim: create, apply twice, get (wide, watch),
describe with events, explain, delete, with client-side validation on as kubectl has it by default; the
generator commands (``kubectl create namespace|configmap|...``, whose bodies are protobuf) and drain."""

from __future__ import annotations

import base64
import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.chart.get_helm import HelmUnavailable
from tests.kubesim import test_deployments as deployments
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
    return kubectl_runner(kubectl_binary, kubesim, tmp_path)


@pytest.fixture
def kubectl_on_sim(kubectl_binary, sim, tmp_path):
    """The same, against the kubesim with kubelets."""
    return kubectl_runner(kubectl_binary, sim, tmp_path)


def kubectl_runner(kubectl_binary, kubesim, tmp_path):
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


BINARY = bytes(range(256))  # not UTF-8: kubectl puts such a file in binaryData (a Secret: data, always)
# The generator commands, by what they make: namespaced ones are made under one name in two namespaces,
# cluster-scoped ones under two names (the name is a placeholder). Each sends its object as protobuf.
TYPED_CREATES = {
    "namespace": ("namespaces", ["namespace", "NAME"]),
    "configmap": ("configmaps", ["configmap", "NAME", "--from-literal=a=b", "--from-literal=empty=",
                                 "--from-file=blob=BINARY"]),
    "secret generic": ("secrets", ["secret", "generic", "NAME", "--from-literal=k=v", "--from-file=blob=BINARY",
                                   "--type=example.com/custom"]),
    "secret docker-registry": ("secrets", ["secret", "docker-registry", "NAME", "--docker-server=r.example.com",
                                           "--docker-username=u", "--docker-password=p"]),
    "serviceaccount": ("serviceaccounts", ["serviceaccount", "NAME"]),
    "service clusterip": ("services", ["service", "clusterip", "NAME", "--tcp=5678:8080", "--tcp=53:dns"]),
    "service headless": ("services", ["service", "clusterip", "NAME", "--clusterip=None", "--tcp=80"]),
    "service nodeport": ("services", ["service", "nodeport", "NAME", "--tcp=80:8080", "--node-port=30080"]),
    "service loadbalancer": ("services", ["service", "loadbalancer", "NAME", "--tcp=443:https"]),
    "service externalname": ("services", ["service", "externalname", "NAME", "--external-name=db.example.com"]),
    "priorityclass": ("priorityclasses", ["priorityclass", "NAME", "--value=-5",
                                          "--description=batch work", "--preemption-policy=Never"]),
    "poddisruptionbudget min": ("poddisruptionbudgets", ["poddisruptionbudget", "NAME", "--selector=app=web",
                                                         "--min-available=50%"]),
    "poddisruptionbudget max": ("poddisruptionbudgets", ["pdb", "NAME", "--selector=app=web,tier in (a,b)",
                                                         "--max-unavailable=1"]),
}
_SERVER_SET = ("uid", "creationTimestamp", "resourceVersion")


def _read_back(kube_api, plural: str, namespace: str, name: str) -> dict:
    """The stored object, as the official client reads it (its raw JSON, every field kept)."""
    core, policy, scheduling = client.CoreV1Api(kube_api), client.PolicyV1Api(kube_api), client.SchedulingV1Api(kube_api)
    read = {"namespaces": lambda: core.read_namespace(name, _preload_content=False),
            "configmaps": lambda: core.read_namespaced_config_map(name, namespace, _preload_content=False),
            "secrets": lambda: core.read_namespaced_secret(name, namespace, _preload_content=False),
            "serviceaccounts": lambda: core.read_namespaced_service_account(name, namespace, _preload_content=False),
            "services": lambda: core.read_namespaced_service(name, namespace, _preload_content=False),
            "priorityclasses": lambda: scheduling.read_priority_class(name, _preload_content=False),
            "poddisruptionbudgets": lambda: policy.read_namespaced_pod_disruption_budget(
                name, namespace, _preload_content=False)}[plural]
    obj = json.loads(read().data)
    for key in _SERVER_SET + ("name", "namespace"):
        obj["metadata"].pop(key, None)
    return obj


@pytest.mark.parametrize("what", list(TYPED_CREATES))
def test_a_typed_create_stores_what_the_same_object_sent_as_json_does(what, kubectl, kube_api, tmp_path):
    """kubectl's generator commands send protobuf; kubesim stores the object a JSON client would have
    made: the same command rendered client-side and created from JSON gives the same object, field for field."""
    plural, template = TYPED_CREATES[what]
    (tmp_path / "blob").write_bytes(BINARY)
    cluster_scoped = plural in ("namespaces", "priorityclasses")
    kubectl("create", "namespace", "from-protobuf")
    kubectl("create", "namespace", "from-json")
    names = {"from-protobuf": "typed-a" if cluster_scoped else "typed",
             "from-json": "typed-b" if cluster_scoped else "typed"}

    def args(source: str) -> list[str]:
        made = [names[source] if arg == "NAME" else arg.replace("BINARY", str(tmp_path / "blob")) for arg in template]
        return ["create", *made] + ([] if cluster_scoped else ["-n", source])

    typed = kubectl(*args("from-protobuf"))
    assert typed.stdout.strip().endswith(" created") and typed.stderr == ""
    rendered = kubectl(*args("from-json"), "--dry-run=client", "-o", "json").stdout
    kubectl("create", "-f", "-", stdin=rendered)
    from_protobuf = _read_back(kube_api, plural, "from-protobuf", names["from-protobuf"])
    assert from_protobuf == _read_back(kube_api, plural, "from-json", names["from-json"])
    assert from_protobuf["kind"] == json.loads(rendered)["kind"]
    if what in ("configmap", "secret generic"):
        blobs = from_protobuf.get("binaryData") or from_protobuf["data"]
        assert base64.b64decode(blobs["blob"]) == BINARY


def test_drain_evicts_the_nodes_pods_through_the_eviction_api(kubectl, kubesim, core):
    """``kubectl drain`` evicts (rather than deletes) when discovery lists ``pods/eviction`` in group
    ``policy`` version ``v1``; each pod's Eviction passes the budget, which kubectl created as protobuf."""
    kubesim.seed_nodes(2)
    for name, node in (("a", "node-00000"), ("b", "node-00000"), ("elsewhere", "node-00001")):
        core.create_namespaced_pod("default", {"metadata": {"name": name, "labels": {"app": "web"}},
                                               "spec": {"containers": [{"name": "c", "image": "i"}]}})
        core.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name}, "target": {"name": node}},
                                           _preload_content=False)
    kubectl("create", "pdb", "web", "--selector=app=web", "--max-unavailable=5")
    drained = kubectl("drain", "node-00000", "--force", "--ignore-daemonsets", "--timeout=30s")
    assert "node/node-00000 drained" in drained.stdout
    assert "evicting pod default/a" in drained.stdout + drained.stderr
    assert [pod["metadata"]["name"] for pod in kubesim.objects("pods")] == ["elsewhere"]
    evictions = [r for r in kubesim.request_log if r.subresource == "eviction"]
    assert sorted((r.name, r.code) for r in evictions) == [("a", 201), ("b", 201)]
    assert core.read_node("node-00000").spec.unschedulable is True


def test_a_typed_create_of_a_kind_kubesim_does_not_read_gets_a_clear_415(kubectl):
    """``kubectl create deployment`` posts a protobuf Deployment, a kind kubesim has no table for: the answer
    comes at once and says which kinds kubesim reads from protobuf."""
    refused = kubectl("create", "deployment", "web", "--image=nginx", check=False)
    assert refused.returncode != 0
    assert "kubesim reads protobuf bodies of" in refused.stderr and "not apps/v1 Deployment" in refused.stderr


def test_kubectl_create_token_gives_a_token_that_authenticates_its_account(kubectl, kubesim):
    """``kubectl create token`` posts a protobuf TokenRequest; the token it prints is the account's (checked
    with the official client: kubectl sends no token to a plain-HTTP server)."""
    kubectl("create", "serviceaccount", "robot")
    token = kubectl("create", "token", "robot", "--duration=20m").stdout.strip()
    configuration = client.Configuration(host=kubesim.url, api_key={"authorization": token},
                                         api_key_prefix={"authorization": "Bearer"})
    with client.ApiClient(configuration) as api, pytest.raises(client.ApiException) as refused:
        client.CoreV1Api(api).list_namespaced_pod("default")
    assert 'User "system:serviceaccount:default:robot" cannot list resource "pods"' in json.loads(refused.value.body)["message"]
    refused = kubectl("create", "token", "robot", "--duration=5m", check=False)
    assert "may not specify a duration less than 10 minutes" in refused.stderr


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        command: [sleep, "10"]
"""


def test_kubectl_shows_a_job_complete_its_pods_completed_and_deletes_them(kubectl_on_sim, sim, sim_api, tmp_path):
    kubectl, core = kubectl_on_sim, client.CoreV1Api(sim_api)
    (tmp_path / "job.yaml").write_text(JOB)
    assert kubectl("apply", "-f", str(tmp_path / "job.yaml")).stdout.strip() == "job.batch/pi created"
    wait_for(lambda: len(sim.objects("pods")) == 2, timeout=10, message="the job's two pods")
    for pod in sim.objects("pods"):
        name = pod["metadata"]["name"]
        core.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name},
                                                             "target": {"name": "node-00000"}}, _preload_content=False)
    wait_for(lambda: lines(kubectl("get", "jobs").stdout)[1][1:3] == ["Complete", "2/2"], timeout=10,
             message="kubectl shows the job complete")
    header, *rows = lines(kubectl("get", "jobs", "-o", "wide").stdout)
    assert header == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[0][5:7] == ["c", "busybox"] and rows[0][7].startswith("batch.kubernetes.io/controller-uid=")
    pods = lines(kubectl("get", "pods", "-l", "job-name=pi").stdout)[1:]
    assert [(row[1], row[2]) for row in pods] == [("0/1", "Completed")] * 2
    assert re.search(r"Pods Statuses:\s+0 Active \(0 Ready\) / 2 Succeeded / 0 Failed", kubectl("describe", "job", "pi").stdout)
    assert kubectl("delete", "job", "pi").stdout.strip() == 'job.batch "pi" deleted from default namespace'
    wait_for(lambda: not sim.objects("pods"), timeout=10, message="kubectl's delete takes the job's pods too")


def test_kubectl_reports_a_missing_priority_class_as_kube_apiserver_does(kubectl, tmp_path):
    body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "priorityClassName": "gold", "containers": [{"name": "c", "image": "busybox"}]}})
    refused = kubectl("create", "-f", "-", stdin=body, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == ('Error from server (Forbidden): error when creating "STDIN": pods "p" is '
                                      "forbidden: no PriorityClass with name gold was found")


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


def test_kubectl_waits_for_the_rollout_and_gets_the_counts(sim, sim_api, kubectl_on_sim, tmp_path):
    (tmp_path / "web.yaml").write_text(yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                                                       **deployments.deployment("web", replicas=2)}))
    kubectl_on_sim("apply", "-f", str(tmp_path / "web.yaml"))
    deployments.running(sim, client.CoreV1Api(sim_api), "web", 2)
    rollout = kubectl_on_sim("rollout", "status", "deployment/web", "--timeout=10s")
    assert 'deployment "web" successfully rolled out' in rollout.stdout
    lines = kubectl_on_sim("get", "deployment", "web").stdout.split("\n")
    assert lines[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert lines[1].split()[:4] == ["web", "2/2", "2", "2"]
    lines = kubectl_on_sim("get", "replicasets").stdout.split("\n")
    assert lines[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert lines[1].split()[1:4] == ["2", "2", "2"]


RBAC_OBJECTS = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pod-reader
  namespace: default
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: alice-reads-pods
  namespace: default
subjects:
- kind: User
  name: alice
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: Role
  name: pod-reader
  apiGroup: rbac.authorization.k8s.io
"""


def test_kubectl_as_another_user_is_authorised_by_rbac(kubectl):
    """``kubectl --as`` sends Impersonate-User; kubesim's RBAC answers as kube-apiserver, in its words."""
    refused = kubectl("--as", "alice", "get", "pods", check=False)
    assert refused.returncode != 0
    assert ('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API '
            'group "" in the namespace "default"') in refused.stderr
    assert "role.rbac.authorization.k8s.io/pod-reader created" in kubectl("apply", "-f", "-", stdin=RBAC_OBJECTS).stdout
    assert "No resources found in default namespace." in kubectl("--as", "alice", "get", "pods").stderr
    refused = kubectl("--as", "alice", "--as-group", "devs", "get", "nodes", check=False)
    assert 'User "alice" cannot list resource "nodes" in API group "" at the cluster scope' in refused.stderr
    (header, row) = lines(kubectl("get", "rolebindings", "-o", "wide").stdout)
    assert header == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert (row[:2], row[3:]) == (["alice-reads-pods", "Role/pod-reader"], ["alice"])
    (header, row) = lines(kubectl("get", "roles").stdout)
    assert header == ["NAME", "CREATED AT"] and row[0] == "pod-reader" and row[1].endswith("Z")


def test_kubectl_creates_roles_and_bindings(kubectl):
    """``kubectl create role|clusterrole|rolebinding|clusterrolebinding`` post protobuf bodies, read as JSON."""
    kubectl("create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes")
    kubectl("create", "clusterrolebinding", "ops-read-nodes", "--clusterrole=node-reader", "--group=ops",
            "--serviceaccount=default:robot")
    kubectl("create", "role", "pod-reader", "--verb=list", "--resource=pods", "--resource-name=web")
    kubectl("create", "rolebinding", "alice-reads-pods", "--role=pod-reader", "--user=alice")
    assert "No resources found" in kubectl("--as", "bob", "--as-group", "ops", "get", "nodes").stderr
    binding = json.loads(kubectl("get", "clusterrolebinding", "ops-read-nodes", "-o", "json").stdout)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader"}
    assert binding["subjects"] == [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops"},
                                   {"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]
    role = json.loads(kubectl("get", "role", "pod-reader", "-o", "json").stdout)
    assert role["rules"] == [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]}]


def test_kubectl_auth_can_i_asks_rbac(kubectl):
    """``kubectl auth can-i`` posts a SelfSubjectAccessReview, which any user may ask, answered by RBAC."""
    kubectl("create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
    kubectl("create", "rolebinding", "alice-reads-pods", "--role=pod-reader", "--user=alice")
    assert kubectl("auth", "can-i", "list", "pods", "--as", "alice").stdout.strip() == "yes"
    refused = kubectl("auth", "can-i", "delete", "pods", "--as", "alice", check=False)
    assert (refused.returncode, refused.stdout.strip()) == (1, "no")
    refused = kubectl("auth", "can-i", "list", "pods", "--as", "alice", "-n", "kube-system", check=False)
    assert refused.stdout.strip() == "no"
    assert kubectl("auth", "can-i", "delete", "nodes").stdout.strip() == "yes"  # the admin


WORKLOADS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: postgres}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: c, image: agent}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/5 * * * *"
  timeZone: Europe/Paris
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox, command: [sleep, "1"]}]
"""


def test_kubectl_applies_and_gets_statefulsets_daemonsets_and_cronjobs(kubectl_on_sim, sim, sim_api, tmp_path):
    kubectl, core = kubectl_on_sim, client.CoreV1Api(sim_api)
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    assert kubectl("apply", "-f", str(tmp_path / "workloads.yaml")).stdout.split("\n")[:3] == [
        "statefulset.apps/db created", "daemonset.apps/agent created", "cronjob.batch/tick created"]

    def bound() -> list[str]:
        for pod in sim.objects("pods"):
            if not pod["spec"].get("nodeName"):
                terms = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution")
                node = terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] if terms else "node-00000"
                name = pod["metadata"]["name"]
                core.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name},
                                                                     "target": {"name": node}}, _preload_content=False)
        return lines(kubectl("get", "statefulsets").stdout)[1:]
    wait_for(lambda: bound()[0][:2] == ["db", "2/2"], timeout=15, message="kubectl shows both db pods ready")
    assert "partitioned roll out complete: 2 new pods have been updated" in kubectl(
        "rollout", "status", "statefulset/db", "--timeout=10s").stdout
    assert lines(kubectl("get", "sts").stdout)[0] == ["NAME", "READY", "AGE"]
    header, *rows = lines(kubectl("get", "statefulsets", "-o", "wide").stdout)
    assert header == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"] and rows[0][3:] == ["c", "postgres"]
    wait_for(lambda: lines(kubectl("get", "ds").stdout)[1][1:6] == ["2"] * 5, timeout=10,
             message="kubectl shows a ready agent on each node")
    assert 'daemon set "agent" successfully rolled out' in kubectl("rollout", "status", "daemonset/agent",
                                                                   "--timeout=10s").stdout
    header, *rows = lines(kubectl("get", "daemonsets", "-o", "wide").stdout)
    assert header == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE",
                      "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[0][6] == "kubernetes.io/os=linux" and rows[0][8:] == ["c", "agent", "app=agent"]
    header, *rows = lines(kubectl("get", "cj").stdout)
    assert header == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    assert rows[0][:4] == ["tick", "*/5 * * * *", "Europe/Paris", "False"]
    wait_for(lambda: lines(kubectl("get", "cronjobs").stdout)[1][5] != "<none>", timeout=10,
             message="kubectl shows when the CronJob last made a Job")
    assert kubectl("get", "jobs", "--no-headers").stdout.startswith("tick-")
    assert kubectl("delete", "cronjob", "tick").stdout.strip() == 'cronjob.batch "tick" deleted from default namespace'
    wait_for(lambda: not sim.objects("jobs"), timeout=10, message="the CronJob's Jobs collected")
