"""A rule-based agent and user for the example task, so a session runs with no LM at all.

They are examples of the member interface (``start``, ``act``, ``end``), not LM stand-ins: each
reads the notification it gets and decides from the shared state, as any member would.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from cogym_lab.core import Notification, SessionContext
from cogym_lab.core.actions import Action
from cogym_lab.core.grammar import format_action


def _act(name: str, **args: Any) -> str:
    return format_action(Action(name=name, args=args))


class ExampleAgent:
    """Searches ideas privately, fills the checklist, takes requests from chat, and asks before
    adding more than the task needs."""

    def __init__(self, think_seconds: float = 0.0) -> None:
        self.think_seconds = think_seconds  # lets a demo show actions arriving while it thinks

    def start(self, context: SessionContext) -> None:
        self.trip = context.task_description.split("weekend ")[-1].split(" trip")[0]
        self.requested: list[str] = []
        self.told_done = False
        self.asked_extra = False
        self.min_items = int(context.task_description.split("at least ")[1].split()[0])

    async def act(self, notification: Notification) -> str | None:
        if self.think_seconds:
            await asyncio.sleep(self.think_seconds)
        for message in notification.new_messages:
            self.requested += _requested_items(message.text)
        items = notification.view["checklist"].content
        listed = {item["text"].lower() for item in items}
        ideas = notification.view["ideas"].content
        missing = [r for r in self.requested if r.lower() not in listed]
        if missing:
            return _act("ADD_ITEM", text=missing[0])
        if not ideas:
            return _act("SEARCH_IDEAS", trip=self.trip)
        fresh = [idea for idea in ideas if idea.lower() not in listed]
        if len(items) < self.min_items and fresh:
            return _act("ADD_ITEM", text=fresh[0])
        if fresh and not self.asked_extra:
            self.asked_extra = True  # going beyond the brief is the teammate's call
            return _act("REQUEST_TEAMMATE_CONFIRM", pending_action=_act("ADD_ITEM", text=fresh[0]))
        if notification.pending_confirmations:
            return None
        if not self.told_done:
            self.told_done = True
            names = ", ".join(i["text"] for i in items)
            return _act("SEND_TEAMMATE_MESSAGE", message=f"The list has {len(items)} items: "
                        f"{names}. Anything else you need?")
        return None

    def end(self, final: Notification) -> None:
        self.final = final


def _requested_items(text: str) -> list[str]:
    """Items named after 'bring' in a message, e.g. 'Please bring a rain jacket and a headlamp.'"""
    lowered = text.lower()
    if "bring" not in lowered:
        return []
    tail = re.split(r"[.;!?]", lowered.split("bring", 1)[1])[0].strip(" :")  # one sentence
    parts = tail.replace(" and ", ",").split(",")
    items = (p.strip().removeprefix("a ").removeprefix("an ").strip(" .") for p in parts)
    return [item for item in items if item]


class ExampleUser:
    """States its must-haves once, approves requests, and finishes once the list is good and the
    agent has reported.

    ``traits`` (the simulated users' traits, :mod:`cogym_lab.users.traits`) change that:

    * ``impatient``: finishes as soon as its must-haves are listed, without waiting for the
      list to be long enough or for the agent's report;
    * ``terse``: states its must-haves in as few words as the agent can read;
    * ``confused``: first asks what is going on, and states its must-haves a turn later;
    * ``sceptical``: turns down the first request for approval, and approves later ones;
    * ``forgetful``: says it will add its last must-have itself, never does, and finishes as
      if it had.
    """

    def __init__(self, must_have: list[str] | None = None, min_items: int = 6,
                 traits: Sequence[str] = ()) -> None:
        self.must_have = must_have or ["rain jacket", "headlamp"]
        self.min_items = min_items
        self.traits = frozenset(traits)

    def start(self, context: SessionContext) -> None:
        self.said_needs = False
        self.asked_what = False
        self.rejected_one = False
        self.promised: list[str] = []  # what it said it would add itself (forgetful)

    async def act(self, notification: Notification) -> str | None:
        if "confused" in self.traits and not self.asked_what:
            self.asked_what = True
            return _act("SEND_TEAMMATE_MESSAGE", message="Sorry, what do you need from me?")
        if not self.said_needs:
            self.said_needs = True
            return _act("SEND_TEAMMATE_MESSAGE", message=self._needs())
        if notification.pending_confirmations:
            request = notification.pending_confirmations[0].request_id
            if "sceptical" in self.traits and not self.rejected_one:
                self.rejected_one = True
                return _act("REJECT_CONFIRMATION", request_id=request,
                            reason="I am not sure we need that.")
            return _act("ACCEPT_CONFIRMATION", request_id=request)
        listed = {item["text"].lower() for item in notification.view["checklist"].content}
        wanted = [m for m in self.must_have if m not in self.promised]  # it forgot the rest
        if "impatient" in self.traits and all(m in listed for m in wanted):
            return _act("FINISH")
        reported = any(m.sender != notification.recipient for m in notification.chat)
        if reported and len(listed) >= self.min_items and all(m in listed for m in wanted):
            return _act("FINISH")
        return None

    def _needs(self) -> str:
        asked = list(self.must_have)
        if "forgetful" in self.traits and len(asked) > 1:
            self.promised = [asked.pop()]
        if "terse" in self.traits:
            return "bring " + ", ".join(asked)
        message = "Please bring " + " and ".join(f"a {m}" for m in asked)
        if self.promised:
            message += f"; I will add the {self.promised[0]} myself"
        return message

    def end(self, final: Notification) -> None:
        self.final = final
