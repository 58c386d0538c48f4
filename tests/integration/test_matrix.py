"""The matrix is complete: every client either has a test for every scenario or says why
its API cannot express it. Nothing is left out silently."""

from __future__ import annotations

import importlib

import pytest

from tests.integration import matrix

pytestmark = pytest.mark.integration

MODULES = {
    "kafka-python": "tests.integration.test_kafka_python",
    "aiokafka": "tests.integration.test_aiokafka",
    "confluent-kafka": "tests.integration.test_confluent_kafka",
    "kcat": "tests.integration.test_kcat",
    "kafkajs": "tests.integration.test_kafkajs",
    "sarama": "tests.integration.test_sarama",
}


def cells(module) -> list[str]:
    out = []
    for fn in vars(module).values():
        name = getattr(fn, "kmock_scenario", None)
        if name is None or getattr(fn, "kmock_release", None) is not None:
            continue  # cells against an older kafka.version are optional (RELEASE_SCENARIOS)
        codecs = [
            p
            for mark in getattr(fn, "pytestmark", [])
            if mark.name == "parametrize" and mark.args[0] == "codec"
            for p in mark.args[1]
        ]
        out += [name.format(codec=c) for c in codecs] if "{codec}" in name else [name]
    return out


def test_every_client_has_a_module():
    assert sorted(MODULES) == sorted(matrix.CLIENTS)


@pytest.mark.parametrize("client", matrix.CLIENTS)
def test_every_scenario_is_tested_or_not_expressible(client):
    module = importlib.import_module(MODULES[client])
    assert client == module.CLIENT
    tested = cells(module)
    assert len(tested) == len(set(tested)), f"scenarios tested twice: {tested}"
    declined = set(module.NOT_EXPRESSIBLE)
    assert not set(tested) & declined, "a scenario both tested and declared not expressible"
    assert set(tested) | declined == set(matrix.SCENARIOS), (
        f"missing: {sorted(set(matrix.SCENARIOS) - set(tested) - declined)}; "
        f"unknown: {sorted((set(tested) | declined) - set(matrix.SCENARIOS))}"
    )
    assert all(why.strip() for why in module.NOT_EXPRESSIBLE.values())


def test_render_marks_every_cell():
    results = {
        ("kafka-python", "metadata"): matrix.Result("passed"),
        ("aiokafka", "metadata"): matrix.Result("failed", "boom: it broke"),
    }
    text = matrix.render(results, {("kcat", "create-delete-topic"): "no admin"}, {})
    assert "**FAIL** [F1](#f1)" in text
    assert "boom: it broke" in text
    assert "n/e [N1](#n1)" in text
    assert "no admin" in text
    assert text.count("not run") == len(matrix.CLIENTS) * len(matrix.SCENARIOS) - 3


@pytest.mark.parametrize("client", matrix.CLIENTS)
def test_known_failures_name_tested_scenarios(client):
    module = importlib.import_module(MODULES[client])
    known = getattr(module, "KNOWN_FAILURES", {})
    assert set(known) <= set(cells(module)), "a known failure for a scenario with no test"
    assert all(why.strip() for why in known.values())
