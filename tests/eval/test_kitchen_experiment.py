"""The documented kitchen experiment (``examples/experiments/kitchen/``), small: two LM agents
with the rule-based assembler, short games of a few runs each, the scripted LM answering
through a loopback server whose replies wait a set latency, every game run by
``cogym-lab eval run`` and the lot reported by ``cogym-lab eval report``. Also the scripted
server's latency setting on its own."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
import time
import tomllib
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.paths import REPO_ROOT

RECIPE = REPO_ROOT / "examples" / "experiments" / "kitchen"


def recipe_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kitchen_recipe_{name}", RECIPE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    return module


# -- the scripted server's latency ----------------------------------------------------------------


def ask(server: ScriptedOpenAIServer, model: str) -> tuple[str, float]:
    """One chat request; the reply's text and the seconds it took."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = json.loads(answer.read())["choices"][0]["message"]["content"]
    return text, time.monotonic() - started


def test_a_server_wide_latency_holds_every_reply_back() -> None:
    with ScriptedOpenAIServer(responder=lambda body: "ok", latency=0.3) as server:
        text, seconds = ask(server, "any")
        assert text == "ok" and seconds >= 0.3  # a lower bound: never flaky
        server.latency = 0  # changed while serving
        assert server.latency_for({"model": "any"}) == 0


def test_a_latency_per_model_and_a_reply_s_own_delay_win() -> None:
    latency = {"slow-lm": 0.3, "*": 0.0}
    with ScriptedOpenAIServer(responder=lambda body: "ok", latency=latency) as server:
        assert server.latency_for({"model": "slow-lm"}) == 0.3
        assert server.latency_for({"model": "other"}) == 0.0
        assert ask(server, "slow-lm")[1] >= 0.3
        server.add(Reply("own", delay=0.0))  # its own delay (none) instead of the model's
        assert ask(server, "slow-lm")[0] == "own"
    assert ScriptedOpenAIServer(latency={"a": 1}).latency_for({"model": "b"}) == 0.0
    assert ScriptedOpenAIServer().latency_for({"model": "b"}) == 0.0  # as before: at once


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, True, "1", None, {"m": -2},
                                 {"m": "slow"}])
def test_a_latency_that_is_not_seconds_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="seconds"):
        ScriptedOpenAIServer(latency=bad)


# -- the recipe's parts -----------------------------------------------------------------------


def test_the_team_files_seed_each_run_and_swap_the_partner(tmp_path: Path) -> None:
    recipe = recipe_module("run_experiment")
    runs = recipe.plan_runs(tmp_path, ["kitchen-dpt"], ["m"], 2, "kitchen-beef")
    assert [r.number for r in runs] == [0, 1]
    team = tomllib.loads(runs[1].team.read_text())
    assert team["session"]["seed"] == 1 and team["members"]["agent"]["type"] == "kitchen-dpt"
    assert team["members"]["user"]["type"] == "kitchen-beef"
    assert team["members"]["agent"]["lm"]["temperature"] == 0.0
    alone = tomllib.loads(recipe.team_text("kitchen-act", "none", 3))
    assert list(alone["members"]) == ["agent"]
    ready = tomllib.loads(recipe.team_text("kitchen-react", None, 0))
    assert ready["members"]["user"]["type"] == "kitchen-partner"  # the ready team's own


def test_the_scripted_lm_answers_each_prompt_in_its_format() -> None:
    lm = recipe_module("scripted_lm")
    state = ("## Now\n\nTick 3 of 40.\n\n```\n{'objects': {('Beef', 'Fresh'): 0, "
             "('Beef', 'In-progress'): 1, ('Bread', ''): 0, ('BeefBurger', ''): 0}, "
             "'orders': [{'name': 'BeefBurger', 'remain_time': 30}, "
             "{'name': 'LettuceBurger', 'remain_time': 90}]}\n```\n")

    def body(heading: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "system", "content": "rules"},
                                           {"role": "user", "content": state + heading}]}

    move = lm.reply_to(body("# Your move\n..."))
    assert json.loads(move.split("```json\n")[1].split("```")[0]) == {
        "action": "prepare", "args": {"food": "Bread", "plate": False}}  # beef is cooking
    policy = lm.reply_to(body("# Code-as-policy\n..."))
    assert "['BeefBurger', 'LettuceBurger']" in policy and policy.startswith("```text")
    assert lm.reply_to(body("# Look back\n")).count("Things are going well") == 1
    unknown = lm.reply_to(body("# Something new"))
    assert isinstance(unknown, Reply) and unknown.status == 500
    assert lm.game_state({"messages": [{"content": "## Now\n```\n__import__('os')\n```"}]}) \
        == {}  # a state block is read as a literal, never run


# -- end to end -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_ambient_lm")
@pytest.mark.timeout(600)
def test_the_experiment_end_to_end_through_the_cli(tmp_path: Path) -> None:
    recipe = recipe_module("run_experiment")
    out = tmp_path / "kitchen"
    code = recipe.main(["--out", str(out), "--agents", "kitchen-act", "kitchen-dpt",
                        "--runs", "2", "--ticks", "40", "--tick-seconds", "0.05",
                        "--scripted", "scripted-fast=0.05", "--parallel", "4"])
    assert code == 0
    sessions = sorted(out.glob("runs/*/*/run-*/*/session.json"))
    assert len(sessions) == 4
    for path in sessions:
        session = json.loads(path.read_text())
        assert session["status"] == "finished" and session["end_reason"] == "time_up"
    assert sorted(json.loads(p.read_text())["config"]["seed"] for p in sessions) == [0, 0, 1, 1]
    with (out / "report" / "cooking.csv").open(encoding="utf-8") as rows:
        table = {row["agent_type"]: row for row in csv.DictReader(rows)}
    assert set(table) == {"kitchen-act", "kitchen-dpt"}
    for row in table.values():
        assert row["runs"] == "2" and row["layout"] == "counter_circuit"
        assert row["partner"] == "kitchen-partner" and row["model"] == "scripted-fast"
        assert float(row["ticks"]) == 40
        assert 0 <= float(row["agent_occupancy"]) <= 1
    act, dpt = table["kitchen-act"], table["kitchen-dpt"]
    assert float(act["latency_macro"]) >= 0.05  # every LM reply waited the server's latency
    assert act["score_efficiency"] == "" or float(act["score_efficiency"]) >= 0
    assert float(dpt["latency_policy"]) >= 0.05
    assert (out / "report" / "score_latency.png").read_bytes().startswith(b"\x89PNG")
    assert "Real-time cooking" in (out / "report" / "report.txt").read_text()
