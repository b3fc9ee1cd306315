"""Batch runs on a real Ray cluster started on this machine: a head and a second node, one CPU
each, on loopback (tests/support/ray_cluster.py). The LM is the scripted loopback server, reached
through our real LM client (over aiohttp) from the workers.

The Ray engine gives the in-process engine's results for the same seeds, whether the workers send
the session folders back or write them to a folder they share with the driver (and whether the
driver joins the cluster or talks to it through Ray Client); a driver killed mid-batch leaves a
run that resumes; a worker node killed mid-batch costs the sessions that were running there,
which run again elsewhere, and no session is lost or written twice; a provider limit holds
across both nodes; the cluster shuts down cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from cogym_lab.eval import RunSummary, run
from cogym_lab.eval.batch.engines.shipping import INCOMING_DIR
from cogym_lab.eval.batch.manifest import RUN_FILE, read_run
from cogym_lab.eval.batch.seeds import ENV, trial_seed
from cogym_lab.eval.batch.sessions import is_finished, session_dir_name
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.batch_runs import (
    ROLES,
    batch_run,
    check_whole_run,
    ended_lines,
    session_outcomes,
    wait_for,
)
from tests.support.lm_scripts import TodoRolePlay
from tests.support.paths import REPO_ROOT
from tests.support.ray_cluster import LocalRayCluster

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]


@pytest.fixture
def cluster(ray_cluster: LocalRayCluster, monkeypatch) -> LocalRayCluster:
    """The cluster, with its second node up, and this process ready to drive runs on it: the
    cluster's authentication, and no other cluster's address."""
    for name, value in ray_cluster.auth.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray_cluster.ensure_second_node()
    ray_cluster.wait_registered()
    return ray_cluster


REPO = REPO_ROOT


def _check_whole(out: Path, total: int) -> RunSummary:
    """The run in ``out`` ended every one of its ``total`` sessions, each written once (one
    entry a session), with no incoming folder left."""
    summary = check_whole_run(out, total)
    assert len({entry.key for entry in summary.sessions}) == total
    assert not (out / INCOMING_DIR).exists()
    return summary


def _request_seeds(server: ScriptedOpenAIServer) -> list[tuple[float, int]]:
    return [(request.received_at, request.body.get("seed")) for request in server.chat_requests]


def _agent_seed_keys(keys) -> dict[int, tuple[int, int]]:
    return {trial_seed(instance, trial, "agent"): (instance, trial) for instance, trial in keys}


def test_the_ray_engine_gives_the_in_process_results_for_the_same_seeds(
        cluster: LocalRayCluster, tmp_path):
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        here = batch_run(tmp_path / "here", server, trials=2)
        shipped = batch_run(tmp_path / "shipped", server, trials=2, engine="ray",
                         address=cluster.address, sessions_per_actor=3)
        # a folder the workers see themselves (one machine: the run folder itself)
        shared = tmp_path / "shared"
        stored = batch_run(shared, server, trials=2, engine="ray", address=cluster.address,
                        sessions_per_actor=3, storage=f"file://{shared}")
    assert here.counts.finished == 6 and here.counts.delivered == 6
    expected = session_outcomes(here)
    assert {key: value["batch"]["seeds"] for key, value in expected.items()} == {
        (i, t): {role: trial_seed(i, t, role) for role in (*ROLES, ENV)}
        for i in range(3) for t in range(2)}
    for summary in (shipped, stored):
        _check_whole(Path(summary.out), 6)
        assert session_outcomes(summary) == expected
        # run.json: the same sessions and totals, and what ran them
        assert [(s.key, s.status, s.scores) for s in summary.sessions] == [
            (s.key, s.status, s.scores) for s in here.sessions]
        assert summary.lms == here.lms and summary.tokens.total_tokens > 0
        engine = summary.invocations[-1].engine
        assert engine == {"engine": "ray", "address": cluster.address, "nodes": 2,
                          "actors": 2, "sessions_per_actor": 3, "storage": summary is stored}
        assert summary.concurrency == 6
    assert here.invocations[-1].engine == {"engine": "inprocess", "concurrency": 8}


DRIVER = ["-m", "cogym_lab", "eval", "run", "--task", "todo", "--team", "collaborative",
          "--instances", "0:3", "--trials", "4", "--model", "agent=agent-lm", "--model",
          "user=user-lm", "--idle-seconds", "1", "--timeout", "90", "--no-progress",
          "--engine", "ray", "--sessions-per-actor", "2"]


def test_a_run_whose_driver_was_killed_resumes(cluster: LocalRayCluster, tmp_path):
    out = tmp_path / "run"
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("OPENAI_", "COGYM_MODEL", "RAY_ADDRESS"))}
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.3) as server:
        driver = subprocess.Popen(
            [sys.executable, *DRIVER, "--out", str(out), "--base-url", server.base_url,
             "--address", cluster.address], cwd=REPO, env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(lambda: ended_lines(out) >= 3 or driver.poll() is not None, 240,
                      "three sessions to end")
            assert driver.poll() is None, driver.stdout.read().decode()[-3000:]
            os.killpg(driver.pid, signal.SIGKILL)  # the driver's group: it and nothing else
            driver.wait(timeout=30)
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(timeout=30)
            driver.stdout.close()
        killed = read_run(out)
        assert killed is not None and killed.status == "running"  # it never wrote its end
        done = {p.name: read_session(p)["session_id"] for p in out.iterdir()
                if p.is_dir() and is_finished(p)}
        assert 3 <= len(done) < 12

        again = batch_run(out, server, trials=4, engine="ray", address=cluster.address,
                       sessions_per_actor=2)
    assert (again.counts.skipped, again.invocations[-1].ran) == (len(done), 12 - len(done))
    assert len(again.invocations) == 2 and again.invocations[0].ended_at is None
    _check_whole(out, 12)
    # the sessions that had ended were kept as they were, not run again
    assert {name: read_session(out / name)["session_id"] for name in done} == done
    assert (out / RUN_FILE).is_file()


def test_a_worker_node_killed_mid_batch_loses_no_session_and_writes_none_twice(
        cluster: LocalRayCluster, tmp_path):
    node = cluster.workers[0]
    out = tmp_path / "run"
    keys = [(i, t) for i in range(3) for t in range(4)]
    by_seed = _agent_seed_keys(keys)
    outcome: dict = {}
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.3) as server:
        def batch() -> None:
            try:
                outcome["summary"] = batch_run(out, server, trials=4, engine="ray",
                                            address=cluster.address, sessions_per_actor=2)
            except BaseException as error:  # noqa: BLE001 - reported by the test below
                outcome["error"] = error

        driver = threading.Thread(target=batch)
        driver.start()
        try:
            # Each actor is fed two sessions first: once four have asked the LM something,
            # the second node has sessions under way.
            wait_for(lambda: len({seed for _, seed in _request_seeds(server)
                                   if seed in by_seed}) >= 4 or not driver.is_alive(), 240,
                      "four sessions under way")
            assert node.actor_processes("SessionHost"), (
                f"no actor on the second node: {node.process_titles()}")
            assert ended_lines(out) < len(keys)
            killed_at = time.time()
            gone = node.kill()
        finally:
            driver.join(timeout=280)
        assert "error" not in outcome, outcome.get("error")
        requests = _request_seeds(server)
        unlimited = server.max_in_flight
    assert unlimited > 2  # no provider limit: the sessions' calls overlap freely
    assert all(not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
               for pid in gone)
    summary = _check_whole(out, len(keys))
    assert summary.counts.failed == 0 and summary.invocations[-1].ran == len(keys)
    # The sessions under way on the lost node ran again from scratch: each asked the LM before
    # the kill, and the attempt written started after it.
    first_asked = {}
    for at, seed in requests:
        if seed in by_seed:
            first_asked.setdefault(by_seed[seed], at)
    redone = [key for key in keys if first_asked[key] < killed_at
              < read_session(out / session_dir_name(*key))["started_at"]]
    assert redone, "no session was running on the node when it was killed"
    for entry in summary.sessions:  # the written attempt's calls are all its own
        meta = read_session(out / entry.directory)
        assert meta["batch"]["seeds"]["agent"] == trial_seed(*entry.key, "agent")


def test_a_provider_limit_holds_across_both_nodes(cluster: LocalRayCluster, tmp_path):
    """Six sessions on two nodes, their agents and users calling the LM at once, and at most two
    requests in flight at the scripted server (a rule for the endpoint: every model there shares
    it): the workers share one gate."""
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.2) as server:
        summary = batch_run(tmp_path / "run", server, trials=2, engine="ray",
                         address=cluster.address, sessions_per_actor=3,
                         limits={"rules": {server.base_url: {"max_in_flight": 2}}})
        most = server.max_in_flight
    _check_whole(tmp_path / "run", 6)
    assert summary.invocations[-1].engine["nodes"] == 2
    assert most == 2  # reached, never passed (unlimited, the same batch has more: see above)


def test_a_driver_outside_the_cluster_runs_through_ray_client(cluster: LocalRayCluster, tmp_path):
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        here = batch_run(tmp_path / "here", server, instances="1")
        there = batch_run(tmp_path / "there", server, instances="1", engine="ray",
                       address=cluster.client_address)
    _check_whole(tmp_path / "there", 1)
    assert session_outcomes(there) == session_outcomes(here)
    assert there.invocations[-1].engine["address"].startswith("ray://")


def test_the_cluster_shuts_down_cleanly(ray_cluster: LocalRayCluster):
    """Last: SIGTERM to each node's ``ray start``, the head last, ends every process they
    started (and only those)."""
    pids = [pid for node in ray_cluster.nodes for pid in node.pids()]
    assert len(pids) > 4  # ray start, the GCS, raylets, agents ... of two nodes
    ray_cluster.stop()
    assert all(node.process.returncode is not None for node in ray_cluster.nodes)
    assert not [pid for pid in pids if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


# -- without a cluster ----------------------------------------------------------------------------

def test_the_in_process_engine_needs_no_ray(tmp_path):
    code = ("import sys\n"
            "from cogym_lab.eval import run\n"
            f"summary = run('todo', 'example', '0:2', out={str(tmp_path / 'run')!r}, "
            "idle_seconds=0.3, progress=False)\n"
            "assert summary.counts.finished == 2, summary.counts\n"
            "assert summary.invocations[-1].engine == {'engine': 'inprocess', 'concurrency': 8}\n"
            "print(sorted(name for name in sys.modules if name == 'ray' or "
            "name.startswith('ray.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def test_ray_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match="address, storage: options of engine='ray'"):
        run("todo", "example", "0", out=tmp_path, address="auto", storage="/shared")
    with pytest.raises(ValueError, match="unknown engine 'spark'"):
        run("todo", "example", "0", out=tmp_path, engine="spark")
    with pytest.raises(ValueError, match="s3:// is not supported"):
        run("todo", "example", "0", out=tmp_path, engine="ray", storage="s3://bucket/run")
    with pytest.raises(ValueError, match="absolute path"):
        run("todo", "example", "0", out=tmp_path, engine="ray", storage="runs/shared")
    with pytest.raises(ValueError, match="sessions_per_actor must be at least 1"):
        run("todo", "example", "0", out=tmp_path, engine="ray", sessions_per_actor=0)
    assert not (tmp_path / RUN_FILE).exists()  # refused before anything was written


def test_a_shipped_session_lands_whole_and_inside_its_folder(tmp_path):
    from cogym_lab.eval.batch.engines.shipping import pack_folder, receive_session

    source = tmp_path / "scratch" / "003"
    (source / "agent").mkdir(parents=True)
    (source / "session.json").write_text('{"status": "finished"}')
    (source / "agent" / "usage.json").write_bytes(b"{}")
    run_dir = tmp_path / "run"
    (run_dir / "003").mkdir(parents=True)
    (run_dir / "003" / "left-by-a-killed-attempt").write_text("x")
    files = pack_folder(source)
    assert sorted(files) == ["agent/usage.json", "session.json"]
    receive_session(run_dir, "003", files)
    assert pack_folder(run_dir / "003") == files  # the partial attempt's file is gone
    assert not any((run_dir / INCOMING_DIR).iterdir())
    for bad in ("../escape.json", "/etc/passwd", "a/../../b"):
        with pytest.raises(ValueError, match="inside its folder"):
            receive_session(run_dir, "004", {bad: b"x"})
    assert not (run_dir / "004").exists() and not (tmp_path / "escape.json").exists()
