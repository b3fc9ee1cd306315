"""The simulated-user audit: is the simulated person a fair stand-in for a real one?

τ²-bench found up to 30% of failed trajectories caused by its user simulator (pull request
392), and one prompt fix to when the simulator may stop moved a score from 63% to 79% (issue
182, pull request 297). The Co-Gym paper validated its simulator with people (Appendix D). This
module checks every session's simulated user(s) two ways:

* an LM reviewer (:func:`review`) reads the session with the user's hidden information and
  instructions (:mod:`cogym_lab.eval.users.sources`) and tags each error of the user with one of
  :data:`USER_ERROR_TYPES`, a severity (helped the agent, hindered it, minor) and a quote. Each
  quote is checked against the log and placed at its event (:mod:`cogym_lab.eval.judging.quotes`);
* programmatic checks (:mod:`cogym_lab.eval.users.checks`).

A session is **flagged** when it has a critical error: a reviewer error whose severity is
``hindered`` and whose quote was verified in the log, or any failed programmatic check. A
flagged session's outcome may say more about the simulator than about the agent; rerun it
(``cogym-lab eval audit --rerun-flagged``) or leave it out. Errors that *helped* the agent are
counted in the error rates but do not flag: the session is valid, only easier.

The result goes to ``<session>/user_audit.json``
(:class:`~cogym_lab.eval.judging.labels.UserAudit`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cogym_lab.core.text import clean_text
from cogym_lab.eval.judging.judges import Judge, session_log
from cogym_lab.eval.judging.labels import (
    UserAudit,
    UserCheck,
    UserError,
)
from cogym_lab.eval.judging.quotes import QuoteLocator
from cogym_lab.eval.users.checks import run_checks
from cogym_lab.eval.users.sources import (
    hidden_information,
    instructions,
    simulated_users,
    task_facts,
)
from cogym_lab.records.label_files import AUDIT_FILE, read_label_file, write_label_file
from cogym_lab.records.trajectory import SessionRecord, find_sessions, load_session

log = logging.getLogger(__name__)

SEVERITIES = ("helped", "hindered", "minor")


@dataclass(frozen=True)
class UserErrorType:
    """One kind of simulated-user error: its key, a short name and what it means."""

    key: str
    name: str
    description: str


USER_ERROR_TYPES: dict[str, UserErrorType] = {t.key: t for t in (
    UserErrorType("early_disclosure", "Revealed hidden information too early",
                  "handed the agent private information it had not asked for and did not yet "
                  "need, or much of it at once, against its instructions, so the agent never "
                  "had to find it out"),
    UserErrorType("self_contradiction", "Contradicted its own preferences",
                  "said something that goes against a wish it stated earlier or against its "
                  "private information"),
    UserErrorType("premature_end", "Ended before the agent acted",
                  "finished the session while a change it asked for or agreed to was still "
                  "undone, or before the work met its request"),
    UserErrorType("invented_preference", "Invented a preference",
                  "stated a wish, constraint or fact that is in neither the request nor its "
                  "private information"),
    UserErrorType("ignored_question", "Ignored a question",
                  "left a direct question of the agent unanswered, or answered something "
                  "else"),
    UserErrorType("action_against_preferences", "Took a task action against its preferences",
                  "changed the workspace itself in a way that goes against its own request or "
                  "private information"),
)}

#: Spellings an LM may use for a type (lower case, separators as underscores).
_TYPE_ALIASES = {
    "revealed_hidden_information_too_early": "early_disclosure",
    "contradicted_its_own_preferences": "self_contradiction",
    "ended_before_the_agent_acted": "premature_end",
    "invented_a_preference": "invented_preference",
    "ignored_a_question": "ignored_question",
    "took_a_task_action_against_its_preferences": "action_against_preferences",
}


class _ReviewReply(BaseModel):
    """The reviewer's reply before each entry is checked (entries are read one by one, so one
    bad entry costs only itself)."""

    errors: list[Any]


@dataclass
class Review:
    """The reviewer's errors, read from its reply, and how many entries were left out."""

    errors: list[UserError]
    dropped: int = 0


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def _key(value: object) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(value).lower()).strip("_")


