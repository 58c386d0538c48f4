"""InitProducerId: producer ids and epochs for idempotent and transactional producers.

With a transactional id the transaction coordinator answers (broker.txn_runtime: epoch
bumps, fencing, transaction.timeout.ms checked against transaction.max.timeout.ms).
Without one, a fresh id at epoch 0; a request that names its current producer id and epoch
(v3+, KIP-360) gets the same id with the epoch bumped, or a new id when the epoch would
overflow.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

MAX_EPOCH = 32767


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return await ctx.broker.transactions.init_producer_id(ctx.api_version, request)
    if request.producer_id >= 0 and 0 <= request.producer_epoch < MAX_EPOCH - 1:
        return InitProducerIdResponse(
            producer_id=request.producer_id, producer_epoch=request.producer_epoch + 1
        )
    return InitProducerIdResponse(producer_id=ctx.broker.producer_ids.allocate(), producer_epoch=0)
