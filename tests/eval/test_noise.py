"""The noise study (``cogym_lab.eval.batch.noise``): re-grading saved outcomes with the task's own
LM grader (judge noise), rerunning sessions against the user's logged turns with new agent seeds
(agent noise), and the report's shares. LMs are scripted behind the loopback server and reached by
our real LM client (over aiohttp); the scripted agent and judge answer by the seed they are sent, so
what the seeds change is known."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.messages import Event, EventType
from cogym_lab.envs import registry
from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.eval import report, run
from cogym_lab.eval.batch.noise import NOISE_DIR, NOISE_FILE, read_noise, study_noise
from cogym_lab.eval.batch.seeds import trial_seed
from cogym_lab.eval.stats.trials import noise_shares, sample_variance
from cogym_lab.lm import LM
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.records.trajectory import DERIVED_MARKER, find_sessions, load_session
from cogym_lab.testing import ScriptedOpenAIServer
from cogym_lab.users.replay import ReplayUser, logged_turns, turn_script
from tests.support.lm_scripts import IDEAS, TodoRolePlay, chat_lines, checklist

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]
MODELS = {"agent": "agent-lm", "user": "user-lm", "tools": "judge-lm"}
JUDGE_ASK = "Rate this packing list from 1 to 5"


@dataclass
class JudgedTodo(TodoEnv):
    """The todo task graded partly by an LM judge, as Related Work and Tabular Analysis are:
    performance = (the checklist's own grade + the judge's rating / 5) / 2."""

    judge_lm: LM | None = field(default=None, repr=False)
    name = "judged_todo"

    async def aevaluate(self) -> dict[str, float]:
        own = self.evaluate()
        assert self.judge_lm is not None
        reply = await self.judge_lm.complete(
            [{"role": "user", "content": f"{JUDGE_ASK}: {', '.join(self.outcome())}. "
                                         "Answer with 'Score: N'."}], purpose="judge")
        rating = int(re.search(r"Score: (\d)", reply.text).group(1))
        return {"checklist": own["performance"], "rating": float(rating),
                "performance": (own["performance"] + rating / 5) / 2}


def judge_rating(seed: int) -> int:
    """The scripted judge's rating: 3, 4 or 5 by its seed."""
    return 3 + seed % 3


class SeededPlay(TodoRolePlay):
    """The todo role play, whose agent never thinks of a headlamp when its seed is odd, and a
    judge that rates by its seed."""

    def __call__(self, body):
        if body["model"] == "judge-lm":
            assert JUDGE_ASK in body["messages"][-1]["content"]
            return f"Score: {judge_rating(body['seed'])}"
        return super().__call__(body)

    def act(self, body):
        if body["seed"] % 2 == 0:
            return super().act(body)
        items = checklist(body)
        wanted = ["rain jacket"] if "rain jacket" in " ".join(chat_lines(body)) else []
        for item in wanted + [idea for idea in IDEAS if idea != "headlamp"]:
            if item not in items:
                return f'Thought: add {item}.\nAction: ADD_ITEM(text="{item}")'
        return "Thought: done.\nAction: FINISH()"


@pytest.fixture
def judged_task(monkeypatch):
    monkeypatch.setitem(registry._registered, "judged_todo", JudgedTodo)
    return "judged_todo"


def _judged_run(out: Path) -> None:
    with ScriptedOpenAIServer(responder=SeededPlay()) as server:
        summary = run("judged_todo", "collaborative", "0:2", out=out, models=MODELS,
                      base_urls=server.base_url, idle_seconds=1, timeout=60, trials=2,
                      progress=False)
    assert summary.counts.finished == 4 and summary.counts.delivered == 4


