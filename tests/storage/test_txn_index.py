"""The aborted-transactions index: Kafka's .txnindex entries, its search, and its file."""

import os

import pytest

from storage.txn_index import (
    ABORTED_TXN_SIZE,
    AbortedTxn,
    CorruptTxnIndexError,
    TransactionIndex,
    TxnIndexSearchResult,
    collect_aborted,
    collect_aborted_across,
    decode_entries,
)


def test_entry_bytes_are_kafkas_aborted_txn():
    assert ABORTED_TXN_SIZE == 34
    assert AbortedTxn(1000, 5, 9, 10).encode().hex() == (
        "0000"  # version 0
        "00000000000003e8"  # producer id
        "0000000000000005"  # first offset
        "0000000000000009"  # last offset
        "000000000000000a"  # last stable offset
    )


def test_the_file_appears_with_the_first_entry_and_holds_them_in_order(tmp_path):
    index = TransactionIndex(tmp_path, 100)
    assert index.path.name == "00000000000000000100.txnindex"
    assert not index.path.exists()
    entries = [AbortedTxn(1, 100, 104, 105), AbortedTxn(2, 101, 110, 111)]
    for entry in entries:
        index.append(entry)
    assert index.path.read_bytes() == b"".join(e.encode() for e in entries)
    assert index.read_file() == entries
    index.close()


def test_append_refuses_an_entry_that_does_not_end_later(tmp_path):
    index = TransactionIndex(tmp_path, 0)
    index.append(AbortedTxn(1, 0, 10, 11))
    with pytest.raises(ValueError, match="after one ending at 10"):
        index.append(AbortedTxn(2, 3, 10, 11))
    assert index.entries == [AbortedTxn(1, 0, 10, 11)]
    assert len(index.path.read_bytes()) == ABORTED_TXN_SIZE
    index.close()


def test_truncate_to_drops_entries_whose_marker_is_cut(tmp_path):
    index = TransactionIndex(tmp_path, 0)
    for entry in (AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 2, 8, 9), AbortedTxn(3, 9, 12, 13)):
        index.append(entry)
    index.truncate_to(8)
    assert index.entries == [AbortedTxn(1, 0, 4, 5)]
    assert index.read_file() == [AbortedTxn(1, 0, 4, 5)]
    index.append(AbortedTxn(4, 6, 7, 8))  # appending goes on after the truncation
    assert index.read_file() == [AbortedTxn(1, 0, 4, 5), AbortedTxn(4, 6, 7, 8)]
    index.close()


def test_sync_file_rewrites_a_missing_short_or_wrong_file(tmp_path):
    index = TransactionIndex(tmp_path, 0)
    assert index.sync_file() is None  # nothing to hold, no file: right
    index.reset([AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 1, 6, 7)])
    assert index.sync_file() == "missing"
    assert index.read_file() == index.entries
    index.path.write_bytes(index.entries[0].encode())
    assert index.sync_file() == "behind the log"
    index.path.write_bytes(b"\xff" * 3)
    assert index.sync_file() == "inconsistent (3 bytes on disk, 68 expected)"
    assert index.sync_file() is None
    assert index.read_file() == index.entries


def test_decode_ignores_a_partial_tail_and_rejects_bad_entries():
    good = AbortedTxn(1, 10, 14, 15).encode()
    assert decode_entries(good + good[:10], base_offset=10) == [AbortedTxn(1, 10, 14, 15)]
    with pytest.raises(CorruptTxnIndexError, match="version 1"):
        decode_entries(b"\x00\x01" + good[2:])
    with pytest.raises(CorruptTxnIndexError, match="below the segment's base offset 20"):
        decode_entries(good, base_offset=20)


# Three aborted transactions; the LSO after each shows whether a later one may overlap.
ENTRIES = [AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 8, 9), AbortedTxn(3, 12, 15, 20)]


@pytest.mark.parametrize(
    ("fetch", "upper", "expected"),
    [
        (0, 3, TxnIndexSearchResult([AbortedTxn(1, 0, 5, 3)], True)),
        (0, 4, TxnIndexSearchResult([AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 8, 9)], True)),
        (6, 9, TxnIndexSearchResult([AbortedTxn(2, 3, 8, 9)], True)),
        (9, 12, TxnIndexSearchResult([], True)),
        (9, 13, TxnIndexSearchResult([AbortedTxn(3, 12, 15, 20)], True)),
        (16, 30, TxnIndexSearchResult([], False)),
    ],
)
def test_collect_aborted_is_kafkas_overlap_search(fetch, upper, expected):
    assert collect_aborted(ENTRIES, fetch, upper) == expected


def test_collect_across_segments_stops_once_complete(tmp_path):
    first, second, third = (TransactionIndex(tmp_path, b) for b in (0, 10, 20))
    first.reset([AbortedTxn(1, 0, 4, 5)])
    second.reset([AbortedTxn(2, 2, 12, 30)])  # opened in the first segment, aborted here
    third.reset([AbortedTxn(3, 25, 26, 40)])
    assert collect_aborted_across([first, second, third], 3, 20) == [
        AbortedTxn(1, 0, 4, 5),
        AbortedTxn(2, 2, 12, 30),
    ]
    assert collect_aborted_across([second, third], 10, 28) == [AbortedTxn(2, 2, 12, 30)]
    assert collect_aborted_across([second, third], 13, 28) == []  # it ended before 13
    assert collect_aborted_across([second, third], 13, 31) == [AbortedTxn(3, 25, 26, 40)]
    assert collect_aborted_across([third], 31, 50) == []


def test_read_file_without_a_file_is_empty_and_delete_removes_it(tmp_path):
    index = TransactionIndex(tmp_path, 0)
    assert index.read_file() == []
    index.append(AbortedTxn(1, 0, 1, 2))
    index.flush()
    index.truncate_to(50)  # nothing at or after 50: nothing changes
    assert index.read_file() == [AbortedTxn(1, 0, 1, 2)]
    index.delete()
    assert not index.path.exists()
    index.delete()  # deleting twice is fine


def test_a_failed_write_leaves_neither_file_nor_memory_changed(tmp_path, monkeypatch):
    index = TransactionIndex(tmp_path, 0)
    index.append(AbortedTxn(1, 0, 1, 2))
    real_write = os.write

    def short_write(fd, data):  # a disk that takes 5 bytes and then fails
        return real_write(fd, data[:5])

    monkeypatch.setattr(os, "write", short_write)
    with pytest.raises(OSError, match="short write"):
        index.append(AbortedTxn(2, 1, 3, 4))
    monkeypatch.undo()
    assert index.entries == [AbortedTxn(1, 0, 1, 2)]
    assert index.read_file() == [AbortedTxn(1, 0, 1, 2)]
    index.close()
