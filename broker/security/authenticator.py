"""The SASL gate of a SASL_PLAINTEXT or SASL_SSL connection, before its requests are served:
Kafka's SaslServerAuthenticator, state by state.

    HANDSHAKE_OR_VERSIONS  ApiVersions -> HANDSHAKE; SaslHandshake -> as in HANDSHAKE
    HANDSHAKE              SaslHandshake, mechanism enabled -> AUTHENTICATE (v0: raw tokens)
                           SaslHandshake, mechanism not enabled -> UNSUPPORTED_SASL_MECHANISM,
                           close
    AUTHENTICATE           SaslAuthenticate (after a v1 handshake) or a raw size-prefixed
                           token (after v0): exchange complete -> COMPLETE, the connection is
                           served as any other; credentials refused ->
                           SASL_AUTHENTICATION_FAILED after
                           connection.failed.authentication.delay.ms, close
    any state              any other request -> ILLEGAL_SASL_STATE in that API's error
                           response, close

Frames are read with their exact sizes, so nothing of the next request is read here: after
COMPLETE the socket (or the TLS stream) goes to broker.connection as it is. A frame larger
than sasl.server.max.receive.size, or one that does not parse, closes the connection
(Kafka: InvalidReceiveException / InvalidRequestException). The caller bounds the whole
exchange in time.

Sessions (KIP-368): with connections.max.reauth.ms > 0 (or an OAUTHBEARER token's exp), a
session ends after `session_lifetime_ms`, told to the client in SaslAuthenticate v1+. Before
then the client may re-authenticate on the open connection: SaslHandshake and
SaslAuthenticate again, served by broker.handlers.sasl_handshake / sasl_authenticate through
`reauthenticate_*` below, with the same mechanism and principal. Past the end, any other
request closes the connection (broker.security.authz.session_expired), as Kafka's
SocketServer does.

Differences from Kafka: an OAUTHBEARER token refused is failed at once.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple
from weakref import WeakKeyDictionary

import trio

from broker.security import mechanisms
from broker.security.authz import authz
from broker.security.scram import (
    HASHES,
    SaslAuthenticationFailure,
    SaslFailure,
    ScramServer,
    ScramStore,
)
from broker.security_settings import listener_setting
from protocol.errors import ErrorCode
from protocol.frames import frame_response, parse_request_header, peek_request_key
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.schema import DecodeError, decode, encode_chunks

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("broker.security")

__all__ = [
    "AuthenticationClosed",
    "Dispatch",
    "authenticate",
    "reauthenticate_handshake",
    "reauthenticate_token",
    "scram_store",
]

API_VERSIONS_KEY = 18
STORE_FILE = "scram-credentials.json"
_STORES: WeakKeyDictionary[Any, ScramStore] = WeakKeyDictionary()


class Dispatch(NamedTuple):
    """What the gate uses of the broker's dispatch site, handed in by broker.server (so that
    broker.security imports neither broker.connection, broker.dispatch nor broker.routes)."""

    serve: Callable[..., Awaitable[None]]  # broker.connection.serve_connection
    handle_frame: Callable[..., Awaitable[Any]]  # broker.dispatch.handle_frame
    route_for: Callable[[int], Any]  # broker.routes.route_for


class AuthenticationClosed(Exception):
    """The connection is to be closed; str() says why (for the log, never a secret)."""


def scram_store(broker: Broker) -> ScramStore:
    """The broker's SCRAM credentials, from <data dir>/scram-credentials.json."""
    store = _STORES.get(broker)
    if store is None:
        store = _STORES[broker] = ScramStore(broker.data_dir / STORE_FILE)
    return store


def enabled_mechanisms(broker: Broker, listener: str) -> list[str]:
    value = listener_setting(broker.config, listener, "sasl.enabled.mechanisms") or ""
    return [m.strip().upper() for m in value.split(",") if m.strip()]


def _server(broker: Broker, listener: str, mechanism: str) -> Any:
    if mechanism == "PLAIN":
        jaas = listener_setting(broker.config, listener, "plain.sasl.jaas.config")
        return mechanisms.PlainServer(mechanisms.parse_jaas_users(jaas))
    if mechanism in HASHES:
        return ScramServer(mechanism, scram_store(broker))
    return mechanisms.OAuthBearerServer(broker.wall_ms())


def session_lifetime_ms(broker: Broker, listener: str, server: Any) -> int:
    """How long the session lasts, 0 for ever: connections.max.reauth.ms, shortened to an
    OAUTHBEARER token's expiry (Kafka's SaslServerAuthenticator.ReauthInfo)."""
    if not server.complete:
        return 0
    limit = int(listener_setting(broker.config, listener, "connections.max.reauth.ms") or 0)
    expires_ms = getattr(server, "expires_ms", None)
    if expires_ms is not None:
        left = max(expires_ms - broker.wall_ms(), 1)
        limit = min(limit, left) if limit else left
    return limit


