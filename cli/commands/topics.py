"""What `kmock topics` does; its parser is `cli.topics`."""

from __future__ import annotations

import argparse
from typing import Any

from cli.commands.admin import connect
from cli.output import EXIT_OK, Failed, Output, UsageError, parse_assignments
from client import EARLIEST, LATEST, RESOURCE_TOPIC
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.describe_configs import DescribeConfigsRequest

__all__ = ["ACTIONS"]

# DescribeConfigs config_source codes (Kafka's ConfigSource).
_CONFIG_SOURCES = {
    1: "topic",
    2: "dynamic broker",
    3: "dynamic default broker",
    4: "static broker",
    5: "default",
    6: "dynamic broker logger",
}


def cmd_topics_list(args: argparse.Namespace, out: Output) -> int:
    with connect(args) as client:
        response = client.metadata(None)
    topics = sorted(
        (t for t in response.topics if not (args.exclude_internal and t.is_internal)),
        key=lambda t: t.name or "",
    )
    if args.output == "json":
        out.json(
            [
                {
                    "name": t.name,
                    "partitions": len(t.partitions),
                    "internal": t.is_internal,
                    "topic_id": str(t.topic_id),
                }
                for t in topics
            ]
        )
    else:
        out.table(
            ["TOPIC", "PARTITIONS", "INTERNAL"],
            [[t.name, len(t.partitions), t.is_internal] for t in topics],
        )
    return EXIT_OK


def _distinct(names: list[str]) -> list[str]:
    seen = set()
    for name in names:
        if name in seen:
            raise UsageError(f"topic {name!r} is named twice")
        seen.add(name)
    return names


def _refuse(verb: str, failures: list[tuple[str, int, str | None]], named: int) -> None:
    """Raise one line for the topics the broker refused; nothing was done to any."""
    if len(failures) == 1 and named == 1:
        name, code, message = failures[0]
        raise KafkaError(
            ErrorCode(code), f"{verb} topic {name!r}" + (f": {message}" if message else "")
        )
    parts = [
        f"{name!r}: {ErrorCode(code).name}" + (f" ({message})" if message else "")
        for name, code, message in failures
    ]
    raise Failed(f"cannot {verb} {'; '.join(parts)}; none of the {named} topics was changed")


def cmd_topics_create(args: argparse.Namespace, out: Output) -> int:
    names = _distinct(args.topic)
    configs = parse_assignments(args.config, "--config")
    options = {
        "num_partitions": args.partitions,
        "replication_factor": args.replication_factor,
        "configs": configs,
    }
    with connect(args) as client:
        # Every topic validated first, so that one refused topic leaves all uncreated.
        checked = client.create_topics(names, validate_only=True, **options)
        existing = {
            r.name
            for r in checked
            if args.if_not_exists and r.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        }
        _refuse_any(
            "create",
            [(r.name, r.error_code, r.error_message) for r in checked if r.name not in existing],
            len(names),
        )
        todo = [n for n in names if n not in existing]
        results = {r.name: r for r in checked}
        if todo and not args.dry_run:
            created = client.create_topics(todo, **options)
            for result in created:
                if args.if_not_exists and result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:
                    existing.add(result.name)  # created by someone else since the validation
            _refuse_any(
                "create",
                [
                    (r.name, r.error_code, r.error_message)
                    for r in created
                    if r.name not in existing
                ],
                1,
            )
            results.update({r.name: r for r in created})
    rows = [
        {
            "name": name,
            "created": name not in existing and not args.dry_run,
            "exists": name in existing,
            "dry_run": bool(args.dry_run),
            "topic_id": None if name in existing else str(results[name].topic_id),
            "partitions": None if name in existing else results[name].num_partitions,
            "replication_factor": None if name in existing else results[name].replication_factor,
        }
        for name in names
    ]
    if args.output == "json":
        out.json(rows)
        return EXIT_OK
    for r in rows:
        if r["exists"]:
            out.line(f"Topic {r['name']} already exists.")
        elif r["dry_run"]:
            out.line(
                f"Topic {r['name']} would be created with {r['partitions']} partition(s) "
                f"(dry run: nothing changed)."
            )
        else:
            out.line(f"Created topic {r['name']}.")
    return EXIT_OK


def _refuse_any(verb: str, results: list[tuple[str, int, str | None]], named: int) -> None:
    failures = [r for r in results if r[1]]
    if failures:
        _refuse(verb, failures, named)