def test_judge_and_agent_noise_on_a_task_with_an_lm_grader(judged_task, tmp_path):
    out = tmp_path / "run"
    _judged_run(out)
    sessions = {path.name: load_session(path) for path in find_sessions([out])}
    with ScriptedOpenAIServer(responder=SeededPlay()) as server:
        study = study_noise(out, repeats=3, base_urls=server.base_url, progress=False)
        bodies = server.bodies
    assert study.repeats == 3 and (out / NOISE_DIR / NOISE_FILE).is_file()
    assert read_noise(out) == study

    # Judge noise: each outcome graded three times, the judge's LM seeded per grading.
    assert sorted(r.session for r in study.judge) == sorted(sessions)
    assert not study.summary.deterministic_grader
    for regraded in study.judge:
        record = sessions[regraded.session]
        instance, trial = record.session["batch"]["instance"], regraded.trial
        assert regraded.instance == record.instance  # what pairs sessions by instance
        ratings = [judge_rating(trial_seed(instance, trial, f"tools/regrade-{n}"))
                   for n in range(3)]
        own = record.scores["checklist"]  # the outcome is the same each time; the rating moves
        assert regraded.scores == pytest.approx([(own + r / 5) / 2 for r in ratings])
        assert regraded.lm_calls == 3 and regraded.note is None
    judge_seeds = {b["seed"] for b in bodies if b["model"] == "judge-lm"
                   and len(b["messages"]) == 1}
    assert {trial_seed(i, t, f"tools/regrade-{n}") for i in (0, 1) for t in (0, 1)
            for n in range(3)} <= judge_seeds

    # Agent noise: every session rerun three times against its user's logged turns.
    assert sorted(r.session for r in study.agent) == sorted(sessions)
    assert not [b for b in bodies if b["model"] == "user-lm"]  # no simulated user was asked
    agent_seeds = {b["seed"] for b in bodies if b["model"] == "agent-lm"}
    assert agent_seeds == {trial_seed(i, t, f"agent/noise-{n}") for i in (0, 1)
                           for t in (0, 1) for n in range(3)}
    for reruns in study.agent:
        original = sessions[reruns.session]
        assert reruns.errors == [] and len(reruns.scores) == 3
        logged = logged_turns(original.events, "user")
        for directory in reruns.directories:
            folder = out / NOISE_DIR / directory
            meta = read_session(folder)
            user = meta["spec"]["team"]["members"]["user"]
            assert user["type"] == "replay"
            assert [t for t in user["options"]["turns"] if t is not None] == logged
            # the simulated user's recorded moves line up with its log: its passes are kept
            moves = original.members["user"]["usage"]["moves"]
            assert [t is None for t in user["options"]["turns"]] == [
                move == "NOTHING" for move in moves]
            assert json.loads((folder / "user" / "usage.json").read_text())["member"] == \
                "replay-user"
            replayed = [e.action for e in read_events(folder) if e.actor == "user"]
            assert replayed == logged[:len(replayed)] and replayed  # the same words, in order
            assert meta["env_args"] == original.env_args
            assert meta["config"]["seed"] == original.seeds["env"]  # the env keeps its seed
    # the camping instance: an agent with an odd seed leaves out the headlamp, so its reruns vary
    camping = [r for r in study.agent if '"camping"' in r.instance]
    assert any(sample_variance(r.scores) > 0 for r in camping)

    # The summary and the report share the variance out the same way.
    within = study.summary.within
    judge_variance = sum(sample_variance(r.scores) for r in study.judge) / 4
    agent_variance = sum(sample_variance(r.scores) for r in study.agent) / 4
    assert study.summary.judge == pytest.approx(judge_variance)
    assert study.summary.agent == pytest.approx(agent_variance)
    shares = noise_shares(within, judge_variance, agent_variance)
    assert study.summary.judge_share == pytest.approx(shares.judge)
    assert study.summary.rest_share == pytest.approx(shares.rest)

    result = report([out], effort=False, failures=False)
    assert result.tables["summary"].iloc[0]["sessions"] == 4  # the 12 reruns are not counted
    row = result.tables["trials"].iloc[0]
    assert row["within_variance"] == pytest.approx(within)
    assert (row["judge_share"], row["agent_share"], row["rest_share"]) == pytest.approx(
        (shares.judge, shares.agent, shares.rest))
    assert "judge_share" in result.to_text()

    # Run again: the finished reruns are read back, not run; the outcomes are graded anew.
    with ScriptedOpenAIServer(responder=SeededPlay()) as server:
        again = study_noise(out, repeats=3, base_urls=server.base_url, progress=False)
        assert not [b for b in server.bodies if b["model"] == "agent-lm"]
    assert [r.scores for r in again.agent] == [r.scores for r in study.agent]
    assert [r.scores for r in again.judge] == [r.scores for r in study.judge]


