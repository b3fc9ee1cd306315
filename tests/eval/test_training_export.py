"""``cogym-lab eval export``: each member's decisions as (context, action, outcome) records, on a
hand-built trajectory with a hand-written call log, on hostile text, and on a real batch whose
LM calls went through our real LM client (over aiohttp) to the loopback OpenAI-compatible
server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.agents.render import render_chat, render_observation
from cogym_lab.cli.main import main
from cogym_lab.core import Observation
from cogym_lab.core.messages import ChatMessage
from cogym_lab.envs import make_env
from cogym_lab.eval.training_export import Decision, export, session_decisions
from cogym_lab.nodes import Session, SessionConfig, replay
from cogym_lab.records.decisions import calls_behind, decisions
from cogym_lab.records.trajectory import load_session
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.eval_scripts import RouteByInstance, travel_routes
from tests.support.hostile import NASTY
from tests.support.lm_scripts import TodoRolePlay
from tests.support.trajectories import add, say, write_session

# Events (write_session starts at t=1000 and spaces steps one second apart):
#   1 start (t=1000)
#   2 agent ADD_ITEM tent (t=1001)
#   3 agent message (t=1002)
#   4 user message (t=1003)
#   5 agent ADD_ITEM headlamp (t=1004)
#   6 user FINISH (t=1005) and 7 end
STEPS = [("agent", add("tent")), ("agent", say("A tent is on the list. What else?")),
         ("user", say("A headlamp, please.")), ("agent", add("headlamp")), ("user", "FINISH()")]


def _call(at: float, purpose: str, reply: str) -> dict:
    return {"time": datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds"),
            "purpose": purpose, "model": "scripted",
            "messages": [{"role": "user", "content": f"prompt for {purpose}"}],
            "completion": reply, "error": None}


def _write_calls(directory: Path, role: str, calls: list[dict]) -> None:
    with (directory / role / "lm_calls.jsonl").open("w", encoding="utf-8") as handle:
        for call in calls:
            handle.write(json.dumps(call) + "\n")


@pytest.fixture
def hand_built(tmp_path) -> Path:
    directory = write_session(tmp_path / "s", STEPS)
    # The agent's calls: two before event 2 (t=1001), none for event 3, one before event 5
    # (t=1004) and one after its last act (cut off by the end: it belongs to no decision).
    _write_calls(directory, "agent", [_call(1000.2, "plan", "think"),
                                      _call(1000.5, "act", "ADD tent"),
                                      _call(1003.5, "act", "ADD headlamp"),
                                      _call(1006.0, "act", "too late")])
    # The user's: one for its message at t=1003, two (choose, then the move) for FINISH.
    _write_calls(directory, "user", [_call(1002.5, "user:reply", "A headlamp, please."),
                                     _call(1004.2, "user:choose", "Choice: 5"),
                                     _call(1004.4, "user:finish", "done")])
    return directory


def test_calls_are_matched_to_the_decision_they_led_to(hand_built):
    record = load_session(hand_built)
    assert [e.seq for e in decisions(record)] == [2, 3, 4, 5, 6]
    matched = {seq: [c["completion"] for c in calls]
               for seq, calls in calls_behind(record).items()}
    # Event 3 (the agent's message) had no call of its own, the 1006.0 call none at all.
    assert matched == {2: ["think", "ADD tent"], 4: ["A headlamp, please."],
                       5: ["ADD headlamp"], 6: ["Choice: 5", "done"]}


def test_each_record_holds_the_view_before_the_act_and_the_session_ending(hand_built):
    record = load_session(hand_built)
    exported = list(session_decisions(record))
    assert [(d.seq, d.role, d.kind, d.action.type) for d in exported] == [
        (2, "agent", "agent", "action"), (3, "agent", "agent", "message"),
        (4, "user", "user", "message"), (5, "agent", "agent", "action"),
        (6, "user", "user", "finish")]
    replayed = replay(hand_built, keep=[1, 2, 3, 4, 5])
    for decision in exported:  # the context is the state right after the previous event
        before = replayed.state_at(decision.seq - 1)
        assert decision.context.view == before["views"][decision.role]
        assert [m["text"] for m in decision.context.chat] == [
            m["text"] for m in before["chat"]]
    # Only the agent's message is in the chat the user saw before its own message (event 4).
    assert [m["text"] for m in exported[2].context.chat] == ["A tent is on the list. What else?"]
    # Performance (TODO_ARGS): must-haves listed 1 of 2 (headlamp), items 2 of min 4:
    # (1/2 + 2/4) / 2 = 0.5, the same for every record of the session.
    assert {d.outcome.session.performance for d in exported} == {0.5}
    assert all(d.outcome.session.delivered for d in exported)
    assert exported[0].action.text == 'ADD_ITEM(text="tent")' and exported[0].action.accepted
    assert [c.completion for c in exported[4].context.lm_calls] == ["Choice: 5", "done"]


def test_export_filters_by_kind_and_role_and_writes_one_valid_line_per_decision(hand_built,
                                                                                 tmp_path):
    out = tmp_path / "out" / "decisions.jsonl"
    summary = export([hand_built], out, kinds=["user"])
    assert (summary.records, summary.sessions, summary.by_kind) == (2, 1, {"user": 2})
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == 3
    assert [Decision.model_validate_json(line).seq for line in lines[:-1]] == [4, 6]
    only_agent = export([hand_built], tmp_path / "agent.jsonl", roles=["agent"])
    assert only_agent.by_kind == {"agent": 3}
    with pytest.raises(ValueError, match="Unknown export format 'csv'"):
        export([hand_built], tmp_path / "x.csv", format="csv")


def test_hostile_text_survives_as_one_line_per_record(tmp_path):
    texts = [*NASTY, "x" * 1_000_000, "line\u2028separator\u2029paragraph", "nul\x00"]
    steps = [("agent", say(text)) for text in texts] + [("user", "FINISH()")]
    directory = write_session(tmp_path / "hostile", steps)
    out = tmp_path / "hostile.jsonl"
    summary = export([directory], out)
    assert summary.records == len(steps) and not summary.skipped
    content = out.read_text(encoding="utf-8")
    # str.splitlines splits on U+2028 too: the export escapes it, so both readers agree.
    assert len(content.splitlines()) == len(content.split("\n")) - 1 == len(steps)
    said = [Decision.model_validate_json(line).context.chat for line in content.splitlines()]
    last_chat = [m["text"] for m in said[-1]]  # the user's FINISH saw every message
    assert last_chat == [load_session(directory).messages[i].text for i in range(len(texts))]
    assert "\u2028" in last_chat[-2] and last_chat[-1] == "nul\x00"


def test_a_session_that_does_not_replay_is_skipped_and_named(hand_built, tmp_path):
    broken = write_session(tmp_path / "broken", STEPS)
    events = (broken / "events.jsonl").read_text().splitlines()
    tampered = json.loads(events[1])
    tampered["status"] = "error"  # replay gives "ok": the log no longer replays as logged
    (broken / "events.jsonl").write_text("\n".join([events[0], json.dumps(tampered),
                                                   *events[2:]]) + "\n")
    summary = export([hand_built, broken], tmp_path / "both.jsonl")
    assert summary.sessions == 1 and summary.records == 5
    assert list(summary.skipped) == [str(broken)]


@pytest.mark.usefixtures("use_shared_data", "no_ambient_lm")
@pytest.mark.timeout(400)
def test_a_real_batch_exports_its_lm_calls_through_the_cli(tmp_path):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes([0]))) as server:
        ran = CliRunner().invoke(main, [
            "eval", "run", "--task", "travel_planning", "--team", "collaborative",
            "--instances", "0", "--out", str(out), "--model", "agent=agent-lm",
            "--model", "user=user-lm", "--base-url", server.base_url, "--idle-seconds", "2",
            "--no-progress"])
        assert ran.exit_code == 0, ran.output
        replies = [r["messages"] for r in server.chat_requests]
    target = tmp_path / "decisions.jsonl"
    exported = CliRunner().invoke(main, ["eval", "export", str(out), "--format", "jsonl",
                                         "--out", str(target), "--no-progress"])
    assert exported.exit_code == 0, exported.output
    records = [Decision.model_validate_json(line) for line in
               target.read_text(encoding="utf-8").splitlines()]
    record = load_session(out / "000")
    assert [r.seq for r in records] == [e.seq for e in decisions(record)]
    assert f"{len(records)} decisions from 1 sessions" in " ".join(exported.output.split())
    # Every LM call the server answered is behind exactly one exported decision, or was cut off
    # by the session's end; those behind a decision carry the prompt the server received.
    exported_prompts = [call.messages for r in records for call in r.context.lm_calls]
    assert exported_prompts and all(p in replies for p in exported_prompts)
    assert len(exported_prompts) == len(set(map(json.dumps, exported_prompts)))
    assert {r.kind for r in records} == {"agent", "user"}
    assert all(r.trial == 0 and r.task == "travel_planning" for r in records)


def _prompt_rendering(decision: Decision) -> tuple[str, str]:
    """The view and chat of ``decision``'s context as the members' prompts render them."""
    view = render_observation(Observation.model_validate(decision.context.view))
    messages = [ChatMessage.model_construct(**m, time=0.0) for m in decision.context.chat]
    return view, render_chat(messages, decision.role, window=len(messages) or 1)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("agent_latency", [0.4, 1.0])
def test_each_context_is_what_the_prompt_behind_it_was_built_from(tmp_path, agent_latency):
    """Real sessions (an LM agent and a simulated user through our real LM client over aiohttp
    and the loopback server), the agent's LM slow enough that the user speaks while it thinks:
    every exported context is the view and chat that the prompts behind its decision show, and
    holds nothing logged after the update the member acted on."""
    play = TodoRolePlay()
    with ScriptedOpenAIServer(responder=play, latency={"agent-lm": agent_latency}) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "backoff": 0.01}
        members, kinds = build_team(load_team("collaborative-planning"), env, {
            "agent": {"model": "agent-lm", **settings}, "user": {"model": "user-lm", **settings}})
        Session(env, members, kinds=kinds, results_dir=tmp_path,
                config=SessionConfig(idle_seconds=2, timeout=120)).run_sync()
    record = load_session(tmp_path)
    exported = list(session_decisions(record))
    with_calls = [d for d in exported if d.context.lm_calls]
    assert {d.kind for d in with_calls} == {"agent", "user"}
    raced = 0
    for decision in exported:
        context = decision.context
        assert context.seen_recorded and context.seen_seq is not None
        assert context.seen_seq < decision.seq
        assert all(m["seq"] <= context.seen_seq for m in context.chat)
        later = [m for m in record.messages if context.seen_seq < m.seq < decision.seq
                 and m.visible_to(decision.role) and m.sender != decision.role]
        raced += bool(later)
        view, chat = _prompt_rendering(decision)
        assert len(context.chat) < 20  # the agent shows its last 20 messages: all of them here
        for call in context.lm_calls:
            system = call.messages[0]["content"]
            assert view in system, (decision.seq, call.purpose)
            assert chat in system, (decision.seq, call.purpose)
            for message in later:  # what arrived while the member thought is in no prompt
                if not any(m["text"] == message.text for m in context.chat):
                    assert message.text not in system
    # The race happened: some member decided while a teammate's message was on its way.
    assert raced, [(d.seq, d.context.seen_seq) for d in exported]
