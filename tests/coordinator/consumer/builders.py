"""Builders for consumer group tests: topics, heartbeats and a small client model.

Each helper is one client action against a `ConsumerGroupCoordinator`, with time passed as
int literals (Kafka's GroupMetadataManagerTestContext in spirit).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from coordinator.consumer import ConsumerGroupCoordinator, CoordinatorResult, TopicImage
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

GROUP = "g"


def topic(name: str, partitions: int) -> TopicImage:
    return TopicImage(uuid.uuid5(uuid.NAMESPACE_DNS, name), name, partitions)


def topics(**partitions: int) -> dict[str, TopicImage]:
    return {name: topic(name, n) for name, n in partitions.items()}


def tid(name: str) -> uuid.UUID:
    return topic(name, 0).topic_id


def owned(assignment: dict[str, Iterable[int]]) -> list[TopicPartitions]:
    return [TopicPartitions(topic_id=tid(t), partitions=sorted(ps)) for t, ps in assignment.items()]


def join_request(
    member_id: str,
    names: list[str] | None = None,
    *,
    regex: str | None = None,
    instance_id: str | None = None,
    assignor: str | None = None,
    rebalance_timeout_ms: int = 30000,
) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id=member_id,
        member_epoch=0,
        instance_id=instance_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=names if names is not None or regex is not None else [],
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        topic_partitions=[],
    )


def heartbeat_request(
    member_id: str,
    epoch: int,
    owned_partitions: dict[str, Iterable[int]] | None = None,
    *,
    instance_id: str | None = None,
    names: list[str] | None = None,
) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id=member_id,
        member_epoch=epoch,
        instance_id=instance_id,
        subscribed_topic_names=names,
        topic_partitions=None if owned_partitions is None else owned(owned_partitions),
    )


def assigned(response: object) -> dict[str, list[int]] | None:
    """The response's assignment by topic name (names from `tid`), or None when absent."""
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    if response.assignment is None:
        return None
    names = {}
    for t in response.assignment.topic_partitions:
        names[_name_of(t.topic_id)] = sorted(t.partitions)
    return names


_KNOWN = ["orders", "payments", "clicks", "orders-eu", "orders-us", "t0", "t1", "t2", "t3"]


def _name_of(topic_id: uuid.UUID) -> str:
    for name in _KNOWN:
        if tid(name) == topic_id:
            return name
    raise AssertionError(f"unknown topic id {topic_id}")


def response_of(result: CoordinatorResult) -> ConsumerGroupHeartbeatResponse:
    assert isinstance(result.response, ConsumerGroupHeartbeatResponse)
    return result.response


class Client:
    """A consumer's view, as real clients behave: it starts consuming newly assigned
    partitions at once, but a partition taken away is released only when the client has
    finished with it (committed, ran its callback), which here is at its next heartbeat; it
    reports what it still owns on every heartbeat."""

    def __init__(
        self,
        coordinator: ConsumerGroupCoordinator,
        member_id: str,
        instance_id: str | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.member_id = member_id
        self.instance_id = instance_id  # a static member: leaves with -2, may come back
        self.epoch = 0
        self.owned: dict[uuid.UUID, set[int]] = {}  # consuming now, including revoking
        self.target: dict[uuid.UUID, set[int]] = {}  # the last assignment received
        self.active = False

    def _apply(self, result: CoordinatorResult) -> ConsumerGroupHeartbeatResponse:
        response = response_of(result)
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.target = {
                t.topic_id: set(t.partitions) for t in response.assignment.topic_partitions
            }
            for topic_id, partitions in self.target.items():
                self.owned.setdefault(topic_id, set()).update(partitions)
        return response

    def join(
        self,
        names: list[str],
        now_ms: int,
        metadata: dict[str, TopicImage],
        assignor: str | None = None,
    ) -> object:
        self.active = True
        self.owned, self.target = {}, {}
        request = join_request(
            self.member_id, names, assignor=assignor, instance_id=self.instance_id
        )
        return self._apply(self.coordinator.consumer_group_heartbeat(request, now_ms, metadata))

    def heartbeat(self, now_ms: int, metadata: dict[str, TopicImage]) -> object:
        # Revocation done: keep only what the last assignment lists.
        self.owned = {
            t: ps & self.target.get(t, set()) for t, ps in self.owned.items() if t in self.target
        }
        request = ConsumerGroupHeartbeatRequest(
            group_id=GROUP,
            member_id=self.member_id,
            member_epoch=self.epoch,
            instance_id=self.instance_id,
            topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in self.owned.items()
                if ps
            ],
        )
        return self._apply(self.coordinator.consumer_group_heartbeat(request, now_ms, metadata))

    def leave(self, now_ms: int, metadata: dict[str, TopicImage]) -> None:
        # Leaving: the client stops consuming first, then says so.
        self.active = False
        self.owned, self.target = {}, {}
        request = ConsumerGroupHeartbeatRequest(
            group_id=GROUP,
            member_id=self.member_id,
            member_epoch=-1 if self.instance_id is None else -2,
            instance_id=self.instance_id,
        )
        self.coordinator.consumer_group_heartbeat(request, now_ms, metadata)
