"""CreateTopics and CreatePartitions open the new partitions' logs in a worker thread.

Opening a partition (directory, partition.metadata, segment file) takes about a
millisecond, so a request for thousands of partitions takes seconds. The broker must keep
serving every other connection meanwhile, and the registry must stay consistent: a topic
is invisible until all its partitions are open, a second create of the name is
TOPIC_ALREADY_EXISTS, a failure removes whatever was created, and topics.json is written.

Most tests hold the worker thread at a chosen partition (`_Gate`, in place of `Log` in
broker.topics), so what happens "during the create" is certain rather than a race. One
test creates several thousand partitions with nothing held, as a client would see it.
"""

from __future__ import annotations

import errno
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from broker import topics as broker_topics
from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from storage import Log
from tests.reliability.inproc import (
    create_partitions_request,
    create_topics_request,
    delete,
    produce,
    running,
)
from tests.wire import WireClient, read_frame, request_bytes, wire_call

TOPIC = "big"


class _Gate:
    """Stands in for `Log` in broker.topics: the `hold_at`-th partition of `topic` to be
    opened waits until `release` is set (or, with `fail`, raises it instead of opening)."""

    def __init__(self, topic: str, hold_at: int, fail: OSError | None = None) -> None:
        self.topic = topic
        self.hold_at = hold_at
        self.fail = fail
        self.opened = 0
        self.reached = threading.Event()
        self.release = threading.Event()

    def open(self, path: Path, *args: Any, **kwargs: Any) -> Log:
        if path.name.rpartition("-")[0] == self.topic:
            self.opened += 1
            if self.opened == self.hold_at:
                if self.fail is not None:
                    raise self.fail
                self.reached.set()
                assert self.release.wait(30), "the test never released the gate"
        return Log.open(path, *args, **kwargs)

    async def wait_reached(self) -> None:
        assert await trio.to_thread.run_sync(self.reached.wait, 30)


@pytest.fixture
def make_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., _Gate]]:
    """make_gate(hold_at, fail=None): a _Gate for TOPIC, in place of `Log` in broker.topics
    for the test."""
    made: list[_Gate] = []

    def make(hold_at: int, fail: OSError | None = None) -> _Gate:
        g = _Gate(TOPIC, hold_at=hold_at, fail=fail)
        monkeypatch.setattr(broker_topics, "Log", g)
        made.append(g)
        return g

    yield make
    for g in made:
        g.release.set()  # never leave a worker thread waiting on a failed test


@pytest.fixture
def gate(make_gate: Callable[..., _Gate]) -> _Gate:
    return make_gate(hold_at=100)


async def create_topic(broker: Any, name: str, num_partitions: int) -> tuple[int, str | None]:
    (result,) = (await wire_call(broker, create_topics_request(name, num_partitions), 5)).topics
    return result.error_code, result.error_message


async def grow(broker: Any, name: str, count: int) -> tuple[int, str | None]:
    (result,) = (await wire_call(broker, create_partitions_request(name, count), 2)).results
    return result.error_code, result.error_message


async def listed_topics(client: WireClient) -> dict[str, int]:
    response = await client.call(MetadataRequest(topics=None), 9)
    return {t.name: len(t.partitions) for t in response.topics}


def partition_dirs(data: Path, name: str) -> list[str]:
    return sorted(d.name for d in data.iterdir() if d.name.rpartition("-")[0] == name)


def saved_partitions(data: Path, name: str) -> int | None:
    entry = json.loads((data / "topics.json").read_text()).get(name)
    return None if entry is None else entry["partitions"]


