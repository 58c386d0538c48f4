"""Throwaway certificates for tests and local TLS: a CA, a server and a client certificate.

`write_certs(dir)` writes, all PEM:
    ca.pem        the CA certificate: the truststore of both sides
    server.pem    the server's certificate and key (ssl.keystore.location)
    client.crt    the client's certificate, CN=client,O=kmock (principal User:CN=client,O=kmock)
    client.key    its key (unencrypted)
    client.pem    both in one file: a client's PEM keystore (ssl.keystore.location of a Kafka
                  client.properties, `kmock ... --command-config`)
The server certificate names localhost and 127.0.0.1 (and any `hosts` given), so clients
that check host names accept it. Keys are EC P-256; certificates last `days` days. The keys
are written readable by their owner only. Not for production: the CA key is thrown away.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CLIENT_PRINCIPAL", "write_certs"]

CLIENT_PRINCIPAL = "User:CN=client,O=kmock"


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kmock"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    days: int,
    *,
    ca: bool = False,
    sans: list[x509.GeneralName] | None = None,
    usage: x509.ObjectIdentifier | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_certs(
    directory: str | Path, hosts: tuple[str, ...] = (), days: int = 365
) -> dict[str, Path]:
    """Write a CA, server and client certificates into `directory` (created if missing).
    Returns {"ca": ..., "server": ..., "client_cert": ..., "client_key": ...,
    "client_keystore": ...}."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kmock test CA")
    ca = _issue(ca_name, ca_key, ca_name, ca_key, days, ca=True)
    sans: list[x509.GeneralName] = []
    for host in ("localhost", "127.0.0.1", "::1", *hosts):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _issue(
        _name("localhost"),
        server_key,
        ca_name,
        ca_key,
        days,
        sans=sans,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _issue(
        _name("client"), client_key, ca_name, ca_key, days, usage=ExtendedKeyUsageOID.CLIENT_AUTH
    )
    paths = {
        "ca": out / "ca.pem",
        "server": out / "server.pem",
        "client_cert": out / "client.crt",
        "client_key": out / "client.key",
        "client_keystore": out / "client.pem",
    }
    _write(paths["ca"], _pem(ca))
    _write(paths["server"], _pem(server) + _pem(ca) + _key_pem(server_key), private=True)
    _write(paths["client_cert"], _pem(client))
    _write(paths["client_key"], _key_pem(client_key), private=True)
    _write(paths["client_keystore"], _pem(client) + _key_pem(client_key), private=True)
    return paths
