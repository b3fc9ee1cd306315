"""The event log as the source of truth: hostile text at the boundary, the one log reader, what
happens when the log cannot be written (an unencodable event, a full disk), and the cleanup of a
finished session's Redis streams. See ``docs/event-log.md``."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.bus import Bus
from cogym_lab.bus.redis import KEY_PREFIX, RedisBus
from cogym_lab.cli.main import main as cli
from cogym_lab.core import ActionOutcome, action
from cogym_lab.core.jsonl import LogReadError, read_jsonl
from cogym_lab.core.messages import EventType, StepRequest, obs_channel, step_channel
from cogym_lab.core.text import REPLACEMENT, is_clean
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import Session, SessionConfig, replay
from cogym_lab.nodes.results import EVENTS_FILE, read_events, read_session
from cogym_lab.records.trajectory import load_session
from tests.support.paths import REPO_ROOT
from tests.support.teammates import AGENT, AGENT_AND_USER, Recorder

REPO = REPO_ROOT


async def run_with_person(make_bus: Any, session: Session, steps: list[Any],
                          person: str = "user") -> tuple[Any, list[dict[str, Any]]]:
    """Run ``session`` with ``person`` acting over the bus: join, send ``steps`` one at a time
    (each once the previous one was answered), then wait for the end. Returns the result and
    everything the person was sent."""
    running = asyncio.create_task(session.run())
    person_bus: Bus = await make_bus()
    inbox = await person_bus.subscribe(obs_channel(session.session_id, person))
    received: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        message = await inbox.get(10)
        assert message is not None, "the person heard nothing"
        received.append(message)
        return message

    await person_bus.publish(step_channel(session.session_id),
                             StepRequest(role=person, kind="join").model_dump())
    await receive()
    for step in steps:
        request = StepRequest(role=person, action=step)
        await person_bus.publish(step_channel(session.session_id), request.model_dump())
        while not (await receive())["done"]:
            if received[-1]["event"]["request_id"] == request.id:
                break
        if received[-1]["done"]:
            break
    result = await asyncio.wait_for(running, 20)
    await inbox.close()
    return result, received


# -- the text policy at the boundary -----------------------------------------------------------

HOSTILE_STEPS: list[Any] = [
    'ADD_ITEM(text="tent \ud83d")',  # a lone surrogate, as a JSON body's "\ud83d" leaves it
    'ADD_ITEM(text="map \\ud83d")',  # the same as an escape, which the grammar decodes
    'SEND_TEAMMATE_MESSAGE(message="smile \\ud83d\\ude00")',  # a pair in two escapes
    {"name": "ADD_ITEM", "args": {"text": "cup a\ud800b"}},
    {"name": "ADD_ITEM", "args": "not \udc00 json"},  # refused, logged with its text cleaned
    "FINISH()",
]


async def test_a_lone_surrogate_is_cleaned_logged_and_replayed(bus_factory, tmp_path):
    session = Session(TodoEnv(), {"user": None}, kinds={"user": "person"}, bus=await bus_factory(),
                      session_id="text-" + uuid.uuid4().hex[:6], results_dir=tmp_path)
    result, received = await run_with_person(bus_factory, session, HOSTILE_STEPS)

    assert result.end_reason == "finished"
    assert result.outcome == [f"tent {REPLACEMENT}", f"map {REPLACEMENT}",
                              f"cup a{REPLACEMENT}b"]
    meta = read_session(tmp_path)
    assert meta["status"] == "finished" and meta["final_state"]["outcome"] == result.outcome
    events = read_events(tmp_path)
    assert [e.seq for e in events] == list(range(1, result.events + 1))  # none missing
    raw_log = (tmp_path / EVENTS_FILE).read_text(encoding="utf-8")
    assert is_clean(raw_log) and "\\ud83d" not in raw_log.replace("\\\\", "")
    assert [m["text"] for m in meta["final_state"]["chat"]] == ["smile 😀"]
    refused = next(e for e in events if e.type is EventType.ERROR)
    assert refused.info["structured"] and REPLACEMENT in refused.action
    assert replay(tmp_path).final_state == meta["final_state"]
    assert received[-1]["end_reason"] == "finished"  # every notification made it across


class Notes(TodoEnv):
    """TodoEnv with an action whose own output holds text no UTF-8 file can take: what the text
    policy at the boundary cannot catch, since the env makes it."""

    @action("Add a note that the env decorates badly.", text="The note")
    def bad_note(self, role: str, text: str) -> ActionOutcome:
        self.add_item(role, text)
        return ActionOutcome(info={"decoration": "\udcff"})


async def test_an_event_the_log_cannot_take_ends_the_session_there(bus_factory, tmp_path):
    session = Session(Notes(), {"user": None}, kinds={"user": "person"}, bus=await bus_factory(),
                      session_id="unlogged-" + uuid.uuid4().hex[:6], results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=30))
    result, received = await run_with_person(bus_factory, session, [
        'ADD_ITEM(text="tent")', 'BAD_NOTE(text="map")'])

    assert result.end_reason == "log_failed" and not result.delivered
    meta = read_session(tmp_path)
    assert meta["status"] == "failed" and meta["end_reason"] == "log_failed"
    assert "event 3" in meta["error"] and "surrogates not allowed" in meta["error"]
    assert meta["logged_events"] == 2 and "final_state" not in meta
    # The log is whole up to the last event it took, and still replays.
    assert [e.type for e in read_events(tmp_path)] == [EventType.START, EventType.ACTION]
    assert replay(tmp_path).final_state["outcome"] == ["tent"]
    # The unlogged event was never published; the END that followed it was.
    types = [m["event"]["type"] for m in received]
    assert types == ["start", "action", "end"] and received[-1]["end_reason"] == "log_failed"


def test_a_full_device_ends_the_session_with_session_json_saying_why(tmp_path):
    """``/dev/full`` answers every write with ENOSPC, as a full disk does."""
    (tmp_path / EVENTS_FILE).symlink_to("/dev/full")
    agent = Recorder(['ADD_ITEM(text="tent")', "FINISH()"])
    result = Session(TodoEnv(), {"agent": agent}, kinds=AGENT, results_dir=tmp_path).run_sync()

    assert result.end_reason == "log_failed"
    meta = read_session(tmp_path)
    assert meta["status"] == "failed" and meta["logged_events"] == 0
    assert "event 1 (start)" in meta["error"] and "No space left on device" in meta["error"]
    assert agent.final is not None and agent.final.end_reason == "log_failed"
    assert agent.seen == []  # it was never told the session started: that was not logged


FILE_SIZE_LIMIT = 6000

FULL_DISK_SCRIPT = textwrap.dedent(f"""
    import resource, signal, sys
    from cogym_lab.envs.todo import TodoEnv
    from cogym_lab.nodes import Session
    from tests.support.teammates import AGENT_AND_USER, Counter, Finisher

    # Past the limit a write fails with EFBIG (once SIGXFSZ no longer kills the process), the
    # way it fails with ENOSPC on a full disk, and it may first write part of a line.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_SIZE_LIMIT}, {FILE_SIZE_LIMIT}))
    result = Session(TodoEnv(min_items=60), {{"agent": Counter(60, think=0),
                                              "user": Finisher(60)}},
                     kinds=AGENT_AND_USER, results_dir=sys.argv[1]).run_sync()
    print("ENDED", result.end_reason)
