"""The ``kubesim`` command, end to end."""

import signal
import subprocess
import sys

from kubernetes import client, config


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
