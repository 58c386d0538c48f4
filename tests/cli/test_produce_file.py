"""`kmock produce --file` and `--format`: jsonl records (topics, partitions, timestamps, bytes),
kafka-console-producer's key properties, consume's JSON produced again, and bad lines that
stop everything before the first write."""

from __future__ import annotations

import json

import pytest
import trio

from protocol.record_file import RecordFileError, read_records
from tests.cli.harness import SCENARIO_S, bs, cli, cli_json


async def consume_json(broker, topic: str, n: int) -> list[dict]:
    code, out, err = await cli(
        "consume",
        topic,
        "--from-beginning",
        "--max-messages",
        str(n),
        "--timeout-ms",
        "2000",
        "--output",
        "json",
        *bs(broker),
    )
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


async def test_jsonl_file_with_topics_partitions_timestamps_and_bytes(broker, tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"topic": "a", "partition": 1, "key": "k", "value": "v1", "timestamp": 1000}',
                '{"topic": "b", "value": {"n": 1}, "headers": [["x", "1"], ["x", null]]}',
                "",
                '{"topic": "a", "partition": 0, "key_b64": "/w==", "value_b64": "/wA=",'
                ' "headers_b64": {"bin": "gA=="}, "timestamp": "1970-01-01T00:00:02Z"}',
                '{"topic": "a", "partition": 1, "value": null, "timestamp": 3000}',
            ]
        )
        + "\n"
    )
    with trio.fail_after(SCENARIO_S):
        await cli_json("topics", "create", "a", "--partitions", "2", *bs(broker))
        produced = await cli_json("produce", "--file", str(path), *bs(broker))
        assert produced == {
            "records": 4,
            "topics": {
                "a": {
                    "0": {"first_offset": 0, "last_offset": 0},
                    "1": {"first_offset": 0, "last_offset": 1},
                },
                "b": {"0": {"first_offset": 0, "last_offset": 0}},
            },
        }
        a = sorted(await consume_json(broker, "a", 3), key=lambda r: (r["partition"], r["offset"]))
        [b] = await consume_json(broker, "b", 1)
    assert [(r["partition"], r["offset"], r["timestamp"]) for r in a] == [
        (0, 0, 2000),
        (1, 0, 1000),
        (1, 1, 3000),
    ]
    # Bytes that are not UTF-8 come back as *_b64: the shape produce reads.
    assert (a[0]["key_b64"], a[0]["value_b64"], a[0]["headers_b64"]) == (
        "/w==",
        "/wA=",
        [["bin", "gA=="]],
    )
    assert (a[1]["key"], a[1]["value"], a[2]["value"]) == ("k", "v1", None)
    assert (b["value"], b["headers"]) == ('{"n":1}', [["x", "1"], ["x", None]])


async def test_consume_output_is_produced_again_identical(broker, tmp_path):
    with trio.fail_after(SCENARIO_S):
        await cli_json("topics", "create", "src", "dst", "--partitions", "2", *bs(broker))
        lines = [
            json.dumps({"partition": i % 2, "key_b64": "gIE=", "value": f"v{i}", "timestamp": i})
            for i in range(6)
        ]
        await cli_json("produce", "src", "--format", "jsonl", *bs(broker), stdin="\n".join(lines))
        first = await consume_json(broker, "src", 6)
        dump = tmp_path / "src.jsonl"
        dump.write_text("\n".join(json.dumps(r | {"topic": "dst"}) for r in first) + "\n")
        await cli_json("produce", "--file", str(dump), *bs(broker))
        again = await consume_json(broker, "dst", 6)

    def strip(rows):
        return sorted(({k: v for k, v in r.items() if k != "topic"} for r in rows), key=str)

    assert strip(again) == strip(first)
    assert {r["key_b64"] for r in again} == {"gIE="}


