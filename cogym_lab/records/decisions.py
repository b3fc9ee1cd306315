"""A member's decisions in a logged session, and the LM calls behind each.

A *decision* is an event a member caused: a task action, a message, a wait, a finish, a refused
act, a confirmation or a pause. The LM calls behind it are read from the member's own call log
(``<session>/<role>/lm_calls.jsonl``): every call of that member that was logged after its
previous decision and no later than this one (steps the env observed, a person's own kernel's,
are decisions that no call led to and take none). A call is logged when its reply arrives, before
the member acts on it, and a member acts on one reply at a time, so this window holds the calls
that led to the act (a simulated user's choice of move and the move itself, say). Calls after a
member's last decision (an act cut off by the session's end) belong to none.

A member may also decide to do nothing: its calls then led to no event, and the window of its
next act would take them in. Where both sides say which notification they were made on (a call
log line's ``seen_seq``, an act's ``info["seen_seq"]``), a call made on another notification than
the act's is left out of its window: it led to no act.

The trajectory viewer and the training-data export both read decisions through this module.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from cogym_lab.core.messages import Event, EventType
from cogym_lab.records.trajectory import SessionRecord

#: Event types that record something a member chose to do (not the env's clock or the end).
DECISION_TYPES = frozenset({
    EventType.ACTION, EventType.MESSAGE, EventType.WAIT, EventType.ERROR,
    EventType.CONFIRM_REQUEST, EventType.CONFIRM_ACCEPT, EventType.CONFIRM_REJECT,
    EventType.PAUSE, EventType.RESUME, EventType.FINISH,
})


def is_decision(event: Event, roles: Iterable[str]) -> bool:
    """Whether ``event`` is a decision of one of ``roles``. The result of slow work (and its
    failure) is not: it arrives when the work ends, not when anyone chose it."""
    return (event.type in DECISION_TYPES and event.actor in set(roles)
            and not event.info.get("follow_up")
            and not (event.type is EventType.ERROR and event.info.get("deferred")))


def follows_a_call(event: Event) -> bool:
    """Whether a member's own LM call may have led to ``event``, one of its decisions: a step
    the env observed (a person's own kernel) was made by no call of the member's."""
    return not event.info.get("observed")


def decisions(record: SessionRecord) -> list[Event]:
    """The decisions of every member of ``record``, in log order."""
    roles = set(record.roles)
    return [event for event in record.events if is_decision(event, roles)]


def call_windows(acts: Sequence[Event], call_times: Sequence[float],
                 call_seen: Sequence[int | None] | None = None
                 ) -> tuple[dict[int, list[int]], int]:
    """One member's calls matched to its acts (see the module's docstring): act ``seq`` -> the
    positions in ``call_times`` of the calls behind it, oldest first, and how many calls led to
    no act. ``acts`` are the member's decisions in log order; a NaN time matches nothing.
    ``call_seen`` gives each call's ``seen_seq`` where known: a call made on another
    notification than its act's recorded one is left out (it led to no act)."""
    order = sorted((t, i) for i, t in enumerate(call_times) if not math.isnan(t))
    windows: dict[int, list[int]] = {}
    taken = matched = 0
    for act in acts:
        if not follows_a_call(act):
            continue
        window = []
        while taken < len(order) and order[taken][0] <= act.time:
            window.append(order[taken][1])
            taken += 1
        acted_on = act.info.get("seen_seq")
        if call_seen is not None and isinstance(acted_on, int):
            window = [i for i in window if call_seen[i] is None or call_seen[i] == acted_on]
        if window:
            windows[act.seq] = window
            matched += len(window)
    return windows, len(call_times) - matched


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
        calls = record.members.get(role, {}).get("calls", [])
        windows, _ = call_windows(acts, [call_time(call) for call in calls],
                                  [_seen(call) for call in calls])
        matched.update({seq: [calls[i] for i in window] for seq, window in windows.items()})
    return matched


def _seen(call: dict[str, Any]) -> int | None:
    """The notification a logged call was made on (``None`` when its line does not say)."""
    seen = call.get("seen_seq")
    return seen if isinstance(seen, int) and not isinstance(seen, bool) else None
