"""The CA pair kept in the secret ``admission-controller-secrets``, shared by every replica.

:func:`load_or_create_cas` reads the secret, regenerates each CA that is missing, unreadable or too
close to expiry, and writes the result back with optimistic concurrency (create if the secret is
missing, replace with the read resourceVersion otherwise). A 409 means another replica wrote first:
re-read and adopt its CAs. Replicas started together therefore converge on one pair.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook import constants as c
from webhook import kube
from webhook.pki import CertificateAuthority, generate_ca, load_ca

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]
MAX_ATTEMPTS = 10


def system_clock() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Validity:
    """Lifetimes and thresholds of the PKI; tests shorten or move them."""

    ca_lifetime: dt.timedelta = dt.timedelta(days=365)
    staggered_ca_lifetime: dt.timedelta = dt.timedelta(days=182)  # second CA of a fresh pair
    regenerate_within: dt.timedelta = dt.timedelta(days=90)  # at load: a CA this close to expiry is replaced
    renew_within: dt.timedelta = dt.timedelta(days=30)  # running: rotate when a CA gets this close
    server_lifetime: dt.timedelta = dt.timedelta(days=365)
    ca_key_bits: int = 4096


DEFAULT_VALIDITY = Validity()


class CaStoreError(RuntimeError):
    """The CA pair could not be stored (e.g. other writers kept winning for every attempt)."""


def _decode(data: dict, key: str) -> bytes | None:
    value = data.get(key)
    try:
        return base64.b64decode(value) if value else None
    except ValueError:
        return None


def _usable(ca: CertificateAuthority | None, now: dt.datetime, validity: Validity) -> bool:
    return ca is not None and ca.not_after >= now + validity.regenerate_within


def load_or_create_cas(core: client.CoreV1Api, namespace: str, clock: Clock = system_clock,
                       validity: Validity = DEFAULT_VALIDITY) -> tuple[CertificateAuthority, CertificateAuthority]:
    """The two CAs from the secret, after creating or renewing whatever is missing or expiring."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        secret = kube.read_raw(core.read_namespaced_secret, c.SECRET_NAME, namespace)
        data = dict((secret or {}).get("data") or {})
        now = clock()
        cas = [load_ca(_decode(data, cert), _decode(data, key)) for cert, key in zip(c.CA_CERT_KEYS, c.CA_KEY_KEYS, strict=True)]
        missing = [index for index, ca in enumerate(cas) if not _usable(ca, now, validity)]
        if not missing:
            log.debug("CA pair in secret %s/%s is valid until %s and %s", namespace, c.SECRET_NAME,
                      cas[0].not_after, cas[1].not_after)
            return cas[0], cas[1]
        for index in missing:
            staggered = index == 1 and len(missing) == 2  # so the two never expire together
            lifetime = validity.staggered_ca_lifetime if staggered else validity.ca_lifetime
            cas[index] = generate_ca(now, lifetime, validity.ca_key_bits)
            data[c.CA_CERT_KEYS[index]] = base64.b64encode(cas[index].cert_pem).decode()
            data[c.CA_KEY_KEYS[index]] = base64.b64encode(cas[index].key_pem).decode()
        log.info("generated CA %s for secret %s/%s (attempt %d)", " and ".join(str(i + 1) for i in missing),
                 namespace, c.SECRET_NAME, attempt)
        try:
            _write(core, namespace, secret, data)
        except ApiException as error:
            if kube.status_of(error) in (404, 409):  # another replica wrote (or deleted) first: start over
                log.info("secret %s/%s changed under us (%s); re-reading", namespace, c.SECRET_NAME, error.status)
                continue
            raise
    raise CaStoreError(f"unable to store the CA certificates in secret {namespace}/{c.SECRET_NAME} "
                       f"after {MAX_ATTEMPTS} attempts")


def _write(core: client.CoreV1Api, namespace: str, secret: dict | None, data: dict) -> None:
    if secret is None:
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": c.SECRET_NAME, "namespace": namespace}, "data": data}
        kube.call(core.create_namespaced_secret, namespace, body)
        return
    body = dict(secret)
    body["data"] = data
    kube.call(core.replace_namespaced_secret, c.SECRET_NAME, namespace, body)
