"""Property: across random joins, leaves, crashes, heartbeats, timeouts and new partitions,
no partition is ever owned by two members at once, and the group converges.

Owned, on the coordinator's side, is a member's assigned partitions plus those it has still
to revoke; on the clients' side, what each live client is consuming. Clients here behave as
real ones do (builders.Client): they start on new partitions at once, finish with revoked
ones before their next heartbeat, and report what they own on every heartbeat. Live
clients heartbeat at least every 20 s, below the session (45 s) and rebalance (30 s)
timeouts, so only crashed clients time out. Clients c1 and c3 are static members: they leave
with epoch -2, keeping their partitions until they come back under a new member id (the
replacement takes them over) or their session ends.

Both reconciliation rules are needed for this to pass: without revocation first, or
without withholding partitions another member holds, hypothesis finds a counterexample.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.consumer import ConsumerGroupCoordinator
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.consumer.builders import GROUP, Client, topics

CLIENTS = 4

action = st.one_of(
    st.tuples(st.just("join"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("heartbeat"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("leave"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("crash"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("tick"), st.integers(1, 20000)),
    st.tuples(st.just("grow"), st.integers(1, 3)),
)


def check_ownership(c: ConsumerGroupCoordinator, clients: list[Client]) -> None:
    group = c.groups.get(GROUP)
    server_owner: dict[tuple[object, int], str] = {}
    for m in [] if group is None else group.members.values():
        for tp in m.owned_partitions():
            assert tp not in server_owner, f"{tp}: {server_owner[tp]} and {m.member_id}"
            server_owner[tp] = m.member_id
    client_owner: dict[tuple[object, int], str] = {}
    for client in clients:
        if not client.active:
            continue
        for topic_id, partitions in client.owned.items():
            for p in partitions:
                tp = (topic_id, p)
                assert tp not in client_owner, f"{tp}: {client_owner[tp]} and {client.member_id}"
                client_owner[tp] = client.member_id
                # A client owns nothing the coordinator does not count as its own.
                assert server_owner.get(tp) == client.member_id


@settings(max_examples=200, deadline=None)
@given(st.lists(action, max_size=40), st.sampled_from(["uniform", "range"]))
def test_no_partition_is_ever_owned_by_two_members(actions, assignor):
    c = ConsumerGroupCoordinator()
    clients = [Client(c, f"c{i}", instance_id=f"i{i}" if i % 2 else None) for i in range(CLIENTS)]
    incarnation = 0
    partitions = 3
    metadata = topics(t0=partitions, t1=2)
    now = 0

    def tick(ms: int) -> None:
        nonlocal now
        now += ms
        for client in clients:
            if client.active:
                client.heartbeat(now, metadata)
                check_ownership(c, clients)
        c.expire(now)

    for kind, arg in actions:
        client = clients[arg % CLIENTS]
        if kind == "join" and not client.active:
            if client.instance_id is not None:  # a restarted static member has a new id
                incarnation += 1
                client.member_id = f"c{arg % CLIENTS}-{incarnation}"
            group = c.groups.get(GROUP)
            holder = None if group is None else group.static_members.get(client.instance_id or "")
            if holder is not None and group is not None and group.members[holder].member_epoch >= 0:
                # Its previous incarnation crashed and holds the instance id until its
                # session ends: the join is refused, and the client retries later.
                with pytest.raises(KafkaError) as e:
                    client.join(["t0", "t1"], now, metadata, assignor)
                assert e.value.code == ErrorCode.UNRELEASED_INSTANCE_ID
                client.active = False
            else:
                client.join(["t0", "t1"], now, metadata, assignor)
        elif kind == "heartbeat" and client.active:
            client.heartbeat(now, metadata)
        elif kind == "leave" and client.active:
            client.leave(now, metadata)
        elif kind == "crash":
            client.active, client.owned, client.target = False, {}, {}
        elif kind == "tick":
            tick(arg)
        elif kind == "grow":
            partitions += arg
            metadata = topics(t0=partitions, t1=2)
        check_ownership(c, clients)

    # Converge: crashed members time out, and the live ones end up covering every
    # partition exactly once.
    for _ in range(6):
        tick(20000)
    live = [client for client in clients if client.active]
    owned = sorted((t, p) for client in live for t, ps in client.owned.items() for p in ps)
    if live:
        expected = sorted(
            (m.topic_id, p) for m in metadata.values() for p in range(m.num_partitions)
        )
        assert owned == expected
        group = c.groups[GROUP]
        assert str(group.state) == "Stable"
        assert set(group.members) == {client.member_id for client in live}
    else:
        assert owned == []
