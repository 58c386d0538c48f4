"""InitProducerId (key 22): a producer id and epoch for idempotent and transactional producers.

Spec: InitProducerIdRequest.json / InitProducerIdResponse.json. Versions 0-5, flexible from 2.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: flexible.
  v3: producer_id and producer_epoch in the request, to resume after INVALID_PRODUCER_EPOCH
      (KIP-360).
  v4: PRODUCER_FENCED may be returned.
  v5: TRANSACTION_ABORTABLE may be returned (KIP-890).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Int16, Int32, Int64, Message, String, wire


class InitProducerIdRequest(Message):
    API_KEY = 22
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 2
    transactional_id: str | None = wire(String, nullable=True)
    transaction_timeout_ms: int = wire(Int32)
    producer_id: int = wire(Int64, since=3, default=-1)
    producer_epoch: int = wire(Int16, since=3, default=-1)


class InitProducerIdResponse(Message):
    API_KEY = 22
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    producer_id: int = wire(Int64, default=-1)
    producer_epoch: int = wire(Int16)


def error_response(
    request: InitProducerIdRequest, code: ErrorCode, version: int
) -> InitProducerIdResponse:
    """The top-level code, producer id and epoch -1, at every version.

    As Kafka's InitProducerIdRequest.getErrorResponse.
    """
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
