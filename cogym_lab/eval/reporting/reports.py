"""The evaluation report: every metric over run or session directories, as pandas tables, paper
style text, CSV and PNG files, and inline HTML in a notebook.

    from cogym_lab.eval import report
    result = report(["runs/collaborative", "runs/autonomous"], judge="gpt-4o", out="report/")
    print(result.to_text())
    result.tables["summary"]

A *system* is a task, an agent type and a model. The autonomous baseline of a task is the
``baseline`` directories when given, else the sessions in ``dirs`` whose agent is autonomous.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogym_lab.core.blocking import run_to_end
from cogym_lab.core.outcome_class import CLASS_WORDS, FAILURE_CLASSES, OUTCOME_CLASSES
from cogym_lab.eval.batch.noise import NoiseStudy, read_noise
from cogym_lab.eval.judging.failures import prevalence
from cogym_lab.eval.judging.judges import Judge, make_judge
from cogym_lab.eval.judging.labels import FAILURE_CATEGORIES
from cogym_lab.eval.metrics import effort as effort_metrics
from cogym_lab.eval.metrics import interaction as turn_taking
from cogym_lab.eval.metrics import kitchen_measures, plan_measures
from cogym_lab.eval.metrics.human_wins import add_human_win_rates
from cogym_lab.eval.metrics.outcome import (
    bootstrap_win_rate,
    delivered_performance,
    mean_and_se,
    paired_test,
    performance_scale,
    win_score,
)
from cogym_lab.eval.metrics.progress import ProgressSource
from cogym_lab.eval.reporting import audit_tables, kitchen_plot, plots, report_html
from cogym_lab.eval.session_metrics import SessionMetrics, measure_session, task_description
from cogym_lab.eval.stats import rating_tests
from cogym_lab.eval.stats.trials import DEFAULT_SUCCESS_THRESHOLD, trial_stats
from cogym_lab.eval.users.sources import user_model
from cogym_lab.records.trajectory import SessionRecord, load_sessions

AUTONOMOUS = "autonomous"
SYSTEM = ["task", "agent_type", "model"]
PaperColumns = {"delivery_rate": "Delivery", "performance": "Perf.", "collab_score": "Collab",
                "h_init": "H_init"}
Paths = str | Path | Iterable[str | Path]
TEXT_SUMMARY_COLUMNS = [*SYSTEM, "protocol", "sessions", "counted", "failed", "delivery_rate",
                        "performance", "collab_score", "h_init", "user_env_act_ratio",
                        "controlled_autonomy", "halts", "leaked_sessions", "satisfaction",
                        "outcome_rating", "agent_tokens", "user_tokens"]
PAPER_TITLE = "Outcome and process (agent type x task)"
COOKING_TITLE = ("Real-time cooking (DPT-Agent measures: IQM (SE) over the runs of each agent, "
                 "layout and partner)")
#: The report's tables after the paper-style one, in order, with their titles (text and HTML).
TABLE_TITLES = {"summary": "All metrics per system",
                "task_rates": "The task's own rates (as each task summarises its scores over "
                              "the sessions)",
                "comparison": "Against the autonomous "
                "baseline (paired test on task performance: McNemar's exact test for a task "
                "whose score is pass or fail, else a paired t-test, as `test` says; pairwise "
                "win rate with 95% bootstrap CI; "
                "human_*: the people's own comparisons in the rating form, 95% Wilson CI)",
                "effort": "Collaborative effort scaling", "actions": "Acts per party",
                "failures": "Failure prevalence (share of annotated sessions)",
                "plans": "Interactive plans (Cocoa measures; means over the planned "
                         "sessions, the item ratio over their rounds)",
                "rating_tests": "Ratings compared on the same instances (Wilcoxon "
                                "signed-rank; Co-Gym's outcome rating and satisfaction by a "
                                "paired t-test under the cogym protocol, as the paper; "
                                "Bonferroni over the items)",
                "failure_types": "Failure types by team (share of annotated sessions; "
                                 "lm / scaffolding: attributed to the LM or to the agent's "
                                 "scaffolding; paper: Co-Gym Table 10, real / simulated)",
                "user_audit": "Simulated-user audit (per reviewed session: share with a "
                              "verified error, errors by type and severity; per audited "
                              "session: failed checks, flagged)",
                "simulator_validation": "Simulator validation (share of turns voted positive; "
                                        "_sessions: share of sessions without a negative "
                                        "turn; Co-Gym Appendix D)",
                "trials": "Repeated trials (pass^k: all of k trials succeed; mean Collab Score "
                          "with 95% bootstrap interval over instances; variances of the Collab "
                          "Score; noise shares of the within-instance variance)",
                "interaction": "Turn-taking ablation (Co-Gym §5.3, Table 6): each system "
                               "under the notification protocol and under strict turns",
                "interaction_tests": "Turn-taking ablation: paired tests on the instances run "
                                     "in both modes (difference = notifications - turns; "
                                     "McNemar for 0/1 values, else paired t-test)"}


def _paths(paths: Paths | None) -> list[Path]:
    if paths is None:
        return []
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


@dataclass
class EvalReport:
    """Tables (pandas DataFrames by name), the plots made from them, and notes on what could
    not be computed."""

    tables: dict[str, pd.DataFrame]
    notes: list[str] = field(default_factory=list)
    baselines: dict[str, float] = field(default_factory=dict)  # task -> autonomous performance
    #: Whether sessions that ended for a cause outside the team count in the metrics.
    include_failures: bool = False

    def __repr__(self) -> str:
        systems = self.tables["summary"]
        return (f"<EvalReport: {len(self.tables['sessions'])} sessions, {len(systems)} systems; "
                "to_text(), tables, save(out)>")

    def figures(self) -> dict[str, Any]:
        """The plots as matplotlib figures, by file stem."""
        figures = {
            "scaling_curves": plots.scaling_curves(self.tables["scaling"], self.baselines),
            "metric_bars": plots.metric_bars(self.tables["summary"]),
            "initiative_shares": plots.initiative_shares(self.tables["summary"])}
        if not self.cooking.empty:
            figures["score_latency"] = kitchen_plot.score_latency(self.cooking)
        return figures

    @property
    def cooking(self) -> pd.DataFrame:
        """The real-time cooking measures per system (empty without such sessions)."""
        return self.tables.get("cooking", pd.DataFrame())

    def cooking_table(self) -> pd.DataFrame:
        """The real-time cooking table as the paper prints it: one row per agent, layout and
        partner, each measure as ``IQM (SE)`` (``tables["cooking"]`` has the numbers)."""
        records = [{str(k): v for k, v in row.items()}
                   for row in self.cooking.to_dict("records")]
        return pd.DataFrame(kitchen_measures.paper_table(records))

    def to_text(self) -> str:
        """Paper-style tables for a terminal."""
        parts = ["Co-Gym evaluation report", ""]
        summary = self.tables["summary"]
        if summary.empty:
            return "\n".join([*parts, "No sessions found."])
        parts += [*self.checks(), ""]
        parts += [PAPER_TITLE, _paper_table(summary).to_string(
            float_format=_fmt, na_rep="-"), ""]
        if not self.cooking.empty:
            parts += [COOKING_TITLE, self.cooking_table().to_string(index=False), ""]
        for name, title in TABLE_TITLES.items():
            table = self.tables[name]
            if table.empty:
                continue
            if name == "summary":  # the CSV has every column; the text keeps the main ones
                table = _not_applicable(table)[[c for c in TEXT_SUMMARY_COLUMNS
                                                if c in table.columns]]
            parts += [title, table.to_string(index=False, float_format=_fmt, na_rep="-"), ""]
        if self.notes:
            parts += ["Notes"] + [f"- {note}" for note in self.notes]
        return "\n".join(parts).rstrip() + "\n"

    def checks(self) -> list[str]:
        """One line each: the scoring protocol(s) followed, sessions on the sample of a task's
        data (when there are any), and the leakage check."""
        sessions = self.tables["sessions"]
        protocols = sorted(set(sessions["protocol"].dropna())) if "protocol" in sessions else []
        lines = [f"Scoring protocol: {', '.join(protocols) or 'unknown'}"
                 + (" (mixed: compare systems only within one protocol)"
                    if len(protocols) > 1 else "")]
        if "outcome_class" in sessions:
            lines.append(self.outcome_line(sessions))
        on_sample = int((sessions["data"] == "sample").sum()) if "data" in sessions else 0
        if on_sample:
            lines.append(f"Sample data: not comparable with the papers' numbers ({on_sample} of "
                         f"{len(sessions)} sessions read the small sample of their task's data "
                         "that comes with cogym_lab)")
        if "leaks" in sessions:
            checked = sessions[sessions["leaks"].notna()]
            leaked = checked[checked["leaks"] > 0]
            line = (f"Leakage check: {len(checked)} of {len(sessions)} sessions checked, "
                    f"{len(leaked)} with a leak")
            if len(leaked):
                line += ": " + ", ".join(str(s) for s in leaked["session_id"][:10])
            lines.append(line)
        return lines

    def outcome_line(self, sessions: pd.DataFrame) -> str:
        """How many sessions count, and how many ended for a cause outside the team, by
        class: the classes add up to the sessions."""
        counts = {name: int((sessions["outcome_class"] == name).sum())
                  for name in OUTCOME_CLASSES}
        line = (f"Outcomes: {len(sessions)} sessions: "
                + ", ".join(f"{counts[name]} {CLASS_WORDS[name]}" for name in OUTCOME_CLASSES))
        failed = sum(counts[name] for name in FAILURE_CLASSES)
        if not failed:
            return line
        if self.include_failures:
            return line + (" (all counted in delivery, performance and pass^k, as asked: a "
                           "failure counts as an undelivered session)")
        return line + (f" ({failed} left out of delivery, performance and pass^k: their LM, "
                       "judge or run failed, not the team; the sessions table names each "
                       "cause; include_failures / --include-failures counts them)")

    def save(self, out: str | Path) -> list[Path]:
        """Write every table as CSV, every plot as PNG and the text report; return the paths."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, table in self.tables.items():
            path = folder / f"{name}.csv"
            table.to_csv(path, index=False)
            written.append(path)
        for name, figure in self.figures().items():
            path = folder / f"{name}.png"
            path.write_bytes(plots.png_bytes(figure))
            written.append(path)
        text = folder / "report.txt"
        text.write_text(self.to_text(), encoding="utf-8")
        return [*written, text]

    def _repr_html_(self) -> str:
        """The report inline in a notebook: the text report's tables, each in a box that
        scrolls sideways when it is wider than the output, then the plots (see
        :mod:`cogym_lab.eval.reporting.report_html`)."""
        summary = self.tables["summary"]
        if summary.empty:
            return "<p>No sessions found.</p>"
        sections = [(PAPER_TITLE, report_html.paper_table_html(_paper_table(summary),
                                                                PAPER_TITLE))]
        if not self.cooking.empty:
            sections.append((COOKING_TITLE, report_html.estimates_table_html(
                self.cooking_table(), COOKING_TITLE)))
        for name, title in TABLE_TITLES.items():
            table = self.tables[name]
            if table.empty:
                continue
            if name == "summary":  # as in the text: the main columns (the CSV has them all)
                table = _not_applicable(table)[[c for c in TEXT_SUMMARY_COLUMNS
                                                if c in table.columns]]
            sections.append((title, report_html.table_html(table, title)))
        return report_html.render("Co-Gym evaluation report", self.checks(), sections,
                                  self.figures(), self.notes)


