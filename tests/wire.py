"""A minimal Kafka client on our own codec, for tests that speak the protocol directly.

Frames are built and read by `protocol.frames` (`encode_request`, `frame_size`,
`decode_response`), the helper that kmock's own client and the bench use too; this module
adds only trio's sockets.
"""

from __future__ import annotations

import itertools
from typing import Any

import trio

from broker.routes import route_for
from protocol.frames import decode_response, encode_request, frame_size
from protocol.schema import Message

_correlation = itertools.count(1)


def request_bytes(
    request: Message, version: int, *, correlation_id: int = 1, client_id: str | None = "kmock-test"
) -> bytes:
    return encode_request(request, version, correlation_id, client_id)


async def _receive_exactly(stream: trio.abc.ReceiveStream, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        data = await stream.receive_some(n - len(buf))
        if not data:
            return None
        buf += data
    return bytes(buf)


async def read_frame(stream: trio.abc.ReceiveStream) -> bytes | None:
    """One size-prefixed frame, or None if the peer closed the connection first."""
    prefix = await _receive_exactly(stream, 4)
    if prefix is None:
        return None
    return await _receive_exactly(stream, frame_size(prefix))


class WireClient:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream

    @classmethod
    async def connect(cls, broker: Any) -> WireClient:
        host, port = broker.addresses[0]
        return cls(await trio.open_tcp_stream(host, port))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def call(self, request: Message, version: int) -> Any:
        correlation_id = next(_correlation)
        await self.send_raw(request_bytes(request, version, correlation_id=correlation_id))
        frame = await read_frame(self.stream)
        assert frame is not None, "connection closed instead of a response"
        route = route_for(type(request).API_KEY)
        assert route is not None
        got, response = decode_response(route.response, version, frame)
        assert got == correlation_id
        return response

    async def is_closed_by_peer(self) -> bool:
        """True once the broker has closed the connection (reads EOF)."""
        try:
            return await read_frame(self.stream) is None
        except trio.BrokenResourceError:
            return True

    async def aclose(self) -> None:
        await self.stream.aclose()


async def wire_call(broker: Any, request: Message, version: int) -> Any:
    """The response to `request`, sent on a connection of its own (closed afterwards)."""
    client = await WireClient.connect(broker)
    try:
        return await client.call(request, version)
    finally:
        await client.aclose()
