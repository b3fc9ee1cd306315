"""What the trajectory viewer is sent: one session's events, states, LM calls and labels, in a
compact form (:class:`TrajectoryPayload`), gzipped JSON on the wire (:func:`encode`).

States are not sent one per event. Each member's view, the chat and the rest of the state are
sent only at the events that changed them (a *point*: from event index ``at`` on, until the
next point), and every value goes through the :mod:`values <cogym_lab.records.viewer.values>`
table, where most are small patches on the value before. The browser module
(``js/trajectory_viewer.js``) and :class:`~cogym_lab.records.viewer.frames.Trajectory` rebuild the
state at any event from them the same way.
"""

from __future__ import annotations

import gzip
import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from cogym_lab.core.text import clean_text
from cogym_lab.records.viewer.values import dumps

#: Raised whenever the payload's shape changes; the browser module refuses another version.
PAYLOAD_VERSION = 1


class TimelineEvent(BaseModel):
    """One logged event as the timeline shows it. ``action`` is cut to
    :data:`~cogym_lab.records.viewer.frames.ACTION_CHARS` (``action_chars`` gives its length)."""

    seq: int
    time: float
    type: str
    actor: str | None = None
    action: str | None = None
    action_chars: int | None = None
    status: str = "ok"
    error: str | None = None
    private: bool = False
    tick: int | None = None  # a clock event's tick
    info: dict[str, Any] = Field(default_factory=dict)  # short scalar items of the event's info


class ViewPoint(BaseModel):
    """A member's view from event index ``at`` on: its components and the view's other fields,
    as numbers in the value table."""

    at: int
    components: list[int]
    rest: int


class ChatPoint(BaseModel):
    """The chat from event index ``at`` on: ``messages[start:start + length]``. A chat that only
    grows keeps ``start``; one that changed otherwise starts anew further down ``messages``."""

    at: int
    start: int
    length: int


class StatePoint(BaseModel):
    """The rest of the state (``seq``, confirmations, pauses, step counts, the end, the outcome)
    from event index ``at`` on, as a number in the value table."""

    at: int
    value: int


class Change(BaseModel):
    """One difference an event made to the state, as :func:`cogym_lab.core.state_diff.differences`
    names it: where, and the value before and after (cut for reading)."""

    path: str
    before: str
    after: str


class EventChanges(BaseModel):
    """What event ``seq`` changed: the first :data:`~cogym_lab.records.viewer.frames.MAX_CHANGES`
    differences, and how many there were."""

    seq: int
    count: int
    changes: list[Change]


class LMCall(BaseModel):
    """One line of a member's ``lm_calls.jsonl``, as the viewer shows it. ``ended`` is the call's
    logged ``time`` (when its reply came back) in seconds since the epoch."""

    index: int
    ended: float | None = None
    time: str | None = None
    purpose: str | None = None
    model: str | None = None
    messages: Any = None
    completion: str | None = None
    error: str | None = None
    usage: dict[str, Any] | None = None
    latency: float | None = None
    attempts: int | None = None
    seed: int | None = None
    truncated: bool = False


class CallMatch(BaseModel):
    """The LM calls behind event ``seq`` of ``role``: ``call`` (the last one that returned
    before the event) and ``earlier`` (the others since the member's previous event)."""

    seq: int
    role: str
    call: int
    earlier: list[int] = Field(default_factory=list)


class Label(BaseModel):
    """A failure or audit finding, at the event its quote was found in (``seq``), or on the
    whole session when none was (``seq`` null)."""

    seq: int | None = None
    source: Literal["failure", "audit", "check"]
    code: str
    title: str = ""
    detail: str = ""
    quote: str = ""
    severity: str | None = None
    attribution: str | None = None
    verified: bool | None = None
    critical: bool = False


class SessionSummary(BaseModel):
    """Who, what and how it ended, for the viewer's header."""

    session_id: str
    folder: str
    task: str
    instance: str = ""
    team: list[dict[str, str]] = Field(default_factory=list)  # [{"role", "kind"}]
    status: str = "unknown"
    end_reason: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    ratings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    flagged: bool | None = None  # user_audit.json's verdict, when there is one
    replay_note: str | None = None  # why the final state was not checked, if it was not
    replay_error: str | None = None  # the log did not replay past this point
    files: dict[str, str] = Field(default_factory=dict)  # optional file -> "read" / why not


class TrajectoryPayload(BaseModel):
    """Everything the viewer shows of one session."""

    version: int = PAYLOAD_VERSION
    session: SessionSummary
    roles: list[str]
    #: The task's action specs (name, description, params), to describe actions in words.
    action_specs: list[dict[str, Any]] = Field(default_factory=list)
    events: list[TimelineEvent]
    replayed: int = 0  # how many events (from the first) have states: all, unless replay failed
    values: list[dict[str, Any]]
    views: dict[str, list[ViewPoint]]
    messages: list[dict[str, Any]]
    chat: list[ChatPoint]
    state: list[StatePoint]
    changes: list[EventChanges]
    calls: dict[str, list[LMCall]] = Field(default_factory=dict)
    call_matches: list[CallMatch] = Field(default_factory=list)
    unmatched_calls: dict[str, int] = Field(default_factory=dict)
    labels: list[Label] = Field(default_factory=list)


def encode(payload: TrajectoryPayload) -> bytes:
    """The payload as gzipped UTF-8 JSON: what the widget's ``payload`` trait holds and the HTML
    export embeds. Every text is valid Unicode (a lone surrogate becomes U+FFFD)."""
    text = dumps(payload.model_dump(mode="json"))  # NaN would break the browser's JSON.parse
    return gzip.compress(clean_text(text).encode("utf-8"), compresslevel=6, mtime=0)


def decode(data: bytes) -> dict[str, Any]:
    """A payload from :func:`encode`, as plain JSON data."""
    return json.loads(gzip.decompress(data).decode("utf-8"))
