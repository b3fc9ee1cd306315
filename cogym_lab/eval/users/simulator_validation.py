"""Validating the simulated user as the Co-Gym paper did (Appendix D, Table 7).

The paper had people rate sampled simulated trajectories on three yes/no questions, three raters
each, and reported the share rated positive by majority vote:

* **accuracy**: does the simulated user respond as its goal and hidden information call for?
* **consistency**: does it stay coherent with itself from turn to turn?
* **plausibility**: would a reasonable person behave like this?

Here the unit is finer: a **sheet** (:func:`sheet_rows`, written as CSV by :func:`write_sheet`)
has one row per act of a simulated user (messages, task actions, answers to confirmations,
pauses, finishing; waits left out), with the agent's last message before it for context, and a
cell per question for the rater to fill with yes or no (``1``/``0``, ``y``/``n``, ``true``/
``false``; blank means not rated). Several raters each fill a copy and put their name in the
``rater`` column; :func:`read_sheets` reads them back and rejects a bad row by file, line and
column. An LM can fill the same sheet (:func:`lm_rows`, rater ``lm:<model>``).

:func:`measures` gives, per task and per kind of rater (``human``, ``lm``):

* per turn: the raters' majority vote on each question (a tie decides nothing and is counted
  apart, as ``undecided``), and the share of decided turns voted positive;
* per session, the paper's unit: a session is positive on a question when none of its decided
  turns is voted negative (and at least one is decided); the share of such sessions;
* where both people and an LM rated the same turns, how often the LM's vote matches the
  people's (``agreement``), to tell whether the LM can stand in for them.
"""

from __future__ import annotations

import csv
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cogym_lab.core.messages import EventType
from cogym_lab.core.text import clean_text
from cogym_lab.errors import CogymError
from cogym_lab.eval.judging.judges import Judge, session_log
from cogym_lab.eval.users.sources import hidden_information, instructions, simulated_users
from cogym_lab.records.trajectory import SessionRecord

MEASURES = ("accuracy", "consistency", "plausibility")
COLUMNS = ["session_dir", "session_id", "task", "instance", "role", "seq", "act", "text",
           "agent_before", *MEASURES, "rater", "note"]
LM_RATER = "lm:"
TEXT_CHARS = 2000  # of one act or message in a cell
_YES = {"1", "1.0", "y", "yes", "true", "t", "+"}  # "1.0": a spreadsheet's number
_NO = {"0", "0.0", "n", "no", "false", "f", "-"}


class SheetRow(BaseModel):
    """One act of a simulated user, with the three ratings (``None``: not rated)."""

    session_dir: str
    session_id: str
    task: str
    instance: str
    role: str
    seq: int
    act: str
    text: str
    agent_before: str = ""
    accuracy: bool | None = None
    consistency: bool | None = None
    plausibility: bool | None = None
    rater: str = ""
    note: str = ""

    @property
    def source(self) -> str:
        """``lm`` for a row an LM rated, else ``human``."""
        return "lm" if self.rater.startswith(LM_RATER) else "human"


class SheetError(CogymError, ValueError):
    """A ratings sheet that cannot be read: the message names the file, line and column."""


# -- the sheet --------------------------------------------------------------------------------

# A person's live edits (keystrokes as Yjs updates) are told once typing pauses, as an action.
_SKIPPED = {EventType.WAIT, EventType.TICK, EventType.CLOCK, EventType.START, EventType.END,
            EventType.EDIT}


def _cell(text: str) -> str:
    """``text`` made safe for a spreadsheet: valid Unicode, no NUL, not read as a formula."""
    text = clean_text(text).replace("\x00", "\ufffd")
    if len(text) > TEXT_CHARS:
        text = text[:TEXT_CHARS] + " …"
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def sheet_rows(record: SessionRecord) -> list[SheetRow]:
    """The unrated rows of ``record``: one per act of each simulated user."""
    users = set(simulated_users(record))
    messages = {message.seq: message for message in record.messages}
    rows = []
    agent_before = ""
    for event in record.events:
        if event.seq in messages and event.actor not in users and event.actor is not None:
            agent_before = messages[event.seq].text
        if event.actor not in users or event.type in _SKIPPED or event.actor is None:
            continue
        if event.seq in messages:
            text = messages[event.seq].text
        else:
            text = event.action or ""
            if event.status == "error":
                text += f" (refused: {event.error or ''})"
        rows.append(SheetRow(session_dir=str(record.path), session_id=record.session_id,
                             task=record.task, instance=record.instance, role=event.actor,
                             seq=event.seq, act=event.type.value, text=_cell(text),
                             agent_before=_cell(agent_before)))
    return rows


