import dataclasses

import pytest

from coordinator.transactions.metadata import IllegalTransition, TransactionMetadata
from coordinator.transactions.state import TRANSITIONS, TransactionState

_S = TransactionState


def _metadata(state: TransactionState) -> TransactionMetadata:
    return TransactionMetadata(transactional_id="t", producer_id=7, producer_epoch=3, state=state)


def test_the_table_is_kafkas_valid_previous_states():
    assert {
        _S.EMPTY: {_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT},
        _S.ONGOING: {_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT},
        _S.PREPARE_COMMIT: {_S.ONGOING},
        _S.PREPARE_ABORT: {
            _S.ONGOING,
            _S.PREPARE_EPOCH_FENCE,
            _S.EMPTY,
            _S.COMPLETE_COMMIT,
            _S.COMPLETE_ABORT,
        },
        _S.COMPLETE_COMMIT: {_S.PREPARE_COMMIT},
        _S.COMPLETE_ABORT: {_S.PREPARE_ABORT},
        _S.DEAD: {_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT},
        _S.PREPARE_EPOCH_FENCE: {_S.ONGOING},
    } == TRANSITIONS


@pytest.mark.parametrize("target", list(_S), ids=str)
@pytest.mark.parametrize("current", list(_S), ids=str)
def test_every_move_is_allowed_exactly_when_the_table_says(current, target):
    metadata = _metadata(current)
    before = dataclasses.replace(metadata, topic_partitions=set(metadata.topic_partitions))
    transit = dataclasses.replace(metadata.snapshot(), state=target)
    if current in TRANSITIONS[target]:
        assert metadata.prepare_transition(transit) is transit
        assert metadata.pending_state is target
        metadata.complete_transition(transit)
        assert metadata.state is target
        assert metadata.pending_state is None
    else:
        with pytest.raises(IllegalTransition):
            metadata.prepare_transition(transit)
        assert metadata.state is current
        assert metadata.pending_state is None
        assert metadata.snapshot() == before.snapshot()


def test_a_second_transition_while_one_is_pending_raises():
    metadata = _metadata(_S.ONGOING)
    metadata.prepare_fence_producer_epoch()
    with pytest.raises(IllegalTransition):
        metadata.prepare_add_partitions(frozenset({("t", 0)}), 5, 0)
    assert metadata.pending_state is _S.PREPARE_EPOCH_FENCE


def test_completing_another_state_than_the_pending_one_raises():
    metadata = _metadata(_S.EMPTY)
    transit = metadata.prepare_add_partitions(frozenset({("t", 0)}), 5, 0)
    with pytest.raises(IllegalTransition):
        metadata.complete_transition(dataclasses.replace(transit, state=_S.DEAD))
    assert metadata.state is _S.EMPTY


def test_ids_and_names_are_kafkas():
    assert [(s.id, str(s)) for s in _S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert _S.from_id(4) is _S.COMPLETE_COMMIT
    assert _S.from_name("Ongoing") is _S.ONGOING
    assert _S.from_name("ongoing") is None
    with pytest.raises(ValueError, match="unknown transaction state id 8"):
        _S.from_id(8)


def test_only_idle_states_may_expire():
    assert {s for s in _S if s.is_expiration_allowed} == {
        _S.EMPTY,
        _S.COMPLETE_COMMIT,
        _S.COMPLETE_ABORT,
    }


def test_a_negative_epoch_is_refused_except_for_dead():
    metadata = TransactionMetadata(transactional_id="t", producer_id=7, state=_S.EMPTY)
    with pytest.raises(IllegalTransition):
        metadata.prepare_add_partitions(frozenset({("t", 0)}), 5, 0)
    assert metadata.prepare_dead().state is _S.DEAD
