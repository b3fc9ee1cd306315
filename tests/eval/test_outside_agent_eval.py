"""``cogym-lab eval run`` with an outside agent in the agent's seat (an ``mcp-client`` member: a
real program on the official MCP client SDK, with its own LM on the loopback server), beside
the todo task's rule-based team on the same instances; ``eval report`` sets them side by side
with delivery, performance, the failure counts and the outside agent's reported tokens. No
``--model`` is needed for the outside seat."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.mcp_client_agent import todo_policy
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]
AGENT_SCRIPT = REPO_ROOT / "tests" / "support" / "mcp_client_agent.py"


def outside_team(path: Path, agent_type: str, options: dict[str, str]) -> Path:
    """A todo team file whose agent seat is an outside agent of ``agent_type``, with its
    ``options`` (TOML values, as written), beside the example user."""
    lines = "".join(f"{key} = {value}\n" for key, value in options.items())
    path.write_text(f"""
name = "{path.stem}"
tasks = ["todo"]

[session]
idle_seconds = 2.0

[members.agent]
type = "{agent_type}"

[members.agent.options]
{lines}
[members.user]
type = "example-user"
""", encoding="utf-8")
    return path


def team_file(path: Path, args: list[str], model: str, lm_url: str = "") -> Path:
    return outside_team(path, "mcp-client", {
        "command": json.dumps(sys.executable), "args": json.dumps(args), "model": f'"{model}"',
        "env": f'{{ AGENT_LM_BASE_URL = "{lm_url}" }}'})


def run_batch(team: str, out: Path, instances: str) -> str:
    ran = CliRunner().invoke(main, ["eval", "run", "--task", "todo", "--team", team,
                                    "--instances", instances, "--out", str(out),
                                    "--no-progress"])
    assert ran.exit_code == 0, ran.output
    return " ".join(ran.output.split())


def test_an_outside_agent_is_run_and_reported_beside_the_built_in_team(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=todo_policy) as lm:
        outside = team_file(tmp_path / "outside-agent.toml",
                            [str(AGENT_SCRIPT), "--mcp-config", "{mcp_config}",
                             "--prompt", "{prompt}"], "scripted", lm.base_url)
        said = run_batch(str(outside), tmp_path / "outside", "0,1")
        agent_calls = len(lm.requests)
    assert "2/2 sessions finished" in said and "0 failed, 2 delivered" in said, said
    run = json.loads((tmp_path / "outside" / "run.json").read_text())
    assert run["tokens"]["total_tokens"] > 0  # the tokens the program reported
    assert run["tokens"]["by_model"]["scripted"]["calls"] == agent_calls
    assert "agent" not in run["lms"]  # no LM of the session's for the outside seat
    session = json.loads((tmp_path / "outside" / "000" / "session.json").read_text())
    assert session["lm_usage"]["agent"]["model"] == "scripted"

    said = run_batch("example", tmp_path / "built-in", "0,1")
    assert "2/2 sessions finished" in said and "2 delivered" in said

    crasher = team_file(tmp_path / "crashing-agent.toml",
                        ["-c", "import sys; print('cannot log in'); sys.exit(2)"], "crasher")
    said = run_batch(str(crasher), tmp_path / "crashing", "0")
    assert "1 agent failure" in said and "exited with code 2" in said, said

    report = tmp_path / "report"
    shown = CliRunner().invoke(main, ["eval", "report", str(tmp_path / "outside"),
                                      str(tmp_path / "built-in"), str(tmp_path / "crashing"),
                                      "--out", str(report)])
    assert shown.exit_code == 0, shown.output
    text = (report / "report.txt").read_text()
    assert "mcp-client" in text and "1 agent failure" in text
    with (report / "summary.csv").open(encoding="utf-8") as handle:
        rows = {(row["agent_type"], row["model"]): row for row in csv.DictReader(handle)}
    assert set(rows) == {("mcp-client", "scripted"), ("example", "-"),
                         ("mcp-client", "crasher")}
    ours, theirs = rows["mcp-client", "scripted"], rows["example", "-"]
    for row in (ours, theirs):
        assert row["sessions"] == "2" and row["counted"] == "2"
        assert float(row["delivery_rate"]) == 1.0 and float(row["performance"]) == 1.0
        assert row["agent_failure"] == "0" and "h_init" in row
    assert float(ours["agent_tokens"]) > 0 and float(theirs["agent_tokens"]) == 0
    crashed = rows["mcp-client", "crasher"]
    assert crashed["agent_failure"] == "1" and crashed["counted"] == "0"


def acp_team_file(path: Path, lm_url: str, record: Path) -> Path:
    """A team whose agent is an ACP agent (the test agent, its LM on the loopback server)."""
    args = ["-m", "tests.support.acp_agent", "--lm-url", lm_url, "--record", str(record)]
    return outside_team(path, "acp", {
        "command": json.dumps(sys.executable), "args": json.dumps(args),
        "env": f"{{ PYTHONPATH = {json.dumps(str(REPO_ROOT))} }}"})


def acp_todo_policy(messages: list[dict]) -> dict:
    """The ACP agent's script: add what the user asks for and a few more items, report once,
    then wait for the user to finish."""
    done = [json.loads(m["content"]) for m in messages if m["role"] == "assistant"]
    seen = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
    asked = re.search(r"Please bring ([^\"”\n;]+)", seen)
    wanted = [part.strip().removeprefix("a ").removeprefix("an ").strip(" .")
              for part in asked.group(1).split(" and ")] if asked else []
    wishes: list[dict] = [{"tool": "observe"}]
    if not asked:
        wishes.append({"tool": "wait_for_news", "arguments": {"timeout_seconds": 2}})
    wishes += [{"tool": "ADD_ITEM", "arguments": {"text": text}} for text in
               [*wanted, "tent", "sleeping bag", "stove", "water bottle", "map", "first aid kit"]]
    wishes.append({"tool": "send_message",
                   "arguments": {"message": "The list is ready: everything you asked for."}})
    for wish in wishes:
        if wish not in done:
            return wish
    return {"end_turn": True}


def test_an_acp_agent_is_run_and_reported_beside_the_built_in_team(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=lambda body: json.dumps(acp_todo_policy(body["messages"])),
                              models=("scripted-acp",)) as lm:
        team = acp_team_file(tmp_path / "acp-agent.toml", lm.base_url, tmp_path / "seen.json")
        said = run_batch(str(team), tmp_path / "acp", "0,1")
        agent_calls = len(lm.requests)
    assert "2/2 sessions finished" in said and "0 failed, 2 delivered" in said, said
    run = json.loads((tmp_path / "acp" / "run.json").read_text())
    assert run["tokens"]["total_tokens"] > 0  # what the agent reported in its turns
    assert agent_calls > 0 and "agent" not in run["lms"]  # its own LM, not the session's

    said = run_batch("example", tmp_path / "built-in", "0,1")
    assert "2/2 sessions finished" in said

    report = tmp_path / "report"
    shown = CliRunner().invoke(main, ["eval", "report", str(tmp_path / "acp"),
                                      str(tmp_path / "built-in"), "--out", str(report)])
    assert shown.exit_code == 0, shown.output
    assert "acp" in (report / "report.txt").read_text()
    with (report / "summary.csv").open(encoding="utf-8") as handle:
        rows = {row["agent_type"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"acp", "example"}
    ours, theirs = rows["acp"], rows["example"]
    for row in (ours, theirs):
        assert row["sessions"] == "2" and row["counted"] == "2" and row["agent_failure"] == "0"
        assert float(row["delivery_rate"]) == 1.0 and float(row["performance"]) == 1.0
    assert float(ours["agent_tokens"]) > 0 and float(theirs["agent_tokens"]) == 0