def _fmt(value: float) -> str:
    return f"{value:.3f}"


NOT_APPLICABLE = "/"


def _not_applicable(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with H_init as "/" where it does not apply (a team of one), as the Co-Gym
    paper prints it for the Fully Autonomous Agent; the numbers stay as they are elsewhere."""
    if "h_init_applies" not in summary or "h_init" not in summary or \
            summary["h_init_applies"].astype(bool).all():
        return summary
    shown = summary.copy()
    shown["h_init"] = [value if applies else NOT_APPLICABLE for value, applies
                       in zip(shown["h_init"].astype(object), shown["h_init_applies"],
                              strict=True)]
    return shown


def _paper_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows: agent type and model; columns: task x (Delivery, Perf., Collab, H_init)."""
    table = _not_applicable(summary).set_index(["agent_type", "model", "task"])[
        list(PaperColumns)]
    wide = table.rename(columns=PaperColumns).unstack("task")
    assert isinstance(wide, pd.DataFrame)  # unstacking one level of a three-level index
    columns = wide.columns
    assert isinstance(columns, pd.MultiIndex)  # (column, task)
    wide.columns = columns.swaplevel(0, 1)
    return wide.sort_index(axis=1, level=0, sort_remaining=False)


# -- building the tables ---------------------------------------------------------------------


def _system_of(metrics: SessionMetrics) -> tuple[str, str, str]:
    return metrics.key


def _group(measured: Sequence[SessionMetrics]) -> dict[tuple[str, str, str],
                                                      list[SessionMetrics]]:
    groups: dict[tuple[str, str, str], list[SessionMetrics]] = defaultdict(list)
    for metrics in measured:
        groups[_system_of(metrics)].append(metrics)
    return dict(sorted(groups.items()))


def _summary_row(system: tuple[str, str, str], every: pd.DataFrame, rows: pd.DataFrame,
                 records: list[SessionRecord]) -> dict[str, Any]:
    """One system's summary: ``every`` session's row for its counts, ``rows`` and ``records``
    (those counted: see :func:`_counted`) for its metrics."""
    n = len(rows)
    delivery = float(rows["delivered"].mean()) if n else math.nan
    perf, perf_se = mean_and_se(delivered_performance(records))
    row: dict[str, Any] = dict(zip(SYSTEM, system, strict=True))
    row |= {"protocol": ",".join(sorted(set(every["protocol"]))),
            "data": ",".join(sorted(set(every["data"].dropna()))),
            "interaction": ",".join(sorted(set(every["interaction"]))),
            "leaked_sessions": int((every["leaks"] > 0).sum()),
            "sessions": len(every), "counted": n,
            "failed": int((every["error"].notna()).sum()),
            "delivery_rate": delivery,
            "delivery_rate_se": math.sqrt(delivery * (1 - delivery) / n) if n else math.nan,
            "performance": perf, "performance_se": perf_se}
    for name in OUTCOME_CLASSES:  # the classes add up to "sessions"
        row[name] = int((every["outcome_class"] == name).sum())
    # H_init means nothing for a team of one (the autonomous baseline): reports print "/".
    row["h_init_applies"] = bool((every["team_size"] >= 2).any()) if "team_size" in every \
        else True
    for column in ("collab_score", "h_init", "agent_initiative_share", "user_env_act_ratio",
                   "controlled_autonomy", "confirmations_answered", "halts", "satisfaction",
                   "outcome_rating", "agent_tokens", "user_tokens"):
        row[column], row[f"{column}_se"] = mean_and_se(
            rows[column].astype(float).tolist() if n else [])
    return row


def _counted(members: Sequence[SessionMetrics], include_failures: bool
             ) -> list[SessionMetrics]:
    """The sessions whose metrics count: those that completed, unless failures are included
    (:mod:`cogym_lab.core.outcome_class`)."""
    return [m for m in members if include_failures or m.record.outcome_class == "completed"]


def _task_rate_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]]
                    ) -> list[dict[str, Any]]:
    """Each system's task-specific rates (``CoEnv.summarise_scores`` of its task)."""
    from cogym_lab.envs.registry import task_class

    rows = []
    for system, members in groups.items():
        summarise = getattr(task_class(system[0]), "summarise_scores", None)
        if summarise is None:
            continue
        rates = summarise([(m.record.env_args, m.record.delivered, m.record.scores)
                           for m in members if m.record.finished])
        if rates:
            rows.append(dict(zip(SYSTEM, system, strict=True)) | rates)
    return rows


