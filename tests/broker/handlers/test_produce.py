"""Produce through the in-process broker and real frames (our own codec as the client):
every served version, each per-partition refusal, the request-level refusals and acks=0.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import trio

from protocol.compression import CompressionType
from protocol.errors import ErrorCode
from protocol.messages.create_topics import CreatableTopicConfig
from protocol.messages.metadata import MetadataRequest
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records import build_batch
from protocol.releases import accepts
from storage.layout import OFFSETS_TOPIC
from tests.reliability.inproc import (
    T0,
    contents,
    create,
    create_topics_request,
    produce_request,
    running,
)
from tests.wire import WireClient, request_bytes


def batch(*values: bytes, **kw: Any) -> bytes:
    return build_batch([(None, v, (), T0) for v in values], **kw)


def request(
    partitions: dict[tuple[str, int], bytes | None],
    *,
    acks: int = -1,
    transactional_id: str | None = None,
) -> ProduceRequest:
    """One Produce of the given batches, topic by topic in the order given."""
    topics: dict[str, list[PartitionProduceData]] = {}
    for (topic, index), records in partitions.items():
        topics.setdefault(topic, []).append(PartitionProduceData(index=index, records=records))
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=5000,
        topic_data=[TopicProduceData(name=t, partition_data=p) for t, p in topics.items()],
    )


def answers(response: Any) -> dict[tuple[str, int], tuple[int, int]]:
    return {
        (t.name, p.index): (p.error_code, p.base_offset)
        for t in response.responses
        for p in t.partition_responses
    }


# The versions served with kafka.version unset: v0-2 (message formats v0/v1) are served
# under older releases only (tests/broker/handlers/test_legacy_formats.py).
SERVED = [v for v in ProduceRequest.VERSIONS if accepts(None, ProduceRequest.API_KEY, v)]


async def test_every_version_appends_and_answers_the_base_offset(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            topic_id = broker.topics.get("t").topic_id
            for i, version in enumerate(SERVED):
                request = produce_request("t", b"v%d" % version)
                if version >= 13:  # by topic id (KIP-516)
                    topic = replace(request.topic_data[0], name="", topic_id=topic_id)
                    request = replace(request, topic_data=[topic])
                response = await client.call(request, version)
                (answer,) = response.responses
                assert (answer.topic_id if version >= 13 else answer.name) == (
                    topic_id if version >= 13 else "t"
                )
                (part,) = answer.partition_responses
                assert (part.error_code, part.base_offset) == (ErrorCode.NONE, i)
                assert part.log_start_offset == (0 if version >= 5 else -1)
                assert part.log_append_time_ms == -1  # CreateTime topic
            assert await contents(broker, "t") == {i: f"v{v}" for i, v in enumerate(SERVED)}
            assert broker.metrics.messages_in.labels("t").value == len(SERVED)


async def test_each_partition_is_refused_on_its_own_and_the_others_are_appended(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path, **{"message.max.bytes": "200"}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            broker.coordinator.offsets_topic()
            corrupt = bytearray(batch(b"x"))
            corrupt[-1] ^= 0xFF  # the CRC covers the records
            sent = {
                ("t", 0): batch(b"ok"),
                ("t", 7): batch(b"no such partition"),
                ("missing", 0): batch(b"no such topic"),
                (OFFSETS_TOPIC, 0): batch(b"internal"),
            }
            response = await client.call(request(sent), 9)
            assert answers(response) == {
                ("t", 0): (ErrorCode.NONE, 0),
                ("t", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
                ("missing", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
                (OFFSETS_TOPIC, 0): (ErrorCode.INVALID_TOPIC_EXCEPTION, -1),
            }
            for records, code in [
                (None, ErrorCode.INVALID_RECORD),
                (batch(b"a") + batch(b"b"), ErrorCode.INVALID_RECORD),
                (bytes(corrupt), ErrorCode.CORRUPT_MESSAGE),
                (batch(b"t", producer_id=1, producer_epoch=0, base_sequence=0,
                       is_transactional=True), ErrorCode.INVALID_RECORD),
                (batch(b"x" * 300), ErrorCode.MESSAGE_TOO_LARGE),
            ]:  # fmt: skip
                response = await client.call(request({("t", 0): records}), 9)
                assert answers(response) == {("t", 0): (code, -1)}, code
            assert await contents(broker, "t") == {0: "ok"}


async def test_bad_acks_and_plain_batches_with_a_transactional_id_are_refused_everywhere(
    tmp_path,
):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            sent = {("t", 0): batch(b"a"), ("t", 1): batch(b"b")}
            response = await client.call(request(sent, acks=2), 9)
            assert set(answers(response).values()) == {(ErrorCode.INVALID_REQUIRED_ACKS, -1)}
            response = await client.call(request(sent, transactional_id="tx"), 9)
            # Kafka's ProduceRequest.validateRecords: a transactional id with plain batches.
            assert answers(response) == {
                ("t", 0): (ErrorCode.INVALID_RECORD, -1),
                ("t", 1): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
            }
            assert await contents(broker, "t") == {}


async def test_acks_zero_appends_and_sends_no_response(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await client.send_raw(
                request_bytes(produce_request("t", b"quiet", acks=0), 9, correlation_id=999_999)
            )
            # The next answer on the connection is the Metadata's (WireClient checks the
            # correlation id), so the Produce got none.
            metadata = await client.call(MetadataRequest(topics=None), 9)
            assert [t.name for t in metadata.topics] == ["t"]
            assert await contents(broker, "t") == {0: "quiet"}


async def test_produce_v13_to_an_unknown_topic_id_is_unknown_topic_id(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            request = produce_request("t", b"x")
            unknown = uuid.uuid4()
            request = replace(
                request, topic_data=[replace(request.topic_data[0], name="", topic_id=unknown)]
            )
            (answer,) = (await client.call(request, 13)).responses
            assert answer.topic_id == unknown
            assert answer.partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_a_compacted_topic_refuses_a_batch_with_a_keyless_record(tmp_path):
    # Kafka's LogValidator.validateKey: INVALID_RECORD with one record error per key-less
    # record, and nothing of the batch appended; keyed records go in.
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            create_req = create_topics_request("c", 1)
            topic = replace(
                create_req.topics[0],
                configs=[CreatableTopicConfig(name="cleanup.policy", value="compact")],
            )
            created = await client.call(replace(create_req, topics=[topic]), 7)
            assert created.topics[0].error_code == ErrorCode.NONE
            for codec in (CompressionType.NONE, CompressionType.GZIP):
                records = build_batch(
                    [(b"k", b"1", (), T0), (None, b"2", (), T0), (None, b"3", (), T0)],
                    compression=codec,
                )
                response = await client.call(request({("c", 0): records}), 9)
                (part,) = response.responses[0].partition_responses
                assert (part.error_code, part.base_offset) == (ErrorCode.INVALID_RECORD, -1)
                assert [e.batch_index for e in part.record_errors] == [1, 2]
                assert part.record_errors[0].batch_index_error_message == (
                    "Compacted topic cannot accept message without key in topic partition c-0"
                )
                assert part.error_message.startswith(
                    "One or more records have been rejected due to 2 record errors"
                )
            assert broker.topics.partition("c", 0).log.log_end_offset == 0
            keyed = build_batch([(b"k", b"1", (), T0)])
            response = await client.call(request({("c", 0): keyed}), 9)
            assert answers(response) == {("c", 0): (ErrorCode.NONE, 0)}
