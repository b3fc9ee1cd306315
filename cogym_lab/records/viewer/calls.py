"""The LM call behind each event: which line of the actor's ``lm_calls.jsonl`` it came from.

A call record does not name the event it led to, so the viewer matches them by time, member by
member. A call's logged ``time`` is when its reply came back; the event is logged when the
coordinator applied the action that reply produced, so later. For each event of a member (its
actions, messages, confirmations, finishes and refusals; not the results of deferred work or the
steps the env observed, which no call of the member made), the calls of that member that
returned **after the member's previous event and no later than this one** are the calls behind
it: the last of them is the one that decided the action (its prompt and reply are shown), the
earlier ones (a summary, a retry after an unusable reply, a simulated user's choice of move) are
listed with it. The rule is :func:`cogym_lab.records.decisions.call_windows`, which the
training-data export uses too. A call that returned after
the member's last event led to no event (the session ended first) and is only counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from cogym_lab.core.jsonl import read_jsonl_or_empty
from cogym_lab.core.messages import Event
from cogym_lab.core.text import clean
from cogym_lab.lm.calllog import log_files
from cogym_lab.records.decisions import call_windows, is_decision
from cogym_lab.records.viewer.payload import CallMatch, LMCall

CALLS_FILE = "lm_calls.jsonl"


def read_calls(folder: str | Path, roles: Iterable[str]) -> dict[str, list[LMCall]]:
    """Each member's LM calls (rotated parts of its log first); members without a call log are
    left out."""
    found = {role: [record for path in log_files(Path(folder) / role / CALLS_FILE)
                    for record in read_jsonl_or_empty(path)] for role in roles}
    return {role: parse_calls(records) for role, records in found.items() if records}


def parse_calls(records: Iterable[Any]) -> list[LMCall]:
    """Call records as the viewer shows them, numbered from 0 in the order logged (a line that
    is not an object keeps its number and shows as an empty call)."""
    return [_call(index, record if isinstance(record, dict) else {})
            for index, record in enumerate(records)]


def _call(index: int, record: dict[str, Any]) -> LMCall:
    record = clean(record)
    usage = record.get("usage")
    latency, attempts, seed = record.get("latency"), record.get("attempts"), record.get("seed")
    return LMCall(
        index=index, ended=_seconds(record.get("time")), time=_str(record.get("time")),
        purpose=_str(record.get("purpose")), model=_str(record.get("model")),
        messages=record.get("messages"), completion=_str(record.get("completion")),
        error=_str(record.get("error")), usage=usage if isinstance(usage, dict) else None,
        latency=float(latency) if _number(latency) else None,
        attempts=attempts if _integer(attempts) else None,
        seed=seed if _integer(seed) else None, truncated=record.get("truncated") is True)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value: Any) -> float | None:
    """A logged ISO 8601 time as seconds since the epoch (a time without a zone is UTC)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def match_calls(events: list[Event], calls: dict[str, list[LMCall]]
                ) -> tuple[list[CallMatch], dict[str, int]]:
    """The calls behind each event (see the module's docstring), in event order, and how many
    calls of each member led to no event."""
    matches: list[CallMatch] = []
    unmatched: dict[str, int] = {}
    for role, role_calls in calls.items():
        acts = [event for event in events if is_decision(event, [role])]
        windows, left = call_windows(acts, [math.nan if call.ended is None else call.ended
                                            for call in role_calls])
        for seq, window in windows.items():
            indices = [role_calls[i].index for i in window]
            matches.append(CallMatch(seq=seq, role=role, call=indices[-1], earlier=indices[:-1]))
        if left:
            unmatched[role] = left
    matches.sort(key=lambda match: match.seq)
    return matches, unmatched
