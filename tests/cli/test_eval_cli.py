"""``cogym-lab eval run|report|show`` on real Travel Planning instances with scripted LMs, and a
batch that resumes after its process is killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.messages import EventType
from cogym_lab.eval.batch.sessions import is_finished
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.eval_scripts import RouteByInstance, travel_routes

pytestmark = [pytest.mark.usefixtures("use_shared_data", "no_ambient_lm"),
              pytest.mark.timeout(400)]
LM_OPTIONS = ["--model", "agent=agent-lm", "--model", "user=user-lm"]


def batch_args(out: Path, server: ScriptedOpenAIServer, instances: str,
               concurrency: int = 8) -> list[str]:
    return ["eval", "run", "--task", "travel_planning", "--team", "collaborative",
            "--instances", instances, "--concurrency", str(concurrency), "--out", str(out),
            *LM_OPTIONS, "--base-url", server.base_url, "--idle-seconds", "2", "--no-progress"]


def test_run_then_show_then_report(tmp_path):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes([0, 2]))) as server:
        ran = CliRunner().invoke(main, [*batch_args(out, server, "0,2"),
                                        "--price", "agent-lm=2.5,10"])
    assert ran.exit_code == 0, ran.output
    assert "2/2 sessions finished (2 run now, 0 already done), 0 failed, 2 delivered" in (
        " ".join(ran.output.split()))
    assert "Tokens: " in ran.output and "$" in ran.output
    assert sorted(p.name for p in out.iterdir()) == ["000", "002", "run.json"]
    written = json.loads((out / "run.json").read_text())
    assert written["prices"] == {"agent-lm": {"input": 2.5, "output": 10.0}}
    assert written["cost_usd"] > 0 and written["lms"]["user"]["model"] == "user-lm"

    shown = CliRunner().invoke(main, ["eval", "show", str(out / "002")])
    assert shown.exit_code == 0, shown.output
    assert "instance=2" in shown.output and "Search flights on one date" in shown.output
    assert "declared the task done." in shown.output and "FINISH()" not in shown.output

    report_dir = tmp_path / "report"
    reported = CliRunner().invoke(main, ["eval", "report", str(out), "--out", str(report_dir)])
    assert reported.exit_code == 0, reported.output
    assert "travel_planning" in reported.output and "collaborative" in reported.output
    assert (report_dir / "summary.csv").is_file()
    assert any(report_dir.glob("*.png"))


def test_bad_arguments_get_clear_errors(tmp_path):
    runner = CliRunner()
    cases = [
        (["--task", "travel_planning", "--instances", "100:103"], "there is no instance 102"),
        (["--task", "travel_planning", "--instances", "one"], "cannot read 'one'"),
        (["--task", "no_such_task"], "Unknown task 'no_such_task'"),
        (["--task", "travel_planning", "--price", "agent-lm=3"], "MODEL=INPUT,OUTPUT"),
        (["--task", "travel_planning", "--team", "no-such-team"], "No team 'no-such-team'"),
    ]
    for args, expected in cases:
        result = runner.invoke(main, ["eval", "run", *args, "--out", str(tmp_path / "x"),
                                      *LM_OPTIONS, "--base-url", "http://127.0.0.1:9"])
        assert result.exit_code != 0, args
        assert expected in " ".join(result.output.split()), (args, result.output)
    unconfigured = runner.invoke(main, ["eval", "run", "--task", "travel_planning",
                                        "--out", str(tmp_path / "y")])
    assert unconfigured.exit_code != 0 and "No LM is configured" in unconfigured.output
    assert not (tmp_path / "y").exists()  # nothing is written before the settings are checked


def _finished(out: Path) -> set[str]:
    return {d.name for d in out.iterdir() if d.is_dir() and is_finished(d)} if out.is_dir() \
        else set()


def _slow_travel_server(total: int) -> ScriptedOpenAIServer:
    """Slow replies for ``total`` travel instances: a signal lands while sessions are under way."""
    return ScriptedOpenAIServer(responder=RouteByInstance(travel_routes(range(total)), delay=0.25))


#: ``python -m cogym_lab`` with Ctrl-C restored, as from a terminal: a shell without job control
#: (CI's) starts its background jobs with SIGINT ignored, and the child would inherit that. (Set
#: in the child itself: a ``preexec_fn`` is unsafe beside the scripted server's threads.)
_INTERRUPTIBLE_CLI = ("import runpy, signal; signal.signal(signal.SIGINT, "
                      "signal.default_int_handler); runpy.run_module('cogym_lab', "
                      "run_name='__main__', alter_sys=True)")


def _start_batch(out: Path, server: ScriptedOpenAIServer, total: int) -> subprocess.Popen:
    """``cogym-lab eval run`` on ``total`` instances, two at a time, in a process of its own,
    with no LM settings from this environment."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL)}
    return subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTIBLE_CLI, *batch_args(out, server, f"0:{total}", 2)],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_a_killed_batch_resumes_skipping_finished_sessions(tmp_path, use_shared_data):
    out, total = tmp_path / "run", 6
    with _slow_travel_server(total) as server:
        process = _start_batch(out, server, total)
        try:
            deadline = time.monotonic() + 180

            def under_way() -> set[str]:  # started (a folder) but not finished
                started = {d.name for d in out.iterdir() if d.is_dir()} if out.is_dir() else set()
                return started - _finished(out)

            # Kill once two sessions finished and another has started: a kill between the two
            # (one session's end, the next one's start) would test nothing partial.
            while (len(_finished(out)) < 2 or not under_way()) and process.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            finished_before = _finished(out)
            assert process.poll() is None, process.communicate()[0].decode()
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(timeout=30)
        killed_at = time.time()
        assert 2 <= len(finished_before) < total
        before = {name: read_session(out / name) for name in finished_before}
        partial = {d.name for d in out.iterdir() if d.is_dir()} - finished_before
        assert partial  # sessions were under way when the process died
        assert json.loads((out / "run.json").read_text())["status"] == "running"

        resumed = CliRunner().invoke(main, batch_args(out, server, f"0:{total}", 2))
    assert resumed.exit_code == 0, resumed.output
    assert f"{len(finished_before)} already done" in " ".join(resumed.output.split())
    written = json.loads((out / "run.json").read_text())
    assert written["status"] == "finished"
    assert written["counts"]["finished"] == written["counts"]["delivered"] == total
    assert written["counts"]["skipped"] == len(finished_before)
    assert len(written["invocations"]) == 2
    assert written["invocations"][-1]["ran"] == total - len(finished_before)
    for name in finished_before:  # skipped: left exactly as they were
        assert read_session(out / name) == before[name]
        assert [s["resumed"] for s in written["sessions"] if s["directory"] == name] == [True]
    for name in partial:  # redone from scratch
        assert read_session(out / name)["started_at"] > killed_at
    for directory in sorted(d for d in out.iterdir() if d.is_dir()):
        starts = [e for e in read_events(directory) if e.type is EventType.START]
        assert len(starts) == 1 and read_session(directory)["status"] == "finished"


