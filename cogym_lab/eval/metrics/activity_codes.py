"""Cocoa's plans-vs-chat measures for a session of either condition, from its results folder:
what share of the session the person spent on each kind of activity, and how much of what each
round of the agent produced was carried into the next round (Feng et al., "Cocoa: Co-Planning
and Co-Execution with AI Agents", §5.4 and §6, Figures 12-13). The paper coded video; this
codes the event log, the same way for a session with an interactive plan and a chat session.

**Activity codes.** Each act of the person (the seat ``person``) is one of:

* ``planning``: with a plan, a co-planning act (picking, adding, editing, deleting, moving or
  assigning steps: :data:`~cogym_lab.eval.metrics.plan_measures.CO_PLANNING`); in chat (or in a
  plan session's chat), a message asking for work without touching what the agent produced
  (the paper's *prompting for planning*);
* ``executing``: with a plan, a co-execution act (running steps, completing or failing a step,
  pausing after one) or editing a step's output; in chat, a message asking the agent to change
  or narrow what it produced (the paper's *prompting for editing*: the message names an item
  the agent produced earlier, or uses one of :data:`EDIT_WORDS`); in both, the person's own
  task actions and edits of the shared work, and answering or pausing the agent (accepting or
  rejecting its request, pausing or resuming it);
* ``other``: finishing the session.

The session's time, from its first to its last event, is cut at every act of the person and
every output of the agent side (any other member's act that took effect), and each piece gets
one code:

* the piece that ends at an act of the person is that act's time (composing it), at most
  :data:`ACT_SPAN_CAP` seconds; the rest of a longer piece counts as below;
* otherwise the piece is ``inspecting`` when the agent side has shown output since the
  person's last act (there is something new to read), else ``waiting`` (the person acted and
  nothing has come back yet; the paper's grey time). Before the person's first act, the agent's
  first output counts as new.

``share_<code>`` is the code's seconds over the session's; the five shares add up to 1.

**Output-to-input item ratio, per round.** With a plan a round is one run of a step
(:mod:`~cogym_lab.eval.metrics.plan_measures`: what it produced, and how much of it the next
step started from). In chat a round is a turn: what the agent side did from one message of the
person (or from the start) to the person's next message. The turn's *produced* items are the
distinct items of the agent side's acts in it (:func:`items_of`: each short text argument of
an action, each list entry of a longer text or of a message, each element of a list argument;
an approved request counts with its pending action). An item is *carried* when the next turn
names it: the person's message that opens it, or any act in it (compared case-insensitively,
as whole words). The ratio is carried / produced; a turn that produced nothing, or that no
later turn followed, has none.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core.actions import ActionError
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.core.messages import Event, EventType
from cogym_lab.eval.metrics.plan_measures import (
    ACT_SPAN_CAP,
    CO_EXECUTION,
    CO_PLANNING,
    CURATION,
    is_planned,
    plan_measures,
)
from cogym_lab.records.trajectory import SessionRecord

CODES = ("planning", "executing", "inspecting", "waiting", "other")
#: Words that make a chat message a request to change what the agent produced.
EDIT_WORDS = frozenset({"remove", "delete", "drop", "replace", "instead", "only", "keep",
                        "change", "fix", "redo", "rewrite", "shorten", "edit", "revise",
                        "rather", "without"})
#: A text argument up to this long (one line) is one item; a longer one gives its list entries.
ITEM_CHARS = 120
#: The person's acts (a live edit of a shared text included).
PERSON_ACTS = frozenset({EventType.ACTION, EventType.MESSAGE, EventType.CONFIRM_REQUEST,
                         EventType.CONFIRM_ACCEPT, EventType.CONFIRM_REJECT, EventType.PAUSE,
                         EventType.RESUME, EventType.FINISH, EventType.EDIT})
#: The agent side's outputs: what the person may read.
AGENT_OUTPUTS = frozenset({EventType.ACTION, EventType.MESSAGE, EventType.CONFIRM_REQUEST,
                           EventType.CONFIRM_ACCEPT, EventType.CONFIRM_REJECT})
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$")
_SPACES = re.compile(r"\s+")
_ITEM_KEYS = ("title", "text", "name", "id")
#: Arguments that point at something (a step, a request, a place): never items.
_POINTER_ARGS = frozenset({"step", "request_id", "after", "base", "assignee", "to", "agent",
                           "item_id", "index", "position"})


@dataclass
class ActivityCodes:
    """The plans-vs-chat measures of one session."""

    planned: bool
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CODES, 0.0))
    acts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CODES, 0))
    #: Each round's carried / produced, in order (rounds without a ratio left out).
    ratios: list[float] = field(default_factory=list)
    rounds: int = 0

    def share(self, code: str) -> float | None:
        total = sum(self.seconds.values())
        return self.seconds[code] / total if total > 0 else None

    @property
    def item_ratio(self) -> float | None:
        return sum(self.ratios) / len(self.ratios) if self.ratios else None


# -- items -----------------------------------------------------------------------------------

def normalise(text: str) -> str:
    return _SPACES.sub(" ", text).strip(" \t.,;:!?\"'").casefold()


def list_entries(text: str) -> list[str]:
    """The entries of the list lines (``- a``, ``* a``, ``1. a``) of ``text``."""
    return [m.group(1) for line in text.splitlines() if (m := _LIST_LINE.match(line))]


def _value_items(value: Any) -> list[str]:
    if isinstance(value, str):
        if len(value) <= ITEM_CHARS and "\n" not in value:
            return [value]
        return list_entries(value)
    if isinstance(value, list):
        found: list[str] = []
        for element in value:
            if isinstance(element, dict):
                key = next((k for k in _ITEM_KEYS if isinstance(element.get(k), str)), None)
                found.append(element[key] if key else json.dumps(element, sort_keys=True))
            elif isinstance(element, str | int | float) and not isinstance(element, bool):
                found.append(str(element))
        return found
    return []


def _args_items(args: dict[str, Any]) -> list[str]:
    return [i for k, v in args.items() if k not in _POINTER_ARGS for i in _value_items(v)]


def _parsed(text: str | None) -> tuple[str, dict[str, Any]] | None:
    if not text:
        return None
    try:
        action = parse_canonical(text)
    except ActionError:
        return None
    return action.name, action.args


def message_text(event: Event) -> str:
    """A message event's text (its action's ``message`` argument)."""
    parsed = _parsed(event.action)
    if parsed is None:
        return event.action or ""
    return str(parsed[1].get("message", ""))


def items_of(event: Event) -> list[str]:
    """The items an act of the agent side put forward (see the module), normalised."""
    found: list[str] = []
    if event.type is EventType.MESSAGE:
        found = list_entries(message_text(event))
    elif event.type is EventType.CONFIRM_ACCEPT:  # the approved action ran as the requester's
        return []
    elif event.type is EventType.CONFIRM_REQUEST:
        parsed = _parsed(event.action)
        pending = _parsed(str(parsed[1].get("pending_action", ""))) if parsed else None
        found = _args_items(pending[1]) if pending else []
    elif event.type is EventType.ACTION:
        parsed = _parsed(event.action)
        found = _args_items(parsed[1]) if parsed else []
    return [n for n in (normalise(i) for i in found) if len(n) > 1]


def names(text: str, item: str) -> bool:
    """Whether ``text`` (normalised) names ``item`` as whole words."""
    return re.search(rf"(?<!\w){re.escape(item)}(?!\w)", text) is not None


# -- activity ----------------------------------------------------------------------------------

def _effective(record: SessionRecord) -> list[Event]:
    return [e for e in record.events if e.status == "ok" and e.actor is not None]


def code_of(event: Event, produced_before: set[str]) -> str:
    """The code of one act of the person (see the module)."""
    if event.type is EventType.FINISH:
        return "other"
    if event.type is EventType.MESSAGE:
        text = normalise(message_text(event))
        words = set(re.findall(r"\w+", text))
        if words & EDIT_WORDS or any(names(text, item) for item in produced_before):
            return "executing"
        return "planning"
    parsed = _parsed(event.action) if event.type is EventType.ACTION else None
    if parsed and parsed[0] in CO_PLANNING:
        return "planning"
    if parsed and parsed[0] in CO_EXECUTION | CURATION:
        return "executing"
    return "executing"  # own task actions and edits, answering or pausing the agent


def _activity(record: SessionRecord, person: str, codes: ActivityCodes) -> None:
    events = _effective(record)
    if not record.events:
        return
    start, end = record.events[0].time, max(e.time for e in record.events)
    seen_output = False
    produced: set[str] = set()
    last = start
    for event in sorted(events, key=lambda e: (e.time, e.seq)):
        mine = event.actor == person
        if not mine and event.type not in AGENT_OUTPUTS:
            continue
        if mine and event.type not in PERSON_ACTS:
            continue
        span = max(event.time - last, 0.0)
        if mine:
            code = code_of(event, produced)
            composing = min(span, ACT_SPAN_CAP)
            codes.seconds[code] += composing
            codes.seconds["inspecting" if seen_output else "waiting"] += span - composing
            codes.acts[code] += 1
            seen_output = False
        else:
            codes.seconds["inspecting" if seen_output else "waiting"] += span
            produced.update(items_of(event))
            seen_output = True
        last = max(last, event.time)
    codes.seconds["inspecting" if seen_output else "waiting"] += max(end - last, 0.0)


# -- rounds --------------------------------------------------------------------------------------

def chat_turns(record: SessionRecord, person: str) -> list[list[Event]]:
    """The session's turns: its effective acts cut at each of the person's messages (each turn
    but the first starts with one)."""
    turns: list[list[Event]] = [[]]
    for event in _effective(record):
        if event.actor == person and event.type is EventType.MESSAGE:
            turns.append([])
        turns[-1].append(event)
    return turns


def chat_ratios(record: SessionRecord, person: str) -> tuple[int, list[float]]:
    """(turns that produced items, each ratio) of a chat session (see the module)."""
    turns = chat_turns(record, person)
    produced_per_turn = [{i for e in turn if e.actor != person for i in items_of(e)}
                         for turn in turns]
    ratios = []
    for k, produced in enumerate(produced_per_turn):
        if not produced or k + 1 >= len(turns):
            continue
        said = " ".join(normalise(message_text(e) if e.type is EventType.MESSAGE
                                  else e.action or "") for e in turns[k + 1])
        ratios.append(sum(1 for item in produced if names(said, item)) / len(produced))
    return sum(1 for p in produced_per_turn if p), ratios


def activity_codes(record: SessionRecord, person: str = "user") -> ActivityCodes:
    """The plans-vs-chat measures of ``record``, the person in seat ``person``."""
    planned = is_planned(record)
    codes = ActivityCodes(planned=planned)
    _activity(record, person, codes)
    if planned:
        measures = plan_measures(record)
        if measures is not None:
            codes.rounds = len(measures.rounds)
            codes.ratios = measures.ratios
    else:
        codes.rounds, codes.ratios = chat_ratios(record, person)
    return codes


def join_ratios(ratios: list[float]) -> str:
    """Ratios as a ``sessions.csv`` cell: joined by ``|``, six significant digits."""
    return "|".join(f"{r:.6g}" for r in ratios)


def split_ratios(cell: str) -> list[float]:
    """The ratios of a ``sessions.csv`` cell written by :func:`join_ratios`."""
    values = (float(part) for part in cell.split("|") if part.strip())
    return [v for v in values if not math.isnan(v)]


__all__ = ["AGENT_OUTPUTS", "CODES", "EDIT_WORDS", "ITEM_CHARS", "PERSON_ACTS", "ActivityCodes",
           "activity_codes", "chat_ratios", "chat_turns", "code_of", "items_of", "join_ratios",
           "list_entries", "message_text", "names", "normalise", "split_ratios"]
