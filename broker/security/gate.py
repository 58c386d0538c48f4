"""What a connection of an SSL, SASL_PLAINTEXT or SASL_SSL listener goes through before
broker.connection serves it (a PLAINTEXT connection goes straight there):

    SSL             TLS handshake (principal: the client certificate's subject, or ANONYMOUS)
    SASL_PLAINTEXT  SASL exchange (broker.security.authenticator)
    SASL_SSL        TLS handshake, then the SASL exchange inside it

Both steps together must end within connections.max.idle.ms, or the connection is closed:
a client that connects and says nothing, or trickles its handshake, holds nothing for long.

broker.connection reads and writes its socket's descriptor directly (see its docstring), so
a TLS connection is served through a socket pair: broker.connection has one end, and two
tasks here carry the bytes between the other end and the TLS stream. A SASL_PLAINTEXT
connection, once authenticated, is handed over as it is.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from broker.security.authenticator import AuthenticationClosed, Dispatch, authenticate
from broker.security.authz import authz
from broker.security.tls import peer_principal

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("broker.security")

__all__ = ["serve_secured"]

RELAY_BYTES = 65536
LINGER_S = 1.0


async def serve_secured(
    broker: Broker,
    stream: trio.SocketStream,
    connection_id: int,
    listener: str,
    protocol: str,
    tls: ssl.SSLContext | None,
    dispatch: Dispatch,
) -> None:
    """Secure the connection per `protocol`, then `dispatch.serve(broker, stream,
    connection_id, listener, client_host=...)` it; close it when any step fails."""
    serve = dispatch.serve
    try:
        host = str(stream.socket.getpeername()[0])
    except OSError:
        host = "unknown"
    transport: trio.abc.Stream = stream
    principal = "User:ANONYMOUS"
    step = "TLS handshake"
    try:
        with trio.fail_after(broker.config["connections.max.idle.ms"] / 1000):
            if tls is not None:
                ssl_stream = trio.SSLStream(stream, tls, server_side=True)
                transport = ssl_stream
                await ssl_stream.do_handshake()
                assert ssl_stream._ssl_object is not None
                principal = peer_principal(ssl_stream._ssl_object) or principal
            if protocol.startswith("SASL"):
                step = "SASL authentication"
                principal = await authenticate(
                    broker, transport, listener, f"/{host}", connection_id, dispatch
                )
    except trio.TooSlowError:
        log.info(
            "connection %d from %s closed: %s not done in connections.max.idle.ms",
            connection_id,
            host,
            step,
        )
        await trio.aclose_forcefully(transport)
        return
    except AuthenticationClosed as e:
        log.info("connection %d from %s closed: %s", connection_id, host, e)
        await _linger(transport)
        await trio.aclose_forcefully(transport)
        return
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as e:
        cause = e.__cause__ or e
        log.info("connection %d from %s closed: %s failed (%s)", connection_id, host, step, cause)
        await trio.aclose_forcefully(transport)
        return
    log.info(
        "connection %d from %s authenticated as %s on %s", connection_id, host, principal, listener
    )
    principals = authz(broker).principals  # what the ACLs are checked against
    principals[connection_id] = principal
    try:
        if transport is stream:
            await serve(broker, stream, connection_id, listener, client_host=f"/{host}")
        else:
            await _serve_relayed(broker, transport, connection_id, listener, host, serve)
    finally:
        authz(broker).end(connection_id)


# How a stream of the relay ends: the peer went away or the other side closed it.
_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


async def _linger(transport: trio.abc.Stream) -> None:
    """Let the client close first, for at most LINGER_S: a client that reads our last answer
    (SASL_AUTHENTICATION_FAILED) and the close in one go may report only the close
    (kafka-python does, now and then)."""
    with trio.move_on_after(LINGER_S), contextlib.suppress(*_GONE):
        while await transport.receive_some(RELAY_BYTES):
            continue  # drained and dropped


async def _serve_relayed(
    broker: Broker,
    outer: trio.abc.Stream,
    connection_id: int,
    listener: str,
    host: str,
    serve: Callable[..., Awaitable[None]],
) -> None:
    near, far = socket.socketpair()
    inner = trio.SocketStream(trio.socket.from_stdlib_socket(near))
    relay = trio.SocketStream(trio.socket.from_stdlib_socket(far))

    async def client_to_broker() -> None:
        with contextlib.suppress(*_GONE):
            while data := await outer.receive_some(RELAY_BYTES):
                await relay.send_all(data)
        with contextlib.suppress(OSError):
            relay.socket.shutdown(socket.SHUT_WR)  # broker.connection reads its end to EOF

    async def broker_to_client() -> None:
        with contextlib.suppress(*_GONE):
            while data := await relay.receive_some(RELAY_BYTES):
                await outer.send_all(data)
        await trio.aclose_forcefully(outer)  # the client's side ends with the broker's

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client_to_broker)
            nursery.start_soon(broker_to_client)
            await serve(broker, inner, connection_id, listener, client_host=f"/{host}")
    finally:
        await trio.aclose_forcefully(relay)
        await trio.aclose_forcefully(outer)
