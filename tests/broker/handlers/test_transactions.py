"""The transaction APIs over the wire, our own codec as the client: a transaction's life
(InitProducerId, AddPartitionsToTxn, a transactional Produce, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn) seen through ListOffsets, Fetch and OffsetFetch at both isolation
levels; the refusals (bad timeout, unknown partitions, partitions outside the transaction,
a stale epoch, markers from an older coordinator); the admin APIs; a transaction aborted
by the broker's timer past its timeout; and a restart with a transaction still open.

Markers are written after EndTxn is answered; a test waits for the transaction to complete
on the runtime's `changed` event, never by sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from protocol.records import build_batch, iter_batches
from tests.reliability.inproc import T0, create, running
from tests.wire import WireClient

E = ErrorCode
TID = "tid"
GROUP = "g"


# --- requests -------------------------------------------------------------------------------


def txn_produce(pid: int, epoch: int, seq: int, value: bytes, partition: int = 0) -> ProduceRequest:
    batch = build_batch(
        [(None, value, (), T0)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    return ProduceRequest(
        transactional_id=TID,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )


def produce_code(response: Any) -> int:
    return response.responses[0].partition_responses[0].error_code


def add_partitions(pid: int, epoch: int, topic: str = "t", partitions: tuple[int, ...] = (0,)):
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TID,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=list(partitions))],
    )


def txn_commit(pid: int, epoch: int, offset: int) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        transactional_id=TID,
        group_id=GROUP,
        producer_id=pid,
        producer_epoch=epoch,
        member_id="",
        topics=[
            TxnOffsetCommitRequestTopic(
                name="t",
                partitions=[
                    TxnOffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )


async def open_transaction(client: WireClient, timeout_ms: int = 60_000) -> tuple[int, int]:
    """Create topic "t" and open a transaction of TID holding one record ("a") in its
    partition 0: (producer id, epoch)."""
    await create(client, "t")
    init = await client.call(
        InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=timeout_ms), 4
    )
    pid, epoch = init.producer_id, init.producer_epoch
    await client.call(add_partitions(pid, epoch), 3)
    assert produce_code(await client.call(txn_produce(pid, epoch, 0, b"a"), 9)) == E.NONE
    return pid, epoch


async def latest(client: WireClient, isolation_level: int) -> int:
    response = await client.call(
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[
                ListOffsetsTopic(
                    name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
                )
            ],
        ),
        5,
    )
    return response.topics[0].partitions[0].offset


async def fetch(client: WireClient, isolation_level: int) -> Any:
    response = await client.call(
        FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            isolation_level=isolation_level,
            session_id=0,
            topics=[
                FetchTopic(
                    topic="t",
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        ),
        11,
    )
    return response.responses[0].partitions[0]


async def offset_fetch(client: WireClient, require_stable: bool) -> tuple[int, int]:
    response = await client.call(
        OffsetFetchRequest(
            group_id=GROUP,
            topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
            require_stable=require_stable,
        ),
        7,
    )
    p = response.topics[0].partitions[0]
    return p.error_code, p.committed_offset


async def until(broker: Any, done: Callable[[], bool]) -> None:
    """Wait until `done()`, checking each time transaction records take effect."""
    while True:
        changed = broker.transactions.changed
        if done():
            return
        await changed.wait()


def state(broker: Any) -> str:
    return str(broker.transactions.coordinator.transaction(TID).state)


# --- a transaction's life -----------------------------------------------------------------


async def test_abort_then_commit_over_the_wire(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            found = await client.call(FindCoordinatorRequest(key=TID, key_type=1), 3)
            assert (found.error_code, found.node_id) == (E.NONE, 0)
            init = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000), 4
            )
            assert init.error_code == E.NONE
            pid, epoch = init.producer_id, init.producer_epoch

            # A partition outside the transaction, then one inside it.
            response = await client.call(txn_produce(pid, epoch, 0, b"early"), 9)
            assert produce_code(response) == E.INVALID_TXN_STATE
            added = await client.call(add_partitions(pid, epoch), 3)
            assert (
                added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
                == 0
            )
            assert produce_code(await client.call(txn_produce(pid, epoch, 0, b"a"), 9)) == E.NONE
            # A stale epoch is refused as ReplicaManager refuses it.
            stale = await client.call(txn_produce(pid, epoch - 1, 1, b"zombie"), 9)
            assert produce_code(stale) == E.INVALID_PRODUCER_EPOCH
            assert await latest(client, 0) == 1
            assert await latest(client, 1) == 0  # the open transaction holds the LSO
            assert (await fetch(client, 1)).records == b""

            offsets = await client.call(
                AddOffsetsToTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, group_id=GROUP
                ),
                3,
            )
            assert offsets.error_code == E.NONE
            committed = await client.call(txn_commit(pid, epoch, 1), 3)
            assert committed.topics[0].partitions[0].error_code == E.NONE
            assert await offset_fetch(client, True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
            assert await offset_fetch(client, False) == (E.NONE, -1)

            ended = await client.call(
                EndTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=False
                ),
                3,
            )
            assert ended.error_code == E.NONE
            await until(broker, lambda: state(broker) == "CompleteAbort")
            assert await latest(client, 1) == 2  # the record and its ABORT marker
            part = await fetch(client, 1)
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [
                (pid, 0)
            ]
            assert [h.is_control for _, h in iter_batches(part.records)] == [False, True]
            assert (await fetch(client, 0)).aborted_transactions is None
            assert await offset_fetch(client, True) == (E.NONE, -1)  # dropped with the abort

            # The next transaction commits its record and its offset.
            await client.call(add_partitions(pid, epoch), 3)
            assert produce_code(await client.call(txn_produce(pid, epoch, 1, b"b"), 9)) == E.NONE
            await client.call(
                AddOffsetsToTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, group_id=GROUP
                ),
                3,
            )
            await client.call(txn_commit(pid, epoch, 2), 3)
            await client.call(
                EndTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=True
                ),
                3,
            )
            await until(broker, lambda: state(broker) == "CompleteCommit")
            assert await offset_fetch(client, True) == (E.NONE, 2)
            assert await latest(client, 1) == await latest(client, 0) == 4
            part = await fetch(client, 1)
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [
                (pid, 0)
            ]
            assert sum(1 for _ in iter_batches(part.records)) == 4

            described = await client.call(
                DescribeTransactionsRequest(transactional_ids=[TID, "x"]), 0
            )
            (ours, unknown) = described.transaction_states
            assert (ours.transaction_state, ours.producer_id) == ("CompleteCommit", pid)
            assert unknown.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
            listed = await client.call(
                ListTransactionsRequest(state_filters=[], producer_id_filters=[pid]), 1
            )
            assert [t.transactional_id for t in listed.transaction_states] == [TID]
            producers = await client.call(
                DescribeProducersRequest(topics=[TopicRequest(name="t", partition_indexes=[0, 9])]),
                0,
            )
            (known, missing) = producers.topics[0].partitions
            assert [
                (p.producer_id, p.current_txn_start_offset) for p in known.active_producers
            ] == [(pid, -1)]
            assert missing.error_code == E.UNKNOWN_TOPIC_OR_PARTITION


# --- refusals -----------------------------------------------------------------------------


async def test_bad_transaction_requests_get_kafkas_error_codes(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            # Clients neither create __transaction_state nor write to it.
            meta = await client.call(
                MetadataRequest(
                    topics=[MetadataRequestTopic(name="__transaction_state")],
                    allow_auto_topic_creation=True,
                ),
                9,
            )
            assert meta.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
            batched = await client.call(
                FindCoordinatorRequest(key_type=1, coordinator_keys=["a", ""]), 4
            )
            internal = ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    TopicProduceData(
                        name="__transaction_state",
                        partition_data=[
                            PartitionProduceData(
                                index=0, records=build_batch([(b"k", b"v", (), T0)])
                            )
                        ],
                    )
                ],
            )
            assert produce_code(await client.call(internal, 9)) == E.INVALID_TOPIC_EXCEPTION
            assert [c.error_code for c in batched.coordinators] == [E.NONE, E.INVALID_REQUEST]
            share = await client.call(FindCoordinatorRequest(key="s", key_type=2), 3)
            assert share.error_code == E.COORDINATOR_NOT_AVAILABLE
            too_long = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=10**9), 4
            )
            assert too_long.error_code == E.INVALID_TRANSACTION_TIMEOUT
            init = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000), 4
            )
            pid, epoch = init.producer_id, init.producer_epoch
            unknown = await client.call(add_partitions(pid, epoch, "t", (0, 5)), 3)
            codes = [
                p.partition_error_code
                for p in unknown.results_by_topic_v3_and_below[0].results_by_partition
            ]
            assert codes == [E.OPERATION_NOT_ATTEMPTED, E.UNKNOWN_TOPIC_OR_PARTITION]
            wrong = await client.call(add_partitions(pid + 1, epoch), 3)
            assert (
                wrong.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
                == E.INVALID_PRODUCER_ID_MAPPING
            )
            # Offsets of a group whose partition is not in the transaction (no
            # AddOffsetsToTxn), and of a stale epoch.
            refused = await client.call(txn_commit(pid, epoch, 1), 3)
            assert refused.topics[0].partitions[0].error_code == E.INVALID_TXN_STATE
            refused = await client.call(txn_commit(pid, epoch + 1, 1), 3)
            assert refused.topics[0].partitions[0].error_code == E.INVALID_PRODUCER_EPOCH
            end = await client.call(
                EndTxnRequest(
                    transactional_id="nobody", producer_id=1, producer_epoch=0, committed=True
                ),
                3,
            )
            assert end.error_code == E.INVALID_PRODUCER_ID_MAPPING
            # A transactional batch without a transactional id is not a transaction.
            plain = txn_produce(pid, epoch, 0, b"x")
            plain = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=plain.topic_data)
            assert produce_code(await client.call(plain, 9)) == E.INVALID_RECORD

            # WriteTxnMarkers from a client: written as Kafka 4.1 does without an
            # authorizer, with per-partition errors.
            markers = await client.call(
                WriteTxnMarkersRequest(
                    markers=[
                        WritableTxnMarker(
                            producer_id=pid,
                            producer_epoch=epoch,
                            transaction_result=False,
                            topics=[
                                WritableTxnMarkerTopic(name="t", partition_indexes=[0]),
                                WritableTxnMarkerTopic(name="nope", partition_indexes=[0]),
                            ],
                            coordinator_epoch=5,
                        )
                    ]
                ),
                1,
            )
            codes = [p.error_code for t in markers.markers[0].topics for p in t.partitions]
            assert codes == [E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION]
            older = await client.call(
                WriteTxnMarkersRequest(
                    markers=[
                        WritableTxnMarker(
                            producer_id=pid,
                            producer_epoch=epoch,
                            transaction_result=True,
                            topics=[WritableTxnMarkerTopic(name="t", partition_indexes=[0])],
                            coordinator_epoch=4,
                        )
                    ]
                ),
                1,
            )
            assert older.markers[0].topics[0].partitions[0].error_code == (
                E.TRANSACTION_COORDINATOR_FENCED
            )
            assert broker.topics.partition("t", 0).log.log_end_offset == 1  # one marker


# --- the timeout -------------------------------------------------------------------------


async def test_a_transaction_left_open_past_its_timeout_is_aborted_by_the_broker(
    tmp_path: Path,
) -> None:
    """The broker's own timer aborts it at its periodic check (Kafka's
    abortTimedOutTransactions, every transaction.abort.timed.out.transaction.cleanup.interval
    .ms), however many requests came meanwhile: none of them moves that check."""
    settings = {
        "kmock.clock": "virtual",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10_000,
    }
    with trio.fail_after(30):
        async with running(tmp_path, **settings) as broker:
            client = await WireClient.connect(broker)
            pid, epoch = await open_transaction(client, timeout_ms=5_000)
            await broker.clock.advance(6_000)  # past the timeout, not yet at the check
            await client.call(add_partitions(pid, epoch), 3)  # requests wake no timer
            assert state(broker) == "Ongoing"
            assert await latest(client, 1) == 0
            await broker.clock.advance(4_000)  # the check, 10 s after the load
            await until(broker, lambda: state(broker) == "CompleteAbort")
            assert await latest(client, 1) == 2  # the record and its ABORT marker
            part = await fetch(client, 1)
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [
                (pid, 0)
            ]
            # The abort bumped the epoch (Kafka's prepareFenceProducerEpoch): the producer
            # that timed out is fenced.
            ended = await client.call(
                EndTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=True
                ),
                3,
            )
            assert ended.error_code == E.PRODUCER_FENCED


# --- restart with an open transaction ----------------------------------------------------


async def test_an_open_transactions_offsets_stay_pending_across_a_restart(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            pid, epoch = await open_transaction(client)
            await client.call(
                AddOffsetsToTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, group_id=GROUP
                ),
                3,
            )
            await client.call(txn_commit(pid, epoch, 1), 3)
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            assert state(broker) == "Ongoing"
            assert await offset_fetch(client, True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
            assert await latest(client, 1) == 0
            await client.call(
                EndTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=True
                ),
                3,
            )
            await until(broker, lambda: state(broker) == "CompleteCommit")
            assert await offset_fetch(client, True) == (E.NONE, 1)
            assert await latest(client, 1) == 2
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            assert state(broker) == "CompleteCommit"
            assert await offset_fetch(client, True) == (E.NONE, 1)  # replayed from the marker
            assert await latest(client, 1) == 2


# --- KIP-890 part 2, and the partition count of __transaction_state -----------------------


async def test_produce_v12_adds_its_partition_and_older_versions_only_verify(
    tmp_path: Path,
) -> None:
    """Produce v12 is not advertised yet, so this asks the runtime as the Produce handler
    does for it."""
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            init = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000), 4
            )
            pid, epoch = init.producer_id, init.producer_epoch
            runtime = broker.transactions
            assert await runtime.verify_produce(TID, pid, epoch, [("t", 0)], 11) == {
                ("t", 0): E.INVALID_TXN_STATE
            }
            assert await runtime.verify_produce(TID, pid, epoch, [("t", 0)], 12) == {}
            assert state(broker) == "Ongoing"
            assert runtime.coordinator.transaction(TID).topic_partitions == {("t", 0)}
            assert await runtime.verify_produce(TID, pid, epoch, [("t", 0)], 11) == {}
            assert await runtime.verify_produce(TID, pid, epoch + 1, [("t", 0)], 12) == {
                ("t", 0): E.INVALID_PRODUCER_EPOCH
            }


async def test_an_existing_transaction_state_topic_keeps_its_partition_count(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with running(tmp_path, **{"transaction.state.log.num.partitions": 3}) as broker:
            client = await WireClient.connect(broker)
            init = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000), 4
            )
            pid = init.producer_id
        async with running(tmp_path, **{"transaction.state.log.num.partitions": 50}) as broker:
            assert broker.transactions.config.transaction_state_log_num_partitions == 3
            assert broker.transactions.coordinator.transaction(TID).producer_id == pid
            client = await WireClient.connect(broker)
            again = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000), 4
            )
            assert (again.error_code, again.producer_id) == (E.NONE, pid)


async def test_txn_offset_commit_to_a_missing_topic_or_partition(tmp_path: Path) -> None:
    # Kafka's handleTxnOffsetCommitRequest: partitions its metadata cache does not know are
    # answered UNKNOWN_TOPIC_OR_PARTITION; the others are committed with the transaction.
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            init = await client.call(
                InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000), 4
            )
            pid, epoch = init.producer_id, init.producer_epoch
            await client.call(
                AddOffsetsToTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, group_id=GROUP
                ),
                3,
            )
            request = txn_commit(pid, epoch, 1)
            (known,) = request.topics
            partition = known.partitions[0]
            request = replace(
                request,
                topics=[
                    TxnOffsetCommitRequestTopic(
                        name="t", partitions=[partition, replace(partition, partition_index=5)]
                    ),
                    TxnOffsetCommitRequestTopic(name="missing", partitions=[partition]),
                ],
            )
            response = await client.call(request, 3)
            codes = {
                (t.name, p.partition_index): p.error_code
                for t in response.topics
                for p in t.partitions
            }
            assert codes == {
                ("t", 0): E.NONE,
                ("t", 5): E.UNKNOWN_TOPIC_OR_PARTITION,
                ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
            }
            await client.call(
                EndTxnRequest(
                    transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=True
                ),
                3,
            )
            await until(broker, lambda: state(broker) == "CompleteCommit")
            assert await offset_fetch(client, True) == (E.NONE, 1)