def test_ctrl_c_stops_a_batch_cleanly_and_it_resumes(tmp_path, use_shared_data):
    # Ctrl-C reaches the caller's loop; the sessions run on a loop of their own, on a thread,
    # which must be cancelled, unwound and joined, or the process would not end.
    out, total = tmp_path / "run", 6
    with _slow_travel_server(total) as server:
        process = _start_batch(out, server, total)
        try:
            deadline = time.monotonic() + 180
            while len(_finished(out)) < 1 and process.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            assert process.poll() is None, process.communicate()[0].decode()
            process.send_signal(signal.SIGINT)
            output = process.communicate(timeout=60)[0].decode()  # it ends, and soon
        finally:
            process.kill()
            process.wait(timeout=30)
        assert process.returncode != 0, output
        written = json.loads((out / "run.json").read_text())
        assert written["status"] == "interrupted" and written["invocations"][0]["interrupted"]
        done = written["counts"]["finished"]
        assert 1 <= done < total
        assert not (out / "sessions.jsonl").exists()  # folded into run.json on the way out

        resumed = CliRunner().invoke(main, batch_args(out, server, f"0:{total}", 2))
    assert resumed.exit_code == 0, resumed.output
    written = json.loads((out / "run.json").read_text())
    assert written["status"] == "finished" and written["counts"]["finished"] == total
    assert written["counts"]["skipped"] == done
