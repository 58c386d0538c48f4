"""Property: in a classic group upgraded online, classic members (JoinGroup/SyncGroup/
Heartbeat) and consumer-protocol members (ConsumerGroupHeartbeat) never own a partition at
the same time, whatever order they join, heartbeat, leave, time out or replace one another
in; and once the consumer members are gone the group is classic again, its classic members
consuming every partition.

Clients behave as real ones, in a group of either type. A classic client is eager (range,
like kafka-python) or cooperative (cooperative-sticky), dynamic or static: told to rejoin
(a Heartbeat, JoinGroup or SyncGroup answered REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID...) an eager one gives up everything, a cooperative one only when its
generation is lost; it owns what its SyncGroup gives it, a cooperative one rejoining after
giving partitions up; its leader assigns in a classic group (range, withholding partitions
another member still owns when cooperative). A JoinGroup or SyncGroup that waits is
answered in the outcome of a later call, and the client waits for it without heartbeating
(the coordinator counts a waiting member alive). A consumer client owns what its last
heartbeat answer assigned and reports it. Live clients heartbeat often enough to keep
their sessions; a crashed one stops and times out; a classic client may also leave
(LeaveGroup) and start again, and a consumer client may be replaced by a classic one
(a rolling downgrade) and back.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome
from protocol.consumer_protocol import decode_subscription
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.builders import GROUP, WALL, as_record, heartbeat, leave, sync
from tests.coordinator.consumer.test_migration import (
    REBALANCE_MS,
    assignment,
    cg_heartbeat,
    classic_group,
    coordinator,
    join,
    partitions_of,
)

CONSUMERS = 2
PARTITIONS = 6
# The Java client waits for a JoinGroup answer up to the rebalance timeout plus 5 s
# (ConsumerCoordinator: joinGroupTimeoutMs), then sends it again.
JOIN_WAIT_MS = REBALANCE_MS + 5_000


class Mail:
    """Every answer by token, as the broker delivers them: a parked JoinGroup or SyncGroup
    is answered in the outcome of a later call (another member's join, the leader's sync,
    an upgrade, a timer). Records are written before the answers go out."""

    def __init__(self, c: GroupCoordinator) -> None:
        self.c = c
        self.answers: dict[int, Any] = {}
        self.log: list[Any] = []  # every record written, in order

    def post(self, outcome: Outcome, now: int) -> Outcome:
        if outcome.records:
            self.log.extend(outcome.records)
            self.c.on_appended(outcome, now)
        for r in outcome.replies:
            self.answers[r.token] = r.response
        return outcome

    def take(self, token: int) -> Any:
        return self.answers.pop(token, None)


def range_assignment(members: list[Any], *, cooperative: bool) -> dict[str, bytes]:
    """The classic leader's assignment of "t" (Kafka's RangeAssignor over sorted ids). A
    cooperative leader withholds a partition that another member still reports owning: it
    moves in the next rebalance, once given up (AbstractStickyAssignor's rule)."""
    owned_by: dict[int, str] = {}
    if cooperative:
        for m in members:
            for tp in decode_subscription(m.metadata).owned_partitions:
                owned_by.update((p, m.member_id) for p in tp.partitions)
    ids = sorted(m.member_id for m in members)
    share, extra = divmod(PARTITIONS, len(ids))
    out, start = {}, 0
    for i, member_id in enumerate(ids):
        n = share + (1 if i < extra else 0)
        mine = range(start, start + n)
        out[member_id] = assignment([p for p in mine if owned_by.get(p, member_id) == member_id])
        start += n
    return out


# What a cooperative client keeps when told to rejoin (ConsumerCoordinator.onJoinPrepare:
# with its generation still valid it revokes nothing first; after ILLEGAL_GENERATION,
# UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID its partitions are lost).
KEEPS = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT}


