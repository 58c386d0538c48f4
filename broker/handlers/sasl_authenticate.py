"""SaslAuthenticate after authentication: a re-authentication's token (KIP-368,
broker.security.authenticator), else ILLEGAL_SASL_STATE with Kafka's message."""

from __future__ import annotations

from broker.context import RequestContext
from broker.security.authenticator import reauthenticate_token
from protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return reauthenticate_token(ctx.broker, ctx.connection_id, bytes(request.auth_bytes))