def write_sheet(rows: Iterable[SheetRow], path: str | Path) -> Path:
    """Write ``rows`` as a CSV sheet (UTF-8, a header row, yes/no as ``1``/``0``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            values: dict[str, Any] = row.model_dump()
            for name in MEASURES:
                values[name] = "" if values[name] is None else int(values[name])
            writer.writerow({k: _cell(str(v)) if isinstance(v, str) else v
                             for k, v in values.items()})
    return target


def _rating(value: str, where: str) -> bool | None:
    word = value.strip().lower()
    if not word:
        return None
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise SheetError(f"{where}: {value!r} is not a rating; write yes or no (1 or 0), or leave "
                     "it blank")


def read_sheet(path: str | Path) -> list[SheetRow]:
    """The rows of one filled-in sheet. Raises :class:`SheetError` for a missing column, a
    row without a session or event number, or a rating that is not yes, no or blank."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise SheetError(f"{source}: not UTF-8 text ({error.reason}); save the sheet as CSV "
                         "UTF-8") from None
    reader = csv.DictReader(text.replace("\x00", "\ufffd").splitlines(keepends=True))
    missing = [c for c in ("session_dir", "seq", *MEASURES) if c not in (reader.fieldnames or [])]
    if missing:
        raise SheetError(f"{source}: no column {', '.join(missing)}; the sheet's header must "
                         f"keep the columns {', '.join(COLUMNS)}")
    rows = []
    for line, raw in enumerate(reader, start=2):
        where = f"{source}, line {line}"
        if None in raw:
            raise SheetError(f"{where}: more cells than columns")
        if not any((value or "").strip() for value in raw.values()):
            continue  # an empty line
        seq_text = (raw.get("seq") or "").strip()
        if not re.fullmatch(r"\d+", seq_text):
            raise SheetError(f"{where}, column seq: {seq_text!r} is not an event number")
        if not (raw.get("session_dir") or "").strip():
            raise SheetError(f"{where}, column session_dir: empty")
        ratings = {name: _rating(raw.get(name) or "", f"{where}, column {name}")
                   for name in MEASURES}
        rows.append(SheetRow(
            session_dir=raw["session_dir"].strip(),
            session_id=(raw.get("session_id") or "").strip(), task=(raw.get("task") or ""),
            instance=(raw.get("instance") or ""), role=(raw.get("role") or ""),
            seq=int(seq_text), act=(raw.get("act") or ""), text=(raw.get("text") or ""),
            agent_before=(raw.get("agent_before") or ""), rater=(raw.get("rater") or "").strip(),
            note=(raw.get("note") or ""), **ratings))
    return rows


def read_sheets(paths: Iterable[str | Path]) -> list[SheetRow]:
    """The rows of several sheets; one rater may rate a turn once."""
    rows: list[SheetRow] = []
    seen: dict[tuple[str, int, str], str] = {}
    for path in paths:
        for row in read_sheet(path):
            key = (row.session_dir, row.seq, row.rater)
            if key in seen:
                raise SheetError(f"{path}: rater {row.rater or '(unnamed)'} rated event "
                                 f"{row.seq} of {row.session_dir} twice (also in {seen[key]})")
            seen[key] = str(path)
            rows.append(row)
    return rows


# -- the LM rater -------------------------------------------------------------------------------


class _TurnRating(BaseModel):
    turn: int
    accuracy: bool | None = None
    consistency: bool | None = None
    plausibility: bool | None = None
    note: str = ""


class _LMRatings(BaseModel):
    ratings: list[Any]


