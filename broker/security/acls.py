"""ACLs and the authorizer, as Kafka's StandardAuthorizer decides (pure and synchronous,
except `AclStore.save`).

A binding is a resource pattern (type, name, LITERAL or PREFIXED) and an entry (principal,
host, operation, ALLOW or DENY). For principal P from host H asking operation O on resource R:
  1. P in super.users: allowed.
  2. the bindings whose pattern matches R: LITERAL with R's name or "*", PREFIXED with a
     prefix of R's name; and whose principal is P or "User:*", host H or "*".
  3. any DENY among them for O (or ALL): denied. Deny wins.
  4. any ALLOW for O, ALL, or an operation implying O (READ, WRITE, DELETE and ALTER imply
     DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS): allowed.
  5. no binding at all on R (whoever it names): allow.everyone.if.no.acl.found.
  6. otherwise denied.
The bindings are kept in <log.dirs>/acls.json (Kafka keeps them in its metadata log).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import IntEnum
from pathlib import Path

__all__ = [
    "SUPPORTED_OPERATIONS",
    "AclBinding",
    "AclFilter",
    "AclOperation",
    "AclPermissionType",
    "AclStore",
    "PatternType",
    "ResourceType",
    "authorize",
    "authorize_by_resource_type",
    "operations_field",
    "validate_binding",
]

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# StandardAuthorizerData: an ALLOW for one of these also allows the key operation.
IMPLIED_BY = {
    AclOperation.DESCRIBE: {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    },
    AclOperation.DESCRIBE_CONFIGS: {AclOperation.ALTER_CONFIGS},
}


# Kafka's AclEntry.supportedOperations: the operations each resource type knows, which the
# authorized-operations bitfields (Metadata, DescribeGroups, ...) are made of.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (
        AclOperation.DESCRIBE,
        AclOperation.WRITE,
        AclOperation.TWO_PHASE_COMMIT,
    ),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


def operations_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's Utils.to32BitField: bit n set for each operation of code n."""
    return sum(1 << int(op) for op in set(operations))


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def matches_resource(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.resource_name)

    def applies_to(self, principal: str, host: str) -> bool:
        """The binding is the principal's (or every user's, User:*) from this host (or any)."""
        return self.principal in (principal, "User:*") and self.host in (host, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None (or ANY) matches everything."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def invalid(self) -> str | None:
        """Why the filter cannot match anything (Kafka's findIndefiniteField), or None."""
        for value, enum in (
            (self.resource_type, ResourceType),
            (self.pattern_type, PatternType),
            (self.operation, AclOperation),
            (self.permission_type, AclPermissionType),
        ):
            if value not in enum._value2member_map_ or value == 0:
                return f"Unknown {enum.__name__} {value}"
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and b.resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is not None and not (
                b.resource_name == self.resource_name
                or (b.pattern_type == PatternType.LITERAL and b.resource_name == WILDCARD)
                or (
                    b.pattern_type == PatternType.PREFIXED
                    and self.resource_name.startswith(b.resource_name)
                )
            ):
                return False
        else:
            if self.pattern_type != PatternType.ANY and b.pattern_type != self.pattern_type:
                return False
            if self.resource_name is not None and b.resource_name != self.resource_name:
                return False
        return (
            (self.principal is None or b.principal == self.principal)
            and (self.host is None or b.host == self.host)
            and (self.operation == AclOperation.ANY or b.operation == self.operation)
            and (
                self.permission_type == AclPermissionType.ANY
                or b.permission_type == self.permission_type
            )
        )


def validate_binding(b: AclBinding) -> str | None:
    """Why Kafka's AclControlManager.validateNewAcl refuses `b` (INVALID_REQUEST), or None."""
    if b.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN) or (
        b.resource_type not in ResourceType._value2member_map_
    ):
        return f"Invalid resourceType {b.resource_type}"
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {b.pattern_type}"
    if b.operation in (AclOperation.ANY, AclOperation.UNKNOWN) or (
        b.operation not in AclOperation._value2member_map_
    ):
        return f"Invalid operation {b.operation}"
    if b.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {b.permission_type}"
    if ":" not in b.principal:
        return (
            f"Could not parse principal from `{b.principal}` (no colon is present separating "
            "the principal type from the principal name)"
        )
    if not b.resource_name:
        return "Resource name should not be empty"
    if b.resource_type == ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    return None


