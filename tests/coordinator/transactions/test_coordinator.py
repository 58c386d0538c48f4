"""The transaction coordinator's verbs, walked with time as literals."""

import pytest

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.outcome import TxnMarker, partition_for
from coordinator.transactions.state import TransactionState
from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
    AddPartitionsToTxnTransaction,
)
from protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    TopicData,
)
from protocol.messages.describe_transactions import (
    TransactionState as Described,
)
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from protocol.messages.list_transactions import ListedTransactionState, ListTransactionsRequest
from protocol.records import ControlRecordType
from protocol.transaction_log import PartitionsSchema, TransactionLogValue
from tests.coordinator.transactions.builders import (
    FIRST_PRODUCER_ID,
    T0,
    TIMEOUT_MS,
    Broker,
    code_of,
    reply,
    token,
)

_S = TransactionState
_E = ErrorCode


def started(broker: Broker, partitions=None, now_ms=T0):
    producer = broker.init(now_ms=now_ms)
    broker.add(producer, partitions, now_ms)
    return producer


# --- InitProducerId ---------------------------------------------------------------------


def test_init_of_a_new_id_allocates_a_producer_at_epoch_0_and_writes_empty():
    broker = Broker()
    assert broker.init("txn", T0) == InitProducerIdResponse(
        producer_id=FIRST_PRODUCER_ID, producer_epoch=0
    )
    assert broker.state() is _S.EMPTY
    (record,) = broker.log
    assert record.partition == partition_for("txn", 50)
    assert record.value_version == 1
    assert record.value == TransactionLogValue(
        producer_id=FIRST_PRODUCER_ID,
        previous_producer_id=FIRST_PRODUCER_ID,
        producer_epoch=0,
        transaction_timeout_ms=TIMEOUT_MS,
        transaction_status=0,
        transaction_partitions=None,
        transaction_last_update_timestamp_ms=T0,
        transaction_start_timestamp_ms=-1,
    )


def test_partition_for_is_javas_string_hash():
    # "txn".hashCode() == 115306; Integer.MIN_VALUE's abs is 0 ("polygenelubricants").
    assert partition_for("txn", 50) == 115306 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("", 50) == 0


def test_init_again_bumps_the_epoch():
    broker = Broker()
    broker.init(now_ms=T0)
    assert broker.init(now_ms=T0 + 1) == InitProducerIdResponse(
        producer_id=FIRST_PRODUCER_ID, producer_epoch=1
    )


def test_init_without_transactional_id_gets_a_fresh_id_and_writes_nothing():
    broker = Broker()
    tok = token()
    outcome = broker.coordinator.init_producer_id(
        tok, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1), 4, T0
    )
    assert reply(outcome, tok) == InitProducerIdResponse(producer_id=FIRST_PRODUCER_ID)
    assert outcome.records == ()


@pytest.mark.parametrize("timeout_ms", [0, -1, 900001])
def test_init_with_a_timeout_outside_the_maximum_is_invalid_transaction_timeout(timeout_ms):
    broker = Broker()
    assert code_of(broker.init, timeout_ms=timeout_ms) == _E.INVALID_TRANSACTION_TIMEOUT
    assert broker.coordinator.transaction("txn") is None


def test_the_maximum_timeout_is_the_setting():
    broker = Broker(TransactionConfig(transaction_max_timeout_ms=1000))
    assert code_of(broker.init, timeout_ms=1001) == _E.INVALID_TRANSACTION_TIMEOUT
    assert broker.init(timeout_ms=1000).error_code == 0


def test_init_with_an_empty_id_is_invalid_request():
    assert code_of(Broker().init, "") == _E.INVALID_REQUEST


def test_init_with_half_a_producer_is_invalid_request():
    assert code_of(Broker().init, producer_id=5) == _E.INVALID_REQUEST


def test_init_retried_with_the_previous_epoch_returns_the_same_epoch():
    broker = Broker()
    first = broker.init()
    second = broker.init(producer_id=first.producer_id, producer_epoch=first.producer_epoch)
    assert second.producer_epoch == 1
    again = broker.init(producer_id=first.producer_id, producer_epoch=first.producer_epoch)
    assert again.producer_epoch == 1  # a retry of the bump, not a new one


