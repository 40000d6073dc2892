"""Certificates, registration and process life cycle of the real command against kubesim."""

from __future__ import annotations

import base64
import datetime as dt
import socket
import ssl
import subprocess
import sys
import threading
import warnings

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.waiting import wait_for
from tests.webhook.harness import (
    NAMESPACE,
    REPO_ROOT,
    SERVER_NAME,
    SERVICE,
    HttpsClient,
    pod,
    registered_bundle,
    review,
    review_like_the_api_server,
    secret_cas,
    served_certificate,
    verify,
)
from webhook import constants as c
from webhook.pki import generate_ca

DAY = dt.timedelta(days=1)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def secret_object(sim) -> dict:
    return next(s for s in sim.objects("secrets", NAMESPACE) if s["metadata"]["name"] == c.SECRET_NAME)


def store_secret(sim, cas) -> None:
    data = {}
    for index, ca in enumerate(cas):
        data[c.CA_CERT_KEYS[index]] = base64.b64encode(ca.cert_pem).decode()
        data[c.CA_KEY_KEYS[index]] = base64.b64encode(ca.key_pem).decode()
    sim.store.create(sim_kind(sim, "secrets"), NAMESPACE,
                     {"metadata": {"name": c.SECRET_NAME, "namespace": NAMESPACE}, "type": "Opaque", "data": data})


def sim_kind(sim, plural):
    from kubesim.resources import KINDS

    return next(kind for kind in KINDS if kind.plural == plural)


def writes(sim, resource: str) -> list:
    return [r for r in sim.request_log if r.resource == resource and r.verb in ("create", "update", "patch")]


@pytest.mark.timeout(90)
def test_fresh_install_creates_secret_and_both_webhooks(kubesim, start_controller):
    controller = start_controller()
    ca1, ca2 = secret_cas(kubesim)
    assert ca1.not_valid_after_utc - now() > 364 * DAY  # 12 months
    assert 180 * DAY < ca2.not_valid_after_utc - now() < 183 * DAY  # 6 months, so they never expire together
    secret = secret_object(kubesim)
    for key in c.CA_KEY_KEYS:
        key_pem = base64.b64decode(secret["data"][key])
        assert key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")  # PKCS#1
        serialization.load_pem_private_key(key_pem, password=None)

    (validating,) = kubesim.objects("validatingwebhookconfigurations")
    (mutating,) = kubesim.objects("mutatingwebhookconfigurations")
    assert validating["metadata"]["name"] == c.VALIDATING_CONFIGURATION
    assert mutating["metadata"]["name"] == c.MUTATING_CONFIGURATION
    bundle = ca1.public_bytes(serialization.Encoding.PEM) + ca2.public_bytes(serialization.Encoding.PEM)
    for config, path, resources in ((validating, "/validate-conf", ["configmaps"]),
                                    (mutating, "/mutate", ["pods", "deployments", "replicasets", "statefulsets",
                                                           "daemonsets", "jobs", "cronjobs"])):
        (hook,) = config["webhooks"]
        assert config["metadata"]["labels"]["app"] == "yunikorn"
        assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["clientConfig"]["service"] == {"name": SERVICE, "namespace": NAMESPACE, "path": path}
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == bundle
        assert hook["rules"][0]["resources"] == resources
        assert hook["rules"][0]["operations"] == ["CREATE", "UPDATE"]

    # Start-up work ran once for the replica, not once per worker.
    assert [r.verb for r in writes(kubesim, "mutatingwebhookconfigurations")] == ["create"]
    assert [r.verb for r in writes(kubesim, "secrets")] == ["create"]

    leaf = served_certificate(controller.port)
    verify(leaf, bundle, now())
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert sans == [SERVICE, f"{SERVICE}.{NAMESPACE}", f"{SERVICE}.{NAMESPACE}.svc"]
    assert leaf.issuer == ca1.subject and leaf.not_valid_after_utc <= ca1.not_valid_after_utc  # latest expiry
    # TLS 1.1 and older are refused.
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError), socket.create_connection(("127.0.0.1", controller.port), timeout=5) as raw:
        old.wrap_socket(raw, server_hostname=SERVER_NAME)
    assert controller.stop() == 0  # SIGTERM: a clean exit


