"""LM calls end within their deadline, whatever the server does, and agents say so in the chat.

Each misbehaving server is real: the loopback server hangs (accepts the request, says nothing),
trickles (headers at once, then one byte every 0.5 s, which no per-read timeout ever catches) or
answers 500 to everything. The bounds below are the deadline plus generous slack for a busy
two-core machine: they prove the deadline holds, they do not measure speed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.core.messages import status_channel
from cogym_lab.envs import make_env
from cogym_lab.lm import LMConfig, LMError, OpenAILM, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

USER = [{"role": "user", "content": "Plan the day"}]
SLACK = 2.0  # seconds: scheduling on a loaded machine, never a speed claim
HANG = Reply(delay=3600)  # stop() ends the wait when the test is over
TRICKLE = Reply("This answer arrives one byte at a time.", trickle=0.5)
STORM = Reply(status=500, error="upstream exploded")
MISBEHAVIOURS = {"hang": HANG, "trickle": TRICKLE, "500-storm": STORM}


def lm_for(server: ScriptedOpenAIServer, **settings: Any) -> OpenAILM:
    values: dict[str, Any] = {"model": "m", "base_url": server.base_url, "max_retries": 4}
    values.update(settings)
    lm = make_lm(LMConfig(**values))
    assert isinstance(lm, OpenAILM)
    return lm


async def fails_within(lm: OpenAILM, bound: float) -> tuple[LMError, float]:
    """The LMError the call raises, and when; a call still running at ``bound`` + 10 s fails the
    test instead of hanging it."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(bound + 10):
            await lm.complete(USER, purpose="deadline")
    except LMError as error:
        return error, time.monotonic() - started
    except TimeoutError:
        pytest.fail(f"the call was still running {bound + 10:g} s after it started")
    pytest.fail("the call succeeded")


# -- one call ------------------------------------------------------------------------------------


@pytest.mark.parametrize("misbehaviour", MISBEHAVIOURS.values(), ids=MISBEHAVIOURS.keys())
async def test_every_misbehaving_server_fails_within_the_deadline(server, misbehaviour):
    server.add(misbehaviour, repeat=True)
    # The per-attempt timeout (60 s) and the retries (4, backoff from 0.5 s) would take minutes.
    lm = lm_for(server, deadline=2.0)
    error, elapsed = await fails_within(lm, 2.0)
    assert elapsed < 2.0 + SLACK
    assert lm.meter.failures == 1 and lm.meter.calls == 0
    assert server.chat_requests  # the server was reached: this is not a connection failure
    if misbehaviour is STORM:
        assert "HTTP 500" in str(error) and "2 s deadline" in str(error)
        assert error.reason == "its server kept reporting errors"
    else:
        assert "no answer within" in str(error)
        assert error.reason == "it did not answer within 2 seconds"
    await lm.aclose()


async def test_a_trickle_is_cut_at_the_timeout_of_each_attempt(server):
    """``timeout`` bounds a whole attempt, not the gap between two bytes (0.5 s here, under the
    1 s timeout, so httpx alone would read on for minutes)."""
    server.add(TRICKLE, repeat=True)
    lm = lm_for(server, timeout=1.0, deadline=30.0, max_retries=1, backoff=0.01)
    error, elapsed = await fails_within(lm, 2.0)
    assert "after 2 attempts; last error: no answer within 1 s" in str(error)
    assert 2.0 <= elapsed < 2.0 + SLACK
    assert len(server.chat_requests) == 2
    await lm.aclose()


async def test_a_slow_but_whole_reply_within_the_deadline_is_an_answer(server):
    server.add(Reply("Steady.", trickle=0.002))  # about 300 bytes: well under a second
    lm = lm_for(server, timeout=20, deadline=20)
    completion = await lm.complete(USER)
    assert completion.text == "Steady." and completion.attempts == 1
    await lm.aclose()


async def test_a_retry_that_could_only_start_after_the_deadline_is_not_waited_for(server):
    server.add(Reply(status=429, headers={"Retry-After": "20"}), repeat=True)
    lm = lm_for(server, deadline=5.0)
    error, elapsed = await fails_within(lm, 5.0)
    assert elapsed < SLACK  # said at once, not after sleeping to the deadline
    assert len(server.chat_requests) == 1
    assert "5 s deadline" in str(error) and error.reason == "its server says it is too busy"
    await lm.aclose()


def test_the_deadline_is_configured_with_the_lm():
    config = LMConfig.resolve(toml={"model": "m", "deadline": 45, "timeout": 20}, environ={})
    assert (config.deadline, config.timeout) == (45, 20)
    assert LMConfig().deadline == 120.0  # two full attempts at the default 60 s timeout
    # a team file that raised the timeout for a slow server is not cut short by the default
    assert LMConfig.resolve(toml={"timeout": 300}, environ={}).deadline == 600
    assert LMConfig(timeout=300, deadline=None).deadline == 600
    for wrong in ({"deadline": 0}, {"timeout": 0}, {"timeout": "soon"}):
        with pytest.raises(ValueError):
            LMConfig(**wrong)


# -- whole sessions: the teammate hears of it, once, in plain words ------------------------------


@pytest.mark.parametrize("misbehaviour", MISBEHAVIOURS.values(), ids=MISBEHAVIOURS.keys())
async def test_a_collaborative_agent_reports_a_failing_lm_in_the_chat(tmp_path, misbehaviour):
    deadline = 1.5
    play = TodoRolePlay()

    def responder(body: dict[str, Any]) -> str | Reply:
        return misbehaviour if body["model"] == "agent-lm" else play(body)

    bus = MemoryBus()
    with ScriptedOpenAIServer(responder=responder) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "deadline": deadline}
        members, kinds = build_team(load_team("collaborative"), env,
                                    {"agent": {"model": "agent-lm", **settings},
                                     "user": {"model": "user-lm", **settings}})
        session = Session(env, members, kinds=kinds, bus=bus, results_dir=tmp_path,
                          # What a person would read: with one in the team the session goes
                          # on after an LM failure (without, it ends: test_lm_fault_matrix).
                          config=SessionConfig(idle_seconds=1, max_idle_ticks=2, timeout=30,
                                               on_lm_failure="continue"))
        await session.run()
        first_agent_call = next(r.received_at for r in server.chat_requests
                                if r.body["model"] == "agent-lm")
    events = read_events(tmp_path)
    said = [(event.time, str(parse_canonical(event.action).args["message"]))
            for event in events if event.actor == "agent" and event.action
            and event.action.startswith("SEND_TEAMMATE_MESSAGE(")]
    assert len(said) == 1, said  # once, and no "going round in circles" while it waits
    when, text = said[0]
    assert when - first_agent_call < deadline + SLACK
    assert text.startswith("My language model is not working right now (")
    expected = ("its server kept reporting errors" if misbehaviour is STORM
                else "it did not answer within 1.5 seconds")
    assert expected in text
    for internal in ("HTTP", "127.0.0.1", "agent-lm", "attempt", "Error", "SEND_TEAMMATE"):
        assert internal not in text
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)
    seen = []
    while (update := await statuses.get(timeout=0)) is not None:
        if "role" in update:  # an agent's status (the channel also carries the graded end)
            seen.append((update["role"], update["status"]))
    assert ("agent", "failed") in seen
    await bus.close()