@pytest.mark.parametrize(
    ("version", "code"), [(3, _E.INVALID_PRODUCER_EPOCH), (4, _E.PRODUCER_FENCED)]
)
def test_init_with_a_stale_epoch_is_fenced(version, code):
    broker = Broker()
    first = broker.init()
    broker.init()
    broker.init()
    assert (
        code_of(broker.init, version=version, producer_id=first.producer_id, producer_epoch=0)
        == code
    )


def test_init_with_another_producer_id_is_fenced():
    broker = Broker()
    broker.init()
    assert code_of(broker.init, producer_id=77, producer_epoch=0) == _E.PRODUCER_FENCED


def test_init_while_ongoing_fences_aborts_and_answers_concurrent_transactions():
    broker = Broker()
    producer = started(broker, {"orders": [0, 1]})
    answer = broker.init(now_ms=T0 + 5, write_markers=False)
    assert answer.error_code == _E.CONCURRENT_TRANSACTIONS
    assert broker.state() is _S.PREPARE_ABORT
    (marker,) = broker.markers
    # The fence bumps once, and transaction.version 2 bumps the abort once more.
    assert marker == TxnMarker(
        "txn", producer.producer_id, 2, 0, ControlRecordType.ABORT, (("orders", 0), ("orders", 1))
    )
    assert code_of(broker.init) == _E.CONCURRENT_TRANSACTIONS
    assert code_of(broker.add, producer) == _E.PRODUCER_FENCED
    broker.append(
        broker.coordinator.markers_written(
            "txn", producer.producer_id, 2, marker.partitions, T0 + 6
        ),
        T0 + 6,
    )
    assert broker.state() is _S.COMPLETE_ABORT
    assert broker.init(now_ms=T0 + 7).producer_epoch == 3


def test_fencing_with_transaction_version_0_bumps_once():
    broker = Broker(TransactionConfig(transaction_version=0))
    producer = started(broker)
    assert broker.init().error_code == _E.CONCURRENT_TRANSACTIONS
    assert broker.log[-1].value_version == 0
    assert broker.state() is _S.COMPLETE_ABORT
    assert broker.coordinator.transaction("txn").producer_epoch == producer.producer_epoch + 1
    assert broker.init().producer_epoch == producer.producer_epoch + 2


def test_an_exhausted_epoch_moves_to_a_new_producer_id():
    broker = Broker()
    broker.init()
    broker.coordinator.transaction("txn").producer_epoch = 2**15 - 2
    answer = broker.init()
    assert answer == InitProducerIdResponse(producer_id=FIRST_PRODUCER_ID + 1, producer_epoch=0)
    assert broker.coordinator.transaction("txn").previous_producer_id == FIRST_PRODUCER_ID


# --- AddPartitionsToTxn, AddOffsetsToTxn ----------------------------------------------------


def test_add_partitions_starts_the_transaction_and_its_clock():
    broker = Broker()
    producer = broker.init(now_ms=T0)
    response = broker.add(producer, {"orders": [0, 1], "audit": [2]}, T0 + 10)
    assert response == AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnTopicResult(
                name="orders",
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(partition_index=0, partition_error_code=0),
                    AddPartitionsToTxnPartitionResult(partition_index=1, partition_error_code=0),
                ],
            ),
            AddPartitionsToTxnTopicResult(
                name="audit",
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(partition_index=2, partition_error_code=0)
                ],
            ),
        ]
    )
    metadata = broker.coordinator.transaction("txn")
    assert metadata.state is _S.ONGOING
    assert metadata.txn_start_timestamp == T0 + 10
    assert broker.log[-1].value.transaction_partitions == [
        PartitionsSchema(topic="audit", partition_ids=[2]),
        PartitionsSchema(topic="orders", partition_ids=[0, 1]),
    ]


