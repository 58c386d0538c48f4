"""Fetch: whole record batches from each requested partition, with long polling.

The response is built from the logs; if it holds fewer than `min_bytes` (and no partition
has an error), the request parks on every partition it asked for until an append wakes it
or `max_wait_ms` passes, then is built again. Limits follow Kafka (KIP-74): the first
partition with data returns at least one whole batch even if it is larger than
`partition_max_bytes` or `max_bytes`, so a consumer can always make progress; after that,
`max_bytes` bounds the response and `partition_max_bytes` each partition.

isolation_level=1 (read_committed) reads up to the last stable offset (LSO: the first
offset of the earliest open transaction, else the high watermark) and lists the aborted
transactions that overlap the batches returned, from the partition's .txnindex, so that
the consumer drops their records (Kafka's UnifiedLog.read with FetchIsolation.TXN_COMMITTED
and collectAbortedTransactions). Every response reports the LSO in last_stable_offset.

Fetch v0-3 (a Kafka release before 4.0, see protocol.releases) gets message format v0
(Fetch v0-1) or v1 (v2-3): the v2 batches read are converted down, as Kafka's KafkaApis does
through LazyDownConversionRecords and RecordsUtil.downConvert: control batches dropped,
records before the fetch offset left out of uncompressed batches, each batch one MessageSet
with its codec (zstd, which v0/v1 cannot carry, is UNSUPPORTED_COMPRESSION_TYPE for the
partition, as in Kafka).

With several brokers (broker.cluster_state) only a partition's leader serves it: elsewhere
it is NOT_LEADER_OR_FOLLOWER; from v16 that and FENCED_LEADER_EPOCH carry the current
leader and its endpoint (KIP-951, KafkaApis.handleFetchRequest). A consumer fetch is
answered by the leader only, as Kafka does without a replica.selector.class (KIP-392).

Records of 64 KiB or more (SENDFILE_MIN_BYTES) are answered as the slice of the segment file
that holds them, which the connection sends with sendfile(2), as Kafka sends its
FileRecords (broker.sendfile); smaller ones, those of a read_committed fetch of a partition
with aborted transactions up to its LSO (whose batches are read to bound the aborted
transactions listed) and those of the down-conversion below are read into memory. So are
all of them while the request journal (broker.controls) keeps the responses' bytes.

Fetch sessions (KIP-227, v7+) are not kept: every response carries session_id 0, which tells
the client to send full fetch requests, as a Kafka broker with no free session slots does.
"""

from __future__ import annotations

from typing import Any

import trio

from broker.cluster import leader_endpoints, serving_error
from broker.context import RequestContext
from broker.sendfile import SENDFILE_MIN_BYTES
from protocol.compression import CompressionType
from protocol.errors import ErrorCode, KafkaError
from protocol.legacy_records import LegacyRecord, build_message_set
from protocol.messages.fetch import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)
from protocol.records import decode_records, iter_batches
from storage.segment import FileSlice

READ_COMMITTED = 1
_NEW_LEADER = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def _partition_data(
    ctx: RequestContext, topic: Any, fp: Any, budget: int, first: bool, isolation_level: int
) -> tuple[PartitionData, int]:
    if topic is None:
        return PartitionData(
            partition_index=fp.partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ), 0
    if not 0 <= fp.partition < len(topic.partitions):
        return PartitionData(
            partition_index=fp.partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ), 0
    p = topic.partitions[fp.partition]
    plog = p.log
    lso = plog.transactions.last_stable_offset(plog.high_watermark)
    base = {
        "partition_index": fp.partition,
        "high_watermark": plog.log_end_offset,
        "last_stable_offset": lso,
        "log_start_offset": plog.log_start_offset,
    }
    code = serving_error(ctx, p, fp.current_leader_epoch)
    # v16+: the current leader of a partition this broker does not lead, or for an old
    # epoch (KafkaApis.handleFetchRequest; kept to several brokers, where it can change).
    leader = LeaderIdAndEpoch()
    if ctx.api_version >= 16 and ctx.broker.cluster.multi and code in _NEW_LEADER:
        leader = LeaderIdAndEpoch(leader_id=p.leader, leader_epoch=p.leader_epoch)
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return PartitionData(
            partition_index=fp.partition, error_code=code, current_leader=leader
        ), 0
    if code != ErrorCode.NONE:
        return PartitionData(error_code=code, current_leader=leader, **base), 0
    if not plog.log_start_offset <= fp.fetch_offset <= plog.log_end_offset:
        return PartitionData(error_code=ErrorCode.OFFSET_OUT_OF_RANGE, **base), 0
    limit = min(fp.partition_max_bytes, budget)
    data: bytes | FileSlice = b""
    committed = isolation_level == READ_COMMITTED
    end = lso if committed else plog.log_end_offset
    if fp.fetch_offset < end and (limit > 0 or first):
        found = plog.read(fp.fetch_offset, limit, max_offset=end, min_one=first)
        # Records that are sent as they are in the file go from there (broker.sendfile),
        # unless the journal keeps the responses' bytes.
        if found.size >= SENDFILE_MIN_BYTES and ctx.api_version >= 4 and ctx.broker.journal is None:
            data = found
        else:
            data = found.read_bytes()
    aborted = None
    if committed:
        # The aborted transactions that overlap the batches returned, which bound them at the
        # offset after the last one. Records sent from the file are read for that bound only
        # when some transaction up to the LSO was aborted: else none overlaps them either.
        if isinstance(data, FileSlice) and plog.transactions.aborted_transactions(
            fp.fetch_offset, end
        ):
            data = data.read_bytes()
        if isinstance(data, FileSlice):
            aborted = []
        else:
            upper = fp.fetch_offset
            for _, header in iter_batches(data):
                upper = max(upper, header.next_offset)
            aborted = [
                AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                for a in plog.transactions.aborted_transactions(fp.fetch_offset, upper)
            ]
    # No isolation level below v4 (aborted is None), and the records were read.
    if ctx.api_version < 4 and isinstance(data, bytes) and data:
        try:
            data = _down_convert(data, 0 if ctx.api_version <= 1 else 1, fp.fetch_offset)
        except KafkaError as e:
            return PartitionData(error_code=e.code, records=b"", **base), 0
    return PartitionData(
        error_code=ErrorCode.NONE, records=data, aborted_transactions=aborted, **base
    ), len(data)


