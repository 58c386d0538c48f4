"""The README's tables say what the code does: the API table is the route table."""

from __future__ import annotations

import re
from pathlib import Path

from broker.config import SETTINGS
from broker.routes import all_routes

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_api_table_is_the_route_table():
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+)(?:-(\d+))? \|$", text, re.M)
    documented = {(name, int(key), int(lo), int(hi or lo)) for name, key, lo, hi in rows}
    served = {
        (r.name, r.api_key, r.request.VERSIONS.start, r.request.VERSIONS.stop - 1)
        for r in all_routes()
    }
    assert documented == served


def test_readme_starts_with_make_run_and_make_test():
    first_commands = [
        line.split()[0:2] for line in README.read_text().splitlines() if line.startswith("make ")
    ][:2]
    assert first_commands == [["make", "run"], ["make", "test"]]


def test_settings_named_in_the_readme_exist():
    text = README.read_text(encoding="utf-8")
    config_section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for name in re.findall(r"^\| `([a-z.]+)`", config_section, re.M):
        assert name in SETTINGS, name
