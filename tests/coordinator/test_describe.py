"""DescribeGroups, ListGroups and the coordinator's own lookups."""

from __future__ import annotations

import ctypes

import pytest

from protocol.errors import ErrorCode
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.list_groups import ListGroupsRequest
from tests.coordinator.builders import (
    GROUP,
    coordinator,
    ctx,
    join,
    joined_group,
    new_member_id,
    stable_group,
    subscription,
)

E = ErrorCode


def describe(c, *group_ids: str, version: int = 5, operations: bool = False):  # type: ignore[no-untyped-def]
    request = DescribeGroupsRequest(
        groups=list(group_ids), include_authorized_operations=operations
    )
    response = c.describe_groups(ctx(version), request)
    return {g.group_id: g for g in response.groups}


def listed(c, version: int = 5, states=(), types=()):  # type: ignore[no-untyped-def]
    request = ListGroupsRequest(states_filter=list(states), types_filter=list(types))
    response = c.list_groups(ctx(version), request)
    assert response.error_code == E.NONE
    return [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in response.groups]


def test_describe_of_a_stable_group_shows_protocol_metadata_and_assignments() -> None:
    c, ids = stable_group(2, static=True)
    g = describe(c, "g")["g"]
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (
        E.NONE,
        "Stable",
        "consumer",
        "range",
    )
    assert [
        (
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.member_metadata,
            m.member_assignment,
        )
        for m in g.members
    ] == [
        (
            ids[i],
            f"instance-{i}",
            f"client-{i}",
            "/127.0.0.1",
            subscription("t"),
            f"a-{ids[i]}".encode(),
        )
        for i in range(2)
    ]
    assert g.authorized_operations == -(2**31)


def test_describe_of_a_rebalancing_group_hides_metadata_and_assignments() -> None:
    c = coordinator()
    _ids, _ = joined_group(c, 2)
    g = describe(c, "g")["g"]
    assert (g.group_state, g.protocol_data) == ("CompletingRebalance", "")
    assert [(m.member_metadata, m.member_assignment) for m in g.members] == [(b"", b"")] * 2


def test_describe_of_an_unknown_group_says_dead_without_error() -> None:
    g = describe(coordinator(), "nobody", operations=True)["nobody"]
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data, g.members) == (
        E.NONE,
        "Dead",
        "",
        "",
        [],
    )
    # Kafka 4.x, no authorizer: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
    assert g.authorized_operations == sum(1 << b for b in (3, 6, 8, 10, 11))


def test_describe_v6_of_an_unknown_group_is_group_id_not_found() -> None:
    # KIP-1043: from v6 Kafka says so, with a message; the group is still described as Dead.
    g = describe(coordinator(), "nobody", version=6)["nobody"]
    assert (g.error_code, g.error_message, g.group_state) == (
        E.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
        "Dead",
    )
    c, _ = stable_group(1)
    assert describe(c, GROUP, version=6)[GROUP].error_code == E.NONE


def test_describe_reports_authorized_operations_only_from_v3_when_asked() -> None:
    c, _ = stable_group(1)
    assert describe(c, "g", version=2, operations=True)["g"].authorized_operations == -(2**31)
    assert describe(c, "g", version=3, operations=True)["g"].authorized_operations == 3400


def test_list_groups_shows_every_live_group_with_state_and_type() -> None:
    c, _ = stable_group(1, group_id="a")
    new_member_id(c, 0, group_id="b")
    assert listed(c) == [
        ("a", "consumer", "Stable", "classic"),
        ("b", "", "Empty", "classic"),
    ]


def test_list_groups_filters_states_case_insensitively_from_v4() -> None:
    c, _ = stable_group(1, group_id="a")
    new_member_id(c, 0, group_id="b")
    assert [g[0] for g in listed(c, states=[" stable "])] == ["a"]
    assert [g[0] for g in listed(c, states=["EMPTY", "Stable"])] == ["a", "b"]
    assert [g[0] for g in listed(c, version=3, states=["Empty"])] == ["a", "b"]


@pytest.mark.parametrize(
    ("types", "version", "expected"),
    [(["Classic"], 5, ["a"]), (["consumer"], 5, []), (["consumer"], 4, ["a"])],
)
def test_list_groups_filters_types_from_v5(
    types: list[str], version: int, expected: list[str]
) -> None:
    c, _ = stable_group(1, group_id="a")
    assert [g[0] for g in listed(c, version=version, types=types)] == expected


def test_groups_by_state_counts_every_state() -> None:
    c, _ = stable_group(1, group_id="a")
    new_member_id(c, 0, group_id="b")
    join(c, 0, version=3, group_id="c")
    assert c.groups_by_state() == {
        ("classic", "Empty"): 1,
        ("classic", "PreparingRebalance"): 1,
        ("classic", "CompletingRebalance"): 0,
        ("classic", "Stable"): 1,
        ("classic", "Dead"): 0,
        ("consumer", "Empty"): 0,
        ("consumer", "Assigning"): 0,
        ("consumer", "Reconciling"): 0,
        ("consumer", "Stable"): 0,
        ("consumer", "Dead"): 0,
    }
    assert c.group_ids() == ["a", "b", "c"]


def java_hash_code(text: str) -> int:
    """String.hashCode in int32 arithmetic, over UTF-16 code units."""
    h = ctypes.c_int32(0)
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h = ctypes.c_int32(31 * h.value + int.from_bytes(units[i : i + 2], "little"))
    return h.value


@pytest.mark.parametrize(
    ("group_id", "hash_code"),
    [
        ("", 0),
        ("hello", 99162322),  # Java's "hello".hashCode()
        ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE: Utils.abs gives 0
        ("\U0001f600", 31 * 0xD83D + 0xDE00),  # one emoji is two UTF-16 units
        ("my-consumer-group", None),
        ("a-long-group-id-with-a-negative-hash-code-0123456789", None),
    ],
)
def test_partition_for_is_kafkas_utils_abs_of_java_hash_code_mod_partitions(
    group_id: str, hash_code: int | None
) -> None:
    h = java_hash_code(group_id)
    if hash_code is not None:
        assert h == hash_code
    expected = 0 if h == -(2**31) else abs(h)
    assert coordinator().partition_for(group_id) == expected % 50
    assert coordinator(offsets_topic_num_partitions=7).partition_for(group_id) == expected % 7


def test_partition_for_differs_from_masking_the_sign_bit() -> None:
    group_id = "a-long-group-id-with-a-negative-hash-code-0123456789"
    h = java_hash_code(group_id)
    assert h < 0
    assert coordinator().partition_for(group_id) == (-h) % 50 != (h & 0x7FFFFFFF) % 50