BaselineIndex = dict[tuple[str, str], dict[int, SessionRecord]]


def _baseline_index(records: Sequence[SessionRecord]) -> BaselineIndex:
    """(task, instance) -> trial -> the baseline session for it (the first finished one)."""
    index: BaselineIndex = {}
    for record in records:
        trials = index.setdefault((record.task, record.instance), {})
        known = trials.get(record.trial)
        if known is None or (not known.finished and record.finished):
            trials[record.trial] = record
    return index


def _baseline_for(record: SessionRecord, index: BaselineIndex) -> SessionRecord | None:
    """The baseline session ``record`` pairs with: the same instance's session of the same
    trial, else its lowest trial (a baseline run once faces every trial of a system)."""
    trials = index.get((record.task, record.instance))
    if not trials:
        return None
    return trials.get(record.trial, trials[min(trials)])


def _per_instance(pairs: Sequence[tuple[SessionRecord, Any]]) -> list[list[Any]]:
    """The second items of ``pairs`` grouped by the first's instance, in order of appearance:
    with repeated trials, a comparison averages each instance first, so an instance counts
    once however many trials it had."""
    grouped: dict[str, list[Any]] = {}
    for record, value in pairs:
        grouped.setdefault(record.instance, []).append(value)
    return list(grouped.values())


