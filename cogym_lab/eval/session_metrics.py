"""Every per-session metric of one session: what needs no LM comes from the log, the rest from
the judges when one is given."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from cogym_lab.core.messages import EventType
from cogym_lab.eval.judging.failure_taxonomy import categories, taxonomy_for
from cogym_lab.eval.judging.failures import verified_evidence
from cogym_lab.eval.judging.judges import Judge
from cogym_lab.eval.judging.labels import (
    FAILURE_CATEGORIES,
    FailureAnnotation,
    FailureTaxonomy,
    MessageLabel,
    UserAudit,
)
from cogym_lab.eval.metrics.autonomy import controlled_autonomy, party_actions, user_env_act_ratio
from cogym_lab.eval.metrics.effort import TAUS, EffortTrace, carry_forward, effort_tokens
from cogym_lab.eval.metrics.initiative import initiative_counts, initiative_entropy
from cogym_lab.eval.metrics.interaction import system_agent_type
from cogym_lab.eval.metrics.outcome import collab_score
from cogym_lab.eval.metrics.progress import ProgressSource, round_progress
from cogym_lab.eval.metrics.rounds import ReplayFailed, grade_rounds, split_rounds
from cogym_lab.eval.users.audit import audit_or_read, audit_session, read_audit
from cogym_lab.records.trajectory import SessionRecord

log = logging.getLogger(__name__)


@cache
def task_description(task: str, env_args_json: str) -> str:
    """The instruction the team started from, rebuilt from the task's registry entry ("" when
    the task cannot be built here)."""
    import json

    from cogym_lab.envs import make_env

    try:
        return make_env(task, **json.loads(env_args_json)).task_description
    except Exception as error:  # noqa: BLE001 - no data on this machine, an unknown task
        log.info("no task description for %s: %s", task, error)
        return ""


@dataclass
class SessionMetrics:
    """One session with its judged labels and its effort trace."""

    record: SessionRecord
    labels: list[MessageLabel] | None = None
    effort: EffortTrace | None = None
    failures: FailureAnnotation | None = None  # the five categories, from ``taxonomy``
    taxonomy: FailureTaxonomy | None = None  # failures.json: the fine-grained types
    audit: UserAudit | None = None  # user_audit.json: the simulated user's errors and checks
    notes: list[str] = field(default_factory=list)
    _row: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[str, str, str]:
        """The system it belongs to: task, agent type, model. A session under strict
        turn-taking belongs to ``<agent type> [turns]`` (:mod:`cogym_lab.eval.metrics.interaction`),
        so no table merges the two interactions into one system."""
        return (self.record.task, system_agent_type(self.record), self.record.model)

    def initiative(self) -> dict[str, int] | None:
        if self.labels is None:
            return None
        senders = [message.sender for message in self.record.messages]
        return dict(initiative_counts(senders, [label.initiative for label in self.labels]))

    def row(self) -> dict[str, Any]:
        """The session's metrics as one flat table row."""
        if self._row is None:
            self._row = self._build_row()
        return dict(self._row)

    def _build_row(self) -> dict[str, Any]:
        record = self.record
        actions = party_actions(record)
        agents, humans = record.agent_roles, record.human_roles
        agent_tokens, user_tokens = effort_tokens(record)
        autonomy = controlled_autonomy(record, self.labels)
        counts = self.initiative()
        initiative_total = sum(counts.values()) if counts else 0
        leakage = record.leakage
        row: dict[str, Any] = {
            "run": record.run_name, "session_id": record.session_id, "task": record.task,
            "protocol": record.protocol.name, "interaction": record.interaction,
            "data": record.data,
            "instance": record.instance, "agent_type": record.agent_type, "model": record.model,
            "team": ",".join(f"{role}:{kind}" for role, kind in record.kinds.items()),
            "status": record.status, "error": record.error, "end_reason": record.end_reason,
            "outcome_class": record.outcome_class, "cause": record.cause,
            "delivered": record.delivered, "performance": record.performance,
            "collab_score": collab_score(record.delivered, record.performance),
            "messages": len(record.messages), "team_size": len(record.roles),
            # Not applicable (None, "/" in reports, as the paper prints it for the Fully
            # Autonomous Agent) to a team of one: there is no one to share initiative with.
            "h_init": None if len(record.roles) < 2 else initiative_entropy(
                counts, record.roles,
                without_initiative=record.protocol.h_init_without_initiative)
            if counts is not None else math.nan,
            "agent_initiative_share": (sum(counts.get(r, 0) for r in agents) / initiative_total
                                       if counts and initiative_total else math.nan),
            "user_env_act_ratio": user_env_act_ratio(record),
            "agent_task_actions": sum(actions[r].task_actions for r in agents),
            "agent_collaboration_acts": sum(actions[r].collaboration_acts for r in agents),
            "human_task_actions": sum(actions[r].task_actions for r in humans),
            "human_collaboration_acts": sum(actions[r].collaboration_acts for r in humans),
            "agent_refused": sum(actions[r].refused for r in agents),
            "confirmation_requests": autonomy.confirmation_requests,
            "confirmations_answered": autonomy.confirmations_answered,
            "halts": autonomy.reported_halts,
            "controlled_autonomy": autonomy.total,
            "leaks": len(leakage["leaks"]) if leakage and leakage.get("checked") else math.nan,
            "satisfaction": _mean(record.rating_values("satisfaction")),
            "outcome_rating": _mean(record.rating_values("outcome_rating")),
            "agent_tokens": agent_tokens, "user_tokens": user_tokens,
            "agent_user_token_ratio": agent_tokens / user_tokens if user_tokens else math.nan,
        }
        effort = self.effort
        row["rounds"] = effort.rounds if effort else math.nan
        row["utility_first_update"] = effort.utility_first_update if effort else math.nan
        row["utility_final"] = effort.utility_final if effort else math.nan
        row["utility_overall"] = effort.utility_max if effort else math.nan
        row["refinement_gain"] = effort.refinement_gain if effort else math.nan
        row["progress_source"] = effort.progress_source if effort else None
        for tau in TAUS:
            row[f"usability_drop@{tau}"] = effort.usability_drop(tau) if effort else math.nan
        for name in FAILURE_CATEGORIES:
            row[f"failure_{name}"] = (getattr(self.failures, name).present
                                      if self.failures else math.nan)
        audit = self.audit
        row["user_errors"] = (sum(e.verified for e in audit.errors)
                              if audit and audit.reviewed else math.nan)
        row["user_flagged"] = audit.flagged if audit else math.nan
        return row

    def failure_rows(self) -> list[dict[str, Any]]:
        """One row per failure type the annotator found (unsupported ones too: their
        ``verified_quotes`` is 0), or per category for an annotation without types, with
        its evidence quotes and how many of them the log holds."""
        if self.taxonomy is not None:
            return [{"session_id": self.record.session_id, "task": self.record.task,
                     "agent_type": self.record.agent_type, "category": finding.category,
                     "code": finding.code, "attribution": finding.attribution,
                     "evidence": " | ".join(item.quote for item in finding.evidence),
                     "verified_quotes": sum(item.verified for item in finding.evidence)}
                    for finding in self.taxonomy.findings]
        if self.failures is None:
            return []
        evidence = verified_evidence(self.record, self.failures)
        return [{"session_id": self.record.session_id, "task": self.record.task,
                 "agent_type": self.record.agent_type, "category": name,
                 "evidence": " | ".join(getattr(self.failures, name).evidence),
                 "verified_quotes": len(evidence[name])}
                for name in FAILURE_CATEGORIES if getattr(self.failures, name).present]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


