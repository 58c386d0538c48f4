"""TxnOffsetCommit (key 28): a transactional producer commits a group's offsets.

Spec: TxnOffsetCommitRequest.json / TxnOffsetCommitResponse.json. Versions 0-4, flexible
from 3. The offsets stay pending until the transaction's marker reaches the group's
__consumer_offsets partition.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: committed_leader_epoch.
  v3: flexible; generation_id, member_id and group_instance_id (KIP-447), with
      ILLEGAL_GENERATION, FENCED_INSTANCE_ID and UNKNOWN_MEMBER_ID.
  v4: TRANSACTION_ABORTABLE may be returned (KIP-890).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.offset_commit import (
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    partition_errors,
)
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire


class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = wire(Int32)
    committed_offset: int = wire(Int64)
    committed_leader_epoch: int = wire(Int32, since=2, default=-1)
    committed_metadata: str | None = wire(String, nullable=0)


class TxnOffsetCommitRequestTopic(Struct):
    name: str = wire(String)
    partitions: list[TxnOffsetCommitRequestPartition] = wire(Array(TxnOffsetCommitRequestPartition))


class TxnOffsetCommitRequest(Message):
    API_KEY = 28
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 3
    transactional_id: str = wire(String)
    group_id: str = wire(String)
    producer_id: int = wire(Int64)
    producer_epoch: int = wire(Int16)
    generation_id: int = wire(Int32, since=3, default=-1)
    member_id: str = wire(String, since=3)
    group_instance_id: str | None = wire(String, since=3, nullable=3, default=None)
    topics: list[TxnOffsetCommitRequestTopic] = wire(Array(TxnOffsetCommitRequestTopic))


# The response's topics and partitions have OffsetCommitResponse's layout at every version
# of both APIs (the spec files differ only in the struct names): one class each, under both
# names.
TxnOffsetCommitResponsePartition = OffsetCommitResponsePartition
TxnOffsetCommitResponseTopic = OffsetCommitResponseTopic


class TxnOffsetCommitResponse(Message):
    API_KEY = 28
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 3
    throttle_time_ms: int = wire(Int32)
    topics: list[TxnOffsetCommitResponseTopic] = wire(Array(TxnOffsetCommitResponseTopic))


def error_response(
    request: TxnOffsetCommitRequest, code: ErrorCode, version: int
) -> TxnOffsetCommitResponse:
    """The code on every partition of every topic in the request (there is no top level).

    The same at every version, as Kafka's TxnOffsetCommitRequest.getErrorResponse.
    """
    return TxnOffsetCommitResponse(topics=partition_errors(request.topics, code))