class ClassicClient:
    def __init__(
        self, member_id: str, *, cooperative: bool = False, instance_id: str | None = None
    ) -> None:
        self.member_id = member_id
        self.cooperative = cooperative
        self.instance_id = instance_id  # static membership (group.instance.id)
        self.generation = 1
        self.owned: set[int] = set()
        self.active = True
        self.rejoin: ErrorCode | None = None  # why it must send JoinGroup at its next beat
        self.joining: tuple[int, int] | None = None  # (token, sent at) of a JoinGroup
        self.syncing: int | None = None  # token of a SyncGroup not answered yet

    def beat(self, c: GroupCoordinator, mail: Mail, now: int) -> None:
        if self.joining is not None:
            token, sent = self.joining
            answer = mail.take(token)
            if answer is not None:
                self.joining = None
                self._joined(c, mail, now, answer)
            elif now - sent >= JOIN_WAIT_MS:
                self.joining, self.rejoin = None, ErrorCode.REQUEST_TIMED_OUT
        elif self.syncing is not None:
            answer = mail.take(self.syncing)
            if answer is not None:
                self.syncing = None
                self._synced(answer)
        elif self.rejoin is not None:
            self._join(c, mail, now)
        else:
            try:
                code = heartbeat(
                    c, now, self.member_id, self.generation, instance_id=self.instance_id
                ).error_code
            except KafkaError as e:
                code = e.code
            if code != ErrorCode.NONE:
                self._must_rejoin(code)
                self._join(c, mail, now)

    def start(self) -> None:
        """A new process: it joins with no member id."""
        self.active, self.owned, self.member_id = True, set(), ""
        self.joining = self.syncing = None
        self.rejoin = ErrorCode.UNKNOWN_MEMBER_ID

    def stop(self, c: GroupCoordinator, mail: Mail, now: int, *, leave_group: bool) -> bool:
        """Closed (LeaveGroup first) or crashed: it consumes nothing from now on.

        Returns whether a follow-up rebalance may be lost: a cooperative client that gives
        partitions up (the leader withheld them from their next owner) is the one to
        rejoin so that they move (ConsumerCoordinator.onJoinComplete); a static one that
        crashed in a rebalance comes back in a Stable group without a rebalance (KIP-345),
        and they stay unassigned until the next one, in Kafka's classic protocol as here
        (KAFKA-9821 fixed it for Streams only).
        """
        if leave_group and self.member_id:
            with contextlib.suppress(KafkaError):
                mail.post(leave(c, now, (self.member_id, self.instance_id))[1], now)
        lost = (
            not leave_group
            and self.cooperative
            and self.instance_id is not None
            and (self.rejoin is not None or self.joining is not None or self.syncing is not None)
        )
        self.active, self.owned = False, set()
        return lost

    def _must_rejoin(self, code: ErrorCode) -> None:
        if not (self.cooperative and code in KEEPS):
            self.owned = set()  # eager: everything is revoked before rejoining
        self.rejoin = code
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            self.member_id = ""

    def _join(self, c: GroupCoordinator, mail: Mail, now: int) -> None:
        self.rejoin = None
        if self.cooperative:
            kind: dict[str, Any] = {"protocol": "cooperative-sticky", "owned": sorted(self.owned)}
        else:
            kind = {"protocol": "range"}
        token, outcome = join(c, now, self.member_id, instance_id=self.instance_id, **kind)
        mail.post(outcome, now)
        answer = mail.take(token)
        if answer is None:
            self.joining = (token, now)
        else:
            self._joined(c, mail, now, answer)

    def _joined(self, c: GroupCoordinator, mail: Mail, now: int, answer: Any) -> None:
        code = answer.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = answer.member_id
            self._join(c, mail, now)
            return
        if code != ErrorCode.NONE:
            self._must_rejoin(code)
            return
        self.member_id, self.generation = answer.member_id, answer.generation_id
        # KIP-814: a static leader that rejoined a Stable group is told to skip assigning.
        leader = answer.leader == self.member_id and not answer.skip_assignment
        assignments = (
            range_assignment(answer.members, cooperative=self.cooperative) if leader else None
        )
        try:
            token, outcome = sync(
                c, now, self.member_id, self.generation, assignments, instance_id=self.instance_id
            )
        except KafkaError as e:
            self._must_rejoin(e.code)
            return
        mail.post(outcome, now)
        synced = mail.take(token)
        if synced is None:
            self.syncing = token
        else:
            self._synced(synced)

    def _synced(self, answer: Any) -> None:
        if answer.error_code == ErrorCode.NONE:
            assigned = set(partitions_of(answer.assignment))
            if self.cooperative and self.owned - assigned:
                # It gives those up, then rejoins to say so (ConsumerCoordinator
                # .onJoinComplete requests a rejoin after revoking).
                self.rejoin = ErrorCode.REBALANCE_IN_PROGRESS
            self.owned = assigned
        else:
            self._must_rejoin(answer.error_code)


