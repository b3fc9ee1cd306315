"""A member's notification channel on Redis keeps only its last few entries (``MAXLEN ~``), and
that loses nothing a member needs: one that fell behind the trimmed history sees a gap and gets
the whole current state from a sync, and one that joins late gets it when it asks.

A real ``redis-server`` (the fixture starts one), a real session (the notes task, whose editor a
person's ``WRITE`` replaces whole) and the member's own copy (:class:`MemberCopy`), as a member
node keeps it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis.asyncio as redis
from pydantic_core import from_json

from cogym_lab.bus.redis import KEY_PREFIX, RedisBus
from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import StepRequest, Update, obs_channel, resyncs, step_channel
from cogym_lab.nodes import SessionConfig
from tests.support.notes_sessions import notes_session, running
from tests.support.redis_server import redis_server  # noqa: F401 - a fixture

MAXLEN = 8
EDITS = 40
#: Text a person may type: quotes, backslashes, markup, right-to-left and joined emoji, and
#: each edit above a stream node's 4 KB, so that Redis trims entries one by one.
HOSTILE = 'say "hi" \\n </script> \u202eevil\u202c 👩‍👩‍👧 ' * 60


def text_of(version: int) -> str:
    return f"version {version}\n{HOSTILE}"


def editor(copy: MemberCopy) -> Any:
    return next(c.content for c in copy.view.components if c.name == "editor")


async def read_update(subscription: Any) -> Update:
    message = await subscription.get(timeout=30)
    assert message is not None, "no update within 30 s"
    return Update.model_validate(message)


def test_only_notification_channels_resync() -> None:
    assert resyncs(obs_channel("s", "user"))
    assert not resyncs(step_channel("s")) and not resyncs("s/status")


async def test_a_member_behind_a_trimmed_stream_resyncs_to_the_whole_text(
        redis_server) -> None:  # noqa: F811 - the fixture
    bus = RedisBus(redis_server.url, resync_maxlen=MAXLEN)
    client = redis.from_url(redis_server.url)
    await bus.connect()
    session = notes_session(bus, f"trim-{time.time_ns()}",
                            SessionConfig(idle_seconds=600, max_events=10**6))
    sid = session.session_id
    key = KEY_PREFIX + obs_channel(sid, "user")
    seat = await bus.subscribe(obs_channel(sid, "user"))
    async with running(session, bus.close, client.aclose):
        await bus.publish(step_channel(sid), StepRequest(role="user", kind="join"))
        behind = MemberCopy("user")
        while behind.seq is None or not behind.view.components:  # the whole view, at the start
            behind.apply(await read_update(seat))
        await seat.close()  # from here on, this member reads nothing: it falls behind
        held = behind.seq
        last_read = next(entry_id for entry_id, fields in await client.xrange(key)
                         if Update.model_validate(from_json(fields[b"data"])).seq == held)
        start = session.coordinator.seq

        previous = ""
        for version in range(1, EDITS + 1):
            text = text_of(version)
            await bus.publish(step_channel(sid), StepRequest(
                role="user", base=previous, action={"name": "WRITE", "args": {"text": text}}))
            previous = text
            while session.coordinator.seq < start + version:  # noqa: ASYNC110 - no event for it
                await asyncio.sleep(0.005)

        # Bounded: the stream kept its last few entries, not the forty whole texts.
        length = await client.xlen(key)
        assert length <= MAXLEN + 1, length
        assert await client.xlen(KEY_PREFIX + obs_channel(sid, "agent")) <= MAXLEN + 1

        # The member reads on from where it stopped, as its bus's XREAD would: what is left
        # does not follow what it holds.
        reply = await client.xread({key: last_read}, count=1000)
        entries = [Update.model_validate(from_json(fields[b"data"]))
                   for _, items in reply for _, fields in items]
        assert entries and entries[0].seq > held + 1
        with pytest.raises(OutOfSync):
            for update in entries:
                behind.apply(update)

        # So it asks for a sync, as a member node does, and the whole update brings it level.
        again = await bus.subscribe(obs_channel(sid, "user"))
        await bus.publish(step_channel(sid), StepRequest(role="user", kind="sync"))
        while not (update := await read_update(again)).whole:
            pass
        behind.apply(update)
        assert editor(behind) == text_of(EDITS)
        assert behind.seq == session.coordinator.seq
        await again.close()

        # A panel that connects only now gets it too (subscribe, then sync).
        late = await bus.subscribe(obs_channel(sid, "user"))
        await bus.publish(step_channel(sid), StepRequest(role="user", kind="sync"))
        joined = MemberCopy("user")
        while joined.seq is None:
            update = await read_update(late)
            if update.whole:
                joined.apply(update)
        assert editor(joined) == text_of(EDITS)
        await late.close()