def failure_message(mechanism: str, e: SaslFailure) -> str:
    """What the client is told (SaslServerAuthenticator.handleSaslToken): a
    SaslAuthenticationException's own text, else only that the credentials were invalid."""
    if isinstance(e, SaslAuthenticationFailure):
        return str(e)
    return (
        "Authentication failed during authentication due to invalid credentials with "
        f"SASL mechanism {mechanism}"
    )


def reauthenticate_handshake(broker: Broker, connection_id: int, mechanism: str) -> ErrorCode:
    """SaslHandshake on an authenticated connection: start a re-authentication with the
    session's mechanism (NONE), or refuse (ILLEGAL_SASL_STATE: no SASL session, or one that
    does not end; UNSUPPORTED_SASL_MECHANISM: another mechanism)."""
    session = authz(broker).sessions.get(connection_id)
    # KafkaChannel.maybeBeginServerReauthentication: a session that never ends cannot be
    # renewed; the handshake is then answered as any late one.
    if session is None or session.expires_at is None:
        return ErrorCode.ILLEGAL_SASL_STATE
    if mechanism != session.mechanism:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM
    session.pending = _server(broker, session.listener, mechanism)
    return ErrorCode.NONE


def reauthenticate_token(
    broker: Broker, connection_id: int, token: bytes
) -> SaslAuthenticateResponse:
    """SaslAuthenticate on an authenticated connection, after reauthenticate_handshake."""
    state = authz(broker)
    session = state.sessions.get(connection_id)
    if session is None or session.pending is None:
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate request received after successful authentication",
        )
    server = session.pending
    try:
        challenge = server.evaluate(token)
        if server.complete and server.principal != session.principal:
            raise SaslAuthenticationFailure(
                "Cannot change principals during re-authentication from "
                f"{session.principal}: {server.principal}"
            )
    except SaslFailure as e:
        session.pending = None
        session.expires_at = 0.0  # the next request closes the connection
        log.info("connection %d: re-authentication failed: %s", connection_id, e)
        return SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
            error_message=failure_message(session.mechanism, e),
        )
    lifetime_ms = 0
    if server.complete:
        session.pending = None
        lifetime_ms = session_lifetime_ms(broker, session.listener, server)
        state.start_session(
            connection_id, session.listener, session.mechanism, session.principal, lifetime_ms
        )
        log.info("connection %d re-authenticated as %s", connection_id, session.principal)
    return SaslAuthenticateResponse(
        error_code=0, auth_bytes=challenge, session_lifetime_ms=lifetime_ms
    )


class _Frames:
    """Size-prefixed frames read from a trio stream exactly, never past the frame's end."""

    def __init__(self, stream: trio.abc.Stream, max_size: int) -> None:
        self.stream = stream
        self.max_size = max_size

    async def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            data = await self.stream.receive_some(n - len(buf))
            if not data:
                raise AuthenticationClosed("closed by client during authentication")
            buf += data
        return bytes(buf)

    async def read(self) -> bytes:
        (size,) = struct.unpack(">i", await self._exactly(4))
        if size < 0 or size > self.max_size:
            raise AuthenticationClosed(
                f"SASL frame of {size} bytes refused (sasl.server.max.receive.size is "
                f"{self.max_size})"
            )
        return await self._exactly(size)

    async def send(self, chunks: list[Any]) -> None:
        await self.stream.send_all(b"".join(bytes(c) for c in chunks))


def _respond(response: Any, version: int, correlation_id: int) -> list[Any]:
    return frame_response(
        correlation_id, encode_chunks(response, version), response.is_flexible(version)
    )


