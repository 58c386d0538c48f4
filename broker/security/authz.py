"""The authorizer of a running broker: its ACL store, the principal of each connection, and
the checks made before a request is handled (Kafka's KafkaApis, API by API).

Off unless authorizer.class.name is set (to Kafka's StandardAuthorizer or any value): then
every request below is checked, super.users pass, and allow.everyone.if.no.acl.found decides
for resources without ACLs. A denied request is answered with the API's error response
carrying the code Kafka uses (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED).

Differences from Kafka: a request is refused whole when any resource it names is denied
(Kafka answers per topic and serves the others); Metadata does not hide unauthorized
topics; DescribeConfigs, AlterConfigs and transactional ids are not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from broker.security.acls import AclOperation, AclStore, ResourceType, authorize
from protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from broker.broker import Broker

__all__ = ["ANONYMOUS", "Authz", "authz", "check_request"]

ANONYMOUS = "User:ANONYMOUS"
ACL_FILE = "acls.json"
CLUSTER = "kafka-cluster"
_STATE: WeakKeyDictionary[Any, Authz] = WeakKeyDictionary()

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TOPIC_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_FAILED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class Authz:
    def __init__(self, broker: Broker) -> None:
        config = broker.config
        self.enabled = bool((config["authorizer.class.name"] or "").strip())
        self.super_users = frozenset(
            u.strip() for u in (config["super.users"] or "").split(";") if u.strip()
        )
        self.allow_if_no_acl: bool = config["allow.everyone.if.no.acl.found"]
        self.store = AclStore(broker.data_dir / ACL_FILE)
        self.principals: dict[int, str] = {}  # connection id -> principal (default ANONYMOUS)
        self.topic_names: Callable[[Any], str | None] = lambda topic_id: (
            t.name if (t := broker.topics.by_id.get(topic_id)) is not None else None
        )

    def allowed(
        self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        return authorize(
            self.store.bindings,
            self.super_users,
            self.allow_if_no_acl,
            principal,
            host,
            op,
            rtype,
            name,
        )


def authz(broker: Broker) -> Authz:
    state = _STATE.get(broker)
    if state is None:
        state = _STATE[broker] = Authz(broker)
    return state


# What each API needs (KafkaApis): request -> [(resource type, name, operation, error)].
Need = tuple[ResourceType, str, AclOperation, ErrorCode]


def _topics(names: Iterable[str | None], op: AclOperation) -> list[Need]:
    return [(T, n, op, TOPIC_FAILED) for n in dict.fromkeys(names) if n]


def _group(group_id: str, op: AclOperation) -> list[Need]:
    return [(G, group_id, op, GROUP_FAILED)]


def _cluster(op: AclOperation) -> list[Need]:
    return [(C, CLUSTER, op, CLUSTER_FAILED)]


R, W, D = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE

RULES: dict[str, Callable[[Any, Authz], list[Need]]] = {
    "ProduceRequest": lambda r, a: _topics((t.name for t in r.topic_data), W),
    "FetchRequest": lambda r, a: _topics(
        (t.topic or a.topic_names(t.topic_id) for t in r.topics), R
    ),
    "ListOffsetsRequest": lambda r, a: _topics((t.name for t in r.topics), D),
    "OffsetCommitRequest": lambda r, a: (
        _group(r.group_id, R) + _topics((t.name for t in r.topics), R)
    ),
    "OffsetFetchRequest": lambda r, a: (
        [n for g in r.groups for n in _group(g.group_id, D)] if r.groups else _group(r.group_id, D)
    ),
    "FindCoordinatorRequest": lambda r, a: (
        [n for k in (r.coordinator_keys or [r.key]) for n in _group(k, D)]
        if r.key_type == 0
        else []
    ),
    "JoinGroupRequest": lambda r, a: _group(r.group_id, R),
    "SyncGroupRequest": lambda r, a: _group(r.group_id, R),
    "HeartbeatRequest": lambda r, a: _group(r.group_id, R),
    "LeaveGroupRequest": lambda r, a: _group(r.group_id, R),
    "DescribeGroupsRequest": lambda r, a: [n for g in r.groups for n in _group(g, D)],
    "DeleteGroupsRequest": lambda r, a: [
        n for g in r.groups_names for n in _group(g, AclOperation.DELETE)
    ],
    "OffsetDeleteRequest": lambda r, a: _group(r.group_id, AclOperation.DELETE),
    "CreateTopicsRequest": lambda r, a: _topics((t.name for t in r.topics), AclOperation.CREATE),
    "DeleteTopicsRequest": lambda r, a: _topics(
        [*r.topic_names, *(t.name or a.topic_names(t.topic_id) for t in r.topics)],
        AclOperation.DELETE,
    ),
    "CreatePartitionsRequest": lambda r, a: _topics((t.name for t in r.topics), AclOperation.ALTER),
    "DeleteRecordsRequest": lambda r, a: _topics((t.name for t in r.topics), AclOperation.DELETE),
    "DescribeAclsRequest": lambda r, a: _cluster(D),
    "CreateAclsRequest": lambda r, a: _cluster(AclOperation.ALTER),
    "DeleteAclsRequest": lambda r, a: _cluster(AclOperation.ALTER),
    "DescribeUserScramCredentialsRequest": lambda r, a: _cluster(D),
    "AlterUserScramCredentialsRequest": lambda r, a: _cluster(AclOperation.ALTER),
}


def check_request(broker: Broker, connection_id: int, client_host: str, request: Any) -> None:
    """Raise KafkaError (the API's authorization code) if the connection's principal may not
    make `request`; nothing when allowed or when there is no authorizer."""
    state = authz(broker)
    if not state.enabled:
        return
    rule = RULES.get(type(request).__name__)
    if rule is None:
        return
    principal = state.principals.get(connection_id, ANONYMOUS)
    host = client_host.lstrip("/")
    for rtype, name, op, code in rule(request, state):
        if not state.allowed(principal, host, op, rtype, name):
            raise KafkaError(code, f"{principal} may not {op.name} {rtype.name} {name}")
