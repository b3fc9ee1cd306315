"""Notification cost: what an event costs as a session's chat grows, and what a bus hop costs.

Run from the repository root::

    python benchmarks/notification_cost.py [--events 100,1000,5000] [--quick] [--no-redis]

It prints tables and checks nothing. Members are sent updates (what each event changed) and
keep their own copies (``docs/notifications.md``); before that change every notification carried
the whole visible chat and the whole view, and the issue's note has the figures of both.

1. **Per-event cost and notification size.** A real ``Coordinator`` (built by ``Session``, so
   limits and protocol are a session's) and a real ``EnvNode`` on a ``MemoryBus``, with the event
   log written to a temporary folder as a session writes it. The team is an agent and a person
   seat. The person seat sends every step (a ``StepRequest`` on the step channel, as the server's
   websocket does); nothing reads the person's notifications (they are built and published all
   the same). The agent is a reader on its notification channel that validates each message into
   an ``Update`` and applies it to its ``MemberCopy``, getting the whole ``Notification`` (what a
   member node does on receipt), and nothing more: it never acts. The
   loop is closed: step k+1 is sent once the agent has read the notification of step k. An
   event's cost is the time from publishing its step to the agent having read it.

   Two sessions run, each to the largest ``--events`` count, and are read at every count:

   * *chat*: every event is ``SEND_TEAMMATE_MESSAGE`` with a short text (``message <k>``), so the
     chat the agent's copy holds grows by one message per event;
   * *no chat*: every event is a todo checklist action (``ADD_ITEM``, ``CHECK_ITEM``,
     ``REMOVE_ITEM`` in turn), and the list never holds more than five items.

   Columns: ``ms/event at N`` is the median cost of the last 50 events up to event N (what one
   more event costs there); ``mean ms/event`` is the session so far divided by N; ``session s``
   is the time from the first step to the agent having read the N-th; ``notif KB`` is the size
   of the agent's notification of event N as compact UTF-8 JSON (1 KB = 1,000 bytes), which is
   what a network bus would carry. The ratios divide the chat figure by the no-chat one.

   A session that passes ``--budget`` seconds stops there. The counts it did not reach are then
   extrapolated (the per-event cost as a straight line fitted to the events measured, the size
   from the growth per event between the last two readings) and printed with a ``~`` and a note.

2. **Replay.** The chat session's log (``events.jsonl`` and ``session.json``, with its final
   state) is replayed by ``cogym_lab.nodes.replay.replay`` in a fresh child process: wall time,
   the process's peak RSS, and that peak less the RSS before the replay started.

3. **Bus hops.** Closed-loop hops of a 1 KB message (``--hops`` of them after 100 uncounted):
   ``t0`` just before the send, the arrival stamped in the receiving task when its ``get``
   returns, as ``benchmarks/bus_latency.py`` stamps them. ``MemoryBus`` publish -> subscription
   against a bare ``asyncio.Queue`` put -> get; ``RedisBus`` publish -> subscription (two bus
   objects, as two processes would have) against a raw Redis stream round trip with redis-py's
   asyncio client: ``XADD`` on one connection, a task doing ``XREAD BLOCK`` on another. The raw
   round trip encodes and decodes the same JSON (``json``), so the ratio is the bus's own
   machinery. The script starts its own ``redis-server`` on a free loopback port (not with
   ``--no-redis``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import timed_main, usable_cpus  # beside this script

import cogym_lab
from cogym_lab.bus import MemoryBus
from cogym_lab.core.member_copy import MemberCopy
from cogym_lab.core.messages import StepRequest, Update, obs_channel, step_channel
from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.env_node import EnvNode
from cogym_lab.nodes.results import ResultsWriter

REPO = Path(__file__).resolve().parents[1]

DEFAULT_EVENTS = (100, 1000, 5000)
QUICK_EVENTS = (100, 1000)
WINDOW = 50  # events behind "ms/event at N"
STEP_TIMEOUT = 60.0  # seconds the agent may take to read one event before the run gives up
HOP_WARMUP = 100
HOP_PAYLOAD_CHARS = 1000
BIG = 10**9


# -- what the person seat sends --------------------------------------------------------------------


def chat_action(index: int) -> str:
    return f'SEND_TEAMMATE_MESSAGE(message="message {index}")'


def task_action(index: int) -> str:
    """Step ``index`` (0-based) of the no-chat session: item k is added, ticked off, and (from
    the fifth on) the item four before it is removed, so the list holds at most five items.
    Every ADD_ITEM succeeds, so item k has id k + 1."""
    k, phase = divmod(index, 3)
    if phase == 0:
        return f'ADD_ITEM(text="item {k}")'
    if phase == 1 or k < 4:
        return f"CHECK_ITEM(item_id={k + 1})"
    return f"REMOVE_ITEM(item_id={k - 4 + 1})"


MODES: dict[str, Callable[[int], str]] = {"chat": chat_action, "no chat": task_action}


# -- 1. the sessions ------------------------------------------------------------------------------


@dataclass
class Reading:
    events: int
    at_ms: float  # median cost of the last WINDOW events
    mean_ms: float
    session_s: float
    notif_bytes: int
    estimated: bool = False


@dataclass
class SessionRun:
    mode: str
    target: int
    readings: dict[int, Reading] = field(default_factory=dict)
    reached: int = 0
    stopped_by_budget: bool = False
    log_dir: Path | None = None
    note: str | None = None
    first_bytes: int = 0  # the agent's notification of the first step


def json_size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


async def run_session(mode: str, counts: Sequence[int], log_dir: Path,
                      budget: float) -> SessionRun:
    action_for = MODES[mode]
    target = max(counts)
    session = Session(TodoEnv(), {"agent": None, "user": None},
                      kinds={"agent": "agent", "user": "person"},
                      session_id=f"cost-{mode.replace(' ', '-')}-{os.getpid()}",
                      config=SessionConfig(idle_seconds=1e9, max_idle_ticks=BIG,
                                           max_events=target + 10, channel_ttl=None))
    coordinator = session.coordinator
    bus = MemoryBus()
    writer = ResultsWriter(log_dir)
    writer.write_session(**session.describe(), started_at=time.time(), status="running")
    node = EnvNode(bus, coordinator, idle_seconds=1e9, join_timeout=30.0,
                   recorders=[writer.append_event])
    subscription = await bus.subscribe(obs_channel(session.session_id, "agent"))
    channel = step_channel(session.session_id)

    state: dict[str, Any] = {"waiting_for": None, "last": None}
    copy = MemberCopy("agent")
    started = asyncio.Event()
    arrived = asyncio.Event()

    async def agent_reads() -> None:
        while True:
            message = await subscription.get()
            if message is None:
                return
            notification = copy.apply(Update.model_validate(message))  # as a member node does
            if notification is None:
                continue
            state["last"] = message
            if notification.event.type.value == "start":
                started.set()
            elif notification.event.request_id == state["waiting_for"]:
                arrived.set()

    reader = asyncio.create_task(agent_reads(), name="agent-reader")
    env_task = asyncio.create_task(node.run(), name="env-node")
    run = SessionRun(mode=mode, target=target, log_dir=log_dir)
    times: list[float] = []
    try:
        for role in ("agent", "user"):  # the host holds both seats, as the server does
            await bus.publish(channel, StepRequest(role=role, kind="join").model_dump(mode="json"))
        await asyncio.wait_for(started.wait(), 30)
        gc.collect()
        began = time.perf_counter()
        wanted = sorted(set(counts))
        for index in range(target):
            request = StepRequest(role="user", action=action_for(index))
            state["waiting_for"] = request.id
            arrived.clear()
            t0 = time.perf_counter()
            await bus.publish(channel, request)  # as the server publishes a person's step
            try:
                await asyncio.wait_for(arrived.wait(), STEP_TIMEOUT)
            except TimeoutError:
                raise RuntimeError(
                    f"{mode}: the agent did not read step {index + 1} ({request.action}) within "
                    f"{STEP_TIMEOUT:.0f} s; session end reason: {coordinator.end_reason}"
                ) from None
            now = time.perf_counter()
            times.append(now - t0)
            done = index + 1
            if done == 1:  # the first size, for extrapolating the growth if need be
                run.first_bytes = json_size(state["last"])
            if done in wanted:
                run.readings[done] = reading(done, times, now - began, json_size(state["last"]))
            if now - began > budget and done < target:
                run.stopped_by_budget = True
                run.readings.setdefault(done, reading(done, times, now - began,
                                                      json_size(state["last"])))
                break
        run.reached = len(times)
        await node.stop("benchmark over")  # END: logged, so the log is a whole session's
        await env_task
        writer.write_session(status="finished", ended_at=time.time(),
                             final_state=coordinator.snapshot())
    finally:
        if not env_task.done():
            env_task.cancel()
        reader.cancel()
        await asyncio.gather(env_task, reader, return_exceptions=True)
        await subscription.close()
        await bus.close()
        writer.close()
    if run.stopped_by_budget:
        extrapolate(run, times, wanted)
    return run


def reading(events: int, times: Sequence[float], elapsed: float, size: int) -> Reading:
    window = times[-WINDOW:]
    return Reading(events=events, at_ms=statistics.median(window) * 1e3,
                   mean_ms=elapsed / events * 1e3, session_s=elapsed, notif_bytes=size)


def extrapolate(run: SessionRun, times: Sequence[float], wanted: Sequence[int]) -> None:
    """Fill the counts the session did not reach from the events it did (see the docstring)."""
    reached = len(times)
    start = reached // 2  # the second half: past start-up effects
    xs = list(range(start + 1, reached + 1))
    slope, intercept = statistics.linear_regression(xs, times[start:])
    last = run.readings[reached]
    earlier = [(n, r.notif_bytes) for n, r in sorted(run.readings.items()) if n < reached]
    since, size = earlier[-1] if earlier else (1, run.first_bytes)
    growth = (last.notif_bytes - size) / (reached - since) if reached > since else 0.0
    for n in wanted:
        if n <= reached:
            continue
        more = sum(intercept + slope * k for k in range(reached + 1, n + 1))
        session_s = last.session_s + more
        run.readings[n] = Reading(events=n, at_ms=(intercept + slope * (n - WINDOW / 2)) * 1e3,
                                  mean_ms=session_s / n * 1e3, session_s=session_s,
                                  notif_bytes=int(last.notif_bytes + growth * (n - reached)),
                                  estimated=True)
    run.note = (f"{run.mode}: stopped by --budget after {reached} of {run.target} events; the "
                f"figures marked ~ are extrapolated from the events measured, not measured")


# -- 2. replay ------------------------------------------------------------------------------------


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def replay_child(directory: str) -> None:
    """Runs in the child process: replay ``directory`` and print the figures as JSON."""
    from cogym_lab.nodes.replay import replay

    gc.collect()
    before = rss_mb()
    began = time.perf_counter()
    replayed = replay(directory)
    seconds = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    print(json.dumps({"seconds": seconds, "frames": len(replayed.events), "rss_before_mb": before,
                      "peak_rss_mb": peak, "checked": replayed.final_state_checked}))


def run_replay(directory: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--replay-child",
                           str(directory)], check=False, capture_output=True, text=True,
                          cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"the replay failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- 3. bus hops ----------------------------------------------------------------------------------


def hop_payload(index: int) -> dict[str, Any]:
    head = f"hop {index:08d} "
    return {"seq": index, "text": head + "x" * (HOP_PAYLOAD_CHARS - len(head))}


async def closed_loop(send: Callable[[dict[str, Any]], Awaitable[None]],
                      get: Callable[[], Awaitable[Any]], hops: int) -> list[float]:
    """Seconds per hop: ``t0`` before ``send``, the arrival stamped when ``get`` returns."""
    arrival: list[float] = [0.0]
    received = asyncio.Event()

    async def receive() -> None:
        while True:
            message = await get()
            arrival[0] = time.perf_counter()
            if message is None:
                return
            received.set()

    receiver = asyncio.create_task(receive())
    samples: list[float] = []
    try:
        gc.collect()
        for index in range(HOP_WARMUP + hops):
            message = hop_payload(index)
            received.clear()
            t0 = time.perf_counter()
            await send(message)
            await asyncio.wait_for(received.wait(), 30)
            if index >= HOP_WARMUP:
                samples.append(arrival[0] - t0)
    finally:
        receiver.cancel()
        await asyncio.gather(receiver, return_exceptions=True)
    return samples


async def hops_queue(hops: int) -> list[float]:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send(message: dict[str, Any]) -> None:
        queue.put_nowait(message)

    return await closed_loop(send, queue.get, hops)


async def hops_memory_bus(hops: int) -> list[float]:
    bus = MemoryBus()
    subscription = await bus.subscribe("bench/hop/obs")
    try:
        return await closed_loop(lambda m: bus.publish("bench/hop/obs", m), subscription.get,
                                 hops)
    finally:
        await subscription.close()
        await bus.close()


async def hops_redis_bus(hops: int, url: str) -> list[float]:
    from cogym_lab.bus.redis import RedisBus

    sender, receiver = RedisBus(url), RedisBus(url)
    await sender.connect()
    await receiver.connect()
    channel = f"bench-{os.getpid()}/hop/obs"
    subscription = await receiver.subscribe(channel)
    try:
        return await closed_loop(lambda m: sender.publish(channel, m), subscription.get, hops)
    finally:
        await subscription.close()
        await sender.close()
        await receiver.close()


async def hops_raw_redis(hops: int, url: str) -> list[float]:
    from redis.asyncio import Redis

    writer, reader = Redis.from_url(url), Redis.from_url(url)
    key = f"bench-raw-{os.getpid()}"
    position = [b"0-0"]
    buffered: deque[Any] = deque()

    async def send(message: dict[str, Any]) -> None:
        text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        await writer.xadd(key, {"data": text}, maxlen=10_000, approximate=True)

    async def get() -> Any:
        while not buffered:
            reply: Any = await reader.xread({key: position[0]}, count=256, block=0)
            for _stream, entries in reply or ():
                for entry_id, fields in entries:
                    position[0] = entry_id
                    buffered.append(fields[b"data"])
        return json.loads(buffered.popleft())

    try:
        return await closed_loop(send, get, hops)
    finally:
        await writer.delete(key)
        await writer.aclose()
        await reader.aclose()


@dataclass
class HopRow:
    path: str
    samples: list[float]
    baseline: str | None = None  # the path it is divided by


def stats_us(samples: Sequence[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1e6, statistics.fmean(ordered) * 1e6, p99 * 1e6


async def run_hops(hops: int, redis_url: str | None) -> list[HopRow]:
    rows = [HopRow("asyncio.Queue", await hops_queue(hops)),
            HopRow("MemoryBus", await hops_memory_bus(hops), "asyncio.Queue")]
    if redis_url is not None:
        rows.append(HopRow("raw XADD/XREAD", await hops_raw_redis(hops, redis_url)))
        rows.append(HopRow("RedisBus", await hops_redis_bus(hops, redis_url), "raw XADD/XREAD"))
    return rows


# -- output ---------------------------------------------------------------------------------------


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def numeric(cell: str) -> bool:
        try:
            float(cell.strip("~x").replace(",", ""))
        except ValueError:
            return cell == "-"
        return True

    text_columns = {i for i in range(len(header)) if i == 0 or not all(
        numeric(row[i]) for row in rows)}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) if i in text_columns else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
                         ).rstrip()

    print(title)
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    print(flush=True)


def mark(reading: Reading, text: str) -> str:
    return ("~" + text) if reading.estimated else text


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "-"


def report_sessions(runs: dict[str, SessionRun], counts: Sequence[int]) -> None:
    rows = []
    for n in counts:
        for mode, run in runs.items():
            r = run.readings.get(n)
            if r is None:
                continue
            rows.append([f"{n:,}", mode, mark(r, f"{r.at_ms:.3f}"), mark(r, f"{r.mean_ms:.3f}"),
                         mark(r, f"{r.session_s:.2f}"), mark(r, f"{r.notif_bytes / 1000:.1f}")])
    print_table("Per-event cost and notification size (MemoryBus; agent + person seat)",
                ["events", "session", "ms/event at N", "mean ms/event", "session s",
                 "notif KB"], rows)
    chat, plain = runs.get("chat"), runs.get("no chat")
    if chat is None or plain is None:
        return
    rows = []
    for n in counts:
        a, b = chat.readings.get(n), plain.readings.get(n)
        if a is None or b is None:
            continue
        est = "~" if a.estimated or b.estimated else ""
        rows.append([f"{n:,}", est + ratio(a.at_ms, b.at_ms), est + ratio(a.session_s, b.session_s),
                     est + ratio(a.notif_bytes, b.notif_bytes)])
    print_table("Chat / no chat", ["events", "ms/event at N", "session s", "notif KB"], rows)
    for run in runs.values():
        if run.note:
            print(f"  NOTE {run.note}")
    print("  ms/event at N: median of the last 50 events up to N; mean: session s / N;\n"
          "  notif KB: the agent's notification of event N as compact JSON (1 KB = 1,000 B)\n")


def report_replay(result: dict[str, Any], run: SessionRun) -> None:
    events = result["frames"]
    rows = [[f"{events:,}", f"{result['seconds']:.2f}", f"{result['peak_rss_mb']:.0f}",
             f"{result['peak_rss_mb'] - result['rss_before_mb']:.0f}",
             "yes" if result["checked"] else "no"]]
    print_table(f"Replay of the chat session's log ({run.reached:,} messages, START and END "
                f"included; fresh process)",
                ["log events", "seconds", "peak RSS MB", "peak - before MB", "final state checked"],
                rows)
    if run.stopped_by_budget:
        print(f"  NOTE the log is the capped session's ({run.reached:,} of {run.target:,} "
              f"events): this replay is of the shorter log, not extrapolated\n")


def report_hops(rows: list[HopRow]) -> None:
    by_path = {row.path: row for row in rows}
    table = []
    for row in rows:
        p50, mean, p99 = stats_us(row.samples)
        cells = [row.path, f"{len(row.samples):,}", f"{p50:.1f}", f"{mean:.1f}", f"{p99:.1f}"]
        if row.baseline and row.baseline in by_path:
            b50, bmean, _ = stats_us(by_path[row.baseline].samples)
            cells += [row.baseline, ratio(p50, b50), ratio(mean, bmean)]
        else:
            cells += ["-", "-", "-"]
        table.append(cells)
    print_table(f"Bus hops (closed loop, {HOP_PAYLOAD_CHARS}-char message; microseconds)",
                ["path", "hops", "p50 us", "mean us", "p99 us", "against", "x p50", "x mean"],
                table)


def environment(redis: Any) -> None:
    usable = usable_cpus()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = [["python", f"{platform.python_version()} ({platform.python_implementation()})"],
            ["cpu count", f"{os.cpu_count()} (usable: {usable})"],
            ["load average", load],
            ["cogym_lab", cogym_lab.__version__],
            ["redis-server", redis.version() if redis is not None else "not used"]]
    print_table("Environment", ["item", "value"], rows)


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default=None,
                        help="comma-separated event counts (default 100,1000,5000)")
    parser.add_argument("--quick", action="store_true", help="100,1000 events only")
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis hops")
    parser.add_argument("--hops", type=int, default=3000, help="measured hops per path")
    parser.add_argument("--budget", type=float, default=180.0,
                        help="seconds a session may run before the rest is extrapolated")
    parser.add_argument("--replay-child", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.events and args.quick:
        parser.error("give --events or --quick, not both")
    if args.quick:
        args.counts = list(QUICK_EVENTS)
    elif args.events:
        try:
            args.counts = sorted({int(x.replace("_", "")) for x in args.events.split(",") if x})
        except ValueError:
            parser.error("--events takes counts such as 100,1000,5000")
        if not args.counts or min(args.counts) < 1:
            parser.error("--events takes counts of at least 1")
    else:
        args.counts = list(DEFAULT_EVENTS)
    return args


async def amain(args: argparse.Namespace, redis_url: str | None, folder: Path) -> None:
    print("... bus hops", file=sys.stderr, flush=True)
    hop_rows = await run_hops(args.hops, redis_url)
    runs: dict[str, SessionRun] = {}
    for mode in MODES:
        print(f"... session, {mode}, {max(args.counts):,} events", file=sys.stderr, flush=True)
        runs[mode] = await run_session(mode, args.counts, folder / mode.replace(" ", "-"),
                                       args.budget)
        gc.collect()
    report_sessions(runs, args.counts)
    chat = runs["chat"]
    print(f"... replay, {chat.reached:,} events", file=sys.stderr, flush=True)
    assert chat.log_dir is not None
    report_replay(run_replay(chat.log_dir), chat)
    report_hops(hop_rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replay_child:
        replay_child(args.replay_child)
        return 0

    def run() -> None:
        redis = None
        try:
            if not args.no_redis:
                from cogym_lab.testing import RedisServer

                redis = RedisServer().start()
            environment(redis)
            with tempfile.TemporaryDirectory(prefix="cogym-cost-") as folder:
                asyncio.run(amain(args, redis.url if redis else None, Path(folder)))
        finally:
            if redis is not None:
                redis.close()

    return timed_main(run)


if __name__ == "__main__":
    sys.exit(main())
