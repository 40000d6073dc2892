"""The extender over HTTPS on a port of its own: only a client holding a certificate of the configured
CA (kube-scheduler's ``tlsConfig.certFile``/``keyFile``) gets an answer; the REST port serves no
extender call then."""

from __future__ import annotations

import datetime as dt
import http.client
import ipaddress
import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from actors.cli import parse_args
from rest.app import SchedulerView
from rest.extender_server import ExtenderServer, ExtenderTls
from rest.server import RestServer
from tests.reliability.process import REPO, free_port
from tests.shim.test_plugin_mode import BIND, FILTER, approved_node
from tests.waiting import wait_for


class Authority:
    """A CA that signs server and client certificates into ``directory``."""

    def __init__(self, directory, name: str) -> None:
        self.directory, self.name = directory, name
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (self._builder(subject, self.key.public_key(), subject)
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.ca_file = self._write(f"{name}-ca.crt", self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, common_name: str, usage, server: bool = False) -> tuple[str, str]:
        """(certificate file, key file) of a new certificate for ``common_name``."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
                                 key.public_key(), self.cert.subject)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return (self._write(f"{common_name}.crt", cert.public_bytes(serialization.Encoding.PEM)),
                self._write(f"{common_name}.key", key_pem))

    @staticmethod
    def _builder(subject, public_key, issuer) -> x509.CertificateBuilder:
        now = dt.datetime.now(dt.UTC)
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=1)))

    def _write(self, name: str, data: bytes) -> str:
        path = self.directory / name
        path.write_bytes(data)
        return str(path)


@pytest.fixture
def secured(cluster, tmp_path):
    cluster.sim.seed_nodes(2, cpu="2")
    ours, theirs = Authority(tmp_path, "extender"), Authority(tmp_path, "stranger")
    service = cluster.start_scheduler(plugin_mode=True)
    server_cert, server_key = ours.issue("yunikorn-service", ExtendedKeyUsageOID.SERVER_AUTH, server=True)
    extender = ExtenderServer(service.extender, ExtenderTls(server_cert, server_key, ours.ca_file),
                              host="127.0.0.1", port=0, timeout=2.0)
    rest = RestServer(SchedulerView(cluster.scheduler, extender=service.extender, extender_on_rest_port=False),
                      host="127.0.0.1", port=0)
    yield cluster, extender, rest, ours, theirs
    rest.stop()
    extender.stop()


def post(port: int, path: str, body: dict, authority: Authority, client: tuple[str, str] | None) -> tuple[int, dict]:
    context = ssl.create_default_context(cafile=authority.ca_file)
    if client is not None:
        context.load_cert_chain(*client)
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_only_a_client_certificate_of_the_configured_ca_may_filter_and_bind(secured):
    cluster, extender, rest, ours, theirs = secured
    cluster.pod("job-0", cpu="500m", labels={"applicationId": "job"})
    node = approved_node(cluster, "job-0")
    pod = cluster.pods()["job-0"]
    binding = {"PodName": "job-0", "PodNamespace": "default", "PodUID": pod["metadata"]["uid"], "Node": node}
    stranger = theirs.issue("kube-scheduler-elsewhere", ExtendedKeyUsageOID.CLIENT_AUTH)
    for client in (None, stranger):
        with pytest.raises((ssl.SSLError, ConnectionError)):
            post(extender.port, BIND, binding, ours, client)
    kube_scheduler = ours.issue("kube-scheduler", ExtendedKeyUsageOID.CLIENT_AUTH)
    status, reply = post(extender.port, FILTER, {"Pod": pod, "NodeNames": [node]}, ours, kube_scheduler)
    assert status == 200 and reply["NodeNames"] == [node]
    assert cluster.node_of("job-0") is None  # nothing the refused clients sent was acted on
    status, reply = post(extender.port, BIND, binding, ours, kube_scheduler)
    assert (status, reply) == (200, {"Error": ""})
    wait_for(lambda: cluster.node_of("job-0") == node, timeout=10, message="the pod bound")


def test_the_rest_port_serves_no_extender_call_when_the_extender_has_its_own(secured):
    cluster, extender, rest, ours, theirs = secured
    connection = http.client.HTTPConnection("127.0.0.1", rest.port, timeout=10)
    try:
        connection.request("POST", BIND, body=b"{}", headers={"Content-Type": "application/json"})
        assert connection.getresponse().status == 404
    finally:
        connection.close()


@pytest.mark.parametrize("flags", [
    ["--extender-tls-cert-file", "a.crt", "--extender-tls-key-file", "a.key", "--extender-client-ca-file", "ca.crt"],
    ["--plugin-mode", "--extender-tls-cert-file", "a.crt", "--extender-tls-key-file", "a.key"],
])
def test_the_tls_flags_go_together_and_with_plugin_mode(flags, capsys):
    with pytest.raises(SystemExit):
        parse_args(flags)
    assert "go together, with --plugin-mode" in capsys.readouterr().err
    args = parse_args(["--plugin-mode", "--extender-tls-cert-file", "a.crt", "--extender-tls-key-file", "a.key",
                       "--extender-client-ca-file", "ca.crt", "--extender-port", "9444"])
    assert (args.extender_tls, args.extender_port) == (ExtenderTls("a.crt", "a.key", "ca.crt"), 9444)


def test_a_client_that_dribbles_its_request_frees_its_thread_at_the_deadline(cluster, tmp_path):
    ours = Authority(tmp_path, "extender")
    server_cert, server_key = ours.issue("yunikorn-service", ExtendedKeyUsageOID.SERVER_AUTH, server=True)
    service = cluster.start_scheduler(plugin_mode=True)
    extender = ExtenderServer(service.extender, ExtenderTls(server_cert, server_key, ours.ca_file),
                              host="127.0.0.1", port=0, threads=1, timeout=1.0)
    kube_scheduler = ours.issue("kube-scheduler", ExtendedKeyUsageOID.CLIENT_AUTH)
    context = ssl.create_default_context(cafile=ours.ca_file)
    context.load_cert_chain(*kube_scheduler)
    stop = threading.Event()

    def dribble() -> None:  # the one thread's connection: a byte every 0.2 s, never a whole request
        with socket.create_connection(("127.0.0.1", extender.port)) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            for byte in b"POST /scheduler/extender/bind HTTP/1.1\r\nHost: x\r\n" * 10:
                if stop.wait(0.2):
                    return
                try:
                    tls.sendall(bytes([byte]))
                except OSError:
                    return

    dribbler = threading.Thread(target=dribble)
    dribbler.start()
    try:
        started = time.monotonic()
        status, reply = post(extender.port, BIND, {"PodName": "p", "PodNamespace": "default", "PodUID": "u",
                                                   "Node": "n"}, ours, kube_scheduler)
        assert status == 200 and reply["Error"] == "pod default/p does not exist"
        assert time.monotonic() - started < 10  # the dribbler held the only thread for 1 s, not 20
    finally:
        stop.set()
        dribbler.join()
        extender.stop()


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_the_command_serves_the_extender_on_its_tls_port_only(cluster, tmp_path):
    ours = Authority(tmp_path, "extender")
    server_cert, server_key = ours.issue("yunikorn-service", ExtendedKeyUsageOID.SERVER_AUTH, server=True)
    cluster.sim.seed_nodes(2)
    rest_port, extender_port = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "actors.cli", "--kubeconfig", cluster.kubeconfig, "--rest-host", "127.0.0.1",
         "--rest-port", str(rest_port), "--plugin-mode", "--extender-port", str(extender_port),
         "--extender-tls-cert-file", server_cert, "--extender-tls-key-file", server_key,
         "--extender-client-ca-file", ours.ca_file], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    try:
        wait_for(lambda: process.poll() is not None or listening(extender_port), timeout=60,
                 message="the extender port to listen")
        cluster.pod("p", labels={"applicationId": "app"})
        node = approved_node(cluster, "p")
        pod = cluster.pods()["p"]
        status, reply = post(extender_port, FILTER, {"Pod": pod, "NodeNames": ["node-00000", "node-00001"]}, ours,
                             ours.issue("kube-scheduler", ExtendedKeyUsageOID.CLIENT_AUTH))
        assert status == 200 and reply["NodeNames"] == [node]
        request = urllib.request.Request(f"http://127.0.0.1:{rest_port}{FILTER}", method="POST", data=b"{}",
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 404
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
