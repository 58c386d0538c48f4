"""Connection limits: frame size, connection count, idle timeout, slow readers, half-open
connections, many connections at once. In each case the broker sheds the one connection
(or refuses it) and everyone else keeps being served.

Most tests run the broker in process. The slow-reader test runs it as a process, because
what it checks is the broker's own memory and the kernel's view of its sockets.
"""

from __future__ import annotations

import gc
import socket
import struct
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
import trio

from client import KafkaClient
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.metadata import MetadataRequest
from protocol.records import build_batch, iter_batches
from tests.reliability.inproc import (
    create,
    create_partitions_request,
    create_topics_request,
    delete,
    produce,
    running,
)
from tests.reliability.process import BrokerProcess, poll_until
from tests.wire import WireClient, read_frame, request_bytes

MB = 1024 * 1024


async def _serves(broker: Any) -> None:
    client = await WireClient.connect(broker)
    try:
        assert (await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
    finally:
        await client.aclose()


def _api_versions_of_size(size: int, correlation_id: int = 1) -> bytes:
    """An ApiVersions v3 request whose frame (after the size prefix) is `size` bytes."""
    base = request_bytes(
        ApiVersionsRequest(client_software_name="", client_software_version=""),
        3,
        correlation_id=correlation_id,
    )
    pad = size - (len(base) - 4)
    # A compact string's length varint grows by one byte at 127 and at 16383 characters.
    for extra in range(3):
        name = "n" * (pad - extra)
        data = request_bytes(
            ApiVersionsRequest(client_software_name=name, client_software_version=""),
            3,
            correlation_id=correlation_id,
        )
        if len(data) - 4 == size:
            return data
    raise AssertionError(f"cannot build an ApiVersions of {size} bytes")


# --- frame size ------------------------------------------------------------------------


async def test_frame_at_the_size_limit_is_served_and_one_byte_more_closes(tmp_path: Path) -> None:
    limit = 4096
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"socket.request.max.bytes": limit}) as broker:
            client = await WireClient.connect(broker)
            await client.send_raw(_api_versions_of_size(limit, correlation_id=7))
            reply = await read_frame(client.stream)
            assert reply is not None
            assert struct.unpack_from(">i", reply)[0] == 7
            await client.send_raw(_api_versions_of_size(limit + 1))
            assert await client.is_closed_by_peer()
            # Announcing a huge frame is refused on its size alone: nothing more is read.
            client = await WireClient.connect(broker)
            await client.send_raw(struct.pack(">i", 64 * MB))
            assert await client.is_closed_by_peer()
            await _serves(broker)


# --- connection count ------------------------------------------------------------------


