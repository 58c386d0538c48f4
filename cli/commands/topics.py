"""What `kmock topics` does; its parser is `cli.topics`."""

from __future__ import annotations

import argparse
from typing import Any

from cli.commands.admin import connect
from cli.output import EXIT_OK, Output, parse_assignments
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


def cmd_topics_create(args: argparse.Namespace, out: Output) -> int:
    configs = parse_assignments(args.config, "--config")
    with connect(args) as client:
        try:
            result = client.create_topic(
                args.topic,
                num_partitions=args.partitions,
                replication_factor=args.replication_factor,
                configs=configs,
            )
        except KafkaError as e:
            if args.if_not_exists and e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                if args.output == "json":
                    out.json({"name": args.topic, "created": False})
                else:
                    out.line(f"Topic {args.topic} already exists.")
                return EXIT_OK
            raise
    if args.output == "json":
        out.json(
            {
                "name": result.name,
                "created": True,
                "topic_id": str(result.topic_id),
                "partitions": result.num_partitions,
                "replication_factor": result.replication_factor,
            }
        )
    else:
        out.line(f"Created topic {args.topic}.")
    return EXIT_OK


def cmd_topics_delete(args: argparse.Namespace, out: Output) -> int:
    with connect(args) as client:
        try:
            client.delete_topic(args.topic)
            deleted = True
        except KafkaError as e:
            if not (args.if_exists and e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                raise
            deleted = False
    if args.output == "json":
        out.json({"name": args.topic, "deleted": deleted})
    else:
        out.line(
            f"Deleted topic {args.topic}." if deleted else f"Topic {args.topic} does not exist."
        )
    return EXIT_OK


def cmd_topics_describe(args: argparse.Namespace, out: Output) -> int:
    with connect(args) as client:
        response = client.metadata([args.topic])
        topic = next((t for t in response.topics if t.name == args.topic), None)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {args.topic!r}")
        if topic.error_code:
            raise KafkaError(ErrorCode(topic.error_code), f"topic {args.topic!r}")
        keys = [(args.topic, p.partition_index) for p in topic.partitions]
        starts = client.list_offsets(keys, EARLIEST)
        ends = client.list_offsets(keys, LATEST)
        configs = []
        if DescribeConfigsRequest.API_KEY in client.api_versions:
            configs = client.describe_configs(RESOURCE_TOPIC, args.topic)
    partitions: list[dict[str, Any]] = [
        {
            "partition": p.partition_index,
            "leader": p.leader_id,
            "leader_epoch": p.leader_epoch,
            "replicas": list(p.replica_nodes),
            "isr": list(p.isr_nodes),
            "log_start_offset": starts[(args.topic, p.partition_index)],
            "log_end_offset": ends[(args.topic, p.partition_index)],
        }
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
    ]
    config_rows = [
        {
            "name": c.name,
            "value": c.value,
            "source": _CONFIG_SOURCES.get(c.config_source, str(c.config_source)),
        }
        for c in sorted(configs, key=lambda c: c.name)
    ]
    if args.output == "json":
        out.json(
            {
                "name": topic.name,
                "topic_id": str(topic.topic_id),
                "internal": topic.is_internal,
                "partitions": partitions,
                "configs": config_rows,
            }
        )
        return EXIT_OK
    replication = len(topic.partitions[0].replica_nodes) if topic.partitions else 0
    out.line(
        f"Topic: {topic.name}  TopicId: {topic.topic_id}  "
        f"PartitionCount: {len(partitions)}  ReplicationFactor: {replication}"
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
    if config_rows:
        out.table(
            ["CONFIG", "VALUE", "SOURCE"],
            [[c["name"], c["value"], c["source"]] for c in config_rows],
            title="Configs",
        )
    return EXIT_OK


ACTIONS = {
    "list": cmd_topics_list,
    "create": cmd_topics_create,
    "delete": cmd_topics_delete,
    "describe": cmd_topics_describe,
}
