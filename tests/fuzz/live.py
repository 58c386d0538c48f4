"""The live-server fuzz: random, mutated and garbage frames over many connections at a
broker process, while a well-behaved client works beside them.

Each fuzz connection sends a few frames, each followed by an ApiVersions request as a
barrier: reading up to the barrier's response collects whatever the frame got (a
response, nothing for acks=0, or a close), without guessing. A connection the broker
closes is replaced by a new one. Every frame carries its id as client id (`fz<n>`), so a
request that the broker logs as failed can be found again and shown.

Checked while it runs and at the end:
  * the broker process never exits;
  * the canary client (produce acks=all, fetch it back, commit, read the commit) keeps
    getting correct answers, each within CANARY_DEADLINE_S;
  * responses to well-formed requests come in order and decode with their schema;
  * nothing is logged at ERROR (an exception the dispatch site had to catch is a bug);
  * the broker's resident memory stays under a bound after the warm-up.

The frames sent are kept for a while (the last KEEP_FRAMES), and what the broker logs is
read while the fuzz runs, so that a logged failure is shown with its frame however long
the run (a million frames would not fit in memory).
"""

from __future__ import annotations

import collections
import itertools
import random
import re
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from broker.routes import all_routes, route_for
from client import KafkaClient
from protocol.errors import ErrorCode
from protocol.frames import API_VERSIONS_KEY, parse_response_header
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.records import build_batch, decode_records
from protocol.releases import accepts
from protocol.schema import DecodeError, decode
from tests.fuzz.generate import TOPICS, RandomRequests
from tests.reliability.process import BrokerProcess
from tests.wire import request_bytes

CANARY_TOPIC = "canary"
CANARY_GROUP = "canary-group"
CANARY_DEADLINE_S = 10.0
VALID_REPLY_S = 5.0  # a well-formed request may park (JoinGroup, Fetch): then we move on
DAMAGED_REPLY_S = 1.0
RSS_GROWTH_LIMIT = 150 * 1024 * 1024  # after the warm-up
KEEP_FRAMES = 100_000  # the frames sent last, to show the one behind a logged failure
PROBLEMS_EVERY_S = 2.0  # how often the broker's log is read during the run
BROKER_SETTINGS = {
    "socket.request.max.bytes": 1024 * 1024,
    "connections.max.idle.ms": 5000,
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": 5,
    "log.segment.bytes": 1024 * 1024,
}


@dataclass
class FuzzReport:
    seed: int
    frames: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    # Well-formed frames sent per (API, version).
    by_version: Counter[tuple[str, int]] = field(default_factory=Counter)
    closed_by_broker: int = 0
    no_reply_in_time: Counter[str] = field(default_factory=Counter)
    connections: int = 0
    canary_rounds: int = 0
    canary_worst_s: float = 0.0
    canary_failures: list[str] = field(default_factory=list)
    bad_responses: list[str] = field(default_factory=list)
    # Well-formed requests the broker answered by closing the connection: only a request it
    # failed to handle gets that (the frame is kept, to replay it).
    closed_after_valid: list[str] = field(default_factory=list)
    rss_start: int = 0
    rss_after_warmup: int = 0
    rss_peak: int = 0
    rss_end: int = 0
    broker_problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def versions_missed(self) -> list[str]:
        """The served (API, version) pairs no well-formed frame was sent for."""
        return [f"{name} v{v}" for name, v in served_versions() if not self.by_version[(name, v)]]

    def summary(self) -> str:
        mb = 1024 * 1024
        pairs = len(served_versions())
        return (
            f"live fuzz seed={self.seed}: {self.frames} frames ({dict(self.by_kind)}; "
            f"{pairs - len(self.versions_missed())} of {pairs} API versions) over "
            f"{self.connections} connections in {self.seconds:.0f} s; closed by the broker "
            f"{self.closed_by_broker}; no reply in time {dict(self.no_reply_in_time)}; canary "
            f"{self.canary_rounds} rounds, worst {self.canary_worst_s:.2f} s, "
            f"{len(self.canary_failures)} failures; RSS {self.rss_start // mb} -> "
            f"{self.rss_after_warmup // mb} (warm) -> peak {self.rss_peak // mb} -> "
            f"{self.rss_end // mb} MB; {len(self.broker_problems)} broker errors, "
            f"{len(self.bad_responses)} bad responses, {len(self.closed_after_valid)} "
            "well-formed requests answered by a close"
        )


def served_versions() -> list[tuple[str, int]]:
    """The routed (API, version) pairs the broker serves with kafka.version unset, which
    are the ones the fuzz draws from (tests/fuzz/generate.py): not Produce v0-2 nor Fetch
    v0-3, served under older releases only (protocol.releases)."""
    return [
        (r.name, v) for r in all_routes() for v in r.request.VERSIONS if accepts(None, r.api_key, v)
    ]


