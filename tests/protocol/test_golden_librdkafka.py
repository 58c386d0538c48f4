"""Golden request frames sent by librdkafka (confluent-kafka), captured from a live session
against kmock by scripts/capture_golden_librdkafka.py: one file per (API, version), the
first frame the client sent for it.

For each frame: the route table knows its API and version, the header and body decode with
our codec, re-encoding the decoded body gives the captured bytes back, and the fields the
capture script controlled (client id, topic and group names, settings) are what it set.
The captured values (member ids, topic ids, offsets) vary from one capture to the next, so
the checks name what the script fixed and only the shape of the rest.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker.routes import route_for
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.frames import parse_request_header, peek_request_key
from protocol.schema import decode, encode

GOLDEN = Path(__file__).parent / "golden" / "librdkafka"
FILES = sorted(GOLDEN.glob("*.hex"))

# What scripts/capture_golden_librdkafka.py did.
CLIENT_ID = "kmock-golden"
TOPIC = "golden-orders"
DOOMED_TOPIC = "golden-doomed"
GROUP = "golden-group"
RECORDS = 10
SESSION_TIMEOUT_MS = 6000
FETCH_WAIT_MAX_MS = 100

# The APIs a producer, a group consumer and the admin client use between them.
EXPECTED_APIS = {
    "api_versions",
    "metadata",
    "create_topics",
    "init_producer_id",
    "produce",
    "find_coordinator",
    "join_group",
    "sync_group",
    "heartbeat",
    "list_offsets",
    "fetch",
    "offset_commit",
    "offset_fetch",
    "leave_group",
    "list_groups",
    "describe_groups",
    "delete_groups",
    "delete_topics",
}


def snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def is_member_id(member_id: str) -> bool:
    # Kafka's member ids are client_id + "-" + a UUID.
    prefix = CLIENT_ID + "-"
    if not member_id.startswith(prefix):
        return False
    uuid.UUID(member_id[len(prefix) :])
    return True


def check_api_versions(m: Any, v: int) -> None:
    assert m.client_software_name == "confluent-kafka-python"
    assert "rdkafka" in m.client_software_version


def check_metadata(m: Any, v: int) -> None:
    names = None if m.topics is None else [t.name for t in m.topics]
    assert names is None or set(names) <= {TOPIC, DOOMED_TOPIC}, names


def check_create_topics(m: Any, v: int) -> None:
    (t,) = m.topics
    assert (t.name, t.num_partitions, t.replication_factor) == (TOPIC, 3, 1)
    assert not t.assignments
    assert not t.configs
    assert m.validate_only is False


def check_init_producer_id(m: Any, v: int) -> None:
    # Idempotent, not transactional: no transactional id, and a fresh producer.
    assert m.transactional_id is None
    assert (m.producer_id, m.producer_epoch) == (-1, -1)


def check_produce(m: Any, v: int) -> None:
    assert m.transactional_id is None
    assert m.acks == -1
    (t,) = m.topic_data
    assert t.name == TOPIC
    for p in t.partition_data:
        records = bytes(p.records)
        # RecordBatch v2 from an idempotent producer: magic 2, a producer id, sequence 0.
        magic = records[16]
        (producer_id,) = struct.unpack_from(">q", records, 43)
        (base_sequence,) = struct.unpack_from(">i", records, 53)
        assert magic == 2
        assert producer_id >= 0
        assert base_sequence == 0
        assert b"trace" in records  # the header every record carried (uncompressed batch)


def check_find_coordinator(m: Any, v: int) -> None:
    assert m.key_type == 0
    keys = [m.key] if v < 4 else m.coordinator_keys
    assert keys == [GROUP]


def check_join_group(m: Any, v: int) -> None:
    assert m.group_id == GROUP
    assert m.session_timeout_ms == SESSION_TIMEOUT_MS
    assert m.protocol_type == "consumer"
    assert [p.name for p in m.protocols] == ["range", "roundrobin"]
    for p in m.protocols:
        assert decode_subscription(p.metadata).topics == [TOPIC]
    assert m.member_id == "" or is_member_id(m.member_id)


def check_sync_group(m: Any, v: int) -> None:
    assert m.group_id == GROUP
    assert m.generation_id >= 1
    assert is_member_id(m.member_id)
    # The only member is the leader: it sends the whole assignment, all partitions to itself.
    (a,) = m.assignments
    assert a.member_id == m.member_id
    (tp,) = decode_assignment(a.assignment).assigned_partitions
    assert (tp.topic, sorted(tp.partitions)) == (TOPIC, [0, 1, 2])


def check_heartbeat(m: Any, v: int) -> None:
    assert m.group_id == GROUP
    assert m.generation_id >= 1
    assert is_member_id(m.member_id)


def check_list_offsets(m: Any, v: int) -> None:
    assert m.replica_id == -1
    (t,) = m.topics
    assert t.name == TOPIC
    # auto.offset.reset=earliest: the first offset, asked for as timestamp -2.
    assert {p.timestamp for p in t.partitions} == {-2}


def check_fetch(m: Any, v: int) -> None:
    assert m.replica_id == -1
    assert m.max_wait_ms == FETCH_WAIT_MAX_MS
    assert m.topics
    for t in m.topics:
        if v >= 13:  # topics by id
            assert t.topic_id != uuid.UUID(int=0)
        else:
            assert t.topic == TOPIC
        assert {p.partition for p in t.partitions} <= {0, 1, 2}


def check_offset_commit(m: Any, v: int) -> None:
    assert m.group_id == GROUP
    assert m.generation_id_or_member_epoch >= 1
    assert is_member_id(m.member_id)
    (t,) = m.topics
    assert t.name == TOPIC
    # Committed after consuming every record: the positions add up to the record count.
    assert sorted(p.partition_index for p in t.partitions) == [0, 1, 2]
    assert sum(p.committed_offset for p in t.partitions) == RECORDS


def check_offset_fetch(m: Any, v: int) -> None:
    if v < 8:
        assert m.group_id == GROUP
        topics = m.topics
    else:
        (g,) = m.groups
        assert g.group_id == GROUP
        topics = g.topics
    assert [t.name for t in topics] == [TOPIC]


def check_leave_group(m: Any, v: int) -> None:
    assert m.group_id == GROUP
    member_ids = [m.member_id] if v < 3 else [x.member_id for x in m.members]
    assert len(member_ids) == 1
    assert is_member_id(member_ids[0])


def check_list_groups(m: Any, v: int) -> None:
    if v >= 4:
        assert m.states_filter == []


def check_describe_groups(m: Any, v: int) -> None:
    assert m.groups == [GROUP]


def check_delete_groups(m: Any, v: int) -> None:
    assert m.groups_names == [GROUP]


def check_delete_topics(m: Any, v: int) -> None:
    names = m.topic_names if v < 6 else [t.name for t in m.topics]
    assert names == [DOOMED_TOPIC]


CHECKS: dict[str, Callable[[Any, int], None]] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_")
}


def test_capture_covers_every_api_a_client_uses():
    captured = {f.stem.rsplit("_v", 1)[0] for f in FILES}
    assert captured >= EXPECTED_APIS, f"missing: {sorted(EXPECTED_APIS - captured)}"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden_frame_decodes_and_reencodes(path):
    frame = bytes.fromhex(path.read_text())
    key, version, correlation_id = peek_request_key(frame)
    route = route_for(key)
    assert route is not None, f"API key {key} is not routed"
    assert path.name == f"{snake(route.name)}_v{version}.hex"
    assert version in route.request.VERSIONS
    header, start = parse_request_header(frame, route.request.is_flexible(version))
    assert header.client_id == CLIENT_ID
    assert correlation_id > 0
    msg = decode(route.request, version, frame, start)
    assert encode(msg, version) == frame[start:]
    check = CHECKS.get(snake(route.name))
    assert check is not None, f"no field checks for {route.name}: add check_{snake(route.name)}"
    check(msg, version)
