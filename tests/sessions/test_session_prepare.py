"""The env's slow set-up (`CoEnv.prepare`) runs in a worker thread before the first step, while
the event loop goes on serving; the panels hear how far it got on the status channel; a
related-work session opens the process's one shared index."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.core.messages import SetupStatus, status_channel
from cogym_lab.core.progress import ProgressListener, ProgressMeter
from cogym_lab.datasets import CHOOSE_ANOTHER_DIR, DataMissing
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.related_work.index_process import build_in_child
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from tests.support.teammates import Finisher


class SlowToPrepare(TodoEnv):
    """Set-up that can only finish when the event loop runs a coroutine meanwhile: on the loop,
    it would wait for itself until its deadline."""

    def __init__(self) -> None:
        super().__init__()
        self.loop_ran = threading.Event()
        self.prepared_in: int | None = None
        self.reset_before_prepared = False

    def prepare(self, progress: ProgressListener) -> None:
        self.prepared_in = threading.get_ident()
        meter = ProgressMeter("Loading the lists", {"reading": 1.0}, listener=progress,
                              interval=0.0)
        with meter.phase("reading", total=2) as advance:
            advance(1)
            self.loop_ran.wait(timeout=20)
            advance(1)
        meter.finish()

    def _reset(self, seed: int | None) -> None:
        self.reset_before_prepared = self.prepared_in is None
        super()._reset(seed)


async def test_prepare_runs_off_the_loop_and_reports_its_progress_before_the_first_step():
    env = SlowToPrepare()
    bus = MemoryBus()
    session = Session(env, {"user": Finisher(0)}, bus=bus,
                      config=SessionConfig(timeout=30))
    await bus.connect()
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)

    async def the_loop_serves_meanwhile() -> None:
        await asyncio.sleep(0.05)
        env.loop_ran.set()

    result, _ = await asyncio.gather(session.run(), the_loop_serves_meanwhile())
    assert env.loop_ran.is_set() and env.prepared_in != threading.get_ident()
    assert not env.reset_before_prepared
    assert result.end_reason is not None

    setup = []
    async for message in statuses:
        if "setup" in message:
            setup.append(SetupStatus.model_validate(message))
        if setup and setup[-1].setup is None:
            break
    fractions = [s.setup.fraction for s in setup if s.setup is not None]
    assert fractions[0] == 0.0 and 0.5 in fractions and fractions[-1] == 1.0
    assert {s.setup.task for s in setup if s.setup} == {"Loading the lists"}
    assert setup[-1].setup is None  # the panels hide the bar: set-up is over
    await bus.close()


async def test_a_task_with_nothing_to_prepare_sends_no_setup_status():
    bus = MemoryBus()
    session = Session(TodoEnv(), {"user": Finisher(0)}, bus=bus,
                      config=SessionConfig(timeout=30))
    await bus.connect()
    await session.run()
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)
    seen = []
    try:
        async with asyncio.timeout(0.5):
            async for message in statuses:
                seen.append(message)
    except TimeoutError:
        pass
    assert not [m for m in seen if "setup" in m]
    await bus.close()


def test_related_work_sessions_share_one_index_built_once(use_shared_data: Path,
                                                          tmp_path: Path) -> None:
    reports: list = []
    first = RelatedWorkEnv(instance=0, index_limit=300, index_cache=str(tmp_path))
    first.prepare(reports.append)
    built = len(reports)
    second = RelatedWorkEnv(instance=1, index_limit=300, index_cache=str(tmp_path))
    second.prepare(reports.append)
    assert first.search is second.search  # one open index, not a copy per session
    assert len(reports) == built  # the second only opened it: nothing to report
    assert first.search.is_built(first.search.folder)
    assert {"reading papers", "tokenizing", "computing BM25 weights"} <= {r.phase
                                                                         for r in reports}
    assert reports[-1].fraction == 1.0
    assert [r.fraction for r in reports] == sorted(r.fraction for r in reports)


def test_a_failed_build_in_the_child_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "papers.jsonl.gz"
    broken.write_bytes(b"this is not gzip")
    with pytest.raises(RuntimeError, match="Building the paper index failed") as failure:
        build_in_child((broken,), tmp_path / "cache", None)
    assert "JSONDecodeError" in str(failure.value)  # the child's own last words


class FailsToPrepare(TodoEnv):
    def prepare(self, progress: ProgressListener) -> None:
        meter = ProgressMeter("Loading the lists", {"reading": 1.0}, listener=progress)
        with meter.phase("reading", total=2) as advance:
            advance(1)
            raise OSError("the lists are on a disk that went away")


async def test_a_failed_set_up_takes_the_bar_away_and_says_why():
    bus = MemoryBus()
    session = Session(FailsToPrepare(), {"user": Finisher(0)}, bus=bus,
                      config=SessionConfig(timeout=30))
    await bus.connect()
    with pytest.raises(OSError, match="went away"):
        await session.run()
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)
    setup = []
    async for message in statuses:
        setup.append(SetupStatus.model_validate(message))
        if setup[-1].setup is None:
            break
    assert setup[0].setup is not None and setup[-1].setup is None
    assert setup[-1].error == ("The session could not be set up: the lists are on a disk that "
                               "went away")
    await bus.close()


class CorpusGone(TodoEnv):
    def prepare(self, progress: ProgressListener) -> None:
        raise DataMissing("The corpus is missing.\n" + CHOOSE_ANOTHER_DIR)


async def test_missing_data_at_set_up_gives_advice_for_a_notebook(tmp_path: Path):
    bus = MemoryBus()
    session = Session(CorpusGone(), {"user": Finisher(0)}, bus=bus,
                      config=SessionConfig(timeout=30))
    session.spec = SimpleNamespace(origin="notebook", data_dir=str(tmp_path))
    await bus.connect()
    with pytest.raises(DataMissing):
        await session.run()
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)
    async for message in statuses:
        failed = SetupStatus.model_validate(message)
        break
    assert failed.error and "%cogym config data_dir=" in failed.error
    assert "--data-dir" not in failed.error and "COGYM_DATA environment" not in failed.error
    await bus.close()
