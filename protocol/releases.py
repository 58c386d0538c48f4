"""Kafka releases 2.1 to 4.1: which versions of each API a broker of that release accepts.

`kmock serve --kafka-version X.Y` (setting `kafka.version`) makes ApiVersions advertise
exactly what a broker of release X.Y advertises, intersected with what kmock implements, and
refuses the versions outside it as that broker would (broker.routes). Clients then pick the
versions, message formats and features they use against that release.

`CHANGES` is the one table: the full list of 2.1, then for each later release only the API
keys whose (min, max) changed (None: no longer served). Each entry is what a broker of that
release answers to ApiVersions with its default settings (ZooKeeper mode up to 3.9, KRaft
from 4.0): the message JSON's "validVersions" of that release (clients/src/main/resources/
common/message in apache/kafka) less versions marked latestVersionUnstable, as ApiKeys and
ApiVersionsResponse build the list. The KIP notes in those files say which version each KIP
added, e.g. Produce v9 flexible (KIP-482, 2.8), Fetch v13 topic ids (KIP-516, 3.1), Fetch
v17 (KIP-853, 3.9), ListOffsets v10 (KIP-1075, 4.0); the ranges match the ApiVersions
answers of real brokers that kafka-python records to infer a broker's release
(kafka.protocol.broker_version_data), which tests/protocol/test_releases.py checks.

With `kafka.version` unset (None here), kmock advertises exactly what the newest release,
4.1, advertises, but keeps accepting the versions below KIP-896's new minimums that it
implements, for clients still in use that send them without asking (sarama 1.22 commits
with OffsetCommit v1 and describes configs with DescribeConfigs v0; Kafka 4.x closes the
connection on both): the accepted lower bounds are 3.9's.
The message formats v0/v1 (Produce v0-2, Fetch v0-3) are the exception: they are served only
when a release before 4.0 is chosen. `--kafka-version 4.1` gives 4.1's ranges exactly.

Two rules sit beside the table:
  * DescribeTopicPartitions (75, KIP-966) is served by KRaft brokers from 3.7, as 0-0;
    a ZooKeeper broker does not list it. kmock lists it from 3.7.
  * Kafka 4.0 removed Produce v0-2 (KIP-896) but still advertises Produce from v0, because
    librdkafka turned compression off against a broker without them (KAFKA-18659,
    ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION); a request at v0-2 is refused.
    The table holds what is accepted (3-12); `advertised` applies the rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from protocol.messages.api_versions import ApiVersion

__all__ = ["LATEST", "RELEASES", "accepted", "accepts", "advertised", "intersect"]

Ranges = dict[int, tuple[int, int]]

LATEST = "4.1"

# Kafka 4.x: Produce is advertised from this version whatever it accepts (KAFKA-18659).
_PRODUCE_ADVERTISED_MIN = 0
_PRODUCE_KEY = 0
_FETCH_KEY = 1
# With kafka.version unset: lower bounds of the last release before KIP-896, except
# the message formats v0/v1 (4.1's lower bounds for Produce and Fetch).
_LENIENT_MINIMUMS_OF = "3.9"

CHANGES: dict[str, dict[int, tuple[int, int] | None]] = {
    "2.1": {
        0: (0, 7),  # Produce
        1: (0, 10),  # Fetch
        2: (0, 4),  # ListOffsets
        3: (0, 7),  # Metadata
        4: (0, 1),  # LeaderAndIsr
        5: (0, 0),  # StopReplica
        6: (0, 4),  # UpdateMetadata
        7: (0, 1),  # ControlledShutdown
        8: (0, 6),  # OffsetCommit
        9: (0, 5),  # OffsetFetch
        10: (0, 2),  # FindCoordinator
        11: (0, 3),  # JoinGroup
        12: (0, 2),  # Heartbeat
        13: (0, 2),  # LeaveGroup
        14: (0, 2),  # SyncGroup
        15: (0, 2),  # DescribeGroups
        16: (0, 2),  # ListGroups
        17: (0, 1),  # SaslHandshake
        18: (0, 2),  # ApiVersions
        19: (0, 3),  # CreateTopics
        20: (0, 3),  # DeleteTopics
        21: (0, 1),  # DeleteRecords
        22: (0, 1),  # InitProducerId
        23: (0, 2),  # OffsetForLeaderEpoch
        24: (0, 1),  # AddPartitionsToTxn
        25: (0, 1),  # AddOffsetsToTxn
        26: (0, 1),  # EndTxn
        27: (0, 0),  # WriteTxnMarkers
        28: (0, 2),  # TxnOffsetCommit
        29: (0, 1),  # DescribeAcls
        30: (0, 1),  # CreateAcls
        31: (0, 1),  # DeleteAcls
        32: (0, 2),  # DescribeConfigs
        33: (0, 1),  # AlterConfigs
        34: (0, 1),  # AlterReplicaLogDirs
        35: (0, 1),  # DescribeLogDirs
        36: (0, 0),  # SaslAuthenticate
        37: (0, 1),  # CreatePartitions
        38: (0, 1),  # CreateDelegationToken
        39: (0, 1),  # RenewDelegationToken
        40: (0, 1),  # ExpireDelegationToken
        41: (0, 1),  # DescribeDelegationToken
        42: (0, 1),  # DeleteGroups
    },
    "2.2": {
        2: (0, 5),  # ListOffsets
        4: (0, 2),  # LeaderAndIsr
        5: (0, 1),  # StopReplica
        6: (0, 5),  # UpdateMetadata
        7: (0, 2),  # ControlledShutdown
        11: (0, 4),  # JoinGroup
        36: (0, 1),  # SaslAuthenticate
        43: (0, 0),  # ElectLeaders
    },
    "2.3": {
        1: (0, 11),  # Fetch
        3: (0, 8),  # Metadata
        8: (0, 7),  # OffsetCommit
        11: (0, 5),  # JoinGroup
        12: (0, 3),  # Heartbeat
        14: (0, 3),  # SyncGroup
        15: (0, 3),  # DescribeGroups
        23: (0, 3),  # OffsetForLeaderEpoch
        44: (0, 0),  # IncrementalAlterConfigs
    },
    "2.4": {
        0: (0, 8),  # Produce
        3: (0, 9),  # Metadata
        4: (0, 4),  # LeaderAndIsr
        5: (0, 2),  # StopReplica
        6: (0, 6),  # UpdateMetadata
        7: (0, 3),  # ControlledShutdown
        8: (0, 8),  # OffsetCommit
        9: (0, 6),  # OffsetFetch
        10: (0, 3),  # FindCoordinator
        11: (0, 6),  # JoinGroup
        12: (0, 4),  # Heartbeat
        13: (0, 4),  # LeaveGroup
        14: (0, 4),  # SyncGroup
        15: (0, 5),  # DescribeGroups
        16: (0, 3),  # ListGroups
        18: (0, 3),  # ApiVersions
        19: (0, 5),  # CreateTopics
        20: (0, 4),  # DeleteTopics
        22: (0, 2),  # InitProducerId
        38: (0, 2),  # CreateDelegationToken
        42: (0, 2),  # DeleteGroups
        43: (0, 2),  # ElectLeaders
        44: (0, 1),  # IncrementalAlterConfigs
        45: (0, 0),  # AlterPartitionReassignments
        46: (0, 0),  # ListPartitionReassignments
        47: (0, 0),  # OffsetDelete
    },
    "2.5": {
        9: (0, 7),  # OffsetFetch
        11: (0, 7),  # JoinGroup
        14: (0, 5),  # SyncGroup
        22: (0, 3),  # InitProducerId
        28: (0, 3),  # TxnOffsetCommit
        29: (0, 2),  # DescribeAcls
        30: (0, 2),  # CreateAcls
        31: (0, 2),  # DeleteAcls
        36: (0, 2),  # SaslAuthenticate
        37: (0, 2),  # CreatePartitions
        39: (0, 2),  # RenewDelegationToken
        40: (0, 2),  # ExpireDelegationToken
        41: (0, 2),  # DescribeDelegationToken
    },
    "2.6": {
        5: (0, 3),  # StopReplica
        16: (0, 4),  # ListGroups
        21: (0, 2),  # DeleteRecords
        32: (0, 3),  # DescribeConfigs
        35: (0, 2),  # DescribeLogDirs
        48: (0, 0),  # DescribeClientQuotas
        49: (0, 0),  # AlterClientQuotas
    },
    "2.7": {
        1: (0, 12),  # Fetch
        19: (0, 6),  # CreateTopics
        20: (0, 5),  # DeleteTopics
        22: (0, 4),  # InitProducerId
        24: (0, 2),  # AddPartitionsToTxn
        25: (0, 2),  # AddOffsetsToTxn
        26: (0, 2),  # EndTxn
        37: (0, 3),  # CreatePartitions
        50: (0, 0),  # DescribeUserScramCredentials
        51: (0, 0),  # AlterUserScramCredentials
        56: (0, 0),  # AlterPartition
        57: (0, 0),  # UpdateFeatures
    },
    "2.8": {
        0: (0, 9),  # Produce
        2: (0, 6),  # ListOffsets
        3: (0, 11),  # Metadata
        4: (0, 5),  # LeaderAndIsr
        6: (0, 7),  # UpdateMetadata
        19: (0, 7),  # CreateTopics
        20: (0, 6),  # DeleteTopics
        23: (0, 4),  # OffsetForLeaderEpoch
        24: (0, 3),  # AddPartitionsToTxn
        25: (0, 3),  # AddOffsetsToTxn
        26: (0, 3),  # EndTxn
        27: (0, 1),  # WriteTxnMarkers
        32: (0, 4),  # DescribeConfigs
        33: (0, 2),  # AlterConfigs
        34: (0, 2),  # AlterReplicaLogDirs
        48: (0, 1),  # DescribeClientQuotas
        49: (0, 1),  # AlterClientQuotas
        60: (0, 0),  # DescribeCluster
        61: (0, 0),  # DescribeProducers
    },
    "3.0": {
        2: (0, 7),  # ListOffsets
        9: (0, 8),  # OffsetFetch
        10: (0, 4),  # FindCoordinator
        65: (0, 0),  # DescribeTransactions
        66: (0, 0),  # ListTransactions
        67: (0, 0),  # AllocateProducerIds
    },
    "3.1": {
        1: (0, 13),  # Fetch
        3: (0, 12),  # Metadata
    },
    "3.2": {
        4: (0, 6),  # LeaderAndIsr
        11: (0, 9),  # JoinGroup
        13: (0, 5),  # LeaveGroup
        35: (0, 3),  # DescribeLogDirs
        56: (0, 1),  # AlterPartition
    },
    "3.3": {
        29: (0, 3),  # DescribeAcls
        30: (0, 3),  # CreateAcls
        31: (0, 3),  # DeleteAcls
        35: (0, 4),  # DescribeLogDirs
        38: (0, 3),  # CreateDelegationToken
        41: (0, 3),  # DescribeDelegationToken
        56: (0, 2),  # AlterPartition
        57: (0, 1),  # UpdateFeatures
    },
    "3.4": {
        4: (0, 7),  # LeaderAndIsr
        5: (0, 4),  # StopReplica
        6: (0, 8),  # UpdateMetadata
        58: (0, 0),  # Envelope
    },
    "3.5": {
        1: (0, 15),  # Fetch
        2: (0, 8),  # ListOffsets
        56: (0, 3),  # AlterPartition
    },
    "3.6": {
        24: (0, 4),  # AddPartitionsToTxn
    },
    "3.7": {
        0: (0, 10),  # Produce
        1: (0, 16),  # Fetch
        8: (0, 9),  # OffsetCommit
        9: (0, 9),  # OffsetFetch
        60: (0, 1),  # DescribeCluster
        68: (0, 0),  # ConsumerGroupHeartbeat
        75: (0, 0),  # DescribeTopicPartitions
    },
    "3.8": {
        0: (0, 11),  # Produce
        10: (0, 5),  # FindCoordinator
        16: (0, 5),  # ListGroups
        22: (0, 5),  # InitProducerId
        24: (0, 5),  # AddPartitionsToTxn
        25: (0, 4),  # AddOffsetsToTxn
        26: (0, 4),  # EndTxn
        28: (0, 4),  # TxnOffsetCommit
        66: (0, 1),  # ListTransactions
        69: (0, 0),  # ConsumerGroupDescribe
    },
    "3.9": {
        1: (0, 17),  # Fetch
        2: (0, 9),  # ListOffsets
        10: (0, 6),  # FindCoordinator
        18: (0, 4),  # ApiVersions
    },
    "4.0": {
        0: (3, 12),  # Produce
        1: (4, 17),  # Fetch
        2: (1, 10),  # ListOffsets
        3: (0, 13),  # Metadata
        4: None,  # LeaderAndIsr
        5: None,  # StopReplica
        6: None,  # UpdateMetadata
        7: None,  # ControlledShutdown
        8: (2, 9),  # OffsetCommit
        9: (1, 9),  # OffsetFetch
        11: (2, 9),  # JoinGroup
        15: (0, 6),  # DescribeGroups
        19: (2, 7),  # CreateTopics
        20: (1, 6),  # DeleteTopics
        23: (2, 4),  # OffsetForLeaderEpoch
        26: (0, 5),  # EndTxn
        27: (1, 1),  # WriteTxnMarkers
        28: (0, 5),  # TxnOffsetCommit
        29: (1, 3),  # DescribeAcls
        30: (1, 3),  # CreateAcls
        31: (1, 3),  # DeleteAcls
        32: (1, 4),  # DescribeConfigs
        34: (1, 2),  # AlterReplicaLogDirs
        35: (1, 4),  # DescribeLogDirs
        38: (1, 3),  # CreateDelegationToken
        39: (1, 2),  # RenewDelegationToken
        40: (1, 2),  # ExpireDelegationToken
        41: (1, 3),  # DescribeDelegationToken
        55: (0, 2),  # DescribeQuorum
        56: None,  # AlterPartition
        57: (0, 2),  # UpdateFeatures
        58: None,  # Envelope
        60: (0, 2),  # DescribeCluster
        64: (0, 0),  # UnregisterBroker
        67: None,  # AllocateProducerIds
        68: (0, 1),  # ConsumerGroupHeartbeat
        69: (0, 1),  # ConsumerGroupDescribe
        74: (0, 0),  # ListConfigResources
        80: (0, 0),  # AddRaftVoter
        81: (0, 0),  # RemoveRaftVoter
    },
    "4.1": {
        0: (3, 13),  # Produce
        1: (4, 18),  # Fetch
        11: (0, 9),  # JoinGroup
        45: (0, 1),  # AlterPartitionReassignments
        66: (0, 2),  # ListTransactions
        74: (0, 1),  # ListConfigResources
        76: (1, 1),  # ShareGroupHeartbeat
        77: (1, 1),  # ShareGroupDescribe
        78: (1, 1),  # ShareFetch
        79: (1, 1),  # ShareAcknowledge
        83: (0, 0),  # InitializeShareGroupState
        84: (0, 0),  # ReadShareGroupState
        85: (0, 0),  # WriteShareGroupState
        86: (0, 0),  # DeleteShareGroupState
        87: (0, 0),  # ReadShareGroupStateSummary
        90: (0, 0),  # DescribeShareGroupOffsets
        91: (0, 0),  # AlterShareGroupOffsets
        92: (0, 0),  # DeleteShareGroupOffsets
    },
}

RELEASES: tuple[str, ...] = tuple(CHANGES)


@cache
def accepted(release: str | None) -> Ranges:
    """API key -> (min, max) versions a broker of `release` accepts (None: unset, see the
    module docstring).

    Raises:
        KeyError: `release` is not one of RELEASES.
    """
    if release is None:
        older = accepted(_LENIENT_MINIMUMS_OF)
        lenient = {
            key: (older[key][0] if key in older else low, high)
            for key, (low, high) in accepted(LATEST).items()
        }
        for key in (_PRODUCE_KEY, _FETCH_KEY):
            lenient[key] = accepted(LATEST)[key]
        return lenient
    if release not in CHANGES:
        raise KeyError(release)
    ranges: Ranges = {}
    for name, changes in CHANGES.items():
        for key, span in changes.items():
            if span is None:
                ranges.pop(key, None)
            else:
                ranges[key] = span
        if name == release:
            return ranges
    raise AssertionError("unreachable")


@cache
def advertised(release: str | None) -> Ranges:
    """API key -> (min, max) versions a broker of `release` lists in ApiVersions. Unset
    (None), exactly 4.1's list: the older versions kmock keeps accepting are served to the
    clients that send them unasked, never advertised."""
    ranges = dict(accepted(release or LATEST))
    if _major_minor(release or LATEST) >= (4, 0) and _PRODUCE_KEY in ranges:
        ranges[_PRODUCE_KEY] = (_PRODUCE_ADVERTISED_MIN, ranges[_PRODUCE_KEY][1])
    return ranges


def _major_minor(release: str) -> tuple[int, int]:
    major, minor = release.split(".")
    return int(major), int(minor)


def accepts(release: str | None, api_key: int, version: int) -> bool:
    """Whether a broker of `release` accepts `version` of the API `api_key`."""
    span = accepted(release).get(api_key)
    return span is not None and span[0] <= version <= span[1]


def intersect(implemented: Iterable[ApiVersion], release: str | None) -> list[ApiVersion]:
    """ApiVersions' list under `release`: each implemented API's range cut to the release's
    advertised one; an API the release does not list, or whose ranges do not meet, is left
    out (as Kafka leaves out the APIs it does not serve)."""
    ranges = advertised(release)
    out = []
    for api in implemented:
        span = ranges.get(api.api_key)
        if span is None:
            continue
        low, high = max(api.min_version, span[0]), min(api.max_version, span[1])
        if low <= high:
            out.append(ApiVersion(api_key=api.api_key, min_version=low, max_version=high))
    return out