async def _comparison_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]],
                           baseline: BaselineIndex,
                           judge: Judge | None) -> list[dict[str, Any]]:
    """Each system against its baseline, paired by instance. With repeated trials a trial
    pairs with the baseline's same trial (else its first), and each instance's pairs are
    averaged before the test and the bootstrap, so the instances, not the sessions, are the
    sample (``pairs`` counts sessions, ``instances`` instances)."""
    rows = []
    for system, members in groups.items():
        pairs = [(m.record, b) for m in members
                 if (b := _baseline_for(m.record, baseline)) is not None
                 and b.path != m.record.path]
        if not pairs or _same_system(pairs):  # the baseline itself
            continue
        graded = [(float(np.mean([a for a, _ in both])), float(np.mean([b for _, b in both])))
                  for both in _per_instance([
                      (a, (a.performance, b.performance)) for a, b in pairs
                      if a.delivered and b.delivered and not math.isnan(a.performance)
                      and not math.isnan(b.performance)])]
        protocols = {a.protocol.name for a, _ in pairs}
        scale = performance_scale(system[0], protocols.pop()) if len(protocols) == 1 else \
            "graded"
        test = paired_test([a for a, _ in graded], [b for _, b in graded], scale)
        verdicts: list[str | None] = [None] * len(pairs)
        if judge is not None:
            verdicts = list(await asyncio.gather(*(
                judge.compare(task_description(a.task, json.dumps(a.env_args, sort_keys=True)),
                              a.outcome, b.outcome,
                              key=f"{a.task}/{a.instance}" + (f"/t{a.trial}" if a.trial else ""))
                if a.delivered and b.delivered else _none() for a, b in pairs)))
        scored = [(a, win_score(a.delivered, b.delivered, v))
                  for (a, b), v in zip(pairs, verdicts, strict=True)]
        scores = [float(np.mean(per)) for per in _per_instance(
            [(a, score) for a, score in scored if score is not None])]
        wins = bootstrap_win_rate(scores) if judge is not None else bootstrap_win_rate([])
        rows.append(dict(zip(SYSTEM, system, strict=True)) | {
            "baseline": f"{pairs[0][1].agent_type} ({pairs[0][1].model})", "pairs": len(pairs),
            "instances": len(_per_instance([(a, None) for a, _ in pairs])),
            "test": test.test, "graded_pairs": test.n, "mean_difference": test.mean_difference,
            "statistic": test.statistic, "p_value": test.p_value,
            "compared": wins.n, "win_rate": wins.win_rate, "win_ci_low": wins.ci_low,
            "win_ci_high": wins.ci_high})
    return rows


