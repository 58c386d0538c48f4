"""TxnOffsetCommit: a transactional producer commits a group's offsets.

First, as Kafka 4.1's KafkaApis.handleTxnOffsetCommitRequest does through its transaction
verification, the transaction coordinator is asked whether the group's __consumer_offsets
partition is in the producer's transaction (AddOffsetsToTxn put it there) with this
producer id and epoch; if not, every partition is answered with the error
(INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH for a fenced producer, COORDINATOR_NOT_AVAILABLE
while the coordinator is busy, which clients retry). Then the group coordinator writes the
offsets in a transactional batch of the producer (broker.runtime). Partitions of topics that
do not exist are answered UNKNOWN_TOPIC_OR_PARTITION and the others committed, as Kafka's
handleTxnOffsetCommitRequest does (its metadata cache check).
"""

from __future__ import annotations

# A Struct is a dataclass that mypy does not see as one (protocol.schema): replace() below
# carries type: ignore[type-var].
from dataclasses import replace

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
    error_response,
)
from storage.layout import OFFSETS_TOPIC

# verify_produce answers as to a Produce; a TxnOffsetCommit client retries these instead.
_RETRIABLE = ErrorCode.COORDINATOR_NOT_AVAILABLE


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    broker = ctx.broker
    partition = broker.coordinator.coordinator.partition_for(request.group_id)
    errors = await broker.transactions.verify_produce(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(OFFSETS_TOPIC, partition)],
        produce_version=0,  # verify only: TxnOffsetCommit never adds the partition itself
    )
    if errors:
        code = next(iter(errors.values()))
        if code == ErrorCode.NOT_ENOUGH_REPLICAS:
            code = _RETRIABLE
        return error_response(request, code, ctx.api_version)
    known: list[TxnOffsetCommitRequestTopic] = []
    unknown: list[TxnOffsetCommitResponseTopic] = []
    for topic in request.topics:
        missing = broker.topics.missing_partitions(
            topic.name, (p.partition_index for p in topic.partitions)
        )
        valid = [p for p in topic.partitions if p.partition_index not in missing]
        if valid:
            known.append(replace(topic, partitions=valid))  # type: ignore[type-var]
        if missing:
            unknown.append(
                TxnOffsetCommitResponseTopic(
                    name=topic.name,
                    partitions=[
                        TxnOffsetCommitResponsePartition(
                            partition_index=i, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        )
                        for i in missing
                    ],
                )
            )
    if not known:
        return TxnOffsetCommitResponse(topics=unknown)
    response = await broker.coordinator.txn_offset_commit(ctx, replace(request, topics=known))  # type: ignore[type-var]
    return replace(response, topics=unknown + list(response.topics))  # type: ignore[type-var]
