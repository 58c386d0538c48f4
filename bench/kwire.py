"""Kafka requests on kmock's own codec, and a closed-loop load generator.

Requests are framed and responses read by `protocol.frames` (`encode_request`,
`frame_size`, `decode_response`: the helper kmock's client and tests/wire.py use), with the
response class of `broker.routes`.
The load generator does not use trio: it is one thread on `select.epoll` with non-blocking
sockets, so that its own cost per request (a few microseconds) stays small next to the
broker's on this 2-core machine. Each connection has exactly one request in flight (Kafka
brokers handle one request per connection at a time). The request bytes are encoded once
per connection; only the correlation id is patched in for each send. Every response's
correlation id is checked; its body is compared with the first response of that
connection, which was decoded in full and checked for error codes. A body that differs is
decoded and its error codes counted.
"""

from __future__ import annotations

import dataclasses
import select
import socket
import struct
import time
from array import array
from typing import Any

from common import proc_cpu_s

from broker.routes import route_for
from protocol.frames import decode_response as decode_frame
from protocol.frames import encode_request, frame_size
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.schema import Message

_SIZE = struct.Struct(">i")
CLIENT_ID = "kmock-bench"


def request_bytes(request: Message, version: int, correlation_id: int = 1) -> bytes:
    return encode_request(request, version, correlation_id, CLIENT_ID)


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation id, response) of a frame without its size prefix."""
    route = route_for(api_key)
    assert route is not None
    return decode_frame(route.response, version, frame)


def error_codes(obj: Any) -> list[int]:
    """Every non-zero `error_code` anywhere in a decoded response."""
    out: list[int] = []
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if f.name == "error_code" and isinstance(v, int):
                if v:
                    out.append(v)
            else:
                out.extend(error_codes(v))
    elif isinstance(obj, list):
        for x in obj:
            out.extend(error_codes(x))
    return out


def recv_frame(sock: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by broker")
            buf += chunk
        return bytes(buf)

    return exact(frame_size(exact(4)))


def call(sock: socket.socket, request: Message, version: int, correlation_id: int = 1) -> Any:
    """One blocking request/response on a connected socket."""
    sock.sendall(request_bytes(request, version, correlation_id))
    corr, resp = decode_response(type(request).API_KEY, version, recv_frame(sock))
    assert corr == correlation_id, (corr, correlation_id)
    return resp


def connect(addr: tuple[str, int], timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection(addr, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def api_versions(addr: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """api_key -> (min, max) as advertised by the broker (ApiVersions v0)."""
    with connect(addr) as s:
        resp = call(s, ApiVersionsRequest(), 0)
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


def common_version(request_cls: type[Message], *brokers: dict[int, tuple[int, int]]) -> int:
    """The highest version of `request_cls` that our codec and every broker support."""
    lo, hi = request_cls.VERSIONS.start, request_cls.VERSIONS.stop - 1
    for adv in brokers:
        bmin, bmax = adv[request_cls.API_KEY]
        lo, hi = max(lo, bmin), min(hi, bmax)
    if lo > hi:
        raise RuntimeError(f"no common version of {request_cls.__name__}")
    return hi


@dataclasses.dataclass
class LoopResult:
    requests: int  # answers received inside the measured window
    duration_s: float
    latencies_s: array  # of requests sent and answered inside the window
    errors: dict[int, int]  # error code -> count (over the whole run)
    connect_s: float
    client_cpu_s: float
    server_cpu_s: float  # CPU time of server_pid inside the measured window (nan if none)

    @property
    def rate(self) -> float:
        return self.requests / self.duration_s if self.duration_s else float("nan")


class _Conn:
    __slots__ = ("api_key", "buf", "corr", "expected", "req", "sock", "t_sent", "version")

    def __init__(self, sock: socket.socket, req: bytes, api_key: int, version: int) -> None:
        self.sock = sock
        self.req = bytearray(req)
        self.corr = 1
        self.t_sent = 0.0
        self.buf = bytearray()
        self.expected: bytes | None = None
        self.api_key = api_key
        self.version = version


def closed_loop(
    addr: tuple[str, int],
    requests: list[tuple[Message, int]],
    *,
    duration_s: float,
    warmup_s: float,
    server_pid: int | None = None,
) -> LoopResult:
    """One connection per (request, version); each sends it again as soon as it is answered.

    The rate counts the answers received inside the measured window (`duration_s`, after
    `warmup_s`); latencies are those of the requests sent and answered inside it.
    """
    cpu0 = time.process_time()
    t_c0 = time.perf_counter()
    conns: dict[int, _Conn] = {}
    try:
        for req, version in requests:
            s = connect(addr)
            # One round trip before the next connect: the broker has accepted this one. (The
            # librdkafka mock listens with a backlog of 5; a burst of connects overflows it
            # and the kernel retries the dropped SYNs only after 1 s.)
            call(s, ApiVersionsRequest(), 0)
            conns[s.fileno()] = _Conn(s, request_bytes(req, version, 1), type(req).API_KEY, version)
        connect_s = time.perf_counter() - t_c0
        ep = select.epoll()
        for fd, c in conns.items():
            c.sock.setblocking(False)
            ep.register(fd, select.EPOLLIN)
        lat = array("d")
        errors: dict[int, int] = {}
        pack_into = struct.pack_into
        unpack_from = _SIZE.unpack_from
        perf = time.perf_counter
        start = perf()
        measure_from = start + warmup_s
        end = measure_from + duration_s
        done_in_window = 0
        cpu_mark: list[float] = []
        for c in conns.values():
            c.t_sent = perf()
            c.sock.send(c.req)
        while True:
            now = perf()
            if now >= end:
                break
            if not cpu_mark and now >= measure_from and server_pid is not None:
                cpu_mark.append(proc_cpu_s(server_pid))
            for fd, _ in ep.poll(min(0.1, end - now)):
                c = conns[fd]
                data = c.sock.recv(262144)
                if not data:
                    raise ConnectionError(f"broker closed a connection (api {c.api_key})")
                buf = c.buf
                buf += data
                while len(buf) >= 4:
                    (size,) = unpack_from(buf, 0)
                    if len(buf) < 4 + size:
                        break
                    t = perf()
                    frame = bytes(buf[4 : 4 + size])
                    del buf[: 4 + size]
                    (corr,) = unpack_from(frame, 0)
                    if corr != c.corr:
                        raise RuntimeError(f"correlation id {corr}, expected {c.corr}")
                    body = frame[4:]
                    if body != c.expected:
                        _, resp = decode_response(c.api_key, c.version, frame)
                        codes = error_codes(resp)
                        for code in codes:
                            errors[code] = errors.get(code, 0) + 1
                        if not codes and c.expected is None:
                            c.expected = body
                    if measure_from <= t <= end:
                        done_in_window += 1  # the rate: every answer inside the window
                        if measure_from <= c.t_sent:
                            lat.append(t - c.t_sent)  # latency: requests sent inside it
                    c.corr += 1
                    pack_into(">i", c.req, 8, c.corr)
                    c.t_sent = perf()
                    c.sock.send(c.req)
        ep.close()
        server_cpu = (
            (proc_cpu_s(server_pid) - cpu_mark[0]) if cpu_mark and server_pid else float("nan")
        )
        return LoopResult(
            done_in_window,
            duration_s,
            lat,
            errors,
            connect_s,
            time.process_time() - cpu0,
            server_cpu,
        )
    finally:
        for c in conns.values():
            c.sock.close()


def usable_version(
    request: Message, *targets: tuple[tuple[str, int], dict[int, tuple[int, int]]]
) -> int:
    """The highest version of `request` that every target advertises and whose response our
    codec decodes cleanly from every target (probed with one real request each).

    The librdkafka mock, for one, sends a flexible Metadata response with a byte too many.
    """
    cls = type(request)
    hi = common_version(cls, *(adv for _, adv in targets))
    lo = max([cls.VERSIONS.start] + [adv[cls.API_KEY][0] for _, adv in targets])
    for version in range(hi, lo - 1, -1):
        try:
            for addr, _ in targets:
                with connect(addr) as s:
                    call(s, request, version)
        except Exception:  # a decode failure means: try the next version down
            continue
        return version
    raise RuntimeError(f"no version of {cls.__name__} works with every target")
