"""Random walks through the transaction coordinator, checked against invariants and replay."""

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.state import TransactionState
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.init_producer_id import InitProducerIdResponse
from tests.coordinator.transactions.builders import T0, Broker

_S = TransactionState
IDS = st.sampled_from(["a", "b"])
PARTITIONS = st.lists(st.sampled_from([("t", 0), ("t", 1), ("u", 0)]), min_size=1, max_size=2)


class TransactionWalk(RuleBasedStateMachine):
    @initialize(transaction_version=st.sampled_from([0, 2]))
    def start(self, transaction_version):
        self.broker = Broker(
            TransactionConfig(
                transaction_version=transaction_version,
                transaction_abort_timed_out_transaction_cleanup_interval_ms=1000,
                transaction_remove_expired_transaction_cleanup_interval_ms=5000,
                transactional_id_expiration_ms=20000,
            )
        )
        self.now = T0
        self.producers: dict[str, InitProducerIdResponse] = {}
        self.unwritten = []  # markers not yet reported written
        self.epochs: dict[tuple[str, int], int] = {}
        for tid in ("a", "b"):
            self.producers[tid] = self.broker.init(tid, self.now, timeout_ms=60000)

    @property
    def _written(self):
        return getattr(self, "_done", [])

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KafkaError as e:
            return e.code

    @rule(tid=IDS, timeout_ms=st.sampled_from([5000, 60000]))
    def init(self, tid, timeout_ms):
        answer = self._call(
            self.broker.init, tid, self.now, timeout_ms=timeout_ms, write_markers=False
        )
        self._track_markers()
        if not isinstance(answer, ErrorCode) and answer.error_code == 0:
            self.producers[tid] = answer

    @rule(tid=IDS, partitions=PARTITIONS)
    def add(self, tid, partitions):
        producer = self.producers.get(tid)
        if producer is None:
            return
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        self._call(self.broker.add, producer, by_topic, self.now, transactional_id=tid)

    @rule(tid=IDS, partitions=PARTITIONS)
    def add_more(self, tid, partitions):
        self.add(tid, partitions)

    @rule(tid=IDS, committed=st.sampled_from([True, True, False]), version=st.sampled_from([3, 5]))
    def end(self, tid, committed, version):
        producer = self.producers.get(tid)
        if producer is None:
            return
        answer = self._call(
            self.broker.end,
            producer,
            committed,
            self.now,
            transactional_id=tid,
            version=version,
            write_markers=False,
        )
        self._track_markers()
        if not isinstance(answer, ErrorCode) and version >= 5:
            self.producers[tid] = InitProducerIdResponse(
                producer_id=answer.producer_id, producer_epoch=answer.producer_epoch
            )

    @rule(tid=IDS, committed=st.booleans())
    def end_fails_to_write(self, tid, committed):
        producer = self.producers.get(tid)
        if producer is None:
            return
        from protocol.messages.end_txn import EndTxnRequest

        coordinator = self.broker.coordinator
        if coordinator.transaction(tid) is None:
            return
        before = coordinator.transaction(tid).snapshot()
        request = EndTxnRequest(
            transactional_id=tid,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            committed=committed,
        )
        outcome = self._call(coordinator.end_txn, 1, request, 4, self.now)
        if isinstance(outcome, ErrorCode):
            return
        failed = coordinator.on_append_failed(outcome, ErrorCode.KAFKA_STORAGE_ERROR, self.now)
        assert all(r.response.error_code in (0, ErrorCode.NOT_COORDINATOR) for r in failed.replies)
        after = coordinator.transaction(tid)
        assert after.pending_state is None
        assert after.snapshot() == before

    @rule()
    def write_a_marker(self):
        if not self.unwritten:
            return
        marker = self.unwritten.pop()
        self._done = [*self._written, marker]
        outcome = self.broker.coordinator.markers_written(
            marker.transactional_id,
            marker.producer_id,
            marker.producer_epoch,
            marker.partitions,
            self.now,
        )
        self.broker.append(outcome, self.now, write_markers=False)

    @rule()
    def write_another_marker(self):
        self.write_a_marker()

    @rule(ms=st.sampled_from([1, 999, 1000, 4000, 21000]))
    def time_passes(self, ms):
        self.now += ms
        self.broker.expire(self.now, write_markers=False)
        self._track_markers()

    def _track_markers(self):
        for marker in self.broker.markers:
            if marker not in self.unwritten and marker not in self._written:
                self.unwritten.append(marker)

    @invariant()
    def nothing_is_left_pending(self):
        for tid in ("a", "b"):
            metadata = self.broker.coordinator.transaction(tid)
            if metadata is not None:
                assert metadata.pending_state is None

    @invariant()
    def partitions_match_the_state(self):
        for tid in ("a", "b"):
            m = self.broker.coordinator.transaction(tid)
            if m is None:
                continue
            if m.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
                assert m.topic_partitions == set()
            if m.state is _S.ONGOING:
                assert m.topic_partitions
                assert m.txn_start_timestamp >= 0

    @invariant()
    def epochs_never_go_back(self):
        for tid in ("a", "b"):
            m = self.broker.coordinator.transaction(tid)
            if m is None:
                continue
            key = (tid, m.producer_id)
            assert m.producer_epoch >= self.epochs.get(key, -1)
            self.epochs[key] = m.producer_epoch

    @invariant()
    def replay_rebuilds_the_same_state(self):
        replayed = self.broker.replayed()
        resent = replayed.finish_load(self.now)
        for tid in ("a", "b"):
            live = self.broker.coordinator.transaction(tid)
            again = replayed.transaction(tid)
            assert (live is None) == (again is None)
            if live is None:
                continue
            assert (again.state, again.producer_id, again.producer_epoch) == (
                live.state,
                live.producer_id,
                live.producer_epoch,
            )
            if live.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                # Markers written before the restart are written again: harmless.
                assert live.topic_partitions <= again.topic_partitions
            else:
                assert again.topic_partitions == live.topic_partitions
        for marker in resent.markers:
            live = self.broker.coordinator.transaction(marker.transactional_id)
            assert live.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT)
            assert marker.producer_epoch == live.producer_epoch


TransactionWalk.TestCase.settings = settings(max_examples=30, stateful_step_count=40, deadline=None)
test_transaction_walk = TransactionWalk.TestCase
