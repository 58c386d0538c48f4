"""`kafka.version`: ApiVersions lists a Kafka release's ranges, through real frames, and a
real client (kafka-python) infers that release from them; a version the release does not
accept is refused as Kafka refuses it."""

from __future__ import annotations

import re

import pytest
import trio
from kafka import KafkaAdminClient

from broker.config import ConfigError
from cli.commands.serve import serve_config
from cli.main import build_parser
from protocol.errors import ErrorCode
from protocol.frames import decode_response
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.fetch import FetchRequest
from protocol.messages.offset_commit import OffsetCommitRequest
from protocol.messages.produce import ProduceRequest
from protocol.releases import RELEASES, accepted
from tests.reliability.inproc import create, produce_request, running
from tests.wire import WireClient, read_frame, request_bytes, wire_call


def listed(response) -> dict[int, tuple[int, int]]:
    return {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}


@pytest.mark.parametrize("release", ["2.1", "3.9", "4.1"])
async def test_api_versions_lists_the_release_ranges_kmock_implements(tmp_path, release):
    with trio.fail_after(30):
        async with running(tmp_path, **{"kafka.version": release}) as broker:
            got = listed(
                await wire_call(broker, ApiVersionsRequest(), 3 if release != "2.1" else 2)
            )
    release_ranges = accepted(release)
    for key, (low, high) in got.items():
        r_low, r_high = release_ranges[key]
        if release >= "4.0" and key == ProduceRequest.API_KEY:
            r_low = 0  # KAFKA-18659: advertised from v0, refused below v3
        assert r_low <= low <= high <= r_high, (key, got[key], release_ranges[key])
    if release == "3.9":
        assert got[ProduceRequest.API_KEY] == (0, 11)
        assert got[FetchRequest.API_KEY] == (0, 17)
    if release == "4.1":
        assert got[FetchRequest.API_KEY][0] == 4
        assert got[ProduceRequest.API_KEY][0] == 0
    if release == "2.1":
        assert got[FetchRequest.API_KEY] == (0, 10)
        assert 60 not in got  # DescribeCluster came in 2.8


async def test_api_versions_above_the_release_is_unsupported_version(tmp_path):
    # Kafka 2.1 speaks ApiVersions 0-2: v3 is answered UNSUPPORTED_VERSION in v0 form.
    with trio.fail_after(30):
        async with running(tmp_path, **{"kafka.version": "2.1"}) as broker:
            response = await wire_call(broker, ApiVersionsRequest(), 0)
            assert response.error_code == ErrorCode.NONE
            client = await WireClient.connect(broker)
            await client.send_raw(request_bytes(ApiVersionsRequest(), 3, correlation_id=7))
            frame = await read_frame(client.stream)
            assert frame is not None
            corr, answer = decode_response(ApiVersionsResponse, 0, frame)
            assert (corr, answer.error_code) == (7, ErrorCode.UNSUPPORTED_VERSION)
            assert listed(answer)[18] == (0, 2)
            await client.aclose()


async def test_produce_v2_under_4_1_closes_the_connection(tmp_path):
    # Kafka 4.x lists Produce from v0 but closes the connection on v0-2 (KAFKA-18659).
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await client.send_raw(request_bytes(produce_request("t", b"x"), 2, correlation_id=1))
            assert await client.is_closed_by_peer()
            await client.aclose()


async def test_fetch_v3_under_4_1_closes_the_connection(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            request = FetchRequest(max_wait_ms=0, min_bytes=0, topics=[])
            await client.send_raw(request_bytes(request, 3, correlation_id=1))
            assert await client.is_closed_by_peer()
            await client.aclose()


async def test_unset_keeps_older_versions_that_4_1_closes_on(tmp_path):
    # sarama 1.22 commits with OffsetCommit v1 without asking: served with kafka.version unset
    # (though not listed, as 4.1 lists it from v2), refused (connection closed) by Kafka 4.1
    # and so with --kafka-version 4.1.
    commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="")
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            assert listed(await wire_call(broker, ApiVersionsRequest(), 3))[8][0] == 2
            response = await wire_call(broker, commit, 1)
            assert response.topics == []
        async with running(tmp_path / "b", **{"kafka.version": "4.1"}) as broker:
            assert listed(await wire_call(broker, ApiVersionsRequest(), 3))[8][0] == 2
            client = await WireClient.connect(broker)
            await client.send_raw(request_bytes(commit, 1, correlation_id=1))
            assert await client.is_closed_by_peer()
            await client.aclose()


@pytest.mark.parametrize(("release", "inferred"), [("3.9", (3, 9)), ("3.8", (3, 8))])
async def test_kafka_python_infers_the_release(tmp_path, release, inferred):
    def version(bootstrap: str) -> tuple[int, ...]:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        try:
            return admin._client.check_version(timeout_ms=10000)
        finally:
            admin.close()

    with trio.fail_after(60):
        async with running(tmp_path, **{"kafka.version": release}) as broker:
            got = await trio.to_thread.run_sync(version, broker.bootstrap_servers)
    assert tuple(got) == inferred


def test_every_release_is_a_choice_of_the_setting():
    from broker.config import SETTINGS, load_config

    assert SETTINGS["kafka.version"].choices == RELEASES
    assert load_config(overrides={"kafka.version": "3.9"})["kafka.version"] == "3.9"
    with pytest.raises(ConfigError, match=re.escape("kafka.version: '2.0' is not one of 2.1, ")):
        load_config(overrides={"kafka.version": "2.0"})
    with pytest.raises(ConfigError, match=re.escape("kafka.version")):
        load_config(properties={"kafka.version": "5.0"})


def test_the_serve_flag_sets_it():
    args = build_parser().parse_args(["serve", "--kafka-version", "3.9"])
    assert serve_config(args, {})["kafka.version"] == "3.9"
    args = build_parser().parse_args(["serve"])
    assert serve_config(args, {})["kafka.version"] is None
    with pytest.raises(ConfigError, match=re.escape("kafka.version: '4.2' is not one of")):
        serve_config(build_parser().parse_args(["serve", "--kafka-version", "4.2"]), {})
