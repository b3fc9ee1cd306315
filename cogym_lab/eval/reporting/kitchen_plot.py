"""Score against latency per agent, for real-time cooking runs: the trade-off the DPT-Agent
paper is about (a slower, stronger model may still score less because the world does not
wait). One panel per task, layout and partner, stacked; one point per agent type and model at
its IQM latency and IQM score, with standard-error bars on both axes: a colour per agent type,
a marker per model, a thin line through one agent's models. An agent that measured no latency
(a rule-based one) sits at 0 s with a hollow marker.

Drawn like the report's other plots (:mod:`cogym_lab.eval.reporting.plots`): Agg canvas, 8 inches
wide, text of at least 10 points, the legend under the panels.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from cogym_lab.eval.reporting.plots import (
    FIGURE_WIDTH,
    LEGEND_HEIGHT,
    MIN_FONT_SIZE,
    PANEL_HEIGHT,
    SCREEN_DPI,
    TEXT_SIZES,
)

PANEL_KEYS = ["task", "layout", "partner"]
#: One marker per model, so one agent's models tell apart in its colour.
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*"]


def _value(row: pd.Series, column: str) -> float:
    value: Any = row.get(column)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _right_edge(rows: pd.DataFrame) -> float:
    """Room right of the slowest agent's error bar, so no point sits on the frame."""
    ends = []
    for _, row in rows.iterrows():
        latency, se = _value(row, "latency"), _value(row, "latency_se")
        if not math.isnan(latency):
            ends.append(latency + (0.0 if math.isnan(se) else se))
    return max(1.0, 1.15 * max(ends, default=0.0))


def score_latency(summary: pd.DataFrame) -> Figure:
    """The plot of a summary table from :func:`cogym_lab.eval.metrics.kitchen_measures.summary_rows`
    (columns ``latency``, ``score`` and their ``_se``): a colour per agent type, a marker per
    model, and a thin line through one agent's points (its models, by latency)."""
    panels: list[tuple[Any, ...] | None] = (
        list(summary[PANEL_KEYS].drop_duplicates().itertuples(index=False, name=None))
        if not summary.empty else [])
    agents = list(dict.fromkeys(str(a) for a in summary.get("agent_type", [])))
    models = list(dict.fromkeys(str(m) for m in summary.get("model", [])))
    colours = {agent: f"C{i % 10}" for i, agent in enumerate(agents)}
    markers = {model: MARKERS[i % len(MARKERS)] for i, model in enumerate(models)}
    with matplotlib.rc_context(TEXT_SIZES):
        figure = Figure(figsize=(FIGURE_WIDTH, PANEL_HEIGHT * max(1, len(panels))
                                 + LEGEND_HEIGHT * (1 + len(agents) // 3)),
                        dpi=SCREEN_DPI, layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(max(1, len(panels)), 1, squeeze=False)[:, 0]
        for axis, panel in zip(axes, panels or [None], strict=False):
            if panel is None:
                axis.text(0.5, 0.5, "no real-time runs", ha="center", va="center")
                axis.set_axis_off()
                continue
            task, layout, partner = panel
            rows = summary[(summary["task"] == task) & (summary["layout"] == layout)
                           & (summary["partner"] == partner)]
            for agent in agents:
                _draw_agent(axis, rows[rows["agent_type"].astype(str) == agent],
                            colours[agent], markers)
            axis.axhline(0, color="grey", linewidth=0.8, linestyle=":")
            axis.set_xlim(0, _right_edge(rows))
            axis.set_xlabel("latency per decision, s (IQM ± SE; hollow: none measured)")
            axis.set_ylabel("score (IQM ± SE)")
            with_whom = "alone" if partner == "-" else f"with {partner}"
            axis.set_title(f"{task}, {layout}, {with_whom}: score against latency")
            axis.tick_params(labelsize=MIN_FONT_SIZE)
        handles: list[Artist] = [Line2D([], [], color=colours[a], marker="o", linewidth=1)
                                 for a in agents]
        labels = list(agents)
        if len(models) > 1 or (models and models[0] not in ("-", "")):
            handles += [Line2D([], [], color="dimgrey", marker=markers[m], linestyle="none")
                        for m in models]
            labels += [f"model {m}" for m in models]
        if handles:
            figure.legend(handles, labels, loc="outside lower center",
                          ncols=min(3, len(handles)), frameon=False, fontsize=MIN_FONT_SIZE)
    return figure


def _draw_agent(axis: Axes, rows: pd.DataFrame, colour: str, markers: dict[str, str]) -> None:
    """One agent's points (one per model) with their error bars, joined by latency."""
    points = []
    for _, row in rows.iterrows():
        latency = _value(row, "latency")
        measured = not math.isnan(latency)
        x, y = (latency if measured else 0.0), _value(row, "score")
        axis.errorbar(x, y, xerr=_value(row, "latency_se") if measured else None,
                      yerr=_value(row, "score_se"), fmt=markers[str(row["model"])],
                      markersize=8, capsize=3, color=colour,
                      markerfacecolor=colour if measured else "none")
        points.append((x, y))
    if len(points) > 1:
        points.sort()
        axis.plot([p[0] for p in points], [p[1] for p in points], color=colour,
                  linewidth=1, alpha=0.6)
