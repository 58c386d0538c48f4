"""ListTransactions (key 66): the transactional ids a coordinator knows, optionally filtered.

Spec: ListTransactionsRequest.json / ListTransactionsResponse.json. Versions 0-1, flexible
from 0 (KIP-664).

Version notes:
  v1: duration_filter: only transactions running longer than this many ms (KIP-994).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire


class ListTransactionsRequest(Message):
    API_KEY = 66
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 0
    state_filters: list[str] = wire(Array(String))
    producer_id_filters: list[int] = wire(Array(Int64))
    duration_filter: int = wire(Int64, since=1, default=-1)


class ListedTransactionState(Struct):
    """Kafka's ListTransactionsResponse TransactionState (renamed: DescribeTransactions has
    a struct of the same name)."""

    transactional_id: str = wire(String)
    producer_id: int = wire(Int64)
    transaction_state: str = wire(String)


class ListTransactionsResponse(Message):
    API_KEY = 66
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    unknown_state_filters: list[str] = wire(Array(String))
    transaction_states: list[ListedTransactionState] = wire(Array(ListedTransactionState))


def error_response(
    request: ListTransactionsRequest, code: ErrorCode, version: int
) -> ListTransactionsResponse:
    """The code at the top level (Kafka's ListTransactionsRequest.getErrorResponse)."""
    return ListTransactionsResponse(error_code=code)
