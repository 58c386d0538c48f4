"""kmock's own small Kafka client: one blocking socket, the message classes of `protocol`.

Owns: connecting to one broker, version negotiation, and the requests the `kmock` admin
commands, the reliability checks and the fuzzers send (`client.kafka.KafkaClient`).
It connects in plain text, over TLS, or with SASL PLAIN or SCRAM (`client.security`,
`client.sasl`). Imports only `protocol` (and the standard library); never `broker`,
`coordinator`, `storage` or trio, so that it talks to any Kafka broker exactly as it talks
to kmock.
"""

from client.kafka import (
    EARLIEST,
    LATEST,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    CommittedOffset,
    ConnectionFailed,
    KafkaClient,
    default_partition,
    parse_host_port,
)
from client.security import ClientSecurity, read_properties

__all__ = [
    "EARLIEST",
    "LATEST",
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "ClientSecurity",
    "CommittedOffset",
    "ConnectionFailed",
    "KafkaClient",
    "default_partition",
    "parse_host_port",
    "read_properties",
]
