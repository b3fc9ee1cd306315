"""The two arms of one study side by side: people and simulated participants, per condition.

* **Side by side**: every measure of :mod:`.analysis` for both arms, joined by measure and
  condition, with the difference (simulated minus human); for the tests, their corrected p.
* **Fidelity**: how the simulated user behaved against how people did, per condition:
  initiative, messages per action, confirmations asked and given, the share accepted,
  interruptions, how sessions ended, the pairwise preference, and each Likert rating.

LLM user simulators are known to be easier partners than people (more agreeable, more
satisfied, rarely interrupting). A figure where being cooperative has a direction is flagged
**too cooperative** when both hold:

1. the simulated mean is on the cooperative side of the human mean by more than a margin
   (shares: 0.10; ratings: 0.5 scale points; counts per session: 0.5), and
2. for figures measured per session or per participant, it is not inside the humans'
   interquartile range: at or beyond its cooperative end (Q3 when higher is more cooperative,
   Q1 when lower is). Categorical shares (the pairwise preference) use the margin alone.

Higher is more cooperative for confirmation acceptance, the win rate of the person's own
outcome and every rating; lower is for interruptions. The other figures are shown, not flagged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np

from cogym_lab.studies.analysis import (
    Analysis,
    AnalysisOptions,
    analyse,
    markdown_table,
    write_csv,
)
from cogym_lab.studies.export_reader import ExportError, StudyExport, read_export
from cogym_lab.studies.measures import likert_answers, per_participant, win_scores
from cogym_lab.studies.tables import SessionRow


@dataclass(frozen=True)
class Margins:
    """How far the simulated mean must lie on the cooperative side to count as far."""

    share: float = 0.10
    rating: float = 0.5
    count: float = 0.5

    def of(self, kind: str) -> float:
        return {"share": self.share, "rating": self.rating}.get(kind, self.count)


@dataclass(frozen=True)
class FidelityFigure:
    """One fidelity figure: its scale (``share``, ``rating``, ``count``, ``ratio``), the side
    that is more cooperative (+1 higher, -1 lower, 0 none) and whether its units spread (an
    interquartile range means something)."""

    name: str
    kind: str
    direction: int
    spread: bool = True


def _ratio(top: int, bottom: int) -> float | None:
    return top / bottom if bottom else None


#: The session figures: name, scale, cooperative side, the value of one session.
SESSION_FIGURES: list[tuple[FidelityFigure, Callable[[SessionRow], float | None]]] = [
    (FidelityFigure("initiative", "share", 0), lambda s: s.person_initiative),
    (FidelityFigure("messages_per_action", "ratio", 0),
     lambda s: _ratio(s.person_messages, s.person_actions)),
    (FidelityFigure("confirmations_asked", "count", 0), lambda s: s.confirmations_asked),
    (FidelityFigure("confirmations_given", "count", 0), lambda s: s.confirmations_given),
    (FidelityFigure("confirmation_acceptance", "share", +1),
     lambda s: _ratio(s.confirmations_given, s.confirmations_asked)),
    (FidelityFigure("interruptions", "count", -1), lambda s: s.interruptions),
]
RULE = ("Too cooperative: the simulated mean lies on the cooperative side of the human mean by "
        "more than the margin (shares {share}, ratings {rating} scale points, counts {count} "
        "per session) and, for figures measured per session or participant, at or beyond the "
        "cooperative end of the humans' interquartile range. Higher is more cooperative for "
        "confirmation acceptance, win rate and ratings; lower for interruptions.")


def _units(export: StudyExport) -> dict[tuple[str, str], tuple[FidelityFigure, list[float]]]:
    """(figure name, condition) -> the figure and its values per unit, for one arm."""
    out: dict[tuple[str, str], tuple[FidelityFigure, list[float]]] = {}

    def add(figure: FidelityFigure, condition: str, value: float) -> None:
        out.setdefault((figure.name, condition), (figure, []))[1].append(value)

    sessions = export.analysed_sessions()
    for s in sessions:
        for figure, value_of in SESSION_FIGURES:
            value = value_of(s)
            if value is not None:
                add(figure, s.condition, float(value))
    reasons = sorted({s.end_reason or "(none)" for s in sessions})
    for s in sessions:
        for reason in reasons:
            add(FidelityFigure(f"ended:{reason}", "share", 0, spread=False), s.condition,
                1.0 if (s.end_reason or "(none)") == reason else 0.0)
    for item, answered in win_scores(export).items():
        for condition, scored in answered.items():
            for _, score in scored:
                add(FidelityFigure(f"win_rate:{item}", "share", +1, spread=False), condition,
                    score)
    for item, rated in per_participant(likert_answers(export)).items():
        for condition, people in rated.items():
            for value in people.values():
                add(FidelityFigure(f"rating:{item}", "rating", +1), condition, value)
    return out


def _quartiles(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    q1, q3 = np.percentile(np.asarray(values, dtype=float), [25, 75])
    return float(q1), float(q3)


def too_cooperative(figure: FidelityFigure, human: float, simulated: float, q1: float, q3: float,
                    margins: Margins) -> bool:
    """The rule of the module docstring, for one figure."""
    if figure.direction == 0 or math.isnan(human) or math.isnan(simulated):
        return False
    ahead = (simulated - human) * figure.direction
    if ahead <= margins.of(figure.kind):
        return False
    if not figure.spread or math.isnan(q1):
        return True
    return simulated >= q3 if figure.direction > 0 else simulated <= q1


def fidelity(human: StudyExport, simulated: StudyExport,
             margins: Margins | None = None) -> list[dict[str, Any]]:
    """The fidelity table: one row per figure and condition either arm has."""
    margins = margins or Margins()
    people, sims = _units(human), _units(simulated)
    order = {c: i for i, c in enumerate(human.conditions() + simulated.conditions())}
    rows = []
    for key in sorted(set(people) | set(sims), key=lambda k: (order.get(k[1], 99), k[0])):
        name, condition = key
        figure = (people.get(key) or sims[key])[0]
        h = people[key][1] if key in people else []
        s = sims[key][1] if key in sims else []
        h_mean = mean(h) if h else math.nan
        s_mean = mean(s) if s else math.nan
        q1, q3 = _quartiles(h) if figure.spread else (math.nan, math.nan)
        flagged = too_cooperative(figure, h_mean, s_mean, q1, q3, margins)
        rows.append({"table": "fidelity", "figure": name, "condition": condition,
                     "label": human.label(condition) if condition in human.labels
                     else simulated.label(condition),
                     "human": h_mean, "simulated": s_mean, "difference": s_mean - h_mean,
                     "human_n": len(h), "simulated_n": len(s), "human_q1": q1,
                     "human_q3": q3, "cooperative_side": {1: "higher", -1: "lower", 0: ""}[
                         figure.direction],
                     "margin": margins.of(figure.kind) if figure.direction else math.nan,
                     "too_cooperative": flagged})
    return rows


def side_by_side(human: Analysis, simulated: Analysis) -> list[dict[str, Any]]:
    """Every measure of both analyses joined by measure and condition."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["section"], r["measure"], r["item"], r["part"], r["condition"],
                r["condition_b"], r["test"])

    def figure(r: dict[str, Any]) -> float:
        value = r["p_bonferroni"] if r["section"] == "tests" else r["value"]
        return float(value) if value not in ("", None) else math.nan

    humans = {key(r): r for r in human.rows}
    sims = {key(r): r for r in simulated.rows}
    rows = []
    for k in list(humans) + [k for k in sims if k not in humans]:
        h, s = humans.get(k), sims.get(k)
        source = h or s
        assert source is not None  # every key comes from one of the two
        hv = figure(h) if h else math.nan
        sv = figure(s) if s else math.nan
        pair = f" vs {source['label_b']}" if source["condition_b"] else ""
        rows.append({"table": "side_by_side", "section": source["section"],
                     "figure": "p (Bonferroni)" if source["section"] == "tests"
                     else source["measure"],
                     "item": source["item"], "part": source["part"],
                     "condition": source["condition"], "label": f"{source['label']}{pair}",
                     "test": source["test"], "human": hv, "simulated": sv,
                     "difference": sv - hv, "human_n": h["n"] if h else "",
                     "simulated_n": s["n"] if s else ""})
    return rows


