"""DescribeTransactions (key 65): the coordinator's state of each named transactional id.

Spec: DescribeTransactionsRequest.json / DescribeTransactionsResponse.json. Version 0,
flexible (KIP-664).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire


class DescribeTransactionsRequest(Message):
    API_KEY = 65
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    transactional_ids: list[str] = wire(Array(String))


class TopicData(Struct):
    topic: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class TransactionState(Struct):
    error_code: int = wire(Int16)
    transactional_id: str = wire(String)
    transaction_state: str = wire(String)
    transaction_timeout_ms: int = wire(Int32)
    transaction_start_time_ms: int = wire(Int64)
    producer_id: int = wire(Int64)
    producer_epoch: int = wire(Int16)
    topics: list[TopicData] = wire(Array(TopicData))


class DescribeTransactionsResponse(Message):
    API_KEY = 65
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    transaction_states: list[TransactionState] = wire(Array(TransactionState))


def error_response(
    request: DescribeTransactionsRequest, code: ErrorCode, version: int
) -> DescribeTransactionsResponse:
    """One TransactionState per requested id carrying the code (Kafka's
    DescribeTransactionsRequest.getErrorResponse); every other field is Kafka's zero."""
    return DescribeTransactionsResponse(
        transaction_states=[
            TransactionState(error_code=code, transactional_id=transactional_id)
            for transactional_id in request.transactional_ids
        ]
    )
