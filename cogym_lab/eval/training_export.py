"""Training data from logged sessions: each member's decisions as (context, action, outcome)
records, one JSON object per line, for researchers who train collaborative agents on
trajectories (as CollabLLM and SWEET-RL do).

    cogym-lab eval export runs/collaborative --format jsonl --out decisions.jsonl

A record holds:

* ``context``: what the member had been shown when it decided, rebuilt by replaying the log
  (its view of the workspace and the chat, as the updates it was sent built them, up to the
  update it acted on: :mod:`cogym_lab.eval.shown`; nothing that arrived while it thought), and
  the LM calls behind the decision (prompt messages and reply, from its ``lm_calls.jsonl``; see
  :mod:`cogym_lab.records.decisions`);
* ``action``: the act as logged (its event type, canonical text, and whether it was accepted);
* ``outcome``: what it earned at once (the env's reward, the error of a refused act) and how
  the session ended (delivered, performance, scores, end reason): the return to credit it with.

The format is documented in ``docs/evaluation.md`` ("Training-data export"); :class:`Decision`
is its schema. Sessions that fail to replay are skipped and named in the summary.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from tqdm.auto import tqdm

from cogym_lab.core.messages import Event
from cogym_lab.core.text import clean
from cogym_lab.eval.shown import shown_before
from cogym_lab.nodes.replay import ReplayMismatch
from cogym_lab.records.decisions import calls_behind, decisions
from cogym_lab.records.trajectory import SessionRecord, find_sessions, load_session

FORMATS = ("jsonl",)


class LMCall(BaseModel):
    """One LM call behind a decision."""

    purpose: str = ""
    model: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    completion: str | None = None
    error: str | None = None


class DecisionContext(BaseModel):
    """What the member had been shown when it decided (:mod:`cogym_lab.eval.shown`)."""

    view: dict[str, Any]  # its view of the workspace, as its updates showed it
    chat: list[dict[str, Any]]  # the messages it had received: sender, text, to, seq
    #: The update that view and chat are as of: the one the act was made on when the log
    #: records it (``seen_recorded``), else the last one the member was sent before its act.
    seen_seq: int | None = None
    seen_recorded: bool = False
    lm_calls: list[LMCall] = Field(default_factory=list)


class DecisionAction(BaseModel):
    """The act as logged."""

    type: str  # the event type: action, message, wait, finish, error ...
    text: str | None  # the canonical action (``SEND_TEAMMATE_MESSAGE(message="...")`` ...)
    accepted: bool
    error: str | None = None


class SessionEnding(BaseModel):
    """How the session the decision belongs to ended."""

    end_reason: str | None
    delivered: bool
    performance: float | None  # the task grader's, in [0, 1]; None when not graded
    scores: dict[str, float] = Field(default_factory=dict)


class DecisionOutcome(BaseModel):
    reward: float | None  # what the env gave this act at once (real-time tasks score per act)
    session: SessionEnding


class Decision(BaseModel):
    """One line of the export: a member's decision with its context and outcome."""

    session_id: str
    task: str
    instance: str
    trial: int
    agent_type: str
    role: str
    kind: str  # agent, user (simulated) or person
    seq: int  # the event's number in the session's events.jsonl
    time: float
    context: DecisionContext
    action: DecisionAction
    outcome: DecisionOutcome


@dataclass
class ExportSummary:
    """What an export wrote."""

    path: Path
    records: int = 0
    sessions: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # session folder -> why


def _trial(record: SessionRecord) -> int:
    batch = record.session.get("batch")
    trial = batch.get("trial") if isinstance(batch, dict) else None
    return trial if isinstance(trial, int) else 0


def _ending(record: SessionRecord) -> SessionEnding:
    performance = record.performance
    return SessionEnding(end_reason=record.end_reason, delivered=record.delivered,
                         performance=None if math.isnan(performance) else performance,
                         scores=record.scores)


