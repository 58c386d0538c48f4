"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): credentials, their store, and the
server side of the exchange. Pure and synchronous except `ScramStore.save`.

A credential is what Kafka keeps (ScramCredential): salt, StoredKey, ServerKey and the
iteration count, never the password. Users come from `kmock serve --add-scram
'SCRAM-SHA-256=[name=alice,password=secret]'` (kafka-storage's syntax) and from
AlterUserScramCredentials; the store is the file `scram-credentials.json` in the data
directory (Kafka keeps them in its metadata log).

The exchange, as Kafka's ScramSaslServer runs it:
    client-first   n,,n=alice,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<proof>
    server-final   v=<server signature>
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MIN_ITERATIONS",
    "SaslAuthenticationFailure",
    "SaslFailure",
    "ScramCredential",
    "ScramServer",
    "ScramStore",
    "parse_add_scram",
]

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # Kafka's ScramMechanism.type
MIN_ITERATIONS = 4096  # ScramMechanism.minIterations
MAX_ITERATIONS = 16384  # ScramMechanism.maxIterations (AlterUserScramCredentials)
DEFAULT_ITERATIONS = 4096
FILE_NAME = "scram-credentials.json"


class SaslFailure(Exception):
    """The client failed to authenticate (Kafka's SaslException): the client is told only
    that its credentials were invalid for the mechanism; str() goes to the broker's log."""


class SaslAuthenticationFailure(SaslFailure):
    """Kafka's SaslAuthenticationException: str() is the message the client is sent."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(algo: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, algo).digest()


def credential_from_salted(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    algo = HASHES[mechanism]
    client_key = _hmac(algo, salted, b"Client Key")
    return ScramCredential(
        salt,
        hashlib.new(algo, client_key).digest(),
        _hmac(algo, salted, b"Server Key"),
        iterations,
    )


def make_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """Kafka's ScramFormatter.generateCredential."""
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


_ADD_SCRAM = re.compile(r"^(SCRAM-SHA-256|SCRAM-SHA-512)=\[(.*)\]$")


def parse_add_scram(spec: str) -> tuple[str, str, ScramCredential]:
    """kafka-storage's --add-scram 'SCRAM-SHA-256=[name=alice,password=secret]' (also
    iterations=N, salt=<base64>) -> (mechanism, user, credential).

    Raises:
      ValueError: the message names --add-scram (and never the password).
    """
    m = _ADD_SCRAM.match(spec.strip())
    if m is None:
        raise ValueError(
            "--add-scram: expected SCRAM-SHA-256=[name=<user>,password=<password>] or "
            "SCRAM-SHA-512=[...]"
        )
    fields: dict[str, str] = {}
    for item in m.group(2).split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--add-scram: {key.strip()!r} is not key=value")
        fields[key.strip()] = value.strip().strip('"')
    name, password = fields.get("name"), fields.get("password")
    if not name or password is None:
        raise ValueError("--add-scram: name and password are required")
    iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"--add-scram: iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
        )
    salt = base64.b64decode(fields["salt"]) if "salt" in fields else None
    return m.group(1), name, make_credential(m.group(1), password, iterations, salt)


class ScramStore:
    """The SCRAM users: {mechanism: {user: credential}}, kept in `path` when given."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.users: dict[str, dict[str, ScramCredential]] = {m: {} for m in HASHES}
        if path is not None and path.exists():
            for mech, users in json.loads(path.read_text()).items():
                for user, c in users.items():
                    self.users[mech][user] = ScramCredential(
                        base64.b64decode(c["salt"]),
                        base64.b64decode(c["stored_key"]),
                        base64.b64decode(c["server_key"]),
                        int(c["iterations"]),
                    )

    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        return self.users.get(mechanism, {}).get(user)

    def set(self, mechanism: str, user: str, credential: ScramCredential | None) -> None:
        if credential is None:
            self.users[mechanism].pop(user, None)
        else:
            self.users[mechanism][user] = credential

    def save(self) -> None:
        """Write the store (atomically: a temporary file renamed over it)."""
        if self.path is None:
            return
        data = {
            mech: {
                user: {
                    "salt": base64.b64encode(c.salt).decode(),
                    "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode(),
                    "iterations": c.iterations,
                }
                for user, c in users.items()
            }
            for mech, users in self.users.items()
        }
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def _unescape_name(name: str) -> str:
    """RFC 5802 saslname: "=2C" is "," and "=3D" is "="; any other "=" is invalid."""
    if re.search(r"=(?!2C|3D)", name):
        raise SaslFailure("Invalid SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


def _attrs(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslFailure(f"Invalid SCRAM message part {part[:16]!r}")
        out.setdefault(part[0], part[2:])
    return out


class ScramServer:
    """One SCRAM exchange (Kafka's ScramSaslServer): `evaluate(token)` returns the next
    server token; `complete` and `principal` once done. Raises SaslFailure."""

    def __init__(self, mechanism: str, store: ScramStore) -> None:
        self.mechanism = mechanism
        self.algo = HASHES[mechanism]
        self.store = store
        self.complete = False
        self.principal: str | None = None
        self._state = "client-first"
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._gs2 = ""
        self._auth_prefix = ""
        self._user = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SCRAM message: not UTF-8") from None
        if self._state == "client-first":
            return self._client_first(text)
        if self._state == "client-final":
            return self._client_final(text)
        raise SaslFailure("Unexpected SCRAM message after the exchange completed")

    def _client_first(self, text: str) -> bytes:
        # gs2-header: "n,," or "y,," (no channel binding), optionally "a=authzid"
        m = re.match(r"^([ny]),(a=[^,]*)?,(.*)$", text, re.S)
        if m is None:
            raise SaslFailure("Invalid SCRAM client first message")
        bare = m.group(3)
        attrs = _attrs(bare)
        if "n" not in attrs or "r" not in attrs:
            raise SaslFailure("Invalid SCRAM client first message")
        self._user = _unescape_name(attrs["n"])
        authzid = (m.group(2) or "a=")[2:]
        credential = self.store.get(self.mechanism, self._user)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        if authzid and _unescape_name(authzid) != self._user:
            raise SaslAuthenticationFailure(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self._credential = credential
        self._gs2 = text[: len(text) - len(bare)]
        self._nonce = attrs["r"] + secrets.token_urlsafe(24)
        server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        self._auth_prefix = f"{bare},{server_first}"
        self._state = "client-final"
        return server_first.encode()

    def _client_final(self, text: str) -> bytes:
        proof_at = text.rfind(",p=")
        if proof_at < 0:
            raise SaslFailure("Invalid SCRAM client final message")
        without_proof = text[:proof_at]
        attrs = _attrs(without_proof)
        try:
            proof = base64.b64decode(text[proof_at + 3 :], validate=True)
            channel = base64.b64decode(attrs.get("c", ""), validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            raise SaslFailure("Invalid SCRAM client final message") from None
        if attrs.get("r") != self._nonce:
            raise SaslFailure("Invalid client nonce in the final client message.")
        if channel != self._gs2:
            raise SaslFailure("Invalid channel binding in the final client message.")
        assert self._credential is not None
        auth_message = f"{self._auth_prefix},{without_proof}".encode()
        signature = _hmac(self.algo, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslFailure("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self.algo, client_key).digest(), self._credential.stored_key
        ):
            raise SaslFailure("Invalid client credentials")
        server_signature = _hmac(self.algo, self._credential.server_key, auth_message)
        self._state = "done"
        self.complete = True
        self.principal = f"User:{self._user}"
        return b"v=" + base64.b64encode(server_signature)
