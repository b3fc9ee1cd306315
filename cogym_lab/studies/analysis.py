"""One arm's analysis: an export folder in, ``analysis.md``, ``analysis.csv`` and plots out.

:func:`analyse` computes every measure the export has data for (:mod:`.measures`) and compares
the conditions (:mod:`.comparisons`); :func:`write_analysis` writes the files into the export
folder. The design, when given, says whether the study was within or between subjects, which
tests it asks for, and each Likert item's scale; without it these are read from the export
(within subjects when every participant met two conditions or more).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.studies import designs
from cogym_lab.studies.comparisons import MANN_WHITNEY, Subjects, compare, share_tests, tests_for
from cogym_lab.studies.design import LikertItem, StudyDesign
from cogym_lab.studies.export_reader import ExportError, StudyExport, read_export
from cogym_lab.studies.measures import (
    COLUMNS,
    DEFAULT_COMPOSITES,
    TESTED_SHARES,
    borda,
    composite_answers,
    item_ratios,
    likert_answers,
    per_participant,
    session_outcomes,
    summary_rows,
    task_load_answers,
    time_shares,
    win_rates,
)

#: Rounds of one participant are not independent: the pooled test says what it assumes.
POOLED_NOTE = "rounds pooled over sessions and participants (Cocoa's unit)"


@dataclass
class AnalysisOptions:
    """What to analyse and how (every field has a default that reads the export alone)."""

    subjects: Subjects | None = None  # None: from the export
    #: Measure names the design lists (``wilcoxon``, ``paired_t``, ``mann_whitney``...).
    measures: tuple[str, ...] = ()
    #: Only these Likert items, composites and task-load scores are tested (and so make the
    #: Bonferroni family); empty: all of them.
    compared: tuple[str, ...] = ()
    composites: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_COMPOSITES))
    #: Points of the last place in a Borda count (1: DPT-Agent's count; 0: from zero).
    borda_lowest: int = 1
    likert_points: Mapping[str, int] = field(default_factory=dict)


@dataclass
class Analysis:
    export: StudyExport
    subjects: Subjects
    tests: list[str]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def section(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["section"] == name]


def load_design(path: Path | str) -> StudyDesign:
    """A ready design by name or a design file, validated, or an :class:`ExportError` that
    says what is wrong."""
    try:
        return designs.load_design(path, check=False)
    except designs.StudyDesignError as error:
        raise ExportError(f"design {path}: {error}") from None


def options_from_design(design: StudyDesign, **overrides: Any) -> AnalysisOptions:
    """The options a design implies: its subjects, its measures, its Likert scales."""
    points = {item.name: item.points for q in design.questionnaires for item in q.items
              if isinstance(item, LikertItem)}
    base: dict[str, Any] = {"subjects": design.assignment.subjects,
                            "measures": tuple(design.measures), "likert_points": points,
                            "compared": tuple(design.analysis.tested)}
    if design.analysis.composites:  # the design's own, in place of the defaults
        base["composites"] = {name: tuple(items)
                              for name, items in design.analysis.composites.items()}
    return AnalysisOptions(**(base | overrides))


def infer_subjects(export: StudyExport) -> Subjects:
    """Within subjects when every participant who played met two conditions or more."""
    met: dict[str, set[str]] = {}
    for session in export.analysed_sessions():
        met.setdefault(session.participant, set()).add(session.condition)
    for participant in export.participants:
        named = {c for c in participant.sequence.split("|") if c}
        met.setdefault(participant.participant, set()).update(named)
    played = [conditions for conditions in met.values() if conditions]
    return "within" if played and all(len(c) >= 2 for c in played) else "between"


def _kept(values: dict[str, Any], compared: Iterable[str]) -> dict[str, Any]:
    chosen = set(compared)
    return {k: v for k, v in values.items() if not chosen or k in chosen}


def _wanted(measure: str, options: AnalysisOptions) -> bool:
    """A plans-vs-chat measure is reported when the design names it (or names no measures)."""
    return not options.measures or measure in options.measures


def analyse(export: StudyExport | Path, options: AnalysisOptions | None = None) -> Analysis:
    """Every measure of one arm's export, and the conditions compared."""
    if not isinstance(export, StudyExport):
        export = read_export(export)
    options = options or AnalysisOptions()
    subjects = options.subjects or infer_subjects(export)
    tests = tests_for(subjects, options.measures)
    conditions = export.conditions()
    session_rows, outcomes = session_outcomes(export)
    likert = likert_answers(export, options.likert_points)
    composites = composite_answers(export, options.composites)
    load = task_load_answers(export)
    rows = [*session_rows, *borda(export, options.borda_lowest), *win_rates(export),
            *summary_rows("likert", likert, export),
            *summary_rows("composite", composites, export),
            *summary_rows("task_load", load, export)]
    rated = _kept(per_participant(likert) | per_participant(composites)
                  | {k: v for k, v in per_participant(load).items() if k == "task_load"},
                  options.compared)
    notes = []
    shares, share_values = time_shares(export) if _wanted("time_shares", options) else ([], {})
    ratios, ratio_values = item_ratios(export) if _wanted("item_ratio", options) else ([], {})
    rows += [*shares, *ratios]
    if len(conditions) >= 2:
        rows += compare(rated, conditions, export.labels, subjects, tests, "ratings")
        rows += compare(outcomes, conditions, export.labels, subjects, tests, "outcomes")
        tested = {k: v for k, v in share_values.items() if k in TESTED_SHARES}
        rows += compare(tested, conditions, export.labels, subjects,
                        share_tests(subjects, options.measures), "time_shares")
        pooled = compare(ratio_values, conditions, export.labels, subjects, [MANN_WHITNEY],
                         "item_ratio")
        rows += [r | {"note": r["note"] or POOLED_NOTE} for r in pooled]
    else:
        notes.append("One condition only: nothing to compare.")
    for name, items in options.composites.items():
        if name not in composites and any(item in likert for item in items):
            notes.append(f"Composite {name} not computed: no questionnaire has all of its "
                         f"items ({', '.join(items)}).")
    return Analysis(export=export, subjects=subjects, tests=tests, rows=rows, notes=notes)


