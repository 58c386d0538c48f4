"""KIP-848 consumer groups through a running broker, spoken to with our own codec.

ConsumerGroupHeartbeat and ConsumerGroupDescribe are routed and advertised; topic metadata
comes from the registry, so a topic created after a member subscribed, or new partitions,
reach the group at its next heartbeat; the runtime's timer fences a silent member; the
group comes back from __consumer_offsets after a restart; bad requests get Kafka's error
codes; settings out of range are refused with their name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker.config import ConfigError, consumer_group_config, load_config
from broker.handlers import consumer_group_describe, consumer_group_heartbeat
from broker.routes import supported_versions
from broker.runtime import CoordinatorRuntime
from coordinator.consumer import ConsumerGroupMigrationPolicy
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from tests.reliability.inproc import (
    create_partitions_request,
    create_topics_request,
    running,
)
from tests.wire import WireClient

GROUP = "g"


def _join(member_id: str, *topics: str, regex: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=list(topics) if regex is None else None,
        subscribed_topic_regex=regex,
        topic_partitions=[],
    )


def _beat(member_id: str, epoch: int, owned: dict[Any, list[int]] | None = None) -> Any:
    return ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id=member_id,
        member_epoch=epoch,
        topic_partitions=None
        if owned is None
        else [TopicPartitions(topic_id=t, partitions=p) for t, p in owned.items()],
    )


def _owned(response: Any) -> dict[Any, list[int]]:
    return {t.topic_id: t.partitions for t in response.assignment.topic_partitions}


async def _describe(client: WireClient) -> Any:
    request = ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False)
    (group,) = (await client.call(request, 0)).groups
    return group


async def test_both_apis_are_advertised() -> None:
    keys = {v.api_key: (v.min_version, v.max_version) for v in supported_versions()}
    assert keys[68] == (0, 1)
    assert keys[69] == (0, 1)


async def test_new_topics_and_partitions_reach_the_group_at_the_next_heartbeat(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as broker:
        client = await WireClient.connect(broker)
        await client.call(create_topics_request("a", 2), 5)
        joined = await client.call(_join("m1", "a", "later"), 1)
        assert joined.error_code == ErrorCode.NONE
        a_id = broker.topics.get("a").topic_id
        assert _owned(joined) == {a_id: [0, 1]}

        await client.call(create_partitions_request("a", 3), 3)
        await client.call(create_topics_request("later", 1), 5)
        beat = await client.call(_beat("m1", joined.member_epoch, _owned(joined)), 1)
        assert beat.error_code == ErrorCode.NONE
        assert beat.member_epoch > joined.member_epoch
        later_id = broker.topics.get("later").topic_id
        assert _owned(beat) == {a_id: [0, 1, 2], later_id: [0]}

        group = await _describe(client)
        # Epoch 1: the join; 2: both metadata changes, seen by one heartbeat.
        assert (group.error_code, group.group_state, group.group_epoch) == (0, "Stable", 2)
        (member,) = group.members
        assert sorted(t.topic_name for t in member.assignment.topic_partitions) == ["a", "later"]


async def test_a_regex_subscription_picks_up_a_topic_created_later(tmp_path: Path) -> None:
    async with running(tmp_path) as broker:
        client = await WireClient.connect(broker)
        joined = await client.call(_join("m1", regex="orders-.*"), 1)
        assert (joined.error_code, _owned(joined)) == (ErrorCode.NONE, {})
        await client.call(create_topics_request("orders-eu", 2), 5)
        beat = await client.call(_beat("m1", joined.member_epoch, {}), 1)
        assert _owned(beat) == {broker.topics.get("orders-eu").topic_id: [0, 1]}


async def test_the_timer_fences_a_silent_member(tmp_path: Path, autojump_clock: Any) -> None:
    settings = {
        "group.consumer.session.timeout.ms": 3000,
        "group.consumer.heartbeat.interval.ms": 500,
    }
    async with running(tmp_path, **settings) as broker:
        client = await WireClient.connect(broker)
        await client.call(create_topics_request("a", 1), 5)
        joined = await client.call(_join("m1", "a"), 1)
        assert joined.heartbeat_interval_ms == 500
        assert (await _describe(client)).members
        await trio.sleep(3.001)  # virtual time, past the session: the timer task runs
        assert not (await _describe(client)).members
        beat = await client.call(_beat("m1", joined.member_epoch, _owned(joined)), 1)
        assert beat.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await _describe(client)).group_state == "Empty"


async def test_the_group_comes_back_after_a_restart(tmp_path: Path) -> None:
    async with running(tmp_path) as broker:
        client = await WireClient.connect(broker)
        await client.call(create_topics_request("a", 2), 5)
        joined = await client.call(_join("m1", "a"), 1)
        before = await _describe(client)
    async with running(tmp_path) as broker:
        client = await WireClient.connect(broker)
        after = await _describe(client)
        assert after == before
        beat = await client.call(_beat("m1", joined.member_epoch, _owned(joined)), 1)
        assert (beat.error_code, beat.member_epoch) == (ErrorCode.NONE, joined.member_epoch)


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (_join("m1", "a").__class__(group_id="", member_id="m", member_epoch=0), "INVALID_REQUEST"),
        (_beat("m1", -3), "INVALID_REQUEST"),
        (_join("m1", regex="(unclosed"), "INVALID_REGULAR_EXPRESSION"),
        (
            ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id="m1",
                member_epoch=0,
                rebalance_timeout_ms=1000,
                subscribed_topic_names=["a"],
                server_assignor="sticky",
                topic_partitions=[],
            ),
            "UNSUPPORTED_ASSIGNOR",
        ),
        (_beat("m1", 5), "GROUP_ID_NOT_FOUND"),
    ],
    ids=["empty group id", "bad epoch", "bad regex", "unknown assignor", "unknown group"],
)
async def test_bad_heartbeats_get_kafka_error_codes(
    tmp_path: Path, request_: Any, code: str
) -> None:
    async with running(tmp_path) as broker:
        client = await WireClient.connect(broker)
        response = await client.call(request_, 1)
        assert response.error_code == ErrorCode[code]
        assert response.error_message, "Kafka's answers say why"
        # The connection stays usable.
        assert (await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE


async def test_both_apis_wait_for_the_load(tmp_path: Path) -> None:
    from broker.broker import Broker
    from broker.context import RequestContext
    from broker.routes import ROUTES

    broker = Broker(load_config(overrides={"log.dirs": str(tmp_path)}))
    broker.coordinator = CoordinatorRuntime(broker)  # not run: nothing replayed yet
    ctx = RequestContext(broker, 1, "client", "/127.0.0.1", 1, ROUTES)
    with pytest.raises(KafkaError) as e:
        await consumer_group_heartbeat.handle(ctx, _join("m1", "a"))
    assert e.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    request = ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False)
    with pytest.raises(KafkaError) as e:
        await consumer_group_describe.handle(ctx, request)
    assert e.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"group.consumer.assignors": "uniform,sticky"}, "group.consumer.assignors"),
        (
            {
                "group.consumer.heartbeat.interval.ms": 9000,
                "group.consumer.session.timeout.ms": 9000,
            },
            "group.consumer.heartbeat.interval.ms",
        ),
        ({"group.consumer.max.size": 0}, "group.consumer.max.size"),
        ({"group.consumer.migration.policy": "sideways"}, "group.consumer.migration.policy"),
    ],
)
def test_bad_consumer_group_settings_are_named(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        consumer_group_config(load_config(overrides=settings))


def test_the_defaults_are_kafkas() -> None:
    config = consumer_group_config(load_config())
    assert (config.session_timeout_ms, config.heartbeat_interval_ms) == (45000, 5000)
    assert config.assignors == ("uniform", "range")
    assert config.migration_policy is ConsumerGroupMigrationPolicy.BIDIRECTIONAL


@pytest.mark.parametrize("policy", ["disabled", "upgrade", "downgrade", "bidirectional"])
def test_every_migration_policy_is_accepted(policy: str) -> None:
    settings = {"group.consumer.migration.policy": policy}
    config = consumer_group_config(load_config(overrides=settings))
    assert config.migration_policy is ConsumerGroupMigrationPolicy(policy)


@pytest.mark.parametrize("given", ["BIDIRECTIONAL", "Upgrade", " downgrade ", "DISABLED"])
def test_the_migration_policy_is_matched_case_insensitively(given: str) -> None:
    """GroupCoordinatorConfig validates it with CaseInsensitiveValidString and
    ConsumerGroupMigrationPolicy.parse lower-cases it (strings are trimmed by ConfigDef)."""
    config = consumer_group_config(
        load_config(overrides={"group.consumer.migration.policy": given})
    )
    assert config.migration_policy is ConsumerGroupMigrationPolicy(given.strip().lower())


def test_an_unknown_migration_policy_in_any_case_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"group\.consumer\.migration\.policy: 'SIDEWAYS'"):
        load_config(overrides={"group.consumer.migration.policy": "SIDEWAYS"})


async def test_a_consumer_member_cannot_join_a_classic_group_with_members(tmp_path: Path) -> None:
    """Kafka's answer with group.consumer.migration.policy=disabled."""
    from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol

    async with running(tmp_path, **{"group.consumer.migration.policy": "disabled"}) as broker:
        client = await WireClient.connect(broker)
        join = JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        )
        joined = await client.call(join, 3)  # v3: no MEMBER_ID_REQUIRED round trip
        assert joined.error_code == ErrorCode.NONE
        response = await client.call(_join("m1", "a"), 1)
        assert (response.error_code, response.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Cannot upgrade classic group g to consumer group because online upgrade is disabled.",
        )
