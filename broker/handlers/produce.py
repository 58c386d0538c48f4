"""Produce: validate each partition's record batch, append it, and answer per partition.

acks=0 gets no response at all; acks=1 is answered once the batch is in the log (the OS page
cache); acks=-1 (all) once an fsync covers it, in the durability modes that fsync (see
broker.durability): the handler returns a Deferred, so the connection reads and appends the
next batches while the fsync runs. Per-partition failures are answered per partition, as Kafka does.

Batches are validated (magic 2, length, CRC32C over attributes..end), never decoded on this
path: storage rewrites only the base offset, which the CRC does not cover.

Produce v0-2 (a Kafka release before 4.0, see protocol.releases) carries MessageSets in
formats v0/v1: they are checked message by message (CRC32, lengths, codec) and converted to
one RecordBatch v2 with the same compression, as a Kafka 3.x broker does on append
(LogValidator: log.message.format.version is ignored from 3.0, so every append is v2).

Transactional batches (a request with a transactional_id): before appending, the
transaction coordinator is asked whether each partition is in the producer's transaction
(KIP-890 part 1) or, for Produce v12+ under transaction.version 2, adds it (part 2), as
Kafka's ReplicaManager.appendRecords does through its AddPartitionsToTxnManager; a
partition that fails is answered with the error Kafka gives (INVALID_TXN_STATE,
INVALID_PRODUCER_EPOCH, or a retriable NOT_ENOUGH_REPLICAS: broker.txn_runtime). A
transactional batch in a request without a transactional_id, or the other way round, is
INVALID_RECORD (Kafka's ProduceRequest.validateRecords raises InvalidRecordException).

With several brokers (broker.cluster_state) a partition is appended to only at its leader:
elsewhere it is NOT_LEADER_OR_FOLLOWER, from v10 with the current leader and its endpoint
(KIP-951, KafkaApis.handleProduceRequest). acks=-1 with fewer in-sync replicas than the
topic's min.insync.replicas is NOT_ENOUGH_REPLICAS, nothing written
(Partition.appendRecordsToLeader). The leader stamps its epoch into the batch
(partitionLeaderEpoch), as Kafka's leader does.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import trio

from broker.cluster import leader_endpoints, serving_error
from broker.context import RequestContext
from broker.handlers import Deferred
from protocol.errors import ErrorCode, KafkaError
from protocol.legacy_records import message_set_magic, read_message_set
from protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from protocol.records import (
    BATCH_HEADER_SIZE,
    build_batch,
    decode_records,
    parse_batch_header,
    split_batches,
)
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from storage.log import Log

log = logging.getLogger("broker.produce")


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | Deferred | None:
    broker = ctx.broker
    if request.acks not in (-1, 0, 1):
        raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks={request.acks}")
    refused: dict[tuple[str, int], ErrorCode] = {}
    if request.transactional_id is not None:
        refused = await _verify_transaction(ctx, request)
    wall_ms = broker.wall_ms()
    # (topic name, topic id, partition responses): no reference into the request, so that a
    # Deferred answer does not keep its frame (its record batches) alive during the fsync.
    responses: list[tuple[str, uuid.UUID, list[PartitionProduceResponse]]] = []
    new_leaders: set[int] = set()  # named in a NOT_LEADER_OR_FOLLOWER answer (v10+)
    durable: list[tuple[Any, int, int, int]] = []  # (log, end offset, topic index, partition index)
    version = ctx.api_version
    multi = broker.cluster.multi
    for topic_data in request.topic_data:
        name = topic_data.name if version < 13 else _topic_name(ctx, topic_data)
        partitions: list[PartitionProduceResponse] = []
        for pdata in topic_data.partition_data:
            try:
                if not name:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, f"{topic_data.topic_id}")
                if refused:
                    code = refused.get((name, pdata.index))
                    if code is not None:
                        raise KafkaError(code, "not in the producer's transaction")
                # A single broker leads every partition and leaves the producer's epoch.
                epoch = _check_leader(ctx, name, pdata.index, request.acks) if multi else None
                result, plog = _append(
                    broker, name, pdata, wall_ms, version, request.transactional_id, epoch
                )
            except KafkaError as e:
                if e.code not in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID):
                    log.debug("produce to %s-%d refused: %s", name, pdata.index, e)
                leader = LeaderIdAndEpoch()
                if e.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and version >= 10:
                    p = broker.topics.partition(name, pdata.index)
                    leader = LeaderIdAndEpoch(leader_id=p.leader, leader_epoch=p.leader_epoch)
                    new_leaders.add(p.leader)
                result = PartitionProduceResponse(
                    index=pdata.index,
                    error_code=e.code,
                    base_offset=-1,
                    error_message=e.detail or None,
                    current_leader=leader,
                )
            else:
                end = plog.log_end_offset
                if request.acks == -1 and broker.durability.waits_for(plog, end):
                    durable.append((plog, end, len(responses), len(partitions)))
                else:
                    broker.durability.note_written(plog, end)
            partitions.append(result)
        responses.append((topic_data.name, topic_data.topic_id, partitions))
    if request.acks == 0:
        return None
    if not durable:
        return _response(ctx, responses, new_leaders)

    async def finish() -> ProduceResponse:
        # acks=all: wait for the fsyncs, all partitions at once.
        failed: set[int] = set()

        async def wait(i: int, plog: Any, end: int) -> None:
            try:
                await broker.durability.wait_durable(plog, end)
            except KafkaError:
                failed.add(i)

        async with trio.open_nursery() as nursery:
            for i, (plog, end, _, _) in enumerate(durable):
                nursery.start_soon(wait, i, plog, end)
        for i in failed:
            # The batch is in the log but not known durable: the client must not count it as
            # acknowledged, so it gets a retriable storage error (Kafka's answer to a failed
            # log dir).
            _, _, ti, pi = durable[i]
            parts = responses[ti][2]
            # A Struct is a dataclass that mypy does not see as one (protocol.schema).
            parts[pi] = replace(parts[pi], error_code=ErrorCode.KAFKA_STORAGE_ERROR)  # type: ignore[type-var]
        return _response(ctx, responses, new_leaders)

    # The batches are in the log; the connection may read on while the fsync runs.
    return Deferred(finish)


def _response(
    ctx: RequestContext,
    responses: list[tuple[str, uuid.UUID, list[PartitionProduceResponse]]],
    new_leaders: set[int],
) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(name=topic, topic_id=topic_id, partition_responses=parts)
            for topic, topic_id, parts in responses
        ],
        node_endpoints=[
            NodeEndpoint(node_id=n, host=h, port=p, rack=None)
            for n, h, p in leader_endpoints(ctx, new_leaders)
        ]
        if new_leaders
        else [],
    )


def _topic_name(ctx: RequestContext, topic_data: Any) -> str:
    """The topic's name; v13 names the topic by id (KIP-516): "" for an unknown id, which is
    answered UNKNOWN_TOPIC_ID."""
    if ctx.api_version < 13:
        return str(topic_data.name)
    by_id = ctx.broker.topics.by_id.get(topic_data.topic_id)
    return "" if by_id is None else by_id.name


async def _verify_transaction(
    ctx: RequestContext, request: ProduceRequest
) -> dict[tuple[str, int], ErrorCode]:
    """The partitions a transactional Produce may not append to, with their errors. Only
    partitions whose batch is transactional and whose topic exists are asked about (the
    others fail in `_append`)."""
    wanted: list[tuple[str, int]] = []
    producer: tuple[int, int] | None = None
    for topic_data in request.topic_data:
        for pdata in topic_data.partition_data:
            records = pdata.records
            if not records or len(records) < BATCH_HEADER_SIZE:
                continue
            header = parse_batch_header(records)
            if not header.is_transactional:
                continue
            name = _topic_name(ctx, topic_data)
            if ctx.broker.topics.get(name) is None:
                continue
            wanted.append((name, pdata.index))
            producer = (header.producer_id, header.producer_epoch)
    if producer is None:
        return {}
    assert request.transactional_id is not None
    return await ctx.broker.transactions.verify_produce(
        request.transactional_id, producer[0], producer[1], wanted, ctx.api_version
    )


def _check_leader(ctx: RequestContext, name: str, index: int, acks: int) -> int | None:
    """The leader epoch to stamp into the batch (None: a single broker leaves the
    producer's); raises what the partition meets at this broker (broker.cluster)."""
    broker = ctx.broker
    if name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC) or not broker.cluster.multi:
        return None  # _append answers these, as before
    p = broker.topics.partition(name, index)
    code = serving_error(ctx, p)
    if code != ErrorCode.NONE:
        raise KafkaError(code, f"{name}-{index} is led by broker {p.leader}")
    if acks == -1:
        topic = broker.topics.get(name)
        assert topic is not None  # the partition was found above
        wanted = int(
            topic.configs.get("min.insync.replicas")
            or broker.config.topic_default("min.insync.replicas")
        )
        if len(p.isr) < wanted:
            raise KafkaError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {p.isr} is insufficient to satisfy the min.isr "
                f"requirement of {wanted} for partition {name}-{index}",
            )
    return p.leader_epoch


