"""Real sessions for the trajectory viewer's tests (Python and browser): run by the real session
machinery, written to a results folder, replayable.

* :func:`hostile_session`: the todo task with three scripted members whose checklist items,
  chat and LM call log carry hostile text (markup, U+2028, NUL, a lone surrogate, a 1 MB
  message), a private message, a refused action and a failure and audit file;
* :func:`example_session`: the todo task's own rule-based team;
* :func:`kitchen_session`: the real-time kitchen with the FSM agent and its partner.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cogym_lab.core.messages import EventType
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import ExampleAgent, ExampleUser, TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team

MARKUP = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"
LINE_SEPARATOR = "\u2028"
NUL = "\x00"
LONE_SURROGATE = "\ud800"
#: The 1 MB message: it starts and ends with words the tests look for.
BIG = "big-start " + "x" * 1_000_000 + " big-end"

#: A checklist item with markup, a Unicode line break and NUL; the coordinator turns the lone
#: surrogate into U+FFFD on the way in.
HOSTILE_ITEM = f"{MARKUP}{LINE_SEPARATOR}tent{NUL}{LONE_SURROGATE}"
PRIVATE_NOTE = "Only you should read this: <b>not bold</b>"


class Scripted:
    """A member that takes its actions in order, one for each notification, then waits.
    ``think_seconds`` before each stands for an LM call (so its acts are that far apart)."""

    def __init__(self, kind: str, actions: list[str], think_seconds: float = 0.0) -> None:
        self.kind = kind
        self.actions = list(actions)
        self.think_seconds = think_seconds

    def start(self, context: Any) -> None: ...

    def end(self, final: Any) -> None: ...

    async def act(self, notification: Any) -> str | None:
        if not self.actions:
            return None
        await asyncio.sleep(self.think_seconds)
        return self.actions.pop(0)


class FinishWhenListed:
    """A simulated user that waits until the checklist holds ``item``, then finishes."""

    kind = "user"

    def __init__(self, item: str) -> None:
        self.item = item

    def start(self, context: Any) -> None: ...

    def end(self, final: Any) -> None: ...

    async def act(self, notification: Any) -> str | None:
        listed = [entry.get("text") for entry in notification.view["checklist"].content]
        return "FINISH()" if self.item in listed else None


def _call(name: str, **args: Any) -> str:
    inner = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}"
                      for key, value in args.items())
    return f"{name}({inner})"


def hostile_session(folder: Path) -> Path:
    """A todo session whose texts are hostile, with an LM call log for the agent and the
    failure and audit files, in ``folder``. The user finishes once the agent's last item is
    listed."""
    agent = Scripted("agent", [
        _call("ADD_ITEM", text=HOSTILE_ITEM),
        _call("SEND_TEAMMATE_MESSAGE", message=f"{MARKUP} line{LINE_SEPARATOR}two {NUL}end"),
        _call("SEND_TEAMMATE_MESSAGE", message=PRIVATE_NOTE, to="user"),
        _call("ADD_ITEM", text="hat"),
        _call("SEND_TEAMMATE_MESSAGE", message=BIG),
        "NOT_AN_ACTION(",  # refused: the log keeps it as sent
        _call("ADD_ITEM", text="water"),
    ], think_seconds=0.3)
    user = FinishWhenListed("water")
    observer = Scripted("agent", [])
    session = Session(TodoEnv(trip="beach", min_items=2, must_have=["hat"]),
                      {"agent": agent, "user": user, "observer": observer},
                      kinds={"agent": "agent", "user": "user", "observer": "agent"},
                      results_dir=folder, config=SessionConfig(idle_seconds=0.5, timeout=60))
    result = session.run_sync()
    assert result.end_reason == "finished", result
    write_agent_calls(folder)
    write_labels(folder)
    return folder


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def write_agent_calls(folder: Path) -> list[dict[str, Any]]:
    """An LM call log for the agent as its LM client would write it: one call returning 50 ms
    before each of the agent's acts (two before the first, 200 ms and 50 ms before; the agent
    thinks 300 ms before each act, so each call falls after its previous act), each prompt
    carrying hostile text. The lone surrogate is written as the JSON escape an LM reply may
    hold. Returns the records, in the order written."""
    acts = [event for event in read_events(folder) if event.actor == "agent"
            and event.type is not EventType.CLOCK]
    records = []
    for number, event in enumerate(acts):
        times = [event.time - 0.2, event.time - 0.05] if number == 0 else [event.time - 0.05]
        for ended in times:
            records.append({
                "time": _iso(ended), "purpose": "policy", "model": "scripted-lm",
                "base_url": "http://127.0.0.1:1/v1",
                "messages": [
                    {"role": "system", "content": f"You pack for a trip. {MARKUP}"},
                    {"role": "user", "content": f"Event {event.seq}{LINE_SEPARATOR}{NUL}"
                                                f"{LONE_SURROGATE} what next?"},
                ],
                "completion": f"Action: {event.action}", "usage": {
                    "prompt_tokens": 40 + number, "completion_tokens": 7},
                "latency": 0.01, "attempts": 1, "error": None, "seed": 7,
            })
    # One call after the agent's last act: it led to no event.
    records.append({**records[-1], "time": _iso(acts[-1].time + 5), "completion": "late"})
    path = folder / "agent" / "lm_calls.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    # ensure_ascii writes the surrogate as its escape, as a raw reply would carry it
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return records


def write_labels(folder: Path) -> None:
    """A failure taxonomy and a user audit for the session, in the contract's formats: findings
    at the agent's first message and at the user's finish, one nowhere in the log."""
    events = read_events(folder)
    message = next(e for e in events if e.type is EventType.MESSAGE and e.actor == "agent")
    finish = next(e for e in events if e.type is EventType.FINISH)
    (folder / "failures.json").write_text(json.dumps({
        "annotator": "test", "findings": [
            {"code": "C.1", "category": "communication", "attribution": "lm",
             "evidence": [{"quote": f"{MARKUP} quoted", "seq": message.seq, "verified": True}]},
            {"code": "PL.2", "category": "planning", "attribution": "scaffolding",
             "evidence": [{"quote": "not in the log", "seq": None, "verified": False}]},
        ]}), encoding="utf-8")
    (folder / "user_audit.json").write_text(json.dumps({
        "reviewer": "test", "flagged": True,
        "errors": [{"type": "ended_before_agent_acted", "severity": "hindered",
                    "quote": "FINISH()", "seq": finish.seq, "verified": True,
                    "critical": True}],
        "checks": [{"check": "finished_after_agreeing", "detail": "finished at once",
                    "seq": finish.seq}],
    }), encoding="utf-8")


def example_session(folder: Path) -> Path:
    """The todo task's rule-based team on a beach trip."""
    env = TodoEnv(trip="beach", min_items=4, must_have=["hat"])
    members = {"agent": ExampleAgent(), "user": ExampleUser(["hat"], min_items=4)}
    Session(env, members, kinds={"agent": "agent", "user": "user"}, results_dir=folder,
            config=SessionConfig(idle_seconds=2)).run_sync()
    return folder


def kitchen_session(folder: Path, ticks: int = 60, tick_seconds: float = 0.01) -> Path:
    """A kitchen game of the FSM agent and its rule-based partner (no LM)."""
    env = make_env("kitchen", ticks=ticks, tick_seconds=tick_seconds)
    team = load_team("kitchen-fsm")
    members, kinds = build_team(team, env, {})
    result = Session(env, members, kinds=kinds, results_dir=folder,
                     config=SessionConfig(**team.session)).run_sync()
    assert result.end_reason == "time_up", result
    return folder


def plans_session(folder: Path) -> Path:
    """The plan-aware agent (its LM our real client over aiohttp, against the loopback server)
    and a person side on the todo task made with plans: proposals, a selected plan, a step the
    person completes, the plan output. Its LM calls are logged by the real client."""
    from cogym_lab.testing import ScriptedOpenAIServer
    from tests.agents.test_plan_aware_agent import PlanRolePlay, run_session

    with ScriptedOpenAIServer(responder=PlanRolePlay()) as server:
        result = run_session(server, folder)
    assert result.end_reason == "finished", result
    return folder
