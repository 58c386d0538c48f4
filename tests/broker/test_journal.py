"""The request journal's recording (broker.controls.journal): the references it keeps of the
common answer against the general path it shortcuts, and what it keeps of large messages.
What the journal shows over HTTP is tested in tests/broker/test_controls.py."""

from __future__ import annotations

import sys
from typing import Any

from broker.controls.journal import MAX_KEPT_BYTES, Journal
from broker.dispatch import Call
from broker.routes import all_routes, route_for
from protocol.errors import ErrorCode
from protocol.frames import encode_request, frame_response, request_client_id
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
)
from protocol.schema import decode, encode_chunks


class _Conn:
    """What the journal reads of a connection (broker.dispatch.Caller)."""

    __slots__ = ("client_host", "connection_id")

    def __init__(self) -> None:
        self.connection_id = 3
        self.client_host = "/127.0.0.1"


def _journal(size: int = 10) -> Journal:
    journal = Journal(size)
    journal.routes = {r.api_key: r for r in all_routes()}
    return journal


def _call(request: Any, version: int, correlation_id: int, frame: Any, fault: Any = None) -> Call:
    """The dispatch site's Call for `request`, `frame` as it came (without its size)."""
    route = route_for(request.API_KEY)
    flexible = route.request.is_flexible(version)
    client_id, pos = request_client_id(frame, flexible)
    decoded = decode(route.request, version, frame, pos, allow_trailing=True)
    return Call(
        None, route, version, correlation_id, client_id, 10.0, _Conn(), decoded, fault, frame
    )  # type: ignore[arg-type]


def _both(call: Call, out: list[Any], response: Any) -> tuple[Journal, Journal]:
    """The same answered request kept by `record` and by `record_as`."""
    fast, general = _journal(), _journal()
    _, _, _, _, _, started, conn, request, fault, frame, _ = call
    fast.record(call, ErrorCode.NONE, response, out, 10.5, started, conn, request, fault, frame)
    general.record_as(call, ErrorCode.NONE, response, out, "answered", 10.5)
    return fast, general


def _frame(request: Any, version: int, correlation_id: int) -> bytes:
    return encode_request(request, version, correlation_id, "kmock-test")[4:]


async def test_references_kept_show_what_the_general_path_shows() -> None:
    metadata = MetadataRequest(
        topics=[MetadataRequestTopic(name="t")], allow_auto_topic_creation=False
    )
    heartbeat = HeartbeatRequest(group_id="g", generation_id=4, member_id="m")
    cases = [
        (
            metadata,
            8,
            MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=1, host="h", port=9092)], topics=[]
            ),
        ),
        (metadata, 12, MetadataResponse(brokers=[], topics=[])),  # a flexible header
        (heartbeat, 4, HeartbeatResponse(error_code=ErrorCode.NONE)),
        (heartbeat, 0, HeartbeatResponse(error_code=ErrorCode.NONE)),
    ]
    for request, version, response in cases:
        frame = _frame(request, version, 77)
        call = _call(request, version, 77, frame, fault=5)
        body = b"".join(encode_chunks(response, version))  # one `bytes`, as Metadata keeps it
        out = frame_response(77, [body], False)
        fast, general = _both(call, out, response)
        (kept,) = fast._ring
        assert len(kept) == 7  # references alone
        assert kept[0] is frame  # not a copy
        assert kept[1] is body
        assert len(general._ring[0]) == 13
        shown, expected = fast.entries(), general.entries()
        assert shown == expected
        assert shown[0]["client_id"] == "kmock-test"
        assert (shown[0]["version"], shown[0]["correlation_id"], shown[0]["fault"]) == (
            version,
            77,
            5,
        )
        assert shown[0]["api"] == type(request).__name__.removesuffix("Request")


async def test_anything_else_goes_the_general_way() -> None:
    request = HeartbeatRequest(group_id="g", generation_id=4, member_id="m")
    frame = _frame(request, 4, 1)
    response = HeartbeatResponse(error_code=ErrorCode.NONE)
    body = b"".join(encode_chunks(response, 4))
    outs = [
        frame_response(1, [body[:2], body[2:]], False),  # chunks: joined
        frame_response(1, [memoryview(body)], False),  # a view: copied
    ]
    for out in outs:
        fast, general = _both(_call(request, 4, 1, frame), out, response)
        assert len(fast._ring[0]) == 13
        assert type(fast._ring[0][-1]) is bytes
        assert fast.entries() == general.entries()
    # An error code, or no answer: the general way.
    journal = _journal()
    call = _call(request, 4, 1, frame)
    _, _, _, _, _, started, conn, req, fault, _, _ = call
    error = HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    out = frame_response(1, encode_chunks(error, 4), False)
    code = ErrorCode.REBALANCE_IN_PROGRESS
    journal.record(call, code, error, out, 10.5, started, conn, req, fault, frame)
    journal.record(call, ErrorCode.NONE, None, None, 10.5, started, conn, req, fault, frame)
    first, second = journal.entries()
    assert (first["error"], first["outcome"]) == ("REBALANCE_IN_PROGRESS", "answered")
    assert (second["outcome"], second["response"]) == ("no response", {})
    assert [type(e[8]) for e in journal._ring] == [int, int]  # no enum kept


async def test_no_entry_holds_more_than_the_bound() -> None:
    # A large frame is never kept by reference (a buffer of its own, or `bytes` of any
    # size), nor a large body: each is kept as its size.
    request = HeartbeatRequest(group_id="g", generation_id=4, member_id="m")
    small = _frame(request, 4, 1)
    padding = bytes(MAX_KEPT_BYTES)  # bytes after the body are ignored, as the broker does
    response = HeartbeatResponse(error_code=ErrorCode.NONE)
    body = b"".join(encode_chunks(response, 4))
    for frame in (small + padding, bytearray(small + padding)):
        journal = _journal()
        call = _call(request, 4, 1, frame)
        _, _, _, _, _, started, conn, req, fault, _, _ = call
        out = frame_response(1, [body], False)
        journal.record(call, ErrorCode.NONE, response, out, 10.5, started, conn, req, fault, frame)
        large_body = body + padding
        call = _call(request, 4, 1, small)
        _, _, _, _, _, started, conn, req, fault, _, _ = call
        out = frame_response(1, [large_body], False)
        journal.record(call, ErrorCode.NONE, response, out, 10.5, started, conn, req, fault, small)
        for entry in journal._ring:
            assert all(sys.getsizeof(v) < MAX_KEPT_BYTES for v in entry)
            assert not any(v is frame or v is large_body for v in entry)
        first, second = journal.entries()
        assert first["request"] == {"omitted_bytes": len(frame)}
        assert first["response"] == {"error_code": 0}
        assert second["request"]["group_id"] == "g"
        assert second["response"] == {"omitted_bytes": len(large_body) + 8, "error_codes": [0]}


def test_the_apis_kept_otherwise_are_told_by_their_request_class() -> None:
    from broker.controls.journal import _SPECIAL, _SPECIAL_REQUESTS

    assert {route_for(c.API_KEY).name for c in _SPECIAL_REQUESTS} == _SPECIAL
    assert all(route_for(c.API_KEY).request is c for c in _SPECIAL_REQUESTS)