@pytest.mark.timeout(90)
def test_existing_valid_secret_is_reused_unchanged(kubesim, start_controller):
    cas = (generate_ca(now(), 300 * DAY, 2048), generate_ca(now(), 200 * DAY, 2048))
    store_secret(kubesim, cas)
    before = secret_object(kubesim)
    controller = start_controller()
    assert secret_object(kubesim) == before
    assert writes(kubesim, "secrets") == []
    leaf = served_certificate(controller.port)
    assert leaf.issuer == cas[0].certificate.subject
    verify(leaf, cas[0].cert_pem + cas[1].cert_pem, now())
    leaf.verify_directly_issued_by(cas[0].certificate)  # signed by the longer-lived CA; raises otherwise

    # A second start (e.g. a restart) finds identical webhook configurations and writes nothing.
    configs_before = writes(kubesim, "mutatingwebhookconfigurations") + writes(kubesim,
                                                                               "validatingwebhookconfigurations")
    start_controller()
    assert writes(kubesim, "mutatingwebhookconfigurations") + writes(
        kubesim, "validatingwebhookconfigurations") == configs_before
    assert writes(kubesim, "secrets") == []


@pytest.mark.timeout(90)
def test_expiring_ca_is_replaced_at_start(kubesim, start_controller):
    keep = generate_ca(now(), 300 * DAY, 2048)
    store_secret(kubesim, (generate_ca(now(), 60 * DAY, 2048), keep))  # within 90 days: replaced
    kubesim.faults.fail(verb="update", resource="secrets", status=409, count=1)
    start_controller()
    ca1, ca2 = secret_cas(kubesim)
    assert ca2 == keep.certificate
    assert ca1.not_valid_after_utc - now() > 364 * DAY
    codes = [r.code for r in kubesim.request_log if r.resource == "secrets" and r.verb == "update"]
    assert codes[0] == 409 and codes[-1] == 200


@pytest.mark.timeout(90)
def test_api_faults_are_retried_and_survived(kubesim, start_controller):
    kubesim.faults.fail(verb="get", resource="secrets", status=503, count=2)
    kubesim.faults.fail(verb="create", resource="secrets", status=500, count=2)
    kubesim.faults.fail(verb="create", resource="secrets", status=409, count=1)
    kubesim.faults.fail(verb="create", resource="mutatingwebhookconfigurations", status=500, count=2)
    kubesim.faults.fail(verb="list", resource="namespaces", status=500, count=2)
    controller = start_controller()
    codes = [r.code for r in kubesim.request_log if r.resource == "secrets" and r.verb == "create"]
    assert codes[:3] == [500, 500, 409] and codes[-1] == 201
    assert len(secret_cas(kubesim)) == 2
    client = HttpsClient(controller.port, registered_bundle(kubesim))
    assert client.review(c.MUTATE_PATH, review(pod()))["allowed"] is True


@pytest.mark.timeout(120)
def test_two_replicas_started_together_converge(kubesim, start_controller):
    first = start_controller(wait=False)
    second = start_controller(wait=False)
    for replica in (first, second):
        replica.wait_healthy(lambda port: HttpsClient(port, registered_bundle(kubesim)), timeout=60)
    ca1, ca2 = secret_cas(kubesim)
    bundle = ca1.public_bytes(serialization.Encoding.PEM) + ca2.public_bytes(serialization.Encoding.PEM)
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        assert registered_bundle(kubesim, kind) == bundle
    for replica in (first, second):
        verify(served_certificate(replica.port), bundle, now())
        client = HttpsClient(replica.port, bundle)
        assert client.review(c.MUTATE_PATH, review(pod()))["allowed"] is True
        assert replica.process.poll() is None and "Traceback" not in replica.log()
    assert first.stop() == 0 and second.stop() == 0


