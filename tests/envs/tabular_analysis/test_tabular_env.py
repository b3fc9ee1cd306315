"""The Tabular Analysis env: cells run in a real kernel as deferred work and land in the shared
notebook; a scripted session runs end to end through `cogym-lab run` on a real instance; the
scoring protocol picks the instance set and what `performance` means."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogym_lab.agents.render import render_component
from cogym_lab.cli.main import main
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.notified import notified
from tests.support.tabular_scripts import TabularRolePlay

pytestmark = [pytest.mark.usefixtures("use_shared_data", "no_ambient_lm"),
              pytest.mark.timeout(180)]
TEAM = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]


def judge_reply(answer: str, same_context: bool = True) -> str:
    """A judge's answers: one sub-hypothesis each side, two variables, both found."""
    part = {"text": "the finding", "context": "all sites", "variables": ["a", "b"],
            "relations": "positive"}
    return json.dumps({
        "gold_sub_hypotheses": [part],
        "generated_sub_hypotheses": [{**part, "context": "every site",
                                      "same_context_as_gold": [1] if same_context else []}],
        "variables": {"sizeA": 2, "sizeB": 2, "intersection": 2, "explanation": "a and b"},
        "relation": {"answer": answer, "explanation": "direction only"}})


JUDGE = judge_reply("B) similar but general than HypoA")  # right context, vaguer relation


def first_csv(env: TabularAnalysisEnv) -> str:
    return next(name for name in env.task.file_names if name.endswith(".csv"))


async def test_a_cell_runs_in_the_kernel_and_lands_in_the_shared_notebook(tmp_path):
    env = TabularAnalysisEnv(instance=0, workdir=str(tmp_path))
    coordinator = Coordinator(env, TEAM, session_id="tab")
    start = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    assert env.task.query in start["agent"].context.task_description
    assert env.task.gold_hypothesis not in json.dumps(start["agent"].model_dump(mode="json"))
    assert (tmp_path / first_csv(env)).is_file()  # the instance's tables are in the workdir
    try:
        code = f"import pandas as pd\ndf = pd.read_csv({first_csv(env)!r})\nprint(len(df))"
        started = coordinator.handle("agent", {"name": "EXECUTE_JUPYTER_CELL",
                                               "args": {"code": code}}, 1.0)
        assert sorted(n.recipient for n in notified(coordinator, started)) == ["agent", "user"]
        assert notified(coordinator, started)[0].view["notebook"].content["running"] == {"agent": code}
        again = coordinator.handle("agent", 'EXECUTE_JUPYTER_CELL(code="1")', 1.5)
        assert again.events[0].status == "error" and "still running" in again.events[0].error
        (role, deferred), = started.deferred
        landed = coordinator.apply_follow_up(role, await deferred.work(), 2.0)
        cell = notified(coordinator, landed)[0].view["notebook"].content["cells"][0]
        forged = coordinator.handle("user", {"name": "RECORD_CELL", "args": {
            "code": "x", "result": {}}}, 3.0)
    finally:
        await env.aclose()
    assert env.executor is not None and not env.executor.alive  # shut down with the session
    assert cell["status"] == "ok" and cell["ran_by"] == "agent"
    assert int(cell["outputs"][0]["text"].strip()) > 0  # real pandas on the real CSV
    assert forged.events[0].status == "error"  # nobody may forge outputs
    shown = render_component(notified(coordinator, landed)[0].view["notebook"])
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
    # cogym (the default): performance is DiscoveryBench's recall_context; the rest beside it
    assert meta["protocol"] == "cogym" and play.judged == 1
    assert meta["scores"] == {"performance": 1.0, "recall_context": 1.0, "hms": 0.5,
                              "context_f1_relation": 0.5}
    cells = meta["final_state"]["views"]["agent"]["components"][0]["content"]["cells"]
    assert [c["status"] for c in cells] == ["ok", "ok"]
    assert cells[0]["outputs"][0]["text"].startswith("rows")
    replayed = replay(session)  # from the log alone: no kernel, same notebook
    assert replayed.final_state == meta["final_state"]


def test_the_protocol_picks_the_instance_set():
    assert len(TabularAnalysisEnv.instances()) == 110  # cogym: the multi-table queries
    assert len(TabularAnalysisEnv.instances("cogym_lab")) == 117  # and the unprocessed ones
    last = make_env("tabular_analysis", instance=116, protocol="cogym_lab")
    assert last.env_args() == {"instance": 116, "protocol": "cogym_lab"}
    assert last.task.domain == "worldbank_education_gdp_indicators"
    with pytest.raises(IndexError, match="0 to 109"):
        make_env("tabular_analysis", instance=116)
    # the two sets number their first 104 queries alike
    assert TabularAnalysisEnv(instance=103).task == \
        TabularAnalysisEnv(instance=103, protocol="cogym_lab").task
    assert TabularAnalysisEnv(instance=104).task.domain == "worldbank_education_gdp_indicators"
    assert TabularAnalysisEnv(instance=104, protocol="cogym_lab").task.domain == "nls_raw"


def test_hidden_strings_hold_the_gold_and_none_for_a_custom_query():
    env = TabularAnalysisEnv(instance=0)
    hidden = env.hidden_strings()
    assert hidden[0] == env.task.gold_hypothesis
    assert any(h in env.task.domain_knowledge for h in hidden[1:])
    assert TabularAnalysisEnv(query="What drives sales?", data="sales.csv").hidden_strings() == []


@pytest.mark.parametrize(("protocol", "answer", "performance", "hms", "product"), [
    # the relation differs: the release still counts the matched context as a success
    ("cogym", "C) different", 1.0, 0.0, 0.0),
    ("cogym_lab", "C) different", 0.0, 0.0, 0.0),
    ("cogym", "A) very similar", 1.0, 1.0, 1.0),
    ("cogym_lab", "B) similar but general than HypoA", 0.5, 0.5, 0.5),
])
async def test_performance_follows_the_protocol(tmp_path, server, protocol, answer,
                                                performance, hms, product):
    server.add(judge_reply(answer))
    env = TabularAnalysisEnv(instance=5, protocol=protocol, workdir=str(tmp_path),
                             judge_lm=make_lm(LMConfig(model="judge", base_url=server.base_url,
                                                       temperature=0, max_retries=0)))
    coordinator = Coordinator(env, TEAM, session_id="scored")
    coordinator.start(0.0)
    coordinator.handle("agent", {"name": "EDITOR_UPDATE", "args": {
        "text": "Monument sizes peak around 3000 BCE."}}, 1.0)
    scores = await env.aevaluate()
    await env.aclose()
    assert scores == {"performance": performance, "recall_context": 1.0, "hms": hms,
                      "context_f1_relation": product}
    assert env.task.gold_hypothesis in server.bodies[0]["messages"][-1]["content"]


async def test_unmatched_contexts_score_zero_under_both_protocols(tmp_path, server):
    for protocol in ("cogym", "cogym_lab"):
        server.add(judge_reply("A) very similar", same_context=False))
        env = TabularAnalysisEnv(instance=1, protocol=protocol, workdir=str(tmp_path / protocol),
                                 judge_lm=make_lm(LMConfig(model="judge",
                                                           base_url=server.base_url)))
        Coordinator(env, TEAM, session_id=protocol).start(0.0)
        env.editor_update("agent", "Something else entirely.")
        assert await env.aevaluate() == {"performance": 0.0, "recall_context": 0.0, "hms": 0.0,
                                         "context_f1_relation": 0.0}
        await env.aclose()
