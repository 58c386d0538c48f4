"""A coordinator timer's records go into __consumer_offsets in the step that decides them.

Kafka's CoordinatorRuntime appends a result's records in the event that produced it; if
the append ran later (in a task of its own), a commit or DeleteGroups handled in between
would stand before the timer's record in the log, and replay would bring back a deleted
group or drop a commit. A trio Instrument checks the invariant after every task step.
"""

from __future__ import annotations

from typing import Any

import trio

from broker.context import RequestContext
from broker.handlers import join_group, sync_group
from broker.routes import ROUTES
from protocol.errors import ErrorCode
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from storage.layout import OFFSETS_TOPIC
from tests.reliability.inproc import running


def _ctx(broker: Any, version: int) -> RequestContext:
    return RequestContext(broker, version, "client", "/127.0.0.1", 1, ROUTES)


class _LogFollowsState(trio.abc.Instrument):
    """After each task step: when the group has become Empty, the GroupMetadata record of
    that change is already in the log."""

    def __init__(self, broker: Any, group_id: str) -> None:
        self.broker = broker
        self.group_id = group_id
        self.log_end_at_stable: int | None = None
        self.violations: list[str] = []
        self.saw_empty = False
        self.emptied = trio.Event()

    def _log_end(self) -> int:
        topic = self.broker.topics.get(OFFSETS_TOPIC)
        pid = self.broker.coordinator.coordinator.partition_for(self.group_id)
        return topic.partitions[pid].log.log_end_offset

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        group = self.broker.coordinator.coordinator.group(self.group_id)
        if group is None:
            return
        state = str(group.state)
        if state == "Stable":
            self.log_end_at_stable = self._log_end()
        elif state == "Empty" and self.log_end_at_stable is not None and not self.saw_empty:
            self.saw_empty = True
            self.emptied.set()
            if self._log_end() <= self.log_end_at_stable:
                self.violations.append(f"after a step of {task.name}: Empty, record not in log")


async def test_a_session_expiry_is_in_the_log_in_the_step_that_decides_it(tmp_path: Any) -> None:
    with trio.fail_after(30):
        async with running(tmp_path, **{"group.min.session.timeout.ms": 10}) as broker:
            joined = await join_group.handle(
                _ctx(broker, 4),
                JoinGroupRequest(
                    group_id="g",
                    session_timeout_ms=200,
                    rebalance_timeout_ms=200,
                    member_id="",
                    protocol_type="consumer",
                    protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
                ),
            )
            assert joined.error_code == ErrorCode.MEMBER_ID_REQUIRED
            join = JoinGroupRequest(
                group_id="g",
                session_timeout_ms=200,
                rebalance_timeout_ms=200,
                member_id=joined.member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
            )
            joined = await join_group.handle(_ctx(broker, 4), join)
            assert joined.error_code == ErrorCode.NONE
            synced = await sync_group.handle(
                _ctx(broker, 3),
                SyncGroupRequest(
                    group_id="g",
                    generation_id=joined.generation_id,
                    member_id=joined.member_id,
                    assignments=[
                        SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"")
                    ],
                ),
            )
            assert synced.error_code == ErrorCode.NONE
            check = _LogFollowsState(broker, "g")
            trio.lowlevel.add_instrument(check)
            try:
                check.after_task_step(trio.lowlevel.current_task())
                # No heartbeat: the session runs out and the timer empties the group.
                await check.emptied.wait()
            finally:
                trio.lowlevel.remove_instrument(check)
            assert check.violations == []
