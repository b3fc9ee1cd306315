"""Each action is parsed once, where it enters the coordinator, and travels on typed: a task
action, an action an agent must have approved, and one a member asks approval for, through to
its acceptance. The text form is written for the log and for prompts only. The same holds for
actions sent through a running EnvNode, on the in-memory bus and on Redis."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

import pytest

import cogym_lab.core.coordinator as coordinator_module
import cogym_lab.core.env as env_module
from cogym_lab.bus import Bus
from cogym_lab.core import Action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.messages import (
    EventType,
    StepRequest,
    TeamMember,
    Update,
    obs_channel,
    step_channel,
)
from cogym_lab.core.settlements import Settlement, settled_channel
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes.env_node import EnvNode
from tests.support.buses import BusFactory
from tests.support.notes_env import NotesEnv
from tests.support.panel_replica import PanelReplica

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]


class AsksFirst(TodoEnv):
    """The example task, set to have a person approve every item an agent adds."""

    def needs_confirmation(self, role: str, action: Action) -> bool:
        return action.name == "ADD_ITEM"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every action text parsed, by the coordinator or the env."""
    seen: list[Any] = []

    def counted(raw: Any, specs: Any) -> Any:
        seen.append(raw)
        return parse_action(raw, specs)

    monkeypatch.setattr(coordinator_module, "parse_action", counted)
    monkeypatch.setattr(env_module, "parse_action", counted)
    return seen


def _errors(transition: Any) -> list[str | None]:
    return [event.error for event in transition.events if event.type is EventType.ERROR]


def test_a_task_action_is_parsed_once(parses: list[Any]) -> None:
    coordinator = Coordinator(TodoEnv(), TEAM, session_id="once")
    coordinator.start(0.0, seed=1)
    done = coordinator.handle("agent", 'ADD_ITEM(text="tent")', 1.0)
    assert _errors(done) == [] and parses == ['ADD_ITEM(text="tent")']
    assert [event.action for event in done.events] == ['ADD_ITEM(text="tent")']


def test_an_action_held_for_approval_is_not_parsed_again_when_accepted(parses) -> None:
    coordinator = Coordinator(AsksFirst(), TEAM, session_id="asks")
    coordinator.start(0.0, seed=1)
    asked = coordinator.handle("agent", 'ADD_ITEM(text="stove")', 1.0)
    assert [event.type for event in asked.events] == [EventType.CONFIRM_REQUEST]
    (request_id,) = coordinator.pending
    accepted = coordinator.handle("user", f'ACCEPT_CONFIRMATION(request_id="{request_id}")', 2.0)
    assert _errors(accepted) == []
    assert coordinator.env.outcome() == ["stove"]
    assert parses == ['ADD_ITEM(text="stove")',
                      f'ACCEPT_CONFIRMATION(request_id="{request_id}")']


def test_a_request_names_its_pending_action_as_text_parsed_once(parses) -> None:
    coordinator = Coordinator(TodoEnv(), TEAM, session_id="request")
    coordinator.start(0.0, seed=1)
    pending = 'ADD_ITEM(text="map")'
    coordinator.handle("agent", f"REQUEST_TEAMMATE_CONFIRM(pending_action={json.dumps(pending)})",
                       1.0)
    (request_id,) = coordinator.pending
    coordinator.handle("user", f'ACCEPT_CONFIRMATION(request_id="{request_id}")', 2.0)
    assert coordinator.env.outcome() == ["map"]
    # the act, the action inside it, and the acceptance: each once
    assert len(parses) == 3 and parses[1] == pending


# -- through a running EnvNode, on both buses -------------------------------------------------

SEATS = [TeamMember(role="agent", kind="agent"), TeamMember(role="person", kind="person")]


