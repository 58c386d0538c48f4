"""Produce v0-2 and Fetch v0-3 under `kafka.version` 3.9, through real frames with message
sets written by kafka-python's legacy record builder, and through kafka-python itself
speaking Kafka 0.10's versions: stored as RecordBatch v2 with the producer's codec, served
down-converted in the format each Fetch version reads."""

from __future__ import annotations

import struct

import pytest
import trio
from kafka import KafkaProducer
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from protocol.compression import CompressionType
from protocol.errors import ErrorCode
from protocol.legacy_records import LegacyRecord, build_message_set, read_message_set
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records import build_batch, decode_records, iter_batches
from tests.integration.harness import kafka_python_group_consumer
from tests.reliability.inproc import create, running
from tests.wire import WireClient

KAFKA_3_9 = {"kafka.version": "3.9"}
T = 1_700_000_000_000


def message_set(magic: int, codec: int, values: list[bytes]) -> bytes:
    if magic == 0 and codec == CompressionType.LZ4:
        # kafka-python writes magic-0 lz4 only with the optional xxhash package: ours
        # (checked against the LZ4 frame rules in tests/protocol/test_legacy_records.py).
        records = [
            LegacyRecord(i, -1, b"k" if i else None, value) for i, value in enumerate(values)
        ]
        return build_message_set(records, magic=0, compression=codec)
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, value in enumerate(values):
        builder.append(i, T + i if magic else None, b"k" if i else None, value)
    return bytes(builder.build())


def produce(records: bytes, topic: str = "t") -> ProduceRequest:
    return ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=records)]
            )
        ],
    )


def fetch(offset: int = 0, topic: str = "t") -> FetchRequest:
    return FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


def stored(broker, topic: str = "t") -> list[tuple[int, list]]:
    """(codec, [(offset, timestamp, key, value)]) of every v2 batch in the log."""
    data = broker.topics.partition(topic, 0).log.read_bytes(0, 1 << 24)
    out = []
    for pos, header in iter_batches(data):
        batch = decode_records(memoryview(data)[pos : pos + header.size])
        out.append((header.compression, [(r.offset, r.timestamp, r.key, r.value) for r in batch]))
    return out


def legacy(records: bytes) -> list[tuple]:
    """(magic, offset, timestamp, key, value) as kafka-python reads a v0/v1 message set
    (magic-0 lz4, which it reads only with xxhash, as protocol.legacy_records reads it)."""
    if bytes(records)[16] == 0 and bytes(records)[17] & 0x07 == CompressionType.LZ4:
        return [(0, r.offset, None, r.key, r.value) for r in read_message_set(records).records]
    reader = MemoryRecords(bytes(records))
    out = []
    while (batch := reader.next_batch()) is not None:
        out += [(batch.magic, r.offset, r.timestamp, r.key, r.value) for r in batch]
    return out


@pytest.mark.parametrize(
    "codec",
    [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4],
)
@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1)])
async def test_old_produce_is_stored_as_v2_with_the_producers_codec(
    tmp_path, version, magic, codec
):
    with trio.fail_after(30):
        async with running(tmp_path, **KAFKA_3_9) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            for round_ in range(2):
                response = await client.call(
                    produce(message_set(magic, codec, [b"a", b"b"])), version
                )
                (part,) = response.responses[0].partition_responses
                assert (part.error_code, part.base_offset) == (ErrorCode.NONE, 2 * round_)
                if version == 2:
                    assert part.log_append_time_ms == -1
            ts = [T, T + 1] if magic else [-1, -1]
            rows = [(0, ts[0], None, b"a"), (1, ts[1], b"k", b"b")]
            assert stored(broker) == [
                (codec, rows),
                (codec, [(o + 2, t, k, v) for o, t, k, v in rows]),
            ]
            await client.aclose()


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4])
async def test_old_fetch_is_converted_down_to_the_versions_format(tmp_path, codec):
    with trio.fail_after(30):
        async with running(tmp_path, **KAFKA_3_9) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            log = broker.topics.partition("t", 0).log
            for values in ([b"a", b"b"], [b"c"]):
                batch = build_batch(
                    [(b"k", v, [("h", b"x")], T) for v in values], compression=codec
                )
                log.append(batch, wall_ms=T)
            for version, magic in [(0, 0), (1, 0), (2, 1), (3, 1)]:
                response = await client.call(fetch(1), version)
                (part,) = response.responses[0].partitions
                assert (part.error_code, part.high_watermark) == (ErrorCode.NONE, 3)
                ts = T if magic else None
                # Records before the fetch offset (inside the first batch) are left out of an
                # uncompressed batch; a compressed one goes whole (RecordsUtil.downConvert).
                first = [] if codec == CompressionType.NONE else [(magic, 0, ts, b"k", b"a")]
                assert legacy(part.records) == [
                    *first,
                    (magic, 1, ts, b"k", b"b"),
                    (magic, 2, ts, b"k", b"c"),
                ]
            # v4 still gets the v2 batches as stored.
            response = await client.call(fetch(0), 4)
            (part,) = response.responses[0].partitions
            assert bytes(part.records)[16] == 2
            await client.aclose()


