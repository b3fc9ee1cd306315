"""The Tabular Analysis env: cells run in a real kernel as deferred work and land in the shared
notebook; a scripted session runs end to end through `cogym-lab run` on a real instance."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogym_lab import replay
from cogym_lab.agents.render import render_component
from cogym_lab.cli.main import main
from cogym_lab.core import Coordinator, Member
from cogym_lab.envs import make_env
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.tabular_scripts import TabularRolePlay

pytestmark = [pytest.mark.usefixtures("use_shared_data", "no_ambient_lm"),
              pytest.mark.timeout(180)]
TEAM = [Member(role="agent"), Member(role="user", kind="user")]
JUDGE = json.dumps({"context": {"match": True, "reason": "same data"},
                    "variables": {"gold": ["a", "b"], "findings": ["a", "b"],
                                  "matched": ["a", "b"]},
                    "relation": {"rating": "partial", "reason": "direction only"},
                    "reasoning": "Right variables, vaguer relation."})


def first_csv(env: TabularAnalysisEnv) -> str:
    return next(name for name in env.task.file_names if name.endswith(".csv"))


async def test_a_cell_runs_in_the_kernel_and_lands_in_the_shared_notebook(tmp_path):
    env = TabularAnalysisEnv(instance=0, workdir=str(tmp_path))
    coordinator = Coordinator(env, TEAM, session_id="tab")
    start = {n.recipient: n for n in coordinator.start(0.0).notifications}
    assert env.task.query in start["agent"].context.task_description
    assert env.task.gold_hypothesis not in json.dumps(start["agent"].model_dump(mode="json"))
    assert (tmp_path / first_csv(env)).is_file()  # the instance's tables are in the workdir
    try:
        code = f"import pandas as pd\ndf = pd.read_csv({first_csv(env)!r})\nprint(len(df))"
        started = coordinator.handle("agent", {"name": "EXECUTE_JUPYTER_CELL",
                                               "args": {"code": code}}, 1.0)
        assert sorted(n.recipient for n in started.notifications) == ["agent", "user"]
        assert started.notifications[0].view["notebook"].content["running"] == {"agent": code}
        again = coordinator.handle("agent", 'EXECUTE_JUPYTER_CELL(code="1")', 1.5)
        assert again.events[0].status == "error" and "still running" in again.events[0].error
        (role, deferred), = started.deferred
        landed = coordinator.apply_follow_up(role, await deferred.work(), 2.0)
        cell = landed.notifications[0].view["notebook"].content["cells"][0]
        forged = coordinator.handle("user", {"name": "RECORD_CELL", "args": {
            "code": "x", "result": {}}}, 3.0)
    finally:
        await env.aclose()
    assert env.executor is not None and not env.executor.alive  # shut down with the session
    assert cell["status"] == "ok" and cell["ran_by"] == "agent"
    assert int(cell["outputs"][0]["text"].strip()) > 0  # real pandas on the real CSV
    assert forged.events[0].status == "error"  # nobody may forge outputs
    shown = render_component(landed.notifications[0].view["notebook"])
    assert "In [1] (agent):" in shown and "pd.read_csv" in shown


def test_a_scripted_session_runs_end_to_end_through_the_command_line(tmp_path, monkeypatch):
    env = make_env("tabular_analysis", instance=0)
    play = TabularRolePlay(first_csv(env), JUDGE)
    with ScriptedOpenAIServer(responder=play) as server:
        monkeypatch.setenv("COGYM_MODEL", "tool-lm")  # the hypothesis judge
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = CliRunner().invoke(main, [
            "run", "--task", "tabular_analysis", "--instance", "0", "--team", "collaborative",
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--out", str(tmp_path), "--idle-seconds", "3"])
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    (session,) = tmp_path.iterdir()
    meta = read_session(session)
    assert meta["scores"]["performance"] == 0.5 and play.judged == 1
    cells = meta["final_state"]["views"]["agent"]["components"][0]["content"]["cells"]
    assert [c["status"] for c in cells] == ["ok", "ok"]
    assert cells[0]["outputs"][0]["text"].startswith("rows")
    replayed = replay(session)  # from the log alone: no kernel, same notebook
    assert replayed.final_state == meta["final_state"]
