"""OffsetManager: committed offsets, as Kafka's OffsetMetadataManager keeps them.

OffsetCommit, OffsetFetch, OffsetDelete, the deletion of a group with its offsets
(DeleteGroups and expiry both end there), and offsets.retention.minutes. A commit is
acknowledged only once its record is durable; memory changes then (`committed`), so
OffsetFetch never shows an offset that a crash could take back. Offsets are kept on the
group they belong to (`Group.offsets`), whichever group type that is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from coordinator.classic.group import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    Member,
    OffsetAndMetadata,
    TopicPartition,
    check_generation,
    member_error,
    touch,
)
from coordinator.classic.state import GroupState
from coordinator.clock import WallClock
from coordinator.config import CoordinatorConfig
from coordinator.outcome import AnyRecord, Outcome, OutcomeBuilder, Reply, RequestContext
from coordinator.records import (
    CoordinatorRecord,
    OffsetCommitRecord,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from coordinator.transactions.pending_offsets import PendingTxnOffsets
from coordinator.writes import (
    CommitWrite,
    TombstoneWrite,
    TxnCommitWrite,
    Writes,
    group_write_error,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.kept import keep
from protocol.messages import offset_delete
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)

__all__ = ["CommittedOffset", "OffsetManager"]

_S = GroupState
_E = ErrorCode

# What `_check_offset_commit` reads of a standalone commit: no member id, no instance id.
_NO_MEMBER = OffsetCommitRequest(member_id="", group_instance_id=None)

_Topic = TypeVar("_Topic", OffsetFetchResponseTopic, OffsetFetchResponseTopics)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A group's committed offset of one partition, as OffsetFetch would answer it."""

    group_id: str
    topic: str
    partition: int
    offset: int


