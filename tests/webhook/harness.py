"""Test plumbing for the admission controller: run the real command, talk HTTPS to it, build reviews.

The controller runs as a subprocess against a kubesim on loopback. Clients trust exactly the caBundle
the controller registered in kubesim's MutatingWebhookConfiguration, and check the served certificate
for the service's DNS name, as the API server would.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import uuid
from pathlib import Path

import jsonpatch
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

from si.kubernetes import ANNOTATION_USER_INFO
from tests.waiting import wait_for
from webhook import constants as c

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICE = "yunikorn-admission-controller-service"
NAMESPACE = "default"
SERVER_NAME = f"{SERVICE}.{NAMESPACE}.svc"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Controller:
    """One replica of ``yunikorn-admission-controller`` as a subprocess."""

    def __init__(self, kubeconfig: Path, log_file: Path, *extra: str, workers: int = 2,
                 env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log_file = log_file
        command = [sys.executable, "-c", "import sys; from webhook.cli import main; sys.exit(main())",
                   "--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE,
                   "--listen", f"127.0.0.1:{self.port}", "--workers", str(workers), "--ca-key-bits", "2048",
                   *extra]
        self._log = open(log_file, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=self._log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})})

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def wait_healthy(self, client_factory, timeout: float = 40.0) -> None:
        def healthy():
            if self.process.poll() is not None:
                raise AssertionError(f"controller exited with {self.process.returncode}:\n{self.log()}")
            try:
                return client_factory(self.port).get("/health") == (200, b"OK\r\n")
            except (OSError, ssl.SSLError, http.client.HTTPException, LookupError):
                return False
        wait_for(healthy, timeout=timeout, interval=0.1, message=f"/health on port {self.port}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()
        return self.process.returncode


def registered_bundle(sim, kind: str = "mutatingwebhookconfigurations") -> bytes:
    """The caBundle the controller registered (what the API server would trust)."""
    configs = sim.objects(kind)
    if not configs:
        raise LookupError(f"no {kind} registered yet")
    return base64.b64decode(configs[0]["webhooks"][0]["clientConfig"]["caBundle"])


def secret_cas(sim) -> list[x509.Certificate]:
    (secret,) = [s for s in sim.objects("secrets", NAMESPACE) if s["metadata"]["name"] == c.SECRET_NAME]
    return [x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key])) for key in c.CA_CERT_KEYS]


def served_certificate(port: int) -> x509.Certificate:
    """The leaf the server presents (read without verifying; tests verify it explicitly)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


def verify(leaf: x509.Certificate, bundle: bytes, at: dt.datetime) -> None:
    """Verify ``leaf`` for the service name against ``bundle`` at time ``at`` (raises if invalid)."""
    store = Store(x509.load_pem_x509_certificates(bundle))
    PolicyBuilder().store(store).time(at).build_server_verifier(x509.DNSName(SERVER_NAME)).verify(leaf, [])


def review_like_the_api_server(sim, port: int, at: dt.datetime) -> x509.Certificate:
    """One ``/mutate`` review on a new connection, as the API server sends it: the served leaf is verified
    against the bundle registered at that moment, at time ``at``; the review must be allowed. Returns the leaf."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
        leaf = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
        verify(leaf, registered_bundle(sim), at)
        payload = json.dumps(review(pod())).encode()
        tls.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and b'"allowed":true' in answer, answer[:200]
    return leaf


class HttpsClient:
    """A keep-alive HTTPS client trusting ``bundle`` and verifying the service's DNS name."""

    def __init__(self, port: int, bundle: bytes, timeout: float = 10.0,
                 maximum_version: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED) -> None:
        context = ssl.create_default_context(cadata=bundle.decode())
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.maximum_version = maximum_version
        self._port, self._context, self._timeout = port, context, timeout
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection("127.0.0.1", self._port, timeout=self._timeout)
        raw = socket.create_connection(("127.0.0.1", self._port), timeout=self._timeout)
        connection.sock = self._context.wrap_socket(raw, server_hostname=SERVER_NAME)
        return connection

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> tuple[int, bytes]:
        if self._connection is None:
            self._connection = self._connect()
        try:
            self._connection.request(method, path, body=body, headers=headers or {})
            response = self._connection.getresponse()
            status, body = response.status, response.read()
        except BaseException:
            self.close()
            raise
        if response.will_close:  # the server ended the keep-alive connection (e.g. after an error)
            self.close()
        return status, body

    def get(self, path: str) -> tuple[int, bytes]:
        return self.request("GET", path)

    def review(self, path: str, review: dict) -> dict:
        status, body = self.request("POST", path, json.dumps(review).encode(),
                                    {"Content-Type": "application/json"})
        assert status == 200, (status, body)
        return json.loads(body)["response"]

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


# AdmissionReview bodies.
def review(obj: dict | None, kind: str = "Pod", namespace: str = "default", operation: str = "CREATE",
           user: str = "alice", groups: tuple[str, ...] = ("devs", "system:authenticated"),
           old: dict | None = None) -> dict:
    group = {"Pod": "", "CronJob": "batch", "Job": "batch", "ConfigMap": "", "Service": ""}.get(kind, "apps")
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
            "request": {"uid": str(uuid.uuid4()), "kind": {"group": group, "version": "v1", "kind": kind},
                        "namespace": namespace, "operation": operation,
                        "name": (obj.get("metadata") or {}).get("name", "") if isinstance(obj, dict) else "",
                        "userInfo": {"username": user, "groups": list(groups)},
                        "object": obj, "oldObject": old}}


def pod(name: str = "p", labels: dict | None = None, annotations: dict | None = None,
        priority_class: str | None = None, scheduler: str | None = None) -> dict:
    """A realistic pod as the API server hands it to a mutating webhook (defaults applied, no uid)."""
    metadata: dict = {"name": name, "namespace": "default"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    spec: dict = {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                  "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                  "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log"}],
                  "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
                  "serviceAccountName": "default", "securityContext": {}}
    if scheduler:
        spec["schedulerName"] = scheduler
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def workload(kind: str, annotations: dict | None = None, labels: dict | None = None) -> dict:
    template = {"metadata": {"labels": {"app": "demo", **(labels or {})}}, "spec": pod()["spec"]}
    if annotations is not None:
        template["metadata"]["annotations"] = dict(annotations)
    if kind == "CronJob":
        spec = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}}
    else:
        spec = {"selector": {"matchLabels": {"app": "demo"}}, "template": template}
    group = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return {"apiVersion": group, "kind": kind, "metadata": {"name": "w", "namespace": "default"}, "spec": spec}


def patched(obj: dict, response: dict) -> dict:
    """``obj`` after the response's JSONPatch (unchanged when there is none)."""
    assert response["allowed"] is True, response
    if "patch" not in response:
        return copy.deepcopy(obj)
    assert response["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(response["patch"]))
    return jsonpatch.apply_patch(obj, operations)


def user_info(obj: dict) -> dict | None:
    value = (obj["metadata"].get("annotations") or {}).get(ANNOTATION_USER_INFO)
    return json.loads(value) if value is not None else None
