"""The ``yunikorn-scheduler`` command as a subprocess against a kubesim, to be killed and started again;
its REST API is read on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
from pathlib import Path

from tests.reliability.invariants import get_json
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SchedulerProcess:
    """One run of the scheduler command; ``url`` is its REST API on loopback."""

    def __init__(self, kubeconfig: str, log_file: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_file, "ab")  # noqa: SIM115 - closed when the process ends
        self.process = subprocess.Popen(
            [sys.executable, "-m", "actors.cli", "--kubeconfig", kubeconfig, "--rest-host", "127.0.0.1",
             "--rest-port", str(self.port),
             "--log-level", "WARNING", *extra], cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the scheduler exited with {self.process.returncode}")
        try:
            return get_json(f"{self.url}/ws/v1/health/ready", timeout=2).get("ready") is True
        except OSError:
            return False

    def readiness(self) -> dict:
        """The readiness answer, whatever its status (a standby's is 503); ``{}`` while nothing listens."""
        if self.process.poll() is not None:
            raise AssertionError(f"the scheduler exited with {self.process.returncode}")
        try:
            return get_json(f"{self.url}/ws/v1/health/ready", timeout=2)
        except urllib.error.HTTPError as error:
            return json.loads(error.read())
        except OSError:
            return {}

    def wait_ready(self, timeout: float = 60.0) -> SchedulerProcess:
        wait_for(self.ready, timeout=timeout, interval=0.1, message=f"the scheduler's readiness on {self.url}")
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown work at all, as when a node dies or the OOM killer strikes."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()

    def stop(self) -> int:
        """SIGTERM and wait for the graceful exit; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
        return self.process.returncode
