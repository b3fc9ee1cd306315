"""Actions and events in plain sentences (the transcript's words): no action syntax for a
person to read, hostile text kept on one line, and a recorded session read back in words."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from cogym_lab.core.actions import Action, format_action
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.plain_words import describe_action, describe_event, specs_by_name
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes.transcript import Transcript, task_action_specs

SPECS = specs_by_name(TodoEnv().action_specs(include_internal=True))


def _event(type_: EventType, action: str | None = None, **fields) -> Event:
    return Event(seq=3, time=1.0, type=type_, actor="agent", action=action, **fields)


def test_each_event_reads_as_a_sentence_without_action_syntax() -> None:
    add = 'ADD_ITEM(text="Bring a kazoo")'
    message = 'SEND_TEAMMATE_MESSAGE(message="Shall I add snacks?", to="user")'
    confirm = format_action(Action(name="REQUEST_TEAMMATE_CONFIRM",
                                   args={"pending_action": add}))
    said = [
        (_event(EventType.ACTION, add), "agent: Add an item to the shared checklist: text "
                                        "“Bring a kazoo”."),
        (_event(EventType.MESSAGE, message), "agent said: “Shall I add snacks?” (to user)"),
        (_event(EventType.CONFIRM_REQUEST, confirm), "agent asks for approval before: Add an "
                                                     "item to the shared checklist: text "
                                                     "“Bring a kazoo”."),
        (_event(EventType.ERROR, "CHECK_ITEM(item_id=9)", status="error",
               error="No item 9."), "agent tried to tick an item off as packed: item_id “9”, "
                                    "but it was refused: No item 9."),
        (_event(EventType.WAIT, "WAIT_TEAMMATE_CONTINUE()"), "agent waits for a teammate."),
        (Event(seq=9, time=2.0, type=EventType.END, info={"reason": "finished"}),
         "The session ended: finished."),
    ]
    for event, sentence in said:
        assert describe_event(event, SPECS).startswith(sentence.rstrip(".")), event
        assert "(" not in describe_event(event, SPECS).split("“")[0]  # no NAME(…) form


@given(st.text(max_size=300))
def test_hostile_message_text_stays_on_one_line_and_never_raises(text: str) -> None:
    raw = format_action(Action(name="SEND_TEAMMATE_MESSAGE", args={"message": text}))
    words = describe_action(raw, SPECS)
    assert "\n" not in words and "\r" not in words
    assert len(words) <= 220


def test_hostile_text_in_a_transcript() -> None:
    hostile = "<script>x</script>\u2028line\x00 \ud800" + "a" * 1_000_000
    console = Console(file=io.StringIO(), width=400, color_system=None)
    show = Transcript(console, "todo")
    show(_event(EventType.MESSAGE, format_action(Action(name="SEND_TEAMMATE_MESSAGE",
                                                        args={"message": hostile}))))
    printed = console.file.getvalue()
    assert printed.count("\n") == 1 and "<script>x</script>" in printed
    assert "\x00" not in printed and "\u2028" not in printed
    assert len(printed) < 400


def test_the_transcript_knows_a_registered_tasks_actions_and_can_show_them_raw() -> None:
    assert "ADD_ITEM" in task_action_specs("todo")
    assert "SEND_TEAMMATE_MESSAGE" in task_action_specs("no-such-task")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    Transcript(console, "todo", raw=True)(_event(EventType.ACTION, 'ADD_ITEM(text="tent")'))
    assert 'ADD_ITEM(text="tent")' in console.file.getvalue()


def test_a_clocked_game_shows_only_the_ticks_that_scored() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    show = Transcript(console, "kitchen")
    for tick, reward in enumerate([0.0, 0.0, 20.0, 0.0, -10.0], start=1):
        show(Event(seq=tick, time=0.0, type=EventType.CLOCK, reward=reward,
                   info={"tick": tick}))
    assert console.file.getvalue().splitlines() == ["   3  Tick 3: +20.", "   5  Tick 5: -10."]
