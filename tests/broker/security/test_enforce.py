"""ACLs enforced per API as Kafka's KafkaApis enforces them, through real frames: each denied
topic, group, config resource or transactional id gets its own answer while the rest of the
request is served; whole-request refusals where Kafka refuses whole; Metadata creates only
with CREATE; the authorized-operations bitfields follow the ACLs.

The client connects over PLAINTEXT, so its principal is User:ANONYMOUS; every broker here
runs with an authorizer and allow.everyone.if.no.acl.found=false.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records import build_batch
from tests.reliability.inproc import T0, running
from tests.wire import WireClient, request_bytes

ME = "User:ANONYMOUS"
R, W, D = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
E = ErrorCode


def acl(rtype: int, name: str, op: int, *, deny: bool = False, prefixed: bool = False) -> dict:
    return {
        "resource_type": int(rtype),
        "resource_name": name,
        "pattern_type": 4 if prefixed else 3,
        "principal": ME,
        "host": "*",
        "operation": int(op),
        "permission_type": 2 if deny else 3,
    }


@asynccontextmanager
async def acl_broker(
    tmp_path: Path, acls: list[dict], *topics: str, **settings: Any
) -> AsyncIterator[tuple[Any, WireClient]]:
    """A broker with an authorizer and these ACLs (kept in acls.json), the topics created
    (one partition each), and a client connection."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    (data / "acls.json").write_text(json.dumps(acls))
    settings.setdefault("authorizer.class.name", "StandardAuthorizer")
    async with running(data, **settings) as broker:
        for name in topics:
            broker.topics.create(name, 1, {}, now_wall_ms=broker.wall_ms())
        client = await WireClient.connect(broker)
        try:
            yield broker, client
        finally:
            await client.aclose()


def produce(
    *topics: str,
    acks: int = 1,
    transactional_id: str | None = None,
    transactional: bool = False,
) -> ProduceRequest:
    batch = (
        build_batch(
            [(None, b"v", (), T0)],
            producer_id=7,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        if transactional
        else build_batch([(None, b"v", (), T0)])
    )
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name=t, partition_data=[PartitionProduceData(index=0, records=batch)])
            for t in topics
        ],
    )


def codes(topics: list[Any], parts: str = "partitions", code: str = "error_code") -> dict:
    return {t.name: [getattr(p, code) for p in getattr(t, parts)] for t in topics}


def end_offset(broker: Any, topic: str) -> int:
    return int(broker.topics.partition(topic, 0).log.log_end_offset)


async def test_produce_serves_the_allowed_topic_and_refuses_the_other(tmp_path: Path) -> None:
    async with acl_broker(tmp_path, [acl(TOPIC, "ok", W)], "ok", "ro") as (broker, client):
        response = await client.call(produce("ok", "ro"), 9)
        assert codes(response.responses, "partition_responses") == {
            "ok": [E.NONE],
            "ro": [E.TOPIC_AUTHORIZATION_FAILED],
        }
        assert (end_offset(broker, "ok"), end_offset(broker, "ro")) == (1, 0)
        # a name no topic has is refused as well: authorization comes before existence
        response = await client.call(produce("nowhere"), 9)
        assert codes(response.responses, "partition_responses") == {
            "nowhere": [E.TOPIC_AUTHORIZATION_FAILED]
        }