class ConsumerClient:
    def __init__(self, member_id: str, *, instance_id: str | None = None) -> None:
        self.member_id = member_id
        self.instance_id = instance_id
        self.epoch = 0
        self.owned: set[int] = set()
        self.active = False
        self.starts = 0

    def start(self) -> None:
        """A new process: a static one takes a new member id and its instance id's place
        (UNRELEASED_INSTANCE_ID until the old member left or timed out)."""
        self.active, self.epoch, self.owned = True, 0, set()
        self.starts += 1
        if self.instance_id is not None:
            self.member_id = f"{self.member_id.split('.')[0]}.{self.starts}"

    def beat(self, c: GroupCoordinator, mail: Mail, now: int) -> None:
        try:
            if self.epoch == 0:
                response, outcome = cg_heartbeat(
                    c, now, self.member_id, instance_id=self.instance_id
                )
            else:
                owned = sorted(self.owned)
                response, outcome = cg_heartbeat(
                    c, now, self.member_id, self.epoch, owned, instance_id=self.instance_id
                )
        except KafkaError:
            self.epoch, self.owned = 0, set()  # fenced: drop everything, join again
            return
        mail.post(outcome, now)
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.owned = {p for t in response.assignment.topic_partitions for p in t.partitions}

    def leave(self, c: GroupCoordinator, mail: Mail, now: int) -> None:
        """Closed: a static member leaves for now (epoch -2), its place kept until its
        session ends; a dynamic one for good (-1)."""
        if self.epoch > 0:
            epoch = -1 if self.instance_id is None else -2
            with contextlib.suppress(KafkaError):
                _, outcome = cg_heartbeat(
                    c, now, self.member_id, epoch, instance_id=self.instance_id
                )
                mail.post(outcome, now)
        self.active, self.epoch, self.owned = False, 0, set()


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


def check_replay(c: GroupCoordinator, log: list[Any]) -> None:
    """A coordinator that replays what was written (from the bytes, as on a restart) has
    the same group: a consumer group exactly, a Stable classic one as its generation left
    it (a classic rebalance under way has not written its members yet, in Kafka either)."""
    reloaded = coordinator()
    for record in log:
        reloaded.replay(record.key_bytes(), record.value_bytes())
    reloaded.finish_load(0)
    kind = c.group_type(GROUP)
    if kind == "consumer":
        assert reloaded.group_type(GROUP) == kind
        assert vars(reloaded.consumer.groups[GROUP].copy()) == vars(c.consumer.groups[GROUP].copy())
    elif str(c.group(GROUP).state) == "Stable":
        assert reloaded.group_type(GROUP) == kind
        live, loaded = c.group(GROUP), reloaded.group(GROUP)
        assert (loaded.generation_id, loaded.protocol_name, loaded.leader_id) == (
            live.generation_id,
            live.protocol_name,
            live.leader_id,
        )
        assert {m: x.assignment for m, x in loaded.members.items()} == {
            m: x.assignment for m, x in live.members.items()
        }


