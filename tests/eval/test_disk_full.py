"""A disk that fills up during ``cogym-lab eval run``: the batch stops with one line that says so,
``run.json`` says ``interrupted`` (not ``running``), and the same command with space back resumes
and completes.

The first test fills a real disk: a tmpfs mounted with a few hundred KiB (the test machine runs
the suite with the right to mount; the mount is undone afterwards). The second puts "no space
left" where the run's manifest is written, to check what the Python API raises and keeps.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogym_lab.eval import run
from cogym_lab.eval.batch import manifest
from cogym_lab.eval.batch.disk import RESERVE_FILE, DiskFull
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.eval_scripts import RouteByInstance, travel_routes

pytestmark = [pytest.mark.usefixtures("use_shared_data", "no_ambient_lm"),
              pytest.mark.timeout(300)]
INSTANCES = 4


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A real file system of 300 KiB: room for about one travel session and the run's files."""
    folder = tmp_path / "disk"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(folder)],
                   check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


def _cli(out: Path, server: ScriptedOpenAIServer) -> subprocess.CompletedProcess[str]:
    """``cogym-lab eval run`` in a process of its own, without this environment's LM settings."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL)}
    args = ["eval", "run", "--task", "travel_planning", "--team", "collaborative",
            "--instances", f"0:{INSTANCES}", "--concurrency", "2", "--out", str(out),
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--base-url", server.base_url, "--idle-seconds", "2", "--no-progress"]
    return subprocess.run([sys.executable, "-m", "cogym_lab", *args], env=environment,
                          capture_output=True, text=True, timeout=240, check=False)


def test_a_full_disk_stops_the_run_in_one_line_and_the_rerun_completes(small_disk):
    out = small_disk / "run"
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes(range(INSTANCES)))) \
            as server:
        stopped = _cli(out, server)
        output = stopped.stdout + stopped.stderr
        assert stopped.returncode != 0, output
        assert "Traceback" not in output, output
        errors = [line for line in output.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1, output
        assert errors[0].startswith("Error: the disk is full: "), errors
        assert "run the same command again" in errors[0] and "run.json says interrupted" \
            in errors[0]
        written = json.loads((out / "run.json").read_text())
        assert written["status"] == "interrupted" and written["invocations"][-1]["interrupted"]
        statuses = [s["status"] for s in written["sessions"]]
        assert "pending" in statuses and "failed" not in statuses, statuses  # none blamed
        finished_before = statuses.count("finished")
        assert not (out / RESERVE_FILE).exists() and not (out / "run.json.tmp").exists()

        subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
        resumed = _cli(out, server)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{finished_before} already done" in " ".join(resumed.stdout.split())
    written = json.loads((out / "run.json").read_text())
    assert written["status"] == "finished"
    assert written["counts"]["finished"] == written["counts"]["delivered"] == INSTANCES
    assert sorted(p.name for p in out.iterdir()) == [*(f"{i:03d}" for i in range(INSTANCES)),
                                                       "run.json"]


def test_no_space_for_the_manifest_raises_disk_full_and_keeps_run_json_honest(tmp_path,
                                                                              monkeypatch):
    """The first session's line in sessions.jsonl cannot be written: the batch stops there."""

    def no_space(self, entry):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

    monkeypatch.setattr(manifest.SessionLog, "append", no_space)
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes(range(2)))) as server, \
            pytest.raises(DiskFull) as caught:
        run("travel_planning", "collaborative", "0:2", out=out, concurrency=1,
            models={"agent": "agent-lm", "user": "user-lm"}, base_urls=server.base_url,
            idle_seconds=2, progress=False)
    message = str(caught.value)
    assert message.startswith("the disk is full: ") and "\n" not in message
    assert str(out / "sessions.jsonl") in message
    assert caught.value.errno == errno.ENOSPC
    written = json.loads((out / "run.json").read_text())
    assert written["status"] == "interrupted"
    # The session that ended is listed as such (run.json was written whole at the end, from
    # the reserve); the one never started stays pending for the rerun.
    assert [s["status"] for s in written["sessions"]] == ["finished", "pending"]
    assert not (out / RESERVE_FILE).exists()
