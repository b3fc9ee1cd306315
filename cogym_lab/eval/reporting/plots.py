"""The report's plots, drawn with matplotlib's Agg canvas: no window, no pyplot state, so they
work the same in a terminal, on CI and inside a notebook kernel.

Sizes are chosen for the inline report: a figure is :data:`FIGURE_WIDTH` inches wide and is
shown at :data:`SCREEN_DPI` CSS pixels per inch (800 px), and saved at twice that resolution so
it stays sharp on high-density screens. Every text is at least :data:`MIN_FONT_SIZE` points at
that size. Several panels are stacked one per row, never side by side, so a panel keeps the
full width however many tasks a report has; legends sit outside the axes so they never cover
data.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from matplotlib.typing import RcKeyType

BAR_METRICS = [("delivery_rate", "Delivery rate"), ("performance", "Task performance"),
               ("collab_score", "Collab Score"), ("h_init", "Initiative entropy\nH_init")]

#: CSS pixels per figure inch when the report shows a figure inline (its ``width``).
SCREEN_DPI = 100
#: Pixels per inch of the PNG: twice the display size, for high-density screens.
PNG_DPI = 2 * SCREEN_DPI
#: Inches: 800 CSS px inline, wide enough to read, narrow enough for a 1366 px laptop screen.
FIGURE_WIDTH = 8.0
#: The smallest text on any plot, in points (tick labels, legends, notes).
MIN_FONT_SIZE = 10.0
LABEL_WIDTH = 32  # characters per line of a bar's label
PANEL_HEIGHT = 3.4  # inches per stacked panel
LEGEND_HEIGHT = 0.7  # inches for a legend row under the panels

# Sizes of everything drawn, set while a figure is built. Tick labels are made lazily (possibly
# at save time, outside this context), so _finish() also sets their size on each axes.
TEXT_SIZES: dict[RcKeyType, float] = {
    "font.size": 11.0, "axes.titlesize": 12.0, "axes.labelsize": 11.0,
    "xtick.labelsize": MIN_FONT_SIZE, "ytick.labelsize": MIN_FONT_SIZE,
    "legend.fontsize": MIN_FONT_SIZE, "legend.title_fontsize": MIN_FONT_SIZE}


def _figure(height: float, width: float = FIGURE_WIDTH) -> Figure:
    figure = Figure(figsize=(width, height), dpi=SCREEN_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _finish(*axes: Axes) -> None:
    for axis in axes:
        axis.tick_params(labelsize=MIN_FONT_SIZE)


def _legend_below(figure: Figure, handles: Sequence[Artist],
                  labels: Sequence[str]) -> None:
    """One legend for the whole figure, under the panels, so it covers no data."""
    if handles:
        # As many columns as fit the figure's width (about 100 characters of 10 pt text on
        # 8 inches), so a long system name never pushes the legend past the image's edges.
        longest = max(len(label) for label in labels) + 6  # + the handle and the gap
        fit = int(FIGURE_WIDTH * 72 / (MIN_FONT_SIZE * 0.6)) // longest
        figure.legend(handles, labels, loc="outside lower center",
                      ncols=max(1, min(3, len(handles), fit)), frameon=False,
                      fontsize=MIN_FONT_SIZE)


def _task_panels(tasks: Sequence[str], empty: str) -> tuple[Figure, list[tuple[Axes, str]]]:
    """A figure of stacked panels, one per task, each paired with its task; without tasks one
    blank panel that says ``empty``. Call it within ``TEXT_SIZES``."""
    figure = _figure(PANEL_HEIGHT * max(1, len(tasks)) + LEGEND_HEIGHT)
    axes = figure.subplots(max(1, len(tasks)), 1, squeeze=False)[:, 0]
    if not tasks:
        axes[0].text(0.5, 0.5, empty, ha="center", va="center")
        axes[0].set_axis_off()
    return figure, list(zip(axes, tasks, strict=False))


def _system(row: pd.Series) -> str:
    if row["model"] in ("-", ""):
        return str(row["agent_type"])
    return f"{row['agent_type']} ({row['model']})"


def scaling_curves(scaling: pd.DataFrame, baselines: dict[str, float]) -> Figure:
    """Mean utility P_k (± SE) against round, one panel per task (stacked), one line per
    system; the autonomous baseline is a dashed line and the bars underneath count sessions
    still running (right axis)."""
    tasks = sorted(scaling["task"].unique()) if not scaling.empty else []
    with matplotlib.rc_context(TEXT_SIZES):
        figure, panels = _task_panels(tasks, "no graded rounds")
        legend: dict[str, Artist] = {}
        for axis, task in panels:
            data = scaling[scaling["task"] == task]
            running = axis.twinx()
            systems = data[["agent_type", "model"]].drop_duplicates().itertuples(index=False)
            count = data[["agent_type", "model"]].drop_duplicates().shape[0]
            width = 0.6 / max(1, count)
            for position, (agent_type, model) in enumerate(systems):
                line = data[(data["agent_type"] == agent_type) & (data["model"] == model)]
                label = agent_type if model in ("-", "") else f"{agent_type} ({model})"
                drawn = axis.plot(line["round"], line["mean"], marker="o", label=label)[0]
                axis.fill_between(line["round"], line["mean"] - line["se"],
                                  line["mean"] + line["se"], alpha=0.2,
                                  color=drawn.get_color())
                running.bar(line["round"] + width * (position - (count - 1) / 2),
                            line["running"], width=width, alpha=0.2, color=drawn.get_color())
                legend.setdefault(label, drawn)
            if task in baselines and not math.isnan(baselines[task]):
                legend["autonomous baseline"] = axis.axhline(
                    baselines[task], linestyle="--", color="black")
            axis.set_title(f"{task}: utility by round")
            axis.set_xlabel("round (human effort)")
            axis.set_ylabel("mean utility P_k (± SE)")
            axis.set_ylim(0, 1.05)
            axis.xaxis.set_major_locator(MaxNLocator(integer=True))
            # The lines go over the bars of the twin axes, whose background is the figure's.
            axis.set_zorder(running.get_zorder() + 1)
            axis.patch.set_visible(False)
            running.set_ylabel("sessions still running")
            running.yaxis.set_major_locator(MaxNLocator(integer=True))
            # The counts fill the lower half at most, so the bars stay behind the curves.
            running.set_ylim(0, 2.2 * max(1, int(data["running"].max())))
            _finish(axis, running)
        if legend:
            legend["sessions still running (bars)"] = Patch(color="grey", alpha=0.3)
        _legend_below(figure, list(legend.values()), list(legend))
    return figure


def metric_bars(summary: pd.DataFrame) -> Figure:
    """Delivery rate, performance, Collab Score and H_init (all in [0, 1]) per system, with
    standard error bars: one panel per task, stacked. A value that could not be computed
    (H_init without a judge) is marked ``n/a`` instead of drawn as 0."""
    tasks = sorted(summary["task"].unique()) if not summary.empty else []
    systems = sorted({_system(row) for _, row in summary.iterrows()})
    width = 0.8 / max(1, len(systems))
    groups = np.arange(len(BAR_METRICS))
    with matplotlib.rc_context(TEXT_SIZES):
        figure, panels = _task_panels(tasks, "no systems")
        handles: dict[str, Artist] = {}
        for axis, task in panels:
            rows = summary[summary["task"] == task]
            for position, system in enumerate(systems):
                mine = rows[[_system(row) == system for _, row in rows.iterrows()]]
                if mine.empty:
                    continue
                values = np.array([mine[metric].astype(float).mean()
                                   for metric, _ in BAR_METRICS])
                errors = np.array([mine[f"{metric}_se"].astype(float).mean()
                                   if f"{metric}_se" in mine else math.nan
                                   for metric, _ in BAR_METRICS])
                where = groups + width * (position - (len(systems) - 1) / 2)
                bars = axis.bar(where, np.nan_to_num(values), width,
                                yerr=np.nan_to_num(errors), capsize=3, label=system)
                handles.setdefault(system, Patch(facecolor=bars.patches[0].get_facecolor()))
                for x, value in zip(where, values, strict=True):
                    if math.isnan(value):
                        axis.text(x, 0.02, "n/a", ha="center", va="bottom",
                                  fontsize=MIN_FONT_SIZE, rotation=90, color="dimgrey")
            axis.set_xticks(groups, [label for _, label in BAR_METRICS])
            axis.set_ylim(0, 1.05)
            axis.set_ylabel("mean (± SE)")
            axis.set_title(f"{task}: outcome and initiative per system")
            _finish(axis)
        _legend_below(figure, list(handles.values()), list(handles))
    return figure


def initiative_shares(summary: pd.DataFrame) -> Figure:
    """How the initiative-taking messages split between the agents and the human side; a
    system without judged messages is marked instead of drawn."""
    # Long system names (a model path) wrap onto several lines: unwrapped they would squeeze
    # the bars into a sliver beside them.
    labels = [textwrap.fill(f"{row['task']}: {_system(row)}", LABEL_WIDTH)
              for _, row in summary.iterrows()]
    lines = sum(label.count("\n") + 1 for label in labels)
    with matplotlib.rc_context(TEXT_SIZES):
        figure = _figure(max(2.6, 0.3 * len(labels) + 0.2 * lines + 1.9))
        axis = figure.subplots()
        shares = summary["agent_initiative_share"].to_numpy(dtype=float)
        judged = ~np.isnan(shares)  # a system without judged messages gets no bar
        agent = np.nan_to_num(shares)
        positions = np.arange(len(labels))
        axis.barh(positions, agent, color="C0")
        axis.barh(positions, np.where(judged, 1 - agent, 0), left=agent, color="C1")
        for position in positions[~judged]:
            axis.text(0.01, position, "no judged messages", va="center",
                      fontsize=MIN_FONT_SIZE, color="dimgrey")
        axis.set_yticks(positions, labels)
        axis.invert_yaxis()  # the first system on top, as in the tables
        axis.set_xlim(0, 1)
        axis.set_xlabel("share of initiative-taking messages")
        axis.set_title("Who took the initiative")
        _finish(axis)
        _legend_below(figure, [Patch(facecolor="C0"), Patch(facecolor="C1")],
                      ["agents", "human side"])
    return figure


def png_bytes(figure: Figure, dpi: int = PNG_DPI) -> bytes:
    """The figure as PNG, by default at twice its inline display resolution."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def display_width(figure: Figure) -> int:
    """The CSS pixel width the inline report shows ``figure`` at (before shrinking to fit)."""
    return round(figure.get_figwidth() * SCREEN_DPI)
