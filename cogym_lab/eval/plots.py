"""The report's plots, drawn with matplotlib's Agg canvas: no window, no pyplot state, so they
work the same in a terminal, on CI and inside a notebook kernel."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

BAR_METRICS = [("delivery_rate", "Delivery rate"), ("performance", "Task performance"),
               ("collab_score", "Collab Score"), ("h_init", "Initiative entropy H_init")]


def _figure(columns: int, rows: int = 1, width: float = 4.6, height: float = 3.6) -> Figure:
    figure = Figure(figsize=(width * columns, height * rows), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _system(row: pd.Series) -> str:
    if row["model"] in ("-", ""):
        return str(row["agent_type"])
    return f"{row['agent_type']} ({row['model']})"


def scaling_curves(scaling: pd.DataFrame, baselines: dict[str, float]) -> Figure:
    """Mean utility P_k (± SE) against round, one panel per task, one line per system; the
    autonomous baseline is a dashed line and the bars underneath count sessions still running."""
    tasks = sorted(scaling["task"].unique()) if not scaling.empty else []
    figure = _figure(max(1, len(tasks)), height=4.2)
    axes = figure.subplots(1, max(1, len(tasks)), squeeze=False)[0]
    for axis, task in zip(axes, tasks or [None], strict=False):
        if task is None:
            axis.text(0.5, 0.5, "no graded rounds", ha="center", va="center")
            continue
        data = scaling[scaling["task"] == task]
        running = axis.twinx()
        systems = data[["agent_type", "model"]].drop_duplicates().itertuples(index=False)
        for position, (agent_type, model) in enumerate(systems):
            line = data[(data["agent_type"] == agent_type) & (data["model"] == model)]
            label = agent_type if model in ("-", "") else f"{agent_type} ({model})"
            drawn = axis.plot(line["round"], line["mean"], marker="o", label=label)[0]
            axis.fill_between(line["round"], line["mean"] - line["se"],
                              line["mean"] + line["se"], alpha=0.2, color=drawn.get_color())
            running.bar(line["round"] + 0.15 * position, line["running"], width=0.15,
                        alpha=0.25, color=drawn.get_color())
        if task in baselines and not math.isnan(baselines[task]):
            axis.axhline(baselines[task], linestyle="--", color="black",
                         label="autonomous baseline")
        axis.set_title(task)
        axis.set_xlabel("round (human effort)")
        axis.set_ylabel("utility P_k")
        axis.set_ylim(0, 1.05)
        axis.set_zorder(running.get_zorder() + 1)
        axis.patch.set_visible(False)
        running.set_ylabel("sessions still running")
        axis.legend(loc="lower right", fontsize="small")
    return figure


def metric_bars(summary: pd.DataFrame) -> Figure:
    """Delivery rate, performance, Collab Score and H_init per task and system, with standard
    error bars."""
    figure = _figure(len(BAR_METRICS))
    axes = figure.subplots(1, len(BAR_METRICS), squeeze=False)[0]
    tasks = sorted(summary["task"].unique()) if not summary.empty else []
    systems = sorted({_system(row) for _, row in summary.iterrows()})
    width = 0.8 / max(1, len(systems))
    for axis, (metric, title) in zip(axes, BAR_METRICS, strict=True):
        for position, system in enumerate(systems):
            rows = summary[[_system(row) == system for _, row in summary.iterrows()]]
            values = [rows.loc[rows["task"] == task, metric].mean() for task in tasks]
            errors = [rows.loc[rows["task"] == task, f"{metric}_se"].mean() for task in tasks]
            axis.bar(np.arange(len(tasks)) + position * width, np.nan_to_num(values), width,
                     yerr=np.nan_to_num(errors), capsize=3, label=system)
        axis.set_xticks(np.arange(len(tasks)) + width * (len(systems) - 1) / 2, tasks,
                        rotation=15)
        axis.set_ylim(0, 1.05)
        axis.set_title(title)
    axes[0].legend(fontsize="small")
    return figure


def initiative_shares(summary: pd.DataFrame) -> Figure:
    """How the initiative-taking messages split between the agents and the human side."""
    figure = _figure(1, width=6.4, height=max(2.4, 0.5 * len(summary) + 1.2))
    axis = figure.subplots()
    labels = [f"{row['task']}: {_system(row)}" for _, row in summary.iterrows()]
    shares = summary["agent_initiative_share"].to_numpy(dtype=float)
    judged = ~np.isnan(shares)  # a system without judged messages gets no bar
    agent = np.nan_to_num(shares)
    positions = np.arange(len(labels))
    axis.barh(positions, agent, label="agents")
    axis.barh(positions, np.where(judged, 1 - agent, 0), left=agent, label="human side")
    axis.set_yticks(positions, labels)
    axis.set_xlim(0, 1)
    axis.set_xlabel("share of initiative-taking messages")
    axis.legend(loc="lower right", fontsize="small")
    return figure


def png_bytes(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
