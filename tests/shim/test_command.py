"""The ``yunikorn-scheduler`` command as a real process: embedded mode, errors, SIGTERM, and a SIGKILL
in the middle of the work followed by a restart."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.shim.doubles import wait_for

REPO = Path(__file__).resolve().parents[2]


def scheduler(*args, env=None):
    return subprocess.Popen([sys.executable, "-m", "actors.cli", "--rest-port", "0", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


@pytest.mark.timeout(120)
def test_embedded_schedules_the_sample_and_prints_a_summary():
    process = scheduler("--embedded", "--nodes", "3", "--pods", "60", "--exit-when-done", "--log-level", "WARNING")
    out, err = process.communicate(timeout=100)
    assert process.returncode == 0, err
    lines = out.splitlines()
    bound = {line.split()[0]: int(line.split()[1]) for line in lines if line.startswith("root.")}
    assert bound == {"root.analytics": 20, "root.batch": 20, "root.interactive": 20}
    assert "60/60 pods bound" in err
    assert any(line.startswith("node-00000") for line in lines)


@pytest.mark.timeout(150)
def test_embedded_pods_finish_and_their_applications_complete():
    """Without --exit-when-done the kubelets run the sample pods to Succeeded and the applications reach
    Completed (after the core's completing timeout); the command then keeps serving."""
    process = scheduler("--embedded", "--nodes", "3", "--pods", "30", "--log-level", "WARNING")
    try:
        kubeconfig = process.stdout.readline().split("export KUBECONFIG=")[1].strip()
        progress = ""  # text mode reads each redraw of the progress bar (ended by a carriage return) as a line
        while not progress.endswith(" 3/3 applications completed"):
            line = process.stderr.readline()
            assert line, "the command ended before its applications completed"
            progress = line.rstrip()
        assert progress.split()[:4] == ["[##############################]", "30/30", "pods", "finished"]
        with config.new_client_from_config(config_file=kubeconfig) as api:
            phases = {pod.status.phase for pod in client.CoreV1Api(api).list_namespaced_pod("default").items}
        assert phases == {"Succeeded"} and process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert process.returncode == 0


def _cpus_of_threads(pid: int) -> set[frozenset[int]]:
    """The CPUs each thread of process ``pid`` may run on (one set per distinct answer)."""
    cpus = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            cpus.add(frozenset(os.sched_getaffinity(int(tid))))
    return cpus


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("choice", ["one", "all"])
def test_the_command_keeps_its_threads_on_one_cpu_unless_told_otherwise(choice, tmp_path):
    allowed = frozenset(os.sched_getaffinity(0))
    process = scheduler("--embedded", "--nodes", "2", "--pods", "2", "--cpu-affinity", choice,
                        "--history-dsn", f"sqlite:///{tmp_path}/history.db", "--log-level", "WARNING")
    try:
        while not process.stdout.readline().startswith("average"):  # the summary: every part of it runs
            assert process.poll() is None, process.stderr.read()
        cpus = _cpus_of_threads(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert process.returncode == 0
    if choice == "all":
        assert cpus == {allowed}
    else:
        (one,) = cpus
        assert len(one) == 1 and one <= allowed


def test_without_any_cluster_config_it_stops_with_a_hint(tmp_path):
    process = scheduler(env={"KUBERNETES_SERVICE_HOST": "", "HOME": str(tmp_path)})
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "--kubeconfig" in err and "in-cluster" in err


def test_the_command_imports_embedded_mode_and_alembic_only_when_it_uses_them():
    """What start-up does not need costs every restart time before it lists: embedded mode (kubesim and
    its validators) loads with --embedded, Alembic when a migration is needed (see tests/history)."""
    code = ("import sys, actors.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('actors.embedded', 'kubesim', 'alembic'))))")
    imported = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=50)
    assert (imported.returncode, imported.stderr, imported.stdout) == (0, "", "[]\n")


def test_bad_arguments_are_refused():
    process = scheduler("--embedded", "--nodes", "0")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "--nodes" in err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except OSError:
        return None, None


@pytest.mark.timeout(120)
def test_rest_shows_the_shim_and_sigterm_shuts_down_gracefully(cluster):
    cluster.sim.seed_nodes(1)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "actors.cli", "--kubeconfig", cluster.kubeconfig,
                                "--rest-port", str(port), "--rest-allowed-origins", "https://ui.example.com"],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: get_json(base + "/ws/v1/health/ready") == (200, {"ready": True, "shimState": "Running"}),
             timeout=60)
    for origin, granted in (("https://ui.example.com", "https://ui.example.com"), ("https://elsewhere", None)):
        request = urllib.request.Request(base + "/ws/v1/partitions", headers={"Origin": origin})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.headers["Access-Control-Allow-Origin"] == granted
    cluster.pod("p")
    wait_for(lambda: cluster.bound("p"), timeout=60)
    wait_for(lambda: any(pod["name"] == "p" and pod["state"] == "Bound"
                         for pod in get_json(base + "/ws/v1/fullstatedump")[1]["rmDiagnostics"]["pods"]))
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "scheduler state: Stopped" in err and "level=info" in err


