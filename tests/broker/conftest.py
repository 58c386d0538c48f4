"""Fixtures shared by the broker's tests."""

from __future__ import annotations

from typing import Any

import pytest
import trio


@pytest.fixture
async def fsync_gate(broker: Any, monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """The strict durability mode, with every fsync held until the event: an acks=all
    Produce or an OffsetCommit waits for its fsync until the test sets it."""
    broker.durability.strict = True
    gate = trio.Event()
    wait_durable = broker.durability.wait_durable

    async def held(plog: Any, end: int) -> None:
        await gate.wait()
        await wait_durable(plog, end)

    monkeypatch.setattr(broker.durability, "wait_durable", held)
    return gate
