"""The Jupyter server's event-loop lag and REST latency while it hosts many sessions: the figure
behind "panels and REST stay responsive however many sessions a server hosts".

Run from the repository root::

    python benchmarks/hosted_loop_lag.py [--sessions 250] [--latency 1.0] [--seconds 60]
                                         [--arrivals 5]

It prints figures and checks nothing. What it does:

* A loopback LM (``cogym_lab.testing.ScriptedOpenAIServer``, in a process of its own as a remote
  LM would be) answers the ``collaborative`` team (LM agent and simulated user) on the ``todo``
  task with the same script as ``eval_throughput.py``, every reply held back ``--latency``
  seconds.
* A real ``jupyter server`` with the cogym_lab extension runs in a child process. The script
  creates ``--sessions`` sessions through ``POST /cogym/api/sessions`` and keeps that many
  running: a session that ends (each adds six items and finishes) is replaced by a new one
  within half a second, with at most ``--arrivals`` creations under way at once. (These
  sessions end within seconds and people's last many minutes, so replacing them in bursts
  would measure arrivals, not hosting: 25 at once cost the server's loop tens of ms.)
* Once they all run, for ``--seconds`` seconds, it times REST calls as a person's browser would
  make them: ``GET /cogym/api/status`` and ``GET /cogym/api/sessions/<id>`` of a running
  session, in turn, ten a second.
* At the end it reads ``GET /cogym/api/status``: the server loop's lag (its own 100 ms ticker
  over the last minute: how late a panel's or REST call's handling starts), the sessions'
  loop's (where the hosted sessions run, a thread of their own) and the garbage collector's
  passes over the last minute (each holds the interpreter: both loops wait for it).

Figures: how many sessions ran while measured (mean and least), the server loop's lag
p50/p99/max, the REST latency p50/p99/max, the sessions' loop lag, the collector's passes,
sessions created and finished, and the server process's CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import aiohttp
from _common import JupyterServer, percentile  # beside this script
from eval_throughput import lm_server_process  # beside this script

TEAM = "collaborative"
TASK = "todo"


class Server(JupyterServer):
    """``jupyter server`` with the extension, in a temporary folder, on a free port."""

    def __init__(self, folder: Path, sessions: int) -> None:
        super().__init__(folder, {"results_dir": str(folder / "results"),
                                  "max_sessions": sessions + 50,
                                  "max_sessions_per_user": sessions + 50,
                                  "finished_session_ttl": 0.0}, stop_wait=60)

    def cpu_seconds(self) -> float:
        """The server process's user + system CPU time so far (from /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_until_up(http: aiohttp.ClientSession, server: Server) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError("the jupyter server exited; see its log")
        try:
            async with http.get(server.url + "cogym/api/status") as answer:
                if answer.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.25)
    raise RuntimeError("the jupyter server did not answer in 120 s")


async def measure(sessions: int, latency: float, seconds: float, arrivals: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="cogym-hosted-lag-"))
    with lm_server_process(latency) as (base_url, stop_lm):
        server = Server(folder, sessions)
        try:
            async with aiohttp.ClientSession(headers=server.headers) as http:
                await wait_until_up(http, server)
                await run_load(http, server, base_url, sessions, seconds, arrivals)
        finally:
            # The LM first: stopped second, it would print a traceback for every request
            # the stopping server leaves half read.
            served, unanswered = stop_lm()
            server.stop()
    print(f"LM chat requests served: {served} ({unanswered} without a scripted reply)")
    shutil.rmtree(folder, ignore_errors=True)


