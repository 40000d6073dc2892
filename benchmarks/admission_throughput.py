"""Admission controller throughput: ``/mutate`` over HTTPS keep-alive, realistic pod bodies.

Starts a kubesim and the real ``yunikorn-admission-controller`` (gunicorn, ``--workers`` processes),
then drives ``/mutate`` from client processes, each with keep-alive connections, for ``--seconds``.
Prints requests/s and latency percentiles; then the rate of brand-new TLS connections (one request
each), which is what a key type (``--server-key ecdsa|rsa``) changes. With ``--reference REV`` the
controller of that git revision runs too, alternately with this one (``--rounds`` each), and the figures
are printed side by side with their ratio: on a shared machine only such a ratio means much.
Run: ``python benchmarks/admission_throughput.py [--seconds 10 --connections 8 --server-key ecdsa --reference HEAD~1]``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubesim import KubeSim  # noqa: E402

SERVER_NAME = "yunikorn-admission-controller-service.default.svc"


def spark_executor_review(index: int) -> bytes:
    """An AdmissionReview for a Spark executor pod as the API server sends it (about 4 KB)."""
    env = [{"name": name, "value": value} for name, value in (
        ("SPARK_USER", "etl"), ("SPARK_EXECUTOR_CORES", "2"), ("SPARK_EXECUTOR_MEMORY", "4g"),
        ("SPARK_APPLICATION_ID", "spark-7f3a"), ("SPARK_DRIVER_URL", "spark://CoarseGrainedScheduler@driver:7078"),
        ("SPARK_EXECUTOR_POD_IP", ""), ("SPARK_JAVA_OPT_0", "-Dspark.driver.port=7078"),
        ("SPARK_LOCAL_DIRS", "/var/data/spark-1"), ("SPARK_CONF_DIR", "/opt/spark/conf"))]
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "etl-job-exec-", "namespace": "analytics",
                     "labels": {"spark-app-selector": "spark-7f3a", "spark-role": "executor",
                                "spark-exec-id": str(index), "queue": "root.analytics.etl"},
                     "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8090"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "etl-job-driver",
                                          "uid": str(uuid.uuid4()), "controller": True}]},
        "spec": {
            "containers": [{"name": "spark-kubernetes-executor", "image": "apache/spark:3.5.1",
                            "args": ["executor"], "env": env, "imagePullPolicy": "IfNotPresent",
                            "ports": [{"containerPort": 7079, "name": "blockmanager", "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "2", "memory": "4505Mi"},
                                          "limits": {"cpu": "2", "memory": "4505Mi"}},
                            "volumeMounts": [{"mountPath": "/var/data/spark-1", "name": "spark-local-dir-1"},
                                             {"mountPath": "/opt/spark/conf", "name": "spark-conf-volume-exec"},
                                             {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                              "name": "kube-api-access", "readOnly": True}],
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File"}],
            "volumes": [{"name": "spark-local-dir-1", "emptyDir": {}},
                        {"name": "spark-conf-volume-exec", "configMap": {"name": "spark-exec-conf", "defaultMode": 420}},
                        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace",
                                                        "fieldRef": {"apiVersion": "v1",
                                                                     "fieldPath": "metadata.namespace"}}]}}]}}],
            "restartPolicy": "Never", "dnsPolicy": "ClusterFirst", "serviceAccountName": "spark",
            "terminationGracePeriodSeconds": 30, "securityContext": {"fsGroup": 185},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
            "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0}}
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": "analytics",
        "operation": "CREATE", "userInfo": {"username": "system:serviceaccount:analytics:spark",
                                            "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": pod, "oldObject": None, "dryRun": False}}).encode()


def _context(bundle: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=bundle.decode())


def _connect(port: int, context: ssl.SSLContext) -> http.client.HTTPConnection:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    raw = socket.create_connection(("127.0.0.1", port), timeout=30)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    connection.sock = context.wrap_socket(raw, server_hostname=SERVER_NAME)
    return connection


class LeanConnection:
    """A keep-alive HTTPS client that costs the shared CPUs as little as possible.

    The API server is the real caller and runs elsewhere; here the load generator shares two cores
    with the controller, so every microsecond it spends is taken from the server being measured.
    Requests are pre-encoded and responses are framed by Content-Length only (the server never chunks).
    """

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._tls = context.wrap_socket(raw, server_hostname=SERVER_NAME)
        self._buffer = b""

    @staticmethod
    def encode(path: str, body: bytes) -> bytes:
        return (f"POST {path} HTTP/1.1\r\nHost: {SERVER_NAME}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send one pre-encoded request; the status code and body of its response."""
        self._tls.sendall(request)
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            self._buffer += self._receive()
        head, rest = self._buffer[:end], self._buffer[end + 4:]
        length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        while len(rest) < length:
            rest += self._receive()
        self._buffer = rest[length:]
        return int(head[9:12]), rest[:length]

    def _receive(self) -> bytes:
        chunk = self._tls.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        return chunk

    def close(self) -> None:
        self._tls.close()


