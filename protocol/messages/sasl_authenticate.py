"""SaslAuthenticate (key 36): one SASL token from the client, one from the server.

Spec: SaslAuthenticateRequest.json / SaslAuthenticateResponse.json. Versions 0-2,
flexible from 2.

Version notes:
  v1: session_lifetime_ms in the response (KIP-368: re-authentication).
  v2: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Bytes, Int16, Int64, Message, String, wire


class SaslAuthenticateRequest(Message):
    API_KEY = 36
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    auth_bytes: bytes = wire(Bytes)


class SaslAuthenticateResponse(Message):
    API_KEY = 36
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=0, default=None)
    auth_bytes: bytes = wire(Bytes)
    session_lifetime_ms: int = wire(Int64, since=1, default=0)


def error_response(
    request: SaslAuthenticateRequest, code: ErrorCode, version: int
) -> SaslAuthenticateResponse:
    """Kafka's SaslAuthenticateRequest.getErrorResponse: the code, its default message."""
    return SaslAuthenticateResponse(error_code=code, error_message=None, auth_bytes=b"")