async def test_transactional_produce_needs_write_on_the_transactional_id(tmp_path: Path) -> None:
    async with acl_broker(tmp_path, [acl(TOPIC, "ok", W)], "ok") as (broker, client):
        for tid in ("tx", None):  # transactional records without an id are refused too
            request = produce("ok", transactional_id=tid, transactional=True)
            response = await client.call(request, 9)
            assert codes(response.responses, "partition_responses") == {
                "ok": [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
            }
        assert end_offset(broker, "ok") == 0


async def test_produce_with_acks_0_to_a_denied_topic_closes_the_connection(
    tmp_path: Path,
) -> None:
    async with acl_broker(tmp_path, [acl(TOPIC, "ok", W)], "ok", "ro") as (broker, client):
        await client.send_raw(request_bytes(produce("ok", "ro", acks=0), 9))
        with trio.fail_after(5):
            assert await client.is_closed_by_peer()
        assert (end_offset(broker, "ok"), end_offset(broker, "ro")) == (1, 0)


async def test_fetch_answers_each_topic_and_a_follower_needs_cluster_action(
    tmp_path: Path,
) -> None:
    async with acl_broker(tmp_path, [acl(TOPIC, "ok", R)], "ok", "ro") as (broker, client):

        def fetch(replica_id: int = -1, by_id: bool = False) -> FetchRequest:
            return FetchRequest(
                replica_id=replica_id,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    FetchTopic(
                        topic="" if by_id else t,
                        topic_id=broker.topics.get(t).topic_id,
                        partitions=[
                            FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 16)
                        ],
                    )
                    for t in ("ok", "ro")
                ],
            )

        got = await client.call(fetch(), 12)
        assert {t.topic: [p.error_code for p in t.partitions] for t in got.responses} == {
            "ok": [E.NONE],
            "ro": [E.TOPIC_AUTHORIZATION_FAILED],
        }
        ids = {broker.topics.get(t).topic_id: t for t in ("ok", "ro")}
        got = await client.call(fetch(by_id=True), 16)
        assert {ids[t.topic_id]: [p.error_code for p in t.partitions] for t in got.responses} == {
            "ok": [E.NONE],
            "ro": [E.TOPIC_AUTHORIZATION_FAILED],
        }
        follower = await client.call(fetch(replica_id=1), 12)
        assert {p.error_code for t in follower.responses for p in t.partitions} == {
            E.TOPIC_AUTHORIZATION_FAILED
        }


async def test_topic_admin_apis_answer_per_topic(tmp_path: Path) -> None:
    acls = [
        acl(TOPIC, "ok", AclOperation.ALL),
        acl(TOPIC, "new-", AclOperation.CREATE, prefixed=True),
    ]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (broker, client):
        offsets = await client.call(
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsTopic(
                        name=t, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
                    )
                    for t in ("ok", "ro")
                ],
            ),
            7,
        )
        assert codes(offsets.topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}
        records = await client.call(
            DeleteRecordsRequest(
                topics=[
                    DeleteRecordsTopic(
                        name=t, partitions=[DeleteRecordsPartition(partition_index=0, offset=0)]
                    )
                    for t in ("ok", "ro")
                ],
                timeout_ms=5000,
            ),
            2,
        )
        assert codes(records.topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}
        created = await client.call(
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                    for n in ("new-a", "other")
                ],
                timeout_ms=5000,
            ),
            7,
        )
        assert {t.name: t.error_code for t in created.topics} == {
            "new-a": E.NONE,
            "other": E.TOPIC_AUTHORIZATION_FAILED,
        }
        # new-a was created, but its configs are not shown without DESCRIBE_CONFIGS
        assert created.topics[0].topic_config_error_code == E.TOPIC_AUTHORIZATION_FAILED
        assert broker.topics.get("other") is None
        assert not (broker.data_dir / "other-0").exists()
        deleted = await client.call(
            DeleteTopicsRequest(
                topics=[DeleteTopicState(name=n) for n in ("ok", "ro")], timeout_ms=5000
            ),
            6,
        )
        assert {t.name: t.error_code for t in deleted.responses} == {
            "ok": E.NONE,
            "ro": E.TOPIC_AUTHORIZATION_FAILED,
        }
        assert broker.topics.get("ro") is not None


def commit(group: str, *topics: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=t,
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=0)],
            )
            for t in topics
        ],
    )


async def test_offsets_check_the_group_first_then_each_topic(tmp_path: Path) -> None:
    acls = [acl(GROUP, "g", R), acl(TOPIC, "ok", R)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (_broker, client):
        refused = await client.call(commit("other", "ok"), 8)
        assert codes(refused.topics) == {"ok": [E.GROUP_AUTHORIZATION_FAILED]}
        mixed = await client.call(commit("g", "ok", "ro"), 8)
        assert codes(mixed.topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}
        # v8+: each group answered on its own, each named topic too
        fetched = await client.call(
            OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id="g",
                        topics=[
                            OffsetFetchRequestTopics(name=t, partition_indexes=[0])
                            for t in ("ok", "ro")
                        ],
                    ),
                    OffsetFetchRequestGroup(group_id="other", topics=None),
                ]
            ),
            8,
        )
        groups = {g.group_id: g for g in fetched.groups}
        assert groups["other"].error_code == E.GROUP_AUTHORIZATION_FAILED
        assert codes(groups["g"].topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}
        assert groups["g"].topics[0].partitions[0].committed_offset == 0


