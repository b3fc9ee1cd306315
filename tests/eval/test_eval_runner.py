"""The batch runner on real instances of each task, with scripted LMs on loopback: an autonomous
team and a collaborative team with the simulated user, both at concurrency 8; run.json; a failing
session recorded without stopping the batch; a report comparing the two runs."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

from cogym_lab.core.messages import EventType
from cogym_lab.envs import registry
from cogym_lab.envs.related_work.search import BM25PaperIndex
from cogym_lab.envs.travel_planning import TravelPlanningEnv
from cogym_lab.eval import RunSummary, run
from cogym_lab.eval.batch.instance_spec import parse_instances
from cogym_lab.eval.batch.manifest import read_run
from cogym_lab.eval.batch.seeds import trial_seed
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.eval_scripts import (
    ReportJudgePlay,
    RouteByInstance,
    related_work_routes,
    tabular_routes,
    travel_routes,
)

pytestmark = pytest.mark.timeout(600)
PAPER_SLICE = 3000  # papers in the related-work test index
INSTANCES = {"travel_planning": [0, 1, 2, 3], "related_work": [0, 1, 2],
             "tabular_analysis": [0, 1]}  # each tabular session starts a kernel: keep it small
# The scripted judges, scored by the default protocol: a rubric 4 is 4/5; a hypothesis with the
# right context is recall_context 1.
EXPECTED_PERFORMANCE = {"related_work": 0.8, "tabular_analysis": 1.0}
TOOL_CALLS = {"related_work": 2, "tabular_analysis": 1}  # per session: drafting + judge; judge
MODELS = {"agent": "agent-lm", "user": "user-lm"}


@dataclass
class TaskRuns:
    task: str
    instances: list[int]
    autonomous: RunSummary
    collaborative: RunSummary
    bodies: list[dict]
    routes: list


@pytest.fixture(scope="module")
def lm_free_environment():
    with pytest.MonkeyPatch.context() as patch:
        for name in (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL):
            patch.delenv(name, raising=False)
        yield patch


@pytest.fixture(scope="module", params=list(INSTANCES))
def task_runs(request, datasets_dir, tmp_path_factory, lm_free_environment) -> TaskRuns:
    """Both teams on a few real instances of one task, at concurrency 8."""
    task, instances = request.param, INSTANCES[request.param]
    patch = lm_free_environment
    patch.setenv("COGYM_DATA", str(datasets_dir))
    base = tmp_path_factory.mktemp(task)
    env_args: dict = {}
    if task == "related_work":
        index_cache = base / "index"
        BM25PaperIndex.load_or_build(cache_dir=index_cache, limit=PAPER_SLICE, progress=False)
        env_args = {"index_limit": PAPER_SLICE, "index_cache": str(index_cache)}
        routes = related_work_routes(instances)
    elif task == "tabular_analysis":
        routes = tabular_routes(instances, base / "peek")
    else:
        routes = travel_routes(instances)
    idle = 20.0 if task == "tabular_analysis" else 2.0  # kernels start slowly on a busy machine
    with ScriptedOpenAIServer(responder=RouteByInstance(routes)) as server:
        # No LM in the environment: every LM, the task's own tools (judge, drafting, plan
        # parser) included, is set by the run's arguments alone.
        summaries = {team: run(task, team, instances, out=base / team, concurrency=8,
                               models={**MODELS, "tools": "tool-lm"},
                               base_urls=server.base_url, env_args=env_args,
                               idle_seconds=idle, timeout=240, progress=False)
                     for team in ("autonomous", "collaborative")}
        bodies = server.bodies
    return TaskRuns(task, instances, summaries["autonomous"], summaries["collaborative"], bodies,
                    routes)


def _sessions(summary: RunSummary) -> dict[int, Path]:
    return {entry.instance: Path(summary.out) / entry.directory for entry in summary.sessions}


def test_both_teams_finish_and_deliver_every_instance(task_runs):
    for summary in (task_runs.autonomous, task_runs.collaborative):
        assert summary.status == "finished"
        # Counts also split the ended sessions by outcome class (issue 34): all completed here.
        assert summary.counts.model_dump() == {
            "total": len(task_runs.instances), "finished": len(task_runs.instances),
            "failed": 0, "pending": 0, "skipped": 0, "delivered": len(task_runs.instances),
            "completed": len(task_runs.instances), "infrastructure": 0, "simulator_error": 0,
            "agent_failure": 0}
        for instance, directory in _sessions(summary).items():
            assert directory.name == f"{instance:03d}"
            meta = read_session(directory)
            assert meta["status"] == "finished" and meta["end_reason"] == "finished"
            assert meta["env_args"]["instance"] == instance and meta["delivered"] is True
            assert meta["task"] == task_runs.task
            # one trial each: trial 0, with each LM member's, the tools' and the env's seed
            roles = {"agent", "env", "tools"} | ({"user"} if "user" in meta["lm_usage"] else set())
            assert meta["batch"] == {"run": summary.team, "instance": instance, "trial": 0,
                                     "seeds": {role: trial_seed(instance, 0, role)
                                               for role in roles}}
            expected = EXPECTED_PERFORMANCE.get(task_runs.task)
            if expected is not None:
                assert meta["scores"]["performance"] == expected
            else:  # travel: graded by the real checks against the database
                assert 0 < meta["scores"]["performance"] <= 1
                assert meta["scores"]["commonsense_pass_rate"] > 0


def test_sessions_of_a_batch_run_at_the_same_time(task_runs):
    for summary in (task_runs.autonomous, task_runs.collaborative):
        metas = [read_session(d) for d in _sessions(summary).values()]
        # every session had started before the first one ended: they overlapped
        assert max(m["started_at"] for m in metas) < min(m["ended_at"] for m in metas)


def test_the_autonomous_agent_works_alone_and_the_collaborative_one_collaborates(task_runs):
    collaboration = {EventType.MESSAGE, EventType.WAIT}
    for summary, collaborates in ((task_runs.autonomous, False),
                                  (task_runs.collaborative, True)):
        for directory in _sessions(summary).values():
            events = read_events(directory)
            acts = [e for e in events if e.type in collaboration and e.actor == "agent"]
            assert bool(acts) is collaborates
            assert any(e.type is EventType.FINISH for e in events)
            user_log = directory / "user" / "lm_calls.jsonl"
            if collaborates:
                assert user_log.read_text().strip()  # the simulated user took part
            else:  # the Fully Autonomous Agent works alone: no simulated user at all
                assert not user_log.exists() and {e.actor for e in events} <= {None, "agent"}
    autonomous_prompts = [b for b in task_runs.bodies if b["model"] == "agent-lm"
                          and "You work alone on this task" in b["messages"][0]["content"]]
    assert autonomous_prompts  # the autonomous team really ran the autonomous agent


def test_no_member_says_the_same_thing_twice(task_runs):
    """A member whose view lacked its own message would send it again (seen as the simulated
    user's feedback logged twice, 35 ms apart, before messages were echoed to their sender)."""
    for directory in _sessions(task_runs.collaborative).values():
        messages = [(e.actor, e.action) for e in read_events(directory)
                    if e.type is EventType.MESSAGE]
        assert messages and len(messages) == len(set(messages)), messages


def test_run_json_records_config_versions_lms_and_tokens(task_runs):
    for summary, team in ((task_runs.autonomous, "autonomous"),
                          (task_runs.collaborative, "collaborative")):
        written = json.loads((Path(summary.out) / "run.json").read_text())
        assert read_run(summary.out) == summary
        assert written["task"] == task_runs.task and written["team"] == team
        assert written["protocol"] == "cogym"  # the default, recorded
        assert written["team_config"]["members"]["agent"]["type"] == team
        roles = ["agent"] if team == "autonomous" else ["agent", "user"]  # the agent alone
        assert written["instances"] == task_runs.instances and written["concurrency"] == 8
        assert written["session_config"]["timeout"] == 240
        assert {role: lm["model"] for role, lm in written["lms"].items()} == {
            **{role: f"{role}-lm" for role in roles}, "tools": "tool-lm"}
        # aiohttp carries the LM calls; openai (installed for the tests) is no LM's and says so
        versions = written["versions"]
        assert versions["cogym_lab"] and versions["aiohttp"] == metadata.version("aiohttp")
        assert versions["openai"] == metadata.version("openai") + \
            " (installed; not used for LM calls)"
        assert len(written["invocations"]) == 1 and written["invocations"][0]["ran"] == len(
            task_runs.instances)
        # How late the loop the sessions ran on (the engine's own thread) woke; none when the
        # whole batch took less than one 100 ms tick (an autonomous team's scripted sessions can).
        lag = written["invocations"][0]["loop_lag"]
        if team == "collaborative" or lag is not None:  # sessions of seconds: many ticks
            assert lag["samples"] > 0 and 0 <= lag["p50_ms"] <= lag["p99_ms"] <= lag["max_ms"]
        # tokens: the run's totals are the sum of its sessions, which are the sum of the calls
        tokens = written["tokens"]
        assert tokens["total_tokens"] == sum(s["tokens"]["total_tokens"]
                                             for s in written["sessions"]) > 0
        assert {f"{role}-lm" for role in roles} <= set(tokens["by_model"])
        assert team != "autonomous" or "user-lm" not in tokens["by_model"]
        for entry in written["sessions"]:
            directory = Path(summary.out) / entry["directory"]
            calls = [json.loads(line) for role in roles
                     for line in (directory / role / "lm_calls.jsonl").read_text().splitlines()]
            logged = sum(c["usage"]["total_tokens"] for c in calls)
            by_model = entry["tokens"]["by_model"]
            members = sum(by_model[f"{role}-lm"]["prompt_tokens"] +
                          by_model[f"{role}-lm"]["completion_tokens"] for role in roles)
            assert members == logged > 0
            meta = read_session(directory)
            assert meta["protocol"] == "cogym"
            # Travel preferences and gold hypotheses are always hidden; a related-work task
            # may have no free-text requirement long enough to search for.
            assert meta["leakage"]["checked"] or task_runs.task == "related_work"
            assert meta["leakage"]["leaks"] == []  # the scripted agents never see hidden text
            usage = meta["lm_usage"]
            assert usage["agent"]["model"] == "agent-lm"
            assert "user" not in usage if team == "autonomous" else usage["user"]["calls"] > 0
        if task_runs.task in TOOL_CALLS:  # the task's own LM calls count too
            assert tokens["by_model"]["tool-lm"]["calls"] == TOOL_CALLS[task_runs.task] * len(
                task_runs.instances)


def test_a_report_compares_the_two_runs_with_plots(task_runs, tmp_path):
    from cogym_lab.eval import report

    judge = ReportJudgePlay(RouteByInstance(task_runs.routes))
    runs = {"autonomous": task_runs.autonomous, "collaborative": task_runs.collaborative}
    with ScriptedOpenAIServer(responder=judge) as server:
        result = report([summary.out for summary in runs.values()],
                        baseline=task_runs.autonomous.out, out=tmp_path,
                        judge={"model": "judge-lm", "base_url": server.base_url})
    n = len(task_runs.instances)
    summary = result.tables["summary"].set_index("agent_type")
    assert sorted(summary.index) == ["autonomous", "collaborative"]
    for team, run_summary in runs.items():
        scores = [s.scores["performance"] for s in run_summary.sessions]
        assert summary.loc[team, "sessions"] == n and summary.loc[team, "delivery_rate"] == 1
        assert summary.loc[team, "performance"] == pytest.approx(sum(scores) / n)
    if task_runs.task != "tabular_analysis":  # there, only the user writes in the chat
        assert 0 < summary.loc["collaborative", "h_init"] <= 1  # both sides took initiative
        assert judge.asked["messages"] >= n
    (comparison,) = result.tables["comparison"].to_dict("records")
    assert comparison["agent_type"] == "collaborative" and comparison["pairs"] == n
    assert comparison["compared"] == n and 0 <= comparison["win_rate"] <= 1
    assert judge.asked["pairwise"] == n
    text = result.to_text()
    assert "autonomous" in text and "collaborative" in text
    assert "Scoring protocol: cogym\n" in text
    checked = 2 * n if task_runs.task != "related_work" else None
    assert re.search(rf"Leakage check: {checked or '[0-9]+'} of {2 * n} sessions checked, "
                     r"0 with a leak", text)
    rates = result.tables["task_rates"]
    if task_runs.task == "travel_planning":  # TravelPlanner's own rates, per system
        assert sorted(rates["agent_type"]) == ["autonomous", "collaborative"]
        for column in ("commonsense_micro_pass_rate", "commonsense_macro_pass_rate",
                       "hard_micro_pass_rate", "hard_macro_pass_rate", "final_pass_rate"):
            assert rates[column].between(0, 1).all()
        assert "The task's own rates" in text and "final_pass_rate" in text
    else:
        assert rates.empty
    assert (tmp_path / "summary.csv").is_file() and (tmp_path / "comparison.csv").is_file()
    pngs = sorted(tmp_path.rglob("*.png"))
    assert {p.name for p in pngs} >= {"scaling_curves.png", "metric_bars.png"}
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000


# -- failures ---------------------------------------------------------------------------------

@dataclass
class BrokenTravel(TravelPlanningEnv):
    """Travel Planning whose instance 1 cannot be built and whose instance 2 fails at shutdown
    (as a kernel that will not stop might): two real ways a session fails."""

    def __post_init__(self) -> None:
        if self.instance == 1:
            raise ValueError("the record of instance 1 is corrupt")
        super().__post_init__()

    async def aclose(self) -> None:
        if self.instance == 2:
            raise RuntimeError("could not release the workspace of instance 2")
        await super().aclose()


def test_failed_sessions_are_recorded_and_the_batch_goes_on(use_shared_data, no_ambient_lm,
                                                            monkeypatch, tmp_path):
    monkeypatch.setitem(registry._registered, "broken_travel", BrokenTravel)
    out, bar = tmp_path / "run", io.StringIO()
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes([0, 2, 3]))) as server:
        summary = run("broken_travel", "collaborative", "0:4", out=out, concurrency=8,
                      models=MODELS, base_urls=server.base_url, idle_seconds=2, timeout=120,
                      prices={"agent-lm": (1.0, 2.0)}, progress=bar)
    assert summary.status == "finished"
    assert (summary.counts.finished, summary.counts.failed, summary.counts.delivered) == (2, 2, 2)
    assert [s.status for s in summary.sessions] == ["finished", "failed", "failed", "finished"]
    assert summary.entry(1).error == ("SessionBuildError: Task 'broken_travel' cannot be made "
                                      "with these arguments: the record of instance 1 is corrupt")
    assert summary.entry(2).error == ("RuntimeError: could not release the workspace of "
                                      "instance 2")
    written = json.loads((out / "run.json").read_text())
    assert [s["error"] for s in written["sessions"]] == [None, summary.entry(1).error,
                                                         summary.entry(2).error, None]
    never_built = read_session(out / "001")
    assert never_built["status"] == "failed" and "corrupt" in never_built["error"]
    assert "Traceback" in never_built["traceback"] and never_built["env_args"]["instance"] == 1
    failed_late = read_session(out / "002")  # ran to its end, then failed: its record stays
    assert failed_late["status"] == "failed" and "could not release" in failed_late["error"]
    assert read_events(out / "002") and failed_late["lm_usage"]["agent"]["calls"] > 0
    assert summary.entry(2).tokens.total_tokens > 0  # a failed session's tokens still count
    # the running cost: dollars for the priced model only
    agent = summary.tokens.by_model["agent-lm"]
    assert summary.cost_usd == pytest.approx((agent.prompt_tokens + 2 * agent.completion_tokens)
                                             / 1e6)
    shown = bar.getvalue()
    assert "errors=2" in shown and "4/4" in shown and "cost=$" in shown and "tokens=" in shown

    # a second call retries the failed sessions only
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes([0, 2, 3]))) as server:
        again = run("broken_travel", "collaborative", "0:4", out=out, concurrency=8,
                    models=MODELS, base_urls=server.base_url, idle_seconds=2, timeout=120,
                    progress=False)
    assert (again.counts.skipped, again.invocations[-1].ran, again.counts.failed) == (2, 2, 2)
    assert len(again.invocations) == 2


