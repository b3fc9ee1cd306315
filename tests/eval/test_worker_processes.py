"""The in-process engine on worker processes: real sessions of the todo task (the collaborative
team, its LMs the scripted loopback server reached through the real LM client) spread over two
spawned worker processes.

They give the single loop's results for the same seeds, with the same run.json; a Ctrl-C
(SIGINT to the whole process group of a `cogym-lab eval run`, as a terminal sends it) stops the
workers cleanly and keeps the sessions that ended, and the rerun completes the batch; a driver
killed outright takes its workers with it, and its run resumes. Without sessions: how many
workers a batch gets, each one's share of the provider limits, and Ray's start tried again on a
busy machine."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from cogym_lab.envs import register_env
from cogym_lab.eval import run
from cogym_lab.eval.batch.engines import EngineError
from cogym_lab.eval.batch.engines.processes import (
    SESSIONS_PER_LOOP,
    next_message,
    share_limits,
    worker_count,
)
from cogym_lab.eval.batch.engines.ray_start import (
    RayStartFailed,
    is_busy,
    with_start_retries,
)
from cogym_lab.eval.batch.manifest import RUN_FILE, read_run
from cogym_lab.eval.batch.sessions import is_finished
from cogym_lab.lm.limit_rules import Limit, ProviderLimits
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.batch_runs import (
    MODELS,
    batch_run,
    check_whole_run,
    ended_lines,
    session_outcomes,
    wait_for,
)
from tests.support.lm_scripts import TodoRolePlay
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]


def _workers_of(pid: int) -> list[psutil.Process]:
    """The driver's worker processes (spawned children running Python)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def _gone(processes: list[psutil.Process]) -> bool:
    return all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in processes)


# -- real sessions --------------------------------------------------------------------------------

def test_two_worker_processes_give_the_single_loops_results(tmp_path):
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        here = batch_run(tmp_path / "here", server, trials=2, workers=0)
        spread = batch_run(tmp_path / "spread", server, trials=2, workers=2)
    assert here.counts.finished == 6 and here.counts.delivered == 6
    check_whole_run(Path(spread.out), 6)
    assert session_outcomes(spread) == session_outcomes(here)
    assert [(s.key, s.status, s.scores) for s in spread.sessions] == [
        (s.key, s.status, s.scores) for s in here.sessions]
    assert spread.lms == here.lms and spread.tokens.total_tokens > 0
    assert all(s.tokens.total_tokens > 0 for s in spread.sessions)
    # run.json says what ran them, and how late each worker's loop woke
    assert spread.invocations[-1].engine == {"engine": "inprocess", "concurrency": 8,
                                             "workers": 2}
    assert here.invocations[-1].engine == {"engine": "inprocess", "concurrency": 8}
    lags = spread.invocations[-1].loop_lags
    assert lags is not None and len(lags) == 2 and all(lag.samples > 0 for lag in lags)
    assert spread.invocations[-1].loop_lag is not None
    assert spread.invocations[-1].loop_lag.max_ms == max(lag.max_ms for lag in lags)
    assert here.invocations[-1].loop_lags is None
    stored = json.loads((Path(spread.out) / RUN_FILE).read_text())
    assert set(stored) == set(json.loads((Path(here.out) / RUN_FILE).read_text()))


DRIVER = ["-m", "cogym_lab", "eval", "run", "--task", "todo", "--team", "collaborative",
          "--instances", "0:3", "--trials", "4", "--model", "agent=agent-lm", "--model",
          "user=user-lm", "--idle-seconds", "1", "--timeout", "90", "--no-progress",
          "--concurrency", "4", "--workers", "2"]


