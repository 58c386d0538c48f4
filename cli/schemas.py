"""`kmock schemas list | get | register | delete | compat`: the schema registry's REST API
(`kmock serve --schema-registry-port`) from the command line, over HTTP with the standard
library. Errors are the registry's own: its message and Confluent error code, exit 1; an
incompatible schema (`register` refused with 409, or `compat` saying no) exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from cli.output import EXIT_OK, EXIT_REFUSED, Failed, Output, Parser, Refused

__all__ = ["register", "run"]

DEFAULT_URL = "http://127.0.0.1:8081"  # Confluent's listeners default
URL_ENV = "KMOCK_SCHEMA_REGISTRY_URL"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def register(sub: Any) -> None:
    """Add `schemas` to the `kmock` subparsers."""
    common = Parser(add_help=False)
    common.add_argument(
        "--url",
        default=os.environ.get(URL_ENV, DEFAULT_URL),
        help=f"the schema registry (default ${URL_ENV}, else {DEFAULT_URL})",
    )
    common.add_argument("--timeout-s", type=float, default=30.0, metavar="S")
    common.add_argument("--output", choices=("text", "json"), default="text")
    schema_src = Parser(add_help=False)
    src = schema_src.add_mutually_exclusive_group(required=True)
    src.add_argument("--schema", help="the schema text")
    src.add_argument("--file", type=Path, help="a file holding the schema (.avsc, .json, .proto)")
    schema_src.add_argument(
        "--type",
        default=None,
        choices=("AVRO", "JSON", "PROTOBUF"),
        help="schema type (default: from the file's suffix, else AVRO)",
    )
    schema_src.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=SUBJECT:VERSION",
        help="a schema reference (repeatable)",
    )

    top = sub.add_parser("schemas", help="the schema registry: subjects, schemas, compatibility")
    ssub = top.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=Parser)
    p = ssub.add_parser("list", parents=[common], help="list subjects and their versions")
    p.add_argument("--deleted", action="store_true", help="include soft-deleted ones")
    p.add_argument("--prefix", default="", help="only subjects starting with this")
    p.set_defaults(func=run)
    p = ssub.add_parser("get", parents=[common], help="a subject's version, or a schema by id")
    p.add_argument("subject", nargs="?")
    p.add_argument("--version", default="latest")
    p.add_argument("--id", type=int, help="the schema with this global id (no subject)")
    p.set_defaults(func=run)
    p = ssub.add_parser(
        "register", parents=[common, schema_src], help="register a schema under a subject"
    )
    p.add_argument("subject")
    p.set_defaults(func=run)
    p = ssub.add_parser("delete", parents=[common], help="delete a subject or one version")
    p.add_argument("subject")
    p.add_argument("--version", help="only this version (default: the whole subject)")
    p.add_argument("--permanent", action="store_true", help="hard delete (after a soft delete)")
    p.set_defaults(func=run)
    p = ssub.add_parser(
        "compat",
        parents=[common, schema_src],
        help="check a schema against a subject's compatibility level",
    )
    p.add_argument("subject")
    p.add_argument("--version", help="only against this version (default: as registering)")
    p.set_defaults(func=run)


def _request(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    url = args.url.rstrip("/") + path
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE},
    )
    try:
        with urllib.request.urlopen(req, timeout=args.timeout_s) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            err = json.loads(e.read())
            message, code = err["message"], err["error_code"]
        except (ValueError, KeyError, TypeError):
            raise Failed(f"{method} {url}: HTTP {e.code}") from None
        if code == 409:
            raise Refused(f"{message} (error {code})") from None
        raise Failed(f"{message} (error {code})") from None
    except (urllib.error.URLError, OSError) as e:
        raise Failed(f"cannot reach the schema registry at {args.url}: {e}") from None


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _schema_body(args: argparse.Namespace) -> dict[str, Any]:
    if args.file is not None:
        try:
            text = args.file.read_text()
        except OSError as e:
            raise Failed(f"{args.file}: {e.strerror}") from None
        suffix = {".proto": "PROTOBUF", ".json": "JSON"}.get(args.file.suffix, "AVRO")
    else:
        text, suffix = args.schema, "AVRO"
    body: dict[str, Any] = {"schema": text, "schemaType": args.type or suffix}
    refs = []
    for ref in args.reference:
        name, _, rest = ref.partition("=")
        subject, _, version = rest.rpartition(":")
        if not name or not subject or not version.isdigit():
            raise Failed(f"--reference {ref!r}: expected NAME=SUBJECT:VERSION")
        refs.append({"name": name, "subject": subject, "version": int(version)})
    if refs:
        body["references"] = refs
    return body


def run(args: argparse.Namespace, out: Output) -> int:
    as_json = args.output == "json"
    action = args.action
    if action == "list":
        query = urllib.parse.urlencode(
            {"deleted": str(args.deleted).lower(), "subjectPrefix": args.prefix}
        )
        rows = []
        for subject in _request(args, "GET", f"/subjects?{query}"):
            versions = _request(
                args, "GET", f"/subjects/{_q(subject)}/versions?deleted={str(args.deleted).lower()}"
            )
            latest = _request(args, "GET", f"/subjects/{_q(subject)}/versions/latest")
            rows.append(
                {
                    "subject": subject,
                    "versions": versions,
                    "latest_id": latest["id"],
                    "schema_type": latest.get("schemaType", "AVRO"),
                }
            )
        if as_json:
            out.json(rows)
        else:
            out.table(
                ["SUBJECT", "VERSIONS", "LATEST-ID", "TYPE"],
                [
                    [
                        r["subject"],
                        ",".join(map(str, r["versions"])),
                        r["latest_id"],
                        r["schema_type"],
                    ]
                    for r in rows
                ],
            )
        return EXIT_OK
    if action == "get":
        if args.id is not None:
            found = _request(args, "GET", f"/schemas/ids/{args.id}")
            found = {"id": args.id, **found}
        elif args.subject:
            found = _request(
                args, "GET", f"/subjects/{_q(args.subject)}/versions/{_q(args.version)}"
            )
        else:
            raise Failed("name a subject, or --id")
        if as_json:
            out.json(found)
        else:
            where = f"{found['subject']} v{found['version']} " if "subject" in found else ""
            out.line(f"# {where}id {found['id']} {found.get('schemaType', 'AVRO')}")
            out.line(found["schema"])
        return EXIT_OK
    if action == "register":
        result = _request(
            args, "POST", f"/subjects/{_q(args.subject)}/versions", _schema_body(args)
        )
        if as_json:
            out.json(result)
        else:
            out.line(f"registered under {args.subject}: id {result['id']}")
        return EXIT_OK
    if action == "delete":
        path = f"/subjects/{_q(args.subject)}"
        if args.version is not None:
            path += f"/versions/{_q(args.version)}"
        deleted = _request(args, "DELETE", f"{path}?permanent={str(args.permanent).lower()}")
        if as_json:
            out.json(deleted)
        else:
            versions = deleted if isinstance(deleted, list) else [deleted]
            kind = "permanently deleted" if args.permanent else "deleted"
            out.line(f"{kind} {args.subject} version(s) {', '.join(map(str, versions))}")
        return EXIT_OK
    # compat
    path = f"/compatibility/subjects/{_q(args.subject)}/versions"
    if args.version is not None:
        path += f"/{_q(args.version)}"
    result = _request(args, "POST", f"{path}?verbose=true", _schema_body(args))
    if as_json:
        out.json(result)
    else:
        out.line("compatible" if result["is_compatible"] else "incompatible")
        for message in result.get("messages", ()):
            out.line(f"  {message}")
    return EXIT_OK if result["is_compatible"] else EXIT_REFUSED