def test_adding_partitions_already_in_the_transaction_writes_nothing():
    broker = Broker()
    producer = started(broker, {"orders": [0, 1]})
    before = len(broker.log)
    broker.add(producer, {"orders": [1]}, T0 + 50)
    assert len(broker.log) == before
    broker.add(producer, {"orders": [2]}, T0 + 60)
    assert len(broker.log) == before + 1
    metadata = broker.coordinator.transaction("txn")
    assert metadata.topic_partitions == {("orders", 0), ("orders", 1), ("orders", 2)}
    assert metadata.txn_start_timestamp == T0  # the transaction's clock does not restart


def test_add_for_an_unknown_id_is_invalid_producer_id_mapping():
    broker = Broker()
    producer = InitProducerIdResponse(producer_id=5, producer_epoch=0)
    assert code_of(broker.add, producer, transactional_id="nope") == _E.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.parametrize(
    ("version", "code"), [(1, _E.INVALID_PRODUCER_EPOCH), (2, _E.PRODUCER_FENCED)]
)
def test_add_with_an_old_epoch_is_fenced(version, code):
    broker = Broker()
    old = broker.init()
    broker.init()
    assert code_of(broker.add, old, version=version) == code


def test_add_while_a_commit_is_being_written_is_concurrent_transactions():
    broker = Broker()
    producer = started(broker)
    end = broker.end(producer, version=3, write_markers=False)
    assert end == EndTxnResponse(producer_id=producer.producer_id, producer_epoch=0)
    assert code_of(broker.add, producer) == _E.CONCURRENT_TRANSACTIONS
    assert code_of(broker.init) == _E.CONCURRENT_TRANSACTIONS


def test_add_offsets_adds_the_groups_offsets_partition():
    broker = Broker()
    producer = broker.init()
    offsets_partition = ("__consumer_offsets", 31)  # the broker's answer for "my-group"
    response = broker.add_offsets(producer, "my-group", offsets_partition=offsets_partition)
    assert response.error_code == 0
    assert broker.coordinator.transaction("txn").topic_partitions == {offsets_partition}


def test_v4_add_answers_per_transaction_and_verify_only_checks_membership():
    broker = Broker()
    a = started(broker, {"orders": [0]})
    tok = token()
    request = AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnTransaction(
                transactional_id="txn",
                producer_id=a.producer_id,
                producer_epoch=a.producer_epoch,
                verify_only=True,
                topics=[AddPartitionsToTxnTopic(name="orders", partitions=[0, 1])],
            ),
            AddPartitionsToTxnTransaction(
                transactional_id="ghost",
                producer_id=1,
                producer_epoch=0,
                topics=[AddPartitionsToTxnTopic(name="orders", partitions=[3])],
            ),
        ]
    )
    outcome = broker.coordinator.add_partitions(tok, request, 5, T0)
    assert outcome.records == ()

    def result(tid, *codes):
        partitions = [0, 1] if tid == "txn" else [3]
        return AddPartitionsToTxnResult(
            transactional_id=tid,
            topic_results=[
                AddPartitionsToTxnTopicResult(
                    name="orders",
                    results_by_partition=[
                        AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=c)
                        for p, c in zip(partitions, codes, strict=True)
                    ],
                )
            ],
        )

    assert reply(outcome, tok) == AddPartitionsToTxnResponse(
        results_by_transaction=[
            result("txn", _E.NONE, _E.TRANSACTION_ABORTABLE),
            result("ghost", _E.INVALID_PRODUCER_ID_MAPPING),
        ]
    )


def test_implicit_add_with_transaction_version_2_records_the_client_version():
    broker = Broker()
    producer = broker.init()
    outcome = broker.coordinator.add_partitions_implicitly(
        "txn", producer.producer_id, producer.producer_epoch, [("orders", 4)], T0
    )
    broker.append(outcome, T0)
    metadata = broker.coordinator.transaction("txn")
    assert metadata.state is _S.ONGOING
    assert metadata.client_transaction_version == 2
    assert (
        code_of(
            broker.coordinator.add_partitions_implicitly, "txn", producer.producer_id, 7, [], T0
        )
        == _E.PRODUCER_FENCED
    )


