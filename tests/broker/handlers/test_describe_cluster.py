"""DescribeCluster against a real broker, driven by kafka-python's KafkaAdminClient (in a
worker thread) for what an admin client exposes.
"""

from __future__ import annotations

import trio
from kafka import KafkaAdminClient

from tests.broker.handlers.helpers import (
    admin,
    running_broker,
)


async def test_describe_cluster_names_this_broker_as_the_whole_cluster(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            cluster = await admin(broker, KafkaAdminClient.describe_cluster)
            host, port = broker.advertised[0]
            assert cluster["cluster_id"] == broker.cluster_id
            assert cluster["controller_id"] == broker.node_id
            assert cluster["brokers"] == [
                # kafka-python asks with v2 (KIP-1073): this broker is not fenced.
                {
                    "broker_id": broker.node_id,
                    "host": host,
                    "port": port,
                    "rack": None,
                    "is_fenced": False,
                }
            ]
            assert "DESCRIBE" in cluster["authorized_operations"]