def process_tree_cpu(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its children (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
            pending += [int(child) for child in
                        Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except OSError:
            continue
    return total


def _client(args: tuple) -> tuple[list[float], int, float]:
    """One client process: ``threads`` keep-alive connections until ``deadline``; latencies in seconds."""
    port, bundle, threads, deadline, keepalive = args
    context = _context(bundle)
    requests = [LeanConnection.encode("/mutate", spark_executor_review(i)) for i in range(16)]
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def run():
        mine, connection, count = [], None, 0
        while time.time() < deadline:
            request = requests[count % len(requests)]
            count += 1
            started = time.perf_counter()
            try:
                if connection is None:
                    connection = LeanConnection(port, context)
                status, payload = connection.exchange(request)
                ok = status == 200 and b'"allowed":true' in payload
            except (OSError, ValueError, IndexError):
                ok, connection = False, None
            mine.append(time.perf_counter() - started)
            if not ok:
                with lock:
                    errors[0] += 1
            if not keepalive and connection is not None:
                connection.close()
                connection = None
        with lock:
            latencies.extend(mine)

    cpu_before = time.process_time()
    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return latencies, errors[0], time.process_time() - cpu_before


def drive(port: int, bundle: bytes, processes: int, connections: int, seconds: float, keepalive: bool,
          server_pid: int) -> dict:
    server_cpu = process_tree_cpu(server_pid)
    deadline = time.time() + seconds
    per_process = max(1, connections // processes)
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        results = pool.map(_client, [(port, bundle, per_process, deadline, keepalive)] * processes)
    latencies = sorted(latency for result in results for latency in result[0])
    errors = sum(result[1] for result in results)
    server_cpu = process_tree_cpu(server_pid) - server_cpu
    client_cpu = sum(result[2] for result in results)

    def percentile(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {"requests": len(latencies), "errors": errors, "rate": len(latencies) / seconds,
            "p50": percentile(0.50), "p99": percentile(0.99), "max": latencies[-1] * 1000,
            "server_us": server_cpu / len(latencies) * 1e6, "client_us": client_cpu / len(latencies) * 1e6}


@contextlib.contextmanager
def checkout(revision: str | None):
    """The source tree of ``revision`` of this repository, exported to a temporary directory (None: this
    working tree itself)."""
    if revision is None:
        yield REPO
        return
    folder = Path(tempfile.mkdtemp(prefix="admission-reference-"))
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def running_controller(workers: int, threads: int, *extra: str, source: Path = REPO):
    """A kubesim and a healthy ``yunikorn-admission-controller`` run from the tree ``source``: yields
    (process, port, caBundle)."""
    sim = KubeSim().start()
    workdir = Path(tempfile.mkdtemp(prefix="admission-bench-"))
    sim.write_kubeconfig(workdir / "kubeconfig")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    log = open(workdir / "controller.log", "wb")  # noqa: SIM115
    controller = subprocess.Popen(
        [sys.executable, "-m", "webhook", "--kubeconfig", str(workdir / "kubeconfig"), "--listen",
         f"127.0.0.1:{port}", "--workers", str(workers), "--threads", str(threads), "--log-level", "warning",
         *extra],
        cwd=source, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(source)})
    try:
        deadline = time.monotonic() + 60
        while True:
            configs = sim.objects("mutatingwebhookconfigurations")
            if configs:
                bundle = base64.b64decode(configs[0]["webhooks"][0]["clientConfig"]["caBundle"])
                try:
                    connection = _connect(port, _context(bundle))
                    connection.request("GET", "/health")
                    if connection.getresponse().status == 200:
                        break
                except OSError:
                    pass
            if time.monotonic() > deadline or controller.poll() is not None:
                raise SystemExit(f"controller did not start:\n{(workdir / 'controller.log').read_text()}")
            time.sleep(0.1)
        yield controller, port, bundle
    finally:
        controller.send_signal(signal.SIGTERM)
        controller.wait(timeout=30)
        log.close()
        sim.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def measure(args, source: Path) -> tuple[dict, dict]:
    """One controller run from ``source``: (keep-alive figures, new-connection figures)."""
    with running_controller(args.workers, args.threads, "--server-key", args.server_key, source=source) as (
            controller, port, bundle):
        drive(port, bundle, 1, 2, 1.0, True, controller.pid)  # warm-up
        kept = drive(port, bundle, args.processes, args.connections, args.seconds, True, controller.pid)
        fresh = drive(port, bundle, args.processes, args.connections, min(args.seconds, 5.0), False, controller.pid)
    return kept, fresh


def _print_run(label: str, kept: dict, fresh: dict, connections: int) -> None:
    print(f"{label}keep-alive, {connections} connections: {kept['rate']:.0f} req/s, p50 {kept['p50']:.2f} ms, "
          f"p99 {kept['p99']:.2f} ms, max {kept['max']:.1f} ms, {kept['requests']} requests, {kept['errors']} errors")
    print(f"{label}  CPU per request: server {kept['server_us']:.0f} us, client {kept['client_us']:.0f} us "
          f"-> server-only capacity on 2 cores ~{2e6 / kept['server_us']:.0f} req/s")
    print(f"{label}new TLS connection per request: {fresh['rate']:.0f} req/s, p50 {fresh['p50']:.2f} ms, "
          f"p99 {fresh['p99']:.2f} ms, {fresh['errors']} errors; CPU per request: server "
          f"{fresh['server_us']:.0f} us, client {fresh['client_us']:.0f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=8, help="keep-alive connections in total")
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--server-key", choices=("ecdsa", "rsa"), default="ecdsa")
    parser.add_argument("--reference", metavar="REV", help="git revision to measure against, alternately")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, with --reference")
    args = parser.parse_args()

    print(f"admission /mutate over HTTPS: {args.workers} gunicorn workers x {args.threads} threads, "
          f"server key {args.server_key}, {os.cpu_count()} CPUs shared with the clients")
    if not args.reference:
        _print_run("", *measure(args, REPO), args.connections)
        return 0
    runs: dict[str, list[tuple[dict, dict]]] = {"before": [], "after": []}
    with checkout(args.reference) as reference:
        for round_ in range(1, args.rounds + 1):
            for label, source in (("before", reference), ("after", REPO)):
                runs[label].append(measure(args, source))
                _print_run(f"round {round_} {label} ({args.reference if label == 'before' else 'this tree'}): ",
                           *runs[label][-1], args.connections)

    def median(label: str, which: int, key: str) -> float:
        return statistics.median(run[which][key] for run in runs[label])

    print(f"medians of {args.rounds} rounds       before    after   after/before")
    for name, which, key in (("keep-alive req/s", 0, "rate"), ("keep-alive p50 ms", 0, "p50"),
                             ("keep-alive p99 ms", 0, "p99"), ("server CPU us/request", 0, "server_us"),
                             ("new connection req/s", 1, "rate"), ("new connection p99 ms", 1, "p99"),
                             ("new connection server us", 1, "server_us")):
        before, after = median("before", which, key), median("after", which, key)
        print(f"  {name:<24} {before:8.2f} {after:8.2f}   {after / before:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
