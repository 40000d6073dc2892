"""The ``kubesim`` command, end to end."""

import signal
import subprocess
import sys

from kubernetes import client, config

from tests.waiting import wait_for


def test_command_serves_seeded_nodes_and_exits_cleanly_on_sigterm(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen([sys.executable, "-m", "kubesim", "--port", "0", "--kubeconfig-out", str(kubeconfig),
                                "--nodes", "3", "--node-cpu", "4", "--node-memory", "16Gi"],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("kubesim serving at http://127.0.0.1:")
        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        nodes = client.CoreV1Api(api_client).list_node().items
        assert [n.status.allocatable["memory"] for n in nodes] == ["16Gi"] * 3
        api_client.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()


def test_command_switches_the_components_it_plays(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen([sys.executable, "-m", "kubesim", "--kubeconfig-out", str(kubeconfig), "--nodes", "1",
                                "--kubelet-delay", "0", "--time-factor", "0.01", "--no-priority-admission",
                                "--no-rbac"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("kubesim serving at")
        with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
            core = client.CoreV1Api(api_client)
            core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
                "priorityClassName": "absent", "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "20"]}]}})
            core.create_namespaced_pod_binding("p", "default", {"metadata": {"name": "p"},
                                                                "target": {"name": "node-00000"}},
                                               _preload_content=False)
            wait_for(lambda: core.read_namespaced_pod("p", "default").status.phase == "Succeeded", timeout=10,
                     message="p ends after 20 s * 0.01")
            core.create_namespaced_service_account("default", {"metadata": {"name": "robot"}})
            token = core.create_namespaced_service_account_token("robot", "default", {"spec": {}}).status.token
            configuration = client.Configuration(host=api_client.configuration.host,
                                                 api_key={"authorization": token},
                                                 api_key_prefix={"authorization": "Bearer"})
            with client.ApiClient(configuration) as as_robot:  # no RBAC: an account without roles may list
                assert [p.metadata.name for p in client.CoreV1Api(as_robot).list_namespaced_pod("default").items] \
                    == ["p"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
