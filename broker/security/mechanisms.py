"""The SASL mechanisms other than SCRAM (broker.security.scram): PLAIN and OAUTHBEARER.
Pure and synchronous; each server has Kafka's shape (SaslServer.evaluateResponse):
`evaluate(token) -> bytes`, then `complete` and `principal`. Failures raise
scram.SaslFailure (Kafka's SaslException: the client hears only "invalid credentials") or
scram.SaslAuthenticationFailure (its message goes to the client as it is).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from broker.security.scram import SaslAuthenticationFailure, SaslFailure

__all__ = ["OAuthBearerServer", "PlainServer", "parse_jaas_users"]

# key="value" (backslash escapes) or key=value, in a JAAS login module line
_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas_users(jaas: str | None) -> dict[str, str]:
    """The user_<name>="<password>" options of a PlainLoginModule JAAS line (Kafka's
    PlainServerCallbackHandler reads the same): {name: password}."""
    users = {}
    for m in _JAAS_OPTION.finditer(jaas or ""):
        key, value = m.group(1), m.group(2) if m.group(2) is not None else m.group(3)
        if key.startswith("user_") and len(key) > 5:
            users[key[5:]] = re.sub(r"\\(.)", r"\1", value)
    return users


class PlainServer:
    """Kafka's PlainSaslServer: one token, [authzid] NUL authcid NUL password."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.complete = False
        self.principal: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN authentication already completed")
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self.users.get(username)
        if expected is None or not _equal(expected, password):
            raise SaslAuthenticationFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationFailure(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.complete = True
        self.principal = f"User:{username}"
        return b""


def _equal(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode(), b.encode())


def _b64url_json(part: str) -> dict[str, Any]:
    data = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    value = json.loads(data)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


class OAuthBearerServer:
    """Kafka's OAuthBearerSaslServer with its default validator for unsecured tokens
    (OAuthBearerUnsecuredValidatorCallbackHandler): the client's first message is
    `n,,\\x01auth=Bearer <header>.<payload>.\\x01\\x01`; the header's alg is "none", the
    payload has a string `sub` (the principal) and a numeric `exp` not yet passed (seconds).
    A token refused is answered SASL_AUTHENTICATION_FAILED at once (Kafka first sends the
    JSON error as a challenge and fails on the client's next message)."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self.expires_ms: int | None = None
        self.complete = False
        self.principal: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("OAUTHBEARER authentication already completed")
        text = token.decode("utf-8", "replace")
        m = re.match(r"^[ny],(?:a=[^,]*)?,\x01(.*)\x01\x01$", text, re.S)
        if m is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        options = dict(kv.partition("=")[::2] for kv in m.group(1).split("\x01") if kv)
        auth = options.get("auth", "")
        if not auth.startswith("Bearer "):
            raise SaslFailure("Invalid OAUTHBEARER client first message: no Bearer token")
        pieces = auth[7:].strip().split(".")
        try:
            if len(pieces) != 3 or pieces[2]:
                raise ValueError("not an unsecured JWS (header.payload.)")
            header, claims = _b64url_json(pieces[0]), _b64url_json(pieces[1])
            if header.get("alg") != "none":
                raise ValueError("alg is not none")
        except ValueError:
            raise SaslAuthenticationFailure('{"status":"invalid_token"}') from None
        sub, exp = claims.get("sub"), claims.get("exp")
        if not isinstance(sub, str) or not sub.strip():
            raise SaslAuthenticationFailure('{"status":"invalid_token"}')
        if not isinstance(exp, int | float) or exp * 1000 <= self.now_ms:
            raise SaslAuthenticationFailure('{"status":"invalid_token"}')
        self.complete = True
        self.principal = f"User:{sub}"
        self.expires_ms = int(exp * 1000)  # the session ends with the token (KIP-368)
        return b""
