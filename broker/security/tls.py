"""TLS for the SSL and SASL_SSL listeners, from Kafka's ssl.* settings in PEM form.

    ssl.keystore.type=PEM
    ssl.keystore.location=/certs/server.pem            (certificate chain + private key), or
    ssl.keystore.certificate.chain=-----BEGIN CERTIFICATE-----...   and
    ssl.keystore.key=-----BEGIN PRIVATE KEY-----...    (inline, as Kafka's KIP-651)
    ssl.key.password=...                               (if the key is encrypted)
    ssl.truststore.location=/certs/ca.pem  or  ssl.truststore.certificates=<inline PEM>
    ssl.client.auth=none|requested|required

Every setting may be given per listener (listener.name.<name>.ssl.*, broker.security_settings).
A client with a certificate is User:<subject DN> with the DN in RFC 2253 form, as Kafka's
DefaultKafkaPrincipalBuilder names it (X500Principal.getName()): "CN=client,O=kmock".
JKS and PKCS12 stores are refused by name (ssl.keystore.type): kmock reads PEM only.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterable
from typing import Any

from broker.security_settings import listener_setting

__all__ = ["TlsError", "peer_principal", "server_context", "tls_contexts"]


class TlsError(ValueError):
    """A TLS setting that cannot be used; the message names it."""


def _pem_files(config: object, listener: str) -> tuple[str, str | None]:
    """(PEM text with chain and key, key password) for `listener`."""
    location = listener_setting(config, listener, "ssl.keystore.location")
    chain = listener_setting(config, listener, "ssl.keystore.certificate.chain")
    key = listener_setting(config, listener, "ssl.keystore.key")
    password = listener_setting(config, listener, "ssl.key.password")
    if chain or key:
        if not (chain and key):
            raise TlsError(
                f"listener {listener}: ssl.keystore.certificate.chain and ssl.keystore.key "
                "go together"
            )
        return f"{chain.strip()}\n{key.strip()}\n", password
    if not location:
        raise TlsError(
            f"listener {listener} uses TLS: set ssl.keystore.location (a PEM file with the "
            "certificate chain and key) or ssl.keystore.certificate.chain and ssl.keystore.key "
            f"(or their listener.name.{listener.lower()}. forms); `kmock certs DIR` writes some"
        )
    try:
        with open(location) as f:
            return f.read(), password
    except OSError as e:
        raise TlsError(f"ssl.keystore.location: cannot read {location}: {e.strerror}") from None


def server_context(config: object, listener: str) -> ssl.SSLContext:
    """The server-side SSLContext of `listener`.

    Raises:
      TlsError: a setting is missing or unusable; the message names it.
    """
    for name in ("ssl.keystore.type", "ssl.truststore.type"):
        kind = (listener_setting(config, listener, name) or "PEM").upper()
        if kind != "PEM":
            raise TlsError(f"{name}: kmock reads PEM only, not {kind}")
    pem, password = _pem_files(config, listener)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = {
        p.strip()
        for p in (listener_setting(config, listener, "ssl.enabled.protocols") or "").split(",")
    }
    versions = [v for v in ("TLSv1.2", "TLSv1.3") if v in protocols]
    if not versions:
        raise TlsError("ssl.enabled.protocols: kmock accepts TLSv1.2 and TLSv1.3")
    ctx.minimum_version = ssl.TLSVersion[versions[0].replace(".", "_")]
    ctx.maximum_version = ssl.TLSVersion[versions[-1].replace(".", "_")]
    # ssl loads a chain only from a file: write it to a private temporary one.
    fd, path = tempfile.mkstemp(prefix="kmock-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(pem)
        ctx.load_cert_chain(path, password=password)
    except ssl.SSLError as e:
        raise TlsError(
            f"listener {listener}: the keystore (ssl.keystore.*, ssl.key.password) is not a "
            f"PEM certificate chain and matching key: {e.reason or e}"
        ) from None
    finally:
        os.unlink(path)
    auth = (listener_setting(config, listener, "ssl.client.auth") or "none").lower()
    trust_file = listener_setting(config, listener, "ssl.truststore.location")
    trust_pem = listener_setting(config, listener, "ssl.truststore.certificates")
    if auth != "none":
        if not (trust_file or trust_pem):
            raise TlsError(
                f"ssl.client.auth={auth} on listener {listener} needs ssl.truststore.location "
                "or ssl.truststore.certificates (the CA that signs client certificates)"
            )
        try:
            if trust_file:
                ctx.load_verify_locations(cafile=trust_file)
            else:
                ctx.load_verify_locations(cadata=trust_pem)
        except (ssl.SSLError, OSError) as e:
            raise TlsError(
                f"listener {listener}: the truststore (ssl.truststore.*) is not PEM "
                f"certificates: {e}"
            ) from None
        ctx.verify_mode = ssl.CERT_REQUIRED if auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def tls_contexts(config: object, listeners: Iterable[Any]) -> dict[str, ssl.SSLContext]:
    """The SSLContext of every SSL and SASL_SSL listener among `listeners` (Endpoints).

    Raises:
      TlsError: as server_context.
    """
    return {
        e.listener: server_context(config, e.listener)
        for e in listeners
        if e.security_protocol in ("SSL", "SASL_SSL")
    }


def peer_principal(ssl_object: ssl.SSLObject) -> str | None:
    """User:<subject DN> of the client's certificate (RFC 2253, as Java's X500Principal
    prints it); None when the client sent none."""
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509

    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()
