"""A member in a process of its own (``cogym-lab node agent``): the session's process cannot
watch its LM, so the member's node reports a failure past its retries on the step channel, and
the session ends for it as for a local member's: ``lm_failed``, the failure in
``session.json``, the outcome class. Here the remote agent runs in the same event loop on its
own node, with nothing shared with the session but the bus."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from typing import Any

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.core.messages import EventType, StepRequest, step_channel
from cogym_lab.envs import make_env
from cogym_lab.nodes import AgentNode, Session, SessionConfig
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(120)]


def _lm(server: ScriptedOpenAIServer, model: str) -> dict[str, Any]:
    return {"model": model, "base_url": server.base_url, "deadline": 1.0, "max_retries": 2,
            "backoff": 0.05}


async def _remote_agent_session(tmp_path, *, report: bool) -> list[dict]:
    """Run the session; what was sent on its step channel."""
    play = TodoRolePlay()

    def responder(body: dict[str, Any]) -> str | Reply:
        if body["model"] == "agent-lm":
            return Reply(status=503, error="upstream unavailable")
        return play(body)

    with ScriptedOpenAIServer(responder=responder) as server:
        env = make_env("todo", instance=0)
        members, kinds = build_team(load_team("collaborative"), env, {
            "agent": _lm(server, "agent-lm"), "user": _lm(server, "user-lm")})
        bus = MemoryBus()
        await bus.connect()
        steps = await bus.subscribe(step_channel("remote-agent"), from_beginning=True)
        session = Session(env, {"agent": None, "user": members["user"]}, kinds=kinds, bus=bus,
                          session_id="remote-agent", results_dir=tmp_path,
                          config=SessionConfig(idle_seconds=1, max_idle_ticks=2, timeout=30))
        agent = AgentNode(bus, session.session_id, "agent", members["agent"],
                          report_lm_failures=report)
        await asyncio.wait_for(asyncio.gather(session.run(), agent.run()), 60)
        sent = []
        while (message := await steps.get(timeout=0)) is not None:
            sent.append(message)
        for member in members.values():
            await member.lm.aclose()
        await bus.close()
    return sent


async def test_a_remote_members_lm_failure_ends_the_session_naming_it(tmp_path):
    sent = await _remote_agent_session(tmp_path, report=True)
    stored = read_session(tmp_path)
    assert stored["end_reason"] == "lm_failed" and stored["outcome_class"] == "agent_failure"
    failure = stored["failure"]
    assert (failure["member"], failure["side"], failure["kind"]) == (
        "agent", "agent", "server_error")
    assert failure["model"] == "agent-lm" and failure["status"] == 503
    assert failure["attempts"] == 3
    assert len(stored["lm_failures"]) == 1  # reported once, recorded once
    end = read_events(tmp_path)[-1]
    assert end.type is EventType.END and end.info["failure"]["kind"] == "server_error"
    # The report went on the step channel before anything the agent sent after its failure,
    # and nothing after it was applied.
    requests = [StepRequest.model_validate(m) for m in sent if m.get("role") == "agent"]
    reported = next(i for i, r in enumerate(requests) if r.kind == "lm_failed")
    later = {r.id for r in requests[reported + 1:]}
    assert later  # the agent told its teammate its LM is not working: too late to count
    assert not [e for e in read_events(tmp_path) if e.request_id in later]


async def test_without_the_report_the_session_cannot_see_it(tmp_path):
    """What the report closes: a remote agent whose LM fails looks like one that gave up."""
    await _remote_agent_session(tmp_path, report=False)
    stored = read_session(tmp_path)
    assert stored["end_reason"] != "lm_failed" and stored["failure"] is None
    assert stored["lm_failures"] == []


def test_node_processes_end_the_session_for_the_agents_lm_failure(redis_server, tmp_path):
    """The same over Redis, each node in its own ``cogym-lab node`` process: the env's terminal
    names the member and the failure."""
    play = TodoRolePlay()

    def responder(body: dict[str, Any]) -> str | Reply:
        return Reply(status=500, error="internal error") if body["model"] == "agent-lm" \
            else play(body)

    session_id = "proc-fail-" + uuid.uuid4().hex[:6]
    with ScriptedOpenAIServer(responder=responder) as server:
        common = ["--session", session_id, "--redis", redis_server.url, "--out", str(tmp_path),
                  "--team", "collaborative", "--model", "agent=agent-lm",
                  "--model", "user=user-lm", "--base-url", server.base_url]
        cli = [sys.executable, "-m", "cogym_lab", "node"]
        environ = {k: v for k, v in os.environ.items()
                   if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COGYM_MODEL")}
        environ["COLUMNS"] = "200"
        # Idle ticks slower than the agent's LM fails under the default retries (about 8 s of
        # backoff for five attempts), so the session is still going when the report comes.
        env = subprocess.Popen([*cli, "env", *common, "--idle-seconds", "15"], env=environ,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        members = [subprocess.Popen([*cli, kind, *common], env=environ, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
                   for kind in ("agent", "user")]
        outputs = [p.communicate(timeout=90)[0] for p in (env, *members)]
    assert [p.returncode for p in (env, *members)] == [0, 0, 0], outputs
    assert "ended: lm_failed" in outputs[0], outputs[0]
    assert "Agent failure: The agent's language model (agent-lm at http://127.0.0.1:" \
           in outputs[0] and "(server errors, HTTP 500, 5 attempts)." in outputs[0]
    stored = read_session(tmp_path)
    assert stored["end_reason"] == "lm_failed" and stored["outcome_class"] == "agent_failure"
    assert (stored["failure"]["member"], stored["failure"]["kind"]) == ("agent", "server_error")
