"""WriteTxnMarkers: a transaction coordinator asks a partition leader to write markers.

kmock's own coordinator writes its markers directly (broker.txn_runtime); this is the
answer to a client sending the request. Kafka 4.1's KafkaApis.handleWriteTxnMarkersRequest
requires ALTER or CLUSTER_ACTION on the cluster (checked by broker.security.enforce; a broker
without an authorizer grants both to everyone), and then writes the markers; so does
kmock: per partition, the COMMIT or ABORT control batch, with UNKNOWN_TOPIC_OR_PARTITION for
a partition it does not have and TRANSACTION_COORDINATOR_FENCED for a coordinator epoch
older than the producer's last marker there (Kafka's ProducerAppendInfo.
checkCoordinatorEpoch). A marker reaching __consumer_offsets completes the producer's
pending transactional offsets, as Kafka's handler asks the group coordinator to.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from protocol.records import ControlRecordType, build_control_batch
from storage.layout import OFFSETS_TOPIC


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    broker = ctx.broker
    results = []
    for marker in request.markers:
        commit = bool(marker.transaction_result)
        wall_ms = broker.wall_ms()
        batch = build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            coordinator_epoch=marker.coordinator_epoch,
            timestamp=wall_ms,
        )
        topics = []
        for t in marker.topics:
            partitions = []
            for index in t.partition_indexes:
                try:
                    partition = broker.topics.partition(t.name, index)
                    tracker = partition.log.transactions.tracker
                    if marker.coordinator_epoch < tracker.coordinator_epoch(marker.producer_id):
                        raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED, t.name)
                    partition.append(batch, wall_ms=wall_ms)
                    await broker.durability.wait_durable(
                        partition.log, partition.log.log_end_offset
                    )
                    if t.name == OFFSETS_TOPIC:
                        broker.coordinator.coordinator.complete_transaction(
                            marker.producer_id, commit
                        )
                    code = ErrorCode.NONE
                except KafkaError as e:
                    code = e.code
                partitions.append(
                    WritableTxnMarkerPartitionResult(partition_index=index, error_code=code)
                )
            topics.append(WritableTxnMarkerTopicResult(name=t.name, partitions=partitions))
        results.append(WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    return WriteTxnMarkersResponse(markers=results)
