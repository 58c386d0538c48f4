"""Responses the transaction coordinator builds: DescribeTransactions, ListTransactions, the
verify-only form of AddPartitionsToTxn, and the failed forms of replies whose record could
not be written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from coordinator.transactions.metadata import TopicPartition, TransactionMetadata
from coordinator.transactions.state import TransactionState
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
    topic_results,
)
from protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TopicData,
)
from protocol.messages.describe_transactions import TransactionState as DescribedTransaction
from protocol.messages.end_txn import EndTxnResponse
from protocol.messages.list_transactions import (
    ListedTransactionState,
    ListTransactionsRequest,
    ListTransactionsResponse,
)

_S = TransactionState
_E = ErrorCode

__all__ = [
    "describe_transactions",
    "fail_end_txn",
    "fail_v3_add",
    "fail_v4_add",
    "list_transactions",
    "partitions",
    "refit_fenced",
    "txn_result",
    "verify",
    "with_error",
]


def fenced_code(version: int, first_fenced_version: int) -> ErrorCode:
    """PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for versions older clients speak (KafkaApis
    maps it so: InitProducerId below v4, AddPartitions/AddOffsets/EndTxn below v2)."""
    if version < first_fenced_version:
        return _E.INVALID_PRODUCER_EPOCH
    return _E.PRODUCER_FENCED


def refit_fenced(error: KafkaError, version: int, first_fenced_version: int) -> KafkaError:
    if error.code is _E.PRODUCER_FENCED:
        return KafkaError(fenced_code(version, first_fenced_version), error.detail)
    return error


def with_error(response: object, code: ErrorCode) -> object:
    """`response` with its top-level error code set."""
    return dataclasses.replace(response, error_code=code)  # type: ignore[type-var]


def verify(
    txns: Mapping[str, TransactionMetadata],
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: list[AddPartitionsToTxnTopic],
) -> AddPartitionsToTxnResult:
    """AddPartitionsToTxn v4+ with verify_only: which partitions are in the transaction
    (Kafka's handleVerifyPartitionsInTransaction; pending transitions are not checked)."""
    try:
        metadata = txns.get(transactional_id)
        if not transactional_id:
            raise KafkaError(_E.INVALID_REQUEST, "empty transactional id")
        if metadata is None or metadata.producer_id != producer_id:
            raise KafkaError(_E.INVALID_PRODUCER_ID_MAPPING, transactional_id)
        if metadata.producer_epoch != producer_epoch:
            raise KafkaError(_E.PRODUCER_FENCED, f"{transactional_id}: epoch")
        if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            raise KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{transactional_id}: ending")
    except KafkaError as e:
        return txn_result(transactional_id, topics, e.code)
    return AddPartitionsToTxnResult(
        transactional_id=transactional_id,
        topic_results=[
            AddPartitionsToTxnTopicResult(
                name=topic.name,
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(
                        partition_index=p,
                        partition_error_code=_E.NONE
                        if (topic.name, p) in metadata.topic_partitions
                        else _E.TRANSACTION_ABORTABLE,
                    )
                    for p in topic.partitions
                ],
            )
            for topic in topics
        ],
    )


def describe_transactions(
    txns: Mapping[str, TransactionMetadata], request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    """Kafka's handleDescribeTransactions, for each requested id."""
    states = []
    for tid in request.transactional_ids:
        metadata = txns.get(tid)
        if not tid:
            states.append(DescribedTransaction(error_code=_E.INVALID_REQUEST, transactional_id=tid))
        elif metadata is None or metadata.state is _S.DEAD:
            states.append(
                DescribedTransaction(error_code=_E.TRANSACTIONAL_ID_NOT_FOUND, transactional_id=tid)
            )
        else:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(metadata.topic_partitions):
                by_topic.setdefault(topic, []).append(partition)
            states.append(
                DescribedTransaction(
                    transactional_id=tid,
                    transaction_state=str(metadata.state),
                    transaction_timeout_ms=metadata.txn_timeout_ms,
                    transaction_start_time_ms=metadata.txn_start_timestamp,
                    producer_id=metadata.producer_id,
                    producer_epoch=metadata.producer_epoch,
                    topics=[TopicData(topic=t, partitions=p) for t, p in by_topic.items()],
                )
            )
    return DescribeTransactionsResponse(transaction_states=states)


def list_transactions(
    txns: Mapping[str, TransactionMetadata], request: ListTransactionsRequest, now_ms: int
) -> ListTransactionsResponse:
    """Kafka's TransactionStateManager.listTransactionStates: filters by state (names it
    does not know are echoed back), producer id, and (v1) running longer than
    duration_filter ms. Dead ids are never listed."""
    states: set[TransactionState] = set()
    unknown = []
    for name in request.state_filters:
        state = TransactionState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            states.add(state)
    producer_ids = set(request.producer_id_filters)
    listed = []
    for tid, metadata in sorted(txns.items()):
        if metadata.state is _S.DEAD:
            continue
        if producer_ids and metadata.producer_id not in producer_ids:
            continue
        if request.state_filters and metadata.state not in states:
            continue
        if (
            request.duration_filter >= 0
            and now_ms - metadata.txn_start_timestamp <= request.duration_filter
        ):
            continue
        listed.append(
            ListedTransactionState(
                transactional_id=tid,
                producer_id=metadata.producer_id,
                transaction_state=str(metadata.state),
            )
        )
    return ListTransactionsResponse(unknown_state_filters=unknown, transaction_states=listed)


def partitions(topics: list[AddPartitionsToTxnTopic]) -> frozenset[TopicPartition]:
    return frozenset((topic.name, p) for topic in topics for p in topic.partitions)


def txn_result(
    transactional_id: str, topics: list[AddPartitionsToTxnTopic], code: ErrorCode
) -> AddPartitionsToTxnResult:
    return AddPartitionsToTxnResult(
        transactional_id=transactional_id, topic_results=topic_results(topics, code)
    )


def fail_v3_add(topics: list[AddPartitionsToTxnTopic], response: object, code: ErrorCode) -> object:
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=topic_results(topics, code))


def fail_v4_add(
    transactional_id: str,
    topics: list[AddPartitionsToTxnTopic],
    response: object,
    code: ErrorCode,
) -> object:
    assert isinstance(response, AddPartitionsToTxnResponse)
    results = [
        txn_result(transactional_id, topics, code)
        if result.transactional_id == transactional_id
        else result
        for result in response.results_by_transaction
    ]
    return AddPartitionsToTxnResponse(results_by_transaction=results)


def fail_end_txn(response: object, code: ErrorCode) -> object:
    return EndTxnResponse(error_code=code)