def _same_system(pairs: list[tuple[SessionRecord, SessionRecord]]) -> bool:
    return all((a.agent_type, a.model) == (b.agent_type, b.model) for a, b in pairs)


async def _none() -> None:
    return None


def _effort_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]],
                 baselines: dict[str, float]) -> tuple[list[dict[str, Any]],
                                                       list[dict[str, Any]]]:
    rows, curve = [], []
    for system, members in groups.items():
        traces = [m.effort for m in members if m.effort is not None]
        if not traces:
            continue
        table = pd.DataFrame([m.row() for m in members])
        agent_tokens, user_tokens = table["agent_tokens"].sum(), table["user_tokens"].sum()
        rows.append(dict(zip(SYSTEM, system, strict=True)) | {
            "sessions": len(traces), "autonomous_baseline": baselines.get(system[0], math.nan)}
            | effort_metrics.summarise(traces) | {
            "agent_tokens": float(table["agent_tokens"].mean()),
            "user_tokens": float(table["user_tokens"].mean()),
            "agent_user_token_ratio": agent_tokens / user_tokens if user_tokens else math.nan})
        curve += [dict(zip(SYSTEM, system, strict=True)) | point
                  for point in effort_metrics.scaling_curve(traces)]
    return rows, curve


def _action_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]]
                 ) -> list[dict[str, Any]]:
    rows = []
    for system, members in groups.items():
        table = pd.DataFrame([m.row() for m in members])
        for party in ("agent", "human"):
            row: dict[str, Any] = dict(zip(SYSTEM, system, strict=True))
            rows.append(row | {
                "party": party,
                "task_actions": float(table[f"{party}_task_actions"].mean()),
                "collaboration_acts": float(table[f"{party}_collaboration_acts"].mean())})
    return rows


