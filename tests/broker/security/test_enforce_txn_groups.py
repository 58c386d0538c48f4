"""ACLs on transactions, KIP-848 groups, and the per-topic admin APIs not covered in
test_enforce: each refusal carries Kafka's code where Kafka puts it, the rest is served.
"""

from __future__ import annotations

from pathlib import Path

import trio

from broker.security.acls import AclOperation
from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from protocol.messages.describe_producers import DescribeProducersRequest
from protocol.messages.describe_producers import TopicRequest as ProducersTopic
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from tests.broker.security.test_enforce import (
    CLUSTER,
    GROUP,
    TOPIC,
    TXN,
    D,
    R,
    W,
    acl,
    acl_broker,
    codes,
    commit,
    end_offset,
    produce,
    set_acls,
)

E = ErrorCode


async def _init(client: object, tid: str) -> tuple[int, int]:
    init = await client.call(  # type: ignore[attr-defined]
        InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), 4
    )
    assert init.error_code == E.NONE
    return init.producer_id, init.producer_epoch


def _add(tid: str, pid: int, epoch: int, *topics: str) -> AddPartitionsToTxnRequest:
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name=t, partitions=[0]) for t in topics],
    )


async def test_transactions_need_write_on_their_id_and_are_described_where_allowed(
    tmp_path: Path,
) -> None:
    setup = [acl(TXN, "tx", W), acl(TXN, "other", W), acl(TOPIC, "ok", AclOperation.ALL)]
    async with acl_broker(tmp_path, setup, "ok", "ro") as (broker, client):
        ids = {}
        for tid in ("tx", "other"):
            ids[tid] = await _init(client, tid)
            added = await client.call(_add(tid, *ids[tid], "ok"), 3)
            assert codes(
                added.results_by_topic_v3_and_below, "results_by_partition", "partition_error_code"
            ) == {"ok": [E.NONE]}
        pid, epoch = ids["tx"]
        # "tx" may write, "other" may be described only
        set_acls(
            broker,
            [acl(TXN, "tx", W), acl(TXN, "other", D), acl(TOPIC, "ok", R), acl(GROUP, "g", R)],
        )
        ended = await client.call(
            EndTxnRequest(transactional_id="other", producer_id=1, producer_epoch=0), 3
        )
        assert ended.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # WRITE on the transactional id, then READ on the group
        offsets = await client.call(
            AddOffsetsToTxnRequest(
                transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="h"
            ),
            3,
        )
        assert offsets.error_code == E.GROUP_AUTHORIZATION_FAILED
        refused = await client.call(
            AddOffsetsToTxnRequest(
                transactional_id="other", producer_id=pid, producer_epoch=epoch, group_id="g"
            ),
            3,
        )
        assert refused.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        committed = await client.call(
            TxnOffsetCommitRequest(
                transactional_id="other",
                group_id="g",
                producer_id=pid,
                producer_epoch=epoch,
                topics=[
                    TxnOffsetCommitRequestTopic(
                        name="ok",
                        partitions=[
                            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=0)
                        ],
                    )
                ],
            ),
            3,
        )
        assert codes(committed.topics) == {"ok": [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]}
        # "ok" may be read but not written any more: no partition of it joins a transaction
        added = await client.call(_add("tx", pid, epoch, "ok"), 3)
        assert codes(
            added.results_by_topic_v3_and_below, "results_by_partition", "partition_error_code"
        ) == {"ok": [E.TOPIC_AUTHORIZATION_FAILED]}
        described = await client.call(
            DescribeTransactionsRequest(transactional_ids=["tx", "other", "secret"]), 0
        )
        states = {s.transactional_id: s for s in described.transaction_states}
        assert states["secret"].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert states["other"].error_code == E.NONE
        assert [t.topic for t in states["other"].topics] == ["ok"]
        listed = await client.call(ListTransactionsRequest(), 1)
        assert sorted(s.transactional_id for s in listed.transaction_states) == ["other", "tx"]
        set_acls(broker, [acl(TXN, "tx", D)])
        listed = await client.call(ListTransactionsRequest(), 1)
        assert [s.transactional_id for s in listed.transaction_states] == ["tx"]
        described = await client.call(DescribeTransactionsRequest(transactional_ids=["other"]), 0)
        assert described.transaction_states[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # the batched form (v4+, from brokers) needs CLUSTER_ACTION
        batched = await client.call(
            AddPartitionsToTxnRequest(
                transactions=[
                    AddPartitionsToTxnTransaction(
                        transactional_id="tx",
                        producer_id=pid,
                        producer_epoch=epoch,
                        verify_only=True,
                        topics=[AddPartitionsToTxnTopic(name="ok", partitions=[0])],
                    )
                ]
            ),
            4,
        )
        assert batched.error_code == E.CLUSTER_AUTHORIZATION_FAILED


async def test_offset_apis_per_topic(tmp_path: Path) -> None:
    acls = [acl(GROUP, "g", AclOperation.ALL), acl(TOPIC, "ok", R)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (broker, client):
        done = await client.call(commit("g", "ok"), 8)
        assert codes(done.topics) == {"ok": [E.NONE]}
        set_acls(broker, [*acls, acl(TOPIC, "ro", R)])
        done = await client.call(commit("g", "ro"), 8)
        set_acls(broker, acls)
        # v1-7, every topic: only those the principal may DESCRIBE
        everything = await client.call(OffsetFetchRequest(group_id="g", topics=None), 7)
        assert [t.name for t in everything.topics] == ["ok"]
        named = await client.call(
            OffsetFetchRequest(
                group_id="g",
                topics=[
                    OffsetFetchRequestTopic(name=t, partition_indexes=[0]) for t in ("ok", "ro")
                ],
            ),
            7,
        )
        assert codes(named.topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}
        refused = await client.call(OffsetFetchRequest(group_id="h", topics=None), 7)
        assert refused.error_code == E.GROUP_AUTHORIZATION_FAILED
        deleted = await client.call(
            OffsetDeleteRequest(
                group_id="g",
                topics=[
                    OffsetDeleteRequestTopic(
                        name=t, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                    )
                    for t in ("ok", "ro")
                ],
            ),
            0,
        )
        assert deleted.error_code == E.NONE
        assert codes(deleted.topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}
        # a group error from the coordinator is the whole answer, as in Kafka
        set_acls(broker, [*acls, acl(GROUP, "nobody", AclOperation.DELETE)])
        unknown = await client.call(
            OffsetDeleteRequest(
                group_id="nobody",
                topics=[
                    OffsetDeleteRequestTopic(
                        name="ro", partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                    )
                ],
            ),
            0,
        )
        assert (unknown.error_code, unknown.topics) == (E.GROUP_ID_NOT_FOUND, [])
        set_acls(broker, acls)
        epochs = await client.call(
            OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[
                    OffsetForLeaderTopic(
                        topic=t, partitions=[OffsetForLeaderPartition(partition=0)]
                    )
                    for t in ("ok", "ro")
                ],
            ),
            4,
        )
        assert {t.topic: [p.error_code for p in t.partitions] for t in epochs.topics} == {
            "ok": [E.NONE],
            "ro": [E.TOPIC_AUTHORIZATION_FAILED],
        }
        producers = await client.call(
            DescribeProducersRequest(
                topics=[ProducersTopic(name=t, partition_indexes=[0]) for t in ("ok", "ro")]
            ),
            0,
        )
        assert codes(producers.topics) == {"ok": [E.NONE], "ro": [E.TOPIC_AUTHORIZATION_FAILED]}


async def test_partitions_and_configs_altered_per_resource(tmp_path: Path) -> None:
    acls = [acl(TOPIC, "ok", AclOperation.ALTER), acl(TOPIC, "ok", AclOperation.ALTER_CONFIGS)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (broker, client):
        grown = await client.call(
            CreatePartitionsRequest(
                topics=[
                    CreatePartitionsTopic(name=t, count=2, assignments=None) for t in ("ok", "ro")
                ],
                timeout_ms=5000,
            ),
            3,
        )
        assert {r.name: r.error_code for r in grown.results} == {
            "ok": E.NONE,
            "ro": E.TOPIC_AUTHORIZATION_FAILED,
        }
        assert (
            len(broker.topics.get("ok").partitions),
            len(broker.topics.get("ro").partitions),
        ) == (
            2,
            1,
        )
        altered = await client.call(
            AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(
                        resource_type=2,
                        resource_name=t,
                        configs=[AlterableConfig(name="retention.ms", value="1000")],
                    )
                    for t in ("ok", "ro")
                ]
                + [AlterConfigsResource(resource_type=4, resource_name="0", configs=[])]
            ),
            2,
        )
        assert {r.resource_name: r.error_code for r in altered.responses} == {
            "ok": E.NONE,
            "ro": E.TOPIC_AUTHORIZATION_FAILED,
            "0": E.CLUSTER_AUTHORIZATION_FAILED,
        }


