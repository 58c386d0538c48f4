"""`kmock offsets reset` as kafka-consumer-groups --reset-offsets: every scenario (shift,
duration, datetime, current, CSV file), --export, and bad input that changes nothing."""

from __future__ import annotations

import json
import time

import pytest
import trio

from cli.commands.offsets import parse_duration_ms
from cli.output import UsageError
from tests.cli.harness import SCENARIO_S, bs, cli, cli_json

HOUR_MS = 3_600_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("P1D", 86_400_000),
        ("PT30M", 1_800_000),
        ("pt1h30m", 5_400_000),
        ("PT0.5S", 500),
        ("P1DT1S", 86_401_000),
        ("-PT1S", -1000),
        ("PT-1.5S", -1500),
    ],
)
def test_durations_parse_as_java_duration_does(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["P", "PT", "1h", "P1H", "PT1D", "P1M", ""])
def test_bad_durations_name_the_argument(text):
    with pytest.raises(UsageError, match="--by-duration"):
        parse_duration_ms(text)


async def seed(broker) -> int:
    """Topic t (2 partitions): partition 0 holds 3 records from 5 h ago and 2 from 1 h ago,
    partition 1 holds 4 records. Group g has committed 2 and 1."""
    now_ms = int(time.time() * 1000)
    lines = [
        json.dumps({"partition": 0, "value": f"old {i}", "timestamp": now_ms - 5 * HOUR_MS})
        for i in range(3)
    ]
    lines += [
        json.dumps({"partition": 0, "value": f"new {i}", "timestamp": now_ms - HOUR_MS})
        for i in range(2)
    ]
    lines += [json.dumps({"partition": 1, "value": f"p1 {i}"}) for i in range(4)]
    await cli_json("topics", "create", "t", "--partitions", "2", *bs(broker))
    await cli_json("produce", "t", "--format", "jsonl", *bs(broker), stdin="\n".join(lines))
    plan = await cli_json(
        "offsets", "reset", "g", "--topic", "t:0", "--to-offset", "2", "--execute", *bs(broker)
    )
    assert plan["executed"]
    await cli_json(
        "offsets", "reset", "g", "--topic", "t:1", "--to-offset", "1", "--execute", *bs(broker)
    )
    return now_ms


async def committed(broker, group="g") -> dict[tuple[str, int], int]:
    shown = await cli_json("offsets", "show", group, *bs(broker))
    return {(r["topic"], r["partition"]): r["committed_offset"] for r in shown["offsets"]}


async def new_offsets(broker, *argv) -> dict[tuple[str, int], int]:
    plan = await cli_json("offsets", "reset", "g", *argv, *bs(broker))
    return {(r["topic"], r["partition"]): r["new_offset"] for r in plan["plan"]}


async def test_shift_duration_datetime_current(broker):
    with trio.fail_after(SCENARIO_S):
        now_ms = await seed(broker)
        assert await committed(broker) == {("t", 0): 2, ("t", 1): 1}
        assert await new_offsets(broker, "--all-topics", "--shift-by", "2") == {
            ("t", 0): 4,
            ("t", 1): 3,
        }
        # Kept between the log start and end (ResetOffsets' checkOffsetsRange).
        assert await new_offsets(broker, "--topic", "t", "--shift-by", "-10") == {
            ("t", 0): 0,
            ("t", 1): 0,
        }
        assert await new_offsets(broker, "--topic", "t", "--shift-by", "100") == {
            ("t", 0): 5,
            ("t", 1): 4,
        }
        # The first record at or after 2 h ago is partition 0's offset 3; partition 1's
        # records are newer than that, so its first.
        assert await new_offsets(broker, "--topic", "t", "--by-duration", "PT2H") == {
            ("t", 0): 3,
            ("t", 1): 0,
        }
        # A naive time is UTC, as in Kafka; after every record: the log end.
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((now_ms - 3 * HOUR_MS) / 1000))
        assert await new_offsets(broker, "--topic", "t:0", "--to-datetime", when) == {("t", 0): 3}
        assert await new_offsets(
            broker, "--topic", "t:0", "--to-datetime", "2999-01-01T00:00:00.000+01:00"
        ) == {("t", 0): 5}
        assert await new_offsets(broker, "--all-topics", "--to-current") == {
            ("t", 0): 2,
            ("t", 1): 1,
        }
        # Dry runs all: nothing moved.
        assert await committed(broker) == {("t", 0): 2, ("t", 1): 1}
        code, _, err = await cli(
            "offsets", "reset", "g", "--all-topics", "--shift-by", "1", "--execute", *bs(broker)
        )
        assert (code, err) == (0, "")
        assert await committed(broker) == {("t", 0): 3, ("t", 1): 2}


