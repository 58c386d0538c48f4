"""The web console's JSON API (/v1/brokers, /v1/topics..., /v1/groups...) and its pages, on
an in-process broker: real HTTP to the admin endpoint, our codec for the Kafka side (produce,
join, sync, leave, commit). Bad input is refused with 400/404 and changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    TopicPartition,
    encode_assignment,
)
from protocol.errors import ErrorCode
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from protocol.records import build_batch
from tests.admin_http import http
from tests.reliability import inproc
from tests.reliability.inproc import T0, commit
from tests.wire import WireClient

DEADLINE_S = 30


def running(tmp_path: Path, **settings: Any) -> Any:
    return inproc.running(
        tmp_path / "data", **{"admin.port": 0, "offsets.topic.num.partitions": 1, **settings}
    )


async def produce(client: WireClient, topic: str, records: list[Any], partition: int = 0) -> int:
    """Base offset of one batch of (key, value, headers, timestamp) records."""
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[
                    PartitionProduceData(index=partition, records=build_batch(records))
                ],
            )
        ],
    )
    part = (await client.call(request, 9)).responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NONE
    return int(part.base_offset)


async def create_topic(broker: Any, name: str, partitions: int = 1, **configs: str) -> None:
    status, answer = await http(
        broker, "POST", "/v1/topics", {"name": name, "partitions": partitions, "configs": configs}
    )
    assert status == 200, answer


# --- brokers, pages -----------------------------------------------------------------------


async def test_brokers_names_the_cluster_and_listeners(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            status, answer = await http(broker, "GET", "/v1/brokers")
            assert status == 200
            assert answer["cluster_id"] == broker.cluster_id
            assert broker.cluster_id
            (node,) = answer["brokers"]
            assert node["node_id"] == broker.node_id
            assert node["port"] == broker.addresses[0][1]
            assert [e["name"] for e in node["listeners"]] == ["PLAINTEXT"]
            assert node["ready"] is True


async def test_pages_are_served_and_nothing_outside_the_static_directory(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            status, page = await http(broker, "GET", "/")
            assert status == 200
            assert "<title>kmock console</title>" in page
            assert "/console/console.js" in page
            for name in ("console.js", "console.css"):
                status, text = await http(broker, "GET", f"/console/{name}")
                assert status == 200
                assert len(text) > 100
            for path in ("/console/../admin_http.py", "/console/%2e%2e/api.py", "/console/x.py"):
                assert (await http(broker, "GET", path))[0] == 404
            assert (await http(broker, "POST", "/"))[0] == 405


# --- topics -------------------------------------------------------------------------------


async def test_topics_are_created_listed_filtered_paged_described_and_deleted(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            for i in range(5):
                await create_topic(broker, f"orders-{i}", partitions=i + 1)
            await create_topic(broker, "payments", 2, **{"retention.ms": "3600000"})
            status, answer = await http(broker, "GET", "/v1/topics?filter=ORDERS&offset=1&limit=2")
            assert status == 200
            assert answer["total"] == 5
            assert [t["name"] for t in answer["topics"]] == ["orders-1", "orders-2"]
            assert [t["partitions"] for t in answer["topics"]] == [2, 3]
            assert answer["topics"][0]["partition_offsets"] == [[0, 0], [0, 0]]
            names = [t["name"] for t in (await http(broker, "GET", "/v1/topics"))[1]["topics"]]
            assert "payments" in names

            client = await WireClient.connect(broker)
            await produce(client, "payments", [(b"k", b"v" * 100, (), T0)] * 3, partition=1)
            listed = (await http(broker, "GET", "/v1/topics?filter=payments"))[1]["topics"]
            assert listed[0]["partition_offsets"] == [[0, 0], [0, 3]]
            status, detail = await http(broker, "GET", "/v1/topics/payments")
            assert status == 200
            assert detail["messages"] == 3
            assert detail["size_bytes"] > 300
            p1 = detail["partition_list"][1]
            assert (p1["log_start_offset"], p1["high_watermark"]) == (0, 3)
            configs = {c["name"]: c for c in detail["configs"]}
            assert configs["retention.ms"] == {
                "name": "retention.ms",
                "value": "3600000",
                "source": "DYNAMIC_TOPIC_CONFIG",
            }
            assert configs["cleanup.policy"]["source"] == "DEFAULT_CONFIG"

            status, answer = await http(broker, "DELETE", "/v1/topics/payments")
            assert (status, answer["deleted"]) == (200, "payments")
            assert broker.topics.get("payments") is None
            status, answer = await http(broker, "DELETE", "/v1/topics/payments")
            assert (status, answer["error_code"]) == (404, "UNKNOWN_TOPIC_OR_PARTITION")
            await client.aclose()


BAD_CREATES = [
    ({"name": "orders", "partitions": 1}, "name", "TOPIC_ALREADY_EXISTS"),
    ({"name": "bad name!", "partitions": 1}, "name", "INVALID_TOPIC_EXCEPTION"),
    ({"name": "t2", "partitions": 0}, "partitions", "INVALID_PARTITIONS"),
    ({"name": "t2", "partitions": -5}, "partitions", None),
    ({"name": "t2", "partitions": "two"}, "partitions", None),
    ({"name": "t2", "configs": {"retention.ms": "soon"}}, "configs", "INVALID_CONFIG"),
    ({"name": "t2", "configs": {"colour": "red"}}, "configs", "INVALID_CONFIG"),
    ({"name": "t2", "replication_factor": 3}, "replication_factor", "INVALID_REPLICATION_FACTOR"),
    ({"name": "t2", "colour": "red"}, "colour", None),
    ({"partitions": 1}, "name", None),
]


@pytest.mark.parametrize(("body", "field", "code"), BAD_CREATES)
async def test_a_bad_topic_is_refused_naming_the_field_and_nothing_is_created(
    tmp_path: Path, body: dict[str, Any], field: str, code: str | None
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "orders")
            before = sorted(broker.topics.topics)
            status, answer = await http(broker, "POST", "/v1/topics", body)
            assert status == 400, answer
            assert answer["field"] == field
            assert answer.get("error_code") == code
            assert sorted(broker.topics.topics) == before


async def test_unknown_topics_and_malformed_bodies(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            status, answer = await http(broker, "GET", "/v1/topics/nope")
            assert (status, answer["error_code"]) == (404, "UNKNOWN_TOPIC_OR_PARTITION")
            assert (await http(broker, "GET", "/v1/topics/nope/messages"))[0] == 404
            assert (await http(broker, "GET", "/v1/topics?limit=0"))[0] == 400
            assert (await http(broker, "GET", "/v1/topics?offset=-1"))[0] == 400
            assert (await http(broker, "GET", "/v1/topics?colour=red"))[1]["field"] == "colour"
            assert (await http(broker, "PUT", "/v1/topics/x"))[0] == 405
            host, port = broker.admin_address
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(b"POST /v1/topics HTTP/1.1\r\nContent-Length: 4\r\n\r\n{nam")
            answer = bytearray()
            while chunk := await stream.receive_some():
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 400 ")
            assert b'"field": "body"' in answer


async def test_a_change_from_another_origin_is_refused(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            evil = "Origin: http://evil.example\r\n"
            status, _ = await http(broker, "POST", "/v1/topics", {"name": "x"}, headers=evil)
            assert status == 403
            assert broker.topics.get("x") is None
            # Reading is not a change; the console's own origin may change things.
            assert (await http(broker, "GET", "/v1/topics", headers=evil))[0] == 200
            host, port = broker.admin_address
            own = f"Origin: http://{host}:{port}\r\n"
            assert (await http(broker, "POST", "/v1/topics", {"name": "x"}, headers=own))[0] == 200


# --- messages -----------------------------------------------------------------------------


async def test_messages_by_offset_and_timestamp_with_decoded_keys_values_headers(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t", 2)
            client = await WireClient.connect(broker)
            await produce(client, "t", [(b"a", b"x", (), T0)], partition=0)  # not partition 1
            records = [
                (b"user-1", b'{"n": 1, "ok": true}', (("trace", b"abc"),), T0),
                (None, b"plain text \xc3\xa9", (("bin", b"\x00\x01"),), T0 + 10),
                (b"\xff\xfe", b"\x00\x01\x02", (), T0 + 20),
                (b"k", None, (("h", None),), T0 + 30),
            ]
            await produce(client, "t", records, partition=1)
            status, page = await http(broker, "GET", "/v1/topics/t/messages?partition=1&limit=2")
            assert status == 200
            assert page["isolation_level"] == "read_uncommitted"
            assert [m["offset"] for m in page["messages"]] == [0, 1]
            assert page["next_offset"] == 2
            assert page["high_watermark"] == 4
            first, second = page["messages"]
            assert first["key"] == {"encoding": "utf-8", "data": "user-1", "size": 6}
            assert first["value"]["encoding"] == "json"
            assert first["value"]["data"] == {"n": 1, "ok": True}
            assert first["headers"] == [
                {"key": "trace", "value": {"encoding": "utf-8", "data": "abc", "size": 3}}
            ]
            assert first["timestamp"] == T0
            assert first["timestamp_type"] == "CreateTime"
            assert second["key"] is None
            assert second["value"] == {"encoding": "utf-8", "data": "plain text é", "size": 13}
            assert second["headers"][0]["value"] == {"encoding": "hex", "data": "0001", "size": 2}

            status, page = await http(broker, "GET", "/v1/topics/t/messages?partition=1&offset=2")
            third, fourth = page["messages"]
            assert third["key"] == {"encoding": "hex", "data": "fffe", "size": 2}
            assert third["value"] == {"encoding": "hex", "data": "000102", "size": 3}
            assert fourth["value"] is None
            assert fourth["headers"] == [{"key": "h", "value": None}]
            assert page["next_offset"] == 4

            status, page = await http(
                broker, "GET", f"/v1/topics/t/messages?partition=1&timestamp={T0 + 15}"
            )
            assert page["offset_for_timestamp"] == 2
            assert [m["offset"] for m in page["messages"]] == [2, 3]
            iso = "2023-11-14T22:13:20.025Z"  # T0 + 25 ms
            status, page = await http(
                broker, "GET", f"/v1/topics/t/messages?partition=1&timestamp={iso}"
            )
            assert status == 200
            assert [m["offset"] for m in page["messages"]] == [3]
            await client.aclose()


BAD_READS = [
    ("partition=1&offset=-1", 400, "offset"),
    ("partition=1&offset=9", 400, "offset"),
    ("partition=1&offset=abc", 400, "offset"),
    ("partition=1&timestamp=yesterday", 400, "timestamp"),
    ("partition=1&timestamp=2024-13-45T00:00:00", 400, "timestamp"),
    ("partition=1&offset=0&timestamp=5", 400, "timestamp"),
    ("partition=7", 404, "partition"),
    ("partition=-1", 400, "partition"),
    ("partition=1&limit=0", 400, "limit"),
    ("partition=1&wait_ms=-5", 400, "wait_ms"),
]


@pytest.mark.parametrize(("query", "status", "field"), BAD_READS)
async def test_bad_message_reads_are_refused_naming_the_field(
    tmp_path: Path, query: str, status: int, field: str
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t", 2)
            client = await WireClient.connect(broker)
            await produce(client, "t", [(None, b"v", (), T0)] * 3, partition=1)
            got, answer = await http(broker, "GET", f"/v1/topics/t/messages?{query}")
            assert (got, answer["field"]) == (status, field), answer
            assert field in answer["error"]
            assert broker.topics.get("t").partitions[1].log.high_watermark == 3
            await client.aclose()


async def test_follow_live_waits_for_the_next_message(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t")
            client = await WireClient.connect(broker)
            await produce(client, "t", [(None, b"first", (), T0)])
            got: list[Any] = []

            async def follow() -> None:
                got.append(
                    await http(broker, "GET", "/v1/topics/t/messages?offset=1&wait_ms=20000")
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow)
                # The read is parked on the partition before the produce.
                partition = broker.topics.get("t").partitions[0]
                while not partition.waiters:
                    await trio.testing.wait_all_tasks_blocked()
                await produce(client, "t", [(None, b"second", (), T0)])
            status, page = got[0]
            assert status == 200
            assert [m["value"]["data"] for m in page["messages"]] == ["second"]
            # At the end with nothing coming, wait_ms runs out and the page is empty.
            with trio.fail_after(5):
                status, page = await http(
                    broker, "GET", "/v1/topics/t/messages?offset=2&wait_ms=50"
                )
            assert (status, page["messages"], page["next_offset"]) == (200, [], 2)
            await client.aclose()


async def test_a_follow_ends_as_soon_as_its_client_goes_away(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t")
            host, port = broker.admin_address
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(
                f"GET /v1/topics/t/messages?offset=0&wait_ms=60000 HTTP/1.1\r\n"
                f"Host: {host}:{port}\r\n\r\n".encode()
            )
            partition = broker.topics.get("t").partitions[0]
            while not partition.waiters:
                await trio.testing.wait_all_tasks_blocked()
            await stream.aclose()
            # The read stops waiting for records nobody will receive, long before wait_ms.
            with trio.fail_after(5):
                while partition.waiters:
                    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


async def test_a_rebound_host_name_reaches_nothing(tmp_path: Path) -> None:
    """A page of rebound.example whose name now resolves to 127.0.0.1 sends its own name in
    Host (and no Origin on a same-origin request): refused before anything is read."""
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            for method, path, body in (
                ("POST", "/v1/topics", {"name": "planted", "partitions": 1}),
                ("GET", "/v1/topics", None),
                ("GET", "/", None),
            ):
                status, answer = await http(broker, method, path, body, host="rebound.example:9644")
                assert status == 421
                assert "'rebound.example:9644' is not a name of this admin endpoint" in answer
            assert broker.topics.get("planted") is None
            status, _ = await http(broker, "GET", "/v1/topics", host="localhost")
            assert status == 200


# --- groups -------------------------------------------------------------------------------


def _assignment(topic: str, partitions: list[int]) -> bytes:
    return encode_assignment(
        ConsumerProtocolAssignment(
            assigned_partitions=[TopicPartition(topic=topic, partitions=partitions)]
        ),
        0,
    )


def _join(member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


async def _sync(client: WireClient, join: Any, assignments: dict[str, bytes]) -> None:
    request = SyncGroupRequest(
        group_id="g",
        generation_id=join.generation_id,
        member_id=join.member_id,
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()
        ],
    )
    assert (await client.call(request, 3)).error_code == ErrorCode.NONE


async def _two_rebalances(broker: Any) -> tuple[str, str]:
    """Member a joins (generation 1); b joins and a rejoins (2); b leaves with a reason and
    a rejoins (3). Returns the member ids."""
    a_client = await WireClient.connect(broker)
    b_client = await WireClient.connect(broker)
    join_a = await a_client.call(_join(), 3)
    a = join_a.member_id
    await _sync(a_client, join_a, {a: _assignment("t", [0, 1])})
    joins: dict[str, Any] = {}

    async def join_b() -> None:
        joins["b"] = await b_client.call(_join(), 3)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(join_b)
        while broker.coordinator.coordinator.group("g").state.name != "PREPARING_REBALANCE":
            await trio.testing.wait_all_tasks_blocked()
        joins["a"] = await a_client.call(_join(a), 3)
    b = joins["b"].member_id
    assert joins["a"].generation_id == 2
    await _sync(a_client, joins["a"], {a: _assignment("t", [0]), b: _assignment("t", [1])})
    await _sync(b_client, joins["b"], {})
    leave = LeaveGroupRequest(
        group_id="g", members=[MemberIdentity(member_id=b, reason="shutting down for the test")]
    )
    assert (await b_client.call(leave, 5)).error_code == ErrorCode.NONE
    join_a = await a_client.call(_join(a), 3)
    assert join_a.generation_id == 3
    await _sync(a_client, join_a, {a: _assignment("t", [0, 1])})
    await b_client.aclose()
    return a, b, a_client


async def test_group_list_detail_lag_and_the_timeline_of_two_rebalances(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t", 2)
            client = await WireClient.connect(broker)
            await produce(client, "t", [(None, b"v", (), T0)] * 5, partition=0)
            await produce(client, "t", [(None, b"v", (), T0)] * 2, partition=1)
            assert await commit(client, "idle", "t", 1) == ErrorCode.NONE
            a, b, a_client = await _two_rebalances(broker)

            status, listed = await http(broker, "GET", "/v1/groups")
            assert status == 200
            rows = {g["group_id"]: g for g in listed["groups"]}
            assert rows["g"]["state"] == "Stable"
            assert rows["g"]["members"] == 1
            assert rows["g"]["epoch"] == 3
            assert rows["g"]["type"] == "classic"
            assert rows["idle"]["state"] == "Empty"
            filtered = (await http(broker, "GET", "/v1/groups?filter=IDL&type=classic"))[1]
            assert [g["group_id"] for g in filtered["groups"]] == ["idle"]
            assert (await http(broker, "GET", "/v1/groups?type=share"))[0] == 400
            page = (await http(broker, "GET", "/v1/groups?offset=1&limit=1"))[1]
            assert page["total"] == 2
            assert [g["group_id"] for g in page["groups"]] == ["idle"]

            status, detail = await http(broker, "GET", "/v1/groups/g")
            assert status == 200
            assert detail["leader"] == a
            assert detail["protocol"] == "range"
            (member,) = detail["member_list"]
            assert member["member_id"] == a
            assert member["assignment"] == {"t": [0, 1]}
            assert [
                (r["partition"], r["committed_offset"], r["lag"]) for r in detail["offsets"]
            ] == [
                (0, None, None),
                (1, None, None),
            ]
            status, idle = await http(broker, "GET", "/v1/groups/idle")
            ((row),) = idle["offsets"]
            assert (row["committed_offset"], row["high_watermark"], row["lag"]) == (1, 5, 4)
            assert idle["total_lag"] == 4
            assert (await http(broker, "GET", "/v1/groups/nope"))[0] == 404

            status, timeline = await http(broker, "GET", "/v1/groups/g/timeline")
            assert status == 200
            gens = timeline["generations"]
            assert [g["generation"] for g in gens] == [1, 2, 3]
            assert [g["joined"] for g in gens] == [[a], [b], []]
            assert [[m["member_id"] for m in g["members"]] for g in gens] == [[a], [a, b], [a]]
            assert gens[1]["members"][1]["assignment"] == {"t": [1]}
            assert gens[1]["leader"] == a
            (gone,) = gens[2]["left"]
            assert gone["member_id"] == b
            assert gone["how"] == "left"
            assert gone["why"] == "LeaveGroup: shutting down for the test"
            status, idle_timeline = await http(broker, "GET", "/v1/groups/idle/timeline")
            ((c),) = idle_timeline["commits"]
            assert (c["topic"], c["partition"], c["offset"]) == ("t", 0, 1)
            assert c["time_ms"] > T0
            assert (await http(broker, "GET", "/v1/groups/nope/timeline"))[0] == 404
            await a_client.aclose()
            await client.aclose()


async def test_reset_offsets_refused_with_members_dry_run_then_for_real(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t", 2)
            client = await WireClient.connect(broker)
            await produce(client, "t", [(None, b"v", (), T0 + i) for i in range(5)], partition=0)
            assert await commit(client, "g", "t", 4) == ErrorCode.NONE
            a_client = await WireClient.connect(broker)
            join = await a_client.call(_join(), 3)
            await _sync(a_client, join, {join.member_id: _assignment("t", [0])})

            def committed() -> dict[Any, int]:
                return {
                    k: v.offset
                    for k, v in broker.coordinator.coordinator.group("g").offsets.items()
                }

            status, answer = await http(
                broker, "POST", "/v1/groups/g/offsets/reset", {"to": "earliest", "dry_run": False}
            )
            assert status == 409
            assert answer["error_code"] == "NON_EMPTY_GROUP"
            assert "inactive, but the current state is Stable" in answer["error"]
            assert committed() == {("t", 0): 4}

            leave = LeaveGroupRequest(
                group_id="g", members=[MemberIdentity(member_id=join.member_id)]
            )
            assert (await a_client.call(leave, 5)).error_code == ErrorCode.NONE
            status, answer = await http(
                broker, "POST", "/v1/groups/g/offsets/reset", {"to": "earliest"}
            )
            assert status == 200
            assert answer["dry_run"] is True
            assert [
                (r["partition"], r["current_offset"], r["new_offset"]) for r in answer["plan"]
            ] == [(0, 4, 0)]
            assert committed() == {("t", 0): 4}
            body = {"to": "offset", "offset": 99, "topics": ["t"], "dry_run": True}
            status, answer = await http(broker, "POST", "/v1/groups/g/offsets/reset", body)
            assert [r["new_offset"] for r in answer["plan"]] == [5, 0]  # clamped to [start, end]
            body = {"to": "timestamp", "timestamp": T0 + 2, "topic": "t", "partitions": [0]}
            status, answer = await http(broker, "POST", "/v1/groups/g/offsets/reset", body)
            assert [r["new_offset"] for r in answer["plan"]] == [2]

            status, answer = await http(
                broker, "POST", "/v1/groups/g/offsets/reset", {"to": "earliest", "dry_run": False}
            )
            assert status == 200
            assert answer["executed"] is True
            assert committed() == {("t", 0): 0}
            await a_client.aclose()
            await client.aclose()


BAD_RESETS = [
    ({"to": "yesterday"}, 400, "to"),
    ({"to": "offset", "offset": -1}, 400, "offset"),
    ({"to": "offset"}, 400, "offset"),
    ({"to": "timestamp", "timestamp": "last tuesday"}, 400, "timestamp"),
    ({"to": "earliest", "topics": ["nope"]}, 404, "topics"),
    ({"to": "earliest", "topic": "t", "partitions": [5]}, 400, "partitions"),
    ({"to": "earliest", "dry_run": "no"}, 400, "dry_run"),
    ({"to": "earliest", "colour": "red"}, 400, "colour"),
    ({"to": "shift", "shift_by": 1, "topic": "t", "partitions": [1]}, 400, "shift_by"),
]


@pytest.mark.parametrize(("body", "status", "field"), BAD_RESETS)
async def test_bad_resets_are_refused_and_commit_nothing(
    tmp_path: Path, body: dict[str, Any], status: int, field: str
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t", 2)
            client = await WireClient.connect(broker)
            await produce(client, "t", [(None, b"v", (), T0)] * 3, partition=0)
            assert await commit(client, "g", "t", 2) == ErrorCode.NONE
            end = broker.topics.get("__consumer_offsets").partitions[0].log.high_watermark
            got, answer = await http(
                broker, "POST", "/v1/groups/g/offsets/reset", {"dry_run": False, **body}
            )
            assert (got, answer["field"]) == (status, field), answer
            # Nothing was written to __consumer_offsets.
            assert broker.topics.get("__consumer_offsets").partitions[0].log.high_watermark == end
            await client.aclose()


async def test_a_kip848_consumer_group_its_members_and_epochs(tmp_path: Path) -> None:
    from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

    def beat(member_id: str, epoch: int, owned: list[int] | None = None) -> Any:
        from protocol.messages.consumer_group_heartbeat import TopicPartitions

        return ConsumerGroupHeartbeatRequest(
            group_id="cg",
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=["t"] if epoch == 0 else None,
            topic_partitions=[]
            if epoch == 0
            else None
            if owned is None
            else [TopicPartitions(topic_id=topic_id, partitions=owned)],
        )

    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            await create_topic(broker, "t", 2)
            topic_id = broker.topics.get("t").topic_id
            client = await WireClient.connect(broker)
            one = await client.call(beat("m1", 0), 1)
            assert one.error_code == ErrorCode.NONE
            two = await client.call(beat("m2", 0), 1)
            assert two.member_epoch == 2
            # m1 gives up a partition, then m2 gets it.
            revoke = await client.call(beat("m1", one.member_epoch, [0, 1]), 1)
            kept = [p for t in revoke.assignment.topic_partitions for p in t.partitions]
            settled = await client.call(beat("m1", revoke.member_epoch, kept), 1)
            assert settled.member_epoch == 2
            got = await client.call(beat("m2", two.member_epoch, []), 1)
            assert got.error_code == ErrorCode.NONE

            status, detail = await http(broker, "GET", "/v1/groups/cg")
            assert status == 200
            assert (detail["type"], detail["epoch"], detail["members"]) == ("consumer", 2, 2)
            assignments = {m["member_id"]: m["assignment"] for m in detail["member_list"]}
            assert sorted(p for a in assignments.values() for p in a.get("t", [])) == [0, 1]
            listed = (await http(broker, "GET", "/v1/groups?type=consumer"))[1]["groups"]
            assert [g["group_id"] for g in listed] == ["cg"]

            leave = await client.call(beat("m2", -1), 1)
            assert leave.error_code == ErrorCode.NONE
            status, timeline = await http(broker, "GET", "/v1/groups/cg/timeline")
            assert status == 200
            assert timeline["type"] == "consumer"
            gens = timeline["generations"]
            assert [g["generation"] for g in gens] == [1, 2, 3]
            assert [sorted(m["member_id"] for m in g["members"]) for g in gens] == [
                ["m1"],
                ["m1", "m2"],
                ["m1"],
            ]
            assert {m["member_id"]: m["assignment"] for m in gens[1]["members"]} == {
                "m1": {"t": kept},
                "m2": {"t": [p for p in (0, 1) if p not in kept]},
            }
            (gone,) = gens[2]["left"]
            assert (gone["member_id"], gone["how"]) == ("m2", "left")
            assert "member_epoch -1" in gone["why"]
            await client.aclose()


async def test_hundreds_of_topics_and_groups_page_and_filter_on_the_server(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            for i in range(150):
                await create_topic(broker, f"t{i:03}")
            for i in range(300):
                assert await commit(client, f"g{i:03}", "t000", 0) == ErrorCode.NONE
            for kind, total in (("topics", 151), ("groups", 300)):  # 151: __consumer_offsets too
                seen: list[str] = []
                offset = 0
                while True:
                    path = f"/v1/{kind}?offset={offset}&limit=64"
                    status, page = await http(broker, "GET", path)
                    assert status == 200
                    assert page["total"] == total
                    rows = page[kind]
                    assert len(rows) <= 64
                    if not rows:
                        break
                    seen += [r["name" if kind == "topics" else "group_id"] for r in rows]
                    offset += len(rows)
                assert seen == sorted(seen)
                assert len(set(seen)) == total  # every one once, in order
            status, page = await http(broker, "GET", "/v1/topics?filter=t14&internal=false")
            assert [t["name"] for t in page["topics"]] == [f"t14{i}" for i in range(10)]
            status, page = await http(broker, "GET", "/v1/groups?filter=g29&limit=5")
            assert page["total"] == 10
            assert [g["group_id"] for g in page["groups"]] == [f"g29{i}" for i in range(5)]
            await client.aclose()
