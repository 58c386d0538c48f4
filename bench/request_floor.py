"""Request-rate floor: python + trio answering every request with a fixed response.

`python bench/request_floor.py PORT` listens on 127.0.0.1:PORT. ApiVersions gets kmock's own
ApiVersions answer; OffsetCommit gets one fixed answer (no error for the one partition
bench/run.py §3 commits); Metadata gets one fixed answer (this broker and the 4-partition
topic `bench-meta` of §6 and §9). Each is encoded once per version, with the request's
correlation id patched in; any other API closes the connection. Nothing is decoded beyond
the request header and nothing is written to disk. The connection I/O is kmock's
(broker/connection.py): non-blocking os.read/os.writev on the socket's descriptor, waiting
in trio only when a call would block.

Used as the side-by-side reference for §3: the most requests per second any broker written
in Python on trio, one task per connection, can answer on this machine with this generator;
kmock's commit rate divided by it is the share of that ceiling the broker's work leaves.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import uuid

import trio

from broker.config import SETTINGS
from broker.connection import RECEIVE_BYTES
from broker.dispatch import respond as _respond
from broker.routes import route_for, supported_versions
from protocol.frames import FrameBuffer, peek_request_key
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

# What each API is answered with: ApiVersions with kmock's own list, OffsetCommit with no
# error for the one partition §3 commits, Metadata with one broker and the 4-partition topic
# `bench-meta` (the shape kmock and the mock answer in §6 and §9). Encoded once per version,
# on first use.
_ANSWERS = {
    ApiVersionsRequest.API_KEY: ApiVersionsResponse(api_keys=supported_versions()),
    OffsetCommitRequest.API_KEY: OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name="bench-commits",
                partitions=[OffsetCommitResponsePartition(partition_index=0, error_code=0)],
            )
        ]
    ),
    MetadataRequest.API_KEY: MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092)],
        cluster_id="request-floor",
        controller_id=1,
        topics=[
            MetadataResponseTopic(
                error_code=0,
                name="bench-meta",
                topic_id=uuid.UUID(int=1),
                is_internal=False,
                partitions=[
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=i,
                        leader_id=1,
                        leader_epoch=0,
                        replica_nodes=[1],
                        isr_nodes=[1],
                        offline_replicas=[],
                    )
                    for i in range(4)
                ],
            )
        ],
    ),
}
_ENCODED: dict[tuple[int, int], bytearray] = {}


def _answer(api_key: int, version: int) -> bytearray:
    answer = _ENCODED.get((api_key, version))
    if answer is None:
        route = route_for(api_key)
        assert route is not None
        chunks = _respond(route, version, 0, _ANSWERS[api_key])  # as kmock frames an answer
        answer = _ENCODED[(api_key, version)] = bytearray(b"".join(chunks))
    return answer


async def _serve(stream: trio.SocketStream) -> None:
    sock = stream.socket
    fd = sock.fileno()
    frames = FrameBuffer(SETTINGS["socket.request.max.bytes"].default)
    with contextlib.suppress(OSError, trio.ClosedResourceError):
        while True:
            frame = frames.next_frame()
            if frame is None:
                try:
                    data = os.read(fd, RECEIVE_BYTES)
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(sock)
                    continue
                if not data:
                    break
                frames.feed(data)
                continue
            api_key, version, corr = peek_request_key(frame)
            if api_key not in _ANSWERS:
                break
            answer = _answer(api_key, version)
            struct.pack_into(">i", answer, 4, corr)
            view = memoryview(answer)
            while view:
                try:
                    view = view[os.writev(fd, [view]) :]
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(sock)
    await stream.aclose()


async def main(port: int) -> None:
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    await trio.serve_listeners(_serve, listeners)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(main, int(sys.argv[1]))