def error_type(value: object) -> str | None:
    """The type key ``value`` names (by key, alias or name), or ``None``."""
    key = _key(value)
    key = _TYPE_ALIASES.get(key, key)
    if key in USER_ERROR_TYPES:
        return key
    for known in USER_ERROR_TYPES.values():
        if key == _key(known.name):
            return known.key
    return None


def _text(value: object) -> str:
    return clean_text(value) if isinstance(value, str) else ""


def read_review(reply: _ReviewReply) -> Review:
    """The usable errors of a reply: an entry with no known type or severity is dropped."""
    errors, dropped = [], 0
    for entry in reply.errors:
        if not isinstance(entry, dict):
            dropped += 1
            continue
        kind = error_type(entry.get("type"))
        said = _key(entry.get("severity"))  # "hindered", "Hindered the agent"
        severity = next((s for s in SEVERITIES if said == s or said.startswith(s + "_")), None)
        if kind is None or severity is None:
            dropped += 1
            continue
        errors.append(UserError(type=kind, severity=severity,  # type: ignore[arg-type]
                                quote=_text(entry.get("quote")),
                                explanation=_text(entry.get("explanation"))))
    return Review(errors, dropped)


def _types_text() -> str:
    return "\n".join(f'- "{t.key}" ({t.name}): {t.description}.'
                     for t in USER_ERROR_TYPES.values())


async def review(judge: Judge, record: SessionRecord, roles: Sequence[str],
                 task: str = "") -> Review | None:
    """The LM reviewer's errors for the simulated users ``roles`` (``None`` when it gave no
    usable reply after one retry, or its LM failed)."""
    hidden = "\n\n".join(f"{role}: {text or '(none recorded)'}" if len(roles) > 1
                         else text or "(none recorded)"
                         for role in roles for text in [hidden_information(record, role)[0]])
    given = "\n\n".join(instructions(record, role) for role in roles).strip()

    def usable(answer: _ReviewReply) -> None:
        found = read_review(answer)
        if found.dropped and not found.errors:
            raise ValueError("no error had a known type and severity: use a type from "
                             f"{', '.join(USER_ERROR_TYPES)} and a severity from "
                             f"{', '.join(SEVERITIES)}")

    transcript = shorten(session_log(record), judge.transcript_chars)
    answer = await judge.ask("user_audit", _ReviewReply, "judge:user_audit", check=usable,
                             task=task or "(not given)", roles=", ".join(roles),
                             hidden=hidden, instructions=given or "(not recorded)",
                             transcript=transcript, types=_types_text(),
                             type_keys=", ".join(f'"{k}"' for k in USER_ERROR_TYPES))
    return read_review(answer) if answer is not None else None


def verify(record: SessionRecord, errors: Iterable[UserError]) -> list[UserError]:
    """``errors`` with each quote checked against the log, placed at its event, and marked
    critical when verified and ``hindered``."""
    locator = QuoteLocator(record)
    checked = []
    for error in errors:
        where = locator.locate(error.quote)
        checked.append(error.model_copy(update={
            "verified": where.verified, "seq": where.seq,
            "critical": where.verified and error.severity == "hindered"}))
    return checked


def is_flagged(errors: Iterable[UserError], checks: Iterable[UserCheck]) -> bool:
    """A critical error (verified, ``hindered``) or a failed check flags a session."""
    return any(error.critical for error in errors) or any(True for _ in checks)


