"""Bus latency benchmark: step -> notification delivery, and session start-up time.

Run from the repository root::

    python benchmarks/bus_latency.py [--rounds N] [--members 2 8] [--buses memory redis redis-split]

It prints tables and checks nothing. What it measures:

1. **Step -> notification latency.** A real ``EnvNode`` with a real ``Coordinator`` hosts a tiny
   benchmark env with one shared action, ``POST(text)``. Members are hand-driven subscriptions on
   their obs channels (one shared ``MemoryBus`` in-process; one ``RedisBus`` per node on Redis, as
   separate processes would have). One member publishes a ``StepRequest`` posting 1,000
   characters; ``t0`` is taken just before ``publish``; each member's receiving task stamps the
   arrival of that step's notification; latency = arrival - t0, one sample per recipient. The loop
   is closed: step k+1 is sent once every member has step k. Warm-up steps are not counted.
   Arrival is stamped when the subscription's ``get()`` returns, before any parsing.
   Rows ``memory`` and ``redis`` run every node on this process's event loop, so on Redis the
   EnvNode and every member's reader compete for one core. Row ``redis-split`` runs the EnvNode
   in a process of its own, as ``cogym-lab node env`` does, with the members here (so arrival
   and ``t0`` still come from one clock).
2. **Session start-up.** ``Session(...).run()`` with the todo env and two teammates that finish at
   once; start-up = from just before ``Session(...)`` until every teammate's ``start()`` has been
   called (i.e. it has received its START notification). The whole ``run()`` is shown too.

For Redis, the script starts its own ``redis-server`` (no persistence) on a free loopback port
and stops it at the end. The reference targets are shown for comparison only.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import os
import platform
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from _common import timed_main, usable_cpus  # beside this script

import cogym_lab
from cogym_lab.bus import Bus, MemoryBus
from cogym_lab.core import CoEnv, Component, Notification, RenderType, SessionContext, action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import StepRequest, TeamMember, obs_channel, step_channel
from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.env_node import EnvNode
from cogym_lab.testing import RedisServer

PAYLOAD_CHARS = 1000
BIG = 10**9


# -- the benchmark env ----------------------------------------------------------------------------


class BoardEnv(CoEnv):
    """One shared board holding the last posted text (so every notification carries ~1 KB)."""

    name = "bench-board"

    @property
    def task_description(self) -> str:
        return "Post text to the shared board."

    def _reset(self, seed: int | None) -> None:
        self.text = ""
        self.posts = 0

    def public_components(self) -> list[Component]:
        return [Component(name="board", title="Board", render_type=RenderType.TEXT,
                          content=self.text)]

    @action("Replace the shared board's text.", text="What to post")
    def post(self, role: str, text: str) -> None:
        self.text = text
        self.posts += 1


def payload(step: int) -> str:
    head = f"step {step:08d} "
    return head + "x" * (PAYLOAD_CHARS - len(head))


# -- statistics and tables ------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def summarize(samples_s: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples_s)
    return {"n": len(ordered), "p50": percentile(ordered, 0.50) * 1e3,
            "p99": percentile(ordered, 0.99) * 1e3, "max": (ordered[-1] * 1e3) if ordered else 0.0}


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    numeric = [all(_is_number(row[i]) for row in rows) if rows else False
               for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).rjust(w) if num else str(c).ljust(w)
                         for c, w, num in zip(cells, widths, numeric, strict=True)).rstrip()

    print(title)
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    print(flush=True)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def ms(value: float) -> str:
    return f"{value:.3f}"


# -- 1. step -> notification latency --------------------------------------------------------------


@dataclass
class LatencyResult:
    bus: str
    members: int
    steps: int
    samples: list[float] = field(default_factory=list)  # seconds, one per recipient per step
    last_arrival: list[float] = field(default_factory=list)  # seconds, slowest recipient per step


def _env_process(session_id: str, roles: list[str], max_events: int, redis_url: str) -> None:
    """The ``redis-split`` EnvNode, run in a child process until the session finishes."""
    from cogym_lab.bus.redis import RedisBus

    async def serve() -> None:
        bus = RedisBus(redis_url)
        await bus.connect()
        coordinator = Coordinator(BoardEnv(), [TeamMember(role=r, kind="agent") for r in roles],
                                  session_id=session_id, step_limits={r: BIG for r in roles},
                                  max_events=max_events, max_idle_ticks=BIG)
        try:
            await EnvNode(bus, coordinator, idle_seconds=1e9, join_timeout=30.0).run()
        finally:
            await bus.close()

    asyncio.run(serve())


async def _make_bus(kind: str, redis_url: str | None) -> Bus:
    if kind == "memory":
        return MemoryBus()
    from cogym_lab.bus.redis import RedisBus

    assert redis_url is not None
    bus = RedisBus(redis_url)
    await bus.connect()
    return bus


async def bench_latency(kind: str, n_members: int, rounds: int, warmup: int,
                        redis_url: str | None) -> LatencyResult:
    session_id = f"bench-{kind}-{n_members}-{os.getpid()}-{time.monotonic_ns()}"
    roles = [f"m{i}" for i in range(n_members)]
    team = [TeamMember(role=role, kind="agent") for role in roles]
    coordinator = Coordinator(BoardEnv(), team, session_id=session_id,
                              step_limits={role: BIG for role in roles},
                              max_events=warmup + rounds + 1000, max_idle_ticks=BIG)

    buses: list[Bus] = []
    subscriptions: list[Any] = []
    tasks: list[asyncio.Task[Any]] = []
    env_task: asyncio.Task[None] | None = None
    env_node: EnvNode | None = None
    env_process: multiprocessing.process.BaseProcess | None = None
    try:
        if kind == "memory":
            shared = await _make_bus(kind, redis_url)
            buses.append(shared)
            env_bus, member_buses = shared, [shared] * n_members
        else:  # one connection set per node, as separate processes would have
            env_bus = await _make_bus(kind, redis_url)
            buses.append(env_bus)
            member_buses = []
            for _ in roles:
                member_buses.append(await _make_bus(kind, redis_url))
                buses.append(member_buses[-1])

        # Step bookkeeping shared by the receiving tasks.
        current: dict[str, Any] = {"id": None, "arrivals": {}, "done": asyncio.Event()}
        started = {role: asyncio.Event() for role in roles}

        async def receive(role: str, subscription: Any) -> None:
            while True:
                message = await subscription.get()
                arrived = time.perf_counter()
                if message is None:
                    return
                event = message.get("event") or {}
                if event.get("type") == "start":
                    started[role].set()
                    continue
                if event.get("request_id") == current["id"] and current["id"] is not None:
                    arrivals = current["arrivals"]
                    arrivals[role] = arrived
                    if len(arrivals) == n_members:
                        current["done"].set()

        for role, bus in zip(roles, member_buses, strict=True):
            subscription = await bus.subscribe(obs_channel(session_id, role))
            subscriptions.append(subscription)
            tasks.append(asyncio.create_task(receive(role, subscription), name=f"recv-{role}"))

        if kind == "redis-split":
            env_process = multiprocessing.get_context("spawn").Process(
                target=_env_process, daemon=True,
                args=(session_id, roles, coordinator.max_events, redis_url))
            env_process.start()
        else:
            env_node = EnvNode(env_bus, coordinator, idle_seconds=1e9, join_timeout=30.0)
            env_task = asyncio.create_task(env_node.run(), name="env-node")
        for role, bus in zip(roles, member_buses, strict=True):
            join = StepRequest(role=role, kind="join")
            await bus.publish(step_channel(session_id), join.model_dump(mode="json"))
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started.values())), 30)

        actor, actor_bus = roles[0], member_buses[0]
        channel = step_channel(session_id)
        result = LatencyResult(bus=kind, members=n_members, steps=rounds)
        gc.collect()
        for step in range(warmup + rounds):
            request = StepRequest(role=actor, action=f'POST(text="{payload(step)}")')
            done = asyncio.Event()
            current.update(id=request.id, arrivals={}, done=done)
            t0 = time.perf_counter()
            await actor_bus.publish(channel, request)  # as a member node does: the model itself
            try:
                await asyncio.wait_for(done.wait(), 30)
            except TimeoutError:
                raise RuntimeError(f"step {step}: not every member got its notification "
                                   f"within 30 s (session ended: {coordinator.end_reason})") from None
            if step >= warmup:
                arrivals = current["arrivals"].values()
                result.samples.extend(t - t0 for t in arrivals)
                result.last_arrival.append(max(arrivals) - t0)
        if env_process is not None:  # end the child's session so it exits by itself
            await actor_bus.publish(channel, StepRequest(role=actor, action="FINISH()")
                                    .model_dump(mode="json"))
            await asyncio.to_thread(env_process.join, 10)
        return result
    finally:
        if env_process is not None and env_process.is_alive():
            env_process.terminate()
        if env_node is not None and env_task is not None and not env_task.done():
            try:
                await asyncio.wait_for(env_node.stop("benchmark finished"), 5)
            except Exception:  # best effort: the tasks are cancelled below anyway
                pass
        if env_task is not None:
            env_task.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *([env_task] if env_task else []), return_exceptions=True)
        for subscription in subscriptions:
            await subscription.close()
        for bus in dict.fromkeys(buses):  # the shared MemoryBus only once
            await bus.close()


# -- 2. session start-up --------------------------------------------------------------------------


class QuickFinisher:
    """A teammate that notes when it started and finishes on its first turn."""

    def __init__(self, kind: str, starts: list[float]) -> None:
        self.kind = kind
        self._starts = starts

    def start(self, context: SessionContext) -> None:
        self._starts.append(time.perf_counter())

    async def act(self, notification: Notification) -> str:
        return "FINISH()"

    def end(self, final: Notification) -> None:
        pass


async def bench_startup(kind: str, runs: int, redis_url: str | None
                        ) -> tuple[list[float], list[float]]:
    """Per run: (start-up seconds, whole ``run()`` seconds)."""
    startup: list[float] = []
    whole: list[float] = []
    for _ in range(runs):
        starts: list[float] = []
        env = TodoEnv()
        bus = None
        if kind == "redis":
            from cogym_lab.bus.redis import RedisBus

            assert redis_url is not None
            bus = RedisBus(redis_url)  # fresh, unconnected: run() connects it
        try:
            t0 = time.perf_counter()
            session = Session(env, {"agent": QuickFinisher("agent", starts),
                                    "user": QuickFinisher("user", starts)},
                              kinds={"agent": "agent", "user": "user"}, bus=bus, config=SessionConfig(idle_seconds=60, timeout=30))
            await session.run()
            t_end = time.perf_counter()
        finally:
            if bus is not None:
                await bus.close()
        if len(starts) != 2:
            raise RuntimeError(f"only {len(starts)} of 2 teammates started "
                               f"(end reason {session.coordinator.end_reason})")
        startup.append(max(starts) - t0)
        whole.append(t_end - t0)
    return startup, whole


# -- main ------------------------------------------------------------------------------------------


def environment_info(redis: RedisServer | None) -> list[tuple[str, str]]:
    import pydantic
    import redis as redis_py

    usable = usable_cpus()
    rows = [
        ("python", f"{platform.python_version()} ({platform.python_implementation()})"),
        ("platform", platform.platform()),
        ("cpu count", f"{os.cpu_count()} (usable: {usable})"),
        ("cogym_lab", cogym_lab.__version__),
        ("pydantic", pydantic.VERSION),
        ("redis-py", redis_py.__version__),
    ]
    if redis is not None:
        rows.append(("redis-server", redis.version()))
    else:
        found = shutil.which("redis-server")
        rows.append(("redis-server", "not used" + ("" if found else " (not on PATH)")))
    return rows


async def amain(args: argparse.Namespace, redis_url: str | None) -> None:
    latency_rows = []
    for kind in args.buses:
        for n in args.members:
            print(f"... latency: {kind}, {n} members, {args.warmup} warm-up + {args.rounds} steps",
                  file=sys.stderr, flush=True)
            result = await bench_latency(kind, n, args.rounds, args.warmup, redis_url)
            every, slowest = summarize(result.samples), summarize(result.last_arrival)
            target = {("memory", 2): "< 1 ms", ("redis", 2): "< 3 ms",
                      ("redis-split", 2): "< 3 ms"}.get((kind, n), "-")
            latency_rows.append([kind, str(n), str(result.steps), str(every["n"]),
                                 ms(every["p50"]), ms(every["p99"]), ms(every["max"]),
                                 ms(slowest["p50"]), ms(slowest["p99"]), target])
    if latency_rows:
        print_table(
            f"Step -> notification latency (ms; payload {PAYLOAD_CHARS} chars; closed loop)",
            ["bus", "members", "steps", "samples", "p50", "p99", "max",
             "last p50", "last p99", "target p99"],
            latency_rows)
        print("  samples: one per recipient per step; 'last': the slowest recipient of each step\n")

    startup_rows = []
    if args.startup_runs > 0:
        for kind in [kind for kind in args.buses if kind != "redis-split"]:
            print(f"... start-up: {kind}, {args.startup_runs} sessions", file=sys.stderr,
                  flush=True)
            startup, whole = await bench_startup(kind, args.startup_runs, redis_url)
            s, w = summarize(startup), summarize(whole)
            target = "< 200 ms" if kind == "memory" else "-"
            startup_rows.append([kind, str(s["n"]), ms(s["p50"]), ms(s["p99"]), ms(s["max"]),
                                 ms(w["p50"]), ms(w["p99"]), target])
        print_table(
            "Session start-up, todo env, 2 teammates (ms)",
            ["bus", "runs", "start p50", "start p99", "start max", "run() p50", "run() p99",
             "target"],
            startup_rows)
        print("  start: from Session(...) until both teammates' start() ran (START received);\n"
              "  run(): the whole Session.run() of a session that ends on the first FINISH()\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000, help="measured steps per row")
    parser.add_argument("--warmup", type=int, default=50, help="uncounted steps first")
    parser.add_argument("--members", type=int, nargs="+", default=[2, 8], help="team sizes")
    parser.add_argument("--buses", nargs="+", choices=["memory", "redis", "redis-split"],
                        default=["memory", "redis", "redis-split"])
    parser.add_argument("--startup-runs", type=int, default=200,
                        help="sessions per start-up row (0 skips start-up)")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.members):
        parser.error("--members takes team sizes of at least 1")
    args.buses = list(dict.fromkeys(args.buses))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    def run() -> None:
        redis: RedisServer | None = None
        try:
            if any(kind.startswith("redis") for kind in args.buses):
                redis = RedisServer().start()
            print_table("Environment", ["item", "value"], environment_info(redis))
            asyncio.run(amain(args, redis.url if redis else None))
        finally:
            if redis is not None:
                redis.stop()

    return timed_main(run)


if __name__ == "__main__":
    sys.exit(main())