# --- EndTxn --------------------------------------------------------------------------------


def test_commit_with_v4_writes_prepare_commit_then_markers_then_complete_commit():
    broker = Broker()
    producer = started(broker, {"orders": [0, 1]})
    tok = token()
    request = EndTxnRequest(
        transactional_id="txn", producer_id=producer.producer_id, producer_epoch=0, committed=True
    )
    outcome = broker.coordinator.end_txn(tok, request, 4, T0 + 100)
    assert reply(outcome, tok).error_code == 0
    assert [r.value.transaction_status for r in outcome.records] == [_S.PREPARE_COMMIT.id]
    follow = broker.coordinator.on_appended(outcome, T0 + 100)
    assert follow.markers == (
        TxnMarker(
            "txn",
            producer.producer_id,
            0,
            0,
            ControlRecordType.COMMIT,
            (("orders", 0), ("orders", 1)),
        ),
    )
    assert follow.records == ()
    half = broker.coordinator.markers_written(
        "txn", producer.producer_id, 0, [("orders", 0)], T0 + 101
    )
    assert half.records == ()
    done = broker.coordinator.markers_written(
        "txn", producer.producer_id, 0, [("orders", 1)], T0 + 102
    )
    (record,) = done.records
    assert record.value.transaction_status == _S.COMPLETE_COMMIT.id
    assert broker.state() is _S.PREPARE_COMMIT
    broker.coordinator.on_appended(done, T0 + 102)
    metadata = broker.coordinator.transaction("txn")
    assert metadata.state is _S.COMPLETE_COMMIT
    assert metadata.topic_partitions == set()
    assert metadata.producer_epoch == 0


def test_commit_with_v5_bumps_the_epoch_and_answers_it():
    broker = Broker()
    producer = started(broker)
    assert broker.end(producer, version=5) == EndTxnResponse(
        producer_id=producer.producer_id, producer_epoch=1
    )
    assert broker.markers[-1].producer_epoch == 1
    assert broker.state() is _S.COMPLETE_COMMIT
    # A retry with the epoch it was sent with is recognised and answered again.
    assert broker.end(producer, version=5) == EndTxnResponse(
        producer_id=producer.producer_id, producer_epoch=1
    )
    # The next transaction uses the new epoch; the old one is fenced.
    assert code_of(broker.add, producer) == _E.PRODUCER_FENCED
    bumped = InitProducerIdResponse(producer_id=producer.producer_id, producer_epoch=1)
    assert (
        broker.add(bumped)
        .results_by_topic_v3_and_below[0]
        .results_by_partition[0]
        .partition_error_code
        == 0
    )


def test_markers_for_a_stale_epoch_are_ignored():
    broker = Broker()
    producer = started(broker)
    broker.end(producer, write_markers=False)
    assert (
        broker.coordinator.markers_written(
            "txn", producer.producer_id, 0, [("orders", 0)], T0
        ).records
        == ()
    )
    assert broker.state() is _S.PREPARE_COMMIT


@pytest.mark.parametrize(
    ("state_setup", "committed", "version", "code"),
    [
        ("empty", True, 4, _E.INVALID_TXN_STATE),
        ("empty", False, 4, _E.INVALID_TXN_STATE),
        ("empty", True, 5, _E.INVALID_TXN_STATE),
        ("complete_commit", False, 4, _E.INVALID_TXN_STATE),
        ("complete_abort", True, 4, _E.INVALID_TXN_STATE),
        ("prepare_commit", False, 4, _E.INVALID_TXN_STATE),
        ("prepare_commit", True, 4, _E.CONCURRENT_TRANSACTIONS),
        ("prepare_abort", True, 4, _E.INVALID_TXN_STATE),
        ("prepare_abort", False, 4, _E.CONCURRENT_TRANSACTIONS),
    ],
)
def test_end_txn_answers_by_state(state_setup, committed, version, code):
    broker = Broker()
    producer = broker.init()
    if state_setup != "empty":
        broker.add(producer)
        ending = state_setup.split("_")[1] == "commit"
        broker.end(producer, ending, version=4, write_markers=state_setup.startswith("complete"))
    assert code_of(broker.end, producer, committed, version=version) == code