async def audit_session(record: SessionRecord, judge: Judge | None) -> UserAudit | None:
    """Audit ``record``'s simulated users (``None`` when it has none). Without a judge, only
    the programmatic checks run, and the audit says it was not reviewed."""
    roles = simulated_users(record)
    if not roles:
        return None
    facts = task_facts(record)
    notes = []
    if not facts.facts:
        notes.append("no structured hidden information (the task declares none, or cannot be "
                     "rebuilt here): the contradiction check did not run")
    checks = run_checks(record, roles, facts.facts)
    found: Review | None = None
    if judge is not None and record.events:
        found = await review(judge, record, roles, facts.description)
        if found is None:
            notes.append("the reviewer gave no usable review")
    errors = verify(record, found.errors) if found is not None else []
    return UserAudit(reviewer=judge.name if judge is not None and found is not None else "",
                     errors=errors, checks=checks, flagged=is_flagged(errors, checks),
                     roles=roles, reviewed=found is not None,
                     dropped=found.dropped if found is not None else 0,
                     notes=[note for note in notes if note])


def read_audit(session_dir: str | Path) -> UserAudit | None:
    """The session's ``user_audit.json``, or ``None`` when it has none or it is unreadable."""
    return read_label_file(Path(session_dir) / AUDIT_FILE, UserAudit)


def write_audit(session_dir: str | Path, audit: UserAudit) -> Path:
    """Write ``audit`` to the session's ``user_audit.json`` (atomically) and return the path."""
    return write_label_file(Path(session_dir) / AUDIT_FILE, audit)


def _reusable(saved: UserAudit | None, judge: Judge | None) -> bool:
    """An audit on file is kept unless a judge could now review what no LM reviewed."""
    return saved is not None and (saved.reviewed or judge is None)


async def audit_or_read(record: SessionRecord, judge: Judge | None, *, force: bool = False
                        ) -> tuple[UserAudit | None, bool]:
    """``(audit, reused)``: the session's audit from ``user_audit.json`` when one there is
    reusable (and not ``force``), else made now and written there, unless a judge was given
    and gave no usable review (so that the next run tries again)."""
    saved = None if force else read_audit(record.path)
    if saved is not None and _reusable(saved, judge):
        return saved, True
    audit = await audit_session(record, judge)
    if audit is not None and (audit.reviewed or judge is None):
        write_audit(record.path, audit)
    return audit, False


@dataclass
class AuditedSession:
    """One session of an ``eval audit`` run: its record and audit (``None``: no simulated
    user), and whether the audit was read from an earlier run."""

    record: SessionRecord
    audit: UserAudit | None
    reused: bool


async def aaudit(dirs: Iterable[str | Path], judge: Judge | None, *, force: bool = False
                 ) -> list[AuditedSession]:
    """Audit every session under ``dirs``; sessions audited before are read back (a reviewed
    audit is redone only with ``force``)."""
    records = [load_session(path) for path in find_sessions(dirs)]

    async def one(record: SessionRecord) -> AuditedSession:
        audit, reused = await audit_or_read(record, judge, force=force)
        return AuditedSession(record, audit, reused)

    return list(await asyncio.gather(*(one(record) for record in records)))


def summary_lines(audited: Sequence[AuditedSession]) -> list[str]:
    """What ``eval audit`` prints: counts, each flagged session and why."""
    with_users = [a for a in audited if a.audit is not None]
    flagged = [a for a in with_users if a.audit is not None and a.audit.flagged]
    errors = sum(len(a.audit.errors) for a in with_users if a.audit is not None)
    lines = [f"{len(audited)} sessions, {len(with_users)} with a simulated user "
             f"({sum(a.reused for a in with_users)} audited before), {errors} user errors, "
             f"{len(flagged)} flagged"]
    for item in flagged:
        assert item.audit is not None
        reasons = [f"{e.type} ({e.severity}) at event {e.seq}: {shorten(e.quote, 80)!r}"
                   for e in item.audit.errors if e.critical]
        reasons += [f"{c.check}: {shorten(c.detail, 120)}" for c in item.audit.checks]
        lines.append(f"flagged {item.record.path}: " + "; ".join(reasons))
    unreviewed = [a for a in with_users if a.audit is not None and not a.audit.reviewed]
    if unreviewed:
        lines.append(f"{len(unreviewed)} sessions not reviewed by an LM (no judge, or no usable "
                     "reply): programmatic checks only")
    return lines