def _call(call: dict[str, Any]) -> LMCall:
    messages = call.get("messages")
    return LMCall(purpose=str(call.get("purpose") or ""), model=call.get("model"),
                  messages=[m for m in messages if isinstance(m, dict)]
                  if isinstance(messages, list) else [],
                  completion=call.get("completion"), error=call.get("error"))


def session_decisions(record: SessionRecord, *, roles: Iterable[str] | None = None
                      ) -> Iterator[Decision]:
    """The decisions of ``record`` (of ``roles`` only, when given) with their contexts.

    The context of a decision is what its member had been shown when it chose it: replay
    walks the log once, keeping each member's copy of its view and chat as its updates built
    it (:func:`cogym_lab.eval.shown.shown_before`).
    """
    wanted = set(record.roles if roles is None else roles)
    acts = {event.seq: event for event in decisions(record) if event.actor in wanted}
    if not acts:
        return
    calls = calls_behind(record)
    ending = _ending(record)
    agent_type = record.agent_type
    shown = shown_before(record.path, acts.values())
    for seq, event in acts.items():
        seen = shown[seq]
        yield _decision(record, event, agent_type, ending, DecisionContext(
            view=seen.view, chat=seen.chat, seen_seq=seen.seen_seq,
            seen_recorded=seen.recorded, lm_calls=[_call(c) for c in calls.get(seq, [])]))


def _decision(record: SessionRecord, event: Event, agent_type: str, ending: SessionEnding,
              context: DecisionContext) -> Decision:
    role = str(event.actor)
    return Decision(
        session_id=record.session_id, task=record.task, instance=record.instance,
        trial=_trial(record), agent_type=agent_type, role=role,
        kind=record.kinds.get(role, "agent"), seq=event.seq, time=event.time, context=context,
        action=DecisionAction(type=event.type.value, text=event.action,
                              accepted=event.status == "ok", error=event.error),
        outcome=DecisionOutcome(reward=event.reward, session=ending))


#: Characters other than ``\n`` that some line readers split on (Python's ``str.splitlines``
#: among them) and that JSON does not escape by itself.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_LINE_BREAK = re.compile("[\x85\u2028\u2029]")


def jsonl_line(decision: Decision) -> str:
    """One record as a line: UTF-8 text kept readable, with the Unicode line breaks escaped."""
    text = json.dumps(clean(decision.model_dump(mode="json")), ensure_ascii=False)
    return _LINE_BREAK.sub(lambda match: _LINE_BREAKS[match.group()], text)


def export(dirs: Iterable[str | Path], out: str | Path, *, format: str = "jsonl",
           roles: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
           progress: bool = False) -> ExportSummary:
    """Write the decisions of every session under ``dirs`` (session or run folders) to ``out``.

    ``roles`` keeps the named roles only; ``kinds`` the named kinds (``agent``, ``user``,
    ``person``). Sessions whose log does not replay are skipped and listed in the summary.
    ``progress`` draws a bar over the sessions on stderr.
    """
    if format not in FORMATS:
        raise ValueError(f"Unknown export format {format!r}; available: {', '.join(FORMATS)}")
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    summary = ExportSummary(path=path)
    wanted_kinds = None if kinds is None else set(kinds)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for folder in tqdm(find_sessions(dirs), desc="export", unit="session",
                           disable=not progress):
            try:
                record = load_session(folder)
                chosen = [role for role in (record.roles if roles is None else roles)
                          if role in record.kinds and (wanted_kinds is None or
                                                       record.kinds[role] in wanted_kinds)]
                found = list(session_decisions(record, roles=chosen))
            except (ReplayMismatch, ValueError, KeyError, OSError) as error:
                summary.skipped[str(folder)] = f"{type(error).__name__}: {error}"
                continue
            for decision in found:  # written only once the whole session replayed
                handle.write(jsonl_line(decision) + "\n")
                summary.by_kind[decision.kind] = summary.by_kind.get(decision.kind, 0) + 1
            summary.records += len(found)
            summary.sessions += 1
    return summary