# -- files --------------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({c: ("" if isinstance(r.get(c), float) and math.isnan(r[c])
                                 else r.get(c, "")) for c in columns})


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A Markdown table of ``rows`` (``columns``: key, heading)."""
    head = "| " + " | ".join(h for _, h in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_cell(r.get(k, "")).replace("|", "/") for k, _ in columns) + " |"
            for r in rows]
    return "\n".join([head, rule, *body])


SECTIONS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("sessions", "Sessions", "Practice rounds left out. Performance and duration: over the "
     "sessions that have them.",
     [("measure", "measure"), ("label", "condition"), ("n", "n"), ("value", "value"),
      ("median", "median"), ("sd", "sd")]),
    ("borda", "Rankings (Borda count)", "Each participant's last ranking of an item counts. "
     "Points: POINTS. Equal points are "
     "ordered by mean rank (lower is better), then by first places; `note` says when.",
     [("item", "ranking"), ("place", "place"), ("label", "label"), ("condition", "condition"),
      ("value", "points"), ("mean", "mean rank"), ("n", "rankings"), ("note", "note")]),
    ("win_rate", "Win rate against the autonomous agent",
     "The share of answers preferring the participant's own outcome; a tie counts half a win. "
     "Interval: Wilson's 95% score interval.",
     [("item", "item"), ("label", "condition"), ("n", "answers"), ("value", "win rate"),
      ("low", "95% low"), ("high", "95% high"), ("note", "counts")]),
    ("choice", "Other choices", "The share of answers giving each option.",
     [("item", "item"), ("label", "condition"), ("part", "option"), ("n", "answers"),
      ("value", "share")]),
    ("likert", "Likert items", "Over every answer (n); a participant who rated a condition "
     "twice counts twice here, once (their mean) in the tests.",
     [("item", "item"), ("label", "condition"), ("n", "n"), ("median", "median"),
      ("mean", "mean"), ("sd", "sd"), ("note", "who")]),
    ("composite", "Composites", "The mean of the composite's items in each questionnaire that "
     "has them all (Cocoa's general utility: three items).",
     [("item", "composite"), ("label", "condition"), ("n", "n"), ("median", "median"),
      ("mean", "mean"), ("sd", "sd")]),
    ("task_load", "Task load (NASA-TLX raw)", "task_load: the mean of the six subscales "
     "(0-100, lower is less demanding); task_load:NAME: one subscale.",
     [("item", "measure"), ("label", "condition"), ("n", "forms"), ("median", "median"),
      ("mean", "mean"), ("sd", "sd")]),
    ("time_shares", "Plans vs chat: time shares", "The share of session time the person spent "
     "on each activity code, from the event log (planning, executing, inspecting the agent's "
     "output, waiting for it, other); over sessions.",
     [("item", "code"), ("label", "condition"), ("n", "sessions"), ("mean", "mean"),
      ("median", "median"), ("sd", "sd"), ("note", "who")]),
    ("item_ratio", "Plans vs chat: output-to-input item ratio", "Per round (a plan step's run, "
     "or a chat turn), the share of the items it produced that the next round took up; over "
     "every round, pooled (0-1; Cocoa gives it in percent).",
     [("label", "condition"), ("n", "rounds"), ("mean", "mean"), ("median", "median"),
      ("sd", "sd"), ("note", "from")]),
    ("tests", "Conditions compared", "Two-sided. Within subjects: each participant's mean per "
     "condition, paired by participant; between subjects: the two groups. Bonferroni: p times "
     "the number of measures tested in the family (ratings, outcomes, time shares) for that pair "
     "and test. Time shares: paired t within subjects when the design names it, else Wilcoxon; "
     "the item ratio: Mann-Whitney U over the pooled rounds, as Cocoa.",
     [("family", "family"), ("item", "measure"), ("label", "A"), ("label_b", "B"),
      ("n", "n"), ("value", "median A"), ("value_b", "median B"), ("test", "test"),
      ("statistic", "statistic"), ("p_value", "p"), ("p_bonferroni", "p (Bonferroni)"),
      ("note", "note")]),
]


_BORDA_WORDS = {1: "the first of k labels ranked gets k, the last 1 (DPT-Agent's count)",
                0: "the first of k labels ranked gets k - 1, the last 0"}


def analysis_markdown(analysis: Analysis, borda_lowest: int = 1) -> str:
    export = analysis.export
    lines = [f"# Analysis: {export.design or 'study'} ({export.arm or 'arm not given'})", "",
             f"{len(export.participants)} participants, "
             f"{len(export.analysed_sessions())} sessions analysed; "
             f"{analysis.subjects} subjects; tests: {', '.join(analysis.tests)}.", ""]
    lines += [f"- {note}" for note in analysis.notes]
    for key, title, explanation, columns in SECTIONS:
        rows = analysis.section(key)
        if not rows:
            continue
        lines += ["", f"## {title}", "",
                  explanation.replace("POINTS", _BORDA_WORDS[borda_lowest]), "",
                  markdown_table(rows, columns)]
    return "\n".join(lines) + "\n"


def write_analysis(analysis: Analysis, folder: Path | None = None,
                   borda_lowest: int = 1, plots: bool = True) -> list[Path]:
    """``analysis.md``, ``analysis.csv`` and the plots, in ``folder`` (the export's by
    default); the paths written."""
    from cogym_lab.studies.study_plots import analysis_plots  # matplotlib: only when writing

    folder = Path(folder or analysis.export.folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "analysis.md", folder / "analysis.csv"]
    written[0].write_text(analysis_markdown(analysis, borda_lowest), encoding="utf-8")
    write_csv(written[1], analysis.rows, COLUMNS)
    if plots:
        for name, figure in analysis_plots(analysis.rows, analysis.export).items():
            path = folder / f"{name}.png"
            figure.savefig(path, dpi=150)
            written.append(path)
    return written


__all__ = ["Analysis", "AnalysisOptions", "analyse", "analysis_markdown", "infer_subjects",
           "load_design", "markdown_table", "options_from_design", "write_analysis",
           "write_csv"]
