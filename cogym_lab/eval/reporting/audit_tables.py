"""The report's tables for the simulated-user audit, the failure taxonomy and the simulator
validation sheets (computed here so that ``reports`` only places them).

``user_audit`` (:func:`user_audit_rows`), one row per team (task, agent type, model) and the
simulated users' model, and one per task over its teams (``agent_type`` ``all``) when it has
several:

* ``audited``: sessions with a simulated user; ``reviewed``: those an LM reviewer read;
* over the *reviewed* sessions: ``with_errors``, the share with at least one verified error;
  ``errors_per_session``, verified errors per session; the same per type (one column per
  :data:`~cogym_lab.eval.users.audit.USER_ERROR_TYPES` key) and per severity (``helped``,
  ``hindered``, ``minor``); ``unverified``, errors whose quote is not in the log (counted
  nowhere else);
* over every *audited* session: ``checks_failed``, the share with a failed programmatic check,
  and ``flagged``, the share flagged (a verified ``hindered`` error or a failed check).

``failure_types`` (:func:`failure_type_rows`): per team, each failure type's prevalence with
its LM / scaffolding split (:func:`cogym_lab.eval.judging.failure_taxonomy.type_rows`).

``simulator_validation`` (:func:`validation_rows`): the measures of the rating sheets
(:func:`cogym_lab.eval.users.simulator_validation.measures`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cogym_lab.eval.judging.failure_taxonomy import type_rows
from cogym_lab.eval.judging.labels import FailureTaxonomy, UserAudit
from cogym_lab.eval.users.audit import SEVERITIES, USER_ERROR_TYPES
from cogym_lab.eval.users.simulator_validation import measures, read_sheets

SYSTEM = ["task", "agent_type", "model"]
Audited = tuple[tuple[str, str, str], str, UserAudit]  # (system, the users' model, the audit)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def audit_row(audits: Sequence[UserAudit]) -> dict[str, Any]:
    """The error rates of one group of audited sessions (see the module doc)."""
    reviewed = [a for a in audits if a.reviewed]
    verified = [[e for e in a.errors if e.verified] for a in reviewed]
    row: dict[str, Any] = {
        "audited": len(audits), "reviewed": len(reviewed),
        "with_errors": _mean([float(bool(errors)) for errors in verified]),
        "errors_per_session": _mean([float(len(errors)) for errors in verified])}
    for key in USER_ERROR_TYPES:
        row[key] = _mean([float(sum(e.type == key for e in errors)) for errors in verified])
    for severity in SEVERITIES:
        row[severity] = _mean([float(sum(e.severity == severity for e in errors))
                               for errors in verified])
    row["unverified"] = sum(not e.verified for a in reviewed for e in a.errors)
    row["checks_failed"] = _mean([float(bool(a.checks)) for a in audits])
    row["flagged"] = _mean([float(a.flagged) for a in audits])
    return row


def user_audit_rows(audited: Iterable[Audited]) -> list[dict[str, Any]]:
    """Rows of the ``user_audit`` table from each audited session's system, users' model and
    audit."""
    by_team: dict[tuple[str, str, str, str], list[UserAudit]] = defaultdict(list)
    by_task: dict[str, list[UserAudit]] = defaultdict(list)
    for system, users, audit in audited:
        by_team[(*system, users)].append(audit)
        by_task[system[0]].append(audit)
    rows = []
    for task in sorted(by_task):
        teams = sorted(key for key in by_team if key[0] == task)
        for key in teams:
            rows.append(dict(zip([*SYSTEM, "user_model"], key, strict=True))
                        | audit_row(by_team[key]))
        if len(teams) > 1:
            rows.append({"task": task, "agent_type": "all", "model": "-", "user_model": "-"}
                        | audit_row(by_task[task]))
    return rows


def failure_type_rows(groups: Iterable[tuple[tuple[str, str, str],
                                             Sequence[FailureTaxonomy]]]
                      ) -> list[dict[str, Any]]:
    """Rows of the ``failure_types`` table: each team's failure types (see the module doc)."""
    return [dict(zip(SYSTEM, system, strict=True)) | row
            for system, taxonomies in groups for row in type_rows(taxonomies)]


def validation_rows(sheets: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Rows of the ``simulator_validation`` table from filled-in sheets (CSV paths)."""
    return measures(read_sheets(sheets))

