"""The client side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677), as
Kafka's PlainSaslClient and ScramSaslClient run them (with ScramSaslClient's messages).
Pure: tokens in, tokens out; the connection (client.kafka) carries them in SaslAuthenticate
requests after a v1 SaslHandshake.

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<proof>
    server-final   v=<server signature>    (or e=<error>)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["SaslProtocolError", "ScramClient", "plain_token"]

_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's ScramSaslClient refuses fewer than ScramMechanism.minIterations (4096). It sets no
# upper bound; kmock's client also refuses absurd counts (credentials hold at most 16384,
# ScramMechanism.maxIterations), which would keep it hashing for minutes.
_MIN_ITERATIONS = 4096
_MAX_ITERATIONS = 1 << 20


class SaslProtocolError(Exception):
    """The server's SASL messages do not follow the mechanism (or prove it does not know
    the password); str() never holds a secret."""


def plain_token(username: str, password: str) -> bytes:
    """PLAIN's one message: authzid (empty) NUL authcid NUL password."""
    return f"\0{username}\0{password}".encode()


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """One SCRAM exchange: first() -> final(server_first) -> verify(server_final)."""

    def __init__(
        self, mechanism: str, username: str, password: str, nonce: str | None = None
    ) -> None:
        self.algo = _HASHES[mechanism]
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "replace")
        attrs = _attrs(text)
        if "e" in attrs:
            raise SaslProtocolError(
                f"Sasl authentication using {self.mechanism} failed with error: {attrs['e']}"
            )
        nonce, salt, count = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self._nonce):
            raise SaslProtocolError("Invalid server nonce: does not start with client nonce")
        if salt is None or not count.isdigit():
            raise SaslProtocolError("Invalid server first message: no salt or iterations")
        iterations = int(count)
        if iterations < _MIN_ITERATIONS:
            raise SaslProtocolError(
                f"Requested iterations {iterations} is less than the minimum "
                f"{_MIN_ITERATIONS} for {self.mechanism}"
            )
        if iterations > _MAX_ITERATIONS:
            raise SaslProtocolError(
                f"Requested iterations {iterations} is more than the maximum "
                f"{_MAX_ITERATIONS} kmock's client computes for {self.mechanism}"
            )
        try:
            salt_bytes = base64.b64decode(salt, validate=True)
        except ValueError:
            raise SaslProtocolError(
                "Invalid server first message: the salt is not base64"
            ) from None
        salted = hashlib.pbkdf2_hmac(self.algo, self._password.encode(), salt_bytes, iterations)
        client_key = _hmac(self.algo, salted, b"Client Key")
        stored_key = hashlib.new(self.algo, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = _hmac(self.algo, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = _hmac(
            self.algo, _hmac(self.algo, salted, b"Server Key"), auth_message
        )
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """Check the server's signature: it proves the server knows the credential."""
        attrs = _attrs(server_final.decode("utf-8", "replace"))
        if "e" in attrs:
            raise SaslProtocolError(
                f"Sasl authentication using {self.mechanism} failed with error: {attrs['e']}"
            )
        try:
            given = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            given = b""
        if not self._server_signature or not hmac.compare_digest(given, self._server_signature):
            raise SaslProtocolError("Invalid server signature in server final message")


def _hmac(algo: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, algo).digest()


def _attrs(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) >= 2 and part[1] == "=":
            out.setdefault(part[0], part[2:])
    return out
