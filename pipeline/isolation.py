"""Isolation levels over records read from the logs: what a read_committed consumer sees.

    read_committed(df, markers)   records (schema RECORDS) of committed transactions and
                                  non-transactional batches; no transaction markers
    first_open_offsets(batches)   per partition, the first offset of the earliest open
                                  transaction (the last stable offset, when there is one)

A transactional record's fate is its producer's next transaction marker in the same
partition: COMMIT keeps it, ABORT drops it, and with no marker yet the transaction is open
and lies past the last stable offset, which a read_committed fetch does not reach (Kafka's
UnifiedLog.lastStableOffset and LogSegment.collectAbortedTxns; kmock's storage/txn_index.py
keeps the same ranges). Markers are matched by producer id alone, as Kafka's aborted
transaction index is. The pipeline finds the next marker from the records themselves,
which needs no .txnindex file and works on a copy of the .log files alone.
"""

from __future__ import annotations

from typing import Any

from protocol.records import ControlRecordType

__all__ = [
    "ISOLATION_LEVELS",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "check_isolation",
    "first_open_offsets",
    "read_committed",
]

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
ISOLATION_LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)

_COMMIT = int(ControlRecordType.COMMIT)


def check_isolation(isolation: str) -> str:
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(
            f"isolation must be one of {', '.join(ISOLATION_LEVELS)}, not {isolation!r}"
        )
    return isolation


def read_committed(df: Any, markers: Any | None = None) -> Any:
    """The rows of `df` (schema RECORDS) that a read_committed consumer is given.

    `markers` (schema RECORDS too, or None) adds control records read past the end of
    `df`'s offset range, so that a range that stops inside a transaction still finds the
    transaction's marker; only its control records are used.

    The next marker is found in one pass, newest first, with a running frame (as
    jobs._committed_transactions_only does for __consumer_offsets). Non-transactional rows
    each get a window partition of their own, so the many rows of producer id -1 (or of an
    idempotent producer) do not all land in one task.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = df
    if markers is not None:
        rows = rows.unionByName(markers.where(F.col("is_control")))
    # A control record's key is (version int16, type int16): 0 ABORT, 1 COMMIT.
    control_type = F.when(
        F.col("is_control") & (F.length("key") >= 4),
        F.conv(F.hex(F.substring("key", 3, 2)), 16, 10).cast("int"),
    )
    own = F.when(F.col("is_transactional"), F.lit(-1)).otherwise(F.col("offset"))
    newest_first = (
        Window.partitionBy("topic", "partition", "producer_id", "_own")
        .orderBy(F.col("offset").desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    outcome = F.last("_control_type", ignorenulls=True).over(newest_first)
    keep = ~F.col("is_control") & (~F.col("is_transactional") | (outcome == _COMMIT))
    return (
        rows.withColumn("_control_type", control_type)
        .withColumn("_own", own)
        .withColumn("_keep", keep)
        .where(F.col("_keep"))
        .drop("_control_type", "_own", "_keep")
    )


def first_open_offsets(batches: Any) -> Any:
    """(topic, partition, first_open_offset) of every partition with an open transaction.

    From batch headers (schema BATCHES) alone: a producer's transaction is open when it has
    a transactional data batch after its last marker in the partition. The earliest such
    batch's base offset over all producers is the partition's last stable offset (Kafka's
    ProducerStateManager.firstUndecidedOffset).
    """
    from pyspark.sql import functions as F

    keys = ["topic", "partition", "producer_id"]
    txn = batches.where(F.col("is_transactional"))
    last_marker = (
        txn.where(F.col("is_control"))
        .groupBy(*keys)
        .agg(F.max("base_offset").alias("_last_marker"))
    )
    return (
        txn.where(~F.col("is_control"))
        .join(last_marker, keys, "left")
        .where(F.col("_last_marker").isNull() | (F.col("base_offset") > F.col("_last_marker")))
        .groupBy("topic", "partition")
        .agg(F.min("base_offset").alias("first_open_offset"))
    )
