from coordinator.transactions.pending_offsets import PendingOffset, PendingTxnOffsets

P1, P2 = 1000, 2000


def test_offsets_wait_for_their_marker_then_commit():
    pending = PendingTxnOffsets[int]()
    pending.add(P1, "g", ("t", 0), 42, record_offset=10)
    pending.add(P1, "g", ("t", 0), 43, record_offset=11)  # the later one replaces it
    pending.add(P1, "g", ("t", 1), 7, record_offset=11)
    assert pending.has_pending("g")
    assert pending.has_pending("g", ("t", 0))
    assert not pending.has_pending("g", ("t", 2))
    assert not pending.has_pending("other")
    assert pending.producers("g") == {P1}
    assert pending.complete(P1, commit=True) == [
        PendingOffset("g", ("t", 0), 43, 11),
        PendingOffset("g", ("t", 1), 7, 11),
    ]
    assert not pending.has_pending("g")
    assert pending.complete(P1, commit=True) == []  # a marker written again


def test_an_abort_drops_the_producers_offsets_only():
    pending = PendingTxnOffsets[int]()
    pending.add(P1, "g", ("t", 0), 1, record_offset=1)
    pending.add(P2, "g", ("t", 0), 2, record_offset=2)
    assert pending.complete(P1, commit=False) == []
    assert list(pending) == [(P2, PendingOffset("g", ("t", 0), 2, 2))]


def test_dropping_a_group_keeps_other_groups_pending():
    pending = PendingTxnOffsets[int]()
    pending.add(P1, "g", ("t", 0), 1, record_offset=1)
    pending.add(P1, "h", ("t", 0), 1, record_offset=2)
    pending.add(P2, "g", ("t", 1), 1, record_offset=3)
    pending.drop_group("g")
    assert list(pending) == [(P1, PendingOffset("h", ("t", 0), 1, 2))]
    assert pending.producers("g") == set()
