"""A Produce waiting for its fsync (kmock.durability=strict) does not hold its connection
(broker.connection).

The fsync is held back by a gate on the broker's Durability, so what the connection does
meanwhile can be watched: it reads and appends the next requests, answers nothing out of
order, stops reading once MAX_DEFERRED responses wait or a ready response waits behind
them, and delivers what it owes before it closes. A long-polling Fetch on a second
connection is the barrier that says a batch has been appended.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
import trio
import trio.testing

from broker.connection import MAX_DEFERRED
from protocol.errors import ErrorCode
from protocol.frames import parse_response_header
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from protocol.messages.produce import ProduceRequest, ProduceResponse
from protocol.schema import decode
from tests.reliability.inproc import create, produce_request
from tests.wire import WireClient, read_frame, request_bytes

TOPIC = "piped"


def _produce(value: bytes, acks: int = -1) -> ProduceRequest:
    return produce_request(TOPIC, value, acks=acks, timestamp=1, timeout_ms=30_000)


@pytest.fixture
async def gate(broker: Any, fsync_gate: trio.Event) -> trio.Event:
    """Make a topic, then hold every acks=all Produce before its fsync until the event (in
    the strict durability mode, where an acks=all Produce waits for one)."""
    client = await WireClient.connect(broker)
    await create(client, TOPIC)
    await client.aclose()
    return fsync_gate


async def _appended(broker: Any, offset: int) -> None:
    """Return once the record at `offset` is in the log, seen by long-polling Fetches (each
    from the log end of the moment, which waits until something is appended)."""
    client = await WireClient.connect(broker)
    while (end := _log_end(broker)) <= offset:
        request = FetchRequest(
            max_wait_ms=20_000,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            topics=[
                FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=end, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        )
        response: FetchResponse = await client.call(request, 11)
        assert response.responses[0].partitions[0].error_code == ErrorCode.NONE
    await client.aclose()


async def _responses(client: WireClient, count: int) -> list[tuple[int, bytes]]:
    out = []
    for _ in range(count):
        frame = await read_frame(client.stream)
        assert frame is not None, "connection closed instead of a response"
        correlation_id, pos = parse_response_header(frame, True)  # v9: flexible
        out.append((correlation_id, frame[pos:]))
    return out


def _log_end(broker: Any) -> int:
    return int(broker.topics.partition(TOPIC, 0).log.log_end_offset)


async def test_the_next_produce_is_handled_while_a_produce_waits_for_its_fsync(
    broker: Any, gate: trio.Event
) -> None:
    with trio.fail_after(30):
        client = await WireClient.connect(broker)
        metadata = MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)])
        await client.send_raw(
            request_bytes(_produce(b"a"), 9, correlation_id=1)
            + request_bytes(_produce(b"b"), 9, correlation_id=2)
            + request_bytes(metadata, 9, correlation_id=3)
            + request_bytes(_produce(b"c", acks=1), 9, correlation_id=4)
        )
        # The second Produce was read and appended although the first is not answered.
        await _appended(broker, 1)
        await trio.testing.wait_all_tasks_blocked()
        # The Metadata response is ready but waits behind them: the connection reads no
        # further until it is sent, so the fourth request is not handled yet.
        assert _log_end(broker) == 2
        gate.set()
        got = await _responses(client, 4)
        assert [c for c, _ in got] == [1, 2, 3, 4]  # request order, whatever was ready first
        bases = [
            decode(ProduceResponse, 9, body, 0).responses[0].partition_responses[0].base_offset
            for c, body in got
            if c != 3
        ]
        assert bases == [0, 1, 2]
        assert decode(MetadataResponse, 9, got[2][1], 0).topics[0].name == TOPIC


async def test_a_connection_stops_reading_when_max_queued_responses_wait(
    broker: Any, gate: trio.Event
) -> None:
    with trio.fail_after(30):
        client = await WireClient.connect(broker)
        total = MAX_DEFERRED + 2
        await client.send_raw(
            b"".join(request_bytes(_produce(b"%d" % i), 9, correlation_id=i) for i in range(total))
        )
        await _appended(broker, MAX_DEFERRED - 1)
        await trio.testing.wait_all_tasks_blocked()
        # MAX_DEFERRED responses wait: the connection reads nothing more until one goes out.
        assert _log_end(broker) == MAX_DEFERRED
        gate.set()
        got = await _responses(client, total)
        assert [c for c, _ in got] == list(range(total))
        assert _log_end(broker) == total


async def test_queued_responses_are_sent_before_a_bad_frame_closes_the_connection(
    broker: Any, gate: trio.Event
) -> None:
    with trio.fail_after(30):
        client = await WireClient.connect(broker)
        garbage = struct.pack(">ihhi", 8, 0, 99, 7)  # API key 0, version 99: not served
        await client.send_raw(request_bytes(_produce(b"a"), 9, correlation_id=1) + garbage)
        await _appended(broker, 0)
        gate.set()
        got = await _responses(client, 1)
        assert got[0][0] == 1
        part = decode(ProduceResponse, 9, got[0][1], 0).responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (0, 0)
        assert await client.is_closed_by_peer()
