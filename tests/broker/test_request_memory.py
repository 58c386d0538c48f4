"""Request memory (`queued.max.request.bytes`, broker/limits.py) and connection quotas
(`max.connections.per.ip` and its overrides), against an in-process broker whose pool and
counts the tests can read.

"The broker has read what was sent" is `trio.testing.wait_all_tasks_blocked`: loopback
delivers a send before it returns, and the broker's tasks block again once they have read
all of it (or stopped reading it).
"""

from __future__ import annotations

import contextlib
import os
import struct
from pathlib import Path

import pytest
import trio
import trio.testing

from broker.config import ConfigError, load_config
from broker.limits import DIRECT_FRAME_BYTES
from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.records import decode_records
from tests.reliability.inproc import create, produce, running
from tests.wire import WireClient, request_bytes

KIB = 1024
MIB = 1024 * 1024
SETTLE_S = 0.01  # wait_all_tasks_blocked's cushion: no task woke for this long


async def _settled() -> None:
    await trio.testing.wait_all_tasks_blocked(SETTLE_S)


async def _announce(
    broker: object, claim: int, send: int, nursery: trio.Nursery | None = None
) -> WireClient:
    """A connection that announces a Produce frame of `claim` bytes and sends `send` of it
    (in the background with `nursery`: the broker may stop reading it before the end)."""
    client = await WireClient.connect(broker)
    header = struct.pack(">ihhih", claim, 0, 9, 1, 4) + b"test" + b"\x00"
    data = header + bytes(send - len(header) + 4)
    if nursery is None:
        await client.send_raw(data)
    else:
        nursery.start_soon(_send_until_closed, client, data)
    return client


async def _send_until_closed(client: WireClient, data: bytes) -> None:
    # Closed by the broker before it read everything: what the test waits for.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await client.send_raw(data)


async def _answers(broker: object) -> bool:
    client = await WireClient.connect(broker)
    try:
        with trio.fail_after(5):
            return bool((await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE)
    finally:
        await client.aclose()


async def test_a_produce_larger_than_1_mib_is_received_mapped_and_stored_intact(
    tmp_path: Path,
) -> None:
    value = os.urandom(3 * MIB)
    settings = {"message.max.bytes": 8 * MIB}
    with trio.fail_after(30):
        async with running(tmp_path / "data", **settings) as broker:
            client = await WireClient.connect(broker)
            await create(client, "big")
            code, offset = await produce(client, "big", value)
            assert code == ErrorCode.NONE
            assert broker.memory_pool.used == 0  # given back once the request was handled
            assert broker.memory_pool.peak >= len(value)
            request = FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=16 * MIB,
                isolation_level=0,
                topics=[
                    FetchTopic(
                        topic="big",
                        partitions=[
                            FetchPartition(
                                partition=0, fetch_offset=offset, partition_max_bytes=16 * MIB
                            )
                        ],
                    )
                ],
            )
            response = await client.call(request, 11)
            records = bytes(response.responses[0].partitions[0].records)
            assert [r.value for r in decode_records(records)] == [value]
            await client.aclose()


@pytest.mark.parametrize(
    ("claim", "send"),
    [(900 * KIB, 100 * KIB), (10 * MIB, 3 * MIB)],
    ids=["frames-allocated-whole", "frames-mapped"],
)
async def test_past_queued_max_request_bytes_large_frames_wait_and_small_requests_go_on(
    tmp_path: Path, claim: int, send: int
) -> None:
    pool_bytes = 2 * MIB
    idle_ms = 1000  # the idle check wakes every 100 ms, past SETTLE_S
    settings = {"queued.max.request.bytes": pool_bytes, "connections.max.idle.ms": idle_ms}
    with trio.fail_after(30):
        async with running(tmp_path / "data", **settings) as broker:
            pool = broker.memory_pool
            async with trio.open_nursery() as senders:
                large = [await _announce(broker, claim, send, senders) for _ in range(4)]
                await _settled()
                # Reserved: what the frames took, never much past the pool (a mapped frame's
                # first 64 KiB arrive before it is reserved; a lone frame may take the pool).
                assert 0 < pool.used <= pool_bytes + len(large) * 128 * KIB
                assert pool.waits > 0, "no connection stopped reading"
                if claim <= DIRECT_FRAME_BYTES:
                    assert pool.used == 2 * claim  # two whole frames; the others wait
                assert await _answers(broker)  # small requests are not held back
                # Connections waiting for memory make no progress: closed as idle, like the
                # rest, and every reserved byte comes back.
                for client in large:
                    assert await client.is_closed_by_peer()
            await _settled()
            assert pool.used == 0
            assert await _answers(broker)


