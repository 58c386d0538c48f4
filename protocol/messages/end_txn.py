"""EndTxn (key 26): a producer commits or aborts its ongoing transaction.

Spec: EndTxnRequest.json / EndTxnResponse.json. Versions 0-5, flexible from 3.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: PRODUCER_FENCED may be returned.
  v3: flexible.
  v4: TRANSACTION_ABORTABLE may be returned (KIP-890).
  v5: the epoch is bumped at the end of every transaction (KIP-890 part 2,
      transaction.version 2); the response carries the producer id and the new epoch.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Bool, Int16, Int32, Int64, Message, String, wire


class EndTxnRequest(Message):
    API_KEY = 26
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 3
    transactional_id: str = wire(String)
    producer_id: int = wire(Int64)
    producer_epoch: int = wire(Int16)
    committed: bool = wire(Bool)


class EndTxnResponse(Message):
    API_KEY = 26
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 3
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    producer_id: int = wire(Int64, since=5, default=-1)
    producer_epoch: int = wire(Int16, since=5, default=-1)


def error_response(request: EndTxnRequest, code: ErrorCode, version: int) -> EndTxnResponse:
    """The code at the top level; v5's producer id and epoch stay -1 (Kafka's EndTxnRequest)."""
    return EndTxnResponse(error_code=code)
