"""A minimal Kafka client on our own codec, for tests that speak the protocol directly."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import trio

from broker.routes import route_for
from protocol.frames import frame_request, parse_response_header, response_header_is_flexible
from protocol.schema import Message, decode, encode_chunks

_correlation = itertools.count(1)


def request_bytes(
    request: Message, version: int, *, correlation_id: int = 1, client_id: str | None = "kmock-test"
) -> bytes:
    chunks = frame_request(
        type(request).API_KEY,
        version,
        correlation_id,
        client_id,
        encode_chunks(request, version),
        type(request).is_flexible(version),
    )
    return b"".join(bytes(c) for c in chunks)


async def read_frame(stream: trio.abc.ReceiveStream) -> bytes | None:
    """One size-prefixed frame, or None if the peer closed the connection first."""
    buf = bytearray()
    while len(buf) < 4:
        data = await stream.receive_some(4 - len(buf))
        if not data:
            return None
        buf += data
    (size,) = struct.unpack(">i", buf)
    body = bytearray()
    while len(body) < size:
        data = await stream.receive_some(size - len(body))
        if not data:
            return None
        body += data
    return bytes(body)


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
        flexible = response_header_is_flexible(route.api_key, route.response.is_flexible(version))
        got, pos = parse_response_header(frame, flexible)
        assert got == correlation_id
        return decode(route.response, version, frame, pos)

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
