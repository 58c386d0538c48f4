"""What a client may take from the broker: memory for the requests it sends, and connections.

Memory for requests (`queued.max.request.bytes`, Kafka's SocketServer memory pool)
-------------------------------------------------------------------------------------
A request frame announces its size in its first four bytes, and a client is free to announce
100 MB and then send nothing more. Memory must follow the bytes that actually arrived, not
the size announced, and the memory of all requests together must stay bounded:

  * frames up to RECEIVE_BYTES (64 KiB, broker.connection) are cut from the connection's
    receive buffer, which holds at most two reads (128 KiB) and nothing once a frame is
    taken: that is part of a connection's own cost (docs/reliability.md);
  * a larger frame up to DIRECT_FRAME_BYTES (1 MiB: message.max.bytes, a full producer
    batch) is received into one buffer of its size (`direct_frame_buffer`), reserved from
    the pool in full before it is allocated, once RECEIVE_BYTES of it have arrived (until
    then it waits in the receive buffer, like a small one: a size prefix alone commits
    nothing). Allocating it in steps, or mapping fresh pages, costs more than the frame's
    own copy (docs/reliability.md, "Memory");
  * a frame above DIRECT_FRAME_BYTES is received into an anonymous private mapping of its
    size (`frame_buffer`): the kernel commits a page when it is first written, so the
    memory is what arrived, and it goes back to the system when the frame is dropped. It
    is reserved from the pool as it arrives, one read at a time.

The pool (`MemoryPool`) counts the bytes reserved by frames being received or handled, on
every connection together; a frame's bytes go back when its request has been handled (a
deferred acks=all Produce keeps none: its batches are in the log). When the next read would
take the pool past `queued.max.request.bytes`, the connection stops reading until memory
comes back: the client's bytes wait in the kernel's socket buffer and then in the client
(back-pressure), as Kafka's Selector mutes a channel whose MemoryPool.tryAllocate fails.
Kafka's SimpleMemoryPool (non-strict, as SocketServer makes it) grants an allocation while
any memory is left, so the pool may end one request over its size; kmock grants only what
fits, except that a reservation larger than the whole pool is granted when nothing else is
reserved, so that no frame can wait forever. A connection waiting
for memory makes no progress and is closed after `connections.max.idle.ms`, like any other
(Kafka's muted channels expire the same way); that is what frees the pool from clients
that announce large frames and stop sending.

Differences from Kafka: Kafka reserves the announced size of every frame, small ones too,
when it starts reading it, and its pool is off by default (-1). kmock reserves what it
commits (the whole frame up to 1 MiB once 64 KiB of it arrived, what arrived above),
leaves frames of 64 KiB or less to the per-connection cost, so that heartbeats, commits and
metadata requests are never held back behind large Produce requests, and defaults to a
bounded pool (docs/reliability.md states the ceiling it gives).

Connections (`max.connections`, `max.connections.per.ip`, `max.connections.per.ip.overrides`)
-----------------------------------------------------------------------------------------
As Kafka's ConnectionQuotas (SocketServer.scala): per client address, at most
max.connections.per.ip connections, or the address's override; a connection over the limit
is closed right after it is accepted. One difference: over `max.connections` (all
addresses), Kafka's acceptor stops accepting until a connection closes, leaving new ones
waiting in the listen backlog until the client's connect timeout; kmock accepts and closes
them at once, so a client learns of the limit immediately and retries after its backoff.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import mmap
import socket
from collections import Counter
from collections.abc import Callable
from typing import Any

import trio

from broker.config import Config

__all__ = [
    "DIRECT_FRAME_BYTES",
    "ConnectionQuotas",
    "MemoryPool",
    "direct_frame_buffer",
    "frame_buffer",
    "raise_open_files_limit",
]

log = logging.getLogger(__name__)

DIRECT_FRAME_BYTES = 1024 * 1024  # larger frames are mapped, committed as they arrive


def _uninitialized_bytearray() -> Callable[[int], bytearray]:
    """bytearray(size) without its zero-fill: CPython's PyByteArray_FromStringAndSize(NULL,
    size), through ctypes (which storage.segment has loaded already); plain bytearray
    where there is no such function (another Python)."""
    try:
        import ctypes

        make = ctypes.pythonapi.PyByteArray_FromStringAndSize
    except (ImportError, AttributeError):  # pragma: no cover - not CPython
        return bytearray
    make.restype = ctypes.py_object
    make.argtypes = (ctypes.c_char_p, ctypes.c_ssize_t)
    return functools.partial(make, None)


_new_bytearray = _uninitialized_bytearray()


def direct_frame_buffer(size: int) -> bytearray:
    """A bytearray of `size` bytes for a frame of up to DIRECT_FRAME_BYTES, its contents
    left as the allocator gives them: the frame's receive writes every byte of it before
    anything reads it (a frame cut short is dropped unread, broker.connection). Zeroing
    it first, as bytearray(size) does, is one more pass over up to 1 MiB of memory per
    request: 5 us for 266 KB and 27 us for 1 MB in a loop here, more in a broker whose
    client has just run on the same CPU (bench/README.md, "Round 8, produce")."""
    return _new_bytearray(size)


def frame_buffer(size: int) -> Any:
    """A writable buffer of `size` bytes whose memory is committed only as it is written.

    An anonymous private mapping: untouched pages cost no memory (and are not zero-filled
    by us; the kernel maps a zero page on first write). It is unmapped when the last view
    of it goes, so records decoded from the frame (memoryview slices) stay valid.
    """
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)


class MemoryPool:
    """Bytes reserved by requests being received or handled (`queued.max.request.bytes`).

    `capacity` <= 0: unbounded (Kafka's MemoryPool.NONE); the bytes are still counted.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity if capacity > 0 else 0
        self.used = 0
        self.peak = 0
        self.waits = 0  # times a connection stopped reading for want of memory
        self._freed: trio.Event | None = None

    def try_reserve(self, n: int) -> bool:
        """Reserve `n` bytes if the pool has them (or is empty: see the module docstring)."""
        if self.capacity and self.used and self.used + n > self.capacity:
            return False
        self.used += n
        if self.used > self.peak:
            self.peak = self.used
        return True

    async def reserve(self, n: int) -> None:
        """Reserve `n` bytes, waiting for other requests to give memory back if needed."""
        if self.try_reserve(n):
            return
        self.waits += 1
        while not self.try_reserve(n):
            if self._freed is None:
                self._freed = trio.Event()
            await self._freed.wait()

    def charge(self, n: int) -> None:
        """Count `n` bytes that are already in memory (they cannot wait)."""
        self.used += n
        if self.used > self.peak:
            self.peak = self.used

    def release(self, n: int) -> None:
        self.used -= n
        if self._freed is not None:
            self._freed.set()
            self._freed = None


def resolve_overrides(overrides: dict[str, int]) -> dict[str, int]:
    """{host or address: count} to {address: count}: host names are resolved once, at
    start, to all their addresses (Kafka resolves each with InetAddress.getByName).

    Raises:
      OSError: a host name does not resolve (the broker does not start, as Kafka's).
    """
    out: dict[str, int] = {}
    for host, limit in overrides.items():
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
            except OSError as e:
                raise OSError(
                    f"max.connections.per.ip.overrides: cannot resolve {host!r}: {e}"
                ) from None
            addresses = sorted({str(info[4][0]) for info in infos})
        for address in addresses:
            out[address] = limit
    return out


class ConnectionQuotas:
    """Connection counts per client address and in total, against the configured limits."""

    def __init__(self, config: Config) -> None:
        self.max_connections: int = config["max.connections"]
        self.max_per_ip: int = config["max.connections.per.ip"]
        self.overrides = resolve_overrides(config.max_connections_per_ip_overrides)
        self.total = 0
        self.per_ip: Counter[str] = Counter()

    def limit_for(self, address: str) -> int:
        return self.overrides.get(address, self.max_per_ip)

    def admit(self, address: str) -> str | None:
        """Count a new connection from `address`; or, over a limit, say why it is refused
        (and count nothing)."""
        if self.total >= self.max_connections:
            return f"max.connections={self.max_connections} reached"
        limit = self.limit_for(address)
        if self.per_ip[address] >= limit:
            return f"{address} already has the maximum of {limit} connections"
        self.total += 1
        self.per_ip[address] += 1
        return None

    def release(self, address: str) -> None:
        self.total -= 1
        self.per_ip[address] -= 1
        if not self.per_ip[address]:
            del self.per_ip[address]


def raise_open_files_limit() -> None:
    """Raise the soft limit on open descriptors to the hard one, as the JVM that runs Kafka
    does at start on Linux (HotSpot's MaxFDLimit, on by default): a broker holds a descriptor
    per connection and per segment, and a shell's usual soft limit (1,024) is reached by
    1,000 clients. The hard limit is the administrator's (`ulimit -Hn`); kmock stays below it.
    """
    try:
        import resource
    except ImportError:  # not a POSIX system
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as e:  # e.g. macOS refuses more than OPEN_MAX
        log.debug("open files limit stays %d: %s", soft, e)
        return
    log.debug("open files limit raised from %d to %d", soft, hard)
