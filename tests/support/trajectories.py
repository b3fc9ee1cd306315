"""Hand-built trajectories: results directories written by driving the real coordinator over the
todo task with a given list of steps, as a session would, so that they replay exactly."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cogym_lab.core.messages import TeamMember
from cogym_lab.core.protocol import DEFAULT_PROTOCOL
from cogym_lab.envs import make_env
from cogym_lab.nodes.grading import is_delivered
from cogym_lab.nodes.results import ResultsWriter
from cogym_lab.nodes.session import SessionConfig, build_coordinator

#: A small todo instance whose grade is easy to work out by hand:
#: performance = (share of must-haves listed + min(items, 4) / 4) / 2.
TODO_ARGS = {"trip": "camping", "min_items": 4, "must_have": ["rain jacket", "headlamp"]}


def add(text: str) -> str:
    return f'ADD_ITEM(text="{text}")'


def confirm(pending_action: str) -> str:
    return f"REQUEST_TEAMMATE_CONFIRM(pending_action={json.dumps(pending_action)})"


def say(text: str) -> str:
    return f"SEND_TEAMMATE_MESSAGE(message={json.dumps(text)})"


def write_session(directory: Path, steps: list[tuple[str, str]], *,
                  team: tuple[tuple[str, str], ...] = (("agent", "agent"), ("user", "user")),
                  env_args: dict[str, Any] | None = None, agent_type: str = "collaborative",
                  model: str = "scripted", tokens: dict[str, tuple[int, int]] | None = None,
                  ratings: dict[str, Any] | None = None, end: str | None = "finished",
                  session_id: str | None = None, task: str = "todo",
                  protocol: str = DEFAULT_PROTOCOL, interaction: str = "notifications") -> Path:
    """Play ``steps`` ((role, action string), one second apart) on a fresh ``task`` env (the
    todo task with ``TODO_ARGS`` unless told otherwise) and write
    the results directory as :class:`cogym_lab.nodes.Session` does.

    ``tokens`` maps a role to its LM's (prompt, completion) tokens; ``end`` ends a session that
    did not end by itself (``None`` leaves it running, as after a crash). ``protocol`` names the
    scoring protocol the session follows; ``interaction="turns"`` plays the steps under strict
    turn-taking (an act out of turn is refused).
    """
    env = make_env(task, protocol=protocol, **(env_args if env_args is not None else TODO_ARGS))
    members = [TeamMember(role=role, kind=kind) for role, kind in team]  # type: ignore[arg-type]
    config = SessionConfig(interaction=interaction)
    session_id = session_id or directory.name
    coordinator = build_coordinator(env, members, session_id, config, task)
    writer = ResultsWriter(directory)
    writer.write_session(session_id=session_id, task=task, env_args=env.env_args(),
                         team=[m.model_dump() for m in members], protocol=env.protocol,
                         interaction=interaction,
                         config=asdict(config) | {"step_limits": coordinator.step_limits},
                         status="running")
    now = 1000.0
    for event in coordinator.start(now).events:
        writer.append_event(event)
    for role, action in steps:
        now += 1.0
        transition = coordinator.tick(now) if role == "tick" else \
            coordinator.handle(role, action, now)
        for event in transition.events:
            writer.append_event(event)
    if end is not None and not coordinator.done:
        for event in coordinator.end(now, end).events:
            writer.append_event(event)
    outcome = env.outcome()
    if coordinator.done:
        delivered = is_delivered(env, coordinator.end_reason)
        writer.write_session(status="finished", end_reason=coordinator.end_reason,
                             delivered=delivered, outcome=outcome,
                             scores=env.evaluate() if delivered else {},
                             step_counts=dict(coordinator.step_counts), events=coordinator.seq)
    writer.close()
    for role, kind in team:
        folder = directory / role
        folder.mkdir(exist_ok=True)
        (folder / "member.json").write_text(json.dumps({"role": role, "kind": kind}))
        prompt, completion = (tokens or {}).get(role, (0, 0))
        if kind == "person":
            continue
        usage = {"model": model, "prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}
        if kind == "agent":
            usage["agent_type"] = agent_type
        (folder / "usage.json").write_text(json.dumps(usage))
    if ratings is not None:
        (directory / "ratings.json").write_text(json.dumps(ratings))
    return directory


# -- the trajectories the tests work out by hand ------------------------------------------------

#: Four rounds. Item grades (TODO_ARGS): after round 1 {tent, stove}: (0 + 2/4)/2 = 0.25;
#: round 2 adds headlamp: (1/2 + 3/4)/2 = 0.625; round 3 changes nothing: 0.625;
#: round 4 adds rain jacket: (2/2 + 4/4)/2 = 1.0.
FOUR_ROUNDS = [
    ("agent", add("tent")), ("agent", add("stove")),
    ("agent", say("I added a tent and a stove. Anything you need?")),
    ("user", say("Please add a headlamp.")),  # round 2
    ("agent", add("headlamp")), ("agent", say("Done: headlamp added.")),
    ("user", say("Thanks, that looks fine for now.")),  # round 3
    ("agent", say("Shall I add anything else?")),
    ("user", say("Yes, a rain jacket too.")),  # round 4
    ("agent", add("rain jacket")),
    ("user", "FINISH()"),
]

#: The autonomous baseline on the same instance: two items, then finish: (0 + 2/4)/2 = 0.25.
AUTONOMOUS_RUN = [("agent", add("tent")), ("agent", add("stove")), ("agent", "FINISH()")]
