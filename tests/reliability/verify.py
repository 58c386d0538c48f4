"""Read everything back from a live broker and hold it against the ledger.

Reading goes through kmock's own small client (client) on purpose: it hands back the
raw batches, so every batch the broker serves is checked here (whole, CRC32C, offsets going
up), not just the records a consumer library chooses to surface.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from client import EARLIEST, LATEST, KafkaClient
from protocol.errors import ErrorCode
from protocol.records import decode_records, validate_batch
from tests.reliability.damage import TORN_PREFIX
from tests.reliability.workload import IDEMPOTENT, AckedCommit, AckedRecord


@dataclass
class PartitionContents:
    log_start_offset: int
    log_end_offset: int
    values: dict[int, str]  # offset -> value


def read_partition(client: KafkaClient, topic: str, partition: int) -> PartitionContents:
    """Every record from the log start to the log end offset, checking each served batch.

    Raises:
        AssertionError: a batch that is cut short, fails its CRC, or goes back in offsets.
    """
    tp = (topic, partition)
    start = client.list_offsets([tp], EARLIEST)[tp]
    end = client.list_offsets([tp], LATEST)[tp]
    values: dict[int, str] = {}
    offset = start
    last = start - 1
    while offset < end:
        data = client.fetch(topic, {partition: offset}, max_wait_ms=0)[partition]
        assert data.error_code == ErrorCode.NONE, (
            f"fetch {topic}-{partition}@{offset}: {ErrorCode(data.error_code).name}"
        )
        records = bytes(data.records or b"")
        assert records, f"fetch {topic}-{partition}@{offset} below the end {end} returned nothing"
        pos = 0
        while pos < len(records):
            try:
                header = validate_batch(records, pos, check_crc=True)
            except Exception as e:
                raise AssertionError(
                    f"{topic}-{partition}: the broker served a bad batch at offset {offset}: {e}"
                ) from None
            assert header.base_offset > last or header.last_offset > last, (
                f"{topic}-{partition}: batch {header.base_offset}..{header.last_offset} "
                f"after offset {last}"
            )
            for r in decode_records(records[pos : pos + header.size]):
                if r.offset < offset:
                    continue
                assert r.offset > last, f"{topic}-{partition}: offset {r.offset} after {last}"
                values[r.offset] = r.value.decode() if r.value is not None else ""
                last = r.offset
            offset = max(offset, header.next_offset)
            pos += header.size
    return PartitionContents(start, end, values)


@dataclass
class Findings:
    """What one verification found; empty lists mean the broker kept its word."""

    acked_records: int = 0
    acked_commits: int = 0
    lost_records: list[str] = field(default_factory=list)
    lost_commits: list[str] = field(default_factory=list)
    backward_commits: list[str] = field(default_factory=list)
    duplicates: dict[str, int] = field(default_factory=dict)  # producer -> duplicate records
    idempotent_duplicates: list[str] = field(default_factory=list)
    torn_served: list[str] = field(default_factory=list)  # records that only a torn tail held
    records_in_log: int = 0

    @property
    def ok(self) -> bool:
        return not (
            self.lost_records
            or self.lost_commits
            or self.backward_commits
            or self.idempotent_duplicates
            or self.torn_served
        )

    def summary(self) -> str:
        lines = [
            f"acknowledged records {self.acked_records}, lost {len(self.lost_records)}; "
            f"acknowledged commits {self.acked_commits}, lost {len(self.lost_commits)}, "
            f"went backward {len(self.backward_commits)}; "
            f"duplicates {self.duplicates}",
        ]
        for title, items in (
            ("lost records", self.lost_records),
            ("lost commits", self.lost_commits),
            ("backward commits", self.backward_commits),
            ("idempotent duplicates", self.idempotent_duplicates),
            ("served from a torn tail", self.torn_served),
        ):
            if items:
                lines.append(f"{title} (first 20 of {len(items)}):")
                lines += [f"  {x}" for x in items[:20]]
        return "\n".join(lines)


def verify(
    bootstrap: str,
    topic: str,
    partitions: int,
    groups: tuple[str, ...],
    records: list[AckedRecord],
    commits: list[AckedCommit],
    previous_committed: dict[tuple[str, str, int], int],
) -> Findings:
    """Check the live broker against acknowledgements taken *before* this call.

    `previous_committed` is what the last verification read; it is updated in place, so
    that committed offsets going backward between restarts are caught.
    """
    found = Findings(acked_records=len(records), acked_commits=len(commits))
    with KafkaClient(bootstrap, timeout_s=30) as client:
        contents = {p: read_partition(client, topic, p) for p in range(partitions)}
        committed = {g: client.committed_offsets(g) for g in groups}
    found.records_in_log = sum(len(c.values) for c in contents.values())
    for r in records:
        got = contents[r.partition].values.get(r.offset)
        if got != r.value:
            where = contents[r.partition]
            found.lost_records.append(
                f"{r.topic}-{r.partition}@{r.offset} {r.value!r}: found {got!r} "
                f"(log {where.log_start_offset}..{where.log_end_offset})"
            )
    found.torn_served = [
        f"{topic}-{p}@{o} {v!r}"
        for p, c in contents.items()
        for o, v in c.values.items()
        if v.startswith(TORN_PREFIX)
    ]
    counts = Counter(v for c in contents.values() for v in c.values.values())
    for value, n in counts.items():
        if n > 1:
            producer = value.split("-", 1)[0]
            found.duplicates[producer] = found.duplicates.get(producer, 0) + n - 1
            if producer in IDEMPOTENT:
                found.idempotent_duplicates.append(f"{value!r} written {n} times")
    best: dict[tuple[str, str, int], int] = {}
    for c in commits:
        key = (c.group, c.topic, c.partition)
        best[key] = max(best.get(key, -1), c.offset)
    for key, offset in best.items():
        group, t, p = key
        got = committed[group].get((t, p))
        have = got.offset if got is not None else -1
        if have < offset:
            found.lost_commits.append(f"{group} {t}-{p}: committed {have}, acknowledged {offset}")
    for group, offsets in committed.items():
        for (t, p), c in offsets.items():
            key = (group, t, p)
            before = previous_committed.get(key, -1)
            if c.offset < before:
                found.backward_commits.append(f"{group} {t}-{p}: {before} -> {c.offset}")
            previous_committed[key] = c.offset
    return found
