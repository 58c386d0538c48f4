"""Wire-level behaviour of a connection: version negotiation and bad input.

Each malformed input gets the answer Kafka gives (UNSUPPORTED_VERSION for ApiVersions,
CORRUPT_MESSAGE for a bad batch, otherwise a clean close), and other connections keep
working throughout.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
import trio
from kafka.protocol.broker_version_data import (
    BROKER_API_VERSIONS,
    infer_broker_version_from_api_versions,
)

from broker import routes
from broker.connection import _unsent
from protocol.errors import ErrorCode
from protocol.frames import parse_response_header
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records import build_batch
from protocol.schema import decode
from tests.reliability.inproc import create, produce_request
from tests.wire import WireClient, read_frame, request_bytes


async def _still_serving(broker):
    client = await WireClient.connect(broker)
    response = await client.call(ApiVersionsRequest(), 3)
    await client.aclose()
    assert response.error_code == ErrorCode.NONE


def _produce(acks: int) -> ProduceRequest:
    return produce_request("a0", b"x", acks=acks, timestamp=1, timeout_ms=1000)


async def test_api_versions_lists_every_routed_api(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        response = await client.call(
            ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
        )
        keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert keys[18] == (0, 4)
        assert keys[0] == (0, 13)  # v0-2 advertised, as Kafka 4.x does (KAFKA-18659)
        assert keys[1] == (4, 18)
        assert keys[11] == (0, 9)
        assert keys[24] == (0, 5)  # AddPartitionsToTxn, client and broker forms
        assert keys[26] == (0, 5)  # EndTxn


async def test_api_versions_is_kafka_4_1s_answer_for_every_api_served(broker):
    # kafka-python keeps the ApiVersions answer of each Kafka release it was tested against;
    # for every API kmock serves, kmock's ranges are Kafka 4.1's, and kafka-python's own
    # inference reads 4.1 from them.
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        response = await client.call(
            ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
        )
    ours = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    kafka_41 = dict(BROKER_API_VERSIONS[(4, 1)])
    # Not yet implemented, listed in README's differences: TxnOffsetCommit v5 (the implicit
    # group add of KIP-890 part 2) and ListTransactions v2 (transactional id pattern).
    assert ours.pop(28) == (0, 4)
    assert kafka_41[28] == (0, 5)
    assert ours.pop(66) == (0, 1)
    assert kafka_41[66] == (0, 2)
    assert {key: kafka_41[key] for key in ours} == ours
    assert infer_broker_version_from_api_versions(ours) == (4, 1)


async def test_api_versions_with_unsupported_version_answers_v0_with_our_versions(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        # A future ApiVersions v9: the body is unknown to us, the header is v2.
        frame = struct.pack(">hhih", 18, 9, 77, 3) + b"cli" + b"\x00" + b"\x00"
        await client.send_raw(struct.pack(">i", len(frame)) + frame)
        reply = await read_frame(client.stream)
        correlation_id, pos = parse_response_header(reply, False)
        assert correlation_id == 77
        response = decode(ApiVersionsResponse, 0, reply, pos)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert any(k.api_key == 18 and k.max_version == 4 for k in response.api_keys)
        # The connection stays usable for the downgraded request.
        assert (await client.call(ApiVersionsRequest(), 3)).error_code == 0


async def test_unsupported_version_of_another_api_closes_the_connection(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        frame = struct.pack(">hhih", 3, 99, 1, -1)
        await client.send_raw(struct.pack(">i", len(frame)) + frame)
        assert await client.is_closed_by_peer()
        await _still_serving(broker)


async def test_unknown_api_key_closes_the_connection(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        frame = struct.pack(">hhih", 999, 0, 1, -1)
        await client.send_raw(struct.pack(">i", len(frame)) + frame)
        assert await client.is_closed_by_peer()
        await _still_serving(broker)


async def test_garbage_bytes_close_the_connection(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        # Metadata v5 whose client id claims 0x7fff bytes of a 12-byte rest.
        await client.send_raw(
            struct.pack(">i", 20)
            + b"\x00\x03\x00\x05"
            + b"\x00\x00\x00\x01"
            + b"\x7f\xff"
            + b"\xfe" * 10
        )
        assert await client.is_closed_by_peer()
        await _still_serving(broker)


async def test_truncated_body_closes_the_connection(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        data = request_bytes(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 4)
        body = data[4:-3]  # the frame says it ends here: the last field is cut short
        await client.send_raw(struct.pack(">i", len(body)) + body)
        assert await client.is_closed_by_peer()
        await _still_serving(broker)


async def test_oversized_frame_closes_the_connection_without_reading_it(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        await client.send_raw(struct.pack(">i", 2**31 - 1) + b"\x00" * 16)
        assert await client.is_closed_by_peer()
        await _still_serving(broker)


async def test_negative_frame_size_closes_the_connection(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        await client.send_raw(struct.pack(">i", -5))
        assert await client.is_closed_by_peer()
        await _still_serving(broker)


async def test_client_closing_mid_frame_does_not_hurt_the_server(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        await client.send_raw(struct.pack(">i", 100) + b"\x00\x12")
        await client.aclose()
        await _still_serving(broker)


async def test_batch_with_bad_crc_gets_corrupt_message(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        meta = await client.call(
            MetadataRequest(
                topics=[MetadataRequestTopic(name="crc")], allow_auto_topic_creation=True
            ),
            9,
        )
        assert meta.topics[0].error_code == 0
        batch = bytearray(build_batch([(b"k", b"v", (), 1000)]))
        batch[-1] ^= 0xFF  # inside the CRC-covered records
        request = ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                TopicProduceData(
                    name="crc", partition_data=[PartitionProduceData(index=0, records=bytes(batch))]
                )
            ],
        )
        response = await client.call(request, 9)
        part = response.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.CORRUPT_MESSAGE
        # Nothing was written.
        assert broker.topics.get("crc").partitions[0].log.log_end_offset == 0
        good = build_batch([(b"k", b"v", (), 1000)])
        request = ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                TopicProduceData(
                    name="crc", partition_data=[PartitionProduceData(index=0, records=good)]
                )
            ],
        )
        part = (await client.call(request, 9)).responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (0, 0)


async def test_bytes_after_a_complete_request_are_ignored_as_kafka_does(broker):
    # librdkafka 2.16 sends three extra bytes after a Metadata v12 for all topics.
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        data = request_bytes(MetadataRequest(topics=None), 12, correlation_id=9)
        body = data[4:] + b"\x01\x00\x00"
        await client.send_raw(struct.pack(">i", len(body)) + body)
        frame = await read_frame(client.stream)
        assert frame is not None
        assert parse_response_header(frame, True)[0] == 9


async def test_responses_follow_request_order_when_pipelined(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        payload = b"".join(
            request_bytes(ApiVersionsRequest(), 2, correlation_id=i) for i in range(1, 21)
        )
        await client.send_raw(payload)
        for i in range(1, 21):
            frame = await read_frame(client.stream)
            assert parse_response_header(frame, False)[0] == i


async def test_acks_zero_produce_gets_no_response(broker):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        await create(client, "a0")
        await client.send_raw(request_bytes(_produce(acks=0), 9, correlation_id=5))
        # The next response on the connection is for the next request, not the produce.
        response = await client.call(ApiVersionsRequest(), 3)
        assert response.error_code == 0
        assert broker.topics.get("a0").partitions[0].log.log_end_offset == 1


def test_a_partial_writev_leaves_exactly_the_unsent_bytes() -> None:
    chunks = [b"abc", b"", memoryview(b"defg"), bytearray(b"h"), b"ij"]
    data = b"abcdefghij"
    for sent in range(len(data) + 1):
        rest = _unsent(list(chunks), sent)
        assert b"".join(bytes(c) for c in rest) == data[sent:]
        assert all(len(c) for c in rest[:1])  # never starts with an empty chunk


@pytest.fixture
def failing_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    """DescribeCluster and Produce handlers that raise what no handler may: a bug."""

    async def bug(ctx: Any, request: Any) -> Any:
        raise RuntimeError("a bug in a handler")

    for request_class in (DescribeClusterRequest, ProduceRequest):
        key = request_class.API_KEY
        route = routes.route_for(key)
        assert route is not None
        failing = routes.new_route(key, route.module, route.versions)
        failing.handler = failing.alone = bug  # alone: the handler of a single broker
        monkeypatch.setitem(routes._BY_KEY, key, failing)


@pytest.mark.expect_errors  # the bug's traceback
async def test_a_failing_handler_is_answered_unknown_server_error_as_kafka_does(
    broker, failing_handlers
):
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        response = await client.call(DescribeClusterRequest(), 1)
        assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        produced = await client.call(_produce(acks=1), 9)
        [partition] = produced.responses[0].partition_responses
        assert (partition.index, partition.error_code) == (0, ErrorCode.UNKNOWN_SERVER_ERROR)
        # The connection stays open, as Kafka keeps it.
        assert (await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE


@pytest.mark.expect_errors  # the bug's traceback
async def test_a_failing_acks_zero_produce_closes_the_connection_as_kafka_does(
    broker, failing_handlers
):
    # acks=0 has no response to carry the error: closing is how the producer learns of it.
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        await client.send_raw(request_bytes(_produce(acks=0), 9, correlation_id=5))
        assert await client.is_closed_by_peer()
        await _still_serving(broker)