@pytest.mark.timeout(150)
def test_sigkill_mid_load_then_restart_binds_everything_once(cluster, tmp_path):
    cluster.sim.seed_nodes(3, cpu="4")
    cluster.sim.faults.latency(verb="create", resource="pods/binding", seconds=0.05)
    names = [f"k{i}" for i in range(90)]
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    first = scheduler("--kubeconfig", cluster.kubeconfig, "--bind-workers", "4", env={"TMPDIR": str(temporary)})
    for name in names[:45]:
        cluster.pod(name, cpu="100m")
    wait_for(lambda: sum(cluster.bound(n) for n in names) >= 10, timeout=60)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    assert not list(temporary.iterdir()), "a killed scheduler left files behind"  # none made outside --embedded
    for name in names[45:]:
        cluster.pod(name, cpu="100m")
    second = scheduler("--kubeconfig", cluster.kubeconfig)
    try:
        wait_for(lambda: cluster.bound(*names), timeout=90)
    finally:
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    wait_for(lambda: set(cluster.binds_per_pod()) == set(names))
    cluster.assert_consistent()


def test_plugin_mode_is_refused_with_the_embedded_cluster():
    process = scheduler("--embedded", "--plugin-mode")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "--plugin-mode" in err


@pytest.mark.timeout(120)
def test_plugin_mode_command_leaves_binding_to_the_extender_caller(cluster):
    cluster.sim.seed_nodes(2)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "actors.cli", "--kubeconfig", cluster.kubeconfig,
                                "--rest-port", str(port), "--plugin-mode"], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: get_json(base + "/ws/v1/health/ready")[0] == 200, timeout=60)
        cluster.pod("p", labels={"applicationId": "app"})
        wait_for(lambda: "yunikorn.apache.org/quota-approved" in
                 (cluster.pods()["p"]["metadata"].get("annotations") or {}), timeout=30)
        node = cluster.pods()["p"]["metadata"]["annotations"]["yunikorn.apache.org/quota-approved"].split(" ")[0]
        request = urllib.request.Request(base + "/scheduler/extender/filter", method="POST",
                                         headers={"Content-Type": "application/json"},
                                         data=json.dumps({"Pod": cluster.pods()["p"], "Nodes": None,
                                                          "NodeNames": ["node-00000", "node-00001"]}).encode())
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["NodeNames"] == [node]
        assert not cluster.bound("p")
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert cluster.binds_per_pod() == {}


@pytest.mark.parametrize("bad", ["0", "1.5", "nan", "a tenth"])
def test_a_readers_share_out_of_range_is_refused_with_its_reason(bad, capsys):
    from actors.cli import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--rest-read-share", bad])
    assert exit_info.value.code == 2
    assert "--rest-read-share" in capsys.readouterr().err


def test_the_readers_share_given_is_the_core_s():
    from actors.base import stop_all
    from actors.cli import parse_args, start_core
    from actors.core.readbudget import DEFAULT_SHARE

    assert parse_args([]).rest_read_share == DEFAULT_SHARE
    core = start_core(read_share=parse_args(["--rest-read-share", "0.2"]).rest_read_share)
    try:
        assert core.read_budget.share == 0.2
    finally:
        core.stop()
        stop_all()
