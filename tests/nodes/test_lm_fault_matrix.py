"""The LM fault matrix: five ways an LM endpoint fails (hang, trickle, 5xx, 429 with a long
Retry-After, garbage) for each member whose LM can fail (the agent, the simulated user, the
judge), each on a real loopback server behind a real session.

Every session must end within its LM deadline (plus slack for a busy machine), with
``session.json``, the END event and the graded end naming whose LM failed and how; the report
over all fifteen must count them apart by class, with counts that add up, and leave them out
of delivery and performance unless asked to count them. All fifteen sessions run at once in
one event loop, each LM with a one-second deadline, so the whole matrix takes seconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.core.messages import EventType, status_channel
from cogym_lab.envs import make_env
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.eval import report as make_report
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.grading import GradingStatus
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.eval.test_score_reports import _Writer
from tests.support.lm_scripts import TodoRolePlay

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]

DEADLINE = 1.0  # seconds per LM call, retries included
SLACK = 3.0  # scheduling on a loaded two-core machine running fifteen sessions: never a speed claim
#: Each fault, its scripted reply (served for every request of the failing LM) and the failure
#: kind the session must name.
FAULTS: dict[str, tuple[Reply, str]] = {
    "hang": (Reply(delay=3600), "timeout"),
    "trickle": (Reply("A reply that arrives one byte at a time, far too slowly." * 4,
                      trickle=0.3), "trickle"),
    "5xx": (Reply(status=503, error="upstream unavailable"), "server_error"),
    "429": (Reply(status=429, headers={"Retry-After": "120"}, error="slow down"),
            "rate_limited"),
    "garbage": (Reply(garbage=b"<html>Bad gateway</html>"), "unreadable"),
}
CLASS_OF = {"agent": "agent_failure", "user": "simulator_error", "judge": "infrastructure"}


@dataclass
class Cell:
    member: str  # whose LM fails: agent, user or judge
    fault: str
    folder: Path
    elapsed: float = 0.0
    first_failing_call: float | None = None  # wall clock, when the failing LM was first asked
    ended_at: float | None = None
    graded: GradingStatus | None = None


def lm_settings(server: ScriptedOpenAIServer, model: str) -> dict[str, Any]:
    return {"model": model, "base_url": server.base_url, "deadline": DEADLINE,
            "max_retries": 4, "backoff": 0.05}


async def run_member_cell(cell: Cell) -> None:
    """A collaborative agent and a simulated user on the todo task; one of their LMs fails."""
    play = TodoRolePlay()
    fault, _ = FAULTS[cell.fault]
    failing = f"{cell.member}-lm"

    def responder(body: dict[str, Any]) -> str | Reply:
        return fault if body["model"] == failing else play(body)

    # The healthy agent answers at a human-ish pace, so a failing user is asked before the
    # agent could finish the list alone.
    with ScriptedOpenAIServer(responder=responder, latency={"agent-lm": 0.15}) as server:
        env = make_env("todo", instance=0)
        members, kinds = build_team(load_team("collaborative"), env, {
            "agent": lm_settings(server, "agent-lm"), "user": lm_settings(server, "user-lm")})
        await run_session(cell, env, members, kinds)
        cell.first_failing_call = next(r.received_at for r in server.chat_requests
                                       if r.body["model"] == failing)
        for member in members.values():
            await member.lm.aclose()


async def run_judge_cell(cell: Cell) -> None:
    """A writer delivers a Related Work section; the judge's LM fails while grading it."""
    fault, _ = FAULTS[cell.fault]
    with ScriptedOpenAIServer([fault]) as server:
        server.add(fault, repeat=True)
        judge = make_lm(LMConfig(**lm_settings(server, "judge-lm"), temperature=0))
        env = RelatedWorkEnv(instance=0, index_limit=300,
                             index_cache=str(cell.folder.parent / "index"), judge_lm=judge)
        await run_session(cell, env, {"agent": _Writer()}, {"agent": "agent"})
        cell.first_failing_call = server.chat_requests[0].received_at
        await judge.aclose()


