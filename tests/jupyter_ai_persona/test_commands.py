"""What a person writes to the Co-Gym persona, read into commands (no jupyter-ai needed)."""

from __future__ import annotations

import pytest

from cogym_lab.jupyter_ai_persona.commands import (
    CommandError,
    Help,
    Join,
    ListSessions,
    Start,
    read_command,
)


@pytest.mark.parametrize(("text", "command"), [
    ("start todo", Start(task="todo")),
    ("@CoGym start travel_planning 3", Start(task="travel_planning", instance=3)),
    ("Start todo team example as user outside agent",
     Start(task="todo", team="example", outside=("agent",))),
    ("start todo outside agent,helper", Start(task="todo", outside=("agent", "helper"))),
    ("join 20250101-120000-abc123 as user", Join("20250101-120000-abc123", "user")),
    ("list", ListSessions()),
    ("", Help()),
    ("@CoGym help", Help()),
])
def test_commands_are_read(text: str, command: object) -> None:
    assert read_command(text) == command


@pytest.mark.parametrize(("text", "says"), [
    ("start", "needs a task"),
    ("start todo team", "needs a value"),
    ("start todo colour blue", "did not expect 'colour'"),
    ("start todo as user outside user", "both yours and an outside agent's"),
    ("start todo as 'a b'", "not a seat's name"),
    ("join", "needs a session id"),
    ("dance", "do not know 'dance'"),
    ("start 'todo", "could not read"),
])
def test_bad_commands_say_why(text: str, says: str) -> None:
    with pytest.raises(CommandError, match=says):
        read_command(text)