async def test_broker_serves_others_while_a_create_opens_its_partitions(
    tmp_path: Path, gate: _Gate
) -> None:
    data = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data) as broker, trio.open_nursery() as nursery:
            send, receive = trio.open_memory_channel[tuple[int, str | None]](1)

            async def create_big() -> None:
                await send.send(await create_topic(broker, TOPIC, 300))

            nursery.start_soon(create_big)
            await gate.wait_reached()  # 99 partitions open, the 100th being opened
            other = await WireClient.connect(broker)
            assert (await other.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            # Not visible half-created: not listed, not writable, not auto-created again.
            assert TOPIC not in await listed_topics(other)
            assert (await produce(other, TOPIC, b"early"))[0] == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            auto = await other.call(
                MetadataRequest(
                    topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=True
                ),
                9,
            )
            assert [(t.name, t.error_code) for t in auto.topics] == [
                (TOPIC, ErrorCode.LEADER_NOT_AVAILABLE)
            ]
            # The same name again, while the first create is under way.
            assert await create_topic(broker, TOPIC, 5) == (
                ErrorCode.TOPIC_ALREADY_EXISTS,
                f"Topic '{TOPIC}' already exists.",
            )
            # Another topic is created meanwhile, in a worker thread of its own.
            assert await create_topic(broker, "small", 2) == (ErrorCode.NONE, None)
            with pytest.raises(trio.WouldBlock):
                receive.receive_nowait()  # all of the above came before the big create
            gate.release.set()
            assert await receive.receive() == (ErrorCode.NONE, None)
            assert (await listed_topics(other))[TOPIC] == 300
            assert (await produce(other, TOPIC, b"now"))[0] == ErrorCode.NONE
            await other.aclose()
    assert saved_partitions(data, TOPIC) == 300
    assert saved_partitions(data, "small") == 2
    assert len(partition_dirs(data, TOPIC)) == 300


@pytest.mark.slow
async def test_requests_on_other_connections_are_answered_before_a_create_of_thousands(
    tmp_path: Path,
) -> None:
    # Nothing held: as a client sees it. The create takes seconds, the others milliseconds.
    with trio.fail_after(60):
        async with running(tmp_path / "data") as broker, trio.open_nursery() as nursery:
            answered: list[str] = []
            creator = await WireClient.connect(broker)

            async def read_create_response() -> None:
                assert await read_frame(creator.stream) is not None
                answered.append("CreateTopics")

            await creator.send_raw(request_bytes(create_topics_request(TOPIC, 3000), 5))
            nursery.start_soon(read_create_response)
            await trio.testing.wait_all_tasks_blocked()  # the broker has read the create
            other = await WireClient.connect(broker)
            assert (await other.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
            answered.append("ApiVersions")
            assert TOPIC not in await listed_topics(other)
            answered.append("Metadata")
            await other.aclose()
        await creator.aclose()
        assert answered == ["ApiVersions", "Metadata", "CreateTopics"]
        assert len(broker.topics.get(TOPIC).partitions) == 3000


async def test_two_creates_of_one_name_at_once_give_one_topic(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data) as broker:
            clients = [await WireClient.connect(broker) for _ in range(2)]
            results: list[tuple[int, str | None]] = []

            async def create_on(client: WireClient) -> None:
                (result,) = (await client.call(create_topics_request(TOPIC, 500), 5)).topics
                results.append((result.error_code, result.error_message))

            async with trio.open_nursery() as nursery:
                for client in clients:
                    nursery.start_soon(create_on, client)
            for client in clients:
                await client.aclose()
            assert sorted(results) == [
                (ErrorCode.NONE, None),
                (ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{TOPIC}' already exists."),
            ]
            assert len(broker.topics.get(TOPIC).partitions) == 500
    assert saved_partitions(data, TOPIC) == 500
    assert len(partition_dirs(data, TOPIC)) == 500


async def test_running_out_of_descriptors_mid_create_leaves_nothing_behind(
    tmp_path: Path, make_gate: Callable[..., _Gate]
) -> None:
    data = tmp_path / "data"
    make_gate(hold_at=150, fail=OSError(errno.EMFILE, "Too many open files"))
    with trio.fail_after(30):
        async with running(data) as broker:
            code, message = await create_topic(broker, TOPIC, 300)
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            assert message is not None
            assert message.startswith(f"could not create 300 partitions of {TOPIC}:")
            assert "Too many open files" in message
            assert broker.topics.get(TOPIC) is None
            assert partition_dirs(data, TOPIC) == []
            # The name is free again; the gate fails only once.
            assert await create_topic(broker, TOPIC, 300) == (ErrorCode.NONE, None)
    assert saved_partitions(data, TOPIC) == 300


async def test_a_failed_topics_json_write_undoes_the_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data) as broker:
            registry = broker.topics
            save = registry._save
            failures = [OSError(errno.ENOSPC, "No space left on device")]

            def full_disk_once() -> None:
                if failures:
                    raise failures.pop()
                save()

            monkeypatch.setattr(registry, "_save", full_disk_once)
            code, message = await create_topic(broker, TOPIC, 50)
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            assert message is not None
            assert "No space left on device" in message
            assert registry.get(TOPIC) is None
            assert partition_dirs(data, TOPIC) == []
            assert await create_topic(broker, TOPIC, 50) == (ErrorCode.NONE, None)
    assert saved_partitions(data, TOPIC) == 50


async def test_a_create_under_way_at_shutdown_completes_whole(tmp_path: Path, gate: _Gate) -> None:
    data = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data) as broker:
            client = await WireClient.connect(broker)
            await client.send_raw(request_bytes(create_topics_request(TOPIC, 300), 5))
            await gate.wait_reached()
            broker.shutdown()  # cancels the handler, which is waiting for its worker thread
            gate.release.set()
        await client.aclose()
        assert saved_partitions(data, TOPIC) == 300
        async with running(data) as broker:
            assert len(broker.topics.get(TOPIC).partitions) == 300


# --- CreatePartitions ------------------------------------------------------------------


async def test_broker_serves_others_while_partitions_are_added_and_a_second_add_waits(
    tmp_path: Path, gate: _Gate
) -> None:
    data = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data) as broker, trio.open_nursery() as nursery:
            assert await create_topic(broker, TOPIC, 1) == (ErrorCode.NONE, None)
            send, receive = trio.open_memory_channel[tuple[str, tuple[int, str | None]]](2)

            async def grow_to(label: str, count: int) -> None:
                await send.send((label, await grow(broker, TOPIC, count)))

            nursery.start_soon(grow_to, "first", 300)
            await gate.wait_reached()
            other = await WireClient.connect(broker)
            assert (await listed_topics(other))[TOPIC] == 1
            assert (await produce(other, TOPIC, b"x", partition=0))[0] == ErrorCode.NONE
            assert (await produce(other, TOPIC, b"x", partition=5))[0] == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            nursery.start_soon(grow_to, "second", 300)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(trio.WouldBlock):
                receive.receive_nowait()
            gate.release.set()
            assert await receive.receive() == ("first", (ErrorCode.NONE, None))
            # Checked against the count the first one left, as Kafka's controller would.
            assert await receive.receive() == (
                "second",
                (ErrorCode.INVALID_PARTITIONS, "Topic already has 300 partition(s)."),
            )
            assert (await listed_topics(other))[TOPIC] == 300
            await other.aclose()
    assert saved_partitions(data, TOPIC) == 300
    assert len(partition_dirs(data, TOPIC)) == 300


