"""The running broker: the only package that awaits, opens sockets or starts tasks.

Owns: `serve()` and its nursery tree (server), the `Broker` a handler reaches through its
`RequestContext` (broker, context), the per-connection loop and the one dispatch site
(connection), the one table of APIs (routes), one handler module per API (handlers/), the
topic/partition registry and Fetch long-polls (topics), group commit (durability), the
coordinator runtime that drives the pure group coordinator (runtime), the settings (config),
what clients may take (limits: request memory, connection counts), metrics and the admin
HTTP endpoint.

May import: `protocol`, `storage` and `coordinator`, trio and the stdlib. Must not import:
`pipeline`, nor the command line and the client above it, which import the broker (the
layers contract in pyproject.toml). Inside the package nothing imports in a circle (the
acyclic-siblings contract): handlers import neither each other nor the route table, which
imports them; shared models live in their own modules (topic_configs, cluster).

This module imports nothing, so that `import broker.x` costs only `x`.
"""
