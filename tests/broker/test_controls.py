"""The test controls over the admin endpoint's /v1 paths, on an in-process broker: faults
answered where Kafka places each API's error, the virtual clock driving a session expiry,
the journal, connections, storage faults, and bad control input refused with 400 and
nothing changed. Requests go over real sockets: HTTP for the controls, our codec for Kafka.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from protocol.consumer_offsets import decode_record
from protocol.errors import ErrorCode
from protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.sync_group import SyncGroupRequest
from protocol.records import decode_records
from protocol.schema import encode
from tests.admin_http import http
from tests.reliability import inproc
from tests.reliability.inproc import commit, create, produce, produce_request
from tests.wire import WireClient, read_frame

DEADLINE_S = 30


def running(tmp_path: Path, **settings: Any) -> Any:
    return inproc.running(
        tmp_path / "data", **{"admin.port": 0, "offsets.topic.num.partitions": 1, **settings}
    )


async def state(broker: Any) -> dict[str, Any]:
    """Everything a refused control must leave alone."""
    clock = (await http(broker, "GET", "/v1/clock"))[1]
    return {
        "faults": (await http(broker, "GET", "/v1/faults"))[1],
        "clock": clock["now_ms"] if clock["mode"] == "virtual" else "wall",
        "journal": (await http(broker, "GET", "/v1/journal?api=Produce"))[1]["entries"],
    }


# --- bad input ----------------------------------------------------------------------------


BAD = [
    ("POST", "/v1/faults", {"api": "Prodce", "error": "NOT_LEADER_OR_FOLLOWER"}, "api"),
    ("POST", "/v1/faults", {"api": "Produce", "error": "NOT_A_LEADER"}, "error"),
    ("POST", "/v1/faults", {"api": "Produce", "error": 6, "count": -1}, "count"),
    ("POST", "/v1/faults", {"api": "Produce", "error": 6, "count": 0}, "count"),
    ("POST", "/v1/faults", {"api": "Produce", "error": 6, "delay_ms": -5}, "delay_ms"),
    ("POST", "/v1/faults", {"api": "Produce", "error": 6, "colour": "red"}, "colour"),
    ("POST", "/v1/faults", {"api": "Produce"}, "error"),
    ("POST", "/v1/faults", {"api": "Produce", "action": "explode"}, "action"),
    ("POST", "/v1/faults", {"api": "Produce", "error": 6, "partition": 0}, "partition"),
    ("POST", "/v1/faults", {"storage": "disk"}, "storage"),
    # one bad fault in a list: none of them is added
    ("POST", "/v1/faults", [{"api": "Fetch", "error": 6}, {"api": "Fetch", "error": "?"}], "error"),
    ("POST", "/v1/faults", b'{"api": "Produce", "error": ', "body"),
    ("POST", "/v1/faults", b"[1, 2", "body"),
    ("POST", "/v1/clock/advance", {"ms": 1000}, "ms"),  # a wall clock (below)
    ("POST", "/v1/clock/advance", {"ms": "soon"}, "ms"),
    ("POST", "/v1/clock/advance", {"ms": -1}, "ms"),
    ("POST", "/v1/clock/advance", {"seconds": 1}, "seconds"),
    ("GET", "/v1/journal?since=-1", None, "since"),
    ("GET", "/v1/journal?api=Nope", None, "api"),
    ("GET", "/v1/journal?colour=red", None, "colour"),
    ("POST", "/v1/connections/close", {"connection": "one"}, "connection"),
    ("POST", "/v1/connections/close", {"port": 1}, "port"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), BAD)
async def test_bad_control_input_is_refused_naming_the_field_and_changes_nothing(
    tmp_path: Path, method: str, path: str, body: Any, field: str
) -> None:
    wall = body == {"ms": 1000}
    clock = {"kmock.clock": "wall" if wall else "virtual"}
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **clock) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await http(broker, "POST", "/v1/faults", {"api": "Fetch", "error": 6, "count": 3})
            before = await state(broker)
            raw = body if isinstance(body, bytes) else None
            status, answer = await http(broker, method, path, None if raw else body, raw=raw)
            assert status == 400, answer
            assert answer["field"] == field
            assert field in answer["error"]
            assert await state(broker) == before
            # Not a single connection was closed either.
            assert (await produce(client, "t", b"still here"))[0] == ErrorCode.NONE
            await client.aclose()


async def test_unknown_paths_methods_and_bodies_it_does_not_take(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            assert (await http(broker, "GET", "/v1/nothing"))[0] == 404
            assert (await http(broker, "PUT", "/v1/faults", {}))[0] == 405
            assert (await http(broker, "GET", "/v1/clock/advance"))[0] == 405
            host, port = broker.admin_address
            for head, status in [
                # too large: refused from its Content-Length, before any of it is read
                (b"POST /v1/faults HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", b"413"),
                (b"POST /v1/faults HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"411"),
                (b"POST /v1/faults HTTP/1.1\r\nContent-Length: many\r\n\r\n", b"400"),
            ]:
                stream = await trio.open_tcp_stream(host, port)
                await stream.send_all(head)
                answer = bytearray()
                while chunk := await stream.receive_some():
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer
            assert (await http(broker, "GET", "/v1/faults"))[1]["faults"] == []


# --- faults -------------------------------------------------------------------------------


async def test_produce_fault_answers_per_partition_count_times_and_appends_nothing(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            status, added = await http(
                broker,
                "POST",
                "/v1/faults",
                {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 2},
            )
            assert status == 200
            assert added["faults"][0]["count"] == 2
            assert await produce(client, "t", b"a") == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
            assert (await http(broker, "GET", "/v1/faults"))[1]["faults"][0]["count"] == 1
            assert await produce(client, "t", b"b") == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
            assert (await http(broker, "GET", "/v1/faults"))[1]["faults"] == []
            # Nothing of the failed requests was appended: the first success is offset 0.
            assert await produce(client, "t", b"c") == (ErrorCode.NONE, 0)
            await client.aclose()


async def test_an_error_on_acks_0_closes_the_connection(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await http(broker, "POST", "/v1/faults", {"api": "Produce", "error": 6})
            await client.send_raw(_produce_bytes(b"x", acks=0))
            assert await client.is_closed_by_peer()  # no response to carry it: as Kafka
            (entry,) = (await http(broker, "GET", "/v1/journal?api=Produce"))[1]["entries"]
            assert (entry["outcome"], entry["error"]) == ("disconnect", "NOT_LEADER_OR_FOLLOWER")


async def test_fault_filters_topic_and_client_id(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "a", "b")
            await http(
                broker,
                "POST",
                "/v1/faults",
                [
                    {"api": 0, "error": 6, "topic": "b", "partition": 0},
                    {"api": "produce", "error": "NOT_ENOUGH_REPLICAS", "client_id": "other"},
                ],
            )
            assert (await produce(client, "a", b"x"))[0] == ErrorCode.NONE  # not topic b
            assert (await produce(client, "b", b"x"))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert (await produce(client, "b", b"x"))[0] == ErrorCode.NONE
            # Our client id is kmock-test: the second fault waits for "other".
            faults = (await http(broker, "GET", "/v1/faults"))[1]["faults"]
            assert [f["client_id"] for f in faults] == ["other"]
            assert (await http(broker, "DELETE", "/v1/faults"))[1] == {"cleared": 1}
            await client.aclose()


async def test_group_faults_go_where_kafka_puts_them(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await http(
                broker,
                "POST",
                "/v1/faults",
                [
                    {"api": "JoinGroup", "error": "COORDINATOR_LOAD_IN_PROGRESS", "group_id": "g"},
                    {"api": "OffsetCommit", "error": "REBALANCE_IN_PROGRESS", "group_id": "g"},
                ],
            )
            join = await client.call(join_request("other"), 3)
            assert join.error_code == ErrorCode.NONE  # another group: not matched
            join = await client.call(join_request("g"), 3)
            assert join.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # top level
            assert await commit(client, "g", "t", 5) == ErrorCode.REBALANCE_IN_PROGRESS
            assert await commit(client, "g", "t", 5) == ErrorCode.NONE  # per partition
            await client.aclose()


async def _produce_late(broker: Any, client: WireClient, *, delay_ms: int) -> float:
    """Arm a delay fault for Produce and produce one record to "t" through it: the trio time
    the answer took."""
    await http(broker, "POST", "/v1/faults", {"api": "Produce", "delay_ms": delay_ms})
    before = trio.current_time()
    assert (await produce(client, "t", b"late"))[0] == ErrorCode.NONE
    return trio.current_time() - before


async def test_delay_disconnect_and_drop(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            assert await _produce_late(broker, client, delay_ms=300) >= 0.3
            await http(broker, "POST", "/v1/faults", {"api": "Produce", "action": "disconnect"})
            await client.send_raw(_produce_bytes(b"never"))
            assert await client.is_closed_by_peer()
            # drop: no answer, and none to what follows, until the client closes
            client = await WireClient.connect(broker)
            await http(broker, "POST", "/v1/faults", {"api": "Produce", "action": "drop"})
            await client.send_raw(_produce_bytes(b"dropped"))
            await client.send_raw(_produce_bytes(b"after"))
            with trio.move_on_after(0.5) as waited:
                await read_frame(client.stream)
            assert waited.cancelled_caught
            await client.aclose()
            # Only the delayed record was appended: the next offset is 1.
            client = await WireClient.connect(broker)
            assert await produce(client, "t", b"x") == (ErrorCode.NONE, 1)
            entries = (await http(broker, "GET", "/v1/journal?api=Produce"))[1]["entries"]
            assert [e["outcome"] for e in entries] == [
                "answered",
                "disconnect",
                "drop",
                "answered",
            ]
            assert entries[0]["latency_ms"] >= 300
            await client.aclose()


@pytest.fixture
def fast_clock() -> trio.testing.MockClock:
    """trio's time running 100 times faster than the real time (the broker's timers too)."""
    return trio.testing.MockClock(rate=100)


async def test_journal_latency_is_real_time_under_a_virtual_trio_clock(
    tmp_path: Path, fast_clock: trio.testing.MockClock
) -> None:
    # A delay fault sleeps on trio's clock: its 10 s pass in 0.1 s of real time, which is
    # what the client waited and what the journal shows (broker.metrics.REQUEST_CLOCK).
    with trio.fail_after(DEADLINE_S * 100):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            assert await _produce_late(broker, client, delay_ms=10_000) >= 10
            (entry,) = (await http(broker, "GET", "/v1/journal?api=Produce"))[1]["entries"]
            assert 0 < entry["latency_ms"] < 5_000
            assert abs(entry["time_ms"] / 1000 - time.time()) < 5
            await client.aclose()


def _produce_bytes(value: bytes, acks: int = -1) -> bytes:
    from tests.wire import request_bytes

    return request_bytes(produce_request("t", value, acks=acks), 9, correlation_id=7)


def join_request(group: str, member_id: str = "", session_ms: int = 10_000) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=session_ms,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


# --- virtual clock ------------------------------------------------------------------------


async def test_virtual_clock_expires_a_session_only_when_advanced(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **{"kmock.clock": "virtual"}) as broker:
            client = await WireClient.connect(broker)
            join = await client.call(join_request("g", session_ms=10_000), 3)
            assert join.error_code == ErrorCode.NONE, join
            sync = await client.call(
                SyncGroupRequest(
                    group_id="g",
                    generation_id=join.generation_id,
                    member_id=join.member_id,
                    assignments=[],
                ),
                3,
            )
            assert sync.error_code == ErrorCode.NONE
            status, clock = await http(broker, "GET", "/v1/clock")
            assert clock["mode"] == "virtual"
            start = clock["now_ms"]
            assert await group_state(client) == "Stable"
            # Real time passes; the virtual clock does not.
            await trio.sleep(0.2)
            assert (await http(broker, "GET", "/v1/clock"))[1]["now_ms"] == start
            await http(broker, "POST", "/v1/clock/advance", {"ms": 9_999})
            assert await group_state(client) == "Stable"
            beat = await client.call(
                HeartbeatRequest(
                    group_id="g", generation_id=join.generation_id, member_id=join.member_id
                ),
                3,
            )
            assert beat.error_code == ErrorCode.NONE  # the session restarts at 9 999
            await http(broker, "POST", "/v1/clock/advance", {"ms": 9_999})
            assert await group_state(client) == "Stable"
            status, clock = await http(broker, "POST", "/v1/clock/advance", {"ms": 1})
            assert status == 200
            assert clock["now_ms"] == start + 9_999 * 2 + 1
            # The expiry fired, and the group went Empty, before advance answered.
            assert await group_state(client) == "Empty"
            await client.aclose()


async def test_virtual_clock_holds_the_initial_rebalance_delay(tmp_path: Path) -> None:
    settings = {"kmock.clock": "virtual", "group.initial.rebalance.delay.ms": 3000}
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **settings) as broker:
            client = await WireClient.connect(broker)
            joined: list[Any] = []

            async def join() -> None:
                joined.append(await client.call(join_request("g"), 3))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(join)
                await trio.testing.wait_all_tasks_blocked()  # the join is parked
                assert not joined
                await http(broker, "POST", "/v1/clock/advance", {"ms": 2_999})
                await trio.testing.wait_all_tasks_blocked()
                assert not joined
                status, clock = await http(broker, "POST", "/v1/clock/advance", {"ms": 1})
                assert (status, clock["elapsed_ms"]) == (200, 3_000)
            assert joined[0].error_code == ErrorCode.NONE
            assert joined[0].generation_id == 1
            await client.aclose()


async def test_a_long_advance_fires_every_periodic_timer_and_expires_offsets(
    tmp_path: Path,
) -> None:
    settings = {
        "kmock.clock": "virtual",
        "offsets.retention.minutes": 60,
        "offsets.retention.check.interval.ms": 60_000,
    }
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **settings) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            assert await commit(client, "standalone", "t", 3) == ErrorCode.NONE
            assert (await produce(client, "t", b"x", acks=1))[0] == ErrorCode.NONE  # to flush
            await http(broker, "POST", "/v1/clock/advance", {"ms": 59 * 60_000})
            assert await inproc.committed(broker, "standalone", "t") == 3
            # A day: every periodic timer (compaction every 15 s, idle checks, retention
            # and offset expiry checks, the flush) fires in turn, thousands of them.
            status, clock = await http(broker, "POST", "/v1/clock/advance", {"ms": 86_400_000})
            assert status == 200
            assert clock["timers_fired"] > 5_000
            assert await inproc.committed(broker, "standalone", "t") == -1  # expired


async def group_state(client: WireClient) -> str:
    response = await client.call(DescribeGroupsRequest(groups=["g"]), 3)
    return str(response.groups[0].group_state)


async def test_wall_clock_refuses_advance(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            status, clock = await http(broker, "GET", "/v1/clock")
            assert clock["mode"] == "wall"
            status, answer = await http(broker, "POST", "/v1/clock/advance", {"ms": 5})
            assert status == 400
            assert "--clock virtual" in answer["error"]


async def test_virtual_clock_moves_retention_and_idle_connections(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        settings = {
            "kmock.clock": "virtual",
            "kmock.clock.timestamps": "virtual",  # segments roll by the times appends carry
            "log.retention.ms": 60_000,
            "log.roll.ms": 1_000,
            "log.retention.check.interval.ms": 10_000,
            "connections.max.idle.ms": 120_000,
        }
        async with running(tmp_path, **settings) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            assert (await produce(client, "t", b"old", timestamp=_now_ms()))[0] == 0
            await http(broker, "POST", "/v1/clock/advance", {"ms": 2_000})
            # a record after log.roll.ms rolls the segment; the old one can then expire
            assert (await produce(client, "t", b"new", timestamp=_now_ms()))[0] == 0
            log = broker.topics.partition("t", 0).log
            assert log.log_start_offset == 0
            # Checked every 10 s: the check at 70 s is the first more than 60 s after both
            # records (real timestamps, a fraction of a second after the virtual start).
            await http(broker, "POST", "/v1/clock/advance", {"ms": 60_000})
            assert log.log_start_offset == 0
            await http(broker, "POST", "/v1/clock/advance", {"ms": 10_000})
            assert log.log_start_offset == 2
            # connections.max.idle.ms on the same clock: the client is closed when it passes
            await http(broker, "POST", "/v1/clock/advance", {"ms": 130_000})
            assert await client.is_closed_by_peer()


@pytest.mark.parametrize("timestamps", ["wall", "virtual"])
async def test_a_commits_record_is_dated_by_the_clocks_timestamps_setting(
    tmp_path: Path, timestamps: str
) -> None:
    # The commit's time (in its value) follows the virtual clock; the batch it is written in
    # is dated in real time unless kmock.clock.timestamps=virtual, then at the commit's time.
    day_ms = 86_400_000
    settings = {"kmock.clock": "virtual", "kmock.clock.timestamps": timestamps}
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **settings) as broker:
            # Before connecting: a day idle would close the connection.
            await http(broker, "POST", "/v1/clock/advance", {"ms": day_ms})
            client = await WireClient.connect(broker)
            await create(client, "t")
            before = _now_ms()
            assert await commit(client, "g", "t", 3) == ErrorCode.NONE
            after = _now_ms()
            pid = broker.coordinator.coordinator.partition_for("g")
            log = broker.topics.partition("__consumer_offsets", pid).log
            [record] = decode_records(log.read_bytes(0, 100_000))
            key, value = decode_record(record.key, record.value)
            assert (key.group, value.offset) == ("g", 3)
            # The virtual date, a day ahead of the real one (less the real time since start).
            assert value.commit_timestamp == broker.clock.wall_ms()
            assert value.commit_timestamp > before + day_ms - DEADLINE_S * 1000
            if timestamps == "virtual":
                assert record.timestamp == value.commit_timestamp
            else:
                assert before <= record.timestamp <= after


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


# --- journal ------------------------------------------------------------------------------


async def test_journal_records_requests_answers_and_filters(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **{"kmock.journal.size": 5}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await http(broker, "POST", "/v1/faults", {"api": "OffsetCommit", "error": 27})
            assert await commit(client, "g", "t", 3) == ErrorCode.REBALANCE_IN_PROGRESS
            assert await commit(client, "g", "t", 4) == ErrorCode.NONE
            assert await commit(client, "h", "t", 9) == ErrorCode.NONE
            status, got = await http(broker, "GET", "/v1/journal?api=OffsetCommit&group_id=g")
            entries = got["entries"]
            assert [e["error"] for e in entries] == ["REBALANCE_IN_PROGRESS", "NONE"]
            assert entries[0]["fault"] == 1
            assert entries[1]["fault"] is None
            first = entries[0]
            assert first["client_id"] == "kmock-test"
            assert first["version"] == 8
            assert first["request"]["group_id"] == "g"
            assert first["request"]["generation_id_or_member_epoch"] == -1
            assert first["request"]["topics"] == [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "committed_offset": 3, "committed_leader_epoch": -1}
                    ],
                }
            ]
            assert first["response"]["topics"][0]["partitions"][0]["error_code"] == 27
            # since: what came after an entry
            later = (await http(broker, "GET", f"/v1/journal?since={first['seq']}"))[1]
            assert [e["seq"] for e in later["entries"]] == list(
                range(first["seq"] + 1, later["last_seq"] + 1)
            )
            # A bounded ring: five entries kept, the oldest dropped.
            for i in range(8):
                await produce(client, "t", b"%d" % i)
            kept = (await http(broker, "GET", "/v1/journal"))[1]
            assert [e["api"] for e in kept["entries"]] == ["Produce"] * 5
            assert kept["entries"][-1]["seq"] == kept["last_seq"]
            # Produce requests are not kept (their records); the answer names the partition.
            assert kept["entries"][-1]["request"] == {}
            assert kept["entries"][-1]["response"]["topics"][0]["partitions"][0]["base_offset"] == 7
            status, cleared = await http(broker, "DELETE", "/v1/journal")
            assert (status, cleared["cleared"]) == (200, 5)
            assert (await http(broker, "GET", "/v1/journal"))[1]["entries"] == []
            await client.aclose()


async def test_journal_shows_metadata_answered_from_its_kept_encoding(tmp_path: Path) -> None:
    # Metadata's handler answers a repeated request with the body it encoded the first time;
    # the journal keeps that body (not a copy with the header) and shows it as any other.
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **{"num.partitions": 3}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            request = MetadataRequest(
                topics=[MetadataRequestTopic(name="t")], allow_auto_topic_creation=False
            )
            for _ in range(2):
                await client.call(request, 8)
            got = (await http(broker, "GET", "/v1/journal?api=Metadata&topic=t"))[1]["entries"]
            assert len(got) == 3  # the creating one (v9), then the two v8
            first, second = got[1:]
            assert (first["version"], second["version"]) == (8, 8)
            assert second["correlation_id"] == first["correlation_id"] + 1
            assert first["response"] == second["response"]
            (topic,) = second["response"]["topics"]
            assert topic["topic"] == "t"
            assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
            assert second["request"]["topics"] == [{"topic": "t"}]
            assert second["request"]["allow_auto_topic_creation"] is False
            assert (second["outcome"], second["errors"]) == ("answered", ["NONE"])
            await client.aclose()


async def test_journal_numbers_go_on_across_wrapping_and_clearing(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **{"kmock.journal.size": 3}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            for i in range(4):
                await produce(client, "t", b"%d" % i)
            kept = (await http(broker, "GET", "/v1/journal"))[1]
            assert kept["last_seq"] == 5
            assert [e["seq"] for e in kept["entries"]] == [3, 4, 5]
            offsets = [
                e["response"]["topics"][0]["partitions"][0]["base_offset"] for e in kept["entries"]
            ]
            assert offsets == [1, 2, 3]
            assert [
                e["seq"] for e in (await http(broker, "GET", "/v1/journal?since=4"))[1]["entries"]
            ] == [5]
            assert (await http(broker, "GET", "/v1/journal?since=1&limit=1"))[1]["entries"][0][
                "seq"
            ] == 3
            await http(broker, "DELETE", "/v1/journal")
            assert (await http(broker, "GET", "/v1/journal?since=0"))[1]["entries"] == []
            await produce(client, "t", b"after")
            (entry,) = (await http(broker, "GET", "/v1/journal?since=2"))[1]["entries"]
            assert entry["seq"] == 6
            assert entry["response"]["topics"][0]["partitions"][0]["base_offset"] == 4
            await client.aclose()


async def test_journal_keeps_a_large_request_as_its_size(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            request = JoinGroupRequest(
                group_id="g",
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                member_id="",
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=bytes(100_000))],
            )
            response = await client.call(request, 3)
            assert response.error_code == ErrorCode.NONE
            (entry,) = (await http(broker, "GET", "/v1/journal?api=JoinGroup"))[1]["entries"]
            assert entry["request"]["omitted_bytes"] > 100_000
            # The response (the leader gets every member's metadata) is as large: its size
            # as it went out, with its 4-byte size and 4-byte correlation id.
            assert entry["response"]["omitted_bytes"] == len(encode(response, 3)) + 8 > 100_000
            assert entry["errors"] == ["NONE"]
            await client.aclose()


async def test_journal_never_shows_config_values(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            secret = "s3cr3t-password"
            request = AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(
                        resource_type=2,
                        resource_name="t",
                        configs=[AlterableConfig(name="sasl.jaas.config", value=secret)],
                    )
                ],
                validate_only=True,
            )
            await client.call(request, 1)
            raw = (await http(broker, "GET", "/v1/journal?api=AlterConfigs"))[1]
            assert len(raw["entries"]) == 1
            assert secret not in json.dumps(raw)
            # Nor is it kept in memory: the entry holds a summary, not the request.
            assert secret not in repr(list(broker.journal._ring))
            await client.aclose()


async def test_journal_follow_waits_for_the_next_entry(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            last = (await http(broker, "GET", "/v1/journal"))[1]["last_seq"]
            got: list[Any] = []

            async def follow() -> None:
                got.append(
                    await http(broker, "GET", f"/v1/journal?since={last}&api=Produce&wait_ms=20000")
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow)
                await trio.testing.wait_all_tasks_blocked()
                assert not got
                await produce(client, "t", b"x")
            assert [e["api"] for e in got[0][1]["entries"]] == ["Produce"]
            await client.aclose()


async def test_journal_off_without_admin_port(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **{"admin.port": -1}) as broker:
            assert broker.journal is None
            client = await WireClient.connect(broker)
            await create(client, "t")  # served as usual
            await client.aclose()


# --- connections --------------------------------------------------------------------------


async def test_connections_listed_and_closed_by_filter(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path) as broker:
            a = await WireClient.connect(broker)
            b = await WireClient.connect(broker)
            await create(a, "t")
            await produce(b, "t", b"x")
            listed = (await http(broker, "GET", "/v1/connections"))[1]["connections"]
            assert len(listed) == 2
            by_versions = {tuple(c["api_versions"]): c for c in listed}
            assert set(by_versions) == {("Metadata",), ("Produce",)}
            producer = by_versions[("Produce",)]
            assert producer["client_id"] == "kmock-test"
            assert producer["api_versions"] == {"Produce": 9}
            status, closed = await http(
                broker, "POST", "/v1/connections/close", {"address": producer["address"]}
            )
            assert [c["connection"] for c in closed["closed"]] == [producer["connection"]]
            assert await b.is_closed_by_peer()
            assert (await produce(a, "t", b"y"))[0] == ErrorCode.NONE  # the other one is open
            status, closed = await http(broker, "POST", "/v1/connections/close")
            assert (status, len(closed["closed"])) == (200, 1)
            assert await a.is_closed_by_peer()


# --- storage faults -----------------------------------------------------------------------


@pytest.mark.expect_errors  # the failed fsync is logged at ERROR
async def test_storage_faults_fail_the_next_append_and_fsync(tmp_path: Path) -> None:
    # The strict durability mode, whose acks=all answers wait for an fsync, so that a failed
    # fsync reaches the producer (in Kafka's default mode nothing is fsynced before answering).
    with trio.fail_after(DEADLINE_S):
        async with running(tmp_path, **{"kmock.durability": "strict"}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t", "u")
            await http(broker, "POST", "/v1/faults", {"storage": "append", "topic": "u"})
            assert (await produce(client, "t", b"a"))[0] == ErrorCode.NONE  # another topic
            assert (await produce(client, "u", b"a"))[0] == ErrorCode.KAFKA_STORAGE_ERROR
            assert await produce(client, "u", b"b") == (ErrorCode.NONE, 0)  # undone, online
            await http(broker, "POST", "/v1/faults", {"storage": "fsync"})
            assert (await produce(client, "t", b"c"))[0] == ErrorCode.KAFKA_STORAGE_ERROR
            # Offline until restarted, as Kafka takes the log directory offline.
            assert (await produce(client, "t", b"d", acks=1))[0] == ErrorCode.KAFKA_STORAGE_ERROR
            assert (await http(broker, "GET", "/v1/faults"))[1]["faults"] == []
            await client.aclose()
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            assert (await produce(client, "t", b"e"))[0] == ErrorCode.NONE
            await client.aclose()


# --- summaries (what the journal shows and faults match on) -------------------------------


def test_summary_resolves_topic_ids_and_finds_groups() -> None:
    import uuid

    from broker.controls.summary import group_ids, summarise, topic_partitions
    from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
    from protocol.messages.find_coordinator import FindCoordinatorRequest

    tid = uuid.uuid4()
    fetch = FetchRequest(
        max_wait_ms=500,
        min_bytes=1,
        isolation_level=0,
        session_id=0,
        topics=[
            FetchTopic(
                topic_id=tid,
                partitions=[FetchPartition(partition=2, fetch_offset=7, partition_max_bytes=1)],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    summary = summarise(fetch, {tid: "orders"}.get)
    assert list(topic_partitions(summary)) == [("orders", 2)]
    assert summary["topics"][0]["partitions"][0]["fetch_offset"] == 7
    assert summary["max_wait_ms"] == 500
    lookup = summarise(FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]))
    assert {"g1", "g2"} <= group_ids(lookup)
    transactional = summarise(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]))
    assert group_ids(transactional) == set()  # a transactional id is no group


# --- the fault table (what the dispatch site looks up) ------------------------------------


def test_fault_table_is_looked_up_by_api_key_and_forgets_spent_faults() -> None:
    from broker.controls.faults import FaultTable
    from broker.routes import all_routes

    table, routes = FaultTable(), all_routes()
    first = table.add(table.parse({"api": "Produce", "error": 6, "count": 2}, routes))
    other = table.add(table.parse({"api": "Produce", "error": 7, "client_id": "x"}, routes))
    group = table.add(table.parse({"api": "DeleteGroups", "error": 69}, routes))
    assert set(table.armed) == {0, 42}
    assert table.take(1, 12, None, "c", None) is None  # Fetch: no fault names it
    assert table.take(0, 9, None, "c", None) is first
    assert table.take(0, 9, None, "c", None) is first  # its second and last
    assert table.armed[0] == [other]  # spent: gone from the index and from the list
    assert table.take(0, 9, None, "c", None) is None  # client id "x" only
    assert table.take(0, 9, None, "x", None) is other
    assert set(table.armed) == {42}
    assert [f.id for f in table.all()] == [group.id]
    assert table.clear() == 1
    assert table.armed == {}
    assert table.rules == []


def test_the_journal_reads_the_dispatch_sites_call_in_its_field_order() -> None:
    # Journal.record unpacks broker.dispatch.Call by position (a named tuple's fields read
    # by name cost a generic attribute lookup each): a field added, removed or moved must
    # show here, not as a journal that records the wrong facts.
    from broker.dispatch import Call as _Call

    assert _Call._fields == (
        "broker",
        "route",
        "version",
        "correlation_id",
        "client_id",
        "started",
        "conn",
        "request",
        "fault",
        "frame",
        "flexible_header",
    )
