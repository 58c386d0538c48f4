"""The pure pieces of exactly-once together, as the broker will drive them: the transaction
coordinator, a partition's Log, its PartitionTransactions, and a read_committed reader that
filters records as Kafka's consumer does with the aborted transactions a fetch returns."""

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.outcome import Outcome
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.records import build_control_batch, decode_records
from storage.transactions import ActiveProducer, active_producers
from storage.txn_index import AbortedTxn
from tests.storage.helpers import T0, make_batch

PARTITION = ("orders", 0)


class Cluster:
    """A broker's part, in a few lines each: append coordinator records (kept in a list
    standing for __transaction_state), write markers as control batches to the log."""

    def __init__(self, open_log, log_dir):
        self.open_log, self.log_dir = open_log, log_dir
        self.state_log = []
        self.next_pid = 5000
        self.coordinator = self._coordinator()
        self.coordinator.finish_load(T0)
        self.log = open_log()
        self.transactions = self.log.transactions

    def _coordinator(self):
        def allocate():
            self.next_pid += 1
            return self.next_pid - 1

        return TransactionCoordinator(TransactionConfig(), allocate, coordinator_epoch=1)

    def settle(self, outcome: Outcome) -> Outcome:
        self.state_log.extend(outcome.records)
        follow = self.coordinator.on_appended(outcome, T0)
        for marker in (*outcome.markers, *follow.markers):
            for _topic, _partition in marker.partitions:
                batch = build_control_batch(
                    marker.control_type,
                    producer_id=marker.producer_id,
                    producer_epoch=marker.producer_epoch,
                    coordinator_epoch=marker.coordinator_epoch,
                    timestamp=T0,
                )
                self.write(batch)
            done = self.coordinator.markers_written(
                marker.transactional_id,
                marker.producer_id,
                marker.producer_epoch,
                marker.partitions,
                T0,
            )
            self.settle(done)
        if follow.records:
            self.settle(Outcome(records=follow.records))
        return outcome

    def write(self, batch):
        self.log.append(batch, wall_ms=T0)  # the log keeps its transactions in step

    def init(self, tid="t"):
        request = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000)
        outcome = self.settle(self.coordinator.init_producer_id(1, request, 5, T0))
        return outcome.replies[0].response

    def add(self, producer, tid="t"):
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid,
            v3_and_below_producer_id=producer.producer_id,
            v3_and_below_producer_epoch=producer.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name="orders", partitions=[0])],
        )
        self.settle(self.coordinator.add_partitions(1, request, 3, T0))

    def end(self, producer, committed, tid="t"):
        request = EndTxnRequest(
            transactional_id=tid,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            committed=committed,
        )
        return self.settle(self.coordinator.end_txn(1, request, 5, T0)).replies[0].response

    def produce(self, producer, values, sequence):
        self.write(
            make_batch(
                len(values),
                values=values,
                producer_id=producer.producer_id,
                producer_epoch=producer.producer_epoch,
                base_sequence=sequence,
                is_transactional=True,
            )
        )

    def read_committed(self):
        """Every value a read_committed consumer gets from offset 0."""
        lso = self.transactions.last_stable_offset(self.log.high_watermark)
        aborted = self.transactions.aborted_transactions(0, lso)
        values = []
        for segment in self.log.segments:
            for position, header in segment.iter_batches():
                if header.base_offset >= lso or header.is_control:
                    continue
                if any(
                    a.producer_id == header.producer_id
                    and a.first_offset <= header.base_offset <= a.last_offset
                    for a in aborted
                ):
                    continue
                values += [r.value for r in decode_records(segment.read(position, header.size))]
        return values


def test_commit_abort_commit_shows_only_committed_records_and_survives_a_restart(open_log, log_dir):
    cluster = Cluster(open_log, log_dir)
    producer = cluster.init()
    cluster.add(producer)
    cluster.produce(producer, [b"c1", b"c2"], 0)
    assert cluster.transactions.last_stable_offset(cluster.log.high_watermark) == 0
    assert cluster.read_committed() == []
    producer = cluster.end(producer, committed=True)  # v5: the epoch goes up
    assert cluster.read_committed() == [b"c1", b"c2"]

    cluster.add(producer)
    cluster.produce(producer, [b"a1", b"a2", b"a3"], 0)
    producer = cluster.end(producer, committed=False)
    cluster.add(producer)
    cluster.produce(producer, [b"c3"], 0)
    producer = cluster.end(producer, committed=True)

    assert cluster.read_committed() == [b"c1", b"c2", b"c3"]
    assert cluster.transactions.aborted_transactions(0, cluster.log.high_watermark) == [
        AbortedTxn(5000, 3, 6, 7)
    ]
    assert cluster.log.high_watermark == 9  # 6 records and 3 markers

    # Restart: the log, its indexes and the coordinator come back from disk and records.
    cluster.transactions.close()
    cluster.log.close()
    cluster.log = open_log()
    cluster.transactions = cluster.log.transactions
    assert [e for e in cluster.log.recovery_report if "txnindex" in e.reason] == []
    replayed = cluster._coordinator()
    for record in cluster.state_log:
        replayed.replay(record.key_bytes(), record.value_bytes())
    assert replayed.finish_load(T0).markers == ()
    assert str(replayed.transaction("t").state) == "CompleteCommit"
    assert replayed.transaction("t").producer_epoch == producer.producer_epoch
    assert cluster.read_committed() == [b"c1", b"c2", b"c3"]
    cluster.transactions.close()
    cluster.log.close()


def test_a_new_producer_fences_the_open_transaction_and_aborts_it(open_log, log_dir):
    cluster = Cluster(open_log, log_dir)
    first = cluster.init()
    cluster.add(first)
    cluster.produce(first, [b"zombie"], 0)
    assert cluster.init().error_code == 51  # CONCURRENT_TRANSACTIONS: the abort is under way
    second = cluster.init()
    assert second.producer_epoch > first.producer_epoch
    assert cluster.read_committed() == []
    assert cluster.transactions.last_stable_offset(cluster.log.high_watermark) == 2
    cluster.add(second)
    cluster.produce(second, [b"fresh"], 0)
    cluster.end(second, committed=True)
    assert cluster.read_committed() == [b"fresh"]
    cluster.transactions.close()
    cluster.log.close()


def test_active_producers_report_epoch_sequence_marker_epoch_and_open_transaction(
    open_log, log_dir
):
    cluster = Cluster(open_log, log_dir)
    producer = cluster.init()
    cluster.add(producer)
    cluster.produce(producer, [b"a", b"b"], 0)
    producer = cluster.end(producer, committed=True)
    cluster.add(producer)
    cluster.produce(producer, [b"c"], 0)
    plain = make_batch(1, producer_id=77, producer_epoch=3, base_sequence=9, timestamp=T0 + 5)
    cluster.write(plain)
    rows = active_producers(cluster.log.producer_state.producers, cluster.transactions.tracker)
    assert rows == [
        ActiveProducer(77, 3, 9, T0 + 5, -1, -1),
        # Epoch 1 after the v5 commit; its marker carried coordinator epoch 1; the open
        # transaction started at offset 3, after two records and the marker.
        ActiveProducer(producer.producer_id, 1, 0, T0, 1, 3),
    ]
    cluster.transactions.close()
    cluster.log.close()
