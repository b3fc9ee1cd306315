"""Session ids are unique, and a bus refuses a session id whose channels already hold history.

A reused id used to start a session on top of the old run's streams: its env node reads the step
channel from the beginning and applied the old run's steps again."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cogym_lab.bus import Bus, SessionIdTaken
from cogym_lab.bus.redis import RedisBus
from cogym_lab.envs.todo import ExampleAgent, ExampleUser, TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.nodes.session import new_session_id
from tests.support.buses import BusFactory
from tests.support.redis_server import RedisServer
from tests.support.teammates import AGENT_AND_USER


def todo_session(bus: Bus, session_id: str, results_dir: Path) -> Session:
    return Session(TodoEnv(), {"agent": ExampleAgent(), "user": ExampleUser()},
                   kinds=AGENT_AND_USER, bus=bus, session_id=session_id,
                   results_dir=results_dir, config=SessionConfig(idle_seconds=2, timeout=30))


async def test_reused_id_on_redis_is_refused_and_replays_nothing(redis_server: RedisServer,
                                                                 tmp_path: Path) -> None:
    """Two sessions with one id on one Redis, one after the other (as a re-run batch did)."""
    session_id = "reused-" + uuid.uuid4().hex[:6]
    async with RedisBus(redis_server.url) as bus:
        first = await todo_session(bus, session_id, tmp_path / "first").run()
    assert first.end_reason == "finished"
    async with RedisBus(redis_server.url) as bus:  # another process, as a second batch would be
        with pytest.raises(SessionIdTaken, match=session_id):
            await todo_session(bus, session_id, tmp_path / "second").run()
    assert not (tmp_path / "second" / "events.jsonl").exists()  # it wrote nothing at all
    assert [e.seq for e in read_events(tmp_path / "first")] == list(range(1, first.events + 1))


async def test_reused_id_is_refused_on_every_bus(bus_factory: BusFactory, tmp_path: Path) -> None:
    session_id = "again-" + uuid.uuid4().hex[:6]
    first = await todo_session(await bus_factory(), session_id, tmp_path / "a").run()
    assert first.end_reason == "finished"
    with pytest.raises(SessionIdTaken, match=session_id):
        await todo_session(await bus_factory(), session_id, tmp_path / "b").run()


async def test_a_resumed_session_takes_its_own_id_back(bus_factory: BusFactory,
                                                       tmp_path: Path) -> None:
    """Resuming is the one legitimate reuse: the session carries on its own log."""
    session_id = "resumed-" + uuid.uuid4().hex[:6]
    bus = await bus_factory()
    first = todo_session(bus, session_id, tmp_path)
    first.config.max_events = 4  # stops early; the log is what a resume rebuilds from
    await first.run()
    again = todo_session(await bus_factory(), session_id, tmp_path)
    again.restore(read_events(tmp_path))
    result = await again.run()
    assert result.session_id == session_id and result.events >= first.coordinator.seq


def test_new_session_ids_do_not_meet_even_in_one_second() -> None:
    ids = {new_session_id() for _ in range(20_000)}
    assert len(ids) == 20_000


def test_each_batch_attempt_at_an_instance_gets_an_id_of_its_own() -> None:
    from cogym_lab.eval.batch.sessions import new_batch_session_id, session_id_prefix

    prefix = session_id_prefix("collaborative", "travel_planning", 2)
    assert prefix == "collaborative-travel_planning-002"  # readable, like its folder OUT/002
    ids = {new_batch_session_id("collaborative", "travel_planning", 2) for _ in range(1000)}
    assert len(ids) == 1000 and all(i.startswith(prefix + "-") for i in ids)
