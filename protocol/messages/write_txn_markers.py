"""WriteTxnMarkers (key 27): a transaction coordinator asks a partition leader to write
COMMIT or ABORT markers.

Spec: WriteTxnMarkersRequest.json / WriteTxnMarkersResponse.json. Versions 0-1, flexible
from 1. Inter-broker: a client sending it is answered as Kafka answers a caller without
CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED on every partition).

Version notes:
  v1: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Int64, Message, String, Struct, wire


class WritableTxnMarkerTopic(Struct):
    name: str = wire(String)
    partition_indexes: list[int] = wire(Array(Int32))


class WritableTxnMarker(Struct):
    producer_id: int = wire(Int64)
    producer_epoch: int = wire(Int16)
    transaction_result: bool = wire(Bool)  # False = ABORT, True = COMMIT
    topics: list[WritableTxnMarkerTopic] = wire(Array(WritableTxnMarkerTopic))
    coordinator_epoch: int = wire(Int32)


class WriteTxnMarkersRequest(Message):
    API_KEY = 27
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 1
    markers: list[WritableTxnMarker] = wire(Array(WritableTxnMarker))


class WritableTxnMarkerPartitionResult(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)


class WritableTxnMarkerTopicResult(Struct):
    name: str = wire(String)
    partitions: list[WritableTxnMarkerPartitionResult] = wire(
        Array(WritableTxnMarkerPartitionResult)
    )


class WritableTxnMarkerResult(Struct):
    producer_id: int = wire(Int64)
    topics: list[WritableTxnMarkerTopicResult] = wire(Array(WritableTxnMarkerTopicResult))


class WriteTxnMarkersResponse(Message):
    API_KEY = 27
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 1
    markers: list[WritableTxnMarkerResult] = wire(Array(WritableTxnMarkerResult))


def error_response(
    request: WriteTxnMarkersRequest, code: ErrorCode, version: int
) -> WriteTxnMarkersResponse:
    """The code on every partition of every marker (Kafka's WriteTxnMarkersRequest)."""
    return WriteTxnMarkersResponse(
        markers=[
            WritableTxnMarkerResult(
                producer_id=marker.producer_id,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name=topic.name,
                        partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=p, error_code=code)
                            for p in topic.partition_indexes
                        ],
                    )
                    for topic in marker.topics
                ],
            )
            for marker in request.markers
        ]
    )
