"""One replica's certificates over time: obtain them at start, renew them before a CA expires.

:meth:`CertificateManager.refresh` is the whole startup sequence of the PKI: load or create the shared
CA pair, register the webhooks with that pair's bundle, then write a fresh server certificate for the
workers. Registration comes before the new certificate is served, so a caller that trusts the
registered bundle can always verify what it is served. :class:`Rotator` calls ``refresh`` again when
either CA gets within ``renew_within`` of expiry.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from pathlib import Path

from kubernetes import client

from webhook import registration
from webhook.castore import DEFAULT_VALIDITY, Clock, Validity, load_or_create_cas, system_clock
from webhook.pki import CertificateAuthority, ca_bundle, generate_server_certificate, signing_ca
from webhook.tls import write_atomically

log = logging.getLogger(__name__)


class CertificateManager:
    """The CA pair this replica serves under, and the server certificate file it keeps current."""

    def __init__(self, api_client: client.ApiClient, namespace: str, service: str, cert_file: Path,
                 clock: Clock = system_clock, validity: Validity = DEFAULT_VALIDITY, server_key: str = "ecdsa") -> None:
        self._core = client.CoreV1Api(api_client)
        self._admission = client.AdmissionregistrationV1Api(api_client)
        self.namespace = namespace
        self.service = service
        self.cert_file = Path(cert_file)
        self.clock = clock
        self.validity = validity
        self.server_key = server_key
        self.cas: tuple[CertificateAuthority, CertificateAuthority] | None = None

    def refresh(self) -> None:
        cas = load_or_create_cas(self._core, self.namespace, self.clock, self.validity)
        registration.install(self._admission, self.service, self.namespace, ca_bundle(cas))
        server = generate_server_certificate(signing_ca(cas), self.service, self.namespace, self.clock(),
                                             self.validity.server_lifetime, self.server_key)
        write_atomically(self.cert_file, server.pem)
        self.cas = cas
        log.info("serving a certificate signed by the CA valid until %s; next renewal at %s",
                 signing_ca(cas).not_after, self.renewal_due())

    def renewal_due(self) -> dt.datetime:
        """When the sooner-expiring CA enters the renewal window."""
        return min(ca.not_after for ca in self.cas) - self.validity.renew_within


class Rotator:
    """A daemon thread renewing the certificates when due, checking the clock every ``check_interval`` s.

    Periodic checks (rather than one long sleep) keep renewal on time when the clock jumps, e.g. after
    a suspend, or in tests that move it.
    """

    def __init__(self, manager: CertificateManager, check_interval: float = 3600.0) -> None:
        self._manager = manager
        self._check_interval = check_interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="certificate-rotator", daemon=True)

    def start(self) -> Rotator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.wait(self._check_interval):
            if self._manager.clock() < self._manager.renewal_due():
                continue
            log.info("a CA is within %s of expiry: renewing", self._manager.validity.renew_within)
            try:
                self._manager.refresh()
            except Exception:  # noqa: BLE001 - keep serving the current certificate and try again later
                log.exception("certificate renewal failed; retrying in %s s", self._check_interval)