async def test_a_frame_up_to_1_mib_takes_its_size_only_once_64_kib_of_it_arrived(
    tmp_path: Path,
) -> None:
    # A frame of up to 1 MiB is received into one buffer of its size (broker.limits), but
    # not on its size prefix alone: 100 connections announce a 1 MiB Produce and send its
    # request header and one byte more, 100 send 60 KiB of it. Nothing is reserved for them
    # (what arrived waits in each connection's own buffer); 10 that send 100 KiB take 1 MiB.
    claim = DIRECT_FRAME_BYTES
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            pool = broker.memory_pool
            clients = [await _announce(broker, claim, 16) for _ in range(100)]
            clients += [await _announce(broker, claim, 60 * KIB) for _ in range(100)]
            await _settled()
            assert pool.used == 0
            clients += [await _announce(broker, claim, 100 * KIB) for _ in range(10)]
            await _settled()
            assert pool.used == 10 * claim
            assert await _answers(broker)
            for client in clients:
                await client.aclose()
            await _settled()
            assert pool.used == 0


async def test_memory_of_frames_cut_off_by_their_peer_comes_back(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            clients = [await _announce(broker, 50 * MIB, 2 * MIB) for _ in range(3)]
            clients += [await _announce(broker, 512 * KIB, 100 * KIB) for _ in range(3)]
            await _settled()
            assert broker.memory_pool.used >= 3 * 2 * MIB + 3 * 512 * KIB
            for client in clients:
                await client.aclose()
            await _settled()
            assert broker.memory_pool.used == 0
            assert await _answers(broker)


# --- connection quotas ---------------------------------------------------------------


async def _refused(client: WireClient) -> bool:
    await client.send_raw(request_bytes(ApiVersionsRequest(), 3))
    with trio.fail_after(5):
        return await client.is_closed_by_peer()


@pytest.mark.parametrize(
    ("settings", "allowed"),
    [
        ({"max.connections.per.ip": 2}, 2),
        ({"max.connections.per.ip": 2, "max.connections.per.ip.overrides": "127.0.0.1:3"}, 3),
        ({"max.connections.per.ip": 0, "max.connections.per.ip.overrides": "localhost:1"}, 1),
    ],
    ids=["per-ip", "override", "only-overrides"],
)
async def test_connections_over_max_connections_per_ip_are_closed_after_accept(
    tmp_path: Path, settings: dict[str, object], allowed: int
) -> None:
    with trio.fail_after(30):
        async with running(tmp_path / "data", **settings) as broker:
            clients = [await WireClient.connect(broker) for _ in range(allowed)]
            for c in clients:
                assert (await c.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            assert await _refused(await WireClient.connect(broker))
            assert broker.connection_quotas.per_ip["127.0.0.1"] == allowed
            await clients.pop().aclose()
            await _settled()  # the broker has seen the close: the slot is free again
            newcomer = await WireClient.connect(broker)
            assert (await newcomer.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            for c in [*clients, newcomer]:
                await c.aclose()
            await _settled()
            assert broker.connection_quotas.total == 0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max.connections.per.ip": 0}, "can be set to zero only if"),
        ({"max.connections.per.ip.overrides": "127.0.0.1"}, "is not host:count"),
        ({"max.connections.per.ip.overrides": "127.0.0.1:many"}, "is not host:count"),
    ],
)
def test_bad_connection_limits_are_refused_naming_the_setting(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        load_config(overrides=settings)
    assert "max.connections.per.ip" in str(e.value)
