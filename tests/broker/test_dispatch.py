"""The dispatch site's per-connection state (broker.dispatch): a connection keeps one request
context per version it uses while its client id stays the same, and a request with another
client id gets a context of its own: each handler sees the client id its request carries.
Requests are timed and counted in the metrics only when something can read them.
"""

from __future__ import annotations

from pathlib import Path

import trio

from protocol.errors import ErrorCode
from protocol.frames import decode_response
from protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.reliability.inproc import create_topics_request, running
from tests.wire import WireClient, read_frame, request_bytes


def _join(group_id: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group_id,
        member_id=f"member-of-{group_id}",
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )


async def test_each_request_sees_its_own_client_id_on_one_connection(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await client.call(create_topics_request("t", 1), 5)
            # The same version each time, from three client ids in turn, then the first again.
            joins = [("g1", "first"), ("g2", "second"), ("g3", "first"), ("g4", None)]
            for n, (group_id, client_id) in enumerate(joins):
                frame = request_bytes(_join(group_id), 0, correlation_id=n, client_id=client_id)
                await client.send_raw(frame)
                got, joined = decode_response(
                    ConsumerGroupHeartbeatResponse, 0, await read_frame(client.stream)
                )
                assert (got, joined.error_code) == (n, ErrorCode.NONE)
            describe = ConsumerGroupDescribeRequest(
                group_ids=[g for g, _ in joins], include_authorized_operations=False
            )
            await client.send_raw(request_bytes(describe, 0, correlation_id=9))
            _, described = decode_response(
                ConsumerGroupDescribeResponse, 0, await read_frame(client.stream)
            )
            seen = {g.group_id: [m.client_id for m in g.members] for g in described.groups}
            assert seen == {"g1": ["first"], "g2": ["second"], "g3": ["first"], "g4": [""]}
            await client.aclose()


async def _requests_counted(tmp_path: Path, **settings: object) -> str:
    """The kmock_requests series after a CreateTopics and two Metadata requests."""
    with trio.fail_after(30):
        async with running(tmp_path, **settings) as broker:
            client = await WireClient.connect(broker)
            await client.call(create_topics_request("t", 1), 5)
            for _ in range(2):
                await client.call(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 8)
            await client.aclose()
            text = broker.metrics.render().decode()
    return "\n".join(line for line in text.splitlines() if line.startswith("kmock_requests_total"))


async def test_requests_are_timed_and_counted_with_the_admin_endpoint_only(
    tmp_path: Path,
) -> None:
    # With the admin endpoint on, /metrics serves them (and the journal keeps the times).
    counted = await _requests_counted(tmp_path / "on", **{"admin.port": 0})
    assert 'kmock_requests_total{api="Metadata",error="NONE"} 2.0' in counted
    assert 'kmock_requests_total{api="CreateTopics",error="NONE"} 1.0' in counted
    # Without it nothing can read them: requests are neither timed nor counted.
    assert await _requests_counted(tmp_path / "off") == ""