def _down_convert(data: bytes, magic: int, fetch_offset: int) -> bytes:
    """The v2 batches in `data` as a magic 0/1 MessageSet (see the module docstring)."""
    out = []
    for pos, header in iter_batches(data):
        if header.is_control:
            continue
        if header.compression == CompressionType.ZSTD:
            raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd below Fetch v10")
        records = [
            LegacyRecord(r.offset, r.timestamp, r.key, r.value)
            for r in decode_records(memoryview(data)[pos : pos + header.size])
            # Kafka leaves out the records before the fetch offset of an uncompressed batch
            # only (a v0/v1 wrapper holds the whole compressed batch).
            if header.compression or r.offset >= fetch_offset
        ]
        if records:
            out.append(
                build_message_set(
                    records,
                    magic=magic,
                    compression=header.compression,
                    timestamp_type=header.timestamp_type,
                    log_append_time=header.max_timestamp,
                )
            )
    return b"".join(out)


def _resolve(ctx: RequestContext, request: FetchRequest) -> list[tuple[Any, Any, Any]]:
    registry = ctx.broker.topics
    out: list[tuple[Any, Any, Any]] = []
    for ft in request.topics:
        if ctx.api_version >= 13:
            out.append((ft, registry.by_id.get(ft.topic_id), ft.topic_id))
        else:
            out.append((ft, registry.get(ft.topic), None))
    return out


def _build(
    ctx: RequestContext, request: FetchRequest, resolved: list[Any], budget: int
) -> tuple[FetchResponse, int, bool]:
    total = 0
    has_error = False
    first = True
    responses = []
    new_leaders: set[int] = set()
    for ft, topic, topic_id in resolved:
        parts = []
        for fp in ft.partitions:
            if topic is None and topic_id is not None:
                pd, n = (
                    PartitionData(
                        partition_index=fp.partition, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                    ),
                    0,
                )
            else:
                pd, n = _partition_data(
                    ctx, topic, fp, budget - total, first, request.isolation_level
                )
            if n:
                first = False
                total += n
            if pd.error_code:
                has_error = True
                if pd.current_leader.leader_id >= 0:
                    new_leaders.add(pd.current_leader.leader_id)
            parts.append(pd)
        responses.append(
            FetchableTopicResponse(topic=ft.topic, topic_id=ft.topic_id, partitions=parts)
        )
    return (
        FetchResponse(
            error_code=ErrorCode.NONE,
            session_id=0,
            responses=responses,
            node_endpoints=[
                NodeEndpoint(node_id=n, host=h, port=p, rack=None)
                for n, h, p in leader_endpoints(ctx, new_leaders)
            ],
        ),
        total,
        has_error,
    )


async def handle(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    if request.isolation_level not in (0, 1):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"isolation_level={request.isolation_level}")
    deadline = trio.current_time() + max(0, request.max_wait_ms) / 1000
    # The broker's fetch.max.bytes caps the request's max_bytes, and min_bytes with it, as
    # in Kafka's KafkaApis.handleFetchRequest (kmock has no quota window to cap it further).
    max_bytes = min(request.max_bytes, ctx.broker.config["fetch.max.bytes"])
    min_bytes = min(request.min_bytes, max_bytes)
    resolved = _resolve(ctx, request)
    while True:
        response, total, has_error = _build(ctx, request, resolved, max_bytes)
        if total >= min_bytes or has_error or trio.current_time() >= deadline:
            return response
        waiter = trio.Event()
        partitions = [
            topic.partitions[fp.partition]
            for ft, topic, _ in resolved
            if topic is not None
            for fp in ft.partitions
            if 0 <= fp.partition < len(topic.partitions)
        ]
        if not partitions:
            return response
        for p in partitions:
            p.waiters.add(waiter)
        try:
            with trio.move_on_at(deadline):
                await waiter.wait()
        finally:
            for p in partitions:
                p.waiters.discard(waiter)
        # A topic deleted while we waited: resolve again.
        resolved = _resolve(ctx, request)