def _start_driver(out: Path, server: ScriptedOpenAIServer) -> subprocess.Popen:
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("OPENAI_", "COGYM_MODEL"))}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [environment.get("PYTHONPATH")])])
    return subprocess.Popen([sys.executable, *DRIVER, "--out", str(out), "--base-url",
                             server.base_url], cwd=REPO_ROOT, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _interrupt_after(driver: subprocess.Popen, out: Path, sig: signal.Signals,
                     sessions: int) -> list[psutil.Process]:
    """Once ``sessions`` sessions ended, send ``sig`` to the driver's process group (as a
    terminal's Ctrl-C reaches every process of it); the driver's workers, as they were."""
    try:
        wait_for(lambda: ended_lines(out) >= sessions or driver.poll() is not None, 240,
                  f"{sessions} sessions to end")
        assert driver.poll() is None, driver.stdout.read().decode()[-3000:]
        workers = _workers_of(driver.pid)
        assert len(workers) == 2, [w.cmdline() for w in workers]
        os.killpg(driver.pid, sig)
        driver.wait(timeout=120)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
    return workers


def test_ctrl_c_stops_the_workers_keeps_what_ended_and_the_rerun_completes(tmp_path):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.3) as server:
        driver = _start_driver(out, server)
        try:
            workers = _interrupt_after(driver, out, signal.SIGINT, 3)
            output = driver.stdout.read().decode()
        finally:
            driver.stdout.close()
        assert driver.returncode != 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]  # the workers stopped quietly too
        wait_for(lambda: _gone(workers), 30, "the workers to end")
        stopped = read_run(out)
        assert stopped is not None and stopped.status == "interrupted", output[-3000:]
        assert stopped.invocations[-1].interrupted and stopped.invocations[-1].ended_at
        kept = {e.directory: e.session_id for e in stopped.sessions if e.status == "finished"}
        assert 3 <= len(kept) < 12
        for name, session_id in kept.items():  # each recorded one is whole on disk
            assert is_finished(out / name) and read_session(out / name)["session_id"] == session_id
        assert stopped.invocations[-1].loop_lags is not None

        again = batch_run(out, server, trials=4, concurrency=4, workers=2)
    done = {p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert again.counts.skipped >= len(kept)
    assert again.invocations[-1].ran == 12 - again.counts.skipped
    assert len(again.invocations) == 2 and len(done) == 12
    check_whole_run(out, 12)
    # the sessions that had ended were kept as they were, not run again
    assert {name: read_session(out / name)["session_id"] for name in kept} == kept


async def test_a_ctrl_c_that_comes_with_a_workers_message_stops_the_batch() -> None:
    """The caller reads its workers' messages with a timeout; a cancellation (Ctrl-C) that
    comes in the same turn as a message must not be dropped for it, as ``asyncio.wait_for``
    drops it on Python 3.11: a busy batch then ran on to its end past Ctrl-C."""
    inbox: asyncio.Queue[tuple[object, ...]] = asyncio.Queue()
    reader = asyncio.create_task(next_message(inbox, 5.0))
    await asyncio.sleep(0)  # it waits for the inbox
    inbox.put_nowait(("usage", 0, {}))
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    # the message stays for the next read (the stopping batch still records what arrives);
    # with none left, None once the time is up
    assert await next_message(inbox, 5.0) == ("usage", 0, {})
    assert await next_message(inbox, 0.05) is None


def test_a_killed_driver_takes_its_workers_with_it_and_its_run_resumes(tmp_path):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.3) as server:
        driver = _start_driver(out, server)
        try:
            # SIGKILL to the driver alone: its workers see their pipe close and stop
            wait_for(lambda: ended_lines(out) >= 2 or driver.poll() is not None, 240,
                      "two sessions to end")
            assert driver.poll() is None, driver.stdout.read().decode()[-3000:]
            workers = _workers_of(driver.pid)
            assert len(workers) == 2
            os.kill(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
            wait_for(lambda: _gone(workers), 60, "the orphaned workers to stop")
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(timeout=30)
            with_group = [p for p in psutil.process_iter() if _in_group(p, driver.pid)]
            for process in with_group:  # never leave one behind, whatever failed above
                process.kill()
            driver.stdout.close()
        killed = read_run(out)
        assert killed is not None and killed.status == "running"  # it never wrote its end
        again = batch_run(out, server, trials=4, concurrency=4, workers=2)
    assert again.counts.skipped >= 2
    check_whole_run(out, 12)


def _in_group(process: psutil.Process, group: int) -> bool:
    try:
        return os.getpgid(process.pid) == group
    except (ProcessLookupError, psutil.Error):
        return False


def test_a_task_registered_at_run_time_reaches_the_workers(tmp_path):
    from tests.support.worker_tasks import TwoTodos

    register_env("todo_pair", TwoTodos)
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        summary = run("todo_pair", "collaborative", None, out=tmp_path / "run", models=MODELS,
                      base_urls=server.base_url, idle_seconds=1, timeout=90, progress=False,
                      workers=2, allow_sample=True)
    assert summary.counts.finished == 2 and summary.invocations[-1].engine["workers"] == 2


def test_a_task_that_cannot_reach_a_worker_is_refused_when_workers_are_asked_for(tmp_path):
    from cogym_lab.envs.todo.env import TodoEnv

    class Local(TodoEnv):  # defined in a function: it cannot be pickled
        pass

    register_env("todo_local", Local)
    with pytest.raises(ValueError, match="cannot be sent to a worker process"):
        run("todo_local", "collaborative", "0", out=tmp_path / "run", workers=2, models=MODELS,
            base_urls="http://127.0.0.1:9/v1", progress=False)  # refused before any call


# -- without sessions -----------------------------------------------------------------------------

def test_one_loop_up_to_its_load_then_one_process_per_loop_up_to_the_cores_less_one():
    assert worker_count(8, cores=16) == 0
    assert worker_count(SESSIONS_PER_LOOP, cores=16) == 0
    assert worker_count(SESSIONS_PER_LOOP + 1, cores=16) == 2
    assert worker_count(1000, cores=16) == 4
    assert worker_count(1000, cores=3) == 3  # up to the cores: the caller only collects
    assert worker_count(1000, cores=2) == 2
    assert worker_count(1000, cores=1) == 1  # at least one: the caller's loop is freed


def test_each_worker_gets_its_share_of_the_provider_limits(tmp_path):
    limits = ProviderLimits(default=Limit(max_in_flight=16),
                            rules={"gpt-4o": Limit(requests_per_minute=500)})
    shared = share_limits(limits, 3)
    assert shared.default == Limit(max_in_flight=5)
    assert shared.rules == {"gpt-4o": Limit(requests_per_minute=166)}
    assert share_limits(limits, 1) == limits
    with pytest.raises(ValueError, match="a provider limit of 2 cannot be shared by 4"):
        run("todo", "example", "0", out=tmp_path / "run", workers=4, progress=False,
            limits={"default": {"max_in_flight": 2}})
    with pytest.raises(ValueError, match="workers: a number from 0"):
        run("todo", "example", "0", out=tmp_path / "run", workers=2, engine="ray")
    assert not (tmp_path / "run" / RUN_FILE).exists()


def test_ray_start_is_tried_again_on_a_busy_machine_then_says_what_to_do():
    waits: list[float] = []
    undone: list[int] = []
    tries = iter([RuntimeError("GCS overloaded: too many pending requests"),
                  TimeoutError("Timed out while waiting for the node to start"), "joined"])

    def step() -> str:
        outcome = next(tries)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    assert with_start_retries("start", step, undo=lambda: undone.append(1), budget=60,
                              sleep=waits.append) == "joined"
    assert waits == [2.0, 4.0] and len(undone) == 2

    def always_busy() -> None:
        raise ConnectionError("rpc deadline exceeded: GCS overloaded")

    waits.clear()
    with pytest.raises(RayStartFailed) as failed:
        with_start_retries("start or join the cluster", always_busy, budget=20,
                           sleep=waits.append)
    assert waits == [2.0, 4.0, 8.0]  # 14 s waited; the next 16 s would pass the 20 s budget
    message = str(failed.value)
    assert "\n" not in message and isinstance(failed.value, EngineError)
    assert "--engine inprocess" in message and "COGYM_RAY_START_SECONDS=120" in message
    assert "4 tries" in message

    def wrong_address() -> None:
        raise ValueError("Invalid address 'nowhere'")

    waits.clear()
    with pytest.raises(ValueError, match="Invalid address"):  # not busy: raised at once
        with_start_retries("start", wrong_address, budget=60, sleep=waits.append)
    assert waits == []
    assert is_busy(TimeoutError()) and not is_busy(PermissionError("no token"))
    # what `ray start` said on this machine while other work kept its two cores busy
    assert is_busy(Exception("The current node timed out during startup. This could happen "
                             "because some of the raylet failed to startup or the GCS has "
                             "become overloaded."))
