"""Size-prefixed frames and the request/response headers.

    frame           = size:int32 payload[size]
    request header  v0: api_key:int16 api_version:int16 correlation_id:int32
                    v1: v0 + client_id:NULLABLE_STRING (int16 length, even when flexible)
                    v2: v1 + TAG_BUFFER
    response header v0: correlation_id:int32
                    v1: v0 + TAG_BUFFER

Header quirks live here and nowhere else: a request uses header v2 from its API's first
flexible version and v1 below it; a response uses v1 from the flexible version and v0 below,
except ApiVersions, whose response header is always v0 (a client that does not yet know our
versions must be able to read the answer, KIP-511).

The client side, sans I/O, for kmock's own client, the tests and the bench alike:
`encode_request` gives a whole request frame; a reader takes `frame_size` from the first
four bytes, reads that many, and hands them to `decode_response` (or to
`parse_response_frame` to look at the body before decoding it).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.primitives import DecodeError, Reader, read_tagged
from protocol.schema import Message, decode, encode_chunks

__all__ = [
    "API_VERSIONS_KEY",
    "FrameBuffer",
    "FrameTooLarge",
    "RequestHeader",
    "decode_response",
    "encode_request",
    "frame_request",
    "frame_response",
    "frame_size",
    "header_tags_end",
    "parse_request_header",
    "parse_response_frame",
    "parse_response_header",
    "peek_request_key",
    "request_client_id",
    "request_header",
    "response_header_is_flexible",
]

API_VERSIONS_KEY = 18

_SIZE = struct.Struct(">i")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_CLIENT_ID_SIZE = struct.Struct(">h")
_pack_size = _SIZE.pack
# Read or written once per request: the struct's method, looked up once.
_request_header_v1 = struct.Struct(">hhih").unpack_from  # up to the client id's length
_response_header_v0 = struct.Struct(">ii").pack  # size, correlation_id
_response_header_v1 = struct.Struct(">iiB").pack  # and an empty tagged-field section


class FrameTooLarge(Exception):
    """A peer announced a frame larger than socket.request.max.bytes (or a negative one)."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    request_api_key: int
    request_api_version: int
    correlation_id: int
    client_id: str | None


def response_header_is_flexible(api_key: int, body_flexible: bool) -> bool:
    """Response header v1 goes with flexible bodies, except for ApiVersions (always v0)."""
    return body_flexible and api_key != API_VERSIONS_KEY


