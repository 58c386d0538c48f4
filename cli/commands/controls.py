"""What `kmock faults|clock|journal|connections` do (the parser is `cli.controls`): calls to
the broker's /v1 admin paths (broker.controls.api) through broker.controls.http_client."""

from __future__ import annotations

import argparse
import time
from typing import Any

from broker.controls.http_client import ControlRefused, call
from cli.output import EXIT_OK, Failed, Output, UsageError

__all__ = ["run"]

FOLLOW_WAIT_MS = 10_000  # one long poll of `journal --follow`


def _call(args: argparse.Namespace, method: str, path: str, body: Any = None, **query: Any) -> Any:
    try:
        return call(args.admin_server, method, path, body, query=query)
    except ControlRefused as e:
        raise UsageError(f"refused by the broker: {e}") from None
    except OSError as e:
        raise Failed(
            f"cannot reach the admin endpoint at {args.admin_server}: {e} "
            "(is kmock serving with --admin-port?)"
        ) from None


def run(args: argparse.Namespace, out: Output) -> int:
    family = {
        "faults": _faults,
        "clock": _clock,
        "journal": _journal,
        "connections": _connections,
        "cluster": _cluster,
    }[args.family]
    family(args, out)
    return EXIT_OK


def _faults(args: argparse.Namespace, out: Output) -> None:
    if args.action == "list":
        faults = _call(args, "GET", "/v1/faults")["faults"]
    elif args.action == "clear":
        cleared = _call(args, "DELETE", "/v1/faults")["cleared"]
        if args.output == "json":
            out.json({"cleared": cleared})
        else:
            out.line(f"cleared {cleared} fault(s)")
        return
    else:
        spec: dict[str, Any] = {"count": args.count}
        if args.action == "storage":
            spec["storage"] = args.what
        else:
            spec["api"] = args.api
            for name in ("error", "group_id", "client_id", "delay_ms", "action"):
                if getattr(args, name) is not None:
                    spec[name] = getattr(args, name)
        for name in ("topic", "partition"):
            if getattr(args, name) is not None:
                spec[name] = getattr(args, name)
        faults = _call(args, "POST", "/v1/faults", spec)["faults"]
    if args.output == "json":
        out.json(faults)
        return
    out.table(
        ["ID", "API", "DOES", "COUNT", "FIRED", "FILTERS"],
        [
            [f["id"], f.get("api") or "(storage)", _does(f), f["count"], f["fired"], _where(f)]
            for f in faults
        ],
    )


def _does(f: dict[str, Any]) -> str:
    if "storage" in f:
        return f"fail {f['storage']}"
    parts = []
    if f.get("delay_ms"):
        parts.append(f"delay {f['delay_ms']} ms")
    if f.get("action") != "error":
        parts.append(str(f["action"]))
    elif f.get("error"):
        parts.append(str(f["error"]))
    return ", ".join(parts)


def _where(f: dict[str, Any]) -> str:
    keys = ("topic", "partition", "group_id", "client_id")
    return " ".join(f"{k}={f[k]}" for k in keys if k in f) or "-"


def _clock(args: argparse.Namespace, out: Output) -> None:
    if args.action == "advance":
        clock = _call(args, "POST", "/v1/clock/advance", {"ms": args.ms})
    else:
        clock = _call(args, "GET", "/v1/clock")
    if args.output == "json":
        out.json(clock)
        return
    line = f"{clock['mode']} clock: now_ms={clock['now_ms']} wall_ms={clock['wall_ms']}"
    if clock["mode"] == "virtual":
        line += (
            f" elapsed_ms={clock['elapsed_ms']} timers_pending={clock['timers_pending']}"
            f" timers_fired={clock['timers_fired']}"
        )
    out.line(line)


def _journal(args: argparse.Namespace, out: Output) -> None:
    if args.clear:
        answer = _call(args, "DELETE", "/v1/journal")
        if args.output == "json":
            out.json(answer)
        else:
            out.line(f"cleared {answer['cleared']} entries (last seq {answer['last_seq']})")
        return
    query = {
        "api": args.api,
        "group_id": args.group_id,
        "client_id": args.client_id,
        "topic": args.topic,
    }
    since = args.since
    while True:
        wait = FOLLOW_WAIT_MS if args.follow else None
        answer = _call(args, "GET", "/v1/journal", since=since, wait_ms=wait, **query)
        for entry in answer["entries"]:
            if args.output == "json":
                out.json(entry, lines=True)
            else:
                out.line(journal_line(entry))
        if answer["entries"]:
            since = answer["entries"][-1]["seq"]
        elif answer["last_seq"] < since:
            since = answer["last_seq"]  # the broker restarted: its numbering did too
        out.stdout.flush()
        if not args.follow:
            return


