"""The in-process engine runs a batch's sessions on an event loop of their own, on a thread: the
caller's loop (a notebook kernel's, a Jupyter server's) keeps answering while the sessions keep
theirs busy; cancelling the batch waits for the sessions' clean-up; an entry the caller cannot
record stops the batch; the garbage collector's batch setting is put back; the cost meter is read
by the bar while sessions change it from their thread."""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
import time

import pytest

from cogym_lab.eval.batch.engines import inprocess
from cogym_lab.core.collector import _time_pass, collector_pauses
from cogym_lab.eval.batch.engines.collector import YOUNG_THRESHOLD, batch_collector
from cogym_lab.eval.batch.engines.inprocess import InProcess
from cogym_lab.eval.batch.engines.loop_thread import LoopThread
from cogym_lab.eval.batch.manifest import SessionEntry, TokenCount
from cogym_lab.eval.batch.progress import CostMeter


def entry(key: tuple[int, int]) -> SessionEntry:
    number, trial = key
    return SessionEntry(instance=number, trial=trial, directory=f"{number:03d}",
                        session_id=f"s-{number}-{trial}", status="finished")


def busy(seconds: float) -> None:
    """Pure Python work that never awaits, as a session's CPU-bound stretch is."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(200))


def session_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "cogym-sessions"]


async def test_the_callers_loop_keeps_answering_while_the_sessions_hold_theirs(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inprocess, "LAG_WARNING_MS", 300.0)
    windows: list[tuple[float, float]] = []
    loops: set[asyncio.AbstractEventLoop] = set()

    async def run_one(key: tuple[int, int]) -> SessionEntry:
        loops.add(asyncio.get_running_loop())
        await asyncio.sleep(0)
        started = time.perf_counter()
        busy(0.6)  # the sessions' loop answers nothing meanwhile
        windows.append((started, time.perf_counter()))
        return entry(key)

    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            await asyncio.sleep(0.005)
            ticks.append(time.perf_counter())

    ended: list[SessionEntry] = []
    watch = asyncio.create_task(ticker())
    engine = InProcess(run_one, concurrency=2)
    await engine.run([(0, 0), (1, 0)], ended.append)
    watch.cancel()
    assert loops and asyncio.get_running_loop() not in loops  # the sessions ran elsewhere
    assert sorted(e.key for e in ended) == [(0, 0), (1, 0)]  # entries came to this loop
    for start, end in windows:  # this loop woke again and again while a session held its own
        inside = [t for t in ticks if start < t < end]
        assert len(inside) >= 5, (len(inside), end - start)
    # The sessions' loop was held for 0.6 s at a time, and its lag says so.
    assert engine.lag is not None and engine.lag.max_ms >= 300
    assert "short of CPU for 2 sessions at once" in caplog.text  # and the batch says so
    assert session_threads() == []  # the thread ended with the batch


async def test_cancelling_the_batch_waits_for_the_sessions_clean_up() -> None:
    started, cleaned = asyncio.Event(), []

    async def run_one(key: tuple[int, int]) -> SessionEntry:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.2)  # an async clean-up: closing LMs, writing session.json
            cleaned.append(key)
        return entry(key)

    async def watch_start(key: tuple[int, int]) -> SessionEntry:
        caller.call_soon_threadsafe(started.set)
        return await run_one(key)

    caller = asyncio.get_running_loop()
    engine = InProcess(watch_start, concurrency=4)
    batch = asyncio.create_task(engine.run([(n, 0) for n in range(3)], lambda e: None))
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(0.1)
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    assert sorted(cleaned) == [(0, 0), (1, 0), (2, 0)]  # every session had unwound
    assert session_threads() == []


async def test_an_entry_the_caller_cannot_record_stops_the_batch() -> None:
    still_running = []

    async def run_one(key: tuple[int, int]) -> SessionEntry:
        if key[0] == 0:
            return entry(key)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            still_running.append(key)
            raise
        return entry(key)

    def ended(e: SessionEntry) -> None:
        raise OSError(28, "No space left on device")

    engine = InProcess(run_one, concurrency=3)
    with pytest.raises(OSError, match="No space left"):
        await asyncio.wait_for(engine.run([(0, 0), (1, 0), (2, 0)], ended), 30)
    assert sorted(still_running) == [(1, 0), (2, 0)]  # cancelled, not left behind
    assert session_threads() == []


async def test_a_failure_inside_the_sessions_loop_reaches_the_caller() -> None:
    async def run_one(key: tuple[int, int]) -> SessionEntry:
        raise RuntimeError(f"engine bug at {key}")

    with pytest.raises(RuntimeError, match="engine bug at"):
        await InProcess(run_one, concurrency=1).run([(0, 0)], lambda e: None)


async def test_a_loop_thread_returns_what_its_coroutine_returns() -> None:
    async def where() -> str:
        return threading.current_thread().name

    async with LoopThread(name="cogym-sessions") as thread:
        assert await thread.run(where()) == "cogym-sessions"
    with pytest.raises(RuntimeError, match="has not started"):
        LoopThread().loop  # noqa: B018 - the property raises


async def test_a_coroutine_cancelled_before_its_loop_started_it_never_runs() -> None:
    ran: list[int] = []

    async def forever() -> None:
        ran.append(1)
        await asyncio.sleep(3600)

    async with LoopThread() as thread:
        blocker = threading.Event()
        thread.loop.call_soon_threadsafe(blocker.wait, 10)  # the thread's loop is held up
        waiting = asyncio.create_task(thread.run(forever()))
        await asyncio.sleep(0.05)  # run() has queued the start, behind the hold-up
        waiting.cancel()
        await asyncio.sleep(0.05)  # ... and now the cancel, behind the start
        blocker.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiting, 10)
    assert ran == []


def test_the_collector_runs_less_often_during_a_batch_and_as_before_afterwards() -> None:
    before = gc.get_threshold()
    with batch_collector():
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        assert gc.get_freeze_count() > 0  # what the process held before is left out
        with batch_collector():  # an overlapping batch shares the setting
            assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)  # the first still runs
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.set_threshold(0)  # a caller that switched collection off keeps it off
    try:
        with batch_collector():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_the_collectors_passes_are_timed_while_a_batch_runs_and_not_afterwards() -> None:
    def passes() -> int:
        return sum(collector_pauses(window=3600).collections.values())

    counted_before = passes()
    with batch_collector():
        cycle: list[object] = []
        cycle.append(cycle)  # garbage only the collector frees
        del cycle
        gc.collect(1)
        gc.collect()
        pauses = collector_pauses(window=3600)
        assert passes() >= counted_before + 2  # the two asked for, and any the interpreter ran
        assert pauses.collections["1"] >= 1 and pauses.collections["2"] >= 1
        assert 0 < pauses.max_ms < 60_000 and pauses.p99_ms <= pauses.max_ms
        assert pauses.max_by_generation_ms["2"] > 0 and 0 < pauses.busy_share < 1
        counted_inside = passes()
    gc.collect()  # no block open: not timed
    assert passes() == counted_inside
    assert _time_pass not in gc.callbacks


class _Meter:
    def __init__(self, tokens: int) -> None:
        self.prompt_tokens, self.completion_tokens, self.calls = tokens, tokens, 1


class _LM:
    def __init__(self, tokens: int) -> None:
        self.config = type("Config", (), {"model": "m"})()
        self.meter = _Meter(tokens)


def test_the_cost_meter_is_read_while_sessions_change_it_from_another_thread() -> None:
    meter, errors, sessions = CostMeter(), [], 20_000

    def sessions_thread() -> None:
        for n in range(sessions):
            meter.track(n, {"agent": _LM(1)})  # type: ignore[dict-item]
            meter.settle(n, {"m": TokenCount(prompt_tokens=1, completion_tokens=1, calls=1)})

    worker = threading.Thread(target=sessions_thread)
    worker.start()
    seen = [0]
    while worker.is_alive():
        try:
            total = meter.totals().get("m")
        except Exception as error:  # noqa: BLE001 - collected and reported below
            errors.append(error)
            continue
        seen.append(total.calls if total else 0)
    worker.join()
    assert errors == []
    # Each reading is of one moment: a session settling meanwhile is counted once (live or
    # settled), so the count never goes back.
    assert all(a <= b for a, b in itertools.pairwise(seen)) and seen[-1] <= sessions
    assert meter.totals()["m"].calls == sessions
