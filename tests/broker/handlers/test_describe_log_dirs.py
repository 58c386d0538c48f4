"""DescribeLogDirs against a real broker, driven by kafka-python's KafkaAdminClient (in a
worker thread) for what an admin client exposes.
"""

from __future__ import annotations

import trio
from kafka import KafkaAdminClient

from tests.broker.handlers.helpers import (
    admin,
    append_records,
    running_broker,
)


async def test_describe_log_dirs_reports_the_data_dir_and_partition_sizes(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {"num_partitions": 2}})
            append_records(broker, "t", 5)
            described = await admin(broker, KafkaAdminClient.describe_log_dirs, {"t": [0, 1, 7]})
            [reply] = described
            [log_dir] = reply["log_dirs"]
            assert log_dir["error_code"] == 0
            assert log_dir["log_dir"] == str(tmp_path.absolute())
            assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
            # Only the asked-for partitions that exist; no topic without one.
            [topic] = log_dir["topics"]
            assert topic["name"] == "t"
            sizes = {p["partition_index"]: p["partition_size"] for p in topic["partitions"]}
            assert sizes == {0: broker.topics.partition("t", 0).log.size_bytes, 1: 0}
            assert sizes[0] > 0
            every = await admin(broker, KafkaAdminClient.describe_log_dirs)
            names = {t["name"] for t in every[0]["log_dirs"][0]["topics"]}
            assert names == {"t", "__consumer_offsets"}
