"""Less travelled paths: requests while a write is in flight, failed writes of each kind,
epoch overflow with transaction version 2, and the verify-only checks."""

import pytest

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.metadata import IllegalTransition, TransactionMetadata
from coordinator.transactions.state import TransactionState
from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
    AddPartitionsToTxnTransaction,
    topic_results,
)
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from protocol.messages.list_transactions import ListTransactionsRequest
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
SHORT_MAX = 2**15 - 1
ORDERS = [AddPartitionsToTxnTopic(name="orders", partitions=[0])]
OFFSETS = ("__consumer_offsets", 3)


def started(broker, partitions=None, now_ms=T0):
    producer = broker.init(now_ms=now_ms)
    broker.add(producer, partitions, now_ms)
    return producer


def end_request(producer, committed=True, transactional_id="txn"):
    return EndTxnRequest(
        transactional_id=transactional_id,
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        committed=committed,
    )


# --- while a write is in flight -------------------------------------------------------------


def test_requests_while_a_write_is_in_flight_are_concurrent_transactions():
    broker = Broker()
    producer = started(broker)
    in_flight = broker.coordinator.end_txn(token(), end_request(producer), 5, T0)
    assert in_flight.records
    request = InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=TIMEOUT_MS)
    coordinator = broker.coordinator
    assert code_of(coordinator.init_producer_id, 1, request, 4, T0) == _E.CONCURRENT_TRANSACTIONS
    assert code_of(coordinator.end_txn, 1, end_request(producer), 5, T0) == (
        _E.CONCURRENT_TRANSACTIONS
    )
    assert code_of(broker.add, producer) == _E.CONCURRENT_TRANSACTIONS
    # A timeout check skips it too.
    assert coordinator.expire(T0 + 10**9).records == ()
    broker.append(in_flight, T0)
    assert broker.state() is _S.COMPLETE_COMMIT


def test_an_id_being_expired_is_not_listed_and_its_tombstone_applies_once():
    broker = Broker(
        TransactionConfig(
            transactional_id_expiration_ms=0,
            transaction_remove_expired_transaction_cleanup_interval_ms=1,
        )
    )
    broker.init()
    outcome = broker.coordinator.expire(T0 + 1)
    assert broker.state() is _S.EMPTY  # Dead is only pending
    assert broker.coordinator.transactional_ids() == ["txn"]
    listed = broker.coordinator.list_transactions(ListTransactionsRequest(), T0 + 1)
    assert [t.transactional_id for t in listed.transaction_states] == ["txn"]
    broker.coordinator.on_appended(outcome, T0 + 1)
    broker.coordinator.on_appended(outcome, T0 + 1)  # a second report changes nothing
    assert broker.coordinator.transactional_ids() == []


def test_a_dead_id_is_not_listed():
    broker = Broker()
    broker.init()
    broker.coordinator.transaction("txn").state = _S.DEAD
    assert (
        broker.coordinator.list_transactions(ListTransactionsRequest(), T0).transaction_states == []
    )
    assert broker.coordinator.transactional_ids() == []


# --- failed writes ------------------------------------------------------------------------------


def test_a_failed_v3_add_fails_every_partition():
    broker = Broker()
    producer = broker.init()
    tok = token()
    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="txn",
        v3_and_below_producer_id=producer.producer_id,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=ORDERS,
    )
    outcome = broker.coordinator.add_partitions(tok, request, 3, T0)
    failed = broker.coordinator.on_append_failed(outcome, _E.MESSAGE_TOO_LARGE, T0)
    assert reply(failed, tok) == AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=topic_results(ORDERS, _E.UNKNOWN_SERVER_ERROR)
    )
    assert broker.state() is _S.EMPTY
    broker.coordinator.on_append_failed(outcome, _E.MESSAGE_TOO_LARGE, T0)  # reported twice