def test_end_txn_v1_reports_fencing_as_invalid_producer_epoch():
    broker = Broker()
    old = broker.init()
    broker.init()
    assert code_of(broker.end, old, version=1) == _E.INVALID_PRODUCER_EPOCH
    assert code_of(broker.end, old, version=2) == _E.PRODUCER_FENCED


def test_v1_retry_of_a_completed_commit_is_none():
    broker = Broker()
    producer = started(broker)
    broker.end(producer, version=4)
    assert broker.end(producer, version=4).error_code == 0


def test_abort_with_v5_from_empty_completes_at_once_with_a_bumped_epoch():
    broker = Broker()
    producer = broker.init(now_ms=T0)
    answer = broker.end(producer, committed=False, now_ms=T0 + 3, version=5)
    assert answer == EndTxnResponse(producer_id=producer.producer_id, producer_epoch=1)
    assert broker.markers == []
    assert broker.state() is _S.COMPLETE_ABORT
    assert [r.value.transaction_status for r in broker.log[1:]] == [
        _S.PREPARE_ABORT.id,
        _S.COMPLETE_ABORT.id,
    ]


def test_end_txn_for_an_unknown_id_is_invalid_producer_id_mapping():
    producer = InitProducerIdResponse(producer_id=5, producer_epoch=0)
    assert code_of(Broker().end, producer) == _E.INVALID_PRODUCER_ID_MAPPING


def test_end_txn_with_another_producer_id_is_invalid_producer_id_mapping():
    broker = Broker()
    started(broker)
    assert code_of(broker.end, InitProducerIdResponse(producer_id=9, producer_epoch=0)) == (
        _E.INVALID_PRODUCER_ID_MAPPING
    )


# --- timeouts and expiry ---------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted_at_the_next_check():
    broker = Broker()
    producer = started(broker, now_ms=T0)
    assert broker.coordinator.next_deadline_ms() == T0 + 10000
    assert broker.expire(T0 + 10000).records == ()  # started T0, timeout 60 s: not yet
    assert broker.coordinator.next_deadline_ms() == T0 + 20000
    for check in range(T0 + 20000, T0 + 60001, 10000):  # at T0 + 60000 it is not yet past
        assert broker.expire(check).records == ()
    assert broker.state() is _S.ONGOING
    outcome = broker.expire(T0 + 70000, write_markers=False)
    assert [r.value.transaction_status for r in outcome.records] == [_S.PREPARE_ABORT.id]
    assert broker.markers[-1].control_type is ControlRecordType.ABORT
    assert broker.markers[-1].producer_epoch == producer.producer_epoch + 2
    assert code_of(broker.end, producer) == _E.PRODUCER_FENCED


def test_the_abort_check_interval_is_the_setting():
    config = TransactionConfig(transaction_abort_timed_out_transaction_cleanup_interval_ms=500)
    broker = Broker(config)
    started(broker, now_ms=T0)
    assert broker.coordinator.next_deadline_ms() == T0 + 500


def test_an_idle_id_expires_with_a_tombstone_and_is_forgotten():
    config = TransactionConfig(
        transactional_id_expiration_ms=1000,
        transaction_remove_expired_transaction_cleanup_interval_ms=5000,
    )
    broker = Broker(config)
    broker.init(now_ms=T0)
    broker.init("busy", now_ms=T0)
    broker.add(
        InitProducerIdResponse(producer_id=FIRST_PRODUCER_ID + 1, producer_epoch=0),
        transactional_id="busy",
    )
    outcome = broker.expire(T0 + 5000)
    assert [(r.transactional_id, r.value) for r in outcome.records] == [("txn", None)]
    assert broker.coordinator.transaction("txn") is None
    assert broker.coordinator.transaction("busy").state is _S.ONGOING  # not idle: kept
    described = broker.coordinator.describe_transactions(
        DescribeTransactionsRequest(transactional_ids=["txn"])
    )
    assert described.transaction_states == [
        Described(error_code=_E.TRANSACTIONAL_ID_NOT_FOUND, transactional_id="txn")
    ]