class OffsetManager:
    def __init__(
        self,
        config: CoordinatorConfig,
        groups: dict[str, Group],
        writes: Writes,
        clock: WallClock,
    ) -> None:
        self.config = config
        self.groups = groups  # shared with the facade, which owns it
        self.writes = writes
        self.clock = clock
        # TxnOffsetCommits durable but waiting for their transaction's marker.
        self.pending_txn: PendingTxnOffsets[OffsetAndMetadata] = PendingTxnOffsets()
        # group id -> the topics its consumer group subscribes to, or None when it is not a
        # consumer group (set by the facade, which knows the consumer groups).
        self.consumer_subscriptions: Callable[[str], frozenset[str] | None] = _no_subscriptions

    # --- OffsetCommit ----------------------------------------------------------------------

    def commit_offsets(
        self,
        ctx: RequestContext,
        request: OffsetCommitRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
        *,
        standalone: bool = False,
    ) -> Outcome:
        """Write the offsets as records; memory changes only when they are durable.

        Members commit with their generation; generation -1 without a member id commits
        for a group without members (standalone consumers, admin tools), creating it if
        need be. v1: a partition's commit_timestamp other than -1 is its commit time. v2-4:
        retention_time_ms other than -1 sets an expire timestamp. v9: an unknown group with
        a generation is GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION before).

        `standalone`: commit as generation -1 without a member id or instance id, whatever
        the request says (a consumer group's commit, its member checked already).
        """
        self.clock.offset_ms = wall_ms - now_ms  # clock.seen(now_ms, wall_ms), without its call
        version = ctx.api_version
        group_id = request.group_id
        generation_id = -1 if standalone else request.generation_id_or_member_epoch
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                code = _E.GROUP_ID_NOT_FOUND if version >= 9 else _E.ILLEGAL_GENERATION
                raise KafkaError(code, f"group {group_id!r} does not exist")
            group = self.groups[group_id] = Group(group_id, _S.EMPTY, now_ms)
        # A standalone commit (generation -1 to a group without members) needs no check.
        if generation_id >= 0 or group.state is not _S.EMPTY:
            checked = _NO_MEMBER if standalone else request
            member = self._check_offset_commit(group, generation_id, checked)
            if member is not None:
                touch(member, now_ms)

        expire_ms = None
        if 2 <= version <= 4 and request.retention_time_ms != -1:
            expire_ms = wall_ms + request.retention_time_ms
        # The Outcome is built here rather than by an OutcomeBuilder, and the offset inline
        # (`_offset`'s check): the path of every commit, kept to the objects it answers with.
        # The answer is made from the request once the records are: only partitions
        # refused for their metadata (`refused`) differ from the request's shape.
        records: list[AnyRecord] = []
        refused: set[int] | None = None  # ids of the request's partitions refused
        track = self.writes.track
        pending = group.pending_offset_commits
        max_metadata = self.config.offset_metadata_max_bytes
        topics = request.topics
        for topic in topics:
            name = topic.name
            for p in topic.partitions:
                index = p.partition_index
                metadata = p.committed_metadata
                if metadata:
                    # len() bounds Java's length from below: the call only for non-ASCII text.
                    if len(metadata) > max_metadata or (
                        not metadata.isascii() and _java_length(metadata) > max_metadata
                    ):
                        refused = refused or set()
                        refused.add(id(p))
                        continue
                else:
                    metadata = ""
                # v1 may name the commit time; -1 (and every later version): now.
                fields = (
                    p.committed_offset,
                    p.committed_leader_epoch,
                    metadata,
                    wall_ms if version != 1 or p.commit_timestamp == -1 else p.commit_timestamp,
                    expire_ms,
                )
                offset = _new_offset(OffsetAndMetadata, fields)
                partition = (name, index)
                # dict.get, not Counter's `+= 1`: its __missing__ is a Python call.
                pending[partition] = pending.get(partition, 0) + 1
                record = OffsetCommitRecord(group_id, name, index, offset)
                records.append(record)
                track(record, CommitWrite(group, partition, offset, token))
        if len(records) == 1 and refused is None and len(topics) == 1:
            # One partition committed, the usual request: its answer is made once.
            response = _ONE_PARTITION_ANSWERS.get(partition)
            if response is None:
                response = _one_partition_answer(partition)
        else:
            response = OffsetCommitResponse(topics=_answer_topics(topics, refused))
        return _new_outcome(
            Outcome, ((_new_reply(Reply, (token, response)),), tuple(records), (), ())
        )

    def _offset(
        self,
        p: OffsetCommitRequestPartition | TxnOffsetCommitRequestPartition,
        commit_timestamp_ms: int,
        expire_timestamp_ms: int | None,
    ) -> OffsetAndMetadata | None:
        """The partition's offset to commit, or None when its metadata is longer than
        offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE; Kafka's
        OffsetMetadataManager.isMetadataInvalid)."""
        metadata = p.committed_metadata
        if metadata is not None and _java_length(metadata) > self.config.offset_metadata_max_bytes:
            return None
        return OffsetAndMetadata(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch,
            metadata=metadata or "",
            commit_timestamp_ms=commit_timestamp_ms,
            expire_timestamp_ms=expire_timestamp_ms,
        )

    def _check_offset_commit(
        self, group: Group, generation_id: int, request: OffsetCommitRequest
    ) -> Member | None:
        """Who may commit: the group's members with its generation, or anyone with
        generation -1 while the group has no members. Returns the committing member."""
        if group.state is _S.DEAD:
            raise KafkaError(_E.COORDINATOR_NOT_AVAILABLE, f"group {group.group_id!r} is Dead")
        if generation_id < 0 and group.state is _S.EMPTY:
            return None
        member_id, instance_id = request.member_id, request.group_instance_id
        if generation_id < 0 and not member_id and instance_id is None:
            raise KafkaError(
                _E.UNKNOWN_MEMBER_ID,
                f"group {group.group_id!r} has members: only they may commit",
            )
        error = member_error(group, member_id, instance_id)
        if error is not None:
            raise KafkaError(error, f"group {group.group_id!r}: member {member_id!r}")
        check_generation(group, generation_id)
        if group.state is _S.COMPLETING_REBALANCE:
            # The member has this generation's JoinGroup response but no assignment yet.
            raise KafkaError(_E.REBALANCE_IN_PROGRESS, f"group {group.group_id!r}")
        return group.members[member_id]

    # --- OffsetFetch -----------------------------------------------------------------------

    def fetch_offsets(
        self, ctx: RequestContext, request: OffsetFetchRequest, now_ms: int
    ) -> OffsetFetchResponse:
        """Committed offsets from memory (-1 where none). Topics None: every partition the
        group has offsets for. v8+: many groups per request. require_stable (v7+) is the
        runtime's: it answers once the commits on their way are durable (`has_pending_commits`),
        as Kafka 4.x does by running such a fetch as a write operation; UNSTABLE_OFFSET_COMMIT
        is only for partitions with pending transactional offsets (OffsetMetadataManager.
        fetchOffsets; 3.x answered it for any commit on its way)."""
        stable = ctx.api_version >= 7 and request.require_stable
        if ctx.api_version >= 8:
            return OffsetFetchResponse(
                groups=[
                    OffsetFetchResponseGroup(
                        group_id=g.group_id,
                        topics=self._fetch(
                            g.group_id,
                            _wanted(g.topics),
                            stable,
                            OffsetFetchResponseTopics,
                            OffsetFetchResponsePartitions,
                        ),
                    )
                    for g in request.groups
                ]
            )
        return OffsetFetchResponse(
            topics=self._fetch(
                request.group_id,
                _wanted(request.topics),
                stable,
                OffsetFetchResponseTopic,
                OffsetFetchResponsePartition,
            ),
            error_code=_E.NONE,
        )

    def _fetch(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int]]] | None,
        require_stable: bool,
        topic_type: Callable[..., _Topic],
        partition_type: Callable[..., object],
    ) -> list[_Topic]:
        """The answer for one group, in the response shape of the version (v8 renamed the
        nested structs; the fields are the same)."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if wanted is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(offsets):
                by_topic.setdefault(topic, []).append(partition)
            wanted = list(by_topic.items())
        result = []
        for topic, partitions in wanted:
            answers = []
            for partition in partitions:
                offset = offsets.get((topic, partition))
                if require_stable and self.pending_txn.has_pending(group_id, (topic, partition)):
                    code, offset = _E.UNSTABLE_OFFSET_COMMIT, None
                else:
                    code = _E.NONE
                answers.append(
                    partition_type(
                        partition_index=partition,
                        committed_offset=-1 if offset is None else offset.offset,
                        committed_leader_epoch=-1 if offset is None else offset.leader_epoch,
                        metadata="" if offset is None else offset.metadata,
                        error_code=code,
                    )
                )
            result.append(topic_type(name=topic, partitions=answers))
        return result

    def has_pending_commits(self, group_ids: Sequence[str]) -> bool:
        """Whether a commit of one of these groups is on its way to the log."""
        return any(
            group.pending_offset_commits
            for group_id in group_ids
            if (group := self.groups.get(group_id)) is not None
        )

    def committed(self, effect: CommitWrite) -> None:
        """The commit's record is durable: the offset takes effect (unless cancelled)."""
        if not effect.cancelled:
            _commit_done(effect)
            effect.group.offsets[effect.partition] = effect.offset

    def commit_failed(self, effect: CommitWrite) -> None:
        """The commit's record was not written: memory keeps the offset it had."""
        if not effect.cancelled:
            _commit_done(effect)

    def committed_offsets(self) -> list[CommittedOffset]:
        """Every live group's committed offsets (durable ones only), by group, then by
        topic and partition: for admin tools and metrics, which must not read `Group`."""
        return [
            CommittedOffset(group.group_id, topic, partition, committed.offset)
            for group in self.groups.values()
            if group.state is not _S.DEAD
            for (topic, partition), committed in sorted(group.offsets.items())
        ]

    def failed_commit(self, response: object, code: ErrorCode) -> OffsetCommitResponse:
        """An OffsetCommit answer whose records were not written (`code`, a storage error):
        the partitions written carry the error, those refused before keep theirs, as
        Kafka's GroupMetadataManager.storeOffsets answers (OFFSET_METADATA_TOO_LARGE stays)."""
        assert isinstance(response, OffsetCommitResponse), response
        return OffsetCommitResponse(
            topics=_failed_topics(
                response.topics, code, OffsetCommitResponseTopic, OffsetCommitResponsePartition
            )
        )

    # --- TxnOffsetCommit ----------------------------------------------------------------

    def txn_commit_offsets(
        self,
        ctx: RequestContext,
        request: TxnOffsetCommitRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
    ) -> Outcome:
        """A transactional producer commits offsets of a group (Kafka's
        OffsetMetadataManager.commitTransactionalOffset): OffsetCommit records, which the
        broker writes in a transactional batch of the producer. Once durable they are
        pending (invisible to OffsetFetch, UNSTABLE_OFFSET_COMMIT with require_stable) until
        the COMMIT marker applies them or the ABORT marker drops them.

        v0-2 carry no member: accepted whatever the group's state, as Kafka accepts
        commits of old clients (generation -1, no member id). v3+ with a member are
        checked as OffsetCommit is (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
        FENCED_INSTANCE_ID).
        """
        self.clock.seen(now_ms, wall_ms)
        group_id = request.group_id
        group = self.groups.get(group_id)
        anonymous = request.generation_id < 0 and not request.member_id
        if group is None:
            if not anonymous:
                raise KafkaError(_E.ILLEGAL_GENERATION, f"group {group_id!r} does not exist")
            group = self.groups[group_id] = Group(group_id, _S.EMPTY, now_ms)
        elif group.state is _S.DEAD:
            raise KafkaError(_E.COORDINATOR_NOT_AVAILABLE, f"group {group_id!r} is Dead")
        elif not anonymous:
            member = self._check_offset_commit(group, request.generation_id, request)  # type: ignore[arg-type]
            if member is not None:
                touch(member, now_ms)
        out = OutcomeBuilder()
        topics = []
        for topic in request.topics:
            partitions = []
            for p in topic.partitions:
                offset = self._offset(p, wall_ms, None)
                if offset is None:
                    code = _E.OFFSET_METADATA_TOO_LARGE
                else:
                    code = _E.NONE
                    self.writes.emit(
                        out,
                        offset_commit_record(group_id, topic.name, p.partition_index, offset),
                        TxnCommitWrite(
                            group_id,
                            (topic.name, p.partition_index),
                            offset,
                            request.producer_id,
                            token,
                        ),
                    )
                partitions.append(
                    TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
            topics.append(TxnOffsetCommitResponseTopic(name=topic.name, partitions=partitions))
        out.reply(token, TxnOffsetCommitResponse(topics=topics))
        return out.outcome()

    def txn_committed(self, effect: TxnCommitWrite) -> None:
        """A TxnOffsetCommit's record is durable: its offset waits for the marker.

        kmock does not keep where the record stands in the log (`record_offset` is -1): a
        COMMIT marker's offsets replace the committed ones, where Kafka keeps a plain
        OffsetCommit written between the transactional commit and its marker.
        """
        self.pending_txn.add(
            effect.producer_id, effect.group_id, effect.partition, effect.offset, -1
        )

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """The producer's COMMIT or ABORT marker is in __consumer_offsets (Kafka's
        replayEndTransactionMarker): its pending offsets become committed, or go."""
        for pending in self.pending_txn.complete(producer_id, commit):
            group = self.groups.get(pending.group_id)
            if group is None or group.state is _S.DEAD:
                continue
            group.offsets[pending.partition] = pending.offset

    def failed_txn_commit(self, response: object, code: ErrorCode) -> TxnOffsetCommitResponse:
        """A TxnOffsetCommit answer whose records were not written: as `failed_commit`."""
        assert isinstance(response, TxnOffsetCommitResponse), response
        return TxnOffsetCommitResponse(
            topics=_failed_topics(
                response.topics,
                code,
                TxnOffsetCommitResponseTopic,
                TxnOffsetCommitResponsePartition,
            )
        )

    # --- OffsetDelete, and a group's end ------------------------------------------------

    def delete_offsets(
        self, ctx: RequestContext, request: OffsetDeleteRequest, token: int, now_ms: int
    ) -> Outcome:
        """Delete committed offsets of an Empty group, or of topics a "consumer" group (of
        either protocol) does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for those it
        does)."""
        group_id = request.group_id
        if not group_id:
            raise KafkaError(_E.INVALID_GROUP_ID, "the group id is empty")
        group = self.groups.get(group_id)
        if group is None or group.state is _S.DEAD:
            raise KafkaError(_E.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")
        if group.state is not _S.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise KafkaError(_E.NON_EMPTY_GROUP, f"group {group_id!r} has members")
        out = OutcomeBuilder()
        topics = []
        eligible: dict[TopicPartition, None] = {}
        consumer_topics = self.consumer_subscriptions(group_id)  # a KIP-848 group's
        for topic in request.topics:
            if consumer_topics is not None:
                subscribed = topic.name in consumer_topics
            else:
                subscribed = group.state is not _S.EMPTY and group.is_subscribed_to_topic(
                    topic.name
                )
            code = _E.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else _E.NONE
            if not subscribed:
                eligible.update(
                    dict.fromkeys((topic.name, p.partition_index) for p in topic.partitions)
                )
            topics.append(
                OffsetDeleteResponseTopic(
                    name=topic.name,
                    partitions=[
                        OffsetDeleteResponsePartition(
                            partition_index=p.partition_index, error_code=code
                        )
                        for p in topic.partitions
                    ],
                )
            )
        removed = [
            tp for tp in eligible if tp in group.offsets or tp in group.pending_offset_commits
        ]
        tombstones = self.drop_offsets(group, removed)
        version = ctx.api_version

        def failed(error: ErrorCode) -> OffsetDeleteResponse:
            return offset_delete.error_response(request, error, version)

        if group.state is _S.EMPTY and not group.has_offsets():
            self.bury(group, tombstones, now_ms, out, (token, failed))
        else:
            self.writes.emit_all(out, tombstones, TombstoneWrite(None, (token, failed)))
        out.reply(token, OffsetDeleteResponse(error_code=_E.NONE, topics=topics))
        return out.outcome()

    def drop_offsets(
        self, group: Group, partitions: list[TopicPartition]
    ) -> list[CoordinatorRecord]:
        """Forget offsets (and cancel commits on their way); their tombstones."""
        self.writes.cancel_commits(group, partitions)
        for tp in partitions:
            group.offsets.pop(tp, None)
            group.pending_offset_commits.pop(tp, None)
        return [offset_tombstone(group.group_id, topic, p) for topic, p in partitions]

    def bury(
        self,
        group: Group,
        tombstones: list[CoordinatorRecord],
        now_ms: int,
        out: OutcomeBuilder,
        reply: tuple[int, Callable[[ErrorCode], object]] | None,
    ) -> None:
        """An Empty group without a future: Dead, with tombstones for what is left of it.

        The group tombstone is written only if a GroupMetadata record may exist (generation
        above 0), as Kafka does. The group leaves memory once the tombstones are written.
        """
        left = sorted(set(group.offsets) | set(group.pending_offset_commits))
        records = tombstones + self.drop_offsets(group, left)
        if group.generation_id > 0:
            records.append(group_tombstone(group.group_id))
        self.pending_txn.drop_group(group.group_id)
        group.pending_members.clear()
        group.join_deadline_ms = group.sync_deadline_ms = None
        group.transition_to(_S.DEAD, now_ms)
        out.dead_groups.append(group.group_id)
        if records:
            self.writes.emit_all(out, records, TombstoneWrite(group, reply))
        else:
            del self.groups[group.group_id]

    def on_topics_deleted(self, topics: set[str], now_ms: int, out: OutcomeBuilder) -> None:
        """Deleted topics take every group's offsets for them along (tombstones), as
        Kafka's OffsetMetadataManager.onPartitionsDeleted; an Empty group left with no
        offsets is Dead (Kafka's cleanupGroupMetadata, which 4.x runs on the next offset
        cleanup; here at once), so that a topic created again under the same name starts
        from auto.offset.reset."""
        for group in list(self.groups.values()):
            if group.state is _S.DEAD:
                continue
            gone = sorted(
                tp
                for tp in set(group.offsets) | set(group.pending_offset_commits)
                if tp[0] in topics
            )
            if not gone:
                continue
            tombstones = self.drop_offsets(group, gone)
            if group.state is _S.EMPTY and not group.has_offsets():
                self.bury(group, tombstones, now_ms, out, None)
            else:
                out.records.extend(tombstones)

    # --- expiry ---------------------------------------------------------------------------

    def expire_offsets(self, now_ms: int, wall_ms: int, out: OutcomeBuilder) -> None:
        """offsets.retention.minutes: tombstone expired offsets; an Empty group with no
        offsets left is Dead (Kafka's cleanupGroupMetadata)."""
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for group in list(self.groups.values()):
            if group.state is _S.DEAD:
                continue
            expired = self._expired_offsets(group, wall_ms, retention_ms)
            tombstones = self.drop_offsets(group, expired)
            # Offsets waiting for a transaction's marker keep the group, as Kafka's
            # GroupMetadata.hasOffsets counts pendingTransactionalOffsetCommits.
            if (
                group.state is _S.EMPTY
                and not group.has_offsets()
                and not self.pending_txn.has_pending(group.group_id)
            ):
                self.bury(group, tombstones, now_ms, out, None)
            else:
                out.records.extend(tombstones)

    def _expired_offsets(
        self, group: Group, wall_ms: int, retention_ms: int
    ) -> list[TopicPartition]:
        """Which offsets have outlived offsets.retention.minutes.

        Standalone commits (a group that never had members) count from their commit time.
        An Empty group's offsets count from the time it became Empty. A Stable "consumer"
        group whose subscriptions are known loses only offsets of topics it no longer
        subscribes to, counting from their commit time. Other groups keep theirs. An offset
        committed with a retention time (OffsetCommit v2-4) expires at its own time.
        """
        base_ms: int | None = None
        skip: frozenset[str] = frozenset()
        subscribed = self.consumer_subscriptions(group.group_id)
        if subscribed is not None:
            # A consumer group's offsets (ConsumerGroup.offsetExpirationCondition): those of
            # topics it subscribes to are kept, the others count from their commit time.
            skip = subscribed
        elif group.protocol_type is not None:
            if group.state is _S.EMPTY:
                base_ms = group.state_wall_ms(self.clock.offset_ms)
            elif (
                group.protocol_type == CONSUMER_PROTOCOL_TYPE
                and group.subscribed_topics is not None
                and group.state is _S.STABLE
            ):
                skip = group.subscribed_topics
            else:
                return []
        expired = []
        for tp, offset in group.offsets.items():
            if tp in group.pending_offset_commits or tp[0] in skip:
                continue
            if offset.expire_timestamp_ms is not None:
                is_expired = wall_ms >= offset.expire_timestamp_ms
            else:
                since_ms = offset.commit_timestamp_ms if base_ms is None else base_ms
                is_expired = wall_ms - since_ms >= retention_ms
            if is_expired:
                expired.append(tp)
        return expired


# --- helpers ---------------------------------------------------------------------------------


def _no_subscriptions(group_id: str) -> frozenset[str] | None:
    return None


# NamedTuples made without their Python-level __new__ (one of each per commit).
_new_offset = tuple.__new__
_new_reply = tuple.__new__
_new_outcome = tuple.__new__
# The answer of a commit of one partition, by (topic, partition): responses are immutable,
# so one object serves every such commit (at most ~10,000 kept, emptied when full).
_ONE_PARTITION_ANSWERS: dict[TopicPartition, OffsetCommitResponse] = {}
_ONE_PARTITION_ANSWERS_KEPT = 10_000


def _one_partition_answer(partition: TopicPartition) -> OffsetCommitResponse:
    topic, index = partition
    answer = OffsetCommitResponsePartition(partition_index=index, error_code=_E.NONE)
    response = OffsetCommitResponse(
        topics=[OffsetCommitResponseTopic(name=topic, partitions=[answer])]
    )
    return keep(_ONE_PARTITION_ANSWERS, partition, response, _ONE_PARTITION_ANSWERS_KEPT)


def _answer_topics(
    topics: Sequence[OffsetCommitRequestTopic], refused: set[int] | None
) -> list[OffsetCommitResponseTopic]:
    """An OffsetCommit's answer per topic: NONE, or OFFSET_METADATA_TOO_LARGE for the
    request's partitions in `refused` (by id)."""
    return [
        OffsetCommitResponseTopic(
            name=topic.name,
            partitions=[
                OffsetCommitResponsePartition(
                    partition_index=p.partition_index,
                    error_code=_E.NONE
                    if refused is None or id(p) not in refused
                    else _E.OFFSET_METADATA_TOO_LARGE,
                )
                for p in topic.partitions
            ],
        )
        for topic in topics
    ]


def _wanted(
    topics: Sequence[OffsetFetchRequestTopic | OffsetFetchRequestTopics] | None,
) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t.name, t.partition_indexes) for t in topics]