COLUMNS = ("table", "section", "figure", "item", "part", "condition", "label", "test", "human",
           "simulated", "difference", "human_n", "simulated_n", "human_q1", "human_q3",
           "cooperative_side", "margin", "too_cooperative")


@dataclass
class Comparison:
    human: Analysis
    simulated: Analysis
    fidelity: list[dict[str, Any]]
    side_by_side: list[dict[str, Any]]
    margins: Margins

    @property
    def flagged(self) -> list[dict[str, Any]]:
        return [r for r in self.fidelity if r["too_cooperative"]]


def compare_arms(human_dir: Path, simulated_dir: Path, options: AnalysisOptions | None = None,
                 margins: Margins | None = None) -> Comparison:
    """Both exports read, analysed the same way, and compared."""
    human, simulated = read_export(human_dir), read_export(simulated_dir)
    for export, arm in ((human, "human"), (simulated, "simulated")):
        if export.arm and export.arm != arm:
            raise ExportError(f"{export.folder} is the {export.arm!r} arm's export, "
                              f"given as the {arm} arm")
    if human.design and simulated.design and human.design != simulated.design:
        raise ExportError(f"the arms are of different designs: {human.design!r} and "
                          f"{simulated.design!r}")
    margins = margins or Margins()
    analysed = analyse(human, options), analyse(simulated, options)
    return Comparison(human=analysed[0], simulated=analysed[1],
                      fidelity=fidelity(human, simulated, margins),
                      side_by_side=side_by_side(*analysed), margins=margins)