async def test_connections_over_max_connections_are_refused_and_slots_come_back(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"max.connections": 5}) as broker:
            clients = [await WireClient.connect(broker) for _ in range(5)]
            for c in clients:
                assert (await c.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            extra = await WireClient.connect(broker)
            await extra.send_raw(request_bytes(ApiVersionsRequest(), 3))
            assert await extra.is_closed_by_peer()
            for c in clients:  # the ones inside the limit are not disturbed
                assert (await c.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            await clients.pop().aclose()
            # The broker sees the close when it reads EOF; until then a new connection is
            # still over the limit. Each attempt is a real connection, no waiting in between.
            for _ in range(200):
                newcomer = await WireClient.connect(broker)
                await newcomer.send_raw(request_bytes(ApiVersionsRequest(), 3))
                if await read_frame(newcomer.stream) is not None:
                    break
                await newcomer.aclose()
            else:
                raise AssertionError("no slot came back after a client left")
            for c in [*clients, newcomer]:
                await c.aclose()


# --- idle and half-open connections ------------------------------------------------------


@pytest.mark.parametrize(
    "sent", [b"", request_bytes(ApiVersionsRequest(), 3)[:6]], ids=["idle", "half-sent-frame"]
)
async def test_connection_without_traffic_is_closed_after_connections_max_idle_ms(
    tmp_path: Path, sent: bytes
) -> None:
    idle_ms = 300
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"connections.max.idle.ms": idle_ms}) as broker:
            client = await WireClient.connect(broker)
            assert (await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            await client.send_raw(sent)  # a peer that went away mid-frame, or just stopped
            started = time.monotonic()
            assert await client.is_closed_by_peer()
            assert time.monotonic() - started >= idle_ms / 1000 * 0.9
            await _serves(broker)


async def test_many_connections_at_once_are_all_served(tmp_path: Path) -> None:
    connections = 300
    with trio.fail_after(60):
        async with running(tmp_path / "data") as broker:
            answered = 0

            async def one() -> None:
                nonlocal answered
                client = await WireClient.connect(broker)
                try:
                    response = await client.call(MetadataRequest(topics=None), 9)
                    assert response.brokers
                    answered += 1
                finally:
                    await client.aclose()

            async with trio.open_nursery() as nursery:
                for _ in range(connections):
                    nursery.start_soon(one)
            assert answered == connections


# --- slow readers ------------------------------------------------------------------------


def _established(port: int) -> int:
    """Connections the broker (listening on `port`) holds open, as the kernel sees them
    (/proc/net/tcp: its end of each; a socket it closed is no longer ESTABLISHED, even while
    a FIN waits behind data the peer never reads)."""
    return sum(1 for local, _, state, _ in tcp_sockets() if local == port and state == "01")


def tcp_sockets() -> list[tuple[int, int, str, str]]:
    """(local port, remote port, state, inode) of every IPv4 TCP socket (/proc/net/tcp);
    state "01" is TCP_ESTABLISHED, "08" TCP_CLOSE_WAIT."""
    sockets = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local = int(fields[1].rsplit(":", 1)[1], 16)
        remote = int(fields[2].rsplit(":", 1)[1], 16)
        sockets.append((local, remote, fields[3], fields[9]))
    return sockets


def _queued(port: int) -> list[int]:
    """Bytes each connection of the broker (listening on `port`) has queued to send and not
    yet had acknowledged (/proc/net/tcp's tx_queue, its end of each ESTABLISHED one)."""
    queued = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
            queued.append(int(fields[4].split(":")[0], 16))
    return queued


def _slow_reader(port: int, topic: str, fetches: int) -> socket.socket:
    """A client that asks for a lot (pipelined Fetches of the whole partition) and then
    never reads a byte of the answers."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=64 * MB,
        isolation_level=0,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=64 * MB)
                ],
            )
        ],
    )
    payload = b"".join(request_bytes(request, 11, correlation_id=i) for i in range(fetches))
    try:
        while payload:
            payload = payload[sock.send(payload) :]
    except BlockingIOError:
        pass  # the broker stopped reading: its answers are waiting on us
    return sock


# A Fetch response's records of 64 KiB or more are sent from the segment file
# (broker.sendfile): what a reader that never reads pins is then a descriptor and a task, not
# the records. With the request journal on (the admin endpoint) they are read into memory
# (4 MB per response here), which the close must give back.
@pytest.mark.parametrize("journal", [False, True], ids=["records-from-file", "records-in-memory"])
def test_clients_that_never_read_are_disconnected_and_do_not_hold_memory(
    tmp_path: Path, journal: bool
) -> None:
    """Kafka counts a connection that makes no progress in either direction as idle: a
    client that stops reading its responses is closed after connections.max.idle.ms, like
    one that stops sending. Without that, each such client pins a task, a descriptor and a
    response (here 4 MB, when it is in memory) for as long as it likes, and enough of them
    exhaust the broker."""
    idle_ms = 1000
    readers = 20
    overrides: dict[str, Any] = {"connections.max.idle.ms": idle_ms}
    env = {}
    if journal:
        overrides["admin.port"] = 0
        # RSS then measures what the broker holds: glibc's malloc otherwise serves the 4 MB
        # buffers from its heap once one has been freed (its mmap threshold grows to their
        # size) and keeps the freed heap for reuse, so RSS stays up after every buffer is
        # gone (malloc_trim gives it back). A fixed threshold keeps them mmap'ed, each
        # returned to the system when freed.
        env["MALLOC_MMAP_THRESHOLD_"] = str(128 * 1024)
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs", overrides=overrides, env=env)
    broker.start()
    socks: list[socket.socket] = []
    try:
        with KafkaClient(broker.bootstrap) as client:
            client.create_topic("big", num_partitions=1)
            for i in range(4):
                client.produce("big", 0, build_batch([(None, bytes(1000 * 1024), (), i)]))
        baseline = broker.rss_bytes()
        socks = [_slow_reader(broker.port, "big", 8) for _ in range(readers)]
        # All open now (the kernel's side of each, accepted or not): from here on the
        # broker may close any that has made no progress for connections.max.idle.ms.
        assert _established(broker.port) == readers
        with KafkaClient(broker.bootstrap, timeout_s=10) as client:  # others still served
            assert client.partition_count("big") == 1
        if journal:
            pinned = poll_until(
                lambda: broker.rss_bytes() - baseline > 20 * MB and broker.rss_bytes(),
                10,
                "the slow readers' responses to be built",
            )
        else:
            poll_until(
                lambda: (q := _queued(broker.port)) and all(q),
                10,
                "the broker's sends to every slow reader still open to back up",
            )
            pinned = broker.rss_bytes()
            assert pinned - baseline < 20 * MB, "records sent from the file were kept in memory"
        deadline_s = idle_ms / 1000 * 2 + 5
        try:
            poll_until(
                lambda: _established(broker.port) == 0,
                deadline_s,
                "the broker to close connections that never read",
            )
        except AssertionError:
            open_ = _established(broker.port)
            raise AssertionError(
                f"{open_} of {readers} connections that never read are still open "
                f"{deadline_s:g} s after connections.max.idle.ms={idle_ms}; the broker holds "
                f"{(broker.rss_bytes() - baseline) / MB:.0f} MB more than before them "
                f"(peak seen {(pinned - baseline) / MB:.0f} MB)"
            ) from None
        poll_until(
            lambda: broker.rss_bytes() - baseline < 30 * MB,
            10,
            "the broker to let go of the slow readers' responses",
        )
        with KafkaClient(broker.bootstrap, timeout_s=10) as client:
            assert client.partition_count("big") == 1
    finally:
        for s in socks:
            s.close()
        broker.kill()
    assert not broker.problems(), broker.problems()


# --- requests that ask the broker for unbounded work -------------------------------------

_HUGE = 1_000_000


def _huge_create_topics() -> bytes:
    return request_bytes(create_topics_request("huge", _HUGE), 5)


def _huge_create_partitions() -> bytes:
    return request_bytes(create_partitions_request("small", _HUGE), 2)


@pytest.mark.parametrize(
    "request_frame",
    [_huge_create_topics, _huge_create_partitions],
    ids=["CreateTopics", "CreatePartitions"],
)
def test_a_request_for_a_million_partitions_is_refused_without_stalling_the_broker(
    tmp_path: Path, request_frame: Any
) -> None:
    """Every partition is a directory, files and an open descriptor. One request asking
    for a million of them must be refused (Kafka's controller validates the count against
    its limits too), not carried out on the event loop: meanwhile no other client is
    served, and the descriptors run out long before a million."""
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs")
    broker.start()
    try:
        with KafkaClient(broker.bootstrap) as client:
            client.create_topic("small", num_partitions=1)
        asker = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        asker.sendall(request_frame())
        started = time.monotonic()
        try:
            with KafkaClient(broker.bootstrap, timeout_s=2) as other:
                assert other.partition_count("small") == 1
        except Exception as e:
            raise AssertionError(
                f"another client got no answer within 2 s while the broker worked on the "
                f"request ({e})"
            ) from None
        (size,) = struct.unpack(">i", _recv_exactly(asker, 4))
        reply = _recv_exactly(asker, size)
        assert time.monotonic() - started < 10
        assert reply  # answered (refused), not dropped
        assert broker.is_running()
    finally:
        broker.kill()
    partitions = [
        d
        for d in (tmp_path / "data").iterdir()
        if d.name.startswith("huge-") or d.name.startswith("small-")
    ]
    assert len(partitions) <= 1000, f"{len(partitions)} partition directories were created"


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise AssertionError("the broker closed the connection instead of answering")
        buf += chunk
    return buf


# --- churn -------------------------------------------------------------------------------


async def test_deleted_topics_do_not_stay_in_memory(tmp_path: Path) -> None:
    """Test suites pointed at a dev broker create and delete topics all day: whatever the
    broker kept for a deleted topic's logs must go with it (here, its group-commit state
    held every Log it had ever fsynced)."""
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            client = await WireClient.connect(broker)
            logs = []
            for i in range(10):
                name = f"churn-{i}"
                await create(client, name)
                logs.append(weakref.ref(broker.topics.get(name).partitions[0].log))
                assert (await produce(client, name, b"x"))[0] == ErrorCode.NONE  # acks=all
                await delete(client, name)
            await client.aclose()
            gc.collect()
            kept = sum(ref() is not None for ref in logs)
            assert kept == 0, f"{kept} of 10 deleted partitions' logs are still referenced"


def test_a_topic_with_more_partitions_than_open_files_allow_is_refused_cleanly(
    tmp_path: Path,
) -> None:
    """Each partition keeps its active segment open. With the common limit of 1024 open
    files, a topic of 2,000 partitions (well within any per-request cap) cannot be opened:
    the request must be answered with an error for that topic, leave nothing half-created
    behind, and leave the broker able to create the next, reasonable topic."""
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs", max_open_files=1024)
    broker.start()
    try:
        with KafkaClient(broker.bootstrap, timeout_s=60) as client:
            try:
                client.create_topic("many", num_partitions=2000)
            except KafkaError as e:
                refused: Exception | None = e
            except Exception as e:
                raise AssertionError(f"not answered with an error for the topic: {e!r}") from None
            else:
                refused = None
        # Every partition holds its active segment's descriptor: 2,000 cannot fit in 1,024.
        assert refused is not None, "2,000 partitions created under a limit of 1,024 files"
        with KafkaClient(broker.bootstrap, timeout_s=10) as client:
            client.create_topic("reasonable", num_partitions=3)
            assert client.partition_count("reasonable") == 3
        assert not [d for d in (tmp_path / "data").iterdir() if d.name.startswith("many-")]
        assert broker.is_running()
    finally:
        broker.kill()
    assert not broker.problems(), broker.problems()


# --- fetch.max.bytes ---------------------------------------------------------------------


def _fetch(topic: str, *, max_bytes: int, min_bytes: int, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=MB)],
            )
        ],
    )


async def test_fetch_max_bytes_caps_what_a_fetch_asks_for(tmp_path: Path) -> None:
    # Kafka's KafkaApis.handleFetchRequest: max_bytes = min(max_bytes, fetch.max.bytes),
    # min_bytes = min(min_bytes, that); the first batch still comes whole (KIP-74).
    cap = 4096
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"fetch.max.bytes": cap}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "big", "small")
            assert (await produce(client, "big", bytes(10_000)))[0] == ErrorCode.NONE
            for i in range(10):
                assert (await produce(client, "small", bytes(1000), timestamp=i))[0] == 0
            # Ten batches of about 1,070 bytes, a request for 1 MB: what fits in 4,096.
            response = await client.call(
                _fetch("small", max_bytes=MB, min_bytes=1, max_wait_ms=0), 12
            )
            records = bytes(response.responses[0].partitions[0].records)
            assert 0 < len(records) <= cap
            assert len(list(iter_batches(records))) == 3
            # min_bytes of 1 MB, capped to 4,096: the 10 KB first batch answers at once, not
            # after max_wait_ms.
            started = trio.current_time()
            response = await client.call(
                _fetch("big", max_bytes=MB, min_bytes=MB, max_wait_ms=20_000), 12
            )
            assert trio.current_time() - started < 10
            assert len(bytes(response.responses[0].partitions[0].records)) > 10_000
            await client.aclose()
