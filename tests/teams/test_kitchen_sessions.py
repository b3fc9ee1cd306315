"""Whole kitchen sessions whose LM never helps: every call hangs, or every call fails. The game
keeps its clock all the same and runs to its end, on both buses, for every LM agent's ready
team; the agents' trouble is on record in their folders, and the log replays to the same game.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from cogym_lab.core.messages import EventType
from cogym_lab.envs import make_env
from cogym_lab.nodes import Session, SessionConfig, replay
from cogym_lab.nodes.results import read_events
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer

TICKS = 50

#: What the LM does to every call: hang far longer than the game, or fail at once.
BROKEN_LMS = {"hangs": Reply("too late", delay=600), "fails": Reply(status=500)}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lm", sorted(BROKEN_LMS))
@pytest.mark.parametrize("team_name", ["kitchen-act", "kitchen-react", "kitchen-dpt"])
async def test_the_game_keeps_its_clock_while_every_lm_call_hangs_or_fails(
        bus_factory, tmp_path, team_name: str, lm: str) -> None:
    reply = BROKEN_LMS[lm]
    with ScriptedOpenAIServer(responder=lambda body: reply) as server:
        env = make_env("kitchen", ticks=TICKS, tick_seconds=0.02)
        team = load_team(team_name)
        lm_settings: dict[str, Any] = {"model": "kitchen-lm", "base_url": server.base_url,
                                       "api_key": "sk-test", "max_retries": 0, "timeout": 60,
                                       "deadline": 60}
        members, kinds = build_team(team, env, {"agent": lm_settings})
        session = Session(env, members, kinds=kinds, bus=await bus_factory(),
                          results_dir=tmp_path, session_id="broken-" + uuid.uuid4().hex[:6],
                          config=SessionConfig(**team.session))
        result = await session.run()
    assert result.end_reason == "time_up"
    events = read_events(tmp_path)
    ticks = [e.info["tick"] for e in events if e.type is EventType.CLOCK]
    assert ticks == list(range(1, TICKS + 1))
    assert server.chat_requests, "the agent asked its LM"
    if lm == "fails":
        assert (tmp_path / "agent" / "lm_failures.jsonl").is_file()
    assert replay(tmp_path).final_state_checked
