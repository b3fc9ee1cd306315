"""How well a clocked env keeps its clock while LM calls are in flight.

A kitchen game at 10 ticks a second (``tick_seconds=0.1``) runs as a real session on the
in-process bus: the FSM agent beside the assembler partner. Meanwhile, on the same event loop,
``--in-flight`` LM calls (default 8) are kept going through the real ``openai`` client against a
loopback OpenAI-compatible server that answers each after ``--latency`` seconds (default 1). The
script prints how late the ticks fired (p50, p99, max), how many were dropped, and how many LM
calls completed.

    python benchmarks/clock_jitter.py [--ticks 300] [--in-flight 8] [--latency 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from cogym_lab.core.member import MemberSetup, TaskDescription
from cogym_lab.envs import make_env
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.members import member_type
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.testing import Reply, ScriptedOpenAIServer


async def keep_calls_in_flight(base_url: str, count: int, stop: asyncio.Event) -> int:
    """``count`` LM calls always in flight until ``stop``; the number that completed."""
    lm = make_lm(LMConfig(base_url=base_url, model="scripted", api_key="none", max_retries=0,
                          timeout=30, deadline=30))
    done = 0

    async def worker() -> None:
        nonlocal done
        while not stop.is_set():
            await lm.complete([{"role": "user", "content": "Think about the kitchen."}],
                              purpose="load")
            done += 1

    workers = [asyncio.create_task(worker()) for _ in range(count)]
    await stop.wait()
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    await lm.aclose()
    return done


async def main(ticks: int, in_flight: int, latency: float) -> None:
    env = make_env("kitchen", ticks=ticks, tick_seconds=0.1)
    task = TaskDescription.of(env)
    members = {role: member_type(name).build(MemberSetup(role=role, task=task))
               for role, name in (("agent", "kitchen-fsm"), ("partner", "kitchen-assembler"))}
    with ScriptedOpenAIServer([Reply("Things are going well.", delay=latency)]) as server:
        server.add(Reply("Things are going well.", delay=latency), repeat=True)
        stop = asyncio.Event()
        load = asyncio.create_task(keep_calls_in_flight(server.base_url, in_flight, stop))
        await asyncio.sleep(latency)  # the calls are in flight before the game starts
        with tempfile.TemporaryDirectory() as folder:
            session = Session(env, members, kinds={"agent": "agent", "partner": "agent"},
                              results_dir=folder, config=SessionConfig(join_timeout=5))
            started = time.perf_counter()
            result = await session.run()
            took = time.perf_counter() - started
        stop.set()
        completed = await load
    clock = session.env_node.clock if session.env_node else None
    if clock is None or not clock.lags:
        raise SystemExit("the session did not run its clock")
    lags = sorted(clock.lags)
    p99 = lags[min(len(lags) - 1, int(0.99 * len(lags)))]
    print(f"{clock.fired_ticks} ticks of 100 ms in {took:.1f} s ({result.end_reason}), "
          f"{in_flight} LM calls of {latency:.1f} s in flight ({completed} completed)")
    print(f"tick lag: p50 {statistics.median(lags) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
          f"max {lags[-1] * 1000:.1f} ms; dropped ticks: {clock.dropped}; "
          f"final score {result.scores.get('score')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args.ticks, args.in_flight, args.latency))