""")


def test_a_file_size_limit_mid_session_leaves_whole_lines_and_no_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-c", FULL_DISK_SCRIPT, str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ENDED log_failed" in done.stdout and "Traceback" not in done.stderr
    log = (tmp_path / EVENTS_FILE).read_bytes()
    assert 0 < len(log) <= FILE_SIZE_LIMIT and log.endswith(b"\n")  # no torn tail
    events = read_events(tmp_path)
    assert len(events) == log.count(b"\n") and events[-1].seq == len(events)
    meta = read_session(tmp_path)
    assert meta["status"] == "failed" and meta["end_reason"] == "log_failed"
    assert "File too large" in meta["error"] and meta["logged_events"] == len(events)
    assert replay(tmp_path).final_state["seq"] == len(events)


# -- the one log reader ---------------------------------------------------------------------------

LINE_BREAKS = "pasted\u2028from\u2029a PDF\x85and\x0bmore\x0c\x1c\x1d\x1e\r"


def finished_session(directory: Path) -> Session:
    user = Recorder([f"SEND_TEAMMATE_MESSAGE(message={json.dumps(LINE_BREAKS)})",
                     'ADD_ITEM(text="tent")', "FINISH()"])
    session = Session(TodoEnv(), {"agent": Recorder([]), "user": user}, kinds=AGENT_AND_USER,
                      results_dir=directory)
    session.run_sync()
    return session


def test_unicode_line_breaks_in_a_message_split_no_event(tmp_path):
    session = finished_session(tmp_path)
    raw_log = (tmp_path / EVENTS_FILE).read_text(encoding="utf-8")
    assert "\u2028" in raw_log and "\x85" in raw_log  # written raw inside a JSON string

    events = read_events(tmp_path)
    assert len(events) == session.coordinator.seq
    assert replay(tmp_path).final_state == read_session(tmp_path)["final_state"]
    record = load_session(tmp_path)
    assert [m.text for m in record.messages] == [LINE_BREAKS]  # evaluation drops nothing
    assert len(record.events) == len(events)
    replayed = CliRunner().invoke(cli, ["replay", str(tmp_path)])
    assert replayed.exit_code == 0 and f"Replayed {len(events)} events." in replayed.output


def test_a_log_torn_inside_a_utf8_character_is_read_to_its_last_whole_line(tmp_path, caplog):
    session = finished_session(tmp_path)
    whole = read_events(tmp_path)
    with (tmp_path / EVENTS_FILE).open("ab") as log:
        log.write('{"seq": 99, "type": "action", "action": "ADD_ITEM(text=\\"caf'.encode()
                  + "é".encode()[:1])  # cut inside the two bytes of "é"

    with caplog.at_level(logging.WARNING, logger="cogym_lab.core.jsonl"):
        assert read_events(tmp_path) == whole
    line = len(whole) + 1
    assert f"{tmp_path / EVENTS_FILE}, line {line}" in caplog.text and "no newline" in caplog.text

    assert len(replay(tmp_path).events) == session.coordinator.seq
    runner = CliRunner()
    for command in (["replay", str(tmp_path)], ["eval", "show", str(tmp_path)],
                    ["eval", "report", str(tmp_path)]):
        outcome = runner.invoke(cli, command)
        assert outcome.exit_code == 0, (command, outcome.output, outcome.exception)


def test_a_bad_line_before_the_last_is_an_error_that_names_file_and_line(tmp_path):
    finished_session(tmp_path)
    path = tmp_path / EVENTS_FILE
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:-5] + b"\xff\xfe"  # damage line 3: no torn write does that
    path.write_bytes(b"\n".join(lines))

    with pytest.raises(LogReadError, match=re.escape(f"{path}, line 3: not UTF-8")):
        read_events(tmp_path)
    with pytest.raises(LogReadError, match="line 3"):
        load_session(tmp_path)
    for command in (["replay", str(tmp_path)], ["eval", "show", str(tmp_path)]):
        outcome = CliRunner().invoke(cli, command)
        assert outcome.exit_code == 1 and "line 3" in outcome.output, outcome.output


def test_the_reader_splits_on_newlines_only_and_skips_blank_lines(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"a": "x\xe2\x80\xa8y"}\n\n{"a": "\xc2\x85"}\r\n  \n')
    assert read_jsonl(path) == [{"a": "x\u2028y"}, {"a": "\x85"}]
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "missing.jsonl")


# -- Redis streams of a finished session ---------------------------------------------------------

async def session_keys(bus: RedisBus, session_id: str) -> list[bytes]:
    return await bus._admin.keys(f"{KEY_PREFIX}{session_id}/*")  # type: ignore[union-attr]


async def test_a_finished_sessions_redis_streams_expire(redis_server, tmp_path):
    env_bus = RedisBus(redis_server.url, publish_timeout=15)
    person_bus = RedisBus(redis_server.url, publish_timeout=15)
    await env_bus.connect()
    await person_bus.connect()
    session_id = "expiring-" + uuid.uuid4().hex[:6]
    agent = Recorder(['SEARCH_IDEAS(trip="beach")', 'ADD_ITEM(text="hat")', None])
    session = Session(TodoEnv(), {"agent": agent, "user": None},
                      kinds={"agent": "agent", "user": "person"},
                      bus=env_bus, session_id=session_id, results_dir=tmp_path,
                      config=SessionConfig(channel_ttl=0.5, idle_seconds=0.3, max_idle_ticks=0))
    try:
        await person_bus.publish(step_channel(session_id),
                                 StepRequest(role="user", kind="join").model_dump())
        result = await asyncio.wait_for(session.run(), 30)
        assert result.end_reason == "idle"
        keys = {key.decode() for key in await session_keys(env_bus, session_id)}
        # the steps and both members' notifications, the agent's private search among them
        assert {KEY_PREFIX + step_channel(session_id),
                KEY_PREFIX + obs_channel(session_id, "agent"),
                KEY_PREFIX + obs_channel(session_id, "user")} <= keys
        for key in keys:
            assert 0 < await env_bus._admin.pttl(key) <= 500  # type: ignore[union-attr]

        # A straggler published after the end gets the same expiry, not eternity.
        await env_bus.publish(obs_channel(session_id, "user"), {"late": True})
        assert 0 < await env_bus._admin.pttl(  # type: ignore[union-attr]
            KEY_PREFIX + obs_channel(session_id, "user")) <= 500
        while await session_keys(env_bus, session_id):
            await asyncio.sleep(0.05)
    finally:
        await env_bus.close()
        await person_bus.close()