async def test_export_then_reset_from_the_file(broker, tmp_path):
    with trio.fail_after(SCENARIO_S):
        await seed(broker)
        code, out, err = await cli(
            "offsets", "reset", "g", "--all-topics", "--to-current", "--export", *bs(broker)
        )
        assert (code, out) == (0, "t,0,2\nt,1,1\n")
        assert err == "Dry run: nothing was committed (add --execute to commit).\n"
        saved = tmp_path / "g.csv"
        saved.write_text(out)

        await cli_json(
            "offsets", "reset", "g", "--topic", "t", "--to-latest", "--execute", *bs(broker)
        )
        assert await committed(broker) == {("t", 0): 5, ("t", 1): 4}
        code, out, _ = await cli(
            "offsets", "reset", "g", "--from-file", str(saved), "--execute", *bs(broker)
        )
        assert code == 0
        assert out.splitlines()[1:] == [
            "GROUP           TOPIC           PARTITION  NEW-OFFSET",
            "g               t               0          2",
            "g               t               1          1",
        ]
        assert await committed(broker) == {("t", 0): 2, ("t", 1): 1}

        # The several-group shape: only g's lines count; offsets are kept in range.
        multi = tmp_path / "groups.csv"
        multi.write_text("other,t,0,0\ng,t,0,99\n\ng,t,1,0\n")
        assert await new_offsets(broker, "--from-file", str(multi)) == {
            ("t", 0): 5,
            ("t", 1): 0,
        }


async def test_bad_input_names_the_argument_and_changes_nothing(broker, tmp_path):
    def csv(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    short = csv("short.csv", "t,0,1\nt,0\n")
    wordy = csv("wordy.csv", "t,0,1\nt,zero,3\n")
    missing = csv("missing.csv", "t,0,1\nt,1,1\nt,9,1\n")
    foreign = csv("foreign.csv", "other,t,0,1\n")
    cases = [
        (
            ("--topic", "nope", "--shift-by", "1"),
            1,
            "kmock: --topic 'nope': topic 'nope' does not exist\n",
        ),
        (
            ("--topic", "t:0,7", "--to-earliest"),
            1,
            "kmock: --topic 't:0,7': topic 't' has no partition 7 (it has 2)\n",
        ),
        (("--topic", "t:x", "--to-earliest"), 2, "--topic 't:x': partitions must be numbers"),
        (
            ("--from-file", short),
            2,
            f"kmock: {short} line 2: expected topic,partition,offset, got 't,0'\n",
        ),
        (
            ("--from-file", wordy),
            2,
            f"kmock: {wordy} line 2: partition and offset must be numbers, got 't,zero,3'\n",
        ),
        (
            ("--from-file", missing),
            1,
            f"kmock: {missing} line 3: topic 't' has no partition 9 (it has 2)\n",
        ),
        (("--from-file", foreign), 2, f"kmock: {foreign}: no offsets for group 'g'\n"),
        (("--from-file", str(tmp_path / "absent.csv")), 2, "absent.csv: cannot read it"),
        (("--from-file", short, "--topic", "t"), 2, "--from-file names the partitions itself"),
        (
            ("--to-earliest",),
            2,
            "kmock: name the partitions: --topic TOPIC[:P,...] or --all-topics\n",
        ),
        (
            ("--topic", "t", "--to-datetime", "2025-13-01T00:00:00"),
            2,
            "--to-datetime '2025-13-01T00:00:00' is not an ISO 8601 date and time",
        ),
        (("--topic", "t", "--to-datetime", "yesterday"), 2, "--to-datetime 'yesterday' is not"),
        (("--topic", "t", "--by-duration", "1h"), 2, "--by-duration '1h' is not"),
    ]
    with trio.fail_after(SCENARIO_S):
        await seed(broker)
        before = await committed(broker)
        for argv, want_code, want_err in cases:
            code, out, err = await cli("offsets", "reset", "g", *argv, "--execute", *bs(broker))
            assert (code, out) == (want_code, ""), (argv, err)
            assert want_err in err, argv
            assert err.startswith("kmock: "), (argv, err)
            assert err.count("\n") == 1, (argv, err)
        assert await committed(broker) == before

        # An unknown group: nothing to shift or to select, and it is not created.
        for argv, want in [
            (
                ("--all-topics", "--to-earliest"),
                "--all-topics: group 'nobody' has no committed offsets (it does not exist)",
            ),
            (
                ("--topic", "t", "--shift-by", "1"),
                "--shift-by: cannot shift t-0: group 'nobody' has no committed offset for it",
            ),
        ]:
            code, out, err = await cli(
                "offsets", "reset", "nobody", *argv, "--execute", *bs(broker)
            )
            assert (code, out, err) == (1, "", f"kmock: {want}\n")
        assert [g["group_id"] for g in await cli_json("groups", "list", *bs(broker))] == ["g"]