def authorize(
    bindings: list[AclBinding],
    super_users: frozenset[str],
    allow_if_no_acl: bool,
    principal: str,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    resource_name: str,
) -> bool:
    """The authorizer's decision (see the module docstring)."""
    if principal in super_users:
        return True
    on_resource = [b for b in bindings if b.matches_resource(resource_type, resource_name)]
    if not on_resource:
        return allow_if_no_acl
    mine = [b for b in on_resource if b.applies_to(principal, host)]
    if any(
        b.permission_type == AclPermissionType.DENY and b.operation in (operation, AclOperation.ALL)
        for b in mine
    ):
        return False
    allowing = {operation, AclOperation.ALL} | IMPLIED_BY.get(operation, set())
    return any(
        b.permission_type == AclPermissionType.ALLOW and b.operation in allowing for b in mine
    )


def authorize_by_resource_type(
    bindings: list[AclBinding],
    super_users: frozenset[str],
    allow_if_no_acl: bool,
    principal: str,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
) -> bool:
    """Whether the principal may do `operation` on at least one resource of the type: Kafka's
    Authorizer.authorizeByResourceType (the default method, which StandardAuthorizer keeps),
    used by InitProducerId without a transactional id (WRITE on any topic).

    Kafka first asks about a resource named "hardcode", so that super users and
    allow.everyone.if.no.acl.found pass. Then, among the principal's bindings for exactly
    `operation` or ALL: a literal "*" DENY refuses; a literal "*" ALLOW allows; otherwise
    some ALLOW pattern must be neither denied literally by the same name nor lie under a
    prefixed DENY (a prefix of its name).
    """
    if authorize(
        bindings,
        super_users,
        allow_if_no_acl,
        principal,
        host,
        operation,
        resource_type,
        "hardcode",
    ):
        return True
    deny_literal: set[str] = set()
    deny_prefixed: set[str] = set()
    allow: list[tuple[int, str]] = []
    wildcard_allow = False
    for b in bindings:
        if b.resource_type != resource_type or not b.applies_to(principal, host):
            continue
        if b.operation not in (operation, AclOperation.ALL):
            continue
        if b.permission_type == AclPermissionType.DENY:
            if b.pattern_type == PatternType.LITERAL:
                if b.resource_name == WILDCARD:
                    return False
                deny_literal.add(b.resource_name)
            elif b.pattern_type == PatternType.PREFIXED:
                deny_prefixed.add(b.resource_name)
        elif b.permission_type == AclPermissionType.ALLOW:
            if b.pattern_type == PatternType.LITERAL and b.resource_name == WILDCARD:
                wildcard_allow = True
            elif b.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
                allow.append((b.pattern_type, b.resource_name))
    if wildcard_allow:
        return True
    for pattern_type, name in allow:
        if pattern_type == PatternType.LITERAL and name in deny_literal:
            continue
        if not any(name[:n] in deny_prefixed for n in range(1, len(name) + 1)):
            return True
    return False


class AclStore:
    """The bindings, in creation order, kept in `path` when given."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.bindings: list[AclBinding] = []
        if path is not None and path.exists():
            self.bindings = [AclBinding(**b) for b in json.loads(path.read_text())]

    def add(self, b: AclBinding) -> None:
        if b not in self.bindings:
            self.bindings.append(b)

    def remove(self, f: AclFilter) -> list[AclBinding]:
        removed = [b for b in self.bindings if f.matches(b)]
        self.bindings = [b for b in self.bindings if not f.matches(b)]
        return removed

    def save(self) -> None:
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump([asdict(b) for b in self.bindings], f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
