"""`cogym-lab eval export --format inspect`: runs written as Inspect AI logs, read back with
``inspect_ai``'s own log reader. A rule-based todo run (no LM), a travel_planning run whose LM calls
went through our real LM client (over aiohttp) to the loopback server, a todo run in which the
agent's LM hangs for one instance, and a hand-built session full of hostile text."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inspect_ai.log import EvalLog, read_eval_log

from cogym_lab.cli.main import main
from cogym_lab.core.text import clean_text
from cogym_lab.eval.inspect_log import export_inspect
from cogym_lab.records.trajectory import load_session
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.eval_scripts import RouteByInstance, travel_routes
from tests.support.hostile import NASTY
from tests.support.lm_scripts import TodoRolePlay
from tests.support.paths import REPO_ROOT
from tests.support.trajectories import say, write_session

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]


def _run(*args: str) -> None:
    ran = CliRunner().invoke(main, ["eval", "run", *args, "--no-progress"])
    assert ran.exit_code == 0, ran.output


def _export(dirs: list[Path], out: Path) -> list[Path]:
    exported = CliRunner().invoke(main, ["eval", "export", *map(str, dirs), "--format",
                                         "inspect", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    return [Path(line.split(" -> ", 1)[1]) for line in exported.output.splitlines()
            if line.startswith("Inspect log -> ")]


def _read_one(run: Path, out: Path) -> EvalLog:
    [path] = _export([run], out)
    return _read(path)


def _read(path: Path) -> EvalLog:
    """The log as ``inspect view`` shows it: the .eval format moves long texts into attachments,
    which the reader puts back when asked."""
    return read_eval_log(str(path), resolve_attachments=True)


def _usage_of_calls(folder: Path) -> dict[str, tuple[int, int]]:
    """Tokens by model, summed over every member's LM call log in a session folder."""
    totals: dict[str, tuple[int, int]] = {}
    for log in folder.glob("*/lm_calls.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            call = json.loads(line)
            prompt, completion = totals.get(call["model"], (0, 0))
            usage = call.get("usage") or {}
            totals[call["model"]] = (prompt + (usage.get("prompt_tokens") or 0),
                                     completion + (usage.get("completion_tokens") or 0))
    return totals


def test_a_rule_based_run_opens_as_one_sample_per_session(tmp_path):
    run = tmp_path / "run"
    _run("--task", "todo", "--team", "example", "--instances", "0:3", "--out", str(run),
         "--idle-seconds", "0.5")
    [path] = _export([run], tmp_path / "logs")
    assert path.parent == tmp_path / "logs" and path.suffix == ".eval"
    assert "_todo_" in path.name  # Inspect's own name shape: <created>_<task>_<id>.eval
    log = _read(path)
    run_json = json.loads((run / "run.json").read_text())
    assert log.status == "success" and log.eval.task == "todo"
    assert log.eval.solver == "example" and log.eval.model == "none/none"
    assert log.eval.dataset.samples == 3 and log.eval.dataset.sample_ids == [0, 1, 2]
    assert log.samples is not None and len(log.samples) == 3
    for sample, entry in zip(log.samples, run_json["sessions"], strict=True):
        record = load_session(run / entry["directory"])
        session = json.loads((run / entry["directory"] / "session.json").read_text())
        assert (sample.id, sample.epoch) == (entry["instance"], 1)
        assert sample.uuid == session["session_id"] == sample.metadata["session_id"]
        assert {k: s.value for k, s in (sample.scores or {}).items()} == session["scores"]
        assert sample.scores and sample.scores["performance"].explanation
        assert "packing checklist" in str(sample.input)
        assert [(m.role, m.text, (m.metadata or {})["member"]) for m in sample.messages] == [
            ("user" if msg.sender == "user" else "assistant", msg.text, msg.sender)
            for msg in record.messages]
        assert sample.messages  # the rule-based team talks
        info = [e for e in sample.events if e.event == "info"]
        assert [e.data["seq"] for e in info] == [e.seq for e in record.events]
        assert [e.event for e in sample.events].count("score") == len(session["scores"])
        assert sample.metadata["protocol"] == "cogym"
        assert sample.metadata["outcome_class"] == "completed" and sample.error is None
        assert sample.metadata["sample_data"] is False
        assert sample.metadata["provenance"] == session["provenance"]
        assert sample.model_usage == {} and sample.output.completion  # no LM; the checklist
    assert log.results is not None
    assert log.results.scores[0].name == "performance"  # Inspect's list shows the first
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(
        sum(e["scores"]["performance"] for e in run_json["sessions"]) / 3)
    assert log.results.metadata and log.results.metadata["delivered"] == 1.0
    assert log.results.metadata["collab_score"] == log.results.scores[0].metrics["mean"].value

    # Inspect's JSON format too, when the file named ends in .json; the same log.
    [as_json] = _export([run], tmp_path / "one.json")
    again = _read(as_json)
    assert json.loads(as_json.read_text(encoding="utf-8"))["eval"]["task"] == "todo"
    assert again.samples is not None
    assert [s.model_dump() for s in again.samples] == [s.model_dump() for s in log.samples]

    # Inspect's own command line reads it as well.
    inspect = Path(sys.executable).parent / "inspect"
    dumped = subprocess.run([str(inspect), "log", "dump", "--header-only", str(path)],
                            capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(dumped.stdout)["eval"]["eval_id"] == log.eval.eval_id


def test_an_lm_run_carries_its_model_calls_and_token_use(tmp_path):
    run = tmp_path / "run"
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes([0]))) as server:
        _run("--task", "travel_planning", "--team", "collaborative", "--instances", "0",
             "--out", str(run), "--model", "agent=agent-lm", "--model", "user=user-lm",
             "--base-url", server.base_url, "--idle-seconds", "2", "--allow-sample")
        prompts = [r["messages"] for r in server.chat_requests]
    log = _read_one(run, tmp_path / "travel.eval")
    assert log.samples is not None
    [sample] = log.samples
    session = json.loads((run / "000" / "session.json").read_text())
    assert log.eval.model == "agent-lm"
    assert {role: config.model for role, config in log.eval.model_roles.items()} == {
        "agent": "agent-lm", "user": "user-lm"}
    assert {k: s.value for k, s in (sample.scores or {}).items()} == session["scores"]
    assert sample.metadata["sample_data"] is True and sample.metadata["data"] == "sample"
    # Token use per model is the call logs' sum, and agrees with what session.json recorded.
    calls = _usage_of_calls(run / "000")
    assert {m: (u.input_tokens, u.output_tokens) for m, u in sample.model_usage.items()} == calls
    recorded = session["lm_usage"]
    assert {role: (u.input_tokens, u.output_tokens) for role, u in sample.role_usage.items()} \
        == {role: (v["prompt_tokens"], v["completion_tokens"]) for role, v in recorded.items()}
    assert log.stats.model_usage == sample.model_usage
    assert sum(u.total_tokens for u in sample.model_usage.values()) == \
        json.loads((run / "run.json").read_text())["tokens"]["total_tokens"]
    # Each LM call is a model event holding the prompt the server received and its reply.
    model_events = [e for e in sample.events if e.event == "model"]
    assert len(model_events) == len(prompts)
    sent = [[{"role": m.role, "content": m.text} for m in e.input]
            for e in model_events]
    assert sorted(map(json.dumps, sent)) == sorted(map(json.dumps, prompts))
    assert {e.role for e in model_events} == {"agent", "user"}
    assert all(e.output.usage and e.output.usage.total_tokens for e in model_events)
    times = [e.timestamp for e in sample.events]
    assert times == sorted(times)
    assert sample.output.completion.startswith("Day 1:")  # the plan in the editor