def cmd_topics_delete(args: argparse.Namespace, out: Output) -> int:
    names = _distinct(args.topic)
    with connect(args) as client:
        found = {t.name: t.error_code for t in client.metadata(names).topics}
        missing = [
            n
            for n in names
            if found.get(n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ]
        if missing and not args.if_exists:
            _refuse(
                "delete",
                [(n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "it does not exist") for n in missing],
                len(names),
            )
        todo = [n for n in names if n not in missing]
        if todo and not args.dry_run:
            _refuse_any("delete", client.delete_topics(todo), 1)
    rows = [
        {"name": n, "deleted": n in todo and not args.dry_run, "exists": n not in missing}
        for n in names
    ]
    if args.output == "json":
        out.json(rows)
        return EXIT_OK
    for r in rows:
        if not r["exists"]:
            out.line(f"Topic {r['name']} does not exist.")
        elif args.dry_run:
            out.line(f"Topic {r['name']} would be deleted (dry run: nothing changed).")
        else:
            out.line(f"Deleted topic {r['name']}.")
    return EXIT_OK


def cmd_topics_describe(args: argparse.Namespace, out: Output) -> int:
    names = _distinct(args.topic) if args.topic else None
    with connect(args) as client:
        response = client.metadata(names)
        by_name: dict[str, Any] = {t.name: t for t in response.topics if t.name is not None}
        for name in names or []:
            code = (
                by_name[name].error_code
                if name in by_name
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise KafkaError(ErrorCode(code), f"topic {name!r} does not exist")
            if code:
                raise KafkaError(ErrorCode(code), f"topic {name!r}")
        topics: list[Any] = [
            by_name[n]
            for n in (names or sorted(by_name))
            if not (args.exclude_internal and by_name[n].is_internal)
        ]
        keys = [(t.name, p.partition_index) for t in topics for p in t.partitions]
        starts = client.list_offsets(keys, EARLIEST)
        ends = client.list_offsets(keys, LATEST)
        configs: dict[str, list[Any]] = {}
        for t in topics:
            configs[t.name] = (
                client.describe_configs(RESOURCE_TOPIC, t.name)
                if DescribeConfigsRequest.API_KEY in client.api_versions
                else []
            )
    described = [_described(t, starts, ends, configs[t.name]) for t in topics]
    if args.output == "json":
        out.json(described)
        return EXIT_OK
    for i, (topic, d) in enumerate(zip(topics, described, strict=True)):
        if i:
            out.line()
        _print_topic(out, topic, d, all_configs=args.all_configs)
    return EXIT_OK


def _described(topic: Any, starts: Any, ends: Any, configs: list[Any]) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": str(topic.topic_id),
        "internal": topic.is_internal,
        "partitions": [
            {
                "partition": p.partition_index,
                "leader": p.leader_id,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replica_nodes),
                "isr": list(p.isr_nodes),
                "log_start_offset": starts[(topic.name, p.partition_index)],
                "log_end_offset": ends[(topic.name, p.partition_index)],
            }
            for p in sorted(topic.partitions, key=lambda p: p.partition_index)
        ],
        "configs": [
            {
                "name": c.name,
                "value": c.value,
                "source": _CONFIG_SOURCES.get(c.config_source, str(c.config_source)),
            }
            for c in sorted(configs, key=lambda c: c.name)
        ],
    }


def _print_topic(out: Output, topic: Any, d: dict[str, Any], *, all_configs: bool) -> None:
    partitions = d["partitions"]
    replication = len(topic.partitions[0].replica_nodes) if topic.partitions else 0
    # kafka-topics.sh's header: the configs set on the topic itself (TopicCommand prints
    # the ones that are not defaults).
    overrides = ",".join(
        f"{c['name']}={c['value']}" for c in d["configs"] if c["source"] == "topic"
    )
    out.line(
        f"Topic: {topic.name}  TopicId: {topic.topic_id}  "
        f"PartitionCount: {len(partitions)}  ReplicationFactor: {replication}  "
        f"Configs: {overrides}"
    )
    out.table(
        ["PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START-OFFSET", "LOG-END-OFFSET"],
        [
            [
                p["partition"],
                p["leader"],
                ",".join(map(str, p["replicas"])),
                ",".join(map(str, p["isr"])),
                p["log_start_offset"],
                p["log_end_offset"],
            ]
            for p in partitions
        ],
    )
    if all_configs and d["configs"]:
        out.table(
            ["CONFIG", "VALUE", "SOURCE"],
            [[c["name"], c["value"], c["source"]] for c in d["configs"]],
            title="Configs",
        )


ACTIONS = {
    "list": cmd_topics_list,
    "create": cmd_topics_create,
    "delete": cmd_topics_delete,
    "describe": cmd_topics_describe,
}