async def measure_session(record: SessionRecord, judge: Judge | None, *,
                          effort: bool = True, failures: bool = True,
                          audit: bool = True, progress: ProgressSource = "user"
                          ) -> SessionMetrics:
    """Compute one session's metrics: the judged labels, the graded rounds, the failure
    taxonomy and the simulated-user audit (the last three only on request).

    The taxonomy and the audit are read from ``failures.json`` and ``user_audit.json`` when the
    session has them; with a judge, a missing one is made and written there, so no report pays
    for them twice. Without a judge, a missing audit is only the programmatic checks, made in
    memory (nothing is written). ``progress``: whose per-round progress ratings the usability
    drop uses (:mod:`cogym_lab.eval.metrics.progress`): ``"user"``, the simulated user's own when
    it rated every round, else the judge's; ``"judge"``, always the judge's."""
    import json

    metrics = SessionMetrics(record)
    if not record.events:  # failed before it started: nothing to judge or replay
        metrics.notes.append(f"{record.session_id}: no events ({record.error or record.status})")
        return metrics
    task = task_description(record.task, json.dumps(record.env_args, sort_keys=True))
    if judge is not None:
        metrics.labels = await judge.label_messages(record, task)
        if metrics.labels is None:
            metrics.notes.append(f"{record.session_id}: the message judge gave no labels")
    clocked = any(event.type is EventType.CLOCK for event in record.events)
    if effort and clocked:  # rounds of messages mean nothing in a game played on a clock
        metrics.notes.append(f"{record.session_id}: no effort metrics (a clocked game: see the "
                             "real-time measures)")
    elif effort:
        rounds = split_rounds(record)
        try:
            graded = await grade_rounds(record, rounds,
                                        grader_lm=judge.lm if judge is not None else None)
        except ReplayFailed as error:
            metrics.notes.append(f"{record.session_id}: no effort metrics ({error})")
        else:
            scores = [(g.scores or {}).get("performance", math.nan) if g.changed else None
                      for g in graded]
            # k': the first round an agent changed the outcome (paper 002); None when no
            # agent ever did (the trace then takes the overall utility: no refinement gain).
            first = next((g.index for g in graded if g.changed and g.agent_changed), None)
            trace = EffortTrace(carry_forward(scores), first_update=first)
            rated = await round_progress(record, rounds, [g.outcome for g in graded], task,
                                         judge, progress)
            trace.progress, trace.progress_source = rated.ratings, rated.source
            if rated.note:
                metrics.notes.append(rated.note)
            metrics.effort = trace
    if failures:
        metrics.taxonomy = await taxonomy_for(record, judge, task)
        if metrics.taxonomy is not None:
            metrics.failures = categories(metrics.taxonomy)
        elif judge is not None:
            metrics.notes.append(f"{record.session_id}: the failure annotator gave no usable "
                                 "reply")
    if audit:
        if judge is None:
            metrics.audit = read_audit(record.path) or await audit_session(record, None)
        else:
            metrics.audit = (await audit_or_read(record, judge))[0]
    return metrics
