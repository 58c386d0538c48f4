"""Capture the ConsumerGroupHeartbeat frames librdkafka (confluent-kafka) sends with
group.protocol=consumer, for tests/protocol/test_consumer_group_heartbeat.py.

Until the broker routes ConsumerGroupHeartbeat, a minimal coordinator on 127.0.0.1, port 0,
stands in for it: it answers ApiVersions, Metadata and FindCoordinator with our codec, and
each heartbeat with epoch 1 and an empty assignment, so the client goes through join,
heartbeat and leave. Every wait is bounded (15 s).

    .venv/bin/python tests/protocol/golden/librdkafka_consumer_group/capture.py

writes <mode>_<join|heartbeat|leave>.hex here for the modes dynamic (a plain member),
static (group.instance.id) and regex (a "^golden-.*" subscription): each the request frame
without its size prefix.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[3]))

from confluent_kafka import Consumer  # noqa: E402

from protocol.frames import (  # noqa: E402
    frame_response,
    parse_request_header,
    peek_request_key,
    response_header_is_flexible,
)
from protocol.messages.api_versions import (  # noqa: E402
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from protocol.messages.consumer_group_heartbeat import (  # noqa: E402
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.messages.find_coordinator import (  # noqa: E402
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from protocol.messages.metadata import (  # noqa: E402
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
)
from protocol.schema import decode, encode_chunks  # noqa: E402

REQUESTS: dict[int, Any] = {
    18: ApiVersionsRequest,
    3: MetadataRequest,
    10: FindCoordinatorRequest,
    68: ConsumerGroupHeartbeatRequest,
}
# (api key, max version) advertised.
APIS = [(18, 4), (3, 12), (10, 4), (8, 9), (9, 9), (68, 1), (69, 0)]


def run(mode: str) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    captured: list[bytes] = []

    def respond(conn: socket.socket, key: int, version: int, corr: int, response: Any) -> None:
        flexible = response_header_is_flexible(key, type(response).is_flexible(version))
        chunks = frame_response(corr, encode_chunks(response, version), flexible)
        conn.sendall(b"".join(bytes(c) for c in chunks))

    def answer(conn: socket.socket, frame: bytes) -> None:
        key, version, corr = peek_request_key(frame)
        cls = REQUESTS.get(key)
        if cls is None:
            return
        _, pos = parse_request_header(frame, cls.is_flexible(version))
        request = decode(cls, version, frame, pos)
        if key == 18:
            apis = [ApiVersion(api_key=k, min_version=0, max_version=v) for k, v in APIS]
            respond(conn, key, version, corr, ApiVersionsResponse(api_keys=apis))
        elif key == 3:
            broker = MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port)
            respond(conn, key, version, corr, MetadataResponse(brokers=[broker], controller_id=1))
        elif key == 10:
            keys = request.coordinator_keys or [request.key]
            coordinators = [
                Coordinator(key=k, node_id=1, host="127.0.0.1", port=port) for k in keys
            ]
            response = FindCoordinatorResponse(
                node_id=1, host="127.0.0.1", port=port, coordinators=coordinators
            )
            respond(conn, key, version, corr, response)
        else:
            captured.append(frame)
            joined = request.member_epoch >= 0
            response = ConsumerGroupHeartbeatResponse(
                member_id=request.member_id,
                member_epoch=1 if joined else request.member_epoch,
                heartbeat_interval_ms=200,
                assignment=Assignment() if request.member_epoch == 0 else None,
            )
            respond(conn, key, version, corr, response)

    def serve(conn: socket.socket) -> None:
        buf = b""
        with conn:
            while data := conn.recv(65536):
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                    (n,) = struct.unpack(">i", buf[:4])
                    frame, buf = buf[4 : 4 + n], buf[4 + n :]
                    answer(conn, frame)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    config = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "group.id": "golden-group",
        "group.protocol": "consumer",
        "group.remote.assignor": "range",
        "client.id": "kmock-golden",
    }
    if mode == "static":
        config["group.instance.id"] = "golden-instance"
    consumer = Consumer(config)
    consumer.subscribe(["^golden-.*"] if mode == "regex" else ["golden-orders"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(captured) < 3:
        consumer.poll(0.2)
    consumer.close()
    server.close()
    written = set()
    for frame in captured:
        _, version, _ = peek_request_key(frame)
        _, pos = parse_request_header(frame, True)
        epoch = decode(ConsumerGroupHeartbeatRequest, version, frame, pos).member_epoch
        step = "join" if epoch == 0 else "leave" if epoch < 0 else "heartbeat"
        if step not in written:
            written.add(step)
            (HERE / f"{mode}_{step}.hex").write_text(frame.hex() + "\n")
    print(mode, sorted(written))


if __name__ == "__main__":
    for mode in ("dynamic", "static", "regex"):
        run(mode)