def _failure_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]]
                  ) -> list[dict[str, Any]]:
    rows = []
    for system, members in groups.items():
        annotations = [m.failures for m in members if m.failures is not None]
        if annotations:
            rows.append(dict(zip(SYSTEM, system, strict=True)) | {"annotated": len(annotations)}
                        | prevalence(annotations))
    return rows


def _plan_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]]
               ) -> list[dict[str, Any]]:
    """Each system's plan measures (``eval.metrics.plan_measures``) over its planned sessions."""
    rows = []
    for system, members in groups.items():
        measured = [m for m in (plan_measures.plan_measures(s.record) for s in members) if m]
        if not measured:
            continue
        table = pd.DataFrame([m.row() for m in measured])
        ratios = [ratio for m in measured for ratio in m.ratios]  # pooled, as the paper does
        row: dict[str, Any] = dict(zip(SYSTEM, system, strict=True)) | {
            "sessions": len(measured), "ratio_rounds": len(ratios),
            "item_ratio": sum(ratios) / len(ratios) if ratios else math.nan}
        for column in table.columns:
            if column.endswith("share") or column.startswith(("steps_", "completed_")) or \
                    column in ("rerun_steps", "person_acts"):
                row[column] = float(table[column].astype(float).mean())
        rows.append(row | {"sessions_with_reruns": int((table["rerun_steps"] > 0).sum())})
    return rows


def _trial_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]],
                threshold: float) -> list[dict[str, Any]]:
    """pass^k, the mean with its interval and the variances (``cogym_lab.eval.stats.trials``) for
    each system that ran some instance more than once; the noise study's shares when the
    system's run directories have one (``cogym_lab.eval.batch.noise``)."""
    rows = []
    for system, members in groups.items():
        by_instance: dict[str, list[tuple[bool, float]]] = defaultdict(list)
        for m in members:
            by_instance[m.record.instance].append((m.record.delivered, m.record.performance))
        if all(len(runs) < 2 for runs in by_instance.values()):
            continue
        stats = trial_stats(by_instance, threshold)
        row: dict[str, Any] = dict(zip(SYSTEM, system, strict=True)) | {
            "sessions": stats.sessions, "instances": stats.instances, "trials": stats.trials,
            "threshold": threshold}
        row |= {f"pass^{k}": value for k, value in stats.pass_k.items()}
        row |= {"mean": stats.mean.mean, "ci_low": stats.mean.ci_low,
                "ci_high": stats.mean.ci_high, "within_variance": stats.variance.within,
                "between_variance": stats.variance.between}
        studies = [study for run in sorted({m.record.path.parent for m in members
                                            if m.record.run is not None})
                   if (study := read_noise(run)) is not None]
        if studies:
            merged = NoiseStudy(run=",".join(s.run for s in studies),
                                repeats=max(s.repeats for s in studies),
                                judge=[r for s in studies for r in s.judge],
                                agent=[r for s in studies for r in s.agent])
            judge_variance, agent_variance = merged.variances()
            shares = merged.shares(stats.variance.within)
            row |= {"judge_variance": judge_variance, "agent_variance": agent_variance,
                    "judge_share": shares.judge, "agent_share": shares.agent,
                    "rest_share": shares.rest}
        rows.append(row)
    return rows


