"""DeleteRecords against a real broker, driven by kafka-python's KafkaAdminClient (in a worker
thread) for what an admin client exposes.
"""

from __future__ import annotations

import pytest
import trio
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import OffsetOutOfRangeError

from tests.broker.handlers.helpers import (
    admin,
    append_records,
    running_broker,
)


async def test_delete_records_moves_the_log_start_offset(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {}})
            append_records(broker, "t", 10)
            tp = TopicPartition("t", 0)
            result = await admin(broker, KafkaAdminClient.delete_records, {tp: 4})
            assert result[tp]["low_watermark"] == 4
            assert result[tp]["error_code"] == 0
            # Offsets below the log start stay where they are; -1 is the high watermark.
            assert (await admin(broker, KafkaAdminClient.delete_records, {tp: 2}))[tp][
                "low_watermark"
            ] == 4
            assert (await admin(broker, KafkaAdminClient.delete_records, {tp: -1}))[tp][
                "low_watermark"
            ] == 10
            assert broker.topics.partition("t", 0).log.log_start_offset == 10
            with pytest.raises(OffsetOutOfRangeError):
                await admin(broker, KafkaAdminClient.delete_records, {tp: 11})
            assert broker.topics.partition("t", 0).log.log_start_offset == 10