async def test_console_producer_key_properties_and_keyed_format(broker, tmp_path):
    with trio.fail_after(SCENARIO_S):
        await cli_json(
            "produce",
            "k",
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            *bs(broker),
            stdin="a:1\nb:2:x\n",
        )
        path = tmp_path / "tabbed.txt"
        path.write_bytes(b"c\t3\r\nd\t\xff\n")
        await cli_json("produce", "k", "--file", str(path), "--format", "keyed", *bs(broker))
        rows = sorted(await consume_json(broker, "k", 4), key=lambda r: r["offset"])
    assert [(r.get("key"), r.get("value", r.get("value_b64"))) for r in rows] == [
        ("a", "1"),
        ("b", "2:x"),
        ("c", "3"),
        ("d", "/w=="),
    ]


async def test_a_bad_line_names_file_and_line_and_nothing_is_written(broker, tmp_path):
    good = '{"topic": "seeded", "value": "fine"}\n'
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text(good * 2 + '{"topic": "seeded", "value": fine}\n' + good)
    typo = tmp_path / "typo.jsonl"
    typo.write_text(good + '{"topic": "seeded", "vaule": "x"}\n')
    no_topic = tmp_path / "no-topic.jsonl"
    no_topic.write_text(good + '{"value": "where?"}\n')
    far = tmp_path / "far.jsonl"
    far.write_text(good + '{"topic": "seeded", "partition": 4, "value": "x"}\n')
    unkeyed = tmp_path / "unkeyed.txt"
    unkeyed.write_text("k\tv\nno tab here\n")
    cases = [
        (("--file", str(bad_json)), 2, f"kmock: {bad_json} line 3: not JSON (Expecting value)\n"),
        (("--file", str(typo)), 2, f"kmock: {typo} line 2: unknown field 'vaule'"),
        (
            ("--file", str(no_topic)),
            2,
            f"kmock: {no_topic} line 2: no 'topic', and no TOPIC given\n",
        ),
        (
            ("--file", str(far)),
            1,
            f"kmock: {far} line 2: topic 'seeded' has no partition 4 (it has 1)\n",
        ),
        (
            ("seeded", "--file", str(unkeyed), "--format", "keyed"),
            2,
            f"kmock: {unkeyed} line 2: no key separator '\\t'\n",
        ),
        (("--file", str(tmp_path / "absent.jsonl")), 2, "absent.jsonl: cannot read it"),
        (("seeded", "--property", "ignore.error=true"), 2, "--property ignore.error"),
        (
            ("--format", "lines"),
            2,
            "kmock: name the TOPIC (only jsonl records can name their own)\n",
        ),
    ]
    with trio.fail_after(SCENARIO_S):
        for argv, want_code, want in cases:
            code, out, err = await cli("produce", *argv, *bs(broker))
            assert (code, out) == (want_code, ""), (argv, err)
            assert want in err, (argv, err)
            assert err.count("\n") == 1, (argv, err)
        # Looking the partitions up created "seeded" (as a producer's Metadata does), but no
        # record was written.
        code, out, err = await cli(
            "consume", "seeded", "--from-beginning", "--timeout-ms", "300", *bs(broker)
        )
    assert (code, out, err) == (0, "", "Processed a total of 0 messages\n")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[1, 2]", "expected a JSON object, got a list"),
        ('{"key": 5}', "'key' must be text or null (or use 'key_b64'), not int"),
        ('{"key": "a", "key_b64": "YQ=="}', "both 'key' and 'key_b64'"),
        ('{"value_b64": "***"}', "'value_b64' is not valid base64"),
        ('{"partition": -1}', "'partition' must be an integer >= 0, not -1"),
        ('{"partition": true}', "'partition' must be an integer >= 0, not True"),
        ('{"timestamp": "soon"}', "'timestamp': 'soon' is not an ISO 8601 date and time"),
        ('{"headers": [["a"]]}', "'headers': each header is a [name, value] pair"),
        ('{"headers": {"a": 1}}', "'headers': the value of header 'a' must be text or null"),
        ('{"headers": "a=1"}', "'headers' must be an object or a list of [name, value] pairs"),
        ('{"topic": ""}', "'topic' must be a topic name"),
    ],
)
def test_jsonl_problems_are_named(line, problem):
    with pytest.raises(RecordFileError) as e:
        list(read_records([b"{}\n", line.encode()], "jsonl", "f.jsonl"))
    assert str(e.value).startswith(f"f.jsonl line 2: {problem}")
