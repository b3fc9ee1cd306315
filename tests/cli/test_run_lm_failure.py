"""``cogym-lab run`` when the agent's LM fails past its retries: the terminal names whose LM
failed and how in one line, the session ends ``lm_failed``, and ``session.json`` keeps the
failure and the outcome class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(120)]

#: The agent's fault, the failure kind the session must name, and the plain words the
#: terminal line must use for it.
FAULTS = {
    "5xx": (Reply(status=500, error="internal error"), "server_error",
            "its server kept reporting errors (server errors, HTTP 500, 4 attempts)."),
    "hang": (Reply(delay=3600), "timeout", "did not answer within"),
}


def _spec(tmp_path: Path, base_url: str) -> Path:
    """A bare spec: the todo task, the collaborative team, short LM deadlines (the CLI's LM
    options set model and endpoint only)."""
    quick = {"base_url": base_url, "deadline": 1.5, "timeout": 1.0, "max_retries": 3,
             "backoff": 0.05}
    spec = {"task": "todo", "team": "collaborative",
            "lm": {"agent": {"model": "agent-lm", **quick}, "user": {"model": "user-lm", **quick}},
            "limits": {"idle_seconds": 2, "timeout": 60}}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.parametrize("fault", FAULTS)
def test_run_names_the_agents_lm_failure_in_one_line(tmp_path, fault):
    reply, kind, words = FAULTS[fault]
    play = TodoRolePlay()

    def responder(body):
        return reply if body["model"] == "agent-lm" else play(body)

    out = tmp_path / "results"
    with ScriptedOpenAIServer(responder=responder) as server:
        ran = CliRunner().invoke(main, ["run", "--spec", str(_spec(tmp_path, server.base_url)),
                                        "--out", str(out), "--quiet"])
        asked = [r for r in server.chat_requests if r.body["model"] == "agent-lm"]
    assert ran.exit_code == 0, ran.output
    if fault == "5xx":
        assert len(asked) == 4  # the first try and its three retries
    lines = ran.output.splitlines()
    ended = next(line for line in lines if " ended: " in line)
    assert "ended: lm_failed" in ended and ended.endswith("(protocol cogym)"), ran.output
    (cause,) = [line for line in lines if "language model" in line]
    assert cause.startswith("Agent failure: The agent's language model (agent-lm at "
                            "http://127.0.0.1:"), cause
    assert words in cause, cause
    # the cause comes before the outcome it explains
    assert lines.index(ended) < lines.index(cause) < next(
        i for i, line in enumerate(lines) if line.startswith("Delivered: "))

    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    stored = read_session(folder)
    assert stored["end_reason"] == "lm_failed"
    assert stored["outcome_class"] == "agent_failure"
    failure = stored["failure"]
    assert (failure["member"], failure["side"], failure["kind"]) == ("agent", "agent", kind)
    assert failure["model"] == "agent-lm"
    if fault == "5xx":
        assert failure["status"] == 500