def test_a_dead_lm_is_the_samples_error_and_left_out_of_the_means(tmp_path):
    play = TodoRolePlay()

    def responder(body: dict[str, Any]) -> str | Reply:
        if body["model"] == "agent-lm" and "weekend beach trip" in json.dumps(body["messages"]):
            return Reply(delay=3600)  # the agent's LM hangs on instance 1 (the beach trip)
        return play(body)

    team = tmp_path / "quick.toml"  # the collaborative team, each LM call bounded by 1 s
    team.write_text((REPO_ROOT / "cogym_lab" / "teams" / "collaborative.toml").read_text()
                    .replace('name = "collaborative"', 'name = "quick"')
                    .replace("temperature = 0.0", "temperature = 0.0\ndeadline = 1.0\n"
                             "backoff = 0.05"))
    run = tmp_path / "run"
    with ScriptedOpenAIServer(responder=responder) as server:
        _run("--task", "todo", "--team", str(team), "--instances", "0:2", "--concurrency", "1",
             "--out", str(run), "--model", "agent=agent-lm", "--model", "user=user-lm",
             "--base-url", server.base_url, "--idle-seconds", "1", "--protocol", "cogym_lab")
    log = _read_one(run, tmp_path / "todo.eval")
    assert log.samples is not None
    done, dead = log.samples
    assert done.error is None and done.metadata["outcome_class"] == "completed"
    assert dead.metadata["outcome_class"] == "agent_failure"
    assert dead.error is not None and "agent-lm" in dead.error.message
    assert dead.error.message == load_session(run / "001").cause
    assert dead.metadata["failure"]["side"] == "agent"
    assert done.model_usage["agent-lm"].total_tokens > 0
    assert log.results is not None and log.results.completed_samples == 1
    assert log.results.metadata and log.results.metadata["outcome_classes"]["agent_failure"] == 1
    performance = next(s for s in log.results.scores if s.name == "performance")
    assert performance.metrics["mean"].value == (done.scores or {})["performance"].value