@pytest.fixture
def every_parse(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every action parsed anywhere in the package: each module that imported ``parse_action``
    is given the counting one."""
    seen: list[Any] = []

    def counted(raw: Any, specs: Any) -> Any:
        seen.append(raw)
        return parse_action(raw, specs)

    for name, module in list(sys.modules.items()):
        if name.startswith("cogym_lab") and getattr(module, "parse_action", None) is parse_action:
            monkeypatch.setattr(module, "parse_action", counted)
    return seen


class Wire:
    """A session's EnvNode on a bus, driven as the host drives it: step requests in, each
    awaited until the env settles it; the person's updates go to a panel replica."""

    def __init__(self, bus: Bus, session_id: str) -> None:
        self.bus, self.session_id = bus, session_id
        self.coordinator = Coordinator(NotesEnv(), SEATS, session_id=session_id)
        self.node = EnvNode(bus, self.coordinator, idle_seconds=3600, join_timeout=10,
                            announce_after=3600)
        self.panel = PanelReplica(client=7)

    async def start(self) -> None:
        self.settled = await self.bus.subscribe(settled_channel(self.session_id))
        self.person = await self.bus.subscribe(obs_channel(self.session_id, "person"))
        for role in ("agent", "person"):
            await self.bus.publish(step_channel(self.session_id),
                                   StepRequest(role=role, kind="join").model_dump(mode="json"))
        self.running = asyncio.create_task(self.node.run())
        await self.read_person_until(1)

    async def read_person_until(self, seq: int) -> None:
        """Apply the person's updates to the panel up to event ``seq``."""
        while self.panel.seen_seq is None or self.panel.seen_seq < seq:
            message = await self.person.get(30)
            assert message is not None, "no update for the person"
            update = Update.model_validate(message)
            assert self.panel.receive(update.texts, update.seq) is None  # nothing typed yet
            self.panel.seen_seq = update.seq

    async def send(self, role: str, action: Any, seen_seq: int | None = None) -> Settlement:
        request = StepRequest(role=role, action=action, seen_seq=seen_seq)
        await self.bus.publish(step_channel(self.session_id), request.model_dump(mode="json"))
        while True:
            message = await self.settled.get(30)
            assert message is not None, f"no answer to {action!r}"
            if message.get("request_id") == request.id:
                settled = Settlement.model_validate(message)
                assert settled.applied and settled.error is None, settled
                assert settled.seq is not None
                await self.read_person_until(settled.seq)
                return settled

    async def close(self) -> None:
        await self.node.stop()
        await asyncio.wait_for(self.running, 30)
        await self.settled.close()
        await self.person.close()


async def test_actions_through_a_running_env_node_are_parsed_once(bus_factory: BusFactory,
                                                                 every_parse: list[Any]) -> None:
    """Over the bus, as members and panels send them: an agent's action the task wants
    approved and its acceptance, whole-text replacements of a shared text (one made on an older
    version, so merged), and a panel's live edit. Nothing on the way parses any of them again:
    not the bus, not the EnvNode, not the merge, not the acceptance."""
    wire = Wire(await bus_factory(), f"parse-once-{uuid.uuid4().hex[:8]}")
    await wire.start()
    try:
        sent: list[Any] = []

        async def send(role: str, action: Any, seen_seq: int | None = None) -> Settlement:
            sent.append(action)
            return await wire.send(role, action, seen_seq)

        asked = await send("agent", 'POST(note="!pitch the tent")')
        (request_id,) = wire.coordinator.pending
        await send("person", f'ACCEPT_CONFIRMATION(request_id="{request_id}")')
        first = await send("agent", 'WRITE(text="Pack the tent.\\nBuy food.")')
        await send("agent", 'WRITE(text="Pack the tent.\\nBuy food.\\nBook the site.")',
                   seen_seq=first.seq)
        # Made on the first version: merged with the line added since.
        await send("person", 'WRITE(text="Pack the big tent.\\nBuy food.")', seen_seq=first.seq)
        wire.panel.type(0, 0, "Today: ")
        batch = wire.panel.take()
        assert batch is not None
        await send("person", batch.action("editor", wire.panel.client), seen_seq=batch.seen_seq)
    finally:
        await wire.close()
    env = wire.coordinator.env
    assert [note["note"] for note in env.board] == ["!pitch the tent"]
    assert env.text == "Today: Pack the big tent.\nBuy food.\nBook the site."
    assert asked.seq is not None
    assert every_parse == sent  # each once, in the order sent, and nothing else