def _yes_no(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _YES | _NO:
        return value.strip().lower() in _YES
    return None


def _read_lm(answer: _LMRatings, count: int) -> dict[int, _TurnRating]:
    rated: dict[int, _TurnRating] = {}
    for entry in answer.ratings:
        if not isinstance(entry, dict) or not isinstance(entry.get("turn"), int) \
                or not 1 <= entry["turn"] <= count:
            continue
        values = {name: _yes_no(entry.get(name)) for name in MEASURES}
        if any(value is None for value in values.values()):
            continue
        note = entry.get("note")
        rated[entry["turn"]] = _TurnRating(turn=entry["turn"], note=clean_text(note)
                                           if isinstance(note, str) else "", **values)
    return rated


async def lm_rows(judge: Judge, record: SessionRecord, task: str = "") -> list[SheetRow] | None:
    """``record``'s sheet rows rated by ``judge`` (rater ``lm:<model>``); ``None`` when it
    gave no rating for every turn after one retry, or its LM failed."""
    rows = sheet_rows(record)
    if not rows:
        return []
    roles = sorted({row.role for row in rows})
    turns = "\n".join(f"[T{n}] event {row.seq}, {row.role} {row.act}: {row.text}"
                      for n, row in enumerate(rows, start=1))

    def complete(answer: _LMRatings) -> None:
        missing = sorted(set(range(1, len(rows) + 1)) - set(_read_lm(answer, len(rows))))
        if missing:
            raise ValueError(f"no yes/no ratings for turns {missing}; rate all {len(rows)}")

    answer = await judge.ask(
        "simulator_validation", _LMRatings, "judge:simulator_validation", check=complete,
        task=task or "(not given)", roles=", ".join(roles),
        hidden="\n\n".join(hidden_information(record, role)[0] or "(none recorded)"
                           for role in roles),
        instructions="\n\n".join(instructions(record, role) for role in roles).strip()
        or "(not recorded)",
        transcript=session_log(record)[:judge.transcript_chars], turns=turns, count=len(rows))
    if answer is None:
        return None
    rated = _read_lm(answer, len(rows))
    return [row.model_copy(update={
        "rater": LM_RATER + judge.name, "note": rated[n].note,
        **{name: getattr(rated[n], name) for name in MEASURES}})
        for n, row in enumerate(rows, start=1)]


# -- the measures ------------------------------------------------------------------------------


def _vote(values: Sequence[bool]) -> bool | None:
    yes = sum(values)
    no = len(values) - yes
    return None if yes == no else yes > no


def _votes(rows: Sequence[SheetRow], measure: str) -> dict[tuple[str, int], bool | None]:
    """(session, event) -> the raters' majority on ``measure`` (``None``: a tie)."""
    given: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for row in rows:
        value = getattr(row, measure)
        if value is not None:
            given[(row.session_dir, row.seq)].append(value)
    return {key: _vote(values) for key, values in given.items()}


def _share(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else math.nan


def measures(rows: Sequence[SheetRow]) -> list[dict[str, Any]]:
    """One row per task and kind of rater (``human``, ``lm``), and one per kind over every
    task (``task`` ``all``): the raters, sessions and turns with at least one rating, and each
    question's shares (see the module doc)."""
    groups: dict[tuple[str, str], list[SheetRow]] = defaultdict(list)
    for row in rows:
        groups[(row.task or "-", row.source)].append(row)
        groups[("all", row.source)].append(row)
    human = {m: _votes([r for r in rows if r.source == "human"], m) for m in MEASURES}
    out = []
    for (task, source), members in sorted(groups.items(), key=lambda item: (
            item[0][0] == "all", item[0])):
        rated = [r for r in members if any(getattr(r, m) is not None for m in MEASURES)]
        if not rated:
            continue  # a blank sheet, or a kind of rater that rated nothing here
        result: dict[str, Any] = {
            "task": task, "raters": source,
            "rater_names": len({r.rater for r in rated}),
            "sessions": len({r.session_dir for r in rated}),
            "turns": len({(r.session_dir, r.seq) for r in rated})}
        for measure in MEASURES:
            votes = _votes(members, measure)
            decided = {key: vote for key, vote in votes.items() if vote is not None}
            by_session: dict[str, list[bool]] = defaultdict(list)
            for (session, _), vote in decided.items():
                by_session[session].append(vote)
            result[measure] = _share(list(decided.values()))
            result[f"{measure}_sessions"] = _share([all(v) for v in by_session.values()])
            result[f"{measure}_undecided"] = len(votes) - len(decided)
            if source == "lm":
                both = [vote == human[measure][key] for key, vote in decided.items()
                        if human[measure].get(key) is not None]
                result[f"{measure}_agreement"] = _share(both)
        out.append(result)
    return out