def _prompt_call(at: float, text: str) -> dict[str, Any]:
    return {"time": datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds"),
            "purpose": "act", "model": "scripted", "latency": 0.25, "attempts": 1,
            "messages": [{"role": "system", "content": text}, {"role": "user", "content": text}],
            "completion": text, "usage": {"prompt_tokens": 7, "completion_tokens": 3},
            "error": None}


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_hostile_text_round_trips(tmp_path, suffix):
    texts = [*NASTY, "line\u2028separator\u2029paragraph", "nul\x00", "<b>**markup**</b> & <"]
    steps = [("agent" if i % 2 else "user", say(text)) for i, text in enumerate(texts)]
    directory = write_session(tmp_path / "hostile", [*steps, ("user", "FINISH()")])
    with (directory / "agent" / "lm_calls.jsonl").open("w", encoding="utf-8") as handle:
        for i, text in enumerate(texts):  # the log writer cleans texts; json escapes the rest
            handle.write(json.dumps(_prompt_call(1000.5 + i, clean_text(text))) + "\n")
    summary = export_inspect([directory], tmp_path / f"hostile{suffix}")
    log = _read(summary.paths[0])
    assert log.samples is not None
    [sample] = log.samples
    record = load_session(directory)
    assert [m.text for m in sample.messages] == [clean_text(m.text) for m in record.messages]
    assert [m.text for m in sample.messages] == [clean_text(t) for t in texts]
    said = [m.text for m in sample.messages]
    assert "line\u2028separator\u2029paragraph" in said and "nul\x00" in said
    model_events = [e for e in sample.events if e.event == "model"]
    assert [e.output.completion for e in model_events] == [clean_text(t) for t in texts]
    assert [e.input[0].text for e in model_events] == [clean_text(t) for t in texts]
    assert sample.model_usage["scripted"].total_tokens == 10 * len(texts)


def test_one_file_for_several_runs_is_refused_and_a_folder_gets_one_log_each(tmp_path):
    for name in ("a", "b"):
        _run("--task", "todo", "--team", "example", "--instances", "0", "--out",
             str(tmp_path / "runs" / name), "--idle-seconds", "0.5")
    refused = CliRunner().invoke(main, ["eval", "export", str(tmp_path / "runs"), "--format",
                                        "inspect", "--out", str(tmp_path / "both.eval")])
    assert refused.exit_code != 0 and "name a folder" in refused.output
    paths = _export([tmp_path / "runs"], tmp_path / "logs")
    assert len(paths) == 2 and len({p.name for p in paths}) == 2
    assert {_read(p).eval.metadata["cogym_lab"]["run"] for p in paths} == {
        "a", "b"}
    wrong = CliRunner().invoke(main, ["eval", "export", str(tmp_path / "runs"), "--format",
                                      "inspect", "--out", str(tmp_path / "x"), "--role", "agent"])
    assert wrong.exit_code != 0 and "--role" in wrong.output


def test_without_inspect_ai_the_error_names_the_extra(tmp_path, monkeypatch):
    directory = write_session(tmp_path / "s", [("user", "FINISH()")])
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if it were not installed
    result = CliRunner().invoke(main, ["eval", "export", str(directory), "--format", "inspect",
                                       "--out", str(tmp_path / "logs")])
    assert result.exit_code == 1
    assert "cogym_lab[inspect]" in result.output and "Traceback" not in result.output
