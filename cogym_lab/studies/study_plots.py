"""The analysis's plots, drawn on matplotlib's Agg canvas (no window, no pyplot state):

* ``likert.png``: per item and condition, the share of each answer, stacked;
* ``borda.png``: Borda points per ranking item and label;
* ``win_rate.png``: the win rate per condition with its 95% Wilson interval;
* ``time_shares.png``: per condition, the mean share of session time per activity code,
  stacked (Cocoa's Figure 12);
* ``item_ratio.png``: per condition, the output-to-input item ratio of every round, as a box
  (Cocoa's Figure 13);
* ``fidelity.png`` (the two arms compared): each fidelity figure's human interquartile range
  and mean beside the simulated value, flagged figures in red.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from cogym_lab.studies.export_reader import StudyExport, number
from cogym_lab.studies.measures import SHARE_MEASURES, condition_label, item_ratio_rounds

WIDTH = 8.0


def _figure(height: float) -> Figure:
    figure = Figure(figsize=(WIDTH, max(2.0, height)), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def likert_bars(export: StudyExport) -> Figure | None:
    """Stacked shares of each Likert answer, one bar per item and condition."""
    counts: dict[tuple[str, str], Counter[int]] = defaultdict(Counter)
    for answer in export.answers:
        if answer.kind == "likert":
            counts[(answer.item, answer.condition)][round(number(answer))] += 1
    if not counts:
        return None
    levels = sorted({level for c in counts.values() for level in c})
    bars = sorted(counts)
    figure = _figure(0.35 * len(bars) + 1.2)
    axis = figure.add_subplot()
    cmap = _diverging(len(levels))
    left = [0.0] * len(bars)
    for k, level in enumerate(levels):
        shares = [counts[b][level] / sum(counts[b].values()) for b in bars]
        axis.barh(range(len(bars)), shares, left=left, color=cmap[k], label=str(level))
        left = [x + s for x, s in zip(left, shares, strict=True)]
    axis.set_yticks(range(len(bars)),
                    [f"{item} / {condition_label(export, c)}" for item, c in bars])
    axis.invert_yaxis()
    axis.set_xlim(0, 1)
    axis.set_xlabel("share of answers")
    figure.legend(title="answer", loc="outside right upper", frameon=False)
    return figure


def _diverging(n: int) -> list[tuple[float, float, float]]:
    """``n`` colours from red (low answers) through grey to blue (high)."""
    out = []
    for k in range(n):
        t = k / max(1, n - 1)
        out.append((0.80 - 0.6 * t, 0.35 + 0.2 * (1 - abs(2 * t - 1)), 0.30 + 0.55 * t))
    return out


def borda_bars(rows: Sequence[dict[str, Any]]) -> Figure | None:
    """Borda points per ranking item, one bar per label."""
    ranked = [r for r in rows if r["section"] == "borda"]
    if not ranked:
        return None
    items = sorted({r["item"] for r in ranked})
    labels = sorted({r["label"] for r in ranked})
    figure = _figure(3.2)
    axis = figure.add_subplot()
    width = 0.8 / len(labels)
    for k, label in enumerate(labels):
        points = [next((r["value"] for r in ranked if r["item"] == item and r["label"] == label),
                       0) for item in items]
        axis.bar([i + k * width for i in range(len(items))], points, width, label=label)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(items))], items)
    axis.set_ylabel("Borda points")
    figure.legend(loc="outside right upper", frameon=False)
    return figure


def win_rate_plot(rows: Sequence[dict[str, Any]]) -> Figure | None:
    """Win rate and its 95% Wilson interval per pairwise item and condition."""
    rates = [r for r in rows if r["section"] == "win_rate"]
    if not rates:
        return None
    figure = _figure(0.45 * len(rates) + 1.2)
    axis = figure.add_subplot()
    ys = range(len(rates))
    values = [r["value"] for r in rates]
    low = [r["value"] - r["low"] for r in rates]
    high = [r["high"] - r["value"] for r in rates]
    axis.errorbar(values, ys, xerr=[low, high], fmt="o", capsize=4)
    axis.axvline(0.5, color="grey", linestyle=":", linewidth=1)
    axis.set_yticks(list(ys), [f"{r['item']} / {r['label']} (n={r['n']})" for r in rates])
    axis.invert_yaxis()
    axis.set_xlim(0, 1)
    axis.set_xlabel("win rate against the autonomous agent (tie = half), 95% Wilson interval")
    return figure


_SHARE_COLOURS = {"share_planning": "tab:blue", "share_executing": "tab:orange",
                  "share_inspecting": "tab:green", "share_waiting": "0.75", "share_other": "0.55"}


def time_share_bars(rows: Sequence[dict[str, Any]]) -> Figure | None:
    """The mean share of session time per activity code, stacked, one bar per condition."""
    shares = [r for r in rows if r["section"] == "time_shares"]
    if not shares:
        return None
    labels = list(dict.fromkeys(r["label"] for r in shares))
    figure = _figure(0.5 * len(labels) + 1.4)
    axis = figure.add_subplot()
    left = [0.0] * len(labels)
    for measure in SHARE_MEASURES:
        widths = [next((r["mean"] for r in shares if r["label"] == label
                        and r["measure"] == measure), 0.0) for label in labels]
        axis.barh(range(len(labels)), widths, left=left, color=_SHARE_COLOURS[measure],
                  label=measure.removeprefix("share_"))
        left = [x + w for x, w in zip(left, widths, strict=True)]
    axis.set_yticks(range(len(labels)), labels)
    axis.invert_yaxis()
    axis.set_xlim(0, 1)
    axis.set_xlabel("mean share of session time")
    figure.legend(title="activity", loc="outside right upper", frameon=False)
    return figure


def item_ratio_boxes(export: StudyExport) -> Figure | None:
    """The output-to-input item ratio of every round, one box per condition."""
    rounds = item_ratio_rounds(export)
    if not rounds:
        return None
    conditions = [c for c in export.conditions() if c in rounds]
    figure = _figure(3.0)
    axis = figure.add_subplot()
    axis.boxplot([list(rounds[c].values()) for c in conditions])
    axis.set_xticks(range(1, len(conditions) + 1),
                    [f"{export.label(c)} ({len(rounds[c])} rounds)" for c in conditions])
    axis.set_ylim(-0.05, 1.05)
    axis.set_ylabel("output-to-input item ratio")
    return figure


def analysis_plots(rows: Sequence[dict[str, Any]], export: StudyExport) -> dict[str, Figure]:
    """The plots the analysis has data for, by file name (without ``.png``)."""
    drawn = {"likert": likert_bars(export), "borda": borda_bars(rows),
             "win_rate": win_rate_plot(rows), "time_shares": time_share_bars(rows),
             "item_ratio": item_ratio_boxes(export) if any(
                 r["section"] == "item_ratio" for r in rows) else None}
    return {name: figure for name, figure in drawn.items() if figure is not None}


def fidelity_plot(rows: Sequence[dict[str, Any]]) -> Figure | None:
    """One panel row per fidelity figure: the humans' interquartile range (bar) and mean
    (black), the simulated value (blue, red when flagged too cooperative)."""
    shown = [r for r in rows if not math.isnan(r["human"]) and not math.isnan(r["simulated"])]
    if not shown:
        return None
    figure = _figure(0.5 * len(shown) + 1.0)
    axes = figure.subplots(len(shown), 1, squeeze=False)[:, 0]
    for axis, r in zip(axes, shown, strict=True):
        if not math.isnan(r["human_q1"]):
            axis.barh(0, r["human_q3"] - r["human_q1"], left=r["human_q1"], height=0.6,
                      color="0.85")
        axis.plot([r["human"]], [0], "k|", markersize=14)
        axis.plot([r["simulated"]], [0], "o", color="tab:red" if r["too_cooperative"]
                  else "tab:blue")
        axis.set_yticks([0], [f"{r['figure']} / {r['label']}"])
        axis.tick_params(axis="x", labelsize=8)
        lows = [v for v in (r["human_q1"], r["human"], r["simulated"]) if not math.isnan(v)]
        highs = [v for v in (r["human_q3"], r["human"], r["simulated"]) if not math.isnan(v)]
        span = max(highs) - min(lows) or 1.0
        axis.set_xlim(min(lows) - 0.15 * span, max(highs) + 0.15 * span)
    figure.suptitle("grey: people's interquartile range; |: their mean;\n"
                    "dot: simulated (red: too cooperative)", fontsize=10)
    return figure


__all__ = ["analysis_plots", "borda_bars", "fidelity_plot", "item_ratio_boxes", "likert_bars",
           "time_share_bars", "win_rate_plot"]