async def test_consumer_groups_check_the_group_and_the_topics_they_show(tmp_path: Path) -> None:
    acls = [acl(GROUP, "g", R), acl(TOPIC, "ok", D)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (broker, client):

        def heartbeat(group: str, *topics: str) -> ConsumerGroupHeartbeatRequest:
            return ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id="",
                member_epoch=0,
                rebalance_timeout_ms=30000,
                subscribed_topic_names=list(topics),
                topic_partitions=[],
            )

        denied_group = await client.call(heartbeat("h", "ok"), 0)
        assert denied_group.error_code == E.GROUP_AUTHORIZATION_FAILED
        denied_topic = await client.call(heartbeat("g", "ok", "ro"), 0)
        assert denied_topic.error_code == E.TOPIC_AUTHORIZATION_FAILED
        joined = await client.call(heartbeat("g", "ok"), 0)
        assert joined.error_code == E.NONE
        described = await client.call(
            ConsumerGroupDescribeRequest(group_ids=["g", "h"], include_authorized_operations=True),
            0,
        )
        groups = {g.group_id: g for g in described.groups}
        assert groups["h"].error_code == E.GROUP_AUTHORIZATION_FAILED
        assert groups["g"].error_code == E.NONE
        assert groups["g"].authorized_operations == (1 << 3) | (1 << 8)
        # the member's topic may no longer be described: the group is not shown
        set_acls(broker, [acl(GROUP, "g", R)])
        hidden = await client.call(ConsumerGroupDescribeRequest(group_ids=["g"]), 0)
        assert hidden.groups[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
        assert hidden.groups[0].members == []


async def test_a_fetch_of_denied_topics_only_is_answered_at_once(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with acl_broker(tmp_path, [acl(CLUSTER, "kafka-cluster", D)], "ro") as (_, client):
        started = trio.current_time()
        got = await client.call(
            FetchRequest(
                replica_id=-1,
                max_wait_ms=60_000,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    FetchTopic(
                        topic="ro",
                        partitions=[
                            FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 16)
                        ],
                    )
                ],
            ),
            12,
        )
        assert trio.current_time() - started < 1
        assert [(t.topic, [p.error_code for p in t.partitions]) for t in got.responses] == [
            ("ro", [E.TOPIC_AUTHORIZATION_FAILED])
        ]