class _Run:
    def __init__(self, broker: BrokerProcess, target: int, seed: int) -> None:
        self.broker = broker
        self.target = target
        self.report = FuzzReport(seed)
        self.rng = random.Random(seed)
        self.correlation = itertools.count(1)
        # client id -> frame, for failed requests: the last KEEP_FRAMES only.
        self.sent_frames: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self.done = trio.Event()

    # --- fuzz connections ------------------------------------------------------------------

    async def connection_worker(self, index: int) -> None:
        rng = random.Random(self.rng.random())
        gen = RandomRequests(rng)
        while self.report.frames < self.target:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", self.broker.port)
            except OSError as e:
                raise AssertionError(f"cannot connect to the broker: {e}") from None
            self.report.connections += 1
            async with stream:
                for _ in range(rng.randint(1, 40)):
                    if self.report.frames >= self.target:
                        break
                    if not await self._one_frame(stream, gen, rng):
                        break

    async def _one_frame(
        self, stream: trio.SocketStream, gen: RandomRequests, rng: random.Random
    ) -> bool:
        """Send one fuzz frame and a barrier; False when the connection is finished."""
        corr = next(self.correlation)
        client_id = f"fz{corr}"
        r = rng.random()
        route = version = None
        if r < 0.55:
            kind = "valid"
            route, version, _, frame = gen.valid(corr, client_id)
        elif r < 0.9:
            kind = "mutated"
            _, _, _, frame = gen.valid(corr, client_id)
            frame = gen.mutate(frame)
        else:
            kind = "garbage"
            frame = gen.garbage()
        self.sent_frames[client_id] = frame
        if len(self.sent_frames) > KEEP_FRAMES:
            self.sent_frames.popitem(last=False)
        if route is not None:
            self.report.by_version[(route.name, version)] += 1
        barrier = next(self.correlation)
        payload = frame + request_bytes(ApiVersionsRequest(), 2, correlation_id=barrier)
        self.report.frames += 1
        self.report.by_kind[kind] += 1
        try:
            await stream.send_all(payload)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.report.closed_by_broker += 1
            return False
        reader = _FrameReader(stream)
        limit = VALID_REPLY_S if kind == "valid" else DAMAGED_REPLY_S
        with trio.move_on_after(limit):
            while True:
                reply = await reader.next()
                if reply is None:
                    self.report.closed_by_broker += 1
                    if kind == "valid":
                        self.report.closed_after_valid.append(
                            f"{route.name} v{version} ({client_id}): {frame.hex()}"
                        )
                    return False
                (got,) = struct.unpack_from(">i", reply, 0)
                if got == barrier:
                    return True
                if kind == "valid":
                    self._check_response(route, version, corr, got, reply, client_id)
        self.report.no_reply_in_time[route.name if route else kind] += 1
        return False

    def _check_response(
        self, route: Any, version: int, corr: int, got: int, reply: bytes, client_id: str
    ) -> None:
        if got != corr:
            self.report.bad_responses.append(
                f"{route.name} v{version} ({client_id}): correlation id {got}, expected {corr}"
            )
            return
        flexible = route.response.is_flexible(version) and route.api_key != API_VERSIONS_KEY
        try:
            _, pos = parse_response_header(reply, flexible)
            decode(route.response, version, reply, pos)
        except DecodeError as e:
            self.report.bad_responses.append(
                f"{route.name} v{version} ({client_id}): undecodable response: {e}; request "
                f"{self.sent_frames[client_id].hex()}"
            )

    # --- the well-behaved client -----------------------------------------------------------

    async def canary(self) -> None:
        client = KafkaClient(self.broker.bootstrap, timeout_s=CANARY_DEADLINE_S)
        await trio.to_thread.run_sync(client.connect)
        expected_offset = None
        try:
            while not self.done.is_set():
                started = trio.current_time()
                n = self.report.canary_rounds
                with trio.move_on_after(CANARY_DEADLINE_S) as scope:
                    try:
                        expected_offset = await trio.to_thread.run_sync(
                            _canary_round, client, n, expected_offset
                        )
                    except Exception as e:
                        self.report.canary_failures.append(f"round {n}: {e!r}")
                        # Whether the failed round's record was written is unknown: the
                        # next round takes the offset it gets and checks from there on, so
                        # that one failure is reported once, not again in every later round.
                        expected_offset = None
                        await trio.to_thread.run_sync(_reconnect, client)
                if scope.cancelled_caught:
                    self.report.canary_failures.append(
                        f"round {n}: no answer within {CANARY_DEADLINE_S} s"
                    )
                    expected_offset = None
                self.report.canary_worst_s = max(
                    self.report.canary_worst_s, trio.current_time() - started
                )
                self.report.canary_rounds += 1
        finally:
            client.close()

    # --- the broker's memory ---------------------------------------------------------------

    def collect_problems(self) -> None:
        """Add what the broker logged at ERROR since the last look, each with its frame."""
        problems = self.broker.problems()
        seen = len(self.report.broker_problems)
        self.report.broker_problems += _with_frames(problems[seen:], self.sent_frames)

    async def watch_memory(self) -> None:
        warm_at = self.target // 10
        next_problems = trio.current_time() + PROBLEMS_EVERY_S
        while not self.done.is_set():
            if trio.current_time() >= next_problems:
                await trio.to_thread.run_sync(self.collect_problems)
                next_problems = trio.current_time() + PROBLEMS_EVERY_S
            if not self.broker.is_running():
                raise AssertionError(
                    f"the broker exited during the fuzz:\n{self.broker.log_text()[-5000:]}"
                )
            rss = self.broker.rss_bytes()
            self.report.rss_peak = max(self.report.rss_peak, rss)
            if not self.report.rss_after_warmup and self.report.frames >= warm_at:
                self.report.rss_after_warmup = rss
            with trio.move_on_after(0.25):  # polling the broker process
                await self.done.wait()