async def run_load(http: aiohttp.ClientSession, server: Server, base_url: str, sessions: int,
                   seconds: float, arrivals: int) -> None:
    api = server.url + "cogym/api/"
    body = {"task": TASK, "team": TEAM, "people": [],
            "lm": {"model": "scripted", "base_url": base_url, "api_key": "loopback"}}
    running: set[str] = set()
    created = failed = 0

    # Sessions here end within seconds (scripted replies), people's last many minutes: at most
    # ``arrivals`` creations at once, so that the figures are of hosting, not of a burst of
    # arrivals (``--arrivals 25`` measures such bursts).
    arriving = asyncio.Semaphore(arrivals)

    async def create() -> None:
        nonlocal created, failed
        async with arriving, http.post(api + "sessions", json=body) as answer:
            data = await answer.json()
            if answer.status != 201:
                failed += 1
                if failed <= 3:
                    print(f"create refused ({answer.status}): {data.get('message')}")
                return
        created += 1
        running.add(data["session_id"])

    async def keep_running(stop: asyncio.Event) -> None:
        """Replace the sessions that ended, twice a second, so that about ``sessions`` run
        throughout the window."""
        while not stop.is_set():
            async with http.get(api + "sessions") as answer:
                listed = (await answer.json())["sessions"]
            now_running = {s["session_id"] for s in listed if s["status"] == "running"}
            running.intersection_update(now_running)
            await asyncio.gather(*(create() for _ in range(max(0, sessions - len(running)))))
            await asyncio.sleep(0.5)

    started = time.monotonic()
    for start in range(0, sessions, 25):  # in steps, as people would arrive
        await asyncio.gather(*(create() for _ in range(min(25, sessions - start))))
    ramp = time.monotonic() - started
    print(f"{created} sessions created in {ramp:.1f} s ({failed} refused); "
          f"{TASK} task, {TEAM} team")
    stop = asyncio.Event()
    keeper = asyncio.create_task(keep_running(stop))
    await asyncio.sleep(5)  # the first turns are under way
    cpu_before = server.cpu_seconds()
    latencies: list[float] = []
    running_seen: list[int] = []  # sessions running, as each status call reported
    probe_until = time.monotonic() + seconds
    turn = 0
    while time.monotonic() < probe_until:
        turn += 1
        target = "status"
        if turn % 2 == 0 and running:
            target = "sessions/" + next(iter(running))
        begun = time.monotonic()
        async with http.get(api + target) as answer:
            answered = await answer.json()
        latencies.append(time.monotonic() - begun)
        if target == "status":
            running_seen.append(answered["sessions_running"])
        await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - begun)))
    cpu = server.cpu_seconds() - cpu_before
    async with http.get(api + "status") as answer:
        status = await answer.json()
    stop.set()
    await keeper
    finished = created - len(running)
    lag, sessions_lag = status["loop_lag"], status.get("sessions_loop_lag") or {}
    print(f"sessions running while measured: mean {sum(running_seen) / len(running_seen):.0f}, "
          f"least {min(running_seen)}; {created} created, about {finished} finished over the run")
    print(f"server loop lag (100 ms ticker, last minute, {lag['samples']} samples): "
          f"p50 {lag['p50_ms']:.1f} ms, p99 {lag['p99_ms']:.1f} ms, max {lag['max_ms']:.1f} ms")
    if sessions_lag:
        print(f"sessions' loop lag (its own thread): p50 {sessions_lag['p50_ms']:.1f} ms, "
              f"p99 {sessions_lag['p99_ms']:.1f} ms, max {sessions_lag['max_ms']:.1f} ms")
    collector = status.get("collector") or {}
    if collector.get("max_ms") is not None:  # every thread waits for the collector's passes
        longest = collector["max_by_generation_ms"]
        print(f"collector's passes (last minute): {collector['collections']} by generation, "
              f"p99 {collector['p99_ms']:.1f} ms, longest per generation "
              f"{longest['0']:.0f} / {longest['1']:.0f} / {longest['2']:.0f} ms, "
              f"{collector['busy_share'] * 100:.1f}% of the time")
    print(f"REST latency over {len(latencies)} calls (status and a session's GET): "
          f"p50 {percentile(latencies, 0.5) * 1000:.1f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1000:.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms")
    print(f"server process CPU: {cpu:.1f} s over {seconds:.0f} s "
          f"({cpu / seconds * 100:.0f}% of a core)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=250)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per LM reply")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--arrivals", type=int, default=5,
                        help="session creations at once, at most (people arriving together)")
    options = parser.parse_args()
    print(f"{options.sessions} hosted sessions, {options.latency:g} s per LM reply, "
          f"at most {options.arrivals} created at once, {os.cpu_count()} CPUs")
    asyncio.run(measure(options.sessions, options.latency, options.seconds, options.arrivals))


if __name__ == "__main__":
    main()