async def run_session(cell: Cell, env: Any, members: dict[str, Any],
                      kinds: dict[str, Any]) -> None:
    bus = MemoryBus()
    await bus.connect()
    session = Session(env, members, kinds=kinds, bus=bus, results_dir=cell.folder,
                      config=SessionConfig(idle_seconds=2, max_idle_ticks=2, timeout=60))
    started = time.monotonic()
    await session.run()
    cell.elapsed = time.monotonic() - started
    cell.ended_at = time.time()
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)
    while (message := await statuses.get(timeout=0)) is not None:
        if "grading" in message:
            cell.graded = GradingStatus.model_validate(message)
    await bus.close()


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, datasets_dir) -> list[Cell]:
    """Every cell of the matrix, run at once in one event loop."""
    base = tmp_path_factory.mktemp("fault-matrix")
    cells = [Cell(member, fault, base / "run" / f"{member}-{fault}")
             for member in CLASS_OF for fault in FAULTS]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COGYM_DATA", str(datasets_dir))
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COGYM_MODEL"):
            patch.delenv(name, raising=False)
        # One index for the five judge cells, built before they start.
        RelatedWorkEnv(instance=0, index_limit=300, index_cache=str(base / "run" / "index"))

        async def everything() -> None:
            await asyncio.gather(*(run_judge_cell(cell) if cell.member == "judge"
                                   else run_member_cell(cell) for cell in cells))

        asyncio.run(everything())
    (base / "run" / "index").rename(base / "index")  # not a session folder of the report
    return cells


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("member", CLASS_OF)
def test_each_session_ends_in_time_naming_whose_lm_failed_and_how(matrix, member, fault):
    cell = next(c for c in matrix if (c.member, c.fault) == (member, fault))
    stored = read_session(cell.folder)
    failure = stored["failure"]
    assert stored["status"] == "finished"
    assert stored["outcome_class"] == CLASS_OF[member]
    assert (failure["member"], failure["side"]) == (member, member)
    assert failure["kind"] == FAULTS[fault][1], failure
    assert failure["model"] == f"{member}-lm"
    assert failure["endpoint"].startswith("http://127.0.0.1:")
    if fault == "429":
        assert failure["status"] == 429 and failure["retry_after"] == 120
        assert failure["attempts"] == 1  # a retry that could only start after the deadline
    if fault == "5xx":
        assert failure["status"] == 503
    assert cell.graded is not None and cell.graded.grading.failure is not None
    note = cell.graded.grading.note or ""
    if member == "judge":
        # The session itself ended well; its grade is what the failure cost.
        assert stored["end_reason"] == "finished" and stored["scores"] == {}
        assert note.startswith("Not graded: the grader's language model failed (")
        assert cell.ended_at - cell.first_failing_call < DEADLINE + SLACK
    else:
        assert stored["end_reason"] == "lm_failed"
        who = "the agent's" if member == "agent" else "the simulated user's"
        assert note.startswith(f"Not counted: {who} language model failed (")
        end = read_events(cell.folder)[-1]
        assert end.type is EventType.END and end.info["failure"]["kind"] == failure["kind"]
        # It ended at the failing call's deadline, not after idle ticks or the session timeout.
        assert end.time - cell.first_failing_call < DEADLINE + SLACK
        assert cell.elapsed < 30
        assert len(stored["lm_failures"]) >= 1
    for internal in ("HTTP", "127.0.0.1", f"{member}-lm", "Error"):
        assert internal not in note  # the panel's words are plain
    json.dumps(stored)


def test_the_report_counts_the_failures_apart_and_they_add_up(matrix):
    run = matrix[0].folder.parent
    report = make_report(run, effort=False, failures=False, audit=False)
    sessions = report.tables["sessions"]
    assert len(sessions) == len(matrix) == 15
    counts = sessions["outcome_class"].value_counts().to_dict()
    assert counts == {"agent_failure": 5, "simulator_error": 5, "infrastructure": 5}
    assert sessions["cause"].notna().all()
    summary = report.tables["summary"]
    classes = ["completed", "infrastructure", "simulator_error", "agent_failure"]
    assert (summary[classes].sum(axis=1) == summary["sessions"]).all()
    assert summary["sessions"].sum() == 15 and summary["counted"].sum() == 0
    assert summary["delivery_rate"].isna().all()  # nothing counted: no rate, not 0
    line = next(line for line in report.checks() if line.startswith("Outcomes:"))
    assert line.startswith("Outcomes: 15 sessions: 0 completed, 5 infrastructure, 5 simulator "
                           "error, 5 agent failure (15 left out of delivery")
    counted = make_report(run, effort=False, failures=False, audit=False,
                          include_failures=True)
    assert counted.tables["summary"]["counted"].sum() == 15
    assert counted.tables["summary"]["delivery_rate"].notna().all()
