"""Property: in a classic group upgraded online, classic members (JoinGroup/SyncGroup/
Heartbeat, eager like kafka-python) and consumer-protocol members (ConsumerGroupHeartbeat)
never own a partition at the same time, whatever order they join, heartbeat, leave or time
out in; and once the consumer members are gone the group is classic again.

Clients behave as real ones: an eager classic client gives up everything when told to
rejoin (REBALANCE_IN_PROGRESS), then owns what its SyncGroup gives it; a consumer client
owns what its last heartbeat answer assigned and reports it. Live clients heartbeat often
enough to keep their sessions; a crashed one stops and times out.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.coordinator import GroupCoordinator
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.builders import GROUP, WALL, heartbeat, reply, sync
from tests.coordinator.consumer.test_migration import (
    cg_heartbeat,
    classic_group,
    coordinator,
    join,
    partitions_of,
)

CONSUMERS = 2


class ClassicClient:
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.generation = 1
        self.owned: set[int] = set()
        self.active = True
        self.inside = False  # has been served inside the consumer group

    def beat(self, c: GroupCoordinator, now: int) -> None:
        if c.group_type(GROUP) != "consumer":
            # A classic group (before the upgrade, after the downgrade) is the leader's to
            # assign: this model follows the members only inside the consumer group.
            if self.inside:
                self.owned = set()
            else:  # before the upgrade it keeps its session, as a live client does
                with contextlib.suppress(KafkaError):
                    heartbeat(c, now, self.member_id, self.generation)
            return
        self.inside = True
        try:
            code = heartbeat(c, now, self.member_id, self.generation).error_code
        except KafkaError as e:
            code = e.code
        if code == ErrorCode.NONE:
            return
        self.owned = set()  # eager: everything is revoked before rejoining
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            token, outcome = join(c, now)
            self.member_id = reply(outcome, token).member_id
        token, outcome = join(c, now, self.member_id)
        response = reply(outcome, token)
        if response is None or response.error_code != ErrorCode.NONE:
            return  # parked (the group became classic) or refused: retry next time
        self.generation = response.generation_id
        try:
            token, synced = sync(c, now, self.member_id, self.generation)
        except KafkaError:
            return
        answer = reply(synced, token)
        if answer is not None and answer.error_code == ErrorCode.NONE:
            self.owned = set(partitions_of(answer.assignment))


class ConsumerClient:
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.epoch = 0
        self.owned: set[int] = set()
        self.active = False

    def beat(self, c: GroupCoordinator, now: int) -> None:
        try:
            if self.epoch == 0:
                response, _ = cg_heartbeat(c, now, self.member_id)
            else:
                response, _ = cg_heartbeat(c, now, self.member_id, self.epoch, sorted(self.owned))
        except KafkaError:
            self.epoch, self.owned = 0, set()  # fenced: drop everything, join again
            return
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.owned = {p for t in response.assignment.topic_partitions for p in t.partitions}


def check(c: GroupCoordinator, clients: list[Any]) -> None:
    group = c.consumer.groups.get(GROUP)
    server: dict[str, set[int]] = {}
    if group is not None:
        seen: dict[int, str] = {}
        for m in group.members.values():
            server[m.member_id] = {p for _, p in m.owned_partitions()}
            for p in server[m.member_id]:
                assert p not in seen, f"partition {p}: {seen[p]} and {m.member_id}"
                seen[p] = m.member_id
    owner: dict[int, str] = {}
    for client in clients:
        if not client.active:
            continue
        for p in client.owned:
            assert p not in owner, f"partition {p} consumed by {owner[p]} and {client.member_id}"
            owner[p] = client.member_id
            if group is not None:
                assert p in server.get(client.member_id, set()), (client.member_id, p)


action = st.one_of(
    st.tuples(st.just("consumer"), st.integers(0, CONSUMERS - 1)),
    st.tuples(st.just("classic"), st.integers(0, 1)),
    st.tuples(st.just("leave"), st.integers(0, CONSUMERS - 1)),
    st.tuples(st.just("crash"), st.integers(0, CONSUMERS - 1)),
    st.tuples(st.just("tick"), st.integers(1, 4000)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(action, min_size=1, max_size=40))
def test_no_partition_is_owned_twice_across_upgrade_and_downgrade(actions):
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    classic = [ClassicClient(m) for m in ids]
    classic[0].owned, classic[1].owned = {0, 1, 2}, {3, 4, 5}
    consumers = [ConsumerClient(f"c{i}") for i in range(CONSUMERS)]
    clients: list[Any] = [*classic, *consumers]
    now = 0

    def tick(ms: int) -> None:
        nonlocal now
        now += ms
        for client in clients:  # every live client heartbeats well within its session
            if client.active:
                client.beat(c, now)
                check(c, clients)
        c.expire(now, WALL + now)

    for kind, arg in actions:
        if kind == "consumer":
            client = consumers[arg]
            client.active = True
            client.beat(c, now)
        elif kind == "classic":
            classic[arg].beat(c, now)
        elif kind == "leave" and consumers[arg].active:
            client = consumers[arg]
            if client.epoch > 0:
                with contextlib.suppress(KafkaError):
                    cg_heartbeat(c, now, client.member_id, -1)
            client.active, client.epoch, client.owned = False, 0, set()
        elif kind == "crash":
            consumers[arg].active, consumers[arg].owned = False, set()
            consumers[arg].epoch = 0
        elif kind == "tick":
            tick(arg)
        check(c, clients)

    # The consumer members go; crashed ones time out. The group ends classic.
    for client in consumers:
        if client.active and client.epoch > 0:
            with contextlib.suppress(KafkaError):
                cg_heartbeat(c, now, client.member_id, -1)
        client.active, client.owned = False, set()
    for _ in range(15):
        tick(4000)
    assert c.group_type(GROUP) == "classic"
