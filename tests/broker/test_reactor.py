"""Connections served by their broker's reactor (broker.reactor): one task answering every
connection that waits for its client. A request whose handler waits hands the reactor on
and holds no other connection; its connection is answered in order and goes back to the
reactor afterwards; a client that pipelines more requests than one step answers, or one
that stops reading, is served as before; a connection alone, whose leader then waits in
trio without polling first, is served like others when they come. After a lone pass the
leader spins (kmock.reactor.spin.us): a request sent meanwhile is found by the spin, every
other task runs during it, and spins that find nothing are left out as polls are.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from broker.connection import STEP_REQUESTS
from broker.reactor import MAX_SKIPPED_POLLS
from protocol.errors import ErrorCode
from protocol.frames import parse_response_header
from protocol.messages.api_versions import ApiVersionsRequest
from tests.broker.handlers.test_offset_commit import commit_request
from tests.reliability.inproc import create, running
from tests.wire import WireClient, read_frame, request_bytes


def _served(broker: Any, client: WireClient) -> Any:
    """The broker's side of the client's connection."""
    host, port = client.stream.socket.getsockname()[:2]
    (conn,) = [c for c in broker.connections if c.address == f"{host}:{port}"]
    return conn


async def _answered(client: WireClient) -> None:
    assert (await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE


async def test_a_request_that_waits_holds_no_other_connection(
    broker: Any, fsync_gate: trio.Event, nursery: trio.Nursery
) -> None:
    reactor = broker.reactors[broker.node_id]
    with trio.fail_after(30):
        waiter = await WireClient.connect(broker)
        await create(waiter, "t")
        others = [await WireClient.connect(broker) for _ in range(8)]
        answers: list[Any] = []
        answered = trio.Event()

        async def commit() -> None:
            answers.append(await waiter.call(commit_request("g", {("t", 0): 5}), 9))
            answered.set()

        nursery.start_soon(commit)
        await trio.testing.wait_all_tasks_blocked()
        conn = _served(broker, waiter)
        assert conn.reactor is None  # its own task waits for the fsync
        for _ in range(3):  # every other connection is answered meanwhile
            for other in others:
                await _answered(other)
        await trio.testing.wait_all_tasks_blocked()
        assert not answered.is_set()
        fsync_gate.set()
        await answered.wait()
        partition = answers[0].topics[0].partitions[0]
        assert partition.error_code == ErrorCode.NONE
        # Back with the reactor once it waits for its client again, and answered there.
        await trio.testing.wait_all_tasks_blocked()
        assert conn.reactor is reactor
        await _answered(waiter)
        for other in others:
            await _answered(other)


async def test_connections_are_answered_when_the_leader_leaves_out_its_polls(
    broker: Any,
) -> None:
    """A connection alone for longer than the back-off takes to leave out every poll it
    may (broker.reactor, "Polls"), then others with it, turn about and all at once, then
    it alone again: each request answered, in order."""
    with trio.fail_after(30):
        alone = await WireClient.connect(broker)
        for _ in range(4 * MAX_SKIPPED_POLLS):
            await _answered(alone)
        others = [await WireClient.connect(broker) for _ in range(3)]
        for _ in range(20):
            for client in [alone, *others]:
                await _answered(client)
        for n in range(20):  # every connection's request in before any answer is read
            for client in [alone, *others]:
                await client.send_raw(request_bytes(ApiVersionsRequest(), 3, correlation_id=n))
            for client in [alone, *others]:
                assert parse_response_header(await read_frame(client.stream), False)[0] == n
        for client in others:
            await client.aclose()
        for _ in range(4 * MAX_SKIPPED_POLLS):
            await _answered(alone)
        await alone.aclose()


async def test_requests_beyond_one_step_are_answered_in_order_without_more_bytes(
    broker: Any,
) -> None:
    count = 5 * STEP_REQUESTS + 3  # more than one step answers: the rest wait their turn
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        other = await WireClient.connect(broker)
        await client.send_raw(
            b"".join(request_bytes(ApiVersionsRequest(), 2, correlation_id=i) for i in range(count))
        )
        await _answered(other)
        for i in range(count):
            frame = await read_frame(client.stream)
            assert frame is not None
            assert parse_response_header(frame, False)[0] == i
        await _answered(client)


async def test_a_client_that_stops_reading_is_served_again_once_it_reads(
    broker: Any,
) -> None:
    count = 2000  # ~1 MB of ApiVersions answers: more than the socket buffers hold
    with trio.fail_after(30):
        client = await WireClient.connect(broker)
        other = await WireClient.connect(broker)
        await client.send_raw(
            b"".join(request_bytes(ApiVersionsRequest(), 3, correlation_id=i) for i in range(count))
        )
        await trio.testing.wait_all_tasks_blocked()
        conn = _served(broker, client)
        assert conn.reactor is None  # a task of its own waits to send the rest
        assert conn.write_since is not None
        await _answered(other)  # the reactor is not stuck on the full socket
        for i in range(count):
            frame = await read_frame(client.stream)
            assert frame is not None
            assert parse_response_header(frame, False)[0] == i
        await _answered(client)
        await trio.testing.wait_all_tasks_blocked()
        assert conn.reactor is broker.reactors[broker.node_id]


async def test_stopping_the_broker_ends_the_connections_its_reactor_serves(
    nursery: trio.Nursery, tmp_path: Any
) -> None:
    from broker.server import serve
    from tests.conftest import broker_config

    with trio.fail_after(30):
        broker = await nursery.start(serve, broker_config(tmp_path / "data"))
        clients = [await WireClient.connect(broker) for _ in range(5)]
        for client in clients:
            await _answered(client)
        broker.cancel_scope.cancel()
        for client in clients:  # each sees its connection closed, none hangs
            assert await read_frame(client.stream) is None


async def test_a_request_sent_during_the_spin_is_found_by_it_while_other_tasks_run(
    tmp_path: Any,
) -> None:
    """A spin of 5 s: each request of a client that sends its next one at once is found by
    the spin its last answer began. The client runs during the spin (it is a task of this
    loop, so a spin that held the loop would answer one request in 5 s, past the deadline),
    and so does a second connection, answered in the middle of it."""
    async with running(tmp_path / "data", **{"kmock.reactor.spin.us": 5_000_000}) as broker:
        reactor = broker.reactors[broker.node_id]
        with trio.fail_after(20):
            client = await WireClient.connect(broker)
            for _ in range(20):
                await _answered(client)
            assert (reactor.spins, reactor.spins_found) == (20, 19)  # the 20th goes on
            other = await WireClient.connect(broker)
            await _answered(other)
            await _answered(client)
            assert reactor.spins_found >= 20


async def test_spins_that_find_nothing_are_left_out_until_one_finds_a_request(
    tmp_path: Any,
) -> None:
    """A client sending each request only once every task is blocked, i.e. once the
    leader's spin of 50 ms is over and it sleeps: no spin finds its request, and they back
    off as the polls do (broker.reactor, "Polls"): 6 spins for 40 requests rather than 40.
    The same client sending at once again is found by the spin that follows the back-off,
    and by every one after it."""
    async with running(tmp_path / "data", **{"kmock.reactor.spin.us": 50_000}) as broker:
        reactor = broker.reactors[broker.node_id]
        with trio.fail_after(30):
            client = await WireClient.connect(broker)
            for _ in range(40):
                await trio.testing.wait_all_tasks_blocked()
                await _answered(client)
            assert reactor.spins_found == 0
            assert 1 <= reactor.spins <= 7
            for _ in range(MAX_SKIPPED_POLLS + 1 + 20):
                await _answered(client)
            assert reactor.spins_found >= 20