def _java_length(text: str) -> int:
    """String.length() in Java: UTF-16 code units (what offset.metadata.max.bytes counts).
    An ASCII string (almost every one: "" by default) has one per character."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _commit_done(effect: CommitWrite) -> None:
    pending = effect.group.pending_offset_commits
    left = pending.get(effect.partition, 0) - 1
    if left > 0:
        pending[effect.partition] = left
    else:  # pop, not Counter's __delitem__, a Python call
        pending.pop(effect.partition, None)


def _failed_topics(
    topics: Sequence[Any],
    code: ErrorCode,
    topic_type: Callable[..., _T],
    partition_type: Callable[..., object],
) -> list[_T]:
    """The topics of a commit answer whose records were not written: the partitions written
    carry the write error, those refused before keep theirs (OffsetCommit and
    TxnOffsetCommit answer alike)."""
    error = _offset_write_error(code)
    return [
        topic_type(
            name=t.name,
            partitions=[
                partition_type(
                    partition_index=p.partition_index,
                    error_code=error if p.error_code == _E.NONE else p.error_code,
                )
                for p in t.partitions
            ],
        )
        for t in topics
    ]


def _offset_write_error(code: ErrorCode) -> ErrorCode:
    """The same for OffsetCommit, where a record too large is INVALID_COMMIT_OFFSET_SIZE.

    We differ from Kafka for a failed disk: Kafka answers NOT_COORDINATOR (its coordinator
    may move to a healthy broker); kmock is the only broker, so it says what happened,
    KAFKA_STORAGE_ERROR, which clients treat as retriable as well.
    """
    if code in (_E.MESSAGE_TOO_LARGE, _E.RECORD_LIST_TOO_LARGE, _E.INVALID_FETCH_SIZE):
        return _E.INVALID_COMMIT_OFFSET_SIZE
    if code == _E.KAFKA_STORAGE_ERROR:
        return code
    return group_write_error(code)