def set_acls(broker: Any, acls: list[dict]) -> None:
    """Replace the broker's ACLs (as a restart with this acls.json would)."""
    from broker.security.acls import AclStore
    from broker.security.authz import authz

    (broker.data_dir / "acls.json").write_text(json.dumps(acls))
    authz(broker).store = AclStore(broker.data_dir / "acls.json")


async def test_groups_listed_described_and_found_only_where_allowed(tmp_path: Path) -> None:
    names = ("g", "seen", "hidden")
    setup = [acl(TOPIC, "ok", R), *(acl(GROUP, n, R) for n in names)]
    async with acl_broker(tmp_path, setup, "ok") as (broker, client):
        for group in names:  # the groups exist by their offsets
            done = await client.call(commit(group, "ok"), 8)
            assert codes(done.topics) == {"ok": [E.NONE]}
        set_acls(broker, [acl(GROUP, "g", R), acl(GROUP, "seen", D)])
        listed = await client.call(ListGroupsRequest(), 4)
        assert sorted(g.group_id for g in listed.groups) == ["g", "seen"]
        described = await client.call(
            DescribeGroupsRequest(groups=list(names), include_authorized_operations=True), 5
        )
        by_id = {g.group_id: g for g in described.groups}
        assert by_id["hidden"].error_code == E.GROUP_AUTHORIZATION_FAILED
        assert by_id["g"].error_code == E.NONE
        # READ implies DESCRIBE: bits 3 (READ) and 8 (DESCRIBE)
        assert by_id["g"].authorized_operations == (1 << 3) | (1 << 8)
        assert by_id["seen"].authorized_operations == 1 << 8
        found = await client.call(
            FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "hidden"]), 4
        )
        assert {c.key: c.error_code for c in found.coordinators} == {
            "g": E.NONE,
            "hidden": E.GROUP_AUTHORIZATION_FAILED,
        }
        txn = await client.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]), 4)
        assert txn.coordinators[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        deleted = await client.call(DeleteGroupsRequest(groups_names=["seen", "g"]), 2)
        assert {r.group_id: r.error_code for r in deleted.results} == {
            "seen": E.GROUP_AUTHORIZATION_FAILED,
            "g": E.GROUP_AUTHORIZATION_FAILED,
        }
        # DESCRIBE on the cluster lists every group
        set_acls(broker, [acl(CLUSTER, "kafka-cluster", D)])
        listed = await client.call(ListGroupsRequest(), 4)
        assert sorted(g.group_id for g in listed.groups) == sorted(names)


async def test_producer_ids_need_the_transactional_id_or_idempotent_write(
    tmp_path: Path,
) -> None:
    async with acl_broker(tmp_path, [acl(TOPIC, "ok", R)], "ok") as (_broker, client):
        txn = await client.call(
            InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), 4
        )
        assert txn.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        idempotent = await client.call(
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4
        )
        assert idempotent.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    # WRITE on any topic is enough for an idempotent producer (Kafka 3.x+), even prefixed
    acls = [acl(TOPIC, "o", W, prefixed=True), acl(TXN, "tx", W)]
    async with acl_broker(tmp_path / "b", acls, "ok", "ro") as (_broker, client):
        idempotent = await client.call(
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4
        )
        assert idempotent.error_code == E.NONE
        init = await client.call(
            InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), 4
        )
        assert init.error_code == E.NONE
        added = await client.call(
            AddPartitionsToTxnRequest(
                v3_and_below_transactional_id="tx",
                v3_and_below_producer_id=init.producer_id,
                v3_and_below_producer_epoch=init.producer_epoch,
                v3_and_below_topics=[
                    AddPartitionsToTxnTopic(name="ok", partitions=[0]),
                    AddPartitionsToTxnTopic(name="ro", partitions=[0]),
                    AddPartitionsToTxnTopic(name="oops", partitions=[0]),
                ],
            ),
            3,
        )
        assert codes(
            added.results_by_topic_v3_and_below, "results_by_partition", "partition_error_code"
        ) == {
            "ok": [E.OPERATION_NOT_ATTEMPTED],
            "ro": [E.TOPIC_AUTHORIZATION_FAILED],
            "oops": [E.UNKNOWN_TOPIC_OR_PARTITION],
        }


