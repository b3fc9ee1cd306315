"""The step channel on Redis holds only the steps the env node has not logged yet.

A real ``redis-server`` (the fixture starts one, without persistence), a real session of the
notes task (its editor a whole text that ``WRITE`` replaces) with a member node for the agent,
and a second bus publishing a person's whole-text edits, as the Jupyter server does. The edits
carry hostile text: lone surrogates, U+2028, NUL, right-to-left marks, a 1 MB document.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from cogym_lab.bus.redis import KEY_PREFIX, RedisBus
from cogym_lab.core.messages import Event, StepRequest, step_channel
from cogym_lab.core.text import clean_text
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from tests.support.notes_sessions import notes_session, running, started
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(180)

#: Mixed into every edit: what broke a transport or a log once.
NASTY = "\ud83d lone \udc00 \u2028 line \u2029 nul \x00 \u202eevil\u202c 👩‍👩‍👧 \"q\" \\ "


def document(version: int, size: int = 100_000) -> str:
    """A whole document of about ``size`` characters, different at every version."""
    body = f"version {version} {NASTY}"
    return (body * (size // len(body) + 1))[:size]


class Person:
    """A person's seat on its own bus (the Jupyter server's): whole-text edits, each based on
    the text it last sent, with a request id of its own."""

    def __init__(self, bus: RedisBus, session_id: str) -> None:
        self.bus = bus
        self.channel = step_channel(session_id)
        self.previous = ""
        self.sent: list[str] = []

    async def join(self) -> None:
        await self.bus.publish(self.channel, StepRequest(role="user", kind="join"))

    async def edit(self, text: str) -> str:
        request = StepRequest(role="user", base=self.previous,
                              action={"name": "WRITE", "args": {"text": text}})
        await self.bus.publish(self.channel, request)
        self.previous = text
        self.sent.append(request.id)
        return request.id


def session_on(bus: RedisBus, session_id: str, logged: list[Event],
               results_dir: Path | None = None) -> Session:
    return notes_session(bus, session_id,
                         SessionConfig(idle_seconds=600, max_events=10**6, channel_ttl=None),
                         results_dir=results_dir, observers=[logged.append])


async def applied(logged: list[Event], request_id: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not any(e.request_id == request_id for e in logged):  # noqa: ASYNC110
            await asyncio.sleep(0.002)


def applied_once(logged: list[Event], sent: list[str]) -> None:
    """Every request sent is in the log exactly once, in the order sent."""
    counts = Counter(e.request_id for e in logged if e.request_id)
    assert {rid: n for rid, n in counts.items() if n > 1} == {}
    assert [e.request_id for e in logged if e.request_id in set(sent)] == sent


async def test_the_step_stream_stays_small_over_a_long_session_of_whole_text_edits(
        redis_server: RedisServer) -> None:
    session_bus = RedisBus(redis_server.url, trim_interval=0.05)
    server_bus = RedisBus(redis_server.url)
    client: Any = redis.from_url(redis_server.url)
    logged: list[Event] = []
    session = session_on(session_bus, f"trim-long-{time.time_ns()}", logged)
    key = KEY_PREFIX + step_channel(session.session_id)
    person = Person(server_bus, session.session_id)
    lengths = []
    async with running(session, client.aclose, server_bus.close, session_bus.close):
        await person.join()
        await started(session)
        edits = [document(v) for v in range(150)] + [document(150, 1_000_000)]
        for text in edits:
            await applied(logged, await person.edit(text))
            lengths.append(await client.xlen(key))
        await asyncio.sleep(0.3)  # the last batched trim
        left = [fields[b"data"][:200] for _, fields in await client.xrange(key)]
        assert left == []
        # Without the trims the stream held every edit (stream_maxlen is 10,000).
        assert max(lengths) <= 20, lengths
        assert session.env.text == clean_text(edits[-1])  # type: ignore[attr-defined]
        applied_once(logged, person.sent)
        # The person's publisher keeps a few MiB of its edits, not 1,024 of them.
        buffer = server_bus._replay[person.channel]
        assert buffer.size <= server_bus.replay_bytes + 1_100_000
        assert len(buffer) < 50


async def test_a_redis_restart_mid_session_loses_no_edit_and_applies_none_twice(
        redis_server: RedisServer) -> None:
    """Trimmed edits come back with the publisher's re-publish: the env drops them by ``mid``
    and request id; the edits the server lost before the env read them are applied once."""
    session_bus = RedisBus(redis_server.url, publish_timeout=30)
    server_bus = RedisBus(redis_server.url, publish_timeout=30)
    logged: list[Event] = []
    session = session_on(session_bus, f"trim-restart-{time.time_ns()}", logged)
    person = Person(server_bus, session.session_id)
    async with running(session, server_bus.close, session_bus.close):
        await person.join()
        await started(session)
        for version in range(20):
            await applied(logged, await person.edit(document(version, 20_000)))
        await asyncio.sleep(0.2)  # trimmed by now
        for version in range(20, 25):  # some read and applied, some maybe not
            await person.edit(document(version, 20_000))
        await asyncio.to_thread(redis_server.kill)
        await asyncio.sleep(0.3)
        await asyncio.to_thread(redis_server.start)
        for version in range(25, 40):
            last = await person.edit(document(version, 20_000))
        await applied(logged, last, timeout=60)
        await asyncio.sleep(0.5)  # a late duplicate would show now
        applied_once(logged, person.sent)
        assert session.env.text == clean_text(document(39, 20_000))  # type: ignore[attr-defined]


async def test_a_resumed_session_applies_the_unlogged_edits_once(
        redis_server: RedisServer) -> None:
    """Edits sent while the session was down are still in the stream (nothing logged them);
    the logged ones were trimmed, and the resumed env never applies them again."""
    client: Any = redis.from_url(redis_server.url)
    session_id = f"trim-resume-{uuid.uuid4().hex[:8]}"
    key = KEY_PREFIX + step_channel(session_id)
    results = Path(tempfile.mkdtemp(prefix="cogym-trim-resume-")) / session_id
    server_bus = RedisBus(redis_server.url)
    person = Person(server_bus, session_id)
    try:
        first_bus = RedisBus(redis_server.url, trim_interval=0.02)
        logged: list[Event] = []
        first = session_on(first_bus, session_id, logged, results)
        first_run = asyncio.create_task(first.run())
        await person.join()
        await started(first)
        for version in range(10):
            await applied(logged, await person.edit(document(version)))
        await asyncio.sleep(0.2)
        await first.interrupt("server shut down")
        await first_run
        await first_bus.close()
        assert await client.xlen(key) == 0  # everything it read was logged, and trimmed
        while_down = [await person.edit(document(version)) for version in range(10, 14)]
        assert await client.xlen(key) == 4

        second_bus = RedisBus(redis_server.url)
        relogged: list[Event] = []
        second = session_on(second_bus, session_id, relogged, results)
        second.restore(read_events(results))
        async with running(second, second_bus.close):
            await person.join()  # the host joins its person seats again when it resumes
            await applied(relogged, while_down[-1])
            after = await person.edit(document(14))
            await applied(relogged, after)
        everything = read_events(results)
        applied_once(everything, person.sent)
        assert second.env.text == clean_text(document(14))  # type: ignore[attr-defined]
    finally:
        await client.aclose()
        await server_bus.close()
