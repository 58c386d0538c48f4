"""The per-connection loop: read a frame, dispatch it, answer, repeat.

Kafka mutes a connection while one of its requests is being processed, so requests on one
connection are handled one at a time and responses go out in request order (clients that
pipeline, like librdkafka with up to 5 in flight, simply wait in the socket buffer).

This is the one dispatch site of the broker:
  * a frame we cannot parse closes the connection (logged at INFO), as Kafka does; bytes
    after a complete request body are ignored, as Kafka ignores them;
  * an unknown API key or an unsupported version closes the connection, except ApiVersions,
    which is answered with UNSUPPORTED_VERSION and our version list in its v0 form so the
    client can pick a version it shares with us (KIP-511);
  * `KafkaError` raised by a handler becomes the API's `error_response(request, code)`;
  * any other exception is a bug: it is logged with its traceback, answered with
    UNKNOWN_SERVER_ERROR, and the connection is closed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from broker.routes import Route, route_for
from protocol.errors import ErrorCode, KafkaError
from protocol.frames import (
    API_VERSIONS_KEY,
    FrameBuffer,
    FrameTooLarge,
    frame_response,
    parse_request_header,
    peek_request_key,
    response_header_is_flexible,
)
from protocol.schema import DecodeError, decode, encode_chunks

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger("broker.connection")

RECEIVE_BYTES = 65536  # keep receives below glibc's mmap threshold (PERF-NOTES §3)


class RequestContext:
    """What a handler knows about the request besides its body."""

    __slots__ = ("api_version", "broker", "client_host", "client_id", "connection_id")

    def __init__(
        self, broker: Broker, api_version: int, client_id: str, client_host: str, connection_id: int
    ) -> None:
        self.broker = broker
        self.api_version = api_version
        self.client_id = client_id
        self.client_host = client_host
        self.connection_id = connection_id


class CloseConnection(Exception):
    """Stop serving this connection (after logging why)."""


async def serve_connection(broker: Broker, stream: trio.SocketStream, connection_id: int) -> None:
    try:
        peer = stream.socket.getpeername()
        client_host = f"/{peer[0]}"
    except OSError:
        client_host = "/unknown"
    metrics = broker.metrics
    metrics.connection_opened()
    log.info("connection %d opened from %s", connection_id, client_host[1:])
    reason = "closed by client"
    frames = FrameBuffer(broker.config["socket.request.max.bytes"])
    idle_s = broker.config["connections.max.idle.ms"] / 1000
    try:
        while True:
            frame: bytes | bytearray | None = frames.next_frame()
            if frame is None and (large := frames.start_large_frame(RECEIVE_BYTES)) is not None:
                frame, got = large
                already = got
                view = memoryview(frame)
                with trio.move_on_after(idle_s) as idle:
                    while got < len(frame):
                        n = await stream.socket.recv_into(view[got:])
                        if n == 0:
                            break
                        got += n
                        idle.deadline = trio.current_time() + idle_s
                metrics.bytes_in(got - already)
                if got < len(frame):
                    reason = (
                        "idle timeout mid-frame"
                        if idle.cancelled_caught
                        else ("closed by client mid-frame")
                    )
                    return
            if frame is None:
                with trio.move_on_after(idle_s) as idle:
                    data = await stream.receive_some(RECEIVE_BYTES)
                if idle.cancelled_caught:
                    reason = "idle timeout"
                    return
                if not data:
                    if len(frames):
                        reason = "closed by client mid-frame"
                    return
                metrics.bytes_in(len(data))
                frames.feed(data)
                continue
            out = await _handle_frame(broker, frame, client_host, connection_id)
            if out is not None:
                # A client that stops reading its responses makes no progress either: Kafka
                # closes it after connections.max.idle.ms like one that stops sending, so it
                # cannot pin a task, a descriptor and a response forever.
                with trio.move_on_after(idle_s) as stalled:
                    metrics.bytes_out(await send_chunks(stream, out))
                if stalled.cancelled_caught:
                    reason = "idle timeout (client not reading its responses)"
                    return
    except FrameTooLarge as e:
        reason = str(e)
    except CloseConnection as e:
        reason = str(e)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as e:
        reason = f"connection lost ({e.__class__.__name__})"
    finally:
        metrics.connection_closed()
        log.info("connection %d from %s closed: %s", connection_id, client_host[1:], reason)
        with trio.CancelScope(shield=True):
            await stream.aclose()


COALESCE_BYTES = 65536  # chunks smaller than this are joined; larger ones go out as they are


async def send_chunks(stream: trio.abc.SendStream, chunks: list[Any]) -> int:
    """Send a response given as chunks: small ones joined (one send instead of hundreds),
    large ones (record data) sent without copying. Returns the bytes sent."""
    total = 0
    pending: list[Any] = []
    for chunk in chunks:
        n = len(chunk)
        total += n
        if n >= COALESCE_BYTES:
            if pending:
                await stream.send_all(b"".join(pending))
                pending = []
            await stream.send_all(chunk)
        else:
            pending.append(chunk)
    if pending:
        await stream.send_all(b"".join(pending))
    return total


async def _handle_frame(
    broker: Broker, frame: bytes | bytearray, client_host: str, connection_id: int
) -> list[Any] | None:
    try:
        api_key, version, correlation_id = peek_request_key(frame)
    except DecodeError as e:
        raise CloseConnection(f"unreadable request header: {e}") from None
    route = route_for(api_key)
    if route is None:
        raise CloseConnection(f"unknown API key {api_key}")
    if version not in route.request.VERSIONS:
        if api_key == API_VERSIONS_KEY:
            return _unsupported_api_versions(correlation_id)
        raise CloseConnection(f"unsupported version {version} of {route.name}")
    flexible = route.request.is_flexible(version)
    try:
        header, body_pos = parse_request_header(frame, flexible)
        # Bytes after a well-formed body are ignored, as Kafka's request parser ignores them:
        # librdkafka 2.16 sends three extra bytes after a Metadata v12 for all topics.
        request = decode(route.request, version, frame, body_pos, allow_trailing=True)
    except DecodeError as e:
        if api_key == API_VERSIONS_KEY:
            # KIP-511: an ApiVersions we cannot parse (a newer client's tagged fields) is
            # answered with INVALID_REQUEST rather than a close.
            return _respond(
                route,
                version,
                correlation_id,
                route.error_response(route.request(), ErrorCode.INVALID_REQUEST),
            )
        raise CloseConnection(f"malformed {route.name} v{version}: {e}") from None
    ctx = RequestContext(broker, version, header.client_id or "", client_host, connection_id)
    started = trio.current_time()
    code = ErrorCode.NONE
    try:
        try:
            response = await route.handler(ctx, request)
        except KafkaError as e:
            code = e.code
            log.debug("%s v%d from %s: %s", route.name, version, header.client_id, e)
            response = route.error_response(request, e.code)
        # Encoding is inside the dispatch site too: a response that cannot be encoded is a
        # bug reported with its API, version and client, like any other.
        out = None if response is None else _respond(route, version, correlation_id, response)
    except Exception:
        log.exception("%s v%d from %s failed", route.name, version, header.client_id)
        broker.metrics.request_done(route.name, ErrorCode.UNKNOWN_SERVER_ERROR, 0.0)
        raise CloseConnection(f"internal error handling {route.name}") from None
    broker.metrics.request_done(route.name, code, trio.current_time() - started)
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%s v%d corr=%d from %s -> %s",
            route.name,
            version,
            correlation_id,
            header.client_id,
            code.name,
        )
    return out  # None for Produce with acks=0: no response at all


def _respond(route: Route, version: int, correlation_id: int, response: Any) -> list[Any]:
    body = encode_chunks(response, version)
    flexible_header = response_header_is_flexible(
        route.api_key, route.response.is_flexible(version)
    )
    return frame_response(correlation_id, body, flexible_header)


def _unsupported_api_versions(correlation_id: int) -> list[Any]:
    from broker.handlers.api_versions import supported_versions
    from protocol.messages.api_versions import ApiVersionsResponse

    response = ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=supported_versions()
    )
    return frame_response(correlation_id, encode_chunks(response, 0), False)
