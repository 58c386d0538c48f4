"""The compatibility matrix: which client passed which scenario, written to
docs/compatibility.md by the conftest at the end of a session that ran all of it.

Each client's test module declares `CLIENT` (a column here) and `NOT_EXPRESSIBLE`
(scenario -> why that client's API cannot do it); each scenario test is tagged with
`@scenario("<id>")`. tests/integration/test_matrix.py checks that every client covers every
scenario one way or the other, so a cell is never left out silently.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.integration import harness
from tests.integration.harness import CODECS, JS_DIR, ROOT

F = TypeVar("F", bound=Callable[..., Any])

DOC = ROOT / "docs" / "compatibility.md"

CLIENTS = ["kafka-python", "aiokafka", "confluent-kafka", "kcat", "kafkajs", "sarama"]

SCENARIOS: dict[str, str] = {
    "metadata": "Metadata: brokers, cluster id, topic partitions and leaders",
    "create-delete-topic": "Create a topic (3 partitions), then delete it",
    "keys-headers": "Produce and consume with keys and headers",
    **{f"compression-{c}": f"Produce and consume, {c}-compressed batches" for c in CODECS},
    "group-rebalance": "Consumer group of 3 members; rebalance when one leaves",
    "commit-resume": "Commit offsets; a new consumer of the group resumes there",
    "restart-resume": "Commit, restart the broker, resume from the committed offsets",
    "list-describe-groups": "List groups, describe a group, fetch its committed offsets",
    "idempotent-producer": "Idempotent producer: one producer id, gapless sequences",
}

# Scenarios also run against an older Kafka release (`kafka.version`), where a client
# behaves differently: release -> the scenarios run there. Their cells are "<id>@<release>"
# and have a table of their own; a client need not cover them.
RELEASE_SCENARIOS: dict[str, list[str]] = {"3.9": [f"compression-{c}" for c in CODECS]}

# Scenario tests run this long at most before the conftest guard fails them (seconds).
DEFAULT_DEADLINE_S = 60.0


def scenario(
    name: str, *, deadline: float = DEFAULT_DEADLINE_S, release: str | None = None
) -> Callable[[F], F]:
    """Tag a test as the matrix cell (module CLIENT, name), or (module CLIENT,
    name@release) for a run against `kafka.version` release (RELEASE_SCENARIOS). A
    `{codec}` in the name is filled from the test's `codec` parameter."""

    def tag(fn: F) -> F:
        fn.kmock_scenario = name if release is None else f"{name}@{release}"  # type: ignore[attr-defined]
        fn.kmock_release = release  # type: ignore[attr-defined]
        return harness.deadline(deadline)(fn)

    return tag


def cell_of(item: Any) -> tuple[str, str] | None:
    """(client, scenario id) of a collected test item, or None if it is not a cell."""
    fn = getattr(item, "function", None)
    name = getattr(fn, "kmock_scenario", None)
    client = getattr(getattr(item, "module", None), "CLIENT", None)
    if name is None or client is None:
        return None
    params = getattr(getattr(item, "callspec", None), "params", {})
    return client, name.format(**params)


@dataclass
class Result:
    outcome: str  # "passed" | "failed" | "known" (an expected failure) | "skipped"
    message: str = ""