# --- describe, list -----------------------------------------------------------------------------


def test_describe_reports_the_state_and_partitions():
    broker = Broker()
    producer = started(broker, {"orders": [1, 0], "audit": [3]}, now_ms=T0 + 2)
    response = broker.coordinator.describe_transactions(
        DescribeTransactionsRequest(transactional_ids=["txn", "", "other"])
    )
    assert response.transaction_states == [
        Described(
            transactional_id="txn",
            transaction_state="Ongoing",
            transaction_timeout_ms=TIMEOUT_MS,
            transaction_start_time_ms=T0 + 2,
            producer_id=producer.producer_id,
            producer_epoch=0,
            topics=[
                TopicData(topic="audit", partitions=[3]),
                TopicData(topic="orders", partitions=[0, 1]),
            ],
        ),
        Described(error_code=_E.INVALID_REQUEST, transactional_id=""),
        Described(error_code=_E.TRANSACTIONAL_ID_NOT_FOUND, transactional_id="other"),
    ]


def test_list_filters_by_state_producer_and_duration():
    broker = Broker()
    a = started(broker, now_ms=T0)
    broker.init("idle", now_ms=T0)

    def listed(now_ms=T0 + 100, **filters):
        return broker.coordinator.list_transactions(ListTransactionsRequest(**filters), now_ms)

    assert listed().transaction_states == [
        ListedTransactionState(
            transactional_id="idle", producer_id=a.producer_id + 1, transaction_state="Empty"
        ),
        ListedTransactionState(
            transactional_id="txn", producer_id=a.producer_id, transaction_state="Ongoing"
        ),
    ]
    ongoing_only = listed(state_filters=["Ongoing", "Nonsense"])
    assert [t.transactional_id for t in ongoing_only.transaction_states] == ["txn"]
    assert ongoing_only.unknown_state_filters == ["Nonsense"]
    assert [
        t.transactional_id
        for t in listed(producer_id_filters=[a.producer_id + 1]).transaction_states
    ] == ["idle"]
    assert [t.transactional_id for t in listed(duration_filter=100).transaction_states] == ["idle"]
    assert [t.transactional_id for t in listed(duration_filter=99).transaction_states] == [
        "idle",
        "txn",
    ]


# --- failures, loading, replay ------------------------------------------------------------------


def test_a_failed_write_answers_not_coordinator_and_leaves_the_state_as_it_was():
    broker = Broker()
    producer = broker.init()
    tok = token()
    request = EndTxnRequest(
        transactional_id="txn", producer_id=producer.producer_id, producer_epoch=0, committed=False
    )
    broker.add(producer)
    outcome = broker.coordinator.end_txn(tok, request, 5, T0)
    failed = broker.coordinator.on_append_failed(outcome, _E.KAFKA_STORAGE_ERROR, T0)
    assert reply(failed, tok) == EndTxnResponse(error_code=_E.NOT_COORDINATOR)
    metadata = broker.coordinator.transaction("txn")
    assert (metadata.state, metadata.pending_state, metadata.producer_epoch) == (
        _S.ONGOING,
        None,
        0,
    )
    assert broker.end(producer, committed=False).error_code == 0


def test_a_failed_fence_does_not_bump_the_epoch_twice():
    broker = Broker()
    started(broker)
    tok = token()
    outcome = broker.coordinator.init_producer_id(
        tok, InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=TIMEOUT_MS), 5, T0
    )
    failed = broker.coordinator.on_append_failed(outcome, _E.UNKNOWN_TOPIC_OR_PARTITION, T0)
    assert reply(failed, tok).error_code == _E.COORDINATOR_NOT_AVAILABLE
    metadata = broker.coordinator.transaction("txn")
    assert metadata.has_failed_epoch_fence
    assert metadata.producer_epoch == 1  # the fence's epoch, kept in memory as Kafka does
    assert broker.init().error_code == _E.CONCURRENT_TRANSACTIONS
    assert broker.markers[-1].producer_epoch == 2  # fenced at 1 again, then bumped by the abort


