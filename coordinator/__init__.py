"""The group coordinator (classic protocol) as a pure, synchronous state machine.

Owns: groups, members, rebalances, committed offsets, their timers and expiry, the
__consumer_offsets record formats it writes, and replay of that log at startup.
Must not import: trio, `storage`, `broker`, or anything that reads a clock or does I/O;
time comes in as `now_ms` (monotonic) and `wall_ms` arguments.

    coordinator.py   GroupCoordinator, the facade (Kafka's GroupCoordinatorShard)
    classic/         the classic group type: state table, Group/Member, membership
    offsets.py       OffsetManager (Kafka's OffsetMetadataManager)
    writes.py        what happens once a record is durable, or is not
    outcome.py       Outcome, Reply, RequestContext: what every coordinator returns
    records.py       the __consumer_offsets records it writes
    config.py        CoordinatorConfig and the one table of its settings and defaults
    clock.py         the wall-clock time of state changes

Import from the module that owns a name: this package imports nothing, so that the broker's
settings can read `coordinator.config` without loading the coordinator.
"""
