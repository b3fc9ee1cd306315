"""Batch runner throughput: scripted sessions per minute at several concurrency levels, with every
LM reply held back one second, and the peak memory of each level.

Run from the repository root::

    python benchmarks/eval_throughput.py [--levels 1 8 64] [--latency 1.0 3.0] [--waves 2]
        [--workers N] [--ray-nodes]
    python benchmarks/eval_throughput.py --manifest [--manifest-sizes 100 1000]

It prints a table and checks nothing. With ``--manifest`` it measures only what recording the
run's manifest (``run.json``, and ``sessions.jsonl`` where the runner has one) costs per session
at each size: the runner (``arun``) goes through every session of a batch on the ``todo`` task
with the session itself replaced by one that returns a finished entry at once, and every write
of the manifest is counted (bytes, and seconds spent writing, all of them on the event loop).
The same script measures a tree from before ``sessions.jsonl`` existed. Otherwise, what it
measures:

* The runner (``cogym_lab.eval.batch.runner.arun``) plays the ``collaborative`` team (LM agent and
  simulated user) on the built-in ``todo`` task. The LMs go through the real ``openai`` client to
  the loopback ``ScriptedOpenAIServer``, run in a process of its own as a remote LM would be (its
  threads would otherwise take turns with the batch's event loop for the interpreter), whose
  scripted agent searches nothing, adds six items one by one and finishes, and whose user
  always lets the agent work: it picks "do nothing" wherever its menu lists it (an earlier
  version always answered 3, which for this team's user is "make a change yourself", a prompt
  the script has no reply for; every such turn cost five failed calls and their back-off). Every
  reply waits ``--latency`` seconds in the server before it is sent, like a remote LM.
* Each level runs ``waves x concurrency`` sessions (at least ``--min-sessions``) in a fresh
  child process, so that every level starts cold and its peak memory is its own.
  Sessions per minute = sessions / wall time of the whole batch x 60. The wall time runs from
  the call of ``arun`` to its return: set-up, every session, grading, the results on disk.
* Peak memory is the child's peak resident set size (``resource.getrusage``), the loopback
  server's threads included; "batch" is the growth of that peak during the batch, over what the
  process held after start-up. With ``--tracemalloc`` the peak of Python allocations during the
  batch is shown too (tracing slows Python down, so the rates of such a run are lower).
* "lag" is how late a 10 ms ticker on the caller's event loop (the one that awaits ``arun``)
  woke (``loop_lag.py``): p50, p99 and the worst, in milliseconds. A loop that lags seconds
  would not answer a Jupyter server's users either. "sessions p99" and "sessions max" are the
  lag of the loop the in-process engine ran the sessions on, a thread's of their own (what
  ``run.json`` records as the invocation's ``loop_lag``, from a 100 ms ticker): when it lags,
  the sessions' own timers ran late. Trees from before that thread have the sessions on the
  caller's loop, and no such columns.
* The Ray rows (``--ray-nodes``, 1 and 2 by default) run ``--ray-sessions`` sessions of the
  ``todo`` task (its three instances, with trials) with ``engine="ray"`` on a local cluster of
  that many nodes of one CPU each (``ray.cluster_utils.Cluster``), one actor per node running up
  to ``--ray-sessions-per-actor`` sessions at once. Their lag and CPU are the driver's: the
  sessions run in the actors' processes.
* "CPU s" is the CPU time the child used during the batch (its event loop; the LM server's
  process is not counted): when it nears the wall time, the level is bound by the processor,
  not by the LM's latency. "wkrs CPU s" is the CPU time of the engine's worker processes
  (above 250 sessions at once the in-process engine spreads them over worker processes, one
  per 250 up to the cores less one; ``--workers N`` sets their number, 0 keeps one loop), and
  "CPU/call ms" both together per LM call: the framework's cost of a call, from which the
  cores a level needs follow (calls per second x CPU per call).
* "x ref" is a level's mean session time over the first level's at the same latency (run
  level 1 first: its sessions are LM-bound); the target is at most 1.2.
* With worker processes, a second table gives each worker's loop lag (what ``run.json``
  records as the invocation's ``loop_lags``); "sessions p99/max" is then the worst of them.
* ``--latency 1 3`` runs every level at each latency; ``--levels`` and ``--ray-nodes`` (none:
  no Ray rows) choose a subset that fits the time at hand.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import multiprocessing
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from _common import percentile  # beside this script
from bench_tasks import many_todo_instances  # this folder is on the path when the script runs
from loop_lag import ticker

#: Prompts the scripted server had no reply for, in the server's process (sent back at the end).
UNANSWERED: list[str] = []
IDEAS = ["tent", "sleeping bag", "headlamp", "stove", "water filter", "rain jacket", "map"]
ITEMS_TO_ADD = 6


def _checklist(system: str) -> list[str]:
    return re.findall(r"^- \[[ x]\] #\d+ (.+?)(?: \(added by [^)]+\))?$", system, re.M)


def respond(body: dict[str, Any], latency: float) -> Any:
    """The scripted agent and user, answering from what each prompt shows."""
    from cogym_lab.testing import Reply

    system, last = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "update your scratchpad" in last:
        text = "Thought: nothing to note.\nAction: DO_NOTHING()"
    elif "Choose your next action" in last:
        listed = _checklist(system)
        missing = [idea for idea in IDEAS if idea not in listed]
        text = ("Thought: done.\nAction: FINISH()" if len(listed) >= ITEMS_TO_ADD
                else f'Thought: add one.\nAction: ADD_ITEM(text="{missing[0]}")')
    elif "Choose one option" in last:  # the number of "do nothing" in the user's menu
        wait = re.search(r"^(\d+)\. do nothing", last, re.M)
        text = f"Thought: let the agent work.\nChoice: {wait.group(1) if wait else 1}"
    else:  # counted and reported: a script that misreads prompts measures retries, not sessions
        UNANSWERED.append(last[:80])
        return Reply(status=500, error="the benchmark has no reply for this prompt")
    return Reply(text=text, delay=latency)


def _serve(connection: Any, latency: float) -> None:
    """The scripted LM server of a level, in a process of its own (as a remote LM would be):
    sends its address, then, when told to stop, how many chat requests it served and how many
    of them it had no reply for."""
    from cogym_lab.testing import ScriptedOpenAIServer

    with ScriptedOpenAIServer(responder=functools.partial(respond, latency=latency)) as server:
        connection.send(server.base_url)
        connection.recv()
        connection.send((len(server.chat_requests), len(UNANSWERED)))


@contextlib.contextmanager
def lm_server_process(latency: float) -> Iterator[tuple[str, Callable[[], tuple[int, int]]]]:
    """Start :func:`_serve` in a child process; its base URL, and a function that stops it and
    returns the number of chat requests it served and of those it had no reply for."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs, latency), daemon=True)
    process.start()
    served: list[tuple[int, int]] = []

    def stop() -> tuple[int, int]:
        if not served:
            ours.send("stop")
            served.append(ours.recv())
        return served[0]

    try:
        yield ours.recv(), stop
    finally:
        with contextlib.suppress(Exception):
            stop()
        process.join(timeout=30)
        if process.is_alive():
            process.kill()


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (user and system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_batch(label: Any, latency: float, trace: bool,
                  batch: Callable[[str, str], Any]) -> dict[str, Any]:
    """Run ``batch(base_url, out)`` (a coroutine running ``arun``) against the scripted LM server
    in its own process, with a ticker on the loop; the row of the table."""
    with lm_server_process(latency) as (base_url, stop_server), \
            tempfile.TemporaryDirectory(prefix="cogym-eval-bench-") as out:
        before = peak_rss_mib()
        cpu_before = time.process_time()
        children_before = _children_cpu()
        if trace:
            tracemalloc.start()
        started = time.perf_counter()
        lags: list[float] = []

        async def batch_with_ticker() -> Any:
            stop = asyncio.Event()
            watch = asyncio.create_task(ticker(lags, stop))  # the loop's lag while it works
            try:
                return await batch(base_url, out)
            finally:
                stop.set()
                await watch

        summary = asyncio.run(batch_with_ticker())
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_before
        # the worker processes', once they have ended (the LM server's process has not yet)
        workers_cpu = _children_cpu() - children_before
        traced = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
        calls, unanswered = stop_server()
    durations = [s.duration for s in summary.sessions if s.duration is not None]
    # The in-process engine's own loop, where the sessions ran (none on Ray: the actors ran them)
    sessions_lag = getattr(summary.invocations[-1], "loop_lag", None)
    loop_lags = getattr(summary.invocations[-1], "loop_lags", None) or []
    workers = summary.invocations[-1].engine.get("workers", 0)
    ran = len(summary.sessions)
    return {"concurrency": label, "sessions": ran, "wall": wall,
            "per_minute": ran / wall * 60, "finished": summary.counts.finished,
            "failed": summary.counts.failed, "calls": calls,
            "unanswered": unanswered, "cpu": cpu, "workers_cpu": workers_cpu,
            "cpu_per_call_ms": (cpu + workers_cpu) / calls * 1e3 if calls else float("nan"),
            "workers": workers, "latency": latency,
            "loop_lags": [lag.model_dump() for lag in loop_lags],
            "session_mean": sum(durations) / len(durations) if durations else float("nan"),
            "peak_rss": peak_rss_mib(), "batch_rss": peak_rss_mib() - before,
            "traced": traced, "lag_p50": percentile(lags, 0.50), "lag_p99": percentile(lags, 0.99),
            "lag_max": max(lags, default=float("nan")),
            "sessions_lag_p99": sessions_lag.p99_ms / 1e3 if sessions_lag else float("nan"),
            "sessions_lag_max": sessions_lag.max_ms / 1e3 if sessions_lag else float("nan")}


#: What every level's batch shares: the scripted models, generous time limits, no bar.
BATCH_OPTIONS: dict[str, Any] = {
    "models": {"agent": "agent-lm", "user": "user-lm"}, "lm_arguments": {"*": {"timeout": 120.0}},
    "idle_seconds": 30.0, "timeout": 600.0, "progress": False}


def run_level(concurrency: int, sessions: int, latency: float, trace: bool,
              workers: int | None = None) -> dict[str, Any]:
    """One in-process level, in this process: start the server, run the batch, measure.
    ``workers``: the engine's worker processes (``None``: as it chooses; 0: one loop here)."""
    from cogym_lab.envs import register_env
    from cogym_lab.eval.batch.runner import arun

    register_env("todo_bench", many_todo_instances(sessions))
    return measure_batch(concurrency, latency, trace, lambda base_url, out: arun(
        "todo_bench", "collaborative", None, out=out, concurrency=concurrency,
        base_urls=base_url, workers=workers, **BATCH_OPTIONS))


def run_ray_level(nodes: int, sessions: int, per_actor: int, latency: float) -> dict[str, Any]:
    """The same batch on a Ray cluster of ``nodes`` local nodes (one CPU each), one actor per
    node running up to ``per_actor`` sessions at once; measured from this process, the driver.

    The workers cannot see this process's registry, so the batch is the built-in ``todo`` task's
    three instances with as many trials as it takes to make ``sessions``."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local cluster needs no token
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from ray.cluster_utils import Cluster

    from cogym_lab.eval.batch.runner import arun

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                            "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        return measure_batch(f"ray {nodes}x{per_actor}", latency, False,
                             lambda base_url, out: arun(
                                 "todo", "collaborative", "0:3", out=out,
                                 trials=-(-sessions // 3), engine="ray",
                                 address=cluster.address, sessions_per_actor=per_actor,
                                 base_urls=base_url, **BATCH_OPTIONS))
    finally:
        cluster.shutdown()


def manifest_cost(sessions: int) -> dict[str, Any]:
    """Run a batch of ``sessions`` instant sessions; the manifest's writes, counted."""
    from pathlib import Path

    from cogym_lab.envs import register_env
    from cogym_lab.eval.batch import manifest as batch_manifest
    from cogym_lab.eval.batch import runner
    from cogym_lab.eval.batch.manifest import RunSummary, SessionEntry, TokenCount, Tokens

    register_env("todo", many_todo_instances(sessions))  # the example team plays only todo
    counted = {"rewrites": 0, "appends": 0, "bytes": 0, "seconds": 0.0}
    write = RunSummary.write

    def counted_write(summary: RunSummary, directory: str | Path) -> Path:
        started = time.perf_counter()
        path = write(summary, directory)
        counted["seconds"] += time.perf_counter() - started
        counted["rewrites"] += 1
        counted["bytes"] += path.stat().st_size
        return path

    RunSummary.write = counted_write  # type: ignore[method-assign]
    log_class = getattr(batch_manifest, "SessionLog", None)  # absent before sessions.jsonl
    if log_class is not None:
        append = log_class.append

        def counted_append(log: Any, entry: Any) -> int:
            started = time.perf_counter()
            size = append(log, entry)
            counted["seconds"] += time.perf_counter() - started
            counted["appends"] += 1
            counted["bytes"] += size
            return size

        log_class.append = counted_append

    async def instant_session(batch: Any, number: int, trial: int = 0) -> SessionEntry:
        await asyncio.sleep(0)
        by_model = {"agent-lm": TokenCount(prompt_tokens=12000 + number, completion_tokens=800,
                                           calls=9)}
        return SessionEntry(instance=number, directory=f"{number:03d}",
                            session_id=f"example-todo-{number:03d}", status="finished",
                            end_reason="finished", delivered=True,
                            scores={"performance": 1.0, "size": 1.0}, duration=14.2,
                            tokens=Tokens.from_models(by_model), cost_usd=0.038)

    runner._run_session = instant_session  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="cogym-manifest-bench-") as out:
        started = time.perf_counter()
        summary = asyncio.run(runner.arun("todo", "example", None, out=out, concurrency=64,
                                          progress=False))
        wall = time.perf_counter() - started
    assert summary.counts.finished == sessions
    return {"sessions": sessions, "wall": wall, **counted}


