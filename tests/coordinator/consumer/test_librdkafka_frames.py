"""The coordinator driven by the ConsumerGroupHeartbeat frames librdkafka sent
(tests/protocol/golden/librdkafka_consumer_group): join, heartbeat, leave."""

import dataclasses
from pathlib import Path

import pytest

from coordinator.consumer import ConsumerGroupCoordinator
from tests.coordinator.consumer.builders import response_of, topic
from tests.protocol.test_consumer_group_heartbeat import decode_golden

GOLDEN = Path(__file__).parents[2] / "protocol" / "golden" / "librdkafka_consumer_group"
METADATA = {t.name: t for t in (topic("golden-orders", 3), topic("golden-other", 1), topic("x", 1))}


def frames(mode: str):
    return [
        decode_golden(GOLDEN / f"{mode}_{step}.hex")[1] for step in ("join", "heartbeat", "leave")
    ]


@pytest.mark.parametrize(
    ("mode", "topics"),
    [("dynamic", {"golden-orders"}), ("static", {"golden-orders"}),
     ("regex", {"golden-orders", "golden-other"})],
)  # fmt: skip
def test_join_heartbeat_and_leave_as_librdkafka_sends_them(mode, topics):
    c = ConsumerGroupCoordinator()
    join, heartbeat, leave = frames(mode)
    joined = response_of(c.consumer_group_heartbeat(join, 0, METADATA, client_id="kmock-golden"))
    assert (joined.error_code, joined.member_id, joined.member_epoch) == (0, join.member_id, 1)
    assigned = {t.topic_id: t.partitions for t in joined.assignment.topic_partitions}
    assert assigned == {
        METADATA[name].topic_id: list(range(METADATA[name].num_partitions)) for name in topics
    }

    # The captured heartbeat reports no partitions (the stand-in assigned none): report what
    # this coordinator assigned, as the client would.
    owned = joined.assignment.topic_partitions
    beat = response_of(
        c.consumer_group_heartbeat(
            dataclasses.replace(heartbeat, topic_partitions=owned), 100, METADATA
        )
    )
    assert (beat.error_code, beat.member_epoch) == (0, 1)

    left = response_of(c.consumer_group_heartbeat(leave, 200, METADATA))
    assert left.member_epoch == leave.member_epoch
    members = c.groups["golden-group"].members
    if mode == "static":  # it will come back: it keeps its place, at epoch -2
        assert members[join.member_id].member_epoch == -2
    else:
        assert members == {}
