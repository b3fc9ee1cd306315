"""A study's ``sessions.csv`` row from a session's results folder: what happened in it, counted
from its log, the same way for a person's session and a simulated participant's.

The person is the seat the condition gives the participant (``SessionPlan.person``); every
other member counts as the agents' side. ``person_initiative`` is a count, not Co-Gym's judged
initiative (which needs an LM judge, :mod:`cogym_lab.eval.metrics.initiative`): the person's
share of the chat messages and confirmation requests (the acts that start an exchange) of the
whole team, ``None`` when nobody sent any.

Cocoa's plans-vs-chat measures (time shares by activity, the output-to-input item ratio) are
:mod:`cogym_lab.eval.metrics.activity_codes`'s, with the same seat as the person.
"""

from __future__ import annotations

import math
from pathlib import Path

from cogym_lab.core.messages import EventType
from cogym_lab.eval.metrics.activity_codes import activity_codes, join_ratios
from cogym_lab.records.trajectory import SessionRecord, load_session
from cogym_lab.studies.tables import SessionRow

#: The acts that open an exchange: what the count-based initiative share counts.
_OPENERS = frozenset({EventType.MESSAGE, EventType.CONFIRM_REQUEST})


def session_row(results: str | Path | SessionRecord, *, participant: str, position: int,
                condition: str, label: str, practice: bool, instance: int,
                person: str = "user", traits: str = "") -> SessionRow:
    """The row of the session in ``results`` (a folder or a loaded record), played by
    ``participant`` in ``person``'s seat at ``position`` of their sequence."""
    record = results if isinstance(results, SessionRecord) else load_session(results)
    ok = [event for event in record.events if event.status == "ok" and event.actor is not None]

    def count(kind: EventType, *, by_person: bool) -> int:
        return sum(1 for e in ok if e.type is kind and (e.actor == person) == by_person)

    openers = [e for e in ok if e.type in _OPENERS]
    share = (sum(1 for e in openers if e.actor == person) / len(openers)) if openers else None
    performance = record.performance
    codes = activity_codes(record, person)
    return SessionRow(
        participant=participant, position=position, condition=condition, label=label,
        practice=practice, task=record.task, instance=instance, session_id=record.session_id,
        end_reason=record.end_reason or "", delivered=record.delivered,
        performance=None if math.isnan(performance) else performance,
        duration_seconds=_duration(record),
        person_messages=count(EventType.MESSAGE, by_person=True),
        agent_messages=count(EventType.MESSAGE, by_person=False),
        person_actions=count(EventType.ACTION, by_person=True),
        agent_actions=count(EventType.ACTION, by_person=False),
        confirmations_asked=count(EventType.CONFIRM_REQUEST, by_person=False),
        confirmations_given=count(EventType.CONFIRM_ACCEPT, by_person=True),
        interruptions=count(EventType.PAUSE, by_person=True),
        person_initiative=share, traits=traits,
        share_planning=codes.share("planning"), share_executing=codes.share("executing"),
        share_inspecting=codes.share("inspecting"), share_waiting=codes.share("waiting"),
        share_other=codes.share("other"), item_ratio=codes.item_ratio,
        item_ratios=join_ratios(codes.ratios), item_rounds=codes.rounds)


def _duration(record: SessionRecord) -> float | None:
    """Seconds the session ran: as ``session.json`` says, else from its first to last event."""
    recorded = record.session.get("duration")
    if isinstance(recorded, int | float) and not isinstance(recorded, bool):
        return float(recorded)
    if len(record.events) > 1:
        return record.events[-1].time - record.events[0].time
    return None


__all__ = ["session_row"]
