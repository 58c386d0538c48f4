"""Request-rate floor without trio: the answers of `request_floor.py`, served by one thread on a
plain `select.epoll` loop (level-triggered, non-blocking sockets, no task per connection).

`python bench/epoll_floor.py PORT` listens on 127.0.0.1:PORT and answers ApiVersions, Metadata
and OffsetCommit exactly as `request_floor.py` does (the same pre-encoded responses, the
correlation id patched in; any other API closes the connection). The difference between the
two floors is what trio's scheduling and per-connection tasks cost per request; this one is
the most requests per second Python itself answers on this machine with this generator,
whatever the framework: a bound on any broker written in Python (bench/README.md, §9).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import sys

from request_floor import _ANSWERS, _answer

from broker.config import SETTINGS
from protocol.frames import FrameBuffer, peek_request_key

_IN = select.EPOLLIN
_OUT = select.EPOLLOUT


class _Conn:
    __slots__ = ("frames", "pending", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.frames = FrameBuffer(SETTINGS["socket.request.max.bytes"].default)
        self.pending = bytearray()  # answer bytes the socket did not take yet


def _serve(port: int) -> None:
    listener = socket.create_server(("127.0.0.1", port), backlog=4096)
    listener.setblocking(False)
    poll = select.epoll()
    poll.register(listener.fileno(), _IN)
    conns: dict[int, _Conn] = {}

    def close(fd: int) -> None:
        poll.unregister(fd)
        conns.pop(fd).sock.close()

    while True:
        for fd, events in poll.poll():
            if fd == listener.fileno():
                with contextlib.suppress(BlockingIOError):
                    while True:
                        sock, _ = listener.accept()
                        sock.setblocking(False)
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        conns[sock.fileno()] = _Conn(sock)
                        poll.register(sock.fileno(), _IN)
                continue
            conn = conns[fd]
            if events & _OUT:
                try:
                    del conn.pending[: os.write(fd, conn.pending)]
                except OSError:
                    close(fd)
                    continue
                if not conn.pending:
                    poll.modify(fd, _IN)
                continue
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                close(fd)
                continue
            conn.frames.feed(data)
            while (frame := conn.frames.next_frame()) is not None:
                api_key, version, corr = peek_request_key(frame)
                if api_key not in _ANSWERS:
                    close(fd)
                    break
                answer = _answer(api_key, version)
                struct.pack_into(">i", answer, 4, corr)
                conn.pending += answer
            else:
                try:
                    written = os.write(fd, conn.pending)
                except BlockingIOError:
                    written = 0  # the socket's buffer is full: EPOLLOUT below waits for room
                except OSError:
                    close(fd)
                    continue
                del conn.pending[:written]
                if conn.pending:
                    poll.modify(fd, _IN | _OUT)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        _serve(int(sys.argv[1]))