def _append(
    broker: Any,
    name: str,
    pdata: Any,
    wall_ms: int,
    version: int,
    transactional_id: str | None = None,
    leader_epoch: int | None = None,
) -> tuple[PartitionProduceResponse, Log]:
    """The partition's answer, and its log (whose end the batch now is, unless refused)."""
    if name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "cannot produce to an internal topic")
    partition = broker.topics.partition(name, pdata.index)
    records = pdata.records
    if records is None or len(records) == 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, "no record batch")
    if version < 3 and message_set_magic(records) in (0, 1):
        records = _up_convert(records)
    batches = split_batches(records)
    if len(batches) != 1:
        # Kafka: "Produce requests with version 3 and above may only contain exactly one
        # record batch" per partition.
        raise KafkaError(ErrorCode.INVALID_RECORD, f"{len(batches)} record batches")
    _, header = batches[0]
    # (A control batch was refused by split_batches.)
    if header.is_transactional != (transactional_id is not None):
        # Kafka's ProduceRequest.validateRecords.
        if transactional_id is None:
            raise KafkaError(
                ErrorCode.INVALID_RECORD, "transactional batch without a transactional id"
            )
        raise KafkaError(ErrorCode.INVALID_RECORD, "non-transactional batch, transactional id")
    plog = partition.log
    config = plog.config
    size = 12 + header.batch_length  # header.size
    if size > config.max_message_bytes:
        raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"batch of {size} bytes > max.message.bytes")
    if config.compacts:
        refused = _records_without_key(name, pdata.index, records)
        if refused is not None:
            return refused, plog
    info = partition.append(
        records, wall_ms=wall_ms, partition_leader_epoch=leader_epoch, header=header
    )
    response = PartitionProduceResponse(
        index=pdata.index,
        error_code=ErrorCode.NONE,
        base_offset=info.base_offset,
        log_append_time_ms=info.log_append_time,
        log_start_offset=info.log_start_offset,
    )
    return response, plog


