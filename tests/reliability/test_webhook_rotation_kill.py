"""An admission controller replica SIGKILLed while both replicas rotate a CA: the survivor answers every
review throughout with a certificate the registered bundle verifies, and a restarted replica converges
on the same CA pair and bundle."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.waiting import wait_for
from tests.webhook.harness import (
    Controller,
    registered_bundle,
    review_like_the_api_server,
    secret_cas,
    served_certificate,
    verify,
)

pytestmark = pytest.mark.slow  # admission controller processes killed during a certificate rotation

MOVED = dt.timedelta(days=160)  # the second CA of a fresh pair (6 months) is then within 30 days of expiry


class Caller:
    """Reviews sent to one replica as the API server would: a new connection each, the leaf verified
    against the bundle registered at that moment, at the controllers' (moved) time."""

    def __init__(self, sim, port: int, clock) -> None:
        self.answered, self.failures = 0, []
        self._sim, self._port, self._clock = sim, port, clock
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                review_like_the_api_server(self._sim, self._port, self._clock())
                self.answered += 1
            except Exception as error:  # noqa: BLE001 - every failure is kept and fails the test
                self.failures.append(repr(error))

    def __enter__(self) -> Caller:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join(timeout=20)


@pytest.mark.timeout(120)
def test_a_replica_killed_during_ca_rotation(kubesim, tmp_path):
    kubeconfig, offset = tmp_path / "kubeconfig", tmp_path / "clock-offset"
    kubesim.write_kubeconfig(kubeconfig)
    offset.write_text("0")

    def clock() -> dt.datetime:
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=float(offset.read_text()))

    def replica(name: str) -> Controller:
        return Controller(kubeconfig, tmp_path / f"{name}.log", "--clock-offset-file", str(offset),
                          "--rotation-check-interval", "0.1", workers=1)

    def serving(controller: Controller) -> bool:
        try:
            verify(served_certificate(controller.port), registered_bundle(kubesim), clock())
            return True
        except (OSError, ValueError, LookupError, x509.verification.VerificationError):
            return False

    doomed, survivor = replica("doomed"), replica("survivor")
    restarted = None
    try:
        for controller in (doomed, survivor):
            wait_for(lambda c=controller: serving(c), timeout=60, interval=0.1, message="a replica serving")
        ca1, ca2 = secret_cas(kubesim)
        with Caller(kubesim, survivor.port, clock) as caller:
            wait_for(lambda: caller.answered >= 3, timeout=20, message="reviews before the rotation")
            writes_before = len(secret_writes(kubesim))
            moved = offset.with_suffix(".moved")  # replaced whole: no clock ever reads it half written
            moved.write_text(str(MOVED.total_seconds()))
            moved.replace(offset)
            wait_for(lambda: len(secret_writes(kubesim)) > writes_before, timeout=30, interval=0.005,
                     message="a replica writing the rotated CA")
            doomed.process.kill()  # in the middle of its rotation: generating, writing or registering
            doomed.process.wait(timeout=10)
            wait_for(lambda: secret_cas(kubesim)[1] != ca2 and serving(survivor), timeout=30,
                     message="the survivor serving under the rotated pair")
            restarted = replica("restarted")
            wait_for(lambda: serving(restarted), timeout=60, interval=0.1, message="the restarted replica serving")
            answered = caller.answered
            wait_for(lambda: caller.answered >= answered + 3, timeout=20, message="reviews after the restart")
        assert caller.failures == []
        new_ca1, new_ca2 = secret_cas(kubesim)
        assert new_ca1 == ca1 and new_ca2 != ca2 and new_ca2.not_valid_after_utc - clock() > dt.timedelta(days=364)
        pair = b"".join(ca.public_bytes(serialization.Encoding.PEM) for ca in (new_ca1, new_ca2))
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            assert registered_bundle(kubesim, kind) == pair
        assert survivor.process.poll() is None and "Traceback" not in survivor.log()
    finally:
        for controller in (doomed, survivor, restarted):
            if controller is not None:
                controller.stop()


def secret_writes(sim) -> list:
    return [r for r in list(sim.request_log) if r.resource == "secrets" and r.verb in ("create", "update", "patch")]
