"""The ``mcp-client`` member type and the session's hook for teammates that drive their seat:
a real program, an MCP client on the official SDK, plays the todo task's agent seat through the
loopback endpoint and the session finishes with its record written; a program that crashes, one
that exits early and one that ignores SIGTERM each end in a stated way, never a hung session;
the program's environment holds no LM key or Jupyter token unless the team file passes it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.nodes.results import read_session
from cogym_lab.nodes.session import OUTSIDE_AGENT_LEFT
from cogym_lab.sessions import SessionSpec, build_session
from cogym_lab.teams.config import TeamConfig
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.mcp_client_agent import todo_policy
from tests.support.paths import REPO_ROOT

AGENT_SCRIPT = REPO_ROOT / "tests" / "support" / "mcp_client_agent.py"


def mcp_client_team(options: dict[str, Any], idle_seconds: float = 2.0) -> TeamConfig:
    return TeamConfig.model_validate({
        "name": "outside-todo", "tasks": ["todo"], "session": {"idle_seconds": idle_seconds},
        "members": {"agent": {"type": "mcp-client", "options": options},
                    "user": {"type": "example-user"}}})


def agent_options(lm: ScriptedOpenAIServer, **more: Any) -> dict[str, Any]:
    """The test agent as a team file would name it."""
    return {"command": sys.executable,
            "args": [str(AGENT_SCRIPT), "--mcp-config", "{mcp_config}", "--prompt", "{prompt}"],
            "env": {"AGENT_LM_BASE_URL": lm.base_url}, "model": "scripted", **more}


async def run_session(tmp_path: Path, team: TeamConfig, instance: int = 0) -> Any:
    session = build_session(SessionSpec(task="todo", instance=instance, team=team),
                            bus=MemoryBus(), results_dir=tmp_path / "run")
    (tmp_path / "run").mkdir()
    result = await session.run()
    return session, result, tmp_path / "run"


@pytest.mark.timeout(120)
async def test_an_mcp_client_program_plays_the_agent_seat(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=todo_policy) as lm:
        session, result, folder = await run_session(tmp_path, mcp_client_team(agent_options(lm)),
                                                    instance=1)
    # The beach list: five items, the user's sunscreen and hat among them; the user finished.
    assert result.end_reason == "finished" and result.delivered, result
    assert {"sunscreen", "hat"} <= set(result.outcome) and len(result.outcome) >= 5
    assert result.outcome_class == "completed" and result.scores["performance"] == 1.0
    record = json.loads((folder / "agent" / "member.json").read_text())
    assert record["teammate"].startswith("MCP client:") and record["type"] == "mcp-client"
    assert record["end_reason"] == "finished" and record["stopped"] is None
    assert record["stats"]["actions_sent"] >= 5
    # The tokens the program reported (its LM's, counted by the loopback server) are recorded.
    usage = json.loads((folder / "agent" / "usage.json").read_text())
    assert usage["agent_type"] == "mcp-client" and usage["model"] == "scripted"
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["calls"] == len(lm.requests)
    assert record["usage"]["prompt_tokens"] == usage["prompt_tokens"]
    log = (folder / "agent" / "agent.log").read_text()
    assert "played" in log and '"type": "result"' in log
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert any(e.get("actor") == "agent" and "SEND_TEAMMATE_MESSAGE" in (e.get("action") or "")
               for e in events)
    assert session.lms == {}  # the seat's agent brought its own LM: the session holds none


@pytest.mark.timeout(60)
async def test_a_program_that_crashes_ends_the_session_as_an_agent_failure(tmp_path) -> None:
    team = mcp_client_team({"command": sys.executable, "model": "broken-agent",
                            "args": ["-c", "import sys; print('no API key'); sys.exit(3)"]},
                           idle_seconds=30.0)
    _, result, folder = await run_session(tmp_path, team)
    assert result.end_reason == "lm_failed" and not result.delivered
    assert result.outcome_class == "agent_failure"
    failure = result.failure
    assert failure is not None and failure.member == "agent" and failure.side == "agent"
    assert "exited with code 3" in failure.reason and "no API key" in failure.detail
    stored = read_session(folder)
    assert stored["outcome_class"] == "agent_failure"
    assert "exited with code 3" in stored["failure"]["reason"]
    record = json.loads((folder / "agent" / "member.json").read_text())
    assert "exited with code 3" in record["stopped"]
    # A program that is not there fails the same way, saying so.
    missing = mcp_client_team({"command": str(tmp_path / "no-such-program")}, idle_seconds=30)
    (tmp_path / "missing").mkdir()
    _, result, _ = await run_session(tmp_path / "missing", missing)
    assert result.outcome_class == "agent_failure"
    assert "could not be started" in result.failure.reason


@pytest.mark.timeout(60)
async def test_a_program_that_exits_early_ends_the_session_as_left(tmp_path) -> None:
    team = mcp_client_team({"command": sys.executable, "args": ["-c", "pass"]},
                           idle_seconds=30.0)
    _, result, folder = await run_session(tmp_path, team)
    assert result.end_reason == OUTSIDE_AGENT_LEFT and result.failure is None
    assert result.outcome_class == "completed"  # its own choice: counted, not delivered here
    record = json.loads((folder / "agent" / "member.json").read_text())
    assert "exited (code 0) before the session ended" in record["stopped"]


STUBBORN = """
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
names = {n: os.environ.get(n) for n in ("OPENAI_API_KEY", "COGYM_API_KEY", "JUPYTER_TOKEN",
         "ANTHROPIC_API_KEY", "COGYM_MCP_URL", "COGYM_MCP_HEADERS", "COGYM_MCP_CONFIG")}
