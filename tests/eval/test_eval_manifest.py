"""The batch manifest written incrementally: ``run.json`` rewritten only when an invocation starts
and ends, one line of ``sessions.jsonl`` per session in between; what a kill leaves behind (a
torn last line included) still reads, resumes and counts right; old ``run.json`` files still
resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.envs import registry
from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.eval import run
from cogym_lab.eval.batch import manifest as batch_manifest
from cogym_lab.eval.batch.manifest import (
    SESSIONS_FILE,
    Invocation,
    RunSummary,
    SessionEntry,
    SessionLog,
    read_run,
)

pytestmark = pytest.mark.timeout(300)


class ManyTodo(TodoEnv):
    """The todo task with many instances (each the first trip), so a batch can be long; the
    ``example`` team plays it without any LM, in a few milliseconds a session."""

    @classmethod
    def instances(cls, protocol: str = "cogym") -> list[dict[str, Any]]:
        return [TodoEnv.instances(protocol)[0]] * 120


@pytest.fixture
def many_todo(monkeypatch) -> str:
    """``todo`` with 120 instances (the example team plays ``todo`` only)."""
    monkeypatch.setitem(registry._registered, "todo", ManyTodo)
    return "todo"


def _run(task: str, instances: str, out: Path, **kwargs: Any):
    return run(task, "example", instances, out=out, concurrency=kwargs.pop("concurrency", 4),
               idle_seconds=0.5, progress=False, **kwargs)


class WriteCounter:
    """Counts full rewrites of run.json and the bytes each session's record cost."""

    def __init__(self, monkeypatch) -> None:
        self.rewrites = 0
        self.lines: list[int] = []
        write, append = RunSummary.write, SessionLog.append

        def counted_write(summary: RunSummary, directory: str | Path) -> Path:
            self.rewrites += 1
            return write(summary, directory)

        def counted_append(log: SessionLog, entry: SessionEntry) -> int:
            size = append(log, entry)
            self.lines.append(size)
            return size

        monkeypatch.setattr(RunSummary, "write", counted_write)
        monkeypatch.setattr(SessionLog, "append", counted_append)


def test_the_manifest_cost_of_a_session_does_not_grow_with_the_run(many_todo, monkeypatch,
                                                                  tmp_path):
    costs = {}
    for size in (10, 100):
        counter = WriteCounter(monkeypatch)
        summary = _run(many_todo, f"0:{size}", tmp_path / str(size), concurrency=8)
        assert summary.counts.finished == size
        # run.json twice (the invocation's start and end), whatever the number of sessions
        assert counter.rewrites == 2
        assert len(counter.lines) == size
        costs[size] = max(counter.lines)
        assert read_run(tmp_path / str(size)) == summary
    # One line per session, the same size at 10 and 100 sessions (the instance number's digits
    # aside): nothing in it grows with the run.
    assert costs[100] <= costs[10] + 16 < 2000


def test_a_kill_leaves_a_manifest_that_reads_counts_and_resumes_right(many_todo, monkeypatch,
                                                                     tmp_path):
    """The files as a kill would leave them: copied the moment the third session's line is
    written, while other sessions run."""
    out, crashed = tmp_path / "run", tmp_path / "crashed"
    append = SessionLog.append

    def append_then_copy(log: SessionLog, entry: SessionEntry) -> int:
        size = append(log, entry)
        if log.bytes_written and not crashed.exists() and \
                len(log.path.read_bytes().splitlines()) == 3:
            # the temporary file of a session.json being replaced (other sessions run on) may
            # vanish while copied; a kill's readers ignore it anyway
            shutil.copytree(out, crashed, ignore=shutil.ignore_patterns("*.tmp"))
        return size

    monkeypatch.setattr(SessionLog, "append", append_then_copy)
    _run(many_todo, "0:12", out)
    monkeypatch.setattr(SessionLog, "append", append)

    on_disk = json.loads((crashed / "run.json").read_text())
    assert on_disk["status"] == "running" and on_disk["counts"]["finished"] == 0
    summary = read_run(crashed)
    assert summary is not None and summary.status == "running"
    assert summary.counts.finished == 3 and summary.counts.pending == 9
    assert summary.invocations[-1].ran == 3
    done = {s.instance for s in summary.sessions if s.status == "finished"}

    resumed = _run(many_todo, "0:12", crashed)
    assert resumed.status == "finished" and resumed.counts.finished == 12
    assert resumed.counts.skipped >= 3  # at least those; others may have ended unrecorded
    assert {s.instance for s in resumed.sessions if s.resumed} >= done
    assert [i.ran for i in resumed.invocations] == [3, 12 - resumed.counts.skipped]
    assert read_run(crashed) == resumed