def first_error_line(report: Any) -> str:
    """The informative first line of a failed report (the assertion or exception)."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    text = crash.message if crash is not None else str(getattr(report, "longrepr", ""))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "(no message)"
    line = lines[0]
    # "Failed: broker logged errors during the test:" says little without the next line.
    if line.endswith(":") and len(lines) > 1:
        line = f"{line} {lines[1]}"
    line = re.sub(r"\s+", " ", line)
    return line if len(line) <= 240 else line[:237] + "..."


# --- client versions --------------------------------------------------------------------


def _cmd(args: list[str]) -> str:
    if shutil.which(args[0]) is None:
        return ""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout + out.stderr).strip()


def client_versions() -> dict[str, str]:
    import aiokafka
    import confluent_kafka
    import kafka

    versions = {
        "kafka-python": kafka.__version__,
        "aiokafka": aiokafka.__version__,
        "confluent-kafka": (
            f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
        ),
    }
    m = re.search(r"Version (\S+) .*?librdkafka (\S+)", _cmd(["kcat", "-V"]))
    versions["kcat"] = f"{m.group(1)} (librdkafka {m.group(2)})" if m else "not installed"
    pkg = JS_DIR / "node_modules" / "kafkajs" / "package.json"
    node = _cmd(["node", "--version"])
    versions["kafkajs"] = (
        f"{json.loads(pkg.read_text())['version']} (node {node.lstrip('v')})"
        if pkg.exists()
        else "not installed"
    )
    deb = _cmd(["dpkg-query", "-W", "-f", "${Version}", "golang-github-shopify-sarama-dev"])
    go = re.search(r"go(\d+\.\d+(\.\d+)?)", _cmd(["go", "version"]))
    versions["sarama"] = (
        f"{deb.split('-')[0]} (Debian {deb}, go {go.group(1) if go else '?'})"
        if deb and "no packages" not in deb
        else "not installed"
    )
    return versions


# --- the document -----------------------------------------------------------------------


def render(
    results: dict[tuple[str, str], Result],
    not_expressible: dict[tuple[str, str], str],
    versions: dict[str, str],
) -> str:
    failures: list[tuple[str, str, str]] = []
    reasons: list[tuple[str, str, str]] = []
    header = "| scenario | " + " | ".join(CLIENTS) + " |"
    rule = "|---|" + "---|" * len(CLIENTS)
    rows = []
    for sid, title in SCENARIOS.items():
        cells = []
        for client in CLIENTS:
            if (client, sid) in not_expressible:
                reasons.append((client, sid, not_expressible[client, sid]))
                cells.append(f"n/e [N{len(reasons)}](#n{len(reasons)})")
                continue
            r = results.get((client, sid))
            if r is None:
                cells.append("not run")
            elif r.outcome == "passed":
                cells.append("pass")
            elif r.outcome == "known":
                failures.append((client, sid, f"known failure: {r.message}"))
                cells.append(f"**FAIL** (known) [F{len(failures)}](#f{len(failures)})")
            else:
                failures.append((client, sid, r.message or r.outcome))
                cells.append(f"**FAIL** [F{len(failures)}](#f{len(failures)})")
        rows.append(f"| {title} (`{sid}`) | " + " | ".join(cells) + " |")

    for release, sids in RELEASE_SCENARIOS.items():
        cells_of = {c for c, sid in results if sid.endswith(f"@{release}")}
        columns = [c for c in CLIENTS if c in cells_of]
        if not columns:
            continue
        rows += [
            "",
            f"Against `kmock serve --kafka-version {release}` (ApiVersions lists Kafka "
            f"{release}'s versions):",
            "",
            "| scenario | " + " | ".join(columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for sid in sids:
            cells = []
            for client in columns:
                r = results.get((client, f"{sid}@{release}"))
                if r is None:
                    cells.append("not run")
                elif r.outcome == "passed":
                    cells.append("pass")
                else:
                    failures.append((client, f"{sid}@{release}", r.message or r.outcome))
                    cells.append(f"**FAIL** [F{len(failures)}](#f{len(failures)})")
            rows.append(f"| {SCENARIOS[sid]} (`{sid}`) | " + " | ".join(cells) + " |")

    passed = sum(1 for r in results.values() if r.outcome == "passed")
    known = sum(1 for r in results.values() if r.outcome == "known")
    out = [
        "# Client compatibility",
        "",
        "Generated by the integration tests (`make test`, `tests/integration/`): each real,",
        "unmodified client runs each scenario against a kmock started by the tests. Do not edit",
        "by hand; a run of the whole integration suite rewrites this file.",
        "",
        f"{passed} passed, {len(failures)} failed ({known} of them known, with their cause "
        f"below), {len(reasons)} not expressible (n/e: the client's API cannot express the "
        f"scenario).",
        "",
        header,
        rule,
        *rows,
        "",
        "## Clients",
        "",
        "| client | version |",
        "|---|---|",
        *[f"| {c} | {versions.get(c, '?')} |" for c in CLIENTS],
        "",
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}.",
        "",
    ]
    if failures:
        out += ["## Failures", ""]
        for i, (client, sid, msg) in enumerate(failures, 1):
            msg = msg.replace("|", "\\|")
            out.append(f'<a id="f{i}"></a>F{i}. **{client}**, `{sid}`: {msg}')
            out.append("")
    if reasons:
        out += ["## Not expressible", ""]
        for i, (client, sid, why) in enumerate(reasons, 1):
            out.append(f'<a id="n{i}"></a>N{i}. **{client}**, `{sid}`: {why}')
            out.append("")
    return "\n".join(out)


def write(
    results: dict[tuple[str, str], Result],
    not_expressible: dict[tuple[str, str], str],
    path: Path = DOC,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(results, not_expressible, client_versions()))