with open(sys.argv[1], "w") as out:
    json.dump({"pid": os.getpid(), "env": names, "config": open(names["COGYM_MCP_CONFIG"]).read()},
              out)
time.sleep(600)
"""


@pytest.mark.timeout(60)
async def test_a_program_that_ignores_sigterm_is_killed_and_sees_no_secret(
        tmp_path, monkeypatch) -> None:
    for name, value in (("OPENAI_API_KEY", "sk-ours"), ("COGYM_API_KEY", "ck-ours"),
                        ("JUPYTER_TOKEN", "jt-ours"), ("ANTHROPIC_API_KEY", "ak-theirs")):
        monkeypatch.setenv(name, value)
    seen = tmp_path / "seen.json"
    team = mcp_client_team({"command": sys.executable, "args": ["-c", STUBBORN, str(seen)],
                            "pass_env": ["ANTHROPIC_API_KEY"], "exit_grace": 0.2,
                            "kill_grace": 0.5}, idle_seconds=0.3)
    _, result, folder = await run_session(tmp_path, team)
    assert result.end_reason == "idle"  # the program did nothing; the session idled out
    written = json.loads(seen.read_text())
    with pytest.raises(ProcessLookupError):  # SIGTERM was ignored; SIGKILL ended it
        os.kill(written["pid"], 0)
    env = written["env"]
    assert env["OPENAI_API_KEY"] is None and env["COGYM_API_KEY"] is None
    assert env["JUPYTER_TOKEN"] is None and env["ANTHROPIC_API_KEY"] == "ak-theirs"
    config = json.loads(written["config"])["mcpServers"]["cogym"]
    assert config["type"] == "http" and config["url"] == env["COGYM_MCP_URL"]
    assert config["headers"] == json.loads(env["COGYM_MCP_HEADERS"])
    assert config["headers"]["Authorization"].startswith("Bearer ")
    assert _gone(env["COGYM_MCP_CONFIG"])  # the secret's file went with the session
    secret = config["headers"]["Authorization"].removeprefix("Bearer ")
    for path in folder.rglob("*"):  # the results hold no secret of the endpoint either
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def _gone(path: str) -> bool:
    return not Path(path).exists()
