"""Memory and start-up time of a session against its number of people seats.

Run from the repository root::

    python benchmarks/seat_memory.py [--seats 10 100 1000 5000] [--cap-gb 8]

It prints a table and checks nothing. Each row runs in a fresh process, so that its RSS is that
session's alone: an in-process coordinator and env node on a MemoryBus, one agent (which never
acts) and N people seats that a host joins before the session runs, as the Jupyter server does.
The row gives the time from ``Session.run`` until the session started, the process's RSS then,
its RSS after 50 shared actions (each notifies every seat) and its peak RSS. A process whose
address space would pass ``--cap-gb`` stops with a MemoryError, and the row says so instead of
taking the machine down.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SHARED_ACTIONS = 50
REPO = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    """The resident set size of this process now, in MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


class IdleAgent:
    """An agent that takes every notification and never acts: the session's one agent seat.
    Defined here, not taken from the test suite, so that the benchmark runs against an
    installed package."""

    def start(self, context: object) -> None:
        pass

    async def act(self, notification: object) -> str | None:
        return None

    def end(self, final: object) -> None:
        pass


async def one_session(seats: int) -> dict[str, float]:
    from cogym_lab.bus import MemoryBus
    from cogym_lab.core.messages import StepRequest, step_channel
    from cogym_lab.envs.todo import TodoEnv
    from cogym_lab.nodes import Session

    people = [f"p{index:05d}" for index in range(seats)]
    bus = MemoryBus()
    session = Session(TodoEnv(), {"agent": IdleAgent(), **dict.fromkeys(people)},
                      kinds={"agent": "agent", **dict.fromkeys(people, "person")}, bus=bus,
                      session_id="seats")
    for role in people:  # the host holds every seat before the session runs
        await bus.publish(step_channel(session.session_id),
                          StepRequest(role=role, kind="join").model_dump(mode="json"))
    started = time.perf_counter()
    running = asyncio.create_task(session.run())

    async def until(condition: Callable[[], bool]) -> None:
        while not condition():
            if running.done():  # the session died (a MemoryError in one of its tasks, say)
                raise running.exception() or RuntimeError("the session ended early")
            await asyncio.sleep(0.001)

    await until(lambda: session.env_node is not None and session.env_node.started.is_set())
    start_seconds = time.perf_counter() - started
    after_start = rss_mb()
    for index in range(SHARED_ACTIONS):
        await bus.publish(step_channel(session.session_id), StepRequest(
            role=people[0], action=f'ADD_ITEM(text="item {index}")').model_dump(mode="json"))
    await until(lambda: session.coordinator.seq >= 1 + SHARED_ACTIONS)
    after_actions = rss_mb()
    await session.env_node.stop("benchmark over")
    await running
    return {"seats": seats, "start_seconds": start_seconds, "rss_after_start_mb": after_start,
            "rss_after_actions_mb": after_actions, "peak_rss_mb": peak_rss_mb()}


def child(seats: int, cap_gb: float) -> None:
    cap = int(cap_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        row = asyncio.run(one_session(seats))
    except MemoryError:
        row = {"seats": seats, "over_cap": True, "peak_rss_mb": peak_rss_mb()}
    except Exception as error:  # noqa: BLE001 - a row that failed says how, the others go on
        row = {"seats": seats, "failed": f"{type(error).__name__}: {error}"[:200],
               "peak_rss_mb": peak_rss_mb()}
    print(json.dumps(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seats", type=int, nargs="+", default=[10, 100, 1000, 5000])
    parser.add_argument("--cap-gb", type=float, default=8.0,
                        help="Address-space limit of each session's process, in GB.")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.cap_gb)
        return
    print(f"{'seats':>6} {'start s':>8} {'RSS after start MB':>19} "
          f"{'RSS after 50 actions MB':>24} {'peak RSS MB':>12}")
    for seats in args.seats:
        done = subprocess.run([sys.executable, __file__, "--child", str(seats),
                               "--cap-gb", str(args.cap_gb)], cwd=REPO, check=False,
                              capture_output=True, text=True)
        lines = done.stdout.strip().split("\n")
        if done.returncode != 0 or not lines[-1].startswith("{"):
            print(f"{seats:>6} failed: {done.stderr.strip().split(chr(10))[-1][:200]}")
            continue
        row = json.loads(lines[-1])
        if row.get("failed"):
            print(f"{seats:>6} failed: {row['failed']}; peak RSS {row['peak_rss_mb']:.0f} MB")
            continue
        if row.get("over_cap"):
            print(f"{seats:>6} over the {args.cap_gb:g} GB cap (MemoryError); "
                  f"peak RSS {row['peak_rss_mb']:.0f} MB")
            continue
        print(f"{seats:>6} {row['start_seconds']:>8.2f} {row['rss_after_start_mb']:>19.0f} "
              f"{row['rss_after_actions_mb']:>24.0f} {row['peak_rss_mb']:>12.0f}")


if __name__ == "__main__":
    main()
