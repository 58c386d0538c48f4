"""protocol.releases: the per-release table against the ApiVersions answers of real brokers
as a real client records them (kafka-python's broker_version_data, which it uses to infer a
broker's release), and the rules beside the table."""

from __future__ import annotations

import pytest
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

from protocol.messages.api_versions import ApiVersion
from protocol.releases import RELEASES, accepted, accepts, advertised, intersect

DESCRIBE_TOPIC_PARTITIONS = 75


def test_releases_are_2_1_to_4_1_in_order():
    assert RELEASES[0] == "2.1"
    assert RELEASES[-1] == "4.1"
    assert list(RELEASES) == sorted(RELEASES, key=lambda r: tuple(map(int, r.split("."))))
    assert len(RELEASES) == 8 + 10 + 2


@pytest.mark.parametrize("release", RELEASES)
def test_advertised_ranges_are_what_brokers_of_the_release_answer(release):
    recorded = dict(BROKER_API_VERSIONS[tuple(map(int, release.split(".")))])
    ours = dict(advertised(release))
    if "3.7" <= release < "4.0":  # a KRaft broker's extra key, not in the ZooKeeper recording
        assert ours.pop(DESCRIBE_TOPIC_PARTITIONS) == (0, 0)
    assert ours == recorded


def test_kafka_4_lists_produce_from_v0_and_accepts_from_v3():
    assert advertised("4.0")[0] == (0, 12)
    assert accepted("4.0")[0] == (3, 12)
    assert not accepts("4.1", 0, 2)
    assert accepts("4.1", 0, 3)
    assert accepts("3.9", 0, 0)
    assert accepts("3.9", 1, 0)
    assert not accepts("4.0", 1, 3)
    assert accepts("4.0", 1, 4)


def test_unknown_release_is_a_key_error():
    with pytest.raises(KeyError):
        accepted("5.0")


def test_intersect_cuts_ranges_and_drops_keys_the_release_lacks():
    implemented = [
        ApiVersion(api_key=0, min_version=0, max_version=11),
        ApiVersion(api_key=1, min_version=4, max_version=17),
        ApiVersion(api_key=60, min_version=0, max_version=1),  # DescribeCluster: 2.8+
    ]
    got = {(a.api_key, a.min_version, a.max_version) for a in intersect(implemented, "2.1")}
    assert got == {(0, 0, 7), (1, 4, 10)}
    got = {(a.api_key, a.min_version, a.max_version) for a in intersect(implemented, "4.1")}
    assert got == {(0, 0, 11), (1, 4, 17), (60, 0, 1)}


def test_unset_is_4_1_with_older_lower_bounds_but_not_the_old_message_formats():
    unset, latest, older = accepted(None), accepted("4.1"), accepted("3.9")
    assert {k: hi for k, (_, hi) in unset.items()} == {k: hi for k, (_, hi) in latest.items()}
    assert unset[8] == (0, 9)  # OffsetCommit: 3.9's v0 (4.1 starts at v2)
    assert unset[32] == (0, 4)  # DescribeConfigs: 3.9's v0 (4.1 starts at v1)
    assert unset[0] == (3, 13)  # Produce: message format v2 only, as in 4.1
    assert unset[1] == (4, 18)  # Fetch: the same
    assert advertised(None)[0] == (0, 13)  # KAFKA-18659
    assert unset[75] == latest[75] == (0, 0)  # only in 4.x's KRaft list: 4.1's own bound
    assert older[8] == (0, 9)
