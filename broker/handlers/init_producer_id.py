"""InitProducerId: producer ids and epochs for idempotent producers.

Transactions are not supported: a request with a transactional id is refused with
UNSUPPORTED_VERSION, which clients report as "the broker does not support transactions"
(the README lists this). A request that names its current producer id and epoch (v3+,
KIP-360) gets the same id with the epoch bumped, or a new id when the epoch would overflow.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

MAX_EPOCH = 32767


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "transactions are not supported")
    if request.producer_id >= 0 and 0 <= request.producer_epoch < MAX_EPOCH - 1:
        return InitProducerIdResponse(
            producer_id=request.producer_id, producer_epoch=request.producer_epoch + 1
        )
    return InitProducerIdResponse(producer_id=ctx.broker.producer_ids.allocate(), producer_epoch=0)