def test_a_torn_last_line_is_ignored(many_todo, tmp_path):
    out = tmp_path / "run"
    _run(many_todo, "0:4", out)
    summary = read_run(out)
    assert summary is not None
    # Back to how it was mid-run: run.json as written at the start, two whole lines, a torn one.
    start = summary.model_copy(deep=True)
    start.status, start.ended_at = "running", None
    start.invocations[-1] = Invocation(started_at=start.invocations[-1].started_at)
    for entry in start.sessions:
        entry.status, entry.delivered, entry.scores, entry.end_reason = "pending", None, {}, None
    start.recount()
    start.write(out)
    assert not (out / SESSIONS_FILE).exists()  # a run that ended: run.json holds it all
    log = SessionLog(out, invocation=0)
    for entry in summary.sessions[:3]:
        log.append(entry)
    log.close()
    lines = (out / SESSIONS_FILE).read_bytes().splitlines(keepends=True)
    torn = lines[2][: len(lines[2]) // 2]
    (out / SESSIONS_FILE).write_bytes(lines[0] + lines[1] + torn)

    read = read_run(out)
    assert read is not None and read.status == "running"
    assert read.counts.finished == 2 and read.counts.pending == 2
    assert read.invocations[-1].ran == 2
    # A resume goes by the session folders, which all ended: nothing runs again.
    resumed = _run(many_todo, "0:4", out)
    assert (resumed.counts.skipped, resumed.invocations[-1].ran) == (4, 0)


def test_lines_of_an_earlier_invocation_are_not_applied(tmp_path):
    """Killed between writing the new run.json and emptying the log: the old lines stay."""
    summary = RunSummary(task="todo", team="example", instances=[0, 1], started_at=1.0,
                         sessions=[SessionEntry(instance=n, directory=f"{n:03d}",
                                                session_id=f"s{n}") for n in (0, 1)],
                         invocations=[Invocation(started_at=1.0), Invocation(started_at=2.0)])
    summary.recount()
    summary.write(tmp_path)
    old = SessionEntry(instance=0, directory="000", session_id="s0", status="failed",
                       error="from the first invocation")
    line = json.dumps({"invocation": 0, "session": old.model_dump(mode="json")})
    (tmp_path / SESSIONS_FILE).write_text(line + "\n")
    read = read_run(tmp_path)
    assert read is not None
    assert [s.status for s in read.sessions] == ["pending", "pending"]
    assert read.invocations[-1].ran == 0


def test_a_run_folder_of_the_old_format_resumes(tmp_path):
    """Format 1: run.json rewritten after each session, with every entry, no sessions.jsonl."""
    out = tmp_path / "run"
    first = _run("todo", "0:2", out)
    written = json.loads((out / "run.json").read_text())
    written["format"] = 1
    (out / "run.json").write_text(json.dumps(written, indent=2))
    assert not (out / SESSIONS_FILE).exists()
    old = read_run(out)
    assert old is not None and old.format == 1
    assert old.model_dump(exclude={"format"}) == first.model_dump(exclude={"format"})

    again = _run("todo", "0:3", out)
    assert (again.counts.skipped, again.counts.finished, again.invocations[-1].ran) == (2, 3, 1)
    assert again.format == batch_manifest.RUN_FORMAT and len(again.invocations) == 2