def test_requests_while_loading_are_coordinator_load_in_progress():
    coordinator = TransactionCoordinator(TransactionConfig(), lambda: 1)
    request = InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=1000)
    assert (
        code_of(coordinator.init_producer_id, 1, request, 4, T0) == _E.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert coordinator.next_deadline_ms() is None
    coordinator.finish_load(T0)
    assert coordinator.init_producer_id(1, request, 4, T0).records


def _view(coordinator, tid):
    m = coordinator.transaction(tid)
    return (
        m.state,
        m.producer_id,
        m.producer_epoch,
        m.topic_partitions,
        m.txn_start_timestamp,
        m.txn_timeout_ms,
    )


def test_replay_rebuilds_every_id():
    broker = Broker()
    a = started(broker, {"orders": [0]}, now_ms=T0)
    broker.end(a, now_ms=T0 + 1)
    broker.init("b", now_ms=T0 + 2)
    broker.add(
        InitProducerIdResponse(producer_id=FIRST_PRODUCER_ID + 1, producer_epoch=0),
        {"x": [1]},
        T0 + 3,
        transactional_id="b",
    )
    replayed = broker.replayed()
    assert replayed.finish_load(T0 + 4).markers == ()
    for tid in ("txn", "b"):
        assert _view(replayed, tid) == _view(broker.coordinator, tid)


def test_replay_of_a_prepared_commit_sends_its_markers_again():
    broker = Broker(coordinator_epoch=3)
    producer = started(broker, {"orders": [0, 1]})
    broker.end(producer, write_markers=False)
    replayed = TransactionCoordinator(TransactionConfig(), broker.allocate, coordinator_epoch=4)
    for record in broker.log:
        replayed.replay(record.key_bytes(), record.value_bytes())
    outcome = replayed.finish_load(T0 + 9)
    assert outcome.markers == (
        TxnMarker(
            "txn",
            producer.producer_id,
            1,
            4,
            ControlRecordType.COMMIT,
            (("orders", 0), ("orders", 1)),
        ),
    )
    done = replayed.markers_written(
        "txn", producer.producer_id, 1, [("orders", 0), ("orders", 1)], T0 + 10
    )
    replayed.on_appended(done, T0 + 10)
    assert replayed.transaction("txn").state is _S.COMPLETE_COMMIT


def test_replay_of_a_tombstone_removes_the_id_and_skips_unknown_record_types():
    broker = Broker(
        TransactionConfig(
            transactional_id_expiration_ms=0,
            transaction_remove_expired_transaction_cleanup_interval_ms=1,
        )
    )
    broker.init(now_ms=T0)
    broker.expire(T0 + 1)
    replayed = broker.replayed()
    replayed.replay(b"\x00\x05junk", b"whatever")
    replayed.finish_load(T0 + 2)
    assert replayed.transaction("txn") is None
    assert [r.value is None for r in broker.log] == [False, True]


def test_replay_of_a_malformed_record_raises_a_clear_error():
    from protocol.primitives import DecodeError
    from protocol.transaction_log import encode_key, encode_value

    coordinator = TransactionCoordinator(TransactionConfig(), lambda: 1)
    with pytest.raises(DecodeError):
        coordinator.replay(encode_key("txn"), b"\x00\x00\x01")
    value = TransactionLogValue(
        producer_id=1,
        producer_epoch=0,
        transaction_timeout_ms=1000,
        transaction_status=9,
        transaction_last_update_timestamp_ms=T0,
        transaction_start_timestamp_ms=-1,
    )
    with pytest.raises(ValueError, match="unknown transaction state id 9"):
        coordinator.replay(encode_key("txn"), encode_value(value, 1))
    coordinator.finish_load(T0)
    assert coordinator.transaction("txn") is None
