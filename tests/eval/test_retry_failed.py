"""`cogym-lab eval run` names a dead LM, counts its sessions apart in run.json, and
`--retry-failed` runs again only those: a batch of the todo task on a loopback server whose
agent LM hangs for one instance, then answers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.eval.batch.manifest import read_run
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay
from tests.support.paths import REPO_ROOT

TEAMS = REPO_ROOT / "cogym_lab" / "teams"

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]


def test_a_hung_agent_lm_is_named_counted_apart_and_retried_alone(tmp_path):
    play = TodoRolePlay()
    broken = {"on": True}

    def responder(body: dict[str, Any]) -> str | Reply:
        if broken["on"] and body["model"] == "agent-lm":
            return Reply(delay=3600)
        return play(body)

    out = tmp_path / "run"
    team = tmp_path / "quick.toml"  # the collaborative team, each LM call bounded by 1 s
    team.write_text((TEAMS / "collaborative.toml").read_text().replace(
        'name = "collaborative"', 'name = "quick"').replace(
        "temperature = 0.0", "temperature = 0.0\ndeadline = 1.0\nbackoff = 0.05"))
    with ScriptedOpenAIServer(responder=responder) as server:

        def invoke(*extra: str) -> Any:
            return CliRunner().invoke(main, [
                "eval", "run", "--task", "todo", "--team", str(team), "--out", str(out),
                "--model", "agent=agent-lm", "--model", "user=user-lm",
                "--base-url", server.base_url, "--idle-seconds", "1", "--no-progress",
                "--protocol", "cogym_lab", "--instances", "0", *extra])

        first = invoke()
        assert first.exit_code == 0, first.output
        assert "agent failure instance 0: The agent's language model (agent-lm at http://" \
            in first.output
        assert "did not answer within 1 second" in first.output
        assert "Not counted: 0 infrastructure, 0 simulator error, 1 agent failure" in \
            first.output
        summary = read_run(out)
        assert summary is not None
        assert (summary.counts.agent_failure, summary.counts.completed) == (1, 0)
        [entry] = summary.sessions
        assert entry.outcome_class == "agent_failure" and "agent-lm" in (entry.cause or "")
        assert read_session(out / "000")["end_reason"] == "lm_failed"
        broken["on"] = False
        again = invoke("--retry-failed")
        assert again.exit_code == 0, again.output
    summary = read_run(out)
    assert summary is not None and summary.counts.completed == 1
    assert summary.counts.agent_failure == 0
    assert read_session(out / "000")["outcome_class"] == "completed"
    assert (out / ".replaced" / "000-1" / "session.json").is_file()  # the failed one, kept
    json.loads((out / "run.json").read_text())