async def test_configs_are_checked_per_resource(tmp_path: Path) -> None:
    acls = [acl(TOPIC, "ok", AclOperation.DESCRIBE_CONFIGS)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (_broker, client):
        described = await client.call(
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(resource_type=2, resource_name="ok"),
                    DescribeConfigsResource(resource_type=2, resource_name="ro"),
                    DescribeConfigsResource(resource_type=4, resource_name="0"),
                ]
            ),
            4,
        )
        results = {r.resource_name: r for r in described.results}
        assert results["ok"].error_code == E.NONE
        assert results["ok"].configs
        assert results["ro"].error_code == E.TOPIC_AUTHORIZATION_FAILED
        assert results["0"].error_code == E.CLUSTER_AUTHORIZATION_FAILED


async def test_metadata_creates_a_topic_only_with_create(tmp_path: Path) -> None:
    acls = [acl(TOPIC, "t", D, prefixed=True), acl(TOPIC, "t-made", AclOperation.CREATE)]
    async with acl_broker(tmp_path, acls, **{"auto.create.topics.enable": True}) as (
        broker,
        client,
    ):
        response = await client.call(
            MetadataRequest(
                topics=[MetadataRequestTopic(name=n) for n in ("t-denied", "t-made")],
                allow_auto_topic_creation=True,
                include_topic_authorized_operations=True,
            ),
            12,
        )
        topics = {t.name: t for t in response.topics}
        assert topics["t-denied"].error_code == E.TOPIC_AUTHORIZATION_FAILED
        assert topics["t-denied"].topic_id == uuid.UUID(int=0)
        assert topics["t-made"].error_code == E.NONE
        assert broker.topics.get("t-denied") is None
        assert not (broker.data_dir / "t-denied-0").exists()
        assert (broker.data_dir / "t-made-0").is_dir()
        # DESCRIBE (prefixed) and CREATE (literal) on t-made: bits 5 and 8
        assert topics["t-made"].topic_authorized_operations == (1 << 5) | (1 << 8)


async def test_a_repeated_metadata_follows_the_acls(tmp_path: Path) -> None:
    # The same request bytes each time (broker.handlers.metadata keeps no answer with an
    # authorizer): an ACL created or deleted shows in the next answer.
    from protocol.messages.create_acls import AclCreation, CreateAclsRequest
    from protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest

    acls = [acl(TOPIC, "a", D), acl(CLUSTER, "kafka-cluster", AclOperation.ALTER)]
    every = MetadataRequest(topics=None)
    async with acl_broker(tmp_path, acls, "a", "b") as (_broker, client):
        assert [t.name for t in (await client.call(every, 12)).topics] == ["a"]
        assert [t.name for t in (await client.call(every, 12)).topics] == ["a"]
        grant = AclCreation(
            resource_type=TOPIC,
            resource_name="b",
            resource_pattern_type=3,
            principal=ME,
            host="*",
            operation=D,
            permission_type=3,
        )
        created = await client.call(CreateAclsRequest(creations=[grant]), 3)
        assert [r.error_code for r in created.results] == [E.NONE]
        assert [t.name for t in (await client.call(every, 12)).topics] == ["a", "b"]
        revoke = DeleteAclsFilter(
            resource_type_filter=TOPIC,
            resource_name_filter="a",
            pattern_type_filter=3,
            principal_filter=ME,
            host_filter="*",
            operation=D,
            permission_type=3,
        )
        deleted = await client.call(DeleteAclsRequest(filters=[revoke]), 3)
        assert [r.error_code for r in deleted.filter_results] == [E.NONE]
        assert [t.name for t in (await client.call(every, 12)).topics] == ["b"]


