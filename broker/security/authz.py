"""The authorizer of a running broker: its ACL store, the principal of each connection and
the SASL sessions (KIP-368). What each API asks of it is broker.security.apis.
broker.security.acls (the bindings, the decision) is imported when the authorizer first
decides or the ACLs are first read: the dispatch reads this module for every broker, most of
which have no authorizer (start-up time).

Off unless authorizer.class.name is set (to Kafka's StandardAuthorizer or any value): then
super.users pass, and allow.everyone.if.no.acl.found decides for resources without ACLs
(broker.security.acls).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import ref

import trio

if TYPE_CHECKING:
    from broker.broker import Broker
    from broker.security.acls import AclBinding, AclOperation, AclStore, ResourceType

__all__ = [
    "ANONYMOUS",
    "CLUSTER",
    "Authz",
    "Refused",
    "Session",
    "authz",
    "session_expired",
]

ANONYMOUS = "User:ANONYMOUS"
ACL_FILE = "acls.json"
CLUSTER = "kafka-cluster"
# Each broker's Authz, by id(broker): read twice per request (enforce and session_expired),
# so a plain dict rather than a WeakKeyDictionary (whose get is Python code); the entry
# holds the broker weakly and goes when the broker is collected.
_STATE: dict[int, tuple[ref[Any], Authz]] = {}


class Refused(Exception):
    """The request has no response to carry its refusal (Produce with acks=0): the
    connection must be closed, as Kafka's KafkaApis.handleProduceRequest closes it."""


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
        self._acl_file = broker.data_dir / ACL_FILE
        self._store: AclStore | None = None
        self.principals: dict[int, str] = {}  # connection id -> principal (default ANONYMOUS)
        self.sessions: dict[int, Session] = {}  # SASL connections, by id
        self.topic_names: Callable[[Any], str | None] = lambda topic_id: (
            t.name if (t := broker.topics.by_id.get(topic_id)) is not None else None
        )

    @property
    def store(self) -> AclStore:
        """The ACLs (<log.dirs>/acls.json), read on first use: broker.security.acls is
        imported by a broker with an authorizer, or by the first ACL request, not at start."""
        if self._store is None:
            from broker.security.acls import AclStore

            self._store = AclStore(self._acl_file)
        return self._store

    @store.setter
    def store(self, store: AclStore) -> None:
        self._store = store

    def start_session(
        self, connection_id: int, listener: str, mechanism: str, principal: str, lifetime_ms: int
    ) -> None:
        expires_at = trio.current_time() + lifetime_ms / 1000 if lifetime_ms else None
        self.sessions[connection_id] = Session(listener, mechanism, principal, expires_at)

    def end(self, connection_id: int) -> None:
        self.principals.pop(connection_id, None)
        self.sessions.pop(connection_id, None)

    def _policy(self) -> tuple[list[AclBinding], frozenset[str], bool]:
        """What every decision reads: the ACLs as they are now, super.users and
        allow.everyone.if.no.acl.found."""
        return self.store.bindings, self.super_users, self.allow_if_no_acl

    def allowed(
        self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        from broker.security.acls import authorize

        return authorize(*self._policy(), principal, host, op, rtype, name)

    def allowed_on_any(
        self, principal: str, host: str, op: AclOperation, rtype: ResourceType
    ) -> bool:
        from broker.security.acls import authorize_by_resource_type

        return authorize_by_resource_type(*self._policy(), principal, host, op, rtype)

    def describable(self, principal: str, host: str) -> Callable[[str], bool]:
        """Whether `principal` may DESCRIBE a topic (regex subscriptions resolve to those)."""
        from broker.security.acls import AclOperation, ResourceType

        describe, topic = AclOperation.DESCRIBE, ResourceType.TOPIC
        return lambda name: self.allowed(principal, host, describe, topic, name)

    def operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """The authorized-operations bitfield of a resource: Kafka's AuthHelper.
        authorizedOperations, every supported operation the principal is allowed."""
        from broker.security.acls import SUPPORTED_OPERATIONS, operations_field

        return operations_field(
            op
            for op in SUPPORTED_OPERATIONS[rtype]
            if self.allowed(principal, host, op, rtype, name)
        )


def authz(broker: Broker) -> Authz:
    entry = _STATE.get(id(broker))
    if entry is not None and entry[0]() is broker:
        return entry[1]
    key = id(broker)
    state = Authz(broker)
    _STATE[key] = (ref(broker, lambda _: _STATE.pop(key, None)), state)
    return state


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
