"""A session writes its ``session.json`` twice, at the start and at the end, however it is run:
in a batch (the runner's own record, the session's place in the batch and its LM usage, goes
into those two writes rather than a third of its own), by ``cogym-lab run`` and hosted by a
server or kernel (issue: nothing slow per call or per event)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.envs.todo import ExampleAgent, ExampleUser, TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import SESSION_FILE, read_session
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.batch_runs import batch_run
from tests.support.lm_scripts import TodoRolePlay
from tests.support.teammates import AGENT_AND_USER

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]

#: Every field a finished batch session's session.json held when the runner wrote its record in
#: a third write of its own: none may go missing now that it rides on the session's two.
FINISHED_FIELDS = {
    "batch", "cogym_lab_version", "config", "delivered", "duration", "end_reason", "ended_at",
    "env_args", "events", "failure", "final_state", "grading_error", "grading_note",
    "interaction", "leakage", "lm_failures", "lm_usage", "outcome", "outcome_class", "protocol",
    "provenance", "score_reports", "scores", "session_id", "spec", "started_at", "status",
    "step_counts", "task", "team"}


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Each session.json written from now on, as written. Every writer of it (the session's,
    the batch runner's, the host's) lands it with os.replace."""
    written: list[dict[str, Any]] = []
    real_replace = os.replace

    def counted(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if Path(target).name == SESSION_FILE:
            written.append(json.loads(Path(source).read_text(encoding="utf-8")))
        real_replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", counted)
    return written


def test_a_batch_session_writes_session_json_at_its_start_and_end_only(tmp_path, monkeypatch):
    written = _count_writes(monkeypatch)
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        summary = batch_run(tmp_path / "run", server, instances="0", workers=0)
    [entry] = summary.sessions
    assert entry.status == "finished"
    assert [record["status"] for record in written] == ["running", "finished"]
    start, end = written
    # the runner's record: its place in the batch known at the start, its usage at the end
    assert start["batch"] == end["batch"] == {
        "run": "run", "instance": 0, "trial": 0, "seeds": start["batch"]["seeds"]}
    assert "lm_usage" not in start
    final = json.loads((tmp_path / "run" / entry.directory / SESSION_FILE).read_text())
    assert final == end and set(final) == FINISHED_FIELDS
    usage = final["lm_usage"]
    assert {role: record["model"] for role, record in usage.items()} == {
        "agent": "agent-lm", "user": "user-lm"}
    # the same numbers as the run's entry, and as many calls as the members logged
    assert sum(record["calls"] for record in usage.values()) == sum(
        count.calls for count in entry.tokens.by_model.values()) > 0
    assert sum(record["prompt_tokens"] + record["completion_tokens"]
               for record in usage.values()) == entry.tokens.total_tokens
    for role in ("agent", "user"):
        logged = (tmp_path / "run" / entry.directory / role / "lm_calls.jsonl").read_text()
        assert usage[role]["calls"] == len(logged.splitlines())


def test_a_failing_closing_hook_costs_its_fields_not_the_sessions_record(tmp_path):
    def broken() -> dict[str, Any]:
        raise RuntimeError("the runner's hook broke \ud800 ' \" \\")

    session = Session(TodoEnv(), {"agent": ExampleAgent(), "user": ExampleUser()},
                      kinds=AGENT_AND_USER, results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=2))
    # a field the session writes itself stays the session's
    session.record_fields = {"batch": {"note": "</script> \u202e ' \" \\"}, "task": "forged",
                             "status": "forged"}
    session.closing_fields = broken
    result = session.run_sync()
    meta = read_session(tmp_path)
    assert meta["status"] == "finished" and meta["delivered"] is result.delivered
    assert meta["task"] == "todo"
    assert meta["batch"] == {"note": "</script> \u202e ' \" \\"} and "lm_usage" not in meta


def test_the_closing_fields_give_way_to_the_sessions_own(tmp_path):
    session = Session(TodoEnv(), {"agent": ExampleAgent(), "user": ExampleUser()},
                      kinds=AGENT_AND_USER, results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=2))
    session.closing_fields = lambda: {"status": "forged", "ended_at": -1.0,
                                      "lm_usage": {"agent": {"calls": 0}}}
    session.run_sync()
    meta = read_session(tmp_path)
    assert meta["status"] == "finished" and meta["ended_at"] >= meta["started_at"] > 0
    assert meta["lm_usage"] == {"agent": {"calls": 0}}


def test_the_run_command_writes_session_json_at_the_start_and_end_only(tmp_path, monkeypatch):
    written = _count_writes(monkeypatch)
    result = CliRunner().invoke(main, ["run", "--out", str(tmp_path), "--quiet",
                                       "--idle-seconds", "2"])
    assert result.exit_code == 0, result.output
    assert [record["status"] for record in written] == ["running", "finished"]
    (folder,) = tmp_path.iterdir()
    assert read_session(folder) == written[-1] and written[-1]["final_state"]


async def test_a_hosted_session_writes_session_json_at_the_start_and_end_only(tmp_path,
                                                                             monkeypatch):
    written = _count_writes(monkeypatch)
    host = SessionHost(tmp_path / "results")
    try:
        hosted = await host.create("todo", team="example", idle_seconds=2)
        deadline = time.monotonic() + 60
        while hosted.status == "running":
            assert time.monotonic() < deadline, "the session did not end"
            await asyncio.sleep(0.05)
    finally:
        await host.close()
    assert hosted.end_reason == "finished"
    assert [record["status"] for record in written] == ["running", "finished"]
    assert read_session(tmp_path / "results" / hosted.session_id) == written[-1]