async def test_authorized_operations_follow_the_acls(tmp_path: Path) -> None:
    acls = [acl(TOPIC, "ok", R), acl(TOPIC, "ok", AclOperation.ALTER_CONFIGS)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (broker, client):
        response = await client.call(
            MetadataRequest(
                topics=None,
                include_cluster_authorized_operations=True,
                include_topic_authorized_operations=True,
            ),
            10,
        )
        assert [t.name for t in response.topics] == ["ok"]
        # READ, DESCRIBE (implied by READ), ALTER_CONFIGS, DESCRIBE_CONFIGS (implied)
        assert response.topics[0].topic_authorized_operations == sum(1 << b for b in (3, 8, 10, 11))
        assert response.cluster_authorized_operations == 0  # no DESCRIBE on the cluster
        # asked by id: the refused one keeps its id and gets no name
        ids = [broker.topics.get(n).topic_id for n in ("ro", "ok")]
        by_id = await client.call(
            MetadataRequest(topics=[MetadataRequestTopic(topic_id=i, name=None) for i in ids]), 12
        )
        assert [(t.name, t.topic_id, t.error_code) for t in by_id.topics] == [
            ("ok", ids[1], E.NONE),
            (None, ids[0], E.TOPIC_AUTHORIZATION_FAILED),
        ]
        cluster = await client.call(
            DescribeClusterRequest(include_cluster_authorized_operations=True), 1
        )
        assert cluster.cluster_authorized_operations == 0
        partitions = await client.call(
            DescribeTopicPartitionsRequest(
                topics=[TopicRequest(name="ro"), TopicRequest(name="ok")],
                response_partition_limit=100,
            ),
            0,
        )
        assert [(t.name, t.error_code) for t in partitions.topics] == [
            ("ok", E.NONE),
            ("ro", E.TOPIC_AUTHORIZATION_FAILED),
        ]
        assert partitions.topics[0].topic_authorized_operations == sum(
            1 << b for b in (3, 8, 10, 11)
        )
    acls = [acl(CLUSTER, "kafka-cluster", D), acl(CLUSTER, "kafka-cluster", AclOperation.CREATE)]
    async with acl_broker(tmp_path / "b", acls) as (_broker, client):
        cluster = await client.call(
            DescribeClusterRequest(include_cluster_authorized_operations=True), 1
        )
        assert cluster.cluster_authorized_operations == (1 << 5) | (1 << 8)


def test_authorize_by_resource_type_is_kafkas() -> None:
    from broker.security.acls import AclBinding, authorize_by_resource_type

    def b(name: str, op: int, *, deny: bool = False, prefixed: bool = False) -> AclBinding:
        return AclBinding(**acl(TOPIC, name, op, deny=deny, prefixed=prefixed))

    def any_write(bindings: list[AclBinding], open_: bool = False) -> bool:
        return authorize_by_resource_type(bindings, frozenset(), open_, ME, "127.0.0.1", W, TOPIC)

    assert not any_write([])
    assert any_write([], open_=True)  # "hardcode" has no ACL: allow.everyone.if.no.acl.found
    assert any_write([b("a", W)])
    assert any_write([b("*", AclOperation.ALL)])
    assert not any_write([b("a", R)])
    assert not any_write([b("a", W), b("a", W, deny=True)])
    assert not any_write([b("ab", W), b("a", W, deny=True, prefixed=True)])
    assert any_write([b("ab", W), b("abc", W, deny=True, prefixed=True)])
    assert not any_write([b("a", W), b("*", W, deny=True)])


async def test_every_api_with_an_authorizer_and_no_rights_answers_or_closes(
    tmp_path: Path,
) -> None:
    """Each request at its lowest and highest version, as decoded from defaults, from a
    principal with no rights: an answer (or a clean close), never an unexpected error (the
    autouse guard fails the test on a broker ERROR log)."""
    from broker.routes import all_routes
    from protocol.releases import accepts
    from tests.wire import read_frame

    async with acl_broker(tmp_path, [acl(TOPIC, "other", R)], "ok") as (broker, _):
        for route in all_routes():
            request = route.request()
            if route.name == "Produce":
                request = produce("ok", acks=1)
            versions = [v for v in route.request.VERSIONS if accepts(None, route.api_key, v)]
            for version in (versions[0], versions[-1]):
                client = await WireClient.connect(broker)
                try:
                    await client.send_raw(request_bytes(request, version))
                    with trio.fail_after(10):
                        frame = await read_frame(client.stream)
                    if route.name not in ("SaslHandshake", "SaslAuthenticate"):
                        assert frame is not None, f"{route.name} v{version}: closed"
                finally:
                    await client.aclose()
        assert end_offset(broker, "ok") == 0
