"""Each action is parsed once, where it enters the coordinator, and travels on typed: a task
action, an action an agent must have approved, and one a member asks approval for, through to
its acceptance. The text form is written for the log and for prompts only."""

from __future__ import annotations

import json
from typing import Any

import pytest

import cogym_lab.core.coordinator as coordinator_module
import cogym_lab.core.env as env_module
from cogym_lab.core import Action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.envs.todo import TodoEnv

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
