"""100 members form one classic consumer group over raw sockets; how long until all are Stable.

Each member is a trio task with its own connection, speaking JoinGroup / SyncGroup /
Heartbeat on kmock's codec (one request in flight per connection, like a real client):

  1. JoinGroup with an empty member id -> MEMBER_ID_REQUIRED and the assigned id (KIP-394).
  2. Once every member has its id, all of them send JoinGroup with it at once. The time the
     last of these 100 requests is sent is t0.
  3. On a JoinGroup response the leader sends SyncGroup with an assignment for every member
     in the response (range-style: partition i to member i); the others send an empty one.
  4. SyncGroup answered REBALANCE_IN_PROGRESS, or a Heartbeat answered so, means: join
     again (with the id). A member that has its assignment heartbeats every HEARTBEAT_MS
     until the run ends, which is how it learns that a later generation started.
  5. Done when all 100 members hold a SyncGroup response without error for the same
     generation. t1 is when the last of those arrived.

Reported: t1 - t0, the number of generations it took, the JoinGroup requests sent after t0
(rejoins), and t1 minus the last JoinGroup sent by anyone (the final round alone).
group.initial.rebalance.delay.ms is the broker's (kmock's default is 0).
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

import trio
from kwire import common_version, decode_response, request_bytes

from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from protocol.schema import Message

HEARTBEAT_MS = 20
SESSION_TIMEOUT_MS = 30_000
REBALANCE_TIMEOUT_MS = 30_000
TOPIC = "bench-join"


class _Client:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.corr = itertools.count(1)
        self.buf = bytearray()

    async def call(self, request: Message, version: int) -> Any:
        corr = next(self.corr)
        await self.stream.send_all(request_bytes(request, version, corr))
        while True:
            if len(self.buf) >= 4:
                (size,) = struct.unpack_from(">i", self.buf)
                if len(self.buf) >= 4 + size:
                    frame = bytes(self.buf[4 : 4 + size])
                    del self.buf[: 4 + size]
                    got, resp = decode_response(type(request).API_KEY, version, frame)
                    assert got == corr
                    return resp
            data = await self.stream.receive_some(65536)
            if not data:
                raise ConnectionError("broker closed the connection")
            self.buf += data


class _Run:
    def __init__(self, n: int, group: str, versions: dict[str, int]) -> None:
        self.n = n
        self.group = group
        self.v = versions
        self.ids: list[str | None] = [None] * n
        self.have_ids = trio.Event()
        self.t0 = 0.0
        self.initial_sent = 0
        self.last_join_sent = 0.0
        self.rejoins = 0
        self.synced: dict[int, tuple[int, float]] = {}  # member -> (generation, time)
        self.generations: set[int] = set()
        self.done = trio.Event()
        self.t1 = 0.0
        self.final_generation = -1
        self.errors: list[str] = []
        self.subscription = encode_subscription(ConsumerProtocolSubscription(topics=[TOPIC]), 0)

    def _join(self, member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=self.subscription)],
        )

    def _check_done(self, generation: int) -> None:
        if len(self.synced) == self.n and all(g == generation for g, _ in self.synced.values()):
            self.t1 = max(t for _, t in self.synced.values())
            self.final_generation = generation
            self.done.set()

    async def member(self, i: int, addr: tuple[str, int]) -> None:
        stream = await trio.open_tcp_stream(*addr)
        c = _Client(stream)
        try:
            resp = await c.call(self._join(""), self.v["join"])
            if resp.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                raise RuntimeError(f"first JoinGroup: error {resp.error_code}")
            member_id = resp.member_id
            self.ids[i] = member_id
            if all(self.ids):
                self.have_ids.set()
            await self.have_ids.wait()
            initial = True
            while not self.done.is_set():
                now = trio.current_time()
                self.last_join_sent = now
                if initial:
                    self.initial_sent += 1
                    if self.initial_sent == self.n:
                        self.t0 = now
                    initial = False
                elif self.t0:
                    self.rejoins += 1
                join = await c.call(self._join(member_id), self.v["join"])
                if join.error_code:
                    raise RuntimeError(f"JoinGroup: error {ErrorCode(join.error_code).name}")
                generation = join.generation_id
                assignments = []
                if join.leader == member_id:
                    for k, m in enumerate(join.members):
                        a = ConsumerProtocolAssignment(
                            assigned_partitions=[TopicPartition(topic=TOPIC, partitions=[k])]
                        )
                        assignments.append(
                            SyncGroupRequestAssignment(
                                member_id=m.member_id, assignment=encode_assignment(a, 0)
                            )
                        )
                sync = await c.call(
                    SyncGroupRequest(
                        group_id=self.group,
                        generation_id=generation,
                        member_id=member_id,
                        protocol_type="consumer",
                        protocol_name="range",
                        assignments=assignments,
                    ),
                    self.v["sync"],
                )
                if sync.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
                    continue
                if sync.error_code:
                    raise RuntimeError(f"SyncGroup: error {ErrorCode(sync.error_code).name}")
                self.generations.add(generation)
                self.synced[i] = (generation, trio.current_time())
                self._check_done(generation)
                # Stable: heartbeat until the run ends or a rebalance starts.
                while not self.done.is_set():
                    with trio.move_on_after(HEARTBEAT_MS / 1000):
                        await self.done.wait()
                    if self.done.is_set():
                        break
                    hb = await c.call(
                        HeartbeatRequest(
                            group_id=self.group, generation_id=generation, member_id=member_id
                        ),
                        self.v["heartbeat"],
                    )
                    if hb.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
                        break
                    if hb.error_code:
                        raise RuntimeError(f"Heartbeat: error {ErrorCode(hb.error_code).name}")
        finally:
            await stream.aclose()


async def _leave(addr: tuple[str, int], group: str, ids: list[str | None], version: int) -> None:
    stream = await trio.open_tcp_stream(*addr)
    try:
        await _Client(stream).call(
            LeaveGroupRequest(
                group_id=group, members=[MemberIdentity(member_id=m) for m in ids if m]
            ),
            version,
        )
    finally:
        await stream.aclose()


def request_versions(advertised: dict[int, tuple[int, int]]) -> dict[str, int]:
    """The version of each request `form_group` sends: the highest one that our codec and the
    broker (`advertised`: its ApiVersions answer) share."""
    return {
        "join": common_version(JoinGroupRequest, advertised),
        "sync": common_version(SyncGroupRequest, advertised),
        "heartbeat": common_version(HeartbeatRequest, advertised),
        "leave": common_version(LeaveGroupRequest, advertised),
    }


async def form_group(
    addr: tuple[str, int], n: int, group: str, versions: dict[str, int], timeout_s: float = 60.0
) -> dict[str, Any]:
    run = _Run(n, group, versions)
    with trio.move_on_after(timeout_s) as scope:
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(run.member, i, addr)
    if scope.cancelled_caught:
        return {"error": f"not Stable after {timeout_s:.0f} s ({len(run.synced)} of {n} synced)"}
    if versions.get("leave") is not None:
        await _leave(addr, group, run.ids, versions["leave"])
    return {
        "ms": (run.t1 - run.t0) * 1000,
        "final_round_ms": (run.t1 - run.last_join_sent) * 1000,
        "generations": len(run.generations),
        "final_generation": run.final_generation,
        "rejoins": run.rejoins,
    }