async def authenticate(
    broker: Broker,
    stream: trio.abc.Stream,
    listener: str,
    client_host: str,
    connection_id: int,
    dispatch: Dispatch,
) -> str:
    """Run the SASL exchange on `stream`; the authenticated principal ("User:alice").

    Raises:
      AuthenticationClosed: the connection must be closed (its answer, if any, sent).
    """
    config = broker.config
    frames = _Frames(stream, config["sasl.server.max.receive.size"])
    enabled = enabled_mechanisms(broker, listener)
    state = "HANDSHAKE_OR_VERSIONS"
    server: Any = None
    handshake_version = 1
    mechanism = ""
    while True:
        frame = await frames.read()
        if state == "AUTHENTICATE" and handshake_version == 0:
            token, reply = frame, None
        else:
            try:
                api_key, version, correlation_id = peek_request_key(frame)
            except DecodeError:
                raise AuthenticationClosed("unreadable request header during SASL") from None
            if api_key == API_VERSIONS_KEY and state == "HANDSHAKE_OR_VERSIONS":
                # ApiVersions is answered by the one dispatch site (broker.dispatch)
                out = await dispatch.handle_frame(
                    broker, frame, client_host, connection_id, listener
                )
                # ApiVersions is never deferred: a list of chunks or, closing, an exception
                assert isinstance(out, list)
                await frames.send(out)
                state = "HANDSHAKE"
                continue
            expected = SaslHandshakeRequest if state != "AUTHENTICATE" else SaslAuthenticateRequest
            if api_key != expected.API_KEY:
                route = dispatch.route_for(api_key)
                await _illegal_state(frames, route, version, correlation_id, frame)
                raise AuthenticationClosed(
                    f"unexpected request (API key {api_key}) during SASL {state.lower()}"
                )
            if version not in expected.VERSIONS:
                raise AuthenticationClosed(f"unsupported version {version} of API {api_key}")
            try:
                _header, pos = parse_request_header(frame, expected.is_flexible(version))
                request = decode(expected, version, frame, pos, allow_trailing=True)
            except DecodeError as e:
                raise AuthenticationClosed(f"malformed SASL request: {e}") from None
            if expected is SaslHandshakeRequest:
                mechanism = request.mechanism.upper()
                if request.mechanism not in enabled:
                    await frames.send(
                        _respond(
                            SaslHandshakeResponse(
                                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
                            ),
                            version,
                            correlation_id,
                        )
                    )
                    raise AuthenticationClosed(
                        f"SASL mechanism {request.mechanism[:64]!r} is not enabled "
                        f"(sasl.enabled.mechanisms: {','.join(enabled)})"
                    )
                await frames.send(
                    _respond(
                        SaslHandshakeResponse(error_code=0, mechanisms=enabled),
                        version,
                        correlation_id,
                    )
                )
                server = _server(broker, listener, mechanism)
                handshake_version = version
                state = "AUTHENTICATE"
                continue
            token, reply = request.auth_bytes, (version, correlation_id)
        try:
            challenge = server.evaluate(bytes(token))
        except SaslFailure as e:
            await _failed(broker, frames, reply, mechanism, e)
            raise AuthenticationClosed(f"authentication with {mechanism} failed: {e}") from None
        lifetime_ms = session_lifetime_ms(broker, listener, server) if server.complete else 0
        if reply is None:
            await frames.send([struct.pack(">i", len(challenge)), challenge])
        else:
            version, correlation_id = reply
            lifetime_ms = session_lifetime_ms(broker, listener, server)
            response = SaslAuthenticateResponse(
                error_code=0, auth_bytes=challenge, session_lifetime_ms=lifetime_ms
            )
            await frames.send(_respond(response, version, correlation_id))
        if server.complete:
            principal: str = server.principal
            authz(broker).start_session(connection_id, listener, mechanism, principal, lifetime_ms)
            return principal


async def _failed(
    broker: Broker, frames: _Frames, reply: tuple[int, int] | None, mechanism: str, e: SaslFailure
) -> None:
    """Kafka's answer to failed credentials, after connection.failed.authentication.delay.ms
    (KIP-306): SaslAuthenticate with SASL_AUTHENTICATION_FAILED; a raw-token (v0) client
    gets no answer, only the close."""
    await trio.sleep(broker.config["connection.failed.authentication.delay.ms"] / 1000)
    if reply is None:
        return
    message = failure_message(mechanism, e)
    version, correlation_id = reply
    response = SaslAuthenticateResponse(
        error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b""
    )
    await frames.send(_respond(response, version, correlation_id))


async def _illegal_state(
    frames: _Frames, route: Any, version: int, correlation_id: int, frame: bytes
) -> None:
    """Answer a request that has no place in the exchange with its API's error response
    carrying ILLEGAL_SASL_STATE, when it can be parsed (SaslServerAuthenticator)."""
    if route is None or version not in route.request.VERSIONS:
        return
    try:
        _header, pos = parse_request_header(frame, route.request.is_flexible(version))
        request = decode(route.request, version, frame, pos, allow_trailing=True)
        response = route.error_response(request, ErrorCode.ILLEGAL_SASL_STATE, version)
        body = encode_chunks(response, version)
    except Exception:
        return
    from protocol.frames import response_header_is_flexible

    flexible = response_header_is_flexible(route.api_key, route.response.is_flexible(version))
    await frames.send(frame_response(correlation_id, body, flexible))