@pytest.mark.timeout(120)
def test_rotation_with_a_moved_clock_loses_no_request(kubesim, start_controller, tmp_path):
    offset_file = tmp_path / "clock-offset"
    offset_file.write_text("0")
    controller = start_controller("--clock-offset-file", str(offset_file), "--rotation-check-interval", "0.2")
    original_ca1, original_ca2 = secret_cas(kubesim)

    def controller_now() -> dt.datetime:
        return now() + dt.timedelta(seconds=float(offset_file.read_text()))

    failures, issuers, done = [], [], threading.Event()
    steady = HttpsClient(controller.port, registered_bundle(kubesim))  # one keep-alive connection throughout

    def call_like_the_api_server():
        """New connection per call, trusting the bundle registered at that moment, at the controller's time."""
        while not done.is_set():
            try:
                leaf = review_like_the_api_server(kubesim, controller.port, controller_now())
                issuers.append(leaf.issuer.rfc4514_string() + str(leaf.not_valid_after_utc))
                assert steady.review(c.MUTATE_PATH, review(pod()))["allowed"] is True
            except Exception as error:  # noqa: BLE001 - every failure is recorded and fails the test
                failures.append(repr(error))

    caller = threading.Thread(target=call_like_the_api_server, daemon=True)
    caller.start()
    try:
        wait_for(lambda: len(issuers) >= 5, timeout=20, message="calls before the clock moves")
        offset_file.write_text(str((160 * DAY).total_seconds()))  # CA2 (6 months) is now within 30 days
        wait_for(lambda: secret_cas(kubesim)[1] != original_ca2, timeout=30, message="CA2 to be rotated")
        rotated_ca2 = secret_cas(kubesim)[1]
        wait_for(lambda: any(str(rotated_ca2.not_valid_after_utc) in issuer for issuer in issuers[-3:]),
                 timeout=30, message="the server to present a certificate from the new CA")
        calls_after = len(issuers)
        wait_for(lambda: len(issuers) >= calls_after + 5, timeout=20, message="more calls after rotation")
    finally:
        done.set()
        caller.join(timeout=20)
    assert failures == []
    ca1, ca2 = secret_cas(kubesim)
    assert ca1 == original_ca1  # the CA with months left is kept
    assert ca2.not_valid_after_utc - controller_now() > 364 * DAY
    assert registered_bundle(kubesim) == (ca1.public_bytes(serialization.Encoding.PEM)
                                          + ca2.public_bytes(serialization.Encoding.PEM))


def test_remove_webhooks_uninstalls(kubesim, start_controller, tmp_path):
    start_controller(workers=1)
    assert kubesim.objects("mutatingwebhookconfigurations") and kubesim.objects("validatingwebhookconfigurations")
    result = subprocess.run([sys.executable, "-m", "webhook", "--kubeconfig", str(tmp_path / "kubeconfig"),
                             "--remove-webhooks"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert kubesim.objects("mutatingwebhookconfigurations") == []
    assert kubesim.objects("validatingwebhookconfigurations") == []
    assert c.MUTATING_CONFIGURATION in result.stdout and c.VALIDATING_CONFIGURATION in result.stdout


def test_a_killed_controllers_scratch_folder_is_removed_by_the_next_one(start_controller, tmp_path):
    shared_tmp = tmp_path / "tmp"  # as the chart's emptyDir at /tmp, kept across the container's restarts
    shared_tmp.mkdir()
    killed = start_controller(env={"TMPDIR": str(shared_tmp)})
    [left] = shared_tmp.glob("yunikorn-admission-*")
    assert (left / "server.pem").exists(), "the serving key and certificate are kept there"
    killed.process.kill()
    killed.process.wait(timeout=10)
    assert (left / "server.pem").exists(), "a killed controller removes nothing"
    start_controller(env={"TMPDIR": str(shared_tmp)})
    [kept] = shared_tmp.glob("yunikorn-admission-*")
    assert kept != left and (kept / "server.pem").exists(), "the next controller removed the folder left behind"