def _rating_test_rows(groups: dict[tuple[str, str, str], list[SessionMetrics]]
                      ) -> list[dict[str, Any]]:
    return rating_tests.compare_ratings(
        {system: [m.record for m in members] for system, members in groups.items()})


def _frame(rows: list[dict[str, Any]], columns: Sequence[str] = ()) -> pd.DataFrame:
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(columns))


async def areport(dirs: Paths, *, judge: Any = None, baseline: Paths | None = None,
                  out: str | Path | None = None, effort: bool = True,
                  failures: bool = True, audit: bool = True,
                  validation: Paths | None = None,
                  success_threshold: float = DEFAULT_SUCCESS_THRESHOLD,
                  progress: ProgressSource = "user",
                  include_failures: bool = False) -> EvalReport:
    """:func:`report`, for code already in an event loop."""
    made = make_judge(judge)
    try:
        return await _build_report(dirs, made, baseline=baseline, out=out, effort=effort,
                                   failures=failures, audit=audit, validation=validation,
                                   success_threshold=success_threshold,
                                   progress=progress, include_failures=include_failures)
    finally:
        if made is not None and made is not judge and made.lm is not judge:
            await made.lm.aclose()  # the LM client this call built: close its connections


async def _build_report(dirs: Paths, judge: Judge | None, *, baseline: Paths | None,
                        out: str | Path | None, effort: bool, failures: bool,
                        audit: bool = True, validation: Paths | None = None,
                        success_threshold: float = DEFAULT_SUCCESS_THRESHOLD,
                        progress: ProgressSource = "user",
                        include_failures: bool = False) -> EvalReport:
    records = load_sessions(_paths(dirs))
    baseline_records = load_sessions(_paths(baseline)) if baseline is not None else [
        r for r in records if r.agent_type == AUTONOMOUS]
    baseline_records = [r for r in baseline_records
                        if include_failures or r.outcome_class == "completed"]
    measured = list(await asyncio.gather(*(measure_session(r, judge, effort=effort,
                                                           failures=failures, audit=audit,
                                                           progress=progress)
                                           for r in records)))
    notes = [note for m in measured for note in m.notes]
    # Every table below but the sessions and the summary's counts reads the counted sessions.
    groups = _group(_counted(measured, include_failures))
    sessions = _frame([m.row() for m in measured], ["session_id", *SYSTEM])
    summary_rows = []
    for system, members in _group(measured).items():
        counted = _counted(members, include_failures)
        every = pd.DataFrame([m.row() for m in members])
        summary_rows.append(_summary_row(system, every, every.iloc[0:0] if not counted else
                                         pd.DataFrame([m.row() for m in counted]),
                                         [m.record for m in counted]))
    baselines: dict[str, float] = {}
    for task in {r.task for r in baseline_records}:
        baselines[task] = mean_and_se(delivered_performance(
            [r for r in baseline_records if r.task == task]))[0]
    comparison = add_human_win_rates(
        await _comparison_rows(groups, _baseline_index(baseline_records), judge),
        {system: [m.record for m in members] for system, members in groups.items()}, SYSTEM)
    effort_rows, curve = _effort_rows(groups, baselines)
    failure_details = [row for m in measured for row in m.failure_rows()]
    cooking = kitchen_measures.measure_all(records)
    for session in cooking:
        notes += session.measures.notes
    result = EvalReport(tables={
        "sessions": sessions,
        "summary": _frame(summary_rows, [*SYSTEM, *PaperColumns, "agent_initiative_share",
                                         *(f"{c}_se" for c in PaperColumns)]),
        "task_rates": _frame(_task_rate_rows(groups), SYSTEM),
        "comparison": _frame(comparison, SYSTEM),
        "effort": _frame(effort_rows, SYSTEM),
        "scaling": _frame(curve, [*SYSTEM, "round", "mean", "se", "running"]),
        "actions": _frame(_action_rows(groups), SYSTEM),
        "failures": _frame(_failure_rows(groups), [*SYSTEM, *FAILURE_CATEGORIES]),
        "failure_evidence": _frame(failure_details, ["session_id", "category", "evidence"]),
        "failure_types": _frame(audit_tables.failure_type_rows(
            (system, [m.taxonomy for m in members if m.taxonomy is not None])
            for system, members in groups.items()), [*SYSTEM, "code"]),
        "user_audit": _frame(audit_tables.user_audit_rows(
            (m.key, user_model(m.record), m.audit) for m in measured if m.audit is not None),
            [*SYSTEM, "user_model"]),
        "simulator_validation": _frame(audit_tables.validation_rows(_paths(validation)),
                                       ["task", "raters"]),
        "plans": _frame(_plan_rows(groups), SYSTEM),
        "rating_tests": _frame(_rating_test_rows(groups), ["task", "system_a", "system_b"]),
        "trials": _frame(_trial_rows(groups, success_threshold), SYSTEM),
        "interaction": _frame(turn_taking.mode_rows(
            [m.row() for m in _counted(measured, include_failures)]),
            [*turn_taking.SYSTEM, "interaction"]),
        "interaction_tests": _frame(turn_taking.paired_rows(
            [m.row() for m in _counted(measured, include_failures)]),
            [*turn_taking.SYSTEM, "measure"]),
        "cooking": _frame(kitchen_measures.summary_rows(cooking), kitchen_measures.SYSTEM),
        "cooking_sessions": _frame(kitchen_measures.session_rows(cooking),
                                   kitchen_measures.SYSTEM),
    }, notes=notes, baselines=baselines, include_failures=include_failures)
    if judge is None:
        result.notes.append("No judge was given: H_init, controlled autonomy from messages, "
                            "LM-judged win rates, progress ratings (usability drop) that "
                            "no simulated user gave, and failure "
                            "annotations need one (judge=...).")
    if out is not None:
        result.save(out)
    return result