async def test_an_acks_all_produce_waiting_for_its_fsync_still_answers_each_topic(
    tmp_path: Path,
) -> None:
    async with acl_broker(
        tmp_path, [acl(TOPIC, "ok", W)], "ok", "ro", **{"kmock.durability": "strict"}
    ) as (broker, client):
        response = await client.call(produce("ok", "ro", acks=-1), 9)
        assert codes(response.responses, "partition_responses") == {
            "ok": [E.NONE],
            "ro": [E.TOPIC_AUTHORIZATION_FAILED],
        }
        assert (end_offset(broker, "ok"), end_offset(broker, "ro")) == (1, 0)
        assert broker.topics.partition("ok", 0).log.flushed_offset >= 1


async def test_write_txn_markers_needs_alter_or_cluster_action_on_the_cluster(
    tmp_path: Path,
) -> None:
    from protocol.messages.write_txn_markers import (
        WritableTxnMarker,
        WritableTxnMarkerTopic,
        WriteTxnMarkersRequest,
    )

    request = WriteTxnMarkersRequest(
        markers=[
            WritableTxnMarker(
                producer_id=42,
                producer_epoch=0,
                transaction_result=False,
                topics=[WritableTxnMarkerTopic(name="ok", partition_indexes=[0])],
                coordinator_epoch=0,
            )
        ]
    )

    def answers(response: object) -> list[int]:
        return [p.error_code for m in response.markers for t in m.topics for p in t.partitions]  # type: ignore[attr-defined]

    async with acl_broker(tmp_path, [acl(TOPIC, "ok", AclOperation.ALL)], "ok") as (
        broker,
        client,
    ):
        assert answers(await client.call(request, 1)) == [E.CLUSTER_AUTHORIZATION_FAILED]
        assert end_offset(broker, "ok") == 0
        for op in (AclOperation.ALTER, AclOperation.CLUSTER_ACTION):
            set_acls(broker, [acl(CLUSTER, "kafka-cluster", op)])
            assert answers(await client.call(request, 1)) == [E.NONE]
        assert end_offset(broker, "ok") == 2  # two ABORT markers