def test_a_failed_v4_add_fails_only_its_own_transaction():
    broker = Broker()
    a = broker.init("a")
    b = broker.init("b")
    tok = token()

    def txn(tid, producer):
        return AddPartitionsToTxnTransaction(
            transactional_id=tid,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            topics=ORDERS,
        )

    broker.add(b, transactional_id="b")  # b is already in: nothing to write for it
    request = AddPartitionsToTxnRequest(transactions=[txn("a", a), txn("b", b)])
    outcome = broker.coordinator.add_partitions(tok, request, 4, T0)
    assert len(outcome.records) == 1
    failed = broker.coordinator.on_append_failed(outcome, _E.NOT_ENOUGH_REPLICAS, T0)

    def result(tid, code):
        return AddPartitionsToTxnResult(
            transactional_id=tid, topic_results=topic_results(ORDERS, code)
        )

    assert reply(failed, tok) == AddPartitionsToTxnResponse(
        results_by_transaction=[result("a", _E.COORDINATOR_NOT_AVAILABLE), result("b", _E.NONE)]
    )
    assert broker.state("a") is _S.EMPTY
    retry = token()
    answer = reply(
        broker.append(broker.coordinator.add_partitions(retry, request, 4, T0), T0), retry
    )
    assert answer.results_by_transaction == [result("a", _E.NONE), result("b", _E.NONE)]
    assert broker.state("a") is _S.ONGOING


def test_add_offsets_failures():
    broker = Broker()
    old = broker.init()
    producer = broker.init()
    request = AddOffsetsToTxnRequest(
        transactional_id="txn", producer_id=old.producer_id, producer_epoch=0, group_id="g"
    )
    assert (
        code_of(broker.coordinator.add_offsets, 1, request, 1, T0, offsets_partition=OFFSETS)
        == _E.INVALID_PRODUCER_EPOCH
    )
    tok = token()
    request = AddOffsetsToTxnRequest(
        transactional_id="txn", producer_id=producer.producer_id, producer_epoch=1, group_id="g"
    )
    outcome = broker.coordinator.add_offsets(tok, request, 4, T0, offsets_partition=OFFSETS)
    failed = broker.coordinator.on_append_failed(outcome, _E.REQUEST_TIMED_OUT, T0)
    assert reply(failed, tok) == AddOffsetsToTxnResponse(error_code=_E.COORDINATOR_NOT_AVAILABLE)


def test_a_failed_completion_is_retried_at_the_next_timeout_check():
    broker = Broker()
    producer = started(broker)
    broker.end(producer, write_markers=False)
    marker = broker.markers[-1]
    done = broker.coordinator.markers_written(
        "txn", marker.producer_id, marker.producer_epoch, marker.partitions, T0
    )
    broker.coordinator.on_append_failed(done, _E.KAFKA_STORAGE_ERROR, T0)
    assert broker.state() is _S.PREPARE_COMMIT
    retried = broker.expire(T0 + 10000)
    assert [r.value.transaction_status for r in retried.records] == [_S.COMPLETE_COMMIT.id]
    assert broker.state() is _S.COMPLETE_COMMIT


def test_an_error_code_other_storage_errors_is_passed_on():
    broker = Broker()
    tok = token()
    request = InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=TIMEOUT_MS)
    outcome = broker.coordinator.init_producer_id(tok, request, 4, T0)
    failed = broker.coordinator.on_append_failed(outcome, _E.INVALID_RECORD, T0)
    assert reply(failed, tok) == InitProducerIdResponse(
        error_code=_E.INVALID_RECORD, producer_id=-1, producer_epoch=-1
    )


# --- empty ids, verify-only -----------------------------------------------------------------


def test_empty_transactional_ids_are_invalid_request():
    broker = Broker()
    producer = broker.init()
    assert code_of(broker.add, producer, transactional_id="") == _E.INVALID_REQUEST
    assert code_of(broker.end, producer, transactional_id="") == _E.INVALID_REQUEST


@pytest.mark.parametrize(
    ("tid", "epoch", "prepare", "code"),
    [
        ("", 0, False, _E.INVALID_REQUEST),
        ("ghost", 0, False, _E.INVALID_PRODUCER_ID_MAPPING),
        ("txn", 5, False, _E.PRODUCER_FENCED),
        ("txn", 0, True, _E.CONCURRENT_TRANSACTIONS),
    ],
)
def test_verify_only_errors_apply_to_every_partition(tid, epoch, prepare, code):
    broker = Broker()
    producer = started(broker)
    if prepare:
        broker.end(producer, version=4, write_markers=False)
    tok = token()
    request = AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnTransaction(
                transactional_id=tid,
                producer_id=producer.producer_id,
                producer_epoch=epoch,
                verify_only=True,
                topics=ORDERS,
            )
        ]
    )
    response = reply(broker.coordinator.add_partitions(tok, request, 5, T0), tok)
    assert response.results_by_transaction == [
        AddPartitionsToTxnResult(
            transactional_id=tid,
            topic_results=[
                AddPartitionsToTxnTopicResult(
                    name="orders",
                    results_by_partition=[
                        AddPartitionsToTxnPartitionResult(
                            partition_index=0, partition_error_code=code
                        )
                    ],
                )
            ],
        )
    ]


