"""The server-side assignors of consumer groups: `uniform` and `range`
(group.consumer.assignors; a member picks one with server_assignor).

Both follow Kafka's org.apache.kafka.coordinator.group.assignor classes in what a client can
observe, not line by line:

* `uniform` (UniformAssignor) balances the number of partitions per member over all the
  topics each member subscribes to, and is sticky: a member keeps the partitions of its
  previous target assignment as long as that keeps the balance. Kafka has two builders
  (OptimizedUniformAssignmentBuilder for identical subscriptions, GeneralUniformAssignment
  Builder otherwise); we run one procedure for both:
    1. keep every previous partition that is still valid (the topic exists, the member
       subscribes to it, no other member kept it);
    2. give each unassigned partition, topics with the fewest subscribers first, to the
       least loaded member that subscribes to its topic;
    3. while some member has two or more partitions more than another member that could
       take one of them, move one (the donor's highest partition) to the lighter member.
  Step 3 ends because every move lowers the sum of squared loads. With identical
  subscriptions the loads end at most one apart, as Kafka's.
* `range` (RangeAssignor) works topic by topic: the members subscribed to a topic, sorted
  by member id, get ranges of n // m partitions and the first n % m members one more, so
  identically subscribed members get the same partition numbers of co-partitioned topics.
  It is sticky as Kafka's: a member keeps its previous partitions of the topic up to its
  quota, and the rest fill the quotas in ascending order.

Input: members' subscribed topic ids, each topic's partition count, and the previous target
assignment. Output: member id -> topic id -> partitions, for every member (possibly empty).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from coordinator.consumer.member import Assignment

__all__ = ["ASSIGNORS", "range_assign", "uniform_assign"]

Subscriptions = Mapping[str, frozenset[uuid.UUID]]  # member id -> subscribed topic ids
TopicPartitionCounts = Mapping[uuid.UUID, int]  # topic id -> number of partitions
TargetAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]


def _freeze(assignment: dict[str, dict[uuid.UUID, set[int]]]) -> TargetAssignment:
    return {
        member_id: {t: frozenset(ps) for t, ps in topics.items() if ps}
        for member_id, topics in assignment.items()
    }


def uniform_assign(
    subscriptions: Subscriptions,
    topics: TopicPartitionCounts,
    previous: Mapping[str, Assignment],
) -> TargetAssignment:
    """UniformAssignor: balanced by partition count per member, sticky."""
    members = sorted(subscriptions)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    assignment: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    load = dict.fromkeys(members, 0)

    def give(member_id: str, tp: tuple[uuid.UUID, int]) -> None:
        owner[tp] = member_id
        assignment[member_id].setdefault(tp[0], set()).add(tp[1])
        load[member_id] += 1

    for member_id in members:  # 1. sticky
        for topic_id, partitions in sorted(previous.get(member_id, {}).items()):
            if topic_id not in subscriptions[member_id] or topic_id not in topics:
                continue
            for p in sorted(partitions):
                if p < topics[topic_id] and (topic_id, p) not in owner:
                    give(member_id, (topic_id, p))

    subscribers: dict[uuid.UUID, list[str]] = {
        t: [m for m in members if t in subscriptions[m]] for t in topics
    }
    for topic_id in sorted(topics, key=lambda t: (len(subscribers[t]), str(t))):  # 2.
        if not subscribers[topic_id]:
            continue
        for p in range(topics[topic_id]):
            if (topic_id, p) not in owner:
                give(min(subscribers[topic_id], key=lambda m: (load[m], m)), (topic_id, p))

    while True:  # 3. balance
        move = _best_move(members, assignment, load, subscriptions)
        if move is None:
            break
        donor, receiver, tp = move
        assignment[donor][tp[0]].discard(tp[1])
        load[donor] -= 1
        give(receiver, tp)
    return _freeze(assignment)


def _best_move(
    members: list[str],
    assignment: dict[str, dict[uuid.UUID, set[int]]],
    load: dict[str, int],
    subscriptions: Subscriptions,
) -> tuple[str, str, tuple[uuid.UUID, int]] | None:
    """A partition to move from a member to one holding at least two fewer, or None."""
    for donor in sorted(members, key=lambda m: (-load[m], m)):
        for receiver in sorted(members, key=lambda m: (load[m], m)):
            if load[donor] - load[receiver] < 2:
                break
            movable = [
                (t, p)
                for t, ps in assignment[donor].items()
                if t in subscriptions[receiver]
                for p in ps
            ]
            if movable:
                return donor, receiver, max(movable, key=lambda tp: (str(tp[0]), tp[1]))
    return None


def range_assign(
    subscriptions: Subscriptions,
    topics: TopicPartitionCounts,
    previous: Mapping[str, Assignment],
) -> TargetAssignment:
    """RangeAssignor: contiguous ranges per topic in member id order, sticky within quotas."""
    assignment: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in subscriptions}
    for topic_id, count in sorted(topics.items(), key=lambda kv: str(kv[0])):
        members = sorted(m for m in subscriptions if topic_id in subscriptions[m])
        if not members:
            continue
        quota, extra = divmod(count, len(members))
        kept: dict[str, list[int]] = {}
        for m in members:
            had = sorted(p for p in previous.get(m, {}).get(topic_id, ()) if p < count)
            kept[m] = had[:quota]
        for m in members:  # members that had more keep one more, while extras last
            had = sorted(p for p in previous.get(m, {}).get(topic_id, ()) if p < count)
            if extra and len(had) > quota:
                kept[m].append(had[quota])
                extra -= 1
        wants = {m: quota + (1 if len(kept[m]) > quota else 0) for m in members}
        for m in members:  # the remaining extras go to the first members
            if extra and wants[m] == quota:
                wants[m] += 1
                extra -= 1
        taken = {p for ps in kept.values() for p in ps}
        free = iter(p for p in range(count) if p not in taken)
        for m in members:
            partitions = kept[m] + [next(free) for _ in range(wants[m] - len(kept[m]))]
            assignment[m][topic_id] = set(partitions)
    return _freeze(assignment)


Assignor = Callable[
    [Subscriptions, TopicPartitionCounts, Mapping[str, Assignment]], TargetAssignment
]
# Kafka's assignor names (PartitionAssignor.name()).
ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assign, "range": range_assign}
