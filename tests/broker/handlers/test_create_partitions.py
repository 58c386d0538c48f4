"""CreatePartitions against a real broker, driven by kafka-python's KafkaAdminClient (in a
worker thread) for what an admin client exposes.
"""

from __future__ import annotations

from typing import Any

import trio
from kafka import KafkaAdminClient

from protocol.errors import ErrorCode
from tests.broker.handlers.helpers import (
    admin,
    by_name,
    running_broker,
)


def _partition_errors(response: Any) -> dict[str, tuple[int, str | None]]:
    return {r.name: (r.error_code, r.error_message) for r in response.results}


async def test_create_partitions_grows_topics_and_refuses_what_kafka_refuses(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(
                broker,
                KafkaAdminClient.create_topics,
                {"grow": {}, "assigned": {}, "shrink": {"num_partitions": 3}, "checked": {}},
            )
            ok = await admin(
                broker,
                KafkaAdminClient.create_partitions,
                {"grow": 3, "assigned": {"count": 2, "assignments": [[0]]}},
            )
            assert _partition_errors(ok) == {"grow": (0, None), "assigned": (0, None)}
            await admin(
                broker, KafkaAdminClient.create_partitions, {"checked": 5}, validate_only=True
            )
            refused = await admin(
                broker,
                KafkaAdminClient.create_partitions,
                {
                    "shrink": 2,
                    "grow": 3,
                    "missing": 2,
                    "__consumer_offsets": 51,
                },
                raise_errors=False,
            )
            assert _partition_errors(refused) == {
                "shrink": (
                    ErrorCode.INVALID_PARTITIONS,
                    "The topic shrink currently has 3 partition(s); 2 would not be an increase.",
                ),
                "grow": (ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partition(s)."),
                "missing": (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                ),
                "__consumer_offsets": (
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    "kmock does not add partitions to the internal topic __consumer_offsets",
                ),
            }
            counts = {
                name: len(broker.topics.get(name).partitions)
                for name in ("grow", "assigned", "shrink", "checked")
            }
            assert counts == {"grow": 3, "assigned": 2, "shrink": 3, "checked": 1}
            described = by_name(await admin(broker, KafkaAdminClient.describe_topics, ["grow"]))
            assert len(described["grow"]["partitions"]) == 3