async def test_zstd_batches_are_unsupported_below_fetch_v4(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path, **KAFKA_3_9) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            batch = build_batch([(None, b"z", [], T)], compression=CompressionType.ZSTD)
            broker.topics.partition("t", 0).log.append(batch, wall_ms=T)
            response = await client.call(fetch(0), 3)
            (part,) = response.responses[0].partitions
            assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            assert not part.records
            await client.aclose()


async def test_a_corrupt_message_set_is_refused_and_nothing_appended(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path, **KAFKA_3_9) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            data = bytearray(message_set(1, 0, [b"a", b"b"]))
            data[-1] ^= 0xFF  # the last value byte: a CRC32 mismatch
            response = await client.call(produce(bytes(data)), 2)
            (part,) = response.responses[0].partition_responses
            assert part.error_code == ErrorCode.CORRUPT_MESSAGE
            assert broker.topics.partition("t", 0).log.log_end_offset == 0
            await client.aclose()


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4"])
async def test_kafka_python_speaking_kafka_0_10_round_trips(tmp_path, compression):
    # api_version=(0, 10, 1): Produce v2 with message format v1, Fetch v3.
    def run(bootstrap: str) -> list[tuple]:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, api_version=(0, 10, 1), compression_type=compression
        )
        for i in range(3):
            producer.send("old", key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=T + i)
        producer.flush(10)
        producer.close()
        # The topic's partitions learnt before the subscription: kafka-python 3.0 can send
        # a subscriber's first Metadata before it records the topic, find none, and ask
        # again only 300 s later (tests/integration/harness.py).
        consumer = kafka_python_group_consumer(
            "old",
            bootstrap_servers=bootstrap,
            api_version=(0, 10, 1),
            auto_offset_reset="earliest",
            consumer_timeout_ms=5000,
        )
        try:
            return [(m.offset, m.timestamp, m.key, m.value) for m in consumer]
        finally:
            consumer.close()

    with trio.fail_after(60):
        async with running(tmp_path, **KAFKA_3_9) as broker:
            got = await trio.to_thread.run_sync(run, broker.bootstrap_servers)
            codecs = {codec for codec, _ in stored(broker, "old")}
    assert got == [(i, T + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    expected = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3}[compression]
    assert codecs == {expected}


async def test_log_append_time_topic_stamps_old_produce_and_old_fetch(tmp_path):
    settings = {**KAFKA_3_9, "log.message.timestamp.type": "LogAppendTime"}
    with trio.fail_after(30):
        async with running(tmp_path, **settings) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            response = await client.call(produce(message_set(1, 1, [b"a", b"b"])), 2)
            (part,) = response.responses[0].partition_responses
            appended = part.log_append_time_ms
            assert part.error_code == ErrorCode.NONE
            assert appended > T  # the broker's clock, not the producer's timestamps
            response = await client.call(fetch(0), 2)
            (part,) = response.responses[0].partitions
            assert legacy(part.records) == [
                (1, 0, appended, None, b"a"),
                (1, 1, appended, b"k", b"b"),
            ]
            # The wrapper says LogAppendTime (attributes bit 3) with that time.
            attributes, timestamp = struct.unpack_from(">bq", bytes(part.records), 17)
            assert (attributes & 0x08, timestamp) == (0x08, appended)
            await client.aclose()
