"""Shared parts of the batch engine tests (worker processes and Ray): a scripted batch of the
collaborative team on the todo task, what each of its sessions came to, and the checks that a
run ended whole."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from cogym_lab.eval import RunSummary, run
from cogym_lab.eval.batch.manifest import SESSIONS_FILE, read_run
from cogym_lab.eval.batch.sessions import is_finished
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.testing import ScriptedOpenAIServer

MODELS = {"agent": "agent-lm", "user": "user-lm"}
ROLES = ("agent", "user")


def batch_run(out: Path, server: ScriptedOpenAIServer, **options: Any) -> RunSummary:
    """The collaborative team on the three todo instances, each ``trials`` times."""
    return run("todo", "collaborative", options.pop("instances", "0:3"), out=out,
               models=MODELS, base_urls=server.base_url, idle_seconds=1, timeout=90,
               progress=False, **options)


def session_files(directory: Path) -> list[str]:
    """The files below ``directory``, as sorted relative paths."""
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")
                  if p.is_file())


def session_outcomes(summary: RunSummary) -> dict[tuple[int, int], dict[str, Any]]:
    """What a session's result is made of, by (instance, trial): its entry's outcome, its
    seeds, the seed of every LM call it logged, and the files of its folder."""
    found = {}
    for entry in summary.sessions:
        directory = Path(summary.out) / entry.directory
        meta = read_session(directory)
        assert meta["batch"].pop("run") == Path(summary.out).name
        found[entry.key] = {
            "status": entry.status, "end_reason": entry.end_reason,
            "delivered": entry.delivered, "scores": entry.scores, "error": entry.error,
            "batch": meta["batch"], "env_seed": meta["config"]["seed"],
            "logged_seeds": {role: {json.loads(line)["seed"] for line in
                                    (directory / role / "lm_calls.jsonl").read_text().splitlines()}
                             for role in ROLES},
            "files": session_files(directory)}
    return found


def check_whole_run(out: Path, total: int) -> RunSummary:
    """The run in ``out`` ended every one of its ``total`` sessions, each written once: one
    folder, one attempt's event log, no LM call of a lost attempt in it."""
    summary = read_run(out)
    assert summary is not None and summary.status == "finished"
    assert summary.counts.finished == summary.counts.total == total
    folders = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert folders == sorted(entry.directory for entry in summary.sessions)
    assert not (out / SESSIONS_FILE).exists()
    for entry in summary.sessions:
        directory = out / entry.directory
        meta = read_session(directory)
        assert is_finished(directory) and meta["session_id"] == entry.session_id
        seqs = [event.seq for event in read_events(directory)]
        assert seqs and seqs == sorted(set(seqs)), "one attempt's log, each event once"
        calls = [json.loads(line) for role in ROLES
                 for line in (directory / role / "lm_calls.jsonl").read_text().splitlines()]
        first_call = min(datetime.fromisoformat(call["time"]).timestamp() for call in calls)
        assert first_call >= meta["started_at"] - 1, "no call of a lost attempt in the log"
    return summary


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll ``condition`` every 0.1 s until it holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"waited {seconds:.0f} s for {what}")


def ended_lines(out: Path) -> int:
    """How many sessions the run in ``out`` has noted as ended in its sessions file so far."""
    try:
        return len((out / SESSIONS_FILE).read_bytes().splitlines())
    except OSError:
        return 0