def print_manifest_costs(sizes: list[int]) -> None:
    rows = []
    for size in sizes:  # each in a child: a fresh registry and an unpatched runner
        done = subprocess.run([sys.executable, __file__, "--manifest-child", str(size)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{size} sessions failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    header = (f"{'sessions':>8} {'run.json writes':>15} {'lines':>6} {'bytes':>12} "
              f"{'bytes/session':>13} {'write s':>8} {'ms/session':>10} {'batch wall s':>12}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['sessions']:>8} {r['rewrites']:>15} {r['appends']:>6} {r['bytes']:>12,} "
              f"{r['bytes'] / r['sessions']:>13,.0f} {r['seconds']:>8.3f} "
              f"{r['seconds'] / r['sessions'] * 1e3:>10.3f} {r['wall']:>12.2f}")


def _child_row(command: list[str], what: str) -> list[dict[str, Any]]:
    """Run one level in a child process; its row (none when it failed, which is said)."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"{what} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return []
    return [json.loads(done.stdout.strip().splitlines()[-1])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", action="store_true",
                        help="measure the manifest's write cost per session instead")
    parser.add_argument("--manifest-sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--manifest-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 64, 250, 1000])
    parser.add_argument("--ray-nodes", type=int, nargs="*", default=[1, 2],
                        help="also run the batch on Ray with this many local nodes (none: skip)")
    parser.add_argument("--ray-sessions", type=int, default=600)
    parser.add_argument("--ray-sessions-per-actor", type=int, default=300)
    parser.add_argument("--ray-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, nargs="+", default=[1.0],
                        help="seconds per LM reply; several run every level at each")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the in-process engine (default: as it "
                             "chooses; 0: every session on one loop in the level's process)")
    parser.add_argument("--waves", type=int, default=2, help="sessions = waves x concurrency")
    parser.add_argument("--min-sessions", type=int, default=3)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.manifest_child is not None:
        print(json.dumps(manifest_cost(args.manifest_child)))
        return
    if args.manifest:
        print_manifest_costs(args.manifest_sizes)
        return
    if args.ray_child is not None:
        print(json.dumps(run_ray_level(args.ray_child, args.ray_sessions,
                                       args.ray_sessions_per_actor, args.latency[0])))
        return
    if args.child is not None:
        sessions = max(args.waves * args.child, args.min_sessions)
        print(json.dumps(run_level(args.child, sessions, args.latency[0], args.tracemalloc,
                                   args.workers)))
        return

    import cogym_lab

    print(f"cogym_lab {cogym_lab.__version__}, Python {platform.python_version()}, "
          f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs")
    latencies = ", ".join(f"{latency:g}" for latency in args.latency)
    chosen = "as the engine chooses" if args.workers is None else str(args.workers)
    print(f"todo task, collaborative team, {latencies} s per LM reply, "
          f"{args.waves} waves per level, worker processes: {chosen}; Ray rows: "
          f"{args.ray_sessions} sessions, nodes x sessions per actor\n")
    rows = []
    for latency in args.latency:
        for level in args.levels:
            command = [sys.executable, __file__, "--child", str(level), "--latency",
                       str(latency), "--waves", str(args.waves), "--min-sessions",
                       str(args.min_sessions), *(["--tracemalloc"] if args.tracemalloc else []),
                       *([] if args.workers is None else ["--workers", str(args.workers)])]
            rows.extend(_child_row(command, f"level {level} at {latency:g} s"))
        for nodes in args.ray_nodes:
            command = [sys.executable, __file__, "--ray-child", str(nodes), "--latency",
                       str(latency), "--ray-sessions", str(args.ray_sessions),
                       "--ray-sessions-per-actor", str(args.ray_sessions_per_actor)]
            rows.extend(_child_row(command, f"Ray with {nodes} nodes at {latency:g} s"))
    header = (f"{'LM s':>4} {'workers':>7} {'concurrency':>11} {'sessions':>8} "
              f"{'failed':>6} {'wall s':>7} "
              f"{'sessions/min':>12} {'mean session s':>14} {'LM calls':>8} {'unanswered':>10} "
              f"{'CPU s':>6} {'wkrs CPU s':>10} {'CPU/call ms':>11} {'x ref':>5} "
              f"{'peak RSS MiB':>12} {'batch +MiB':>10} {'lag p50 ms':>10} {'lag p99 ms':>10} "
              f"{'lag max ms':>10} {'sessions p99':>12} {'sessions max':>12}"
              + (f" {'traced MiB':>10}" if args.tracemalloc else ""))
    print(header)
    print("-" * len(header))
    reference: dict[float, float] = {}
    for r in rows:  # the first level of each latency is the others' reference (run 1 first)
        reference.setdefault(r.get("latency", 0.0), r["session_mean"])
    for r in rows:
        ratio = r["session_mean"] / reference[r.get("latency", 0.0)]
        print(f"{r.get('latency', float('nan')):>4g} {r.get('workers', 0):>7} "
              f"{r['concurrency']!s:>11} {r['sessions']:>8} {r['failed']:>6} {r['wall']:>7.1f} "
              f"{r['per_minute']:>12.1f} {r['session_mean']:>14.1f} {r['calls']:>8} "
              f"{r['unanswered']:>10} {r['cpu']:>6.1f} {r.get('workers_cpu', 0.0):>10.1f} "
              f"{r.get('cpu_per_call_ms', float('nan')):>11.2f} {ratio:>5.2f} "
              f"{r['peak_rss']:>12.0f} {r['batch_rss']:>10.0f} {r['lag_p50'] * 1e3:>10.1f} "
              f"{r['lag_p99'] * 1e3:>10.1f} {r['lag_max'] * 1e3:>10.1f} "
              f"{r.get('sessions_lag_p99', float('nan')) * 1e3:>12.1f} "
              f"{r.get('sessions_lag_max', float('nan')) * 1e3:>12.1f}"
              + (f" {r['traced']:>10.1f}" if args.tracemalloc else ""))
    per_loop = [(r, index, lag) for r in rows
                for index, lag in enumerate(r.get("loop_lags") or [])]
    if per_loop:
        print("\neach worker process's loop (the in-process engine on worker processes):")
        print(f"{'LM s':>4} {'concurrency':>11} {'worker':>6} {'lag p50 ms':>10} "
              f"{'lag p99 ms':>10} {'lag max ms':>10}")
        for r, index, lag in per_loop:
            print(f"{r['latency']:>4g} {r['concurrency']!s:>11} {index:>6} {lag['p50_ms']:>10.1f} "
                  f"{lag['p99_ms']:>10.1f} {lag['max_ms']:>10.1f}")
    if any(r["unanswered"] for r in rows):
        print("\nThe scripted LM had no reply for some prompts (the 'unanswered' column): those "
              "rows measure retries, not sessions. Teach respond() the new prompt.")
    if rows:
        base = rows[0]["per_minute"]
        print("\nspeed-up over the first level: " + ", ".join(
            f"{r['concurrency']}: {r['per_minute'] / base:.1f}x" for r in rows))


if __name__ == "__main__":
    main()
