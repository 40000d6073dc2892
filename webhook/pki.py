"""Certificates: the two CAs kept in the secret, and each replica's ephemeral server certificate.

CA keys are RSA, stored as PKCS#1 PEM (``RSA PRIVATE KEY``) for interoperability with YuniKorn's Go
admission controller. The server key is ECDSA P-256 by default: it is generated in microseconds and
makes TLS handshakes cheaper than RSA (see the benchmark); ``server_key="rsa"`` gives RSA-2048.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook import constants as c

_BACKDATE = dt.timedelta(minutes=5)  # tolerate clock skew between this replica and the API server


@dataclass(frozen=True)
class CertificateAuthority:
    """One CA: its certificate and PKCS#1 key, as PEM bytes, plus the parsed certificate."""

    cert_pem: bytes
    key_pem: bytes
    certificate: x509.Certificate

    @property
    def not_after(self) -> dt.datetime:
        return self.certificate.not_valid_after_utc

    def private_key(self) -> rsa.RSAPrivateKey:
        return serialization.load_pem_private_key(self.key_pem, password=None)


@dataclass(frozen=True)
class ServerCertificate:
    """The served chain ``[server, CA]`` and the server key, as one PEM file's content."""

    pem: bytes
    certificate: x509.Certificate


def _serial(now: dt.datetime) -> int:
    return int(now.timestamp() * 1_000_000) + x509.random_serial_number() % 1_000_000


def generate_ca(now: dt.datetime, lifetime: dt.timedelta, key_bits: int = 4096) -> CertificateAuthority:
    """A new self-signed CA (``O=yunikorn.apache.org``) valid from ``now`` for ``lifetime``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=key_bits)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, c.ORGANIZATION)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(_serial(now))
        .not_valid_before(now - _BACKDATE).not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=False,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return CertificateAuthority(certificate.public_bytes(serialization.Encoding.PEM), key_pem, certificate)


def load_ca(cert_pem: bytes | None, key_pem: bytes | None) -> CertificateAuthority | None:
    """The CA stored as these PEMs, or None if either is missing, unreadable or not a PKCS#1 RSA key."""
    if not cert_pem or not key_pem or b"-----BEGIN RSA PRIVATE KEY-----" not in key_pem:
        return None
    try:
        certificate = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
    except ValueError:
        return None
    if not isinstance(key, rsa.RSAPrivateKey) or key.public_key() != certificate.public_key():
        return None
    return CertificateAuthority(cert_pem, key_pem, certificate)


def generate_server_certificate(ca: CertificateAuthority, service: str, namespace: str, now: dt.datetime,
                                lifetime: dt.timedelta = dt.timedelta(days=365),
                                server_key: str = "ecdsa") -> ServerCertificate:
    """A server certificate for the webhook service, signed by ``ca``, never outliving it."""
    if server_key == "rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ec.generate_private_key(ec.SECP256R1())
    host = f"{service}.{namespace}.svc"
    not_after = min(now + lifetime, ca.not_after)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host),
                                 x509.NameAttribute(NameOID.ORGANIZATION_NAME, c.ORGANIZATION)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(_serial(now))
        .not_valid_before(now - _BACKDATE).not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(service), x509.DNSName(f"{service}.{namespace}"),
                                                    x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=server_key == "rsa",
                                     key_cert_sign=False, crl_sign=False, content_commitment=False,
                                     data_encipherment=False, key_agreement=False, encipher_only=False,
                                     decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.certificate.public_key()),
                       critical=False)
        .sign(ca.private_key(), hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    pem = key_pem + certificate.public_bytes(serialization.Encoding.PEM) + ca.cert_pem
    return ServerCertificate(pem, certificate)


def ca_bundle(cas: tuple[CertificateAuthority, CertificateAuthority]) -> bytes:
    """Both CAs, first then second: a server certificate from either verifies."""
    return b"".join(ca.cert_pem if ca.cert_pem.endswith(b"\n") else ca.cert_pem + b"\n" for ca in cas)


def signing_ca(cas: tuple[CertificateAuthority, CertificateAuthority]) -> CertificateAuthority:
    """The CA with the later expiry (first on a tie): the one that will stay in the bundle longest."""
    first, second = cas
    return second if second.not_after > first.not_after else first
