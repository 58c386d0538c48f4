"""AddOffsetsToTxn (key 25): a group's offsets join a producer's ongoing transaction.

Spec: AddOffsetsToTxnRequest.json / AddOffsetsToTxnResponse.json. Versions 0-4, flexible
from 3. The coordinator adds the group's __consumer_offsets partition to the transaction, so
that its markers also decide the fate of the group's TxnOffsetCommits.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: PRODUCER_FENCED may be returned.
  v3: flexible.
  v4: TRANSACTION_ABORTABLE may be returned (KIP-890).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Int16, Int32, Int64, Message, String, wire


class AddOffsetsToTxnRequest(Message):
    API_KEY = 25
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 3
    transactional_id: str = wire(String)
    producer_id: int = wire(Int64)
    producer_epoch: int = wire(Int16)
    group_id: str = wire(String)


class AddOffsetsToTxnResponse(Message):
    API_KEY = 25
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 3
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)


def error_response(
    request: AddOffsetsToTxnRequest, code: ErrorCode, version: int
) -> AddOffsetsToTxnResponse:
    """The code at the top level, at every version (Kafka's AddOffsetsToTxnRequest)."""
    return AddOffsetsToTxnResponse(error_code=code)