# --- transaction version 2: EndTxn by state, and epoch overflow ---------------------------


def test_v2_commit_of_a_completed_commit_at_the_current_epoch_is_invalid_txn_state():
    broker = Broker()
    producer = started(broker)
    bumped = broker.end(producer, version=5)
    current = InitProducerIdResponse(
        producer_id=bumped.producer_id, producer_epoch=bumped.producer_epoch
    )
    assert code_of(broker.end, current, version=5) == _E.INVALID_TXN_STATE
    # An abort at the current epoch starts (and at once completes) an empty abort.
    assert broker.end(current, committed=False, version=5).producer_epoch == 2
    assert broker.state() is _S.COMPLETE_ABORT
    # A retry of that abort is answered again; a retried commit is now the wrong way round.
    assert broker.end(current, committed=False, version=5).producer_epoch == 2
    assert code_of(broker.end, current, version=5) == _E.INVALID_TXN_STATE
    # An abort of the completed abort at its own epoch starts another empty one.
    now = InitProducerIdResponse(producer_id=bumped.producer_id, producer_epoch=2)
    assert broker.end(now, committed=False, version=5).producer_epoch == 3


def test_v2_abort_retried_after_a_commit_is_invalid_txn_state():
    broker = Broker()
    producer = started(broker)
    broker.end(producer, version=5)
    assert code_of(broker.end, producer, committed=False, version=5) == _E.INVALID_TXN_STATE


def test_v1_abort_retried_after_an_abort_is_none():
    broker = Broker()
    producer = started(broker)
    broker.end(producer, committed=False, version=4)
    assert broker.end(producer, committed=False, version=4).error_code == 0


def test_v2_epoch_overflow_moves_to_the_next_producer_id_when_the_transaction_completes():
    broker = Broker()
    producer = started(broker)
    metadata = broker.coordinator.transaction("txn")
    metadata.producer_epoch = SHORT_MAX - 1
    exhausted = InitProducerIdResponse(
        producer_id=producer.producer_id, producer_epoch=SHORT_MAX - 1
    )
    answer = broker.end(exhausted, version=5, write_markers=False)
    assert answer == EndTxnResponse(producer_id=producer.producer_id, producer_epoch=SHORT_MAX)
    assert metadata.next_producer_id == FIRST_PRODUCER_ID + 1
    marker = broker.markers[-1]
    assert (marker.producer_id, marker.producer_epoch) == (producer.producer_id, SHORT_MAX)
    broker.append(
        broker.coordinator.markers_written(
            "txn", marker.producer_id, SHORT_MAX, marker.partitions, T0
        ),
        T0,
    )
    assert (metadata.state, metadata.producer_id, metadata.producer_epoch) == (
        _S.COMPLETE_COMMIT,
        FIRST_PRODUCER_ID + 1,
        0,
    )
    assert metadata.previous_producer_id == producer.producer_id
    # The client retrying with the old id and its last epoch is answered with the new one.
    assert broker.end(exhausted, version=5) == EndTxnResponse(
        producer_id=FIRST_PRODUCER_ID + 1, producer_epoch=0
    )


def test_metadata_refuses_what_the_coordinator_never_asks():
    exhausted = TransactionMetadata(
        transactional_id="t", producer_id=1, producer_epoch=SHORT_MAX - 1, state=_S.EMPTY
    )
    with pytest.raises(IllegalTransition, match="exhausted"):
        exhausted.prepare_increment_producer_epoch(1000, 3, T0)
    ongoing = TransactionMetadata(
        transactional_id="t", producer_id=1, producer_epoch=0, state=_S.ONGOING
    )
    with pytest.raises(IllegalTransition, match="rotating"):
        ongoing.prepare_producer_id_rotation(2, 1000, T0, False)
    no_id = TransactionMetadata(transactional_id="t", producer_id=-1, producer_epoch=0)
    with pytest.raises(IllegalTransition, match="producer id -1"):
        no_id.prepare_add_partitions(frozenset({("t", 0)}), T0, 0)
