"""AddPartitionsToTxn (key 24): partitions join a producer's ongoing transaction.

Spec: AddPartitionsToTxnRequest.json / AddPartitionsToTxnResponse.json. Versions 0-5,
flexible from 3.

Two forms share the key. Versions 0-3 come from producers: one transaction, its fields
prefixed `v3_and_below_`, and per-partition results only. Versions 4+ come from brokers: a
batch of transactions, each with `verify_only` (KIP-890 part 1: "is this partition already in
the transaction?" before a transactional Produce is appended), and a top-level error code.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: PRODUCER_FENCED may be returned.
  v3: flexible.
  v4: the batched broker form: transactions[], verify_only, results_by_transaction, error_code.
  v5: TRANSACTION_ABORTABLE may be returned (KIP-890).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Int64, Message, String, Struct, wire


class AddPartitionsToTxnTopic(Struct):
    name: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class AddPartitionsToTxnTransaction(Struct):
    transactional_id: str = wire(String, since=4)
    producer_id: int = wire(Int64, since=4)
    producer_epoch: int = wire(Int16, since=4)
    verify_only: bool = wire(Bool, since=4)
    topics: list[AddPartitionsToTxnTopic] = wire(Array(AddPartitionsToTxnTopic), since=4)


class AddPartitionsToTxnRequest(Message):
    API_KEY = 24
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 3
    transactions: list[AddPartitionsToTxnTransaction] = wire(
        Array(AddPartitionsToTxnTransaction), since=4
    )
    v3_and_below_transactional_id: str = wire(String, until=3)
    v3_and_below_producer_id: int = wire(Int64, until=3)
    v3_and_below_producer_epoch: int = wire(Int16, until=3)
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = wire(
        Array(AddPartitionsToTxnTopic), until=3
    )


class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = wire(Int32)
    partition_error_code: int = wire(Int16)


class AddPartitionsToTxnTopicResult(Struct):
    name: str = wire(String)
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = wire(
        Array(AddPartitionsToTxnPartitionResult)
    )


class AddPartitionsToTxnResult(Struct):
    transactional_id: str = wire(String, since=4)
    topic_results: list[AddPartitionsToTxnTopicResult] = wire(
        Array(AddPartitionsToTxnTopicResult), since=4
    )


class AddPartitionsToTxnResponse(Message):
    API_KEY = 24
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 3
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16, since=4)
    results_by_transaction: list[AddPartitionsToTxnResult] = wire(
        Array(AddPartitionsToTxnResult), since=4
    )
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = wire(
        Array(AddPartitionsToTxnTopicResult), until=3
    )


def topic_results(
    topics: list[AddPartitionsToTxnTopic], code: ErrorCode
) -> list[AddPartitionsToTxnTopicResult]:
    """`code` for every partition of `topics` (Kafka's errorResponseForTopics)."""
    return [
        AddPartitionsToTxnTopicResult(
            name=topic.name,
            results_by_partition=[
                AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code)
                for p in topic.partitions
            ],
        )
        for topic in topics
    ]


def error_response(
    request: AddPartitionsToTxnRequest, code: ErrorCode, version: int
) -> AddPartitionsToTxnResponse:
    """v0-3: the code on every requested partition; v4+: the top-level code only.

    As Kafka's AddPartitionsToTxnRequest.getErrorResponse.
    """
    if version < 4:
        return AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=topic_results(request.v3_and_below_topics, code)
        )
    return AddPartitionsToTxnResponse(error_code=code)