def journal_line(e: dict[str, Any]) -> str:
    """One entry as one line: when, what, who, how it ended, and its key fields."""
    stamp = time.strftime("%H:%M:%S", time.localtime(e["time_ms"] / 1000))
    stamp += f".{e['time_ms'] % 1000:03d}"
    errors = ",".join(n for n in e["errors"] if n != "NONE") or "NONE"
    fault = f" fault={e['fault']}" if e["fault"] else ""
    outcome = "" if e["outcome"] == "answered" else f" [{e['outcome']}]"
    return (
        f"{e['seq']:>6} {stamp} {e['api']} v{e['version']} corr={e['correlation_id']} "
        f"client={e['client_id']} conn={e['connection']} {errors} {e['latency_ms']:.1f}ms"
        f"{fault}{outcome} {_fields(e['request'] or e['response'])}"
    ).rstrip()


def _fields(summary: dict[str, Any]) -> str:
    parts = []
    for k, v in summary.items():
        if isinstance(v, list) and all(isinstance(x, str | int) for x in v):
            parts.append(f"{k}={','.join(map(str, v))}")
        elif isinstance(v, list) and k != "topics":
            parts += [_fields(x) for x in v if isinstance(x, dict)]
        elif not isinstance(v, list | dict):
            parts.append(f"{k}={v}")
    for t in summary.get("topics") or ():
        partitions = ",".join(_partition(p) for p in t.get("partitions") or ())
        parts.append(f"{t['topic']}:{partitions}" if partitions else str(t["topic"]))
    return " ".join(p for p in parts if p)


def _partition(p: dict[str, Any]) -> str:
    rest = [f"{k}={v}" for k, v in p.items() if k != "partition" and not isinstance(v, list | dict)]
    return str(p.get("partition")) + (f"({' '.join(rest)})" if rest else "")


def _connections(args: argparse.Namespace, out: Output) -> None:
    if args.action == "close":
        spec = {
            name: getattr(args, name)
            for name in ("connection", "client_id", "address")
            if getattr(args, name) is not None
        }
        rows = _call(args, "POST", "/v1/connections/close", spec)["closed"]
    else:
        rows = _call(args, "GET", "/v1/connections")["connections"]
    if args.output == "json":
        out.json(rows)
        return
    out.table(
        ["ID", "CLIENT-ID", "ADDRESS", "REQUESTS", "API-VERSIONS"],
        [
            [
                c["connection"],
                c["client_id"],
                c["address"],
                c["requests"],
                " ".join(f"{k}:{v}" for k, v in c["api_versions"].items()),
            ]
            for c in rows
        ],
    )


def _cluster(args: argparse.Namespace, out: Output) -> None:
    if args.action == "show":
        answer = _call(args, "GET", "/v1/cluster")
        if args.output == "json":
            out.json(answer)
            return
        out.table(
            ["BROKER", "RUNNING", "LISTENERS"],
            [
                [b["id"], b["running"], " ".join(f"{k}={v}" for k, v in b["listeners"].items())]
                for b in answer["brokers"]
            ],
        )
        rows = answer["partitions"]
    elif args.action == "leader":
        body = {"topic": args.topic, "partition": args.partition, "broker": args.broker}
        rows = [_call(args, "POST", "/v1/cluster/leader", body)]
    elif args.action == "coordinator":
        body = {"broker": args.broker}
        if args.group_id is not None:
            body["group_id"] = args.group_id
        else:
            body["transactional_id"] = args.transactional_id
        rows = [_call(args, "POST", "/v1/cluster/coordinator", body)]
    else:
        answer = _call(args, "POST", f"/v1/brokers/{args.id}/{args.action}", {})
        if args.output == "json":
            out.json(answer)
        else:
            done = {"stop": "stopped", "start": "started"}[args.action]
            out.line(f"broker {answer['broker']} {done}; running: {answer['live']}")
        return
    if args.output == "json":
        out.json(rows)
        return
    out.table(
        ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"],
        [
            [
                p["topic"],
                p["partition"],
                p["leader"],
                p["leader_epoch"],
                ",".join(map(str, p["replicas"])),
                ",".join(map(str, p["isr"])),
            ]
            for p in rows
        ],
    )
