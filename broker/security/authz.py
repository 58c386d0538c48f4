"""The authorizer of a running broker: its ACL store, the principal of each connection, and
the checks made before a request is handled (Kafka's KafkaApis, API by API).

Off unless authorizer.class.name is set (to Kafka's StandardAuthorizer or any value): then
every request below is checked, super.users pass, and allow.everyone.if.no.acl.found decides
for resources without ACLs. A denied request is answered with the API's error response
carrying the code Kafka uses (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED).

Metadata hides what the principal may not DESCRIBE, as Kafka's handleTopicMetadataRequest:
asked for all topics, they are left out; asked by name, they come back with
TOPIC_AUTHORIZATION_FAILED and nothing else (`filter_response`).

Differences from Kafka: a request is refused whole when any resource it names is denied
(Kafka answers per topic and serves the others); a topic Metadata creates (auto.create.
topics.enable) is created before it is hidden, where Kafka asks for CREATE first; the
authorized-operations fields stay unset; DescribeConfigs, AlterConfigs, ListGroups and
transactional ids are not checked.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import trio

from broker.security.acls import AclOperation, AclStore, ResourceType, authorize
from protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from broker.broker import Broker

__all__ = [
    "ANONYMOUS",
    "Authz",
    "Session",
    "authz",
    "check_request",
    "filter_response",
    "session_expired",
]

ANONYMOUS = "User:ANONYMOUS"
ACL_FILE = "acls.json"
CLUSTER = "kafka-cluster"
_STATE: WeakKeyDictionary[Any, Authz] = WeakKeyDictionary()

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TOPIC_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_FAILED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@dataclass(slots=True)
class Session:
    """A SASL connection's session: what re-authentication must keep, and when it ends."""

    listener: str
    mechanism: str
    principal: str
    expires_at: float | None  # trio time; None: never
    pending: Any = None  # the mechanism server of a re-authentication in progress


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
        self.sessions: dict[int, Session] = {}  # SASL connections, by id
        self.topic_names: Callable[[Any], str | None] = lambda topic_id: (
            t.name if (t := broker.topics.by_id.get(topic_id)) is not None else None
        )

    def start_session(
        self, connection_id: int, listener: str, mechanism: str, principal: str, lifetime_ms: int
    ) -> None:
        expires_at = trio.current_time() + lifetime_ms / 1000 if lifetime_ms else None
        self.sessions[connection_id] = Session(listener, mechanism, principal, expires_at)

    def end(self, connection_id: int) -> None:
        self.principals.pop(connection_id, None)
        self.sessions.pop(connection_id, None)

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


_REAUTH = ("SaslHandshakeRequest", "SaslAuthenticateRequest")


def session_expired(broker: Broker, connection_id: int, request: Any) -> str | None:
    """Why the connection must close before `request` (its SASL session has ended and the
    request does not re-authenticate), or None (KIP-368; Kafka's SocketServer closes it)."""
    session = authz(broker).sessions.get(connection_id)
    if session is None or session.expires_at is None:
        return None
    if type(request).__name__ in _REAUTH or trio.current_time() < session.expires_at:
        return None
    return "SASL session expired (connections.max.reauth.ms) without re-authentication"


def filter_response(
    broker: Broker, connection_id: int, client_host: str, request: Any, response: Any
) -> Any:
    """`response` with what the principal may not see taken out (Metadata's topics)."""
    state = authz(broker)
    if not state.enabled or type(response).__name__ != "MetadataResponse" or response is None:
        return response
    principal = state.principals.get(connection_id, ANONYMOUS)
    host = client_host.lstrip("/")
    explicit = request.topics is not None
    topics = []
    for t in response.topics:
        if t.name is None or state.allowed(principal, host, D, T, t.name):
            topics.append(t)
        elif explicit:
            topics.append(
                dataclasses.replace(
                    t,
                    error_code=TOPIC_FAILED,
                    topic_id=uuid.UUID(int=0),
                    is_internal=False,
                    partitions=[],
                )
            )
    return dataclasses.replace(response, topics=topics)


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
    if type(request).__name__ == "CreateTopicsRequest" and state.allowed(
        principal, host, AclOperation.CREATE, C, CLUSTER
    ):
        return  # KafkaApis: CREATE on the cluster allows every topic
    for rtype, name, op, code in rule(request, state):
        if not state.allowed(principal, host, op, rtype, name):
            raise KafkaError(code, f"{principal} may not {op.name} {rtype.name} {name}")