action = st.one_of(
    st.tuples(st.just("consumer"), st.integers(0, CONSUMERS - 1)),
    st.tuples(st.just("classic"), st.integers(0, 1)),
    st.tuples(st.just("classic_leave"), st.integers(0, 1)),
    st.tuples(st.just("classic_crash"), st.integers(0, 1)),
    st.tuples(st.just("leave"), st.integers(0, CONSUMERS - 1)),
    st.tuples(st.just("crash"), st.integers(0, CONSUMERS - 1)),
    # A rolling downgrade of one process: the consumer client closes, and a classic client
    # (with the same instance id when static) starts in its place; "consumer" undoes it.
    st.tuples(st.just("switch"), st.integers(0, CONSUMERS - 1)),
    st.tuples(st.just("tick"), st.integers(1, 4000)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(action, min_size=1, max_size=40), st.booleans(), st.booleans())
# Upgraded, downgraded before the classic members heard of the consumer group, and upgraded
# again once their sessions ended: the classic clients must have heeded the downgraded
# group's ILLEGAL_GENERATION and rejoined, or they hold nothing.
@example(
    actions=[
        ("consumer", 0),
        ("leave", 0),
        ("tick", 2000),
        ("tick", 4000),
        ("tick", 4000),
        ("consumer", 0),
    ],
    cooperative=False,
    static=False,
)
def test_no_partition_is_owned_twice_across_upgrade_and_downgrade(actions, cooperative, static):
    c = coordinator()
    mail = Mail(c)
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]], cooperative=cooperative, static=static)
    classic = [
        ClassicClient(m, cooperative=cooperative, instance_id=f"i{i}" if static else None)
        for i, m in enumerate(ids)
    ]
    classic[0].owned, classic[1].owned = {0, 1, 2}, {3, 4, 5}
    mail.log.append(as_record(c))  # what the classic group's first generation wrote
    consumers = [
        ConsumerClient(f"c{i}", instance_id=f"s{i}" if static else None) for i in range(CONSUMERS)
    ]
    clients: list[Any] = [*classic, *consumers]
    switched: dict[int, ClassicClient] = {}  # the classic client that replaced consumer i
    lost_follow_up = False
    now = 0

    def tick(ms: int) -> None:
        nonlocal now
        now += ms
        for client in clients:  # every live client heartbeats well within its session
            if client.active:
                client.beat(c, mail, now)
                check(c, clients)
        mail.post(c.expire(now, WALL + now), now)

    for kind, arg in actions:
        if kind == "consumer":
            client = consumers[arg]
            if not client.active:
                if arg in switched and switched[arg].active:  # the switch back
                    lost_follow_up |= switched[arg].stop(c, mail, now, leave_group=not static)
                client.start()
            client.beat(c, mail, now)
        elif kind == "switch" and consumers[arg].active:
            consumers[arg].leave(c, mail, now)
            if arg not in switched:
                instance_id = f"s{arg}" if static else None
                switched[arg] = ClassicClient("", cooperative=cooperative, instance_id=instance_id)
                classic.append(switched[arg])
                clients.append(switched[arg])
            switched[arg].start()
            switched[arg].beat(c, mail, now)
        elif kind == "classic":  # a beat out of turn, or a stopped client starts again
            if not classic[arg].active:
                classic[arg].start()
            classic[arg].beat(c, mail, now)
        elif kind in ("classic_leave", "classic_crash") and classic[arg].active:
            lost_follow_up |= classic[arg].stop(c, mail, now, leave_group=kind == "classic_leave")
        elif kind == "leave" and consumers[arg].active:
            consumers[arg].leave(c, mail, now)
        elif kind == "crash":
            consumers[arg].active, consumers[arg].owned = False, set()
            consumers[arg].epoch = 0
        elif kind == "tick":
            tick(arg)
        check(c, clients)
        check_replay(c, mail.log)

    # The consumer members go; crashed ones time out; stopped classic clients start again.
    # The group ends classic, and its classic members share every partition again.
    for client in consumers:
        if client.active:
            client.leave(c, mail, now)
        client.active = False
    for client in classic:
        if not client.active:
            client.start()
    for _ in range(30):  # a crashed consumer's session (45 s), then cooperative rounds
        tick(4000)
    assert c.group_type(GROUP) == "classic"
    assert str(c.group(GROUP).state) == "Stable"
    check_replay(c, mail.log)
    if not lost_follow_up:
        assert set().union(*(client.owned for client in classic)) == set(range(PARTITIONS))