def test_a_deterministic_grader_adds_no_noise_and_the_study_says_so(tmp_path):
    out = tmp_path / "run"
    run("todo", "example", "0:2", out=out, idle_seconds=0.3, trials=2, progress=False)
    study = study_noise(out, repeats=2, progress=False)
    assert study.summary.deterministic_grader
    assert all(r.scores == [r.scores[0]] * 2 and r.lm_calls == 0 for r in study.judge)
    assert study.summary.judge == 0.0
    assert any("deterministic" in note for note in study.notes)
    # the rule-based agent against its user's replayed turns: the same outcome every time
    assert all(r.errors == [] and len(set(r.scores)) == 1 for r in study.agent)
    assert (out / NOISE_DIR / DERIVED_MARKER).is_file()
    assert len(find_sessions([out])) == 4 and len(find_sessions([out / NOISE_DIR])) == 8
    # every trial scored the same: no variance to share out
    assert study.summary.within == 0.0 and study.summary.judge_share is None

    shown = CliRunner().invoke(main, ["eval", "noise", str(out), "--repeats", "2",
                                      "--no-agent", "--no-progress"])
    assert shown.exit_code == 0, shown.output
    assert "deterministic" in shown.output and "4 outcomes re-graded" in shown.output
    assert read_noise(out).agent == []  # --no-agent: this study reran nothing
    refused = CliRunner().invoke(main, ["eval", "noise", str(out), "--repeats", "1"])
    assert refused.exit_code != 0


def test_a_run_without_trials_still_gets_its_noise_measured(judged_task, tmp_path):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=SeededPlay()) as server:
        run("judged_todo", "collaborative", "0", out=out, models=MODELS,
            base_urls=server.base_url, idle_seconds=1, timeout=60, progress=False)
        study = study_noise(out, repeats=2, agent=False, base_urls=server.base_url,
                            progress=False)
    assert len(study.judge) == 1 and study.agent == []
    assert study.summary.within is None and study.summary.judge_share is None
    assert any("trials=K" in note for note in study.notes)


# -- the replayed user ---------------------------------------------------------------------------

def _event(seq: int, actor: str | None, kind: EventType, action: str | None,
           status: str = "ok") -> Event:
    return Event(seq=seq, time=float(seq), type=kind, actor=actor, action=action,
                 status=status)


EVENTS = [
    _event(1, None, EventType.START, None),
    _event(2, "agent", EventType.ACTION, 'ADD_ITEM(text="tent")'),
    _event(3, "user", EventType.MESSAGE, 'SEND_TEAMMATE_MESSAGE(message="a rain jacket")'),
    _event(4, "user", EventType.WAIT, "WAIT_TEAMMATE_CONTINUE()"),
    _event(5, "user", EventType.ERROR, "DANCE()", status="error"),
    _event(6, "user", EventType.FINISH, "FINISH()"),
    _event(7, None, EventType.END, None),
]


async def test_the_replay_user_gives_its_turns_back_in_order():
    acts = ['SEND_TEAMMATE_MESSAGE(message="a rain jacket")', "DANCE()", "FINISH()"]
    assert logged_turns(EVENTS, "user") == acts  # the refused act too; the wait is no turn
    # the simulated user's moves: it passed twice, then answered, passed, acted, finished
    moves = ["NOTHING", "NOTHING", "FEEDBACK", "NOTHING", "TASK_ACTION", "FINISH"]
    assert turn_script(EVENTS, "user", moves) == [None, None, acts[0], None, acts[1], acts[2]]
    # moves that do not line up with the log (a move that produced nothing): acts alone
    assert turn_script(EVENTS, "user", ["FEEDBACK", "NOTHING"]) == acts
    assert turn_script(EVENTS, "user") == acts
    user = ReplayUser([None, acts[0], "FINISH()"])
    turns = [await user.act(None) for _ in range(5)]  # it reads nothing it is shown
    assert turns == [None, acts[0], "FINISH()", None, None]
    assert (user.asked, user.replayed) == (5, 3)
    assert math.isnan(sample_variance([]))