def _canary_round(client: KafkaClient, n: int, expected_offset: int | None) -> int:
    value = f"canary-{n}".encode()
    # The record's timestamp is now, as a real producer's: an old one makes the record
    # older than retention.ms (7 days), so the retention check (every 5 minutes) deletes
    # its segment, the active one too (after a roll, as Kafka's UnifiedLog.deleteOldSegments
    # does), between this Produce and the Fetch that reads it back.
    now_ms = int(time.time() * 1000)
    offset = client.produce(CANARY_TOPIC, 0, build_batch([(None, value, (), now_ms)]))
    if expected_offset is not None and offset != expected_offset:
        raise AssertionError(f"canary produce got offset {offset}, expected {expected_offset}")
    data = client.fetch(CANARY_TOPIC, {0: offset}, max_wait_ms=0)[0]
    if data.error_code:
        raise AssertionError(
            f"canary fetch at {offset}: {ErrorCode(data.error_code).name} (log start "
            f"offset {data.log_start_offset}, high watermark {data.high_watermark})"
        )
    records = [r for r in decode_records(bytes(data.records or b"")) if r.offset == offset]
    if [r.value for r in records] != [value]:
        raise AssertionError(f"canary fetch at {offset}: {records}")
    client.commit_offsets(CANARY_GROUP, {(CANARY_TOPIC, 0): offset + 1})
    got = client.committed_offsets(CANARY_GROUP)[(CANARY_TOPIC, 0)].offset
    if got != offset + 1:
        raise AssertionError(f"canary commit {offset + 1} reads back as {got}")
    return offset + 1


def _reconnect(client: KafkaClient) -> None:
    client.close()
    client.connect()


class _FrameReader:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    async def next(self) -> bytes | None:
        while True:
            if len(self.buf) >= 4:
                (size,) = struct.unpack_from(">i", self.buf, 0)
                if len(self.buf) >= 4 + size:
                    frame = bytes(self.buf[4 : 4 + size])
                    del self.buf[: 4 + size]
                    return frame
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not data:
                return None
            self.buf += data


async def run_live_fuzz(
    tmp_path: Path, *, frames: int, connections: int, seed: int, deadline_s: float
) -> FuzzReport:
    """Run the fuzz against a fresh broker process; returns what it saw (the caller
    asserts). The broker is killed at the end whatever happens."""
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs", overrides=BROKER_SETTINGS)
    run = _Run(broker, frames, seed)
    started = time.monotonic()
    await trio.to_thread.run_sync(broker.start)
    try:

        def setup() -> None:
            with KafkaClient(broker.bootstrap) as client:
                for topic in [CANARY_TOPIC, *TOPICS]:
                    client.create_topic(topic, num_partitions=1 if topic == CANARY_TOPIC else 3)

        await trio.to_thread.run_sync(setup)
        run.report.rss_start = broker.rss_bytes()
        with trio.fail_after(deadline_s):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run.canary)
                nursery.start_soon(run.watch_memory)
                async with trio.open_nursery() as workers:
                    for i in range(connections):
                        workers.start_soon(run.connection_worker, i)
                # One last canary round after the fuzz, then stop the watchers.
                run.done.set()
        assert broker.is_running(), "the broker exited"
        run.report.rss_end = broker.rss_bytes()
    finally:
        run.report.seconds = time.monotonic() - started
        if broker.is_running():
            broker.kill()
        run.collect_problems()
    return run.report


def _with_frames(problems: list[str], frames: dict[str, bytes]) -> list[str]:
    """Each logged error with the frame that caused it (found by its client id)."""
    out = []
    for p in problems:
        m = re.search(r"from (fz\d+) failed", p)
        if m and m.group(1) in frames:
            p += f"\n  frame: {frames[m.group(1)].hex()}"
        elif m:
            p += f"\n  frame: no longer kept (only the last {KEEP_FRAMES} are)"
        out.append(p)
    return out


def describe_frame(hex_frame: str) -> str:
    """What a logged frame was: API, version, and the decoded request if it decodes."""
    from protocol.frames import parse_request_header, peek_request_key

    frame = bytes.fromhex(hex_frame)[4:]
    key, version, _ = peek_request_key(frame)
    route = route_for(key)
    if route is None:
        return f"api key {key}"
    _, pos = parse_request_header(frame, route.request.is_flexible(version))
    return f"{route.name} v{version}: {decode(route.request, version, frame, pos)!r}"
