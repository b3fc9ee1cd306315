"""Invoking the agent on the person's selected text (Cocoa §4.1.1): a message with a
``selection`` reaches the chat, the log and the agent's prompt, with the whole document in view.

The collaborative agent runs through our real LM client (over aiohttp) against the loopback
OpenAI-compatible server; the session is a real coordinator on NotesEnv, whose ``editor`` is a
shared text.
"""

from __future__ import annotations

from typing import Any

import pytest

from cogym_lab.agents import CollaborativeAgent
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.core.text import clean_text
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes.restore import replay_events
from tests.support.hostile import NASTY
from tests.support.notes_env import NotesEnv
from tests.support.notified import notified

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="person")]
pytestmark = pytest.mark.usefixtures("no_ambient_lm")

# A document longer than a component's usual prompt share (6000 characters), its end far past it.
DOCUMENT = ("Notes on interactive feedback.\n" + "Background words. " * 700
            + "\nWhat are new ways AI agents can elicit human feedback?\nTHE-LAST-LINE")
QUESTION = "What are new ways AI agents can elicit human feedback?"


def _selection(text: str = DOCUMENT, selected: str = QUESTION) -> dict[str, Any]:
    start = text.index(selected)
    return {"component": "editor", "text": selected, "start": start, "end": start + len(selected)}


async def test_the_agents_request_holds_the_selection_and_the_whole_document(server) -> None:
    agent = CollaborativeAgent(make_lm(LMConfig(model="agent-lm", base_url=server.base_url,
                                                api_key="sk-test", backoff=0.01)),
                               use_scratchpad=False)
    coordinator = Coordinator(NotesEnv(), TEAM, session_id="ask")
    first = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}["agent"]
    agent.start(first.context)
    wrote = coordinator.handle("user", {"name": "WRITE", "args": {"text": DOCUMENT}}, 1.0)
    notified(coordinator, wrote)
    asked = coordinator.handle("user", {"name": "SEND_TEAMMATE_MESSAGE", "args": {
        "message": "Make this a plan, please", "selection": _selection()}}, 2.0)
    assert asked.events[0].status == "ok", asked.events[0].error
    notification = {n.recipient: n for n in notified(coordinator, asked)}["agent"]
    assert notification.new_messages[-1].selection is not None
    server.extend(['Thought: a plan.\nAction: POST(note="plan")'])
    assert await agent.act(notification) == 'POST(note="plan")'
    prompt = "\n".join(m["content"] for m in server.bodies[-1]["messages"])
    assert "Make this a plan, please" in prompt
    assert (f"user selected this text in editor, characters {_selection()['start']} to "
            f"{_selection()['end']}: \"{QUESTION}\"") in prompt
    assert "the whole editor is in your view" in prompt
    assert "THE-LAST-LINE" in prompt and DOCUMENT in prompt  # the whole document, not its head


@pytest.mark.parametrize("selected", [*NASTY[:8], "<b>bold</b>", "x" * 1_000_000])
def test_a_hostile_selection_is_kept_logged_and_replayed(selected: str) -> None:
    coordinator = Coordinator(NotesEnv(), TEAM, session_id="ask")
    events = list(coordinator.start(0.0).events)
    selection = {"component": "editor", "text": selected, "start": 0, "end": len(selected)}
    transition = coordinator.handle("user", {"name": "SEND_TEAMMATE_MESSAGE", "args": {
        "message": "about this", "selection": selection}}, 1.0)
    events += transition.events
    event = transition.events[0]
    assert event.status == "ok" and event.type is EventType.MESSAGE, event.error
    kept = coordinator.snapshot()["chat"][-1]["selection"]
    assert kept["text"] == clean_text(selected)
    fresh = Coordinator(NotesEnv(), TEAM, session_id="ask")
    for _ in replay_events(fresh, events):
        pass
    assert fresh.snapshot()["chat"] == coordinator.snapshot()["chat"]


@pytest.mark.parametrize(("selection", "match"), [
    ({"component": "editor", "text": "", "start": 0, "end": 0}, "text"),
    ({"component": "editor", "text": "a", "start": 5, "end": 2}, "end comes after its start"),
    ({"component": "", "text": "a", "start": 0, "end": 1}, "component"),
    ({"component": "editor", "text": "a", "start": -1, "end": 1}, "start"),
    ({"text": "a", "start": 0, "end": 1}, "component"),
    ("just text", "must be object"),
])
def test_a_malformed_selection_is_refused_and_nothing_is_said(selection, match) -> None:
    coordinator = Coordinator(NotesEnv(), TEAM, session_id="ask")
    coordinator.start(0.0)
    event = coordinator.handle("user", {"name": "SEND_TEAMMATE_MESSAGE", "args": {
        "message": "about this", "selection": selection}}, 1.0).events[0]
    assert event.status == "error" and match in (event.error or ""), event.error
    assert coordinator.snapshot()["chat"] == []
