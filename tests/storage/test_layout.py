"""Kafka's on-disk names, spelled in storage.layout and read back by the same module."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.layout import (
    INDEX_SUFFIX,
    is_offsets_partition_dir,
    parse_partition_dir,
    parse_segment_name,
    partition_dir,
    segment_path,
)


def test_partition_directories_are_topic_dash_partition_and_parse_back() -> None:
    assert partition_dir(Path("/data"), "orders-eu", 10) == Path("/data/orders-eu-10")
    assert parse_partition_dir("orders-eu-10") == ("orders-eu", 10)
    assert parse_partition_dir("__consumer_offsets-49") == ("__consumer_offsets", 49)


@pytest.mark.parametrize(
    "name",
    ["orders", "orders-", "-3", "orders-eu-1.0f3c9a2e7d4b4a1c9e2d8f7a6b5c4d3e-delete", "t-x"],
)
def test_names_that_are_not_partition_directories(name: str) -> None:
    assert parse_partition_dir(name) is None


def test_offsets_partition_directories() -> None:
    assert is_offsets_partition_dir("__consumer_offsets-0")
    assert not is_offsets_partition_dir("__consumer_offsets")
    assert not is_offsets_partition_dir("my__consumer_offsets-0")


def test_segment_files_are_the_base_offset_in_20_digits() -> None:
    path = segment_path(Path("t-0"), 1234)
    assert path == Path("t-0/00000000000000001234.log")
    assert parse_segment_name(path.name) == 1234
    index = segment_path(Path("t-0"), 7, INDEX_SUFFIX).name
    assert index == "00000000000000000007.index"
    assert parse_segment_name(index) is None  # not a .log
    assert parse_segment_name(index, INDEX_SUFFIX) == 7
    for name in ("1234.log", "0000000000000000123a.log", "00000000000000001234.log.deleted"):
        assert parse_segment_name(name) is None
