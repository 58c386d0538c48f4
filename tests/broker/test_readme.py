"""The README's tables say what the code does: the API table is the route table, and the
configuration table's defaults are broker/config.py's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from broker.config import INT_MAX, LONG_MAX, SETTINGS, Setting
from broker.connection import MAX_DEFERRED
from broker.routes import all_routes, supported_versions

README = Path(__file__).resolve().parents[2] / "README.md"

# How the configuration table writes quantities: unit -> milliseconds or bytes.
TIME_UNITS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000}
SIZE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
# A setting's own unit, from the end of its name.
NAME_UNITS = {".ms": 1, ".minutes": 60_000, ".hours": 3_600_000}


def test_readme_api_table_is_the_route_table():
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+)(?:-(\d+))? \|$", text, re.M)
    documented = {(name, int(key), int(lo), int(hi or lo)) for name, key, lo, hi in rows}
    advertised = {v.api_key: (v.min_version, v.max_version) for v in supported_versions()}
    served = {(r.name, r.api_key, *advertised[r.api_key]) for r in all_routes()}
    assert documented == served


def test_readme_starts_with_make_run_and_make_test():
    first_commands = [
        line.split()[0:2] for line in README.read_text().splitlines() if line.startswith("make ")
    ][:2]
    assert first_commands == [["make", "run"], ["make", "test"]]


def config_rows() -> list[tuple[list[list[str]], list[str]]]:
    """The configuration table, a (settings, defaults) pair per row. The settings cell is
    comma-separated groups, one per default in the defaults cell; a group is a setting and
    the alternatives that override it (`log.roll.hours` / `.ms` names log.roll.ms too)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        settings_cell, defaults_cell = (cell.strip() for cell in line.split(" | ")[:2])
        groups = []
        for group in settings_cell.lstrip("| ").split(", "):
            first, *others = re.findall(r"`([a-z.]+)`", group)
            base = first.rsplit(".", 1)[0]
            groups.append([first] + [base + o if o.startswith(".") else o for o in others])
        rows.append((groups, defaults_cell.split(", ")))
    return rows


def readme_value(text: str, setting: Setting) -> Any:
    """What a default as the README writes it stands for, in `setting`'s own unit (`168 h`
    for log.retention.hours is 168, `10 min` for connections.max.idle.ms is 600000)."""
    text = re.sub(r" \(.*\)$", "", text.replace("**", ""))  # bold, "(off)"
    if m := re.fullmatch(r"`(.*)`", text):
        return m[1]
    if text == "unset":
        return None
    if text in ("true", "false"):
        return text == "true"
    if text == "Long.MAX":
        return LONG_MAX
    if text == "unlimited":
        return {"int": INT_MAX, "long": LONG_MAX}[setting.type]
    if m := re.fullmatch(r"the ([a-z.]+)", text):  # no value of its own: another setting's
        assert m[1] in SETTINGS, f"{setting.name}: {text!r} names no setting"
        assert m[1] in setting.doc, f"{setting.name}: its doc does not say it defaults to {m[1]}"
        return None
    m = re.fullmatch(r"(-?\d+)(?: (\w+))?", text)
    assert m, f"{setting.name}: cannot read the README default {text!r}"
    number, unit = int(m[1]), m[2]
    if unit is None:
        return number
    time_unit = next((f for end, f in NAME_UNITS.items() if setting.name.endswith(end)), None)
    units, own = (TIME_UNITS, time_unit) if time_unit is not None else (SIZE_UNITS, 1)
    assert unit in units, f"{setting.name}: {text!r}: {unit} is not a unit of this setting"
    assert number * units[unit] % own == 0, f"{setting.name}: {text!r} is not whole in its unit"
    return number * units[unit] // own


def test_settings_named_in_the_readme_exist():
    for groups, _ in config_rows():
        for name in (name for group in groups for name in group):
            assert name in SETTINGS, name


def test_readme_configuration_defaults_are_the_config_defaults():
    rows = config_rows()
    assert rows, "no configuration table in the README"
    for groups, defaults in rows:
        assert len(groups) == len(defaults), f"{groups}: one default each, not {defaults}"
        for (name, *overrides), stated in zip(groups, defaults, strict=True):
            setting = SETTINGS[name]
            assert readme_value(stated, setting) == setting.default, (
                f"README: {name} defaults to {stated!r}; broker/config.py: {setting.default!r}"
            )
            # The stated default is the one in force only while the overrides are unset.
            for other in overrides:
                assert SETTINGS[other].default is None, (
                    f"README: {name} defaults to {stated!r}, but {other} is set by default "
                    f"({SETTINGS[other].default!r})"
                )


def test_readme_states_the_deferred_produce_bound_of_the_code():
    text = " ".join(README.read_text(encoding="utf-8").split())
    stated = re.findall(r"up to (\d+) waiting Produce responses per connection", text)
    assert stated == [str(MAX_DEFERRED)]