def report(dirs: Paths, *, judge: Any = None, baseline: Paths | None = None,
           out: str | Path | None = None, effort: bool = True,
           failures: bool = True, audit: bool = True, validation: Paths | None = None,
           success_threshold: float = DEFAULT_SUCCESS_THRESHOLD,
           progress: ProgressSource = "user", include_failures: bool = False) -> EvalReport:
    """Evaluate the sessions in ``dirs`` (run directories or session directories).

    ``judge``: a model name, LM config, LM or :class:`~cogym_lab.eval.judging.judges.Judge` for the
    LM judges (and for task graders that need an LM when grading each round); without one, only
    the metrics that need no LM are computed. ``baseline``: run directories of the autonomous
    baseline. ``out``: a folder to save the CSVs, PNGs and text report in. ``effort=False``
    skips replaying sessions to grade every round; ``failures=False`` skips the failure
    taxonomy (``failures.json``); ``audit=False`` skips the simulated-user audit
    (``user_audit.json``); ``validation``: filled-in simulator validation sheets (CSV, see
    :mod:`cogym_lab.eval.users.simulator_validation`). ``success_threshold``: the task performance a
    delivered session needs to count as a success in the repeated-trials table (pass^k; see
    :mod:`cogym_lab.eval.stats.trials`). ``progress``: whose per-round progress ratings the
    usability drop uses: ``"user"`` (the default), a simulated user's own ratings when it gave
    one for every round (``rate_progress``), else the judge's; ``"judge"``, always the judge's
    (:mod:`cogym_lab.eval.metrics.progress`).

    Sessions that ended for a cause outside the team (an LM that failed past its retries, a
    judge that failed, a crash: :mod:`cogym_lab.core.outcome_class`) are counted apart, by
    class, in the summary (``infrastructure``, ``simulator_error``, ``agent_failure``, beside
    ``completed``) and the checks line, and left out of every metric (delivery, performance,
    pass^k, comparisons ...) unless ``include_failures``, which counts them as they ended.
    """
    coroutine = areport(dirs, judge=judge, baseline=baseline, out=out, effort=effort,
                        failures=failures, audit=audit, validation=validation,
                        success_threshold=success_threshold, progress=progress,
                        include_failures=include_failures)
    return run_to_end(coroutine)
