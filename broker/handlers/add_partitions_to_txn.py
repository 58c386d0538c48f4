"""AddPartitionsToTxn: partitions join a producer's transaction (the transaction runtime).

Versions 0-3 come from producers: a partition of a topic this broker does not have is
answered UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, without asking
the coordinator (KafkaApis.handleAddPartitionsToTxnRequest). Versions 4+ are the batched
form brokers send; Kafka requires CLUSTER_ACTION for them (checked with the ACLs by
broker.security.enforce, granted by a broker without an authorizer), then they are
answered as asked.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
)


async def handle(
    ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    if ctx.api_version < 4:
        topics = ctx.broker.topics
        unknown = {
            (t.name, p)
            for t in request.v3_and_below_topics
            for p in t.partitions
            if (topic := topics.get(t.name)) is None or not 0 <= p < len(topic.partitions)
        }
        if unknown:
            return AddPartitionsToTxnResponse(
                results_by_topic_v3_and_below=[
                    AddPartitionsToTxnTopicResult(
                        name=t.name,
                        results_by_partition=[
                            AddPartitionsToTxnPartitionResult(
                                partition_index=p,
                                partition_error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                                if (t.name, p) in unknown
                                else ErrorCode.OPERATION_NOT_ATTEMPTED,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.v3_and_below_topics
                ]
            )
    return await ctx.broker.transactions.add_partitions(ctx.api_version, request)
