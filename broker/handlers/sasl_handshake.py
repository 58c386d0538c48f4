"""SaslHandshake after authentication: the start of a re-authentication (KIP-368) on a SASL
connection (broker.security.authenticator), else ILLEGAL_SASL_STATE as Kafka's KafkaApis
answers (a PLAINTEXT or SSL listener). The first exchange is the SASL gate's."""

from __future__ import annotations

from broker.context import RequestContext
from broker.security.authenticator import enabled_mechanisms, reauthenticate_handshake
from protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    code = reauthenticate_handshake(ctx.broker, ctx.connection_id, request.mechanism)
    mechanisms = enabled_mechanisms(ctx.broker, ctx.listener_name) if code == 0 else []
    return SaslHandshakeResponse(error_code=code, mechanisms=mechanisms)
