"""SaslHandshake (key 17): the client names the SASL mechanism it will authenticate with.

Spec: SaslHandshakeRequest.json / SaslHandshakeResponse.json. Versions 0-1, never flexible.

Version notes:
  v0: after the response the client sends raw SASL tokens, each a 4-byte size and the
      bytes, with no request header (deprecated; Kafka still accepts it).
  v1: the tokens travel in SaslAuthenticate requests (KIP-152).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Message, String, wire


class SaslHandshakeRequest(Message):
    API_KEY = 17
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = None
    mechanism: str = wire(String)


class SaslHandshakeResponse(Message):
    API_KEY = 17
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = None
    error_code: int = wire(Int16)
    mechanisms: list[str] = wire(Array(String))


def error_response(
    request: SaslHandshakeRequest, code: ErrorCode, version: int
) -> SaslHandshakeResponse:
    """The code at the top level, no mechanisms (Kafka's SaslHandshakeRequest.getErrorResponse)."""
    return SaslHandshakeResponse(error_code=code, mechanisms=[])