def _records_without_key(name: str, index: int, records: Any) -> PartitionProduceResponse | None:
    """A compacted topic takes only keyed records (Kafka's LogValidator.validateKey).

    Kafka rejects the whole batch with INVALID_RECORD, one record error per key-less record
    (its index in the batch) and a message quoting the first three; nothing is appended.
    """
    what = f"Compacted topic cannot accept message without key in topic partition {name}-{index}"
    errors = [
        BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=what)
        for i, record in enumerate(decode_records(records))
        if record.key is None
    ]
    if not errors:
        return None
    shown = ", ".join(
        f"RecordError(batchIndex={e.batch_index}, message='{e.batch_index_error_message}')"
        for e in errors[:3]
    )
    return PartitionProduceResponse(
        index=index,
        error_code=ErrorCode.INVALID_RECORD,
        base_offset=-1,
        record_errors=errors,
        error_message=f"One or more records have been rejected due to {len(errors)} record "
        f"errors in total, and only showing the first three errors at most: [{shown}]",
    )


def _up_convert(records: Any) -> bytes:
    """A v0/v1 MessageSet as one RecordBatch v2: same records (keys, values, v1 timestamps;
    v0 has none, -1), same codec, no producer id (LogValidator's
    convertAndAssignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed). The
    timestamp type is the topic's, set on append, whatever the producer's attributes say."""
    message_set = read_message_set(records)
    return build_batch(
        [(r.key, r.value, (), r.timestamp) for r in message_set.records],
        compression=message_set.compression,
    )
