"""The machinery of broker.security.apis: one request on its way to its handler with
the principal asking (`Call`), and the ways Kafka's KafkaApis answers what is refused.

- `whole`: a check of the whole request (READ on the group of a JoinGroup, ...); a refusal
  is the API's error response with the code (KafkaError, answered by the dispatch);
- `split`: per resource (the topics of a Produce, the groups of DescribeGroups, ...): the
  handler serves the request narrowed to the allowed entries and each denied entry gets its
  own answer with the code (TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_
  FAILED), built by the API's error_response for just the denied entries. When nothing is
  allowed the handler is not called at all (Kafka answers at once: a Fetch does not wait,
  an OffsetCommit touches no group).

A Produce with acks=0 has no response to carry a refusal: Kafka closes the connection after
serving the allowed topics, and `Refused` tells the dispatch to do the same.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from broker.security.acls import AclOperation, ResourceType
from broker.security.authz import ANONYMOUS, CLUSTER, Authz, Refused, authz
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED as NOT_REQUESTED
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

__all__ = [
    "CLUSTER_FAILED",
    "DEFAULT_MESSAGES",
    "GROUP_FAILED",
    "INTERNAL_TOPICS",
    "NOT_REQUESTED",
    "TOPIC_FAILED",
    "TXN_FAILED",
    "ZERO_UUID",
    "C",
    "Call",
    "ErrorResponse",
    "G",
    "Handler",
    "Message",
    "Op",
    "Refused",
    "T",
    "Verdict",
    "X",
    "merged",
    "split",
    "topics_verdict",
    "whole",
    "with_items",
]

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
X = ResourceType.TRANSACTIONAL_ID
Op = AclOperation
TOPIC_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_FAILED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_FAILED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
INTERNAL_TOPICS = frozenset((OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC))
ZERO_UUID = uuid.UUID(int=0)
# Kafka's Errors default messages, the error_message of a refusal built from
# `new ApiError(code)` (ControllerApis.deleteTopics, KafkaApis.handleDescribeConfigsRequest, ...).
DEFAULT_MESSAGES = {
    TOPIC_FAILED: "Topic authorization failed.",
    GROUP_FAILED: "Group authorization failed.",
    CLUSTER_FAILED: "Cluster authorization failed.",
    TXN_FAILED: "Transactional Id authorization failed.",
}

Handler = Callable[[Any, Any], Awaitable[Any]]
ErrorResponse = Callable[[Any, ErrorCode, int], Any]
Verdict = Callable[[Any], ErrorCode | None]  # an entry -> None (allowed) or its code
Message = Callable[[ErrorCode], str | None]  # a refusal's code -> its error_message


class Call:
    """One request on its way to its handler, and the principal asking."""

    __slots__ = ("ctx", "error_response", "handler", "host", "principal", "request", "state")

    def __init__(
        self, ctx: Any, request: Any, handler: Handler, error_response: ErrorResponse
    ) -> None:
        self.ctx = ctx
        self.request = request
        self.handler = handler
        self.error_response = error_response
        self.state: Authz = authz(ctx.broker)
        self.principal = self.state.principals.get(ctx.connection_id, ANONYMOUS)
        self.host = ctx.client_host.lstrip("/")

    @property
    def version(self) -> int:
        return int(self.ctx.api_version)

    def may(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self.state.allowed(self.principal, self.host, op, rtype, name)

    def require(self, op: AclOperation, rtype: ResourceType, name: str, code: ErrorCode) -> None:
        if not self.may(op, rtype, name):
            raise KafkaError(code, f"{self.principal} may not {op.name} {rtype.name} {name}")

    def operations(self, rtype: ResourceType, name: str) -> int:
        return self.state.operations(self.principal, self.host, rtype, name)

    def topic(self, op: AclOperation, name: str | None, topic_id: Any = None) -> ErrorCode | None:
        """TOPIC_AUTHORIZATION_FAILED unless `op` is allowed on the topic (named, or by id;
        an id no topic has is left to the handler, which answers UNKNOWN_TOPIC_ID)."""
        if not name and topic_id is not None:
            name = self.state.topic_names(topic_id)
        if not name:
            return None
        return None if self.may(op, T, name) else TOPIC_FAILED

    async def serve(self, request: Any = None) -> Any:
        return await self.handler(self.ctx, self.request if request is None else request)

    def refusal(self, request: Any, code: ErrorCode) -> Any:
        return self.error_response(request, code, self.version)


# --- serving the allowed part -------------------------------------------------------------


def with_items(request: Any, field: str, items: list[Any]) -> Any:
    return dataclasses.replace(request, **{field: items})


def merged(response: Any, field: str, extra: list[Any]) -> Any:
    """`response` with `extra` entries added to its list `field`."""
    if response is None:
        raise Refused("a Produce with acks=0 named a topic the principal may not WRITE")
    finish = getattr(response, "finish", None)
    if finish is not None:  # a Deferred (broker.handlers): merge once it is ready

        async def finish_merged() -> Any:
            return merged(await finish(), field, extra)

        return type(response)(finish_merged)
    return dataclasses.replace(response, **{field: [*getattr(response, field), *extra]})


async def split(
    c: Call,
    field: str,
    verdict: Verdict,
    answer_field: str,
    *,
    entries: Callable[[Any, ErrorCode], list[Any]] | None = None,
    message: Message | None = None,
) -> Any:
    """Serve the entries of `request.<field>` that `verdict` allows; answer each other one
    with its code in the response's `answer_field` (the API's error_response for the denied
    entries, or `entries(denied_request, code)` where that does not carry them), and with
    `message(code)` as its error_message where Kafka sends one. With none allowed the
    handler is not called."""
    request = c.request
    items = getattr(request, field)
    codes = [verdict(item) for item in items]
    if not any(codes):
        return await c.serve(request)
    denied: dict[ErrorCode, list[Any]] = {}
    for item, code in zip(items, codes, strict=True):
        if code is not None:
            denied.setdefault(code, []).append(item)
    extra: list[Any] = []
    for code, group in denied.items():
        narrowed = with_items(request, field, group)
        refused = (
            entries(narrowed, code)
            if entries is not None
            else getattr(c.refusal(narrowed, code), answer_field)
        )
        if message is not None:
            text = message(code)
            refused = [dataclasses.replace(e, error_message=text) for e in refused]
        extra += refused
    allowed = [item for item, code in zip(items, codes, strict=True) if code is None]
    if allowed:
        response = await c.serve(with_items(request, field, allowed))
    elif getattr(request, "acks", None) == 0:
        raise Refused("a Produce with acks=0 named only topics the principal may not WRITE")
    else:
        response = c.refusal(with_items(request, field, []), ErrorCode.NONE)
    return merged(response, answer_field, extra)


def topics_verdict(c: Call, op: AclOperation, name: str = "name") -> Verdict:
    return lambda t: c.topic(op, getattr(t, name), getattr(t, "topic_id", None))


def whole(*needs: tuple[AclOperation, ResourceType, str, ErrorCode]) -> Any:
    """A check of the whole request: each (operation, type, the request's field naming the
    resource or "" for the cluster, code) in order."""

    async def check(c: Call) -> Any:
        for op, rtype, field, code in needs:
            c.require(op, rtype, getattr(c.request, field) if field else CLUSTER, code)
        return await c.serve()

    return check
