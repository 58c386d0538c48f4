"""Before __consumer_offsets is replayed, every group API meets one gate (runtime
WHILE_LOADING): Heartbeat is answered NONE, as Kafka 4.x's GroupCoordinatorService answers
it; the others (SyncGroup too, in 4.x) are refused with COORDINATOR_LOAD_IN_PROGRESS, which
the dispatch site places with the API's error_response."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker import routes
from broker.broker import Broker
from broker.config import SETTINGS, load_config
from broker.context import RequestContext
from broker.handlers import (
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from broker.runtime import CoordinatorRuntime
from coordinator.config import COORDINATOR_SETTINGS, CoordinatorConfig
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest
from protocol.messages.leave_group import LeaveGroupRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_delete import OffsetDeleteRequest
from protocol.messages.offset_fetch import OffsetFetchRequest
from protocol.messages.sync_group import SyncGroupRequest

# OffsetCommit reaches the coordinator only for topics that exist (KafkaApis).
_COMMIT = [
    OffsetCommitRequestTopic(
        name="t",
        partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)],
    )
]


def _unloaded_broker(tmp_path: Path) -> Broker:
    broker = Broker(load_config(overrides={"log.dirs": str(tmp_path)}))
    broker.coordinator = CoordinatorRuntime(broker)  # not run: nothing replayed yet
    return broker


def _ctx(broker: Broker, version: int) -> RequestContext:
    return RequestContext(broker, version, "client", "/127.0.0.1", 1, routes)


async def test_heartbeat_while_loading_is_let_through(tmp_path: Path) -> None:
    broker = _unloaded_broker(tmp_path)
    request = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    response = await heartbeat.handle(_ctx(broker, 4), request)
    assert response.error_code == ErrorCode.NONE


@pytest.mark.parametrize(
    ("handler", "request_", "version"),
    [
        (
            join_group,
            JoinGroupRequest(
                group_id="g",
                session_timeout_ms=10_000,
                member_id="",
                protocol_type="consumer",
                protocols=[],
            ),
            9,
        ),
        (
            sync_group,
            SyncGroupRequest(group_id="g", generation_id=1, member_id="m", assignments=[]),
            5,
        ),
        (leave_group, LeaveGroupRequest(group_id="g", members=[]), 5),
        (offset_commit, OffsetCommitRequest(group_id="g", member_id="", topics=_COMMIT), 9),
        (offset_delete, OffsetDeleteRequest(group_id="g", topics=[]), 0),
        (delete_groups, DeleteGroupsRequest(groups_names=["g"]), 2),
        (offset_fetch, OffsetFetchRequest(group_id="g", topics=None), 7),
        (describe_groups, DescribeGroupsRequest(groups=["g"]), 5),
        (list_groups, ListGroupsRequest(), 5),
    ],
    ids=lambda v: getattr(v, "__name__", "").rsplit(".", 1)[-1] or None,
)
async def test_other_group_apis_while_loading_get_coordinator_load_in_progress(
    tmp_path: Path, handler: Any, request_: Any, version: int
) -> None:
    broker = _unloaded_broker(tmp_path)
    broker.topics.create("t", 1, {}, now_wall_ms=0)  # a commit to a missing topic is answered
    with pytest.raises(KafkaError) as e:
        await handler.handle(_ctx(broker, version), request_)
    assert e.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_the_broker_settings_default_to_the_coordinator_table() -> None:
    config = load_config()
    assert CoordinatorConfig.from_settings(config.__getitem__) == CoordinatorConfig()
    for name, setting in COORDINATOR_SETTINGS.items():
        assert SETTINGS[name].default == setting.default
    assert SETTINGS["group.initial.rebalance.delay.ms"].kafka_default == 3000
