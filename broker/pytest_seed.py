"""Seeding for the pytest fixture (broker.pytest_plugin): records placed and produced inside
the broker's own thread, as `KmockBroker.seed` and `seed_file` ask."""

from __future__ import annotations

from typing import Any

__all__ = ["seed_records"]

# Records per batch when seeding (kmock produce's default --batch-size).
_SEED_BATCH = 500


async def seed_records(
    broker: Any, records: list[Any], default_topic: str | None, where: Any
) -> list[tuple[str, int, int]]:
    """In the broker's thread: look the topics up (auto-creating them as a producer's
    Metadata request does), place every record (Kafka's partitioner for keyed records,
    one partition per topic for the others), check the partitions exist, then Produce."""
    import time

    from broker import routes
    from broker.context import RequestContext
    from broker.handlers import Deferred, metadata, produce
    from protocol.errors import ErrorCode, KafkaError
    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
    from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from protocol.partitioner import default_partition
    from protocol.records import build_batch

    def ctx(request: Any) -> RequestContext:
        # The newest version that names topics: Produce v13 addresses them by id (KIP-516).
        version = min(request.VERSIONS.stop - 1, 12)
        return RequestContext(broker, version, "kmock-seed", "127.0.0.1", 0, routes)

    def topic_of(record: Any) -> str:
        return str(record.topic or default_topic)  # the caller checked one of them is set

    lookup = MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in sorted({topic_of(r) for r in records})],
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    counts = {}
    for t in metadata.answer(ctx(lookup), lookup).topics:
        if t.error_code:
            raise KafkaError(ErrorCode(t.error_code), f"seeding topic {t.name!r}")
        counts[t.name] = len(t.partitions)
    now_ms = int(time.time() * 1000)
    placed: list[tuple[str, int]] = []
    by_partition: dict[tuple[str, int], list[Any]] = {}
    for r in records:
        topic = topic_of(r)
        if r.partition is not None:
            partition = r.partition
            if partition >= counts[topic]:
                raise KafkaError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"{where(r.line)}: topic {topic!r} has no partition {partition} "
                    f"(it has {counts[topic]})",
                )
        elif r.key is not None:
            partition = default_partition(r.key, counts[topic])
        else:
            partition = 0
        placed.append((topic, partition))
        by_partition.setdefault((topic, partition), []).append(
            (r.key, r.value, r.headers, now_ms if r.timestamp_ms is None else r.timestamp_ms)
        )
    firsts: dict[tuple[str, int], int] = {}
    for (topic, partition), items in by_partition.items():
        for start in range(0, len(items), _SEED_BATCH):
            request: Any = ProduceRequest(
                acks=-1,
                timeout_ms=30_000,
                topic_data=[
                    TopicProduceData(
                        name=topic,
                        partition_data=[
                            PartitionProduceData(
                                index=partition,
                                records=build_batch(items[start : start + _SEED_BATCH]),
                            )
                        ],
                    )
                ],
            )
            produce_ctx = ctx(request)
            # With several brokers, as the partition's leader (broker.cluster_state).
            produce_ctx.node_id = broker.topics.partition(topic, partition).leader
            response: Any = await produce.handle(produce_ctx, request)
            if isinstance(response, Deferred):
                response = await response.finish()
            result = response.responses[0].partition_responses[0]
            if result.error_code:
                raise KafkaError(
                    ErrorCode(result.error_code),
                    f"seeding {topic}-{partition}: {result.error_message or ''}".rstrip(": "),
                )
            firsts.setdefault((topic, partition), result.base_offset)
    nth: dict[tuple[str, int], int] = {}
    out = []
    for key in placed:
        i = nth.get(key, 0)
        nth[key] = i + 1
        out.append((key[0], key[1], firsts[key] + i))
    return out
