"""SaslHandshake after authentication, or on a listener without SASL: Kafka's KafkaApis
answers ILLEGAL_SASL_STATE (the exchange itself is broker.security.authenticator's)."""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
