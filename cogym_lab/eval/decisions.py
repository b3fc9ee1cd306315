"""A member's decisions in a logged session, and the LM calls behind each.

A *decision* is an event a member caused: a task action, a message, a wait, a finish, a refused
act, a confirmation or a pause. The LM calls behind it are read from the member's own call log
(``<session>/<role>/lm_calls.jsonl``): every call of that member that was logged after its
previous decision and no later than this one. A call is logged when its reply arrives, before
the member acts on it, and a member acts on one reply at a time, so this window holds exactly the
calls that led to the act (a simulated user's choice of move and the move itself, say). Calls
after a member's last decision (an act cut off by the session's end) belong to none.

The trajectory viewer and the training-data export both read decisions through this module.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from cogym_lab.core.messages import Event, EventType
from cogym_lab.eval.trajectory import SessionRecord

#: Event types that record something a member chose to do (not the env's clock or the end).
DECISION_TYPES = frozenset({
    EventType.ACTION, EventType.MESSAGE, EventType.WAIT, EventType.ERROR,
    EventType.CONFIRM_REQUEST, EventType.CONFIRM_ACCEPT, EventType.CONFIRM_REJECT,
    EventType.PAUSE, EventType.RESUME, EventType.FINISH,
})


def is_decision(event: Event, roles: Iterable[str]) -> bool:
    """Whether ``event`` is a decision of one of ``roles`` (a deferred failure the env
    reported later is not: nobody chose it at that moment)."""
    return (event.type in DECISION_TYPES and event.actor in set(roles)
            and not event.info.get("deferred"))


def decisions(record: SessionRecord) -> list[Event]:
    """The decisions of every member of ``record``, in log order."""
    roles = set(record.roles)
    return [event for event in record.events if is_decision(event, roles)]


def call_time(call: dict[str, Any]) -> float:
    """When a call record was logged, in seconds since the epoch (NaN when unreadable)."""
    try:
        return datetime.fromisoformat(str(call.get("time"))).timestamp()
    except (TypeError, ValueError):
        return math.nan


def calls_behind(record: SessionRecord) -> dict[int, list[dict[str, Any]]]:
    """Event ``seq`` -> the LM calls behind that decision, oldest first. Decisions with no
    call (a scripted member, a person, an act without an LM) are left out."""
    by_role: dict[str, list[Event]] = defaultdict(list)
    for event in decisions(record):
        by_role[str(event.actor)].append(event)
    matched: dict[int, list[dict[str, Any]]] = {}
    for role, acts in by_role.items():
        calls = sorted(((call_time(call), call) for call in
                        record.members.get(role, {}).get("calls", [])
                        if not math.isnan(call_time(call))), key=lambda pair: pair[0])
        position = 0
        for act in acts:
            window = []
            while position < len(calls) and calls[position][0] <= act.time:
                window.append(calls[position][1])
                position += 1
            if window:
                matched[act.seq] = window
    return matched
