"""ACLs enforced for real clients over SASL_PLAINTEXT (PLAIN): an admin (super user) manages
them with kafka-python's KafkaAdminClient; alice may read a topic but not write it (while one
producer writes another topic she may write), and may use one group but not another;
confluent-kafka's AdminClient lists only the groups she may describe; a transactional producer
without WRITE on its transactional id is refused; Metadata creates no topic she may not
create."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as CkProducer
from confluent_kafka.admin import AdminClient as CkAdmin
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from tests.integration.harness import deadline, unique

pytestmark = pytest.mark.integration

PREFIXED = ACLResourcePatternType.PREFIXED
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-pw" user_alice="alice-pw";'
)


def _conf(broker: Any, user: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": broker.bootstrap_servers,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": f"{user}-pw",
        "request_timeout_ms": 10_000,
    }


SECURED = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
}


def _ck_conf(broker: Any, user: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-pw",
        **extra,
    }


def _allow(broker: Any, *acls: ACL) -> None:
    admin = KafkaAdminClient(**_conf(broker, "admin"))
    try:
        result = admin.create_acls(list(acls))
        assert not result["failed"], result
    finally:
        admin.close()


def _alice(op: int, rtype: int, name: str, pattern: Any = None) -> ACL:
    resource = (
        ResourcePattern(rtype, name) if pattern is None else ResourcePattern(rtype, name, pattern)
    )
    return ACL("User:alice", "*", op, ACLPermissionType.ALLOW, resource)


@deadline(90)
def test_read_but_not_write_and_a_denied_group(fresh_broker: Any) -> None:
    broker = fresh_broker(**SECURED)
    topic, group, denied = unique("acl"), unique("g"), unique("denied")
    writable = unique("aclw")
    admin = KafkaAdminClient(**_conf(broker, "admin"))
    try:
        result = admin.create_acls(
            [
                ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, writable)),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, topic)),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.GROUP, group[:4], PREFIXED)),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.DENY,
                    ResourcePattern(ResourceType.GROUP, denied)),
            ]
        )  # fmt: skip
        assert not result["failed"], result
        listed, error = admin.describe_acls(
            ACLFilter(
                "User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
                ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
            )
        )  # fmt: skip
        assert error.errno == 0
        assert len(listed) == 4
    finally:
        admin.close()

    producer = KafkaProducer(**_conf(broker, "admin"))
    producer.send(topic, key=b"k", value=b"from admin").get(timeout=10)
    producer.send(writable, key=b"k", value=b"setup").get(timeout=10)
    producer.close()

    # One producer: the topic it may only read is refused on its own, the one it may write
    # is served. Not idempotent: kafka-python 3.0 takes a refused batch as fatal to an
    # idempotent producer (librdkafka, below, does not).
    alice = KafkaProducer(**_conf(broker, "alice"), max_block_ms=5000, enable_idempotence=False)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            alice.send(topic, key=b"k", value=b"from alice").get(timeout=10)
        written = alice.send(writable, key=b"k", value=b"from alice").get(timeout=10)
        assert written.offset == 1
    finally:
        alice.close()

    consumer = KafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
        consumer_timeout_ms=15_000, **_conf(broker, "alice"),
    )  # fmt: skip
    try:
        message = next(iter(consumer))
        assert message.value == b"from admin"
        consumer.commit()
        assert consumer.committed(TopicPartition(topic, message.partition)) == 1
    finally:
        consumer.close()

    refused = KafkaConsumer(
        topic, group_id=denied, auto_offset_reset="earliest", consumer_timeout_ms=10_000,
        **_conf(broker, "alice"),
    )  # fmt: skip
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            next(iter(refused))
    finally:
        refused.close()

    admin = KafkaAdminClient(**_conf(broker, "admin"))
    try:
        deleted = admin.delete_acls(
            [ACLFilter(
                "User:alice", None, ACLOperation.ANY, ACLPermissionType.DENY,
                ResourcePatternFilter(ResourceType.GROUP, None, ACLResourcePatternType.ANY),
            )]
        )  # fmt: skip
        assert len(deleted[0][1]) == 1
    finally:
        admin.close()
    assert (broker.broker.data_dir / "acls.json").read_text().count("User:alice") == 3


@deadline(90)
def test_an_idempotent_producer_is_refused_per_topic(fresh_broker: Any) -> None:
    """confluent-kafka (idempotent: WRITE on some topic gets it a producer id, as Kafka 3.x+
    allows): the topic alice may only read fails with TOPIC_AUTHORIZATION_FAILED, the one she
    may write is served by the same producer."""
    broker = fresh_broker(**SECURED)
    readable, writable = unique("ro"), unique("rw")
    _allow(
        broker,
        _alice(ACLOperation.READ, ResourceType.TOPIC, readable),
        _alice(ACLOperation.WRITE, ResourceType.TOPIC, writable),
    )
    admin = KafkaProducer(**_conf(broker, "admin"))
    for t in (readable, writable):
        admin.send(t, value=b"setup").get(timeout=10)
    admin.close()
    outcomes: dict[str, Any] = {}

    def report(err: Any, msg: Any) -> None:
        outcomes[msg.topic()] = err

    producer = CkProducer(_ck_conf(broker, "alice", **{"enable.idempotence": True}))
    producer.produce(readable, b"from alice", on_delivery=report)
    producer.produce(writable, b"from alice", on_delivery=report)
    assert producer.flush(20) == 0
    assert outcomes[readable].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert outcomes[writable] is None
    producer.produce(writable, b"again", on_delivery=report)
    assert producer.flush(20) == 0
    assert outcomes[writable] is None


@deadline(90)
def test_list_groups_shows_only_the_groups_alice_may_describe(fresh_broker: Any) -> None:
    broker = fresh_broker(**SECURED)
    topic, seen, hidden = unique("acl"), unique("seen"), unique("hidden")
    producer = KafkaProducer(**_conf(broker, "admin"))
    producer.send(topic, value=b"v").get(timeout=10)
    producer.close()
    for group in (seen, hidden):  # the groups exist by their committed offsets
        consumer = KafkaConsumer(group_id=group, enable_auto_commit=False, **_conf(broker, "admin"))
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.commit({tp: OffsetAndMetadata(1, "", -1)})
        finally:
            consumer.close()
    _allow(broker, _alice(ACLOperation.DESCRIBE, ResourceType.GROUP, seen))

    def listed(user: str) -> set[str]:
        admin = CkAdmin(_ck_conf(broker, user))
        result = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
        assert not result.errors, result.errors
        return {g.group_id for g in result.valid}

    assert listed("alice") == {seen}
    assert {seen, hidden} <= listed("admin")


@deadline(90)
def test_a_transactional_producer_needs_write_on_its_transactional_id(
    fresh_broker: Any,
) -> None:
    broker = fresh_broker(**SECURED)
    topic = unique("acl")
    _allow(broker, _alice(ACLOperation.WRITE, ResourceType.TOPIC, topic))
    producer = CkProducer(_ck_conf(broker, "alice", **{"transactional.id": unique("tx")}))
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(15)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


@deadline(90)
def test_metadata_creates_no_topic_alice_may_not_create(fresh_broker: Any) -> None:
    broker = fresh_broker(**SECURED, **{"auto.create.topics.enable": True})
    made, refused = unique("made-"), unique("nocreate-")
    _allow(
        broker,
        _alice(ACLOperation.DESCRIBE, ResourceType.TOPIC, "made-", PREFIXED),
        _alice(ACLOperation.CREATE, ResourceType.TOPIC, "made-", PREFIXED),
        _alice(ACLOperation.DESCRIBE, ResourceType.TOPIC, "nocreate-", PREFIXED),
    )
    producer = CkProducer(_ck_conf(broker, "alice", **{"allow.auto.create.topics": True}))
    denied = producer.list_topics(topic=refused, timeout=10).topics[refused]
    assert denied.error is not None
    assert denied.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert broker.broker.topics.get(refused) is None
    assert not list(broker.broker.data_dir.glob(f"{refused}-*"))
    created = producer.list_topics(topic=made, timeout=10).topics[made]
    assert created.error is None
    assert list(broker.broker.data_dir.glob(f"{made}-*"))
