"""The leakage guard: did anything a task keeps hidden reach an agent other than through a person?

A task declares its hidden strings (``CoEnv.hidden_strings``: a gold answer, a hidden
preference). While a session runs, the guard searches every update sent to an agent and
every prompt an agent's LM was given for them. A hidden string may reach an agent honestly: the
human side wrote it itself (in a message or an action) before the agent was shown it, or the agent
wrote it before it was ever shown it (a finding phrased exactly as the gold one), so at the end
such hits are excused; what is left is reported in ``session.json`` as ``leakage``.

Both excuses keep the order of events: a hit is excused only when the writing came first (its
event's ``seq`` is at most the hit's). A person who repeats the string later does not excuse the
agent that had it already: that is what a leak looks like from the outside (the agent knew, then
the person confirmed).

Matching ignores case and collapses whitespace, so a string wrapped over lines by a printout is
still found. Only what an update carries is searched: the components that changed for
the role and the messages new to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from cogym_lab.core.actions import ActionError
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.core.messages import Event, Update
from cogym_lab.core.text import string_leaves

_SPACE = re.compile(r"\s+")
_EXCERPT = 120


def normalise(text: str) -> str:
    """Case-folded, with every run of whitespace as one space."""
    return _SPACE.sub(" ", text.casefold()).strip()


class LeakHit(BaseModel):
    """One hidden string found in something an agent was sent."""

    role: str  # the agent that was sent it
    where: str  # "view:<component>", "chat", "context", "prompt:<purpose>"
    seq: int | None = None  # the notification's event, for views and chat
    hidden: str  # the hidden string, shortened


class LeakageReport(BaseModel):
    """What ``session.json`` says under ``leakage``."""

    checked: bool  # False when the task declares no hidden strings
    hidden_strings: int
    leaks: list[LeakHit]
    excused: int  # hits of strings the human side (or the agent) had written first

    @property
    def leaked(self) -> bool:
        return bool(self.leaks)


@dataclass
class LeakageGuard:
    """Watches what ``agents`` are sent for ``hidden`` strings, and what ``humans`` write (see
    the module docstring)."""

    hidden: list[str]
    agents: set[str]
    humans: set[str]
    _needles: dict[str, str] = field(default_factory=dict, init=False)
    _human_wrote: dict[str, int] = field(default_factory=dict, init=False)  # needle -> seq
    _agent_wrote: dict[tuple[str, str], int] = field(default_factory=dict, init=False)
    _last_seq: dict[str, int] = field(default_factory=dict, init=False)
    _hits: dict[tuple[str, str, str], LeakHit] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._needles = {needle: text for text in self.hidden
                         if (needle := normalise(text))}

    @property
    def active(self) -> bool:
        return bool(self._needles) and bool(self.agents)

    def watch_update(self, update: Update) -> None:
        """Search what ``update`` shows its recipient, if it is an agent: the components and
        messages it carries are exactly what is new to it."""
        role = update.recipient
        if not self.active or role not in self.agents:
            return
        seq = update.seq
        self._last_seq[role] = max(seq, self._last_seq.get(role, 0))
        for component in update.components:
            self._search(role, f"view:{component.name}", seq, component.content)
        for message in update.messages:
            if message.sender != role:
                self._search(role, "chat", seq, message.text)
        for request in update.pending_confirmations:
            self._search(role, "confirmation", seq, request.pending_action)
        if update.context is not None:
            self._search(role, "context", seq, update.context.task_description)

    def watch_prompt(self, role: str, messages: Iterable[Mapping[str, Any]],
                     purpose: str = "") -> None:
        """Search one LM prompt of agent ``role``."""
        if self.active and role in self.agents:
            contents = [message.get("content") for message in messages]
            self._search(role, f"prompt:{purpose or 'call'}", self._last_seq.get(role, 0),
                         contents)

    def watch_event(self, event: Event) -> None:
        """Remember what the human side wrote in a logged act (a message, an edit), and when
        an agent first wrote a hidden string itself."""
        if not self.active or event.status != "ok":
            return
        text = " \n ".join(normalise(t) for t in _action_texts(event.action))
        if event.actor in self.humans:
            for needle in self._needles:
                if needle in text:  # the first time counts: the excuse needs it to come first
                    self._human_wrote.setdefault(needle, event.seq)
        elif event.actor in self.agents and not event.info.get("follow_up"):
            # A follow-up carries what the env produced (a cell's outputs), not what the agent
            # wrote, so it never counts as the agent's own words.
            for needle in self._needles:
                if needle in text:
                    self._agent_wrote.setdefault((event.actor, needle), event.seq)

    def report(self) -> LeakageReport:
        """The hits, minus those of strings the human side had written before the agent was
        shown them, and those an agent was shown only after it had written them itself.

        A hit's ``seq`` is the update that showed it (for a prompt, the last update the agent
        had been sent), so "before" compares event numbers: a person's message is shown in the
        update of its own event, whose ``seq`` equals the message's."""
        leaks, excused = [], 0
        for (role, _, needle), hit in self._hits.items():
            shown_at = hit.seq or 0
            human_at = self._human_wrote.get(needle)
            agent_at = self._agent_wrote.get((role, needle))
            if (human_at is not None and human_at <= shown_at) or (
                    agent_at is not None and agent_at <= shown_at):
                excused += 1
            else:
                leaks.append(hit)
        return LeakageReport(checked=bool(self._needles), hidden_strings=len(self._needles),
                             leaks=leaks, excused=excused)

    def _search(self, role: str, where: str, seq: int | None, value: Any) -> None:
        text = " \n ".join(normalise(leaf) for leaf in string_leaves(value))
        if not text:
            return
        for needle, original in self._needles.items():
            key = (role, where, needle)
            if key not in self._hits and needle in text:
                self._hits[key] = LeakHit(role=role, where=where, seq=seq,
                                          hidden=_shorten(original))


def _action_texts(action: str | None) -> Iterator[str]:
    """The strings an act carried (a message's text, an edit's text), or the raw act."""
    if not action:
        return
    try:
        yield from string_leaves(parse_canonical(action).args)
    except ActionError:
        yield action


def _shorten(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT - 1] + "…"


__all__ = ["LeakHit", "LeakageGuard", "LeakageReport", "normalise", "string_leaves"]