def compare_markdown(comparison: Comparison) -> str:
    human = comparison.human.export
    flagged = comparison.flagged
    lines = [f"# The two arms compared: {human.design or 'study'}", "",
             f"People: {len(human.participants)} participants ({human.folder.name}); "
             f"simulated: {len(comparison.simulated.export.participants)} "
             f"({comparison.simulated.export.folder.name}).", "",
             "## Fidelity of the simulated user", "",
             RULE.format(share=comparison.margins.share, rating=comparison.margins.rating,
                         count=comparison.margins.count), ""]
    if flagged:
        lines += [f"**Warning: the simulator is far more cooperative than the people on "
                  f"{len(flagged)} figure(s):** " + "; ".join(
                      f"{r['figure']} ({r['label']}: {r['simulated']:.3g} vs "
                      f"{r['human']:.3g})" for r in flagged) + ".", ""]
    else:
        lines += ["No figure flags the simulator as too cooperative.", ""]
    shown = [r | {"too_cooperative": "TOO COOPERATIVE" if r["too_cooperative"] else ""}
             for r in comparison.fidelity]
    lines += [markdown_table(shown, [
        ("figure", "figure"), ("label", "condition"), ("human", "human"),
        ("simulated", "simulated"), ("difference", "sim - human"), ("human_q1", "human Q1"),
        ("human_q3", "human Q3"), ("human_n", "human n"), ("simulated_n", "sim n"),
        ("cooperative_side", "cooperative if"), ("too_cooperative", "flag")]), "",
        "## Measures side by side", "",
        "Each arm's analysis (analysis.md in its folder) joined by measure and condition; for "
        "the tests, the Bonferroni-corrected p.", "",
        markdown_table(comparison.side_by_side, [
            ("section", "section"), ("figure", "measure"), ("item", "item"), ("part", "part"),
            ("label", "condition"), ("human", "human"), ("simulated", "simulated"),
            ("difference", "sim - human"), ("human_n", "human n"),
            ("simulated_n", "sim n")])]
    return "\n".join(lines) + "\n"


def write_comparison(comparison: Comparison, folder: Path, plots: bool = True) -> list[Path]:
    """``compare.md``, ``compare.csv`` and ``fidelity.png`` in ``folder``; paths written."""
    from cogym_lab.studies.study_plots import fidelity_plot  # matplotlib: only when writing

    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "compare.md", folder / "compare.csv"]
    written[0].write_text(compare_markdown(comparison), encoding="utf-8")
    write_csv(written[1], [*comparison.fidelity, *comparison.side_by_side], COLUMNS)
    if plots:
        figure = fidelity_plot(comparison.fidelity)
        if figure is not None:
            written.append(folder / "fidelity.png")
            figure.savefig(written[-1], dpi=150)
    return written


__all__ = ["RULE", "Comparison", "FidelityFigure", "Margins", "compare_arms", "compare_markdown",
           "fidelity", "side_by_side", "too_cooperative", "write_comparison"]