def test_a_run_folder_belongs_to_one_task_and_team(tmp_path):
    run("todo", "example", "0", out=tmp_path, idle_seconds=0.5, progress=False)
    with pytest.raises(ValueError, match="holds a run of team 'example'"):
        run("todo", "autonomous", "0", out=tmp_path, models="m", base_urls="http://127.0.0.1:9",
            progress=False)


async def test_run_works_inside_a_running_event_loop(tmp_path):
    # as in a notebook, whose kernel runs an event loop: the batch gets a thread of its own
    summary = run("todo", "example", "0:3", out=tmp_path, concurrency=2, idle_seconds=0.5,
                  progress=False)
    # The example user is built from each instance's own hidden information (its must-haves),
    # so every session finishes, and delivers.
    assert (summary.counts.finished, summary.counts.delivered) == (3, 3)
    assert [s.end_reason for s in summary.sessions] == ["finished"] * 3
    assert summary.lms == {} and summary.tokens.total_tokens == 0  # a team without LMs
    assert [read_session(tmp_path / f"{n:03d}")["env_args"]["trip"] for n in range(3)] == [
        "camping", "beach", "city"]


def test_instance_specs():
    assert parse_instances("0:5", 102) == [0, 1, 2, 3, 4]
    assert parse_instances("0,3,5", 102) == [0, 3, 5]
    assert parse_instances("98:,0:4:2, 7", 102) == [0, 2, 7, 98, 99, 100, 101]
    assert parse_instances(None, 3) == parse_instances("all", 3) == [0, 1, 2]
    assert parse_instances([4, 1, 4], 10) == [1, 4]
    with pytest.raises(ValueError, match="instances 0 to 101; there is no instance 102"):
        parse_instances("0:103", 102)
    with pytest.raises(ValueError, match="cannot read 'a:b'"):
        parse_instances("a:b", 102)
    with pytest.raises(ValueError, match="names no instance"):
        parse_instances("5:5", 102)
