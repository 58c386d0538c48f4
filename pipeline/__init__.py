"""PySpark jobs over kmock's on-disk logs: no broker running, locally or on a cluster.

Owns: the "kmock-log" Spark data source (segment files as rows: records, batch headers,
per-segment summaries, typed __consumer_offsets rows), the jobs built on it (consumer lag,
group history, the compacted __consumer_offsets snapshot, Parquet export), the session
builder, and `kmock report ...`. Documented in docs/pipeline.md.

    segments   planning and scanning segment files; damaged bytes are skipped and reported
    offsets    __consumer_offsets records as typed rows
    source     the data source and its Arrow schemas
    jobs       lag, group_history, snapshot, export, skipped
    session    the SparkSession: local[*] by default, --master / SPARK_MASTER, spark-submit
    cli        `kmock report lag|groups|snapshot|export`; `register(subparsers)`

May import: `protocol` (record batches, compression, the __consumer_offsets and consumer
protocol codecs) and `storage`'s naming, plus pyspark, pyarrow and matplotlib (the
kmock[pipeline] extra). Must not import `broker` or `coordinator`, and nothing here may
be imported by them: the broker runs without pyspark installed. Importing this package
and `pipeline.cli` is cheap (no pyspark, no pyarrow), because `kmock` looks for
`pipeline.cli` on every run.
"""

__all__ = ["cli", "jobs", "offsets", "segments", "session", "source"]
