"""The documented experiment, small: the plan-aware agent (``collaborative-plans``) and the
chat-only collaborative agent (``collaborative``), each with a simulated user, run by
``cogym-lab eval run`` on the same instances, then compared by ``cogym-lab eval report``.

The LMs are scripted (our real LM client over aiohttp against a loopback OpenAI-compatible
server). The simulated user co-plans through its own prompts: it picks the proposed plan and runs
it, then finishes once the plan output is written.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.agents.test_plan_aware_agent import PlanRolePlay
from tests.support.lm_scripts import TodoRolePlay, classify, system_text, user_choice

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(400)]


class PlansWithSimulatedUser:
    """The plan-aware agent's LM (``agent-lm``) and a simulated user's (``user-lm``) who picks
    the proposed plan, runs it, and finishes once the plan output is written."""

    def __init__(self) -> None:
        self.agent = PlanRolePlay()
        self.user_moves: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        if body["model"] == "agent-lm":
            return self.agent(body)
        kind, seen = classify(body), system_text(body)
        proposed = "Proposed plan 0" in seen
        not_started = "The plan:" in seen and "step by step" in seen and ", done]" not in seen
        if kind == "user-decide":
            move = ("task_action" if proposed or not_started else
                    "finish" if "Plan output:" in seen else "nothing")
            self.user_moves.append(move)
            return user_choice(body, move)
        if kind == "user-action":
            return "Action: SELECT_PLAN(index=0)" if proposed else "Action: RUN_ALL()"
        if kind in ("user-answer", "user-feedback"):
            return "Message: Sounds good."
        return Reply(status=500, error=f"no scripted reply for {kind}")


def run(team: str, out: Path, responder: Any) -> None:
    with ScriptedOpenAIServer(responder=responder) as server:
        ran = CliRunner().invoke(main, [
            "eval", "run", "--task", "todo", "--team", team, "--instances", "0",
            "--out", str(out), "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--base-url", server.base_url, "--idle-seconds", "2", "--no-progress"])
    assert ran.exit_code == 0, ran.output
    assert "1/1 sessions finished" in " ".join(ran.output.split()), ran.output


def test_plans_against_chat_on_the_same_instance(tmp_path) -> None:
    plans, chat = tmp_path / "plans", tmp_path / "chat"
    co_planning = PlansWithSimulatedUser()
    run("collaborative-plans", plans, co_planning)
    run("collaborative", chat, TodoRolePlay())

    session = read_session(plans / "000")
    assert session["env_args"]["plans"] is True and session["task"] == "todo"
    assert session["end_reason"] == "finished"
    plan = next(c["content"] for c in session["final_state"]["views"]["user"]["components"]
                if c["name"] == PLAN_COMPONENT)
    assert [s["status"] for s in plan["plan"]["steps"]] == ["done"] * 3 and plan["output"]
    assert "task_action" in co_planning.user_moves and co_planning.user_moves[-1] == "finish"
    assert "env_args" in read_session(chat / "000") and \
        "plans" not in read_session(chat / "000")["env_args"]

    out = tmp_path / "report"
    reported = CliRunner().invoke(main, ["eval", "report", str(plans), str(chat),
                                         "--out", str(out)])
    assert reported.exit_code == 0, reported.output
    text = reported.output  # a row per agent type: plan-aware against collaborative
    assert "plan-aware" in text and "collaborative" in text and "Interactive plans" in text
    with (out / "plans.csv").open(encoding="utf-8") as rows:
        planned = list(csv.DictReader(rows))
    assert [row["agent_type"] for row in planned] == ["plan-aware"], planned
    assert float(planned[0]["steps_agent"]) == 3 and float(planned[0]["item_ratio"]) == 1
