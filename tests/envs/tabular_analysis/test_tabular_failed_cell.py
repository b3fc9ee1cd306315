"""A cell whose kernel failed to start is logged as that failure: the log replays without a
kernel, the session resumes from it, and the member who ran the cell may run one again.

The failure is a real one: the first run's kernel cannot start (its kernel spec is missing), so
the deferred work of the cell (start the kernel, run the code) raises. The resumed session's
kernel starts normally, as a retry would; had replay run the cell again, it would have
succeeded there.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.core.failures import FAILED
from cogym_lab.core.messages import Event, StepRequest, TeamMember, step_channel
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.nodes import Session, SessionConfig, replay
from cogym_lab.nodes.results import read_events, read_session

pytestmark = [pytest.mark.usefixtures("use_shared_data", "no_ambient_lm"),
              pytest.mark.timeout(240)]
TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="person", kind="person")]
CELL = 'EXECUTE_JUPYTER_CELL(code="print(6 * 7)")'


def tabular_session(env: TabularAnalysisEnv, bus: MemoryBus, session_id: str,
                    results: Path) -> Session:
    """A session whose seats are all the test's: it sends their steps on the bus."""
    return Session(env, {"agent": None, "person": None},
                   kinds={m.role: m.kind for m in TEAM}, bus=bus, session_id=session_id,
                   results_dir=results, task="tabular_analysis",
                   config=SessionConfig(idle_seconds=120, join_timeout=10, channel_ttl=None))


async def send(bus: MemoryBus, session_id: str, role: str, kind: str = "action",
               action: str | None = None) -> None:
    await bus.publish(step_channel(session_id), StepRequest(
        role=role, kind=kind, action=action, id=uuid.uuid4().hex).model_dump(mode="json"))


async def logged(results: Path, wanted: Callable[[Event], bool]) -> list[Event]:
    """The log, once an event in it is ``wanted``."""
    async with asyncio.timeout(120):
        while True:
            events = read_events(results) if (results / "events.jsonl").is_file() else []
            if any(wanted(event) for event in events):
                return events
            await asyncio.sleep(0.05)


async def test_a_cell_whose_kernel_failed_replays_as_that_failure_and_the_session_resumes(
        tmp_path: Path) -> None:
    results, session_id, bus = tmp_path / "session", "tab-" + uuid.uuid4().hex[:8], MemoryBus()
    first = TabularAnalysisEnv(instance=0)
    first._kernel().kernel_name = "cogym-no-such-kernel"  # its kernel cannot start: it fails
    session = tabular_session(first, bus, session_id, results)
    running = asyncio.create_task(session.run())
    for role in ("agent", "person"):
        await send(bus, session_id, role, "join")
    await send(bus, session_id, "agent", action=CELL)
    events = await logged(results, lambda e: e.info.get("deferred") is True)
    failure = events[-1]
    assert (failure.type.value, failure.actor, failure.info[FAILED]) == (
        "error", "agent", "NoSuchKernel")
    assert "cogym-no-such-kernel" in (failure.error or "")
    assert first.running == {}  # released: the agent may run a cell again
    await session.interrupt("server shut down")
    await asyncio.wait_for(running, 60)
    assert read_session(results)["status"] == "interrupted"

    # The server comes back: a fresh env (its kernel starts as usual) resumes from the log.
    second = TabularAnalysisEnv(instance=0)
    resumed = tabular_session(second, bus, session_id, results)
    restored = resumed.restore(read_events(results))
    assert restored.events == len(events) and restored.pending == []  # nothing runs again
    assert second.running == {} and second.cells == []
    running = asyncio.create_task(resumed.run())
    for role in ("agent", "person"):
        await send(bus, session_id, role, "join")
    await send(bus, session_id, "agent", action=CELL)
    await logged(results, lambda e: (e.action or "").startswith("RECORD_CELL"))
    await send(bus, session_id, "agent", action="FINISH()")
    result = await asyncio.wait_for(running, 60)
    assert result.end_reason == "finished"

    [cell] = second.cells
    assert cell["status"] == "ok" and cell["outputs"][0]["text"].strip() == "42"
    replayed = replay(results)  # the whole log, from a fresh env, no kernel
    assert replayed.final_state_checked
    assert replayed.final_state == read_session(results)["final_state"]