async def test_a_topic_deleted_while_partitions_are_added_takes_them_along(
    tmp_path: Path, gate: _Gate
) -> None:
    data = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data) as broker, trio.open_nursery() as nursery:
            assert await create_topic(broker, TOPIC, 1) == (ErrorCode.NONE, None)
            send, receive = trio.open_memory_channel[tuple[int, str | None]](1)

            async def grow_big() -> None:
                await send.send(await grow(broker, TOPIC, 300))

            nursery.start_soon(grow_big)
            await gate.wait_reached()
            client = await WireClient.connect(broker)
            await delete(client, TOPIC)
            await client.aclose()
            gate.release.set()
            assert await receive.receive() == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
            assert partition_dirs(data, TOPIC) == []
            assert await create_topic(broker, TOPIC, 2) == (ErrorCode.NONE, None)
    assert saved_partitions(data, TOPIC) == 2


async def test_running_out_of_descriptors_while_adding_partitions_adds_none(
    tmp_path: Path, make_gate: Callable[..., _Gate]
) -> None:
    data = tmp_path / "data"
    make_gate(hold_at=100, fail=OSError(errno.EMFILE, "Too many open files"))
    with trio.fail_after(30):
        async with running(data) as broker:
            assert await create_topic(broker, TOPIC, 2) == (ErrorCode.NONE, None)
            code, message = await grow(broker, TOPIC, 300)
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            assert message is not None
            assert message.startswith(f"could not add partitions to {TOPIC}:")
            assert len(broker.topics.get(TOPIC).partitions) == 2
            assert partition_dirs(data, TOPIC) == [f"{TOPIC}-0", f"{TOPIC}-1"]
            assert await grow(broker, TOPIC, 300) == (ErrorCode.NONE, None)
    assert saved_partitions(data, TOPIC) == 300