def peek_request_key(frame: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the fixed first 8 bytes of a request."""
    if len(frame) < 8:
        raise DecodeError(f"request of {len(frame)} bytes has no header")
    key, version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(frame, 0)
    return key, version, correlation_id


def parse_request_header(
    frame: bytes | bytearray | memoryview, flexible: bool
) -> tuple[RequestHeader, int]:
    """Parse a request header (v1, or v2 when `flexible`); returns it and where the body starts.

    Tagged fields in the header (none defined for requests today) are skipped.
    """
    key, version, correlation_id = peek_request_key(frame)
    client_id, pos = request_client_id(frame, flexible)
    return RequestHeader(key, version, correlation_id, client_id), pos


def request_client_id(
    frame: bytes | bytearray | memoryview, flexible: bool
) -> tuple[str | None, int]:
    """The client id of a request whose first 8 bytes `peek_request_key` has read, and
    where the body starts (the rest of `parse_request_header`)."""
    try:
        (n,) = _CLIENT_ID_SIZE.unpack_from(frame, 8)
        if n < 0:
            client_id, pos = None, 10
        else:
            pos = 10 + n
            if pos > len(frame):
                raise DecodeError(f"need {n} bytes at 10, frame has {len(frame) - 10}")
            client_id = str(frame[10:pos], "utf-8")
    except (struct.error, ValueError) as e:
        if isinstance(e, DecodeError):
            raise
        raise DecodeError(f"request header: {e}") from e
    return client_id, header_tags_end(frame, pos) if flexible else pos


def header_tags_end(frame: bytes | bytearray | memoryview, pos: int) -> int:
    """Where the body of a request with header v2 starts: after the tagged-field section
    at `pos` (empty, nearly always: none is defined for request headers)."""
    if frame[pos : pos + 1] == b"\x00":
        return pos + 1
    try:
        r = Reader(frame, pos)
        read_tagged(r)
    except (struct.error, ValueError) as e:
        if isinstance(e, DecodeError):
            raise
        raise DecodeError(f"request header: {e}") from e
    return r.pos


def request_header(
    frame: bytes | bytearray | memoryview,
) -> tuple[int, int, int, str | None, int]:
    """(api_key, api_version, correlation_id, client_id, end) of a request: its header v1,
    which header v2 begins with (the tagged fields that follow it then end where
    `header_tags_end(frame, end)` says). The dispatch site's one read of a header, the fields
    of `peek_request_key` and `request_client_id` in one unpack.

    `end` is -1 when the client id is cut short or not UTF-8: `request_client_id` then
    says what is wrong, once the caller knows which API is asking (an ApiVersions is
    answered, KIP-511).

    Raises:
      DecodeError: fewer than 8 bytes (as `peek_request_key`).
    """
    try:
        key, version, correlation_id, n = _request_header_v1(frame)
    except struct.error:  # fewer than 10 bytes
        key, version, correlation_id = peek_request_key(frame)
        return key, version, correlation_id, None, -1
    if n < 0:
        return key, version, correlation_id, None, 10
    if n > len(frame) - 10:
        return key, version, correlation_id, None, -1
    try:
        client_id = str(frame[10 : 10 + n], "utf-8")
    except UnicodeDecodeError:
        return key, version, correlation_id, None, -1
    return key, version, correlation_id, client_id, 10 + n


def frame_response(correlation_id: int, body: list[Any], flexible_header: bool) -> list[Any]:
    """Prefix body chunks with the size and response header (v1 when `flexible_header`)."""
    if flexible_header:
        return [_response_header_v1(5 + sum(map(len, body)), correlation_id, 0), *body]
    return [_response_header_v0(4 + sum(map(len, body)), correlation_id), *body]


def frame_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: list[Any],
    flexible_header: bool,
) -> list[Any]:
    """Prefix request body chunks with the size and a v1 (or, when flexible, v2) header."""
    head = [_KEY_VERSION_CORRELATION.pack(api_key, api_version, correlation_id)]
    if client_id is None:
        head.append(b"\xff\xff")
    else:
        cid = client_id.encode()
        head.append(struct.pack(">h", len(cid)) + cid)
    if flexible_header:
        head.append(b"\x00")
    size = sum(len(c) for c in head) + sum(len(c) for c in body)
    return [_SIZE.pack(size), *head, *body]


def parse_response_header(frame: bytes | memoryview, flexible_header: bool) -> tuple[int, int]:
    """(correlation_id, body start) of a response frame without its size prefix."""
    r = Reader(frame)
    try:
        (correlation_id,) = _SIZE.unpack_from(frame, 0)
        r.pos = 4
        if flexible_header:
            read_tagged(r)
    except struct.error as e:
        raise DecodeError(f"response header: {e}") from e
    return correlation_id, r.pos


def encode_request(
    request: Message, version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """A whole request frame: size, header (v2 from the API's first flexible version, v1
    below it) and `request` encoded at `version`."""
    chunks = frame_request(
        request.API_KEY,
        version,
        correlation_id,
        client_id,
        encode_chunks(request, version),
        request.is_flexible(version),
    )
    return b"".join(chunks)


def frame_size(prefix: bytes | bytearray | memoryview) -> int:
    """The size a frame's first four bytes announce (what follows them).

    Raises:
      DecodeError: fewer than four bytes, or a negative size.
    """
    if len(prefix) < 4:
        raise DecodeError(f"frame size cut short: {len(prefix)} of 4 bytes")
    (size,) = _SIZE.unpack_from(prefix, 0)
    if size < 0:
        raise DecodeError(f"negative frame size {size}")
    return int(size)


def parse_response_frame(
    response_cls: type[Message], version: int, frame: bytes | memoryview
) -> tuple[int, int]:
    """(correlation_id, body start) of a response frame without its size prefix, with the
    header version that `response_cls` at `version` goes with (v0 always for ApiVersions)."""
    flexible = response_header_is_flexible(response_cls.API_KEY, response_cls.is_flexible(version))
    return parse_response_header(frame, flexible)


def decode_response(
    response_cls: type[Message], version: int, frame: bytes | memoryview
) -> tuple[int, Any]:
    """(correlation_id, decoded response) of a response frame without its size prefix.

    Raises:
      DecodeError: a header or body that does not parse, or bytes left over.
    """
    correlation_id, pos = parse_response_frame(response_cls, version, frame)
    return correlation_id, decode(response_cls, version, frame, pos)


class FrameBuffer:
    """Bytes received so far on a connection, cut into whole frames (h11's ReceiveBuffer idea).

    Each frame is returned as its own `bytes` object, so memoryview slices of it (records)
    stay valid after the buffer moves on.
    """

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        # The bytes received and not returned as frames yet, from `_start` on. Empty when
        # there are none (it is cleared whenever it has all been returned), so a reader can
        # tell that nothing is buffered from `not buffer`, without a call.
        self.buffer = bytearray()
        self._start = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._start and self._start == len(self.buffer):
            self.buffer.clear()
            self._start = 0
        self.buffer += data

    def __len__(self) -> int:
        return len(self.buffer) - self._start

    def feed_next(self, data: bytes) -> bytes | None:
        """`feed(data)`, then `next_frame()`; when nothing is buffered and `data` is one
        whole frame (a client that waits for each answer sends just that), the frame is cut
        from `data` without going through the buffer.

        Raises:
          FrameTooLarge: as `next_frame`.
        """
        if not self.buffer:
            size = len(data) - 4
            # The prefix says so: `data` is all of one frame. (Fewer than 4 bytes: a
            # shorter prefix, not equal to any packed size.)
            if data[:4] == _pack_size(size) and size <= self.max_frame_bytes:
                return data[4:]
        self.feed(data)
        return self.next_frame()

    def _announced_size(self) -> int | None:
        """The size in the next frame's prefix, or None until the prefix has arrived.

        Raises:
          FrameTooLarge: the size is negative or above max_frame_bytes.
        """
        if len(self.buffer) - self._start < 4:
            return None
        (size,) = _SIZE.unpack_from(self.buffer, self._start)
        if size < 0 or size > self.max_frame_bytes:
            raise FrameTooLarge(f"frame of {size} bytes (limit {self.max_frame_bytes})")
        return int(size)

    def next_frame(self) -> bytes | None:
        """The next whole frame without its size prefix, or None until more bytes arrive.

        Raises:
          FrameTooLarge: the announced size is negative or above max_frame_bytes.
        """
        data, start = self.buffer, self._start
        if len(data) - start < 4:  # the common case after a frame: nothing buffered
            return None
        (size,) = _SIZE.unpack_from(data, start)  # _announced_size, inline
        if size < 0 or size > self.max_frame_bytes:
            self._announced_size()  # raises FrameTooLarge
        if len(data) - start < 4 + size:
            return None
        begin = start + 4
        frame = bytes(data[begin : begin + size])
        self._start = begin + size
        if self._start == len(self.buffer):
            # Nothing buffered: an idle connection keeps no receive buffer.
            self.buffer.clear()
            self._start = 0
        elif self._start > 1 << 20 and self._start * 2 > len(self.buffer):
            del self.buffer[: self._start]
            self._start = 0
        return frame

    def start_large_frame(
        self, threshold: int, allocate: Callable[[int], Any] = bytearray
    ) -> tuple[Any, int] | None:
        """If the frame in progress is larger than `threshold` bytes, hand it over for a
        direct read: returns a buffer of the frame's size (`allocate(size)`, writable)
        holding what has arrived so far, and how many bytes that is. The caller fills the
        rest with `recv_into`, so a large frame (a 1 MB Produce) is copied once, not once
        per receive plus once at the end.

        Raises:
          FrameTooLarge: as `next_frame`.
        """
        size = self._announced_size()
        avail = len(self.buffer) - self._start
        if size is None or size <= threshold or avail >= 4 + size:
            return None
        frame = allocate(size)
        got = avail - 4
        memoryview(frame)[:got] = memoryview(self.buffer)[self._start + 4 :]
        self.buffer.clear()
        self._start = 0
        return frame, got

    def bytes_needed(self) -> int:
        """How many more bytes complete the frame in progress (at least 1)."""
        avail = len(self.buffer) - self._start
        if avail < 4:
            return 4 - avail
        size: int = _SIZE.unpack_from(self.buffer, self._start)[0]
        return max(1, 4 + size - avail)
