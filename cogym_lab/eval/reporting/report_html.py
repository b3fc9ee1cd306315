"""The evaluation report as HTML for a notebook's output area (``EvalReport._repr_html_``).

What the layout must survive: JupyterLab's output area is as narrow as the notebook column
(about 650-1200 px), clips what overflows it, and shows untrusted outputs through a sanitizer
that drops ``<style>`` elements but keeps ``style`` attributes. So every rule here is an
inline style:

* each table sits in its own box with ``overflow-x: auto``: a wide table scrolls sideways
  inside it instead of widening (and being cut off by) the output area;
* text cells wrap, numbers are right-aligned in tabular figures with a number of digits that
  suits the column, and the system column stays in view while a table scrolls;
* every column header has a ``title`` tooltip saying what the column measures, and a legend
  under a table spells out its abbreviations;
* charts are PNGs at twice their display size, shown at most 100% of the output's width.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, cast

import pandas as pd
from matplotlib.figure import Figure

from cogym_lab.eval.judging.labels import FAILURE_CATEGORIES
from cogym_lab.eval.reporting import plots

SYSTEM = ["task", "agent_type", "model"]

ROOT_STYLE = "max-width:100%;min-width:0;font-size:13px;line-height:1.4"
SCROLL_STYLE = "overflow-x:auto;max-width:100%;margin:0 0 0.4em 0"
TABLE_STYLE = ("border-collapse:collapse;margin:0;table-layout:auto;font-size:12px;"
               "width:auto")
CELL = "padding:0.3em 0.6em;border-bottom:1px solid rgba(128,128,128,0.35);"
HEAD = CELL + "vertical-align:bottom;font-weight:600;white-space:normal;"
NUMBER = ("text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums;"
          "vertical-align:top;")
# break-word (not anywhere): a column is never squeezed narrower than its longest word, and
# only a word longer than the cell (a long model path) breaks.
TEXT = ("text-align:left;white-space:normal;overflow-wrap:break-word;min-width:5em;"
        "max-width:22em;vertical-align:top;")
# The system column stays put while the rest of a wide table scrolls under it; its
# background hides what scrolls by (JupyterLab's theme colour, white elsewhere).
STICKY = ("position:sticky;left:0;z-index:1;background:var(--jp-layout-color0,#fff);"
          "min-width:11em;")
LEGEND_STYLE = "font-size:11.5px;opacity:0.8;margin:0 0 1.2em 0;max-width:60em"
IMAGE_STYLE = "display:block;max-width:100%;height:auto;margin:0.5em 0 1.2em 0"
MISSING = "–"

#: What each column of the tables means, for its header's tooltip.
COLUMN_HELP: dict[str, str] = {
    "system": "A system: the task, the agent type and the agent's model",
    "protocol": "The scoring protocol the sessions followed (cogym or cogym_lab)",
    "sessions": "Number of sessions",
    "failed": "Sessions that failed with an error (counted as not delivered)",
    "delivery_rate": "Share of sessions that delivered an outcome",
    "performance": "Mean task performance (0-1) over the delivered sessions",
    "collab_score": "Collab Score: 1[delivered] x performance, mean over all sessions",
    "h_init": "Initiative entropy H_init (0-1): 1 when initiative is shared evenly across the "
              "team, 0 when one member takes it all (needs a judge); / for a team of one, "
              "where it does not apply",
    "agent_initiative_share": "The agents' share of the initiative-taking messages",
    "user_env_act_ratio": "UserEnvActRatio: the human side's task actions over all its acts",
    "controlled_autonomy": "Controlled autonomy per session: under cogym the Co-Gym release's "
                           "CA+ (agent questions the person's next message answers), halts "
                           "apart; under cogym_lab answered confirmations plus halts",
    "halts": "Halts per session: under cogym the person's messages judged as halts (the "
             "release's CA-); under cogym_lab also pauses",
    "leaked_sessions": "Sessions in which an agent was sent a hidden string of the task",
    "satisfaction": "Mean satisfaction rating (1-5) from ratings.json",
    "outcome_rating": "Mean outcome rating (1-5) from ratings.json",
    "agent_tokens": "Mean tokens written by the agents per session",
    "user_tokens": "Mean tokens written by the human side per session",
    "baseline": "The autonomous baseline this system is compared with",
    "pairs": "Sessions paired with the baseline's on the same instance",
    "test": "The paired test run: McNemar's exact test for a pass-or-fail score (the exact "
            "sign test when such scores come out partial), a paired t-test for a graded one, "
            "Wilcoxon's signed-rank test for the Cocoa study's ratings",
    "graded_pairs": "Pairs in which both sides delivered a graded outcome (the test's n)",
    "mean_difference": "Mean performance of this system minus the baseline's, over graded "
                       "pairs",
    "statistic": "The test statistic",
    "p_value": "The test's two-sided p-value",
    "compared": "Pairs the win rate counts (at least one side delivered)",
    "win_rate": "Win rate against the baseline (win 1, tie 0.5, loss 0; needs a judge)",
    "win_ci_low": "Lower end of the win rate's 95% bootstrap confidence interval",
    "win_ci_high": "Upper end of the win rate's 95% bootstrap confidence interval",
    "human_rated": "Sessions whose person compared their outcome with the autonomous agent's "
                   "in the rating form",
    "human_win_rate": "Human win rate against the autonomous agent (own 1, tie 0.5, autonomous "
                      "0; Co-Gym Table 4)",
    "human_win_ci_low": "Lower end of the human win rate's 95% Wilson score interval",
    "human_win_ci_high": "Upper end of the human win rate's 95% Wilson score interval",
    "progress_by_user": "Sessions whose progress ratings came from the simulated user itself",
    "progress_by_judge": "Sessions whose progress ratings came from the post-hoc judge",
    "autonomous_baseline": "Mean performance of the task's autonomous baseline",
    "rounds": "Mean number of rounds per session",
    "utility_first_update": "Utility P_k' at the first round an agent changed the outcome",
    "utility_final": "Utility P_K at the final round",
    "utility_overall": "Overall utility U: mean of the best P_k of each session",
    "refinement_gain": "Refinement gain G: best P_k minus P_k' (the first update)",
    "refinement_gain_rel": "Refinement gain relative to the utility at the first update",
    "agent_user_token_ratio": "Tokens written by the agents per token of the human side",
    "party": "Who acted: the agents or the human side",
    "task_actions": "Mean task actions per session",
    "collaboration_acts": "Mean collaboration acts (messages, confirmations, pauses, "
                          "finish) per session",
    "annotated": "Sessions the failure annotator labelled",
    # Interactive plans (eval.metrics.plan_measures; docs/evaluation.md)
    "ratio_rounds": "Rounds (step runs) with an output-to-input item ratio, over the planned "
                    "sessions",
    "item_ratio": "Output-to-input item ratio: share of a round's output items still in the "
                  "context pool when the next step started, mean over rounds",
    "person_acts": "Acts of the person side per planned session",
    "co_planning_share": "Share of the person side's acts that are co-planning (propose, "
                         "select, add, edit, delete, move, assign, suggest, undo)",
    "co_execution_share": "Share of the person side's acts that are co-execution (run, run "
                          "all, run remaining, pause after, complete, fail)",
    "curation_share": "Share of the person side's acts that curate a step's output",
    "co_planning_time_share": "Share of the person side's time in co-planning (each act "
                              "lasts until the side's next act, at most 60 s)",
    "co_execution_time_share": "Share of the person side's time in co-execution (each act "
                               "lasts until the side's next act, at most 60 s)",
    "curation_time_share": "Share of the person side's time curating outputs (each act lasts "
                           "until the side's next act, at most 60 s)",
    "steps_agent": "Steps of the final plan assigned to the agent side",
    "steps_person": "Steps of the final plan assigned to the person side",
    "completed_agent": "Steps of the final plan done, completed by the agent side",
    "completed_person": "Steps of the final plan done, completed by the person side",
    "completed_not_completed": "Steps of the final plan not done",
    "rerun_steps": "Steps completed more than once",
    "sessions_with_reruns": "Planned sessions with at least one rerun step",
    # Rating comparisons (Wilcoxon signed-rank)
    "system_a": "The first system compared (agent type / model)",
    "system_b": "The second system compared (agent type / model)",
    "item": "The rated item (1-5)",
    "median_a": "Median rating of the first system over the paired instances",
    "median_b": "Median rating of the second system over the paired instances",
    "W": "Wilcoxon's W: the smaller rank sum of the differing pairs",
    "t": "The paired t statistic (Co-Gym's ratings under the cogym protocol)",
    "p_bonferroni": "The p-value times the number of items tested for these two systems "
                    "(Bonferroni), at most 1",
    "note": "Why a test is missing or cannot be significant",
    # Repeated trials (eval.stats.trials, eval.batch.noise)
    "instances": "Instances (with trials, comparisons average each instance first)",
    "trials": "The most trials any instance had",
    "threshold": "Task performance a delivered trial needs to count as a success",
    "mean": "Mean Collab Score: each instance's mean over its trials, averaged over instances",
    "ci_low": "Lower end of the mean's 95% percentile bootstrap interval over instances",
    "ci_high": "Upper end of the mean's 95% percentile bootstrap interval over instances",
    "within_variance": "Mean over instances of the variance of their trials' Collab Scores "
                       "(run-to-run noise)",
    "between_variance": "Variance of the instances' mean Collab Scores",
    "judge_variance": "Mean variance of one outcome graded again and again (eval noise)",
    "agent_variance": "Mean variance of one session rerun against its user's logged turns, "
                      "judge noise included (eval noise)",
    "judge_share": "Share of the within-instance variance the judge's re-grading explains",
    "agent_share": "Share of the within-instance variance the agent's reruns explain, beyond "
                   "the judge",
    "rest_share": "What is left: the simulated user and how user and agent play off each "
                  "other (an estimate; below 0 means too few repeats)",
    **{key: f"Share of annotated sessions with a {name.lower()} failure"
       for key, name in FAILURE_CATEGORIES.items()},
}
for _tau in (1, 2, 3):
    COLUMN_HELP[f"usability_drop@{_tau}"] = (
        f"Usability drop D@{_tau}: utility lost by a person who stops after {_tau} "
        "poorly rated round(s) in a row, against the final utility (progress rated by the "
        "simulated user, or by a judge)")
    COLUMN_HELP[f"usability_drop@{_tau}_rel"] = (
        f"Usability drop D@{_tau} relative to the final utility")

#: The paper table's column labels and what they mean.
for _k in range(1, 33):
    COLUMN_HELP[f"pass^{_k}"] = (
        f"pass^{_k}: chance that {_k} trials of an instance, drawn from its trials, all "
        "succeed, averaged over instances (tau-bench)")

PAPER_HELP = {"Delivery": COLUMN_HELP["delivery_rate"], "Perf.": COLUMN_HELP["performance"],
              "Collab": COLUMN_HELP["collab_score"], "H_init": COLUMN_HELP["h_init"]}

#: Abbreviations explained under a table whose headers use them (a header word -> meaning).
ABBREVIATIONS = {
    "Perf.": "task performance",
    "Collab": "Collab Score",
    "H_init": "initiative entropy",
    "rel": "relative to the utility it is measured against",
    "@1": "D@τ: a person who tolerates τ poorly rated rounds in a row (τ = 1, 2, 3)",
    "CI": "95% confidence interval",
    "eff.": "efficiency",
    "CR": "contribution rate (the chef's share of the key events of the served orders)",
}

#: The real-time cooking table's columns (``kitchen_measures.PAPER_COLUMNS`` labels) and what
#: they measure; every cell is the inter-quartile mean over the runs, then the standard error.
COOKING_HELP = {
    "layout": "The layout the games were played on",
    "partner": "The other chef: a rule-based partner's type, person, or - (the agent alone)",
    "runs": "Sessions (runs) measured",
    "Score": "Game score at the end: rewards of served orders minus penalties",
    "Score eff.": "Score gained (served orders only, penalties left out) per macro action "
                  "the agent executed",
    "Agent CR": "Agent contribution rate: the agent's key events over both chefs' key events "
                "of the served orders",
    "Latency/macro (s)": "Seconds from the request to the output of a macro action (the LM "
                         "choosing one), mean per run",
    "Latency/policy (s)": "Seconds from the request to a code-as-policy output, mean per run",
    "Missed": "Orders that expired unserved",
    "Wrong served": "Dishes served that no order asked for",
    "Agent occupancy": "Share of the ticks in which the agent's chef executed an atomic action",
    "Partner occupancy": "Share of the ticks in which the partner's chef executed an atomic "
                         "action",
}
ESTIMATE_NOTE = "Each cell: inter-quartile mean over the runs (standard error)."


#: Header words spelled as the docs spell them (the rest of a header is its column's name).
HEADER_WORDS = {"h init": "H_init", "p value": "p\u2011value", "ci": "CI"}  # no break at the hyphen
#: Means of counts and of 1-5 ratings: two decimals say enough.
TWO_DECIMALS = {"rounds", "task_actions", "collaboration_acts", "controlled_autonomy",
                "confirmations_answered", "halts", "satisfaction", "outcome_rating",
                "agent_user_token_ratio", "statistic", "W", "median_a", "median_b",
                "steps_agent", "steps_person", "completed_agent", "completed_person",
                "completed_not_completed", "rerun_steps", "person_acts"}


def header_label(column: str) -> str:
    """A column name as a header: words split at underscores so a long name can wrap."""
    label = column.replace("_", " ")
    for words, spelled in HEADER_WORDS.items():
        label = re.sub(rf"(?<!\w){re.escape(words)}(?!\w)", spelled, label)
    return label


def is_integer_column(series: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(series) and not pd.api.types.is_bool_dtype(series)


def format_number(column: str, value: Any, integer: bool = False) -> str:
    """A cell's number with as many digits as its column needs: counts as integers, tokens
    as whole tokens, small p-values as a bound, other values to three decimals (rates and
    scores are in [0, 1]) or fewer as they grow."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, str):  # a mark put in its place ("/": not applicable)
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    number = float(value)
    if integer or (column in ("sessions", "pairs", "compared", "annotated", "ratio_rounds",
                              "sessions_with_reruns") and number.is_integer()):
        return f"{int(number):,}"
    if column in ("p_value", "p_bonferroni"):
        return "< 0.001" if number < 0.001 else f"{number:.3f}"
    if column.endswith("tokens"):
        return f"{number:,.0f}"
    if column in TWO_DECIMALS and abs(number) < 100:
        return f"{number:.2f}"
    magnitude = abs(number)
    if magnitude >= 1000:
        return f"{number:,.0f}"
    if magnitude >= 100:
        return f"{number:.1f}"
    return f"{number:.3f}"


def is_numeric_column(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series)
            and not pd.api.types.is_bool_dtype(series))


def _header(label: str, help_text: str, numeric: bool, extra: str = "") -> str:
    align = "text-align:right;" if numeric else "text-align:left;"
    return (f'<th title="{escape(help_text)}" scope="col" style="{HEAD}{align}{extra}">'
            f"{escape(label)}</th>")


def _system_label(task: Any, agent_type: Any, model: Any) -> str:
    system = str(agent_type) if model in ("-", "", None) else f"{agent_type} ({model})"
    return f"{task}: {system}"


def _legend(labels: Sequence[str]) -> str:
    """A short line explaining the abbreviations these headers use (empty when none)."""
    text = " | ".join(labels)
    used = [f"<b>{escape(word)}</b>: {escape(meaning)}"
            for word, meaning in ABBREVIATIONS.items()
            if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)]
    if not used:
        return ""
    return f'<p class="cogym-legend" style="{LEGEND_STYLE}">' + "; ".join(used) + "</p>"


def _number_cell(text: str) -> str:
    title = ' title="not computed"' if text == MISSING else ""
    return f'<td style="{CELL}{NUMBER}"{title}>{escape(text)}</td>'


def _scroll_box(table: str, label: str) -> str:
    return (f'<div class="cogym-table-scroll" role="region" aria-label="{escape(label)}" '
            f'tabindex="0" style="{SCROLL_STYLE}">{table}</div>')


def table_html(frame: pd.DataFrame, label: str) -> str:
    """One table in its scroll box, with its legend. A table with the system columns (task,
    agent type, model) shows them as one ``system`` column that stays in view."""
    columns = list(frame.columns)
    merged = all(column in columns for column in SYSTEM)
    rest = [column for column in columns if not (merged and column in SYSTEM)]
    numeric = {column: is_numeric_column(frame[column]) for column in rest}
    heads = []
    if merged:
        heads.append(_header("system", COLUMN_HELP["system"], False, STICKY))
    for column in rest:
        help_text = COLUMN_HELP.get(column, "A rate the task reports for itself")
        heads.append(_header(header_label(column), f"{column}: {help_text}",
                             numeric[column]))
    body = []
    for _, row in frame.iterrows():
        cells = []
        if merged:
            name = _system_label(row["task"], row["agent_type"], row["model"])
            cells.append(f'<th scope="row" style="{CELL}{TEXT}{STICKY}font-weight:600">'
                         f"{escape(name)}</th>")
        for column in rest:
            value = row[column]
            if numeric[column]:
                text = format_number(column, value, is_integer_column(frame[column]))
                cells.append(_number_cell(text))
            else:
                shown = MISSING if value is None or (isinstance(value, float)
                                                     and math.isnan(value)) else str(value)
                cells.append(f'<td style="{CELL}{TEXT}">{escape(shown)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = (f'<table style="{TABLE_STYLE}"><thead><tr>{"".join(heads)}</tr></thead>'
             f'<tbody>{"".join(body)}</tbody></table>')
    return _scroll_box(table, label) + _legend([header_label(c) for c in rest])


def paper_table_html(wide: pd.DataFrame, label: str) -> str:
    """The paper-style table: rows agent type (model), columns task x (Delivery, Perf., Collab,
    H_init), in two header rows."""
    # The columns are (task, metric) pairs: the frame's columns are a two-level MultiIndex.
    columns = cast(list[tuple[str, str]], list(wide.columns))
    tasks: list[tuple[str, int]] = []
    for task, _ in columns:
        if tasks and tasks[-1][0] == task:
            tasks[-1] = (task, tasks[-1][1] + 1)
        else:
            tasks.append((task, 1))
    top = [f'<th rowspan="2" scope="col" title="{escape(COLUMN_HELP["system"])}" '
           f'style="{HEAD}text-align:left;{STICKY}">system</th>']
    top += [f'<th colspan="{span}" scope="colgroup" title="{escape(f"The task {task}")}" '
            f'style="{HEAD}text-align:center">{escape(str(task))}</th>' for task, span in tasks]
    second = [_header(str(metric), f"{metric}: {PAPER_HELP.get(str(metric), '')}", True)
              for _, metric in columns]
    body = []
    for index, row in wide.iterrows():
        agent_type, model = cast(tuple[str, str], index)  # the (agent type, model) index
        system = str(agent_type) if model in ("-", "") else f"{agent_type} ({model})"
        cells = [f'<th scope="row" style="{CELL}{TEXT}{STICKY}font-weight:600">'
                 f"{escape(system)}</th>"]
        for column in columns:
            cells.append(_number_cell(format_number(str(column[1]), row[column])))
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = (f'<table style="{TABLE_STYLE}"><thead><tr>{"".join(top)}</tr>'
             f'<tr>{"".join(second)}</tr></thead><tbody>{"".join(body)}</tbody></table>')
    return _scroll_box(table, label) + _legend([str(metric) for _, metric in columns])


def estimates_table_html(frame: pd.DataFrame, label: str) -> str:
    """A table of ``IQM (SE)`` cells (the real-time cooking table): the system column stays in
    view, layout and partner are text, every other cell is right-aligned figures."""
    text_columns = {"layout", "partner"}
    rest = [column for column in frame.columns if column not in SYSTEM]
    heads = [_header("system", COLUMN_HELP["system"], False, STICKY)]
    heads += [_header(header_label(column), f"{column}: {COOKING_HELP.get(column, '')}",
                      column not in text_columns) for column in rest]
    body = []
    for _, row in frame.iterrows():
        name = _system_label(row["task"], row["agent_type"], row["model"])
        cells = [f'<th scope="row" style="{CELL}{TEXT}{STICKY}font-weight:600">'
                 f"{escape(name)}</th>"]
        for column in rest:
            value = str(row[column])
            if column in text_columns:
                cells.append(f'<td style="{CELL}{TEXT}">{escape(value)}</td>')
            else:
                cells.append(_number_cell(MISSING if value == "-" else value))
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = (f'<table style="{TABLE_STYLE}"><thead><tr>{"".join(heads)}</tr></thead>'
             f'<tbody>{"".join(body)}</tbody></table>')
    note = f'<p style="{LEGEND_STYLE}">{escape(ESTIMATE_NOTE)}</p>'
    return _scroll_box(table, label) + _legend([header_label(c) for c in rest]) + note


def figure_html(name: str, figure: Figure) -> str:
    """A chart as a 2x PNG shown at its design width, shrinking with a narrower output."""
    data = base64.b64encode(plots.png_bytes(figure)).decode()
    width = plots.display_width(figure)
    return (f'<img class="cogym-chart" alt="{escape(name.replace("_", " "))}" width="{width}" '
            f'style="{IMAGE_STYLE}" src="data:image/png;base64,{data}"/>')


def render(title: str, checks: Sequence[str], sections: Sequence[tuple[str, str]],
           figures: Mapping[str, Figure], notes: Sequence[str]) -> str:
    """The whole report: ``sections`` are (heading, HTML of its table) pairs."""
    parts = [f'<div class="cogym-report" style="{ROOT_STYLE}">',
             f'<h3 style="margin:0 0 0.4em 0">{escape(title)}</h3>']
    parts += [f'<p style="margin:0.2em 0">{escape(line)}</p>' for line in checks]
    parts.append(f'<p style="{LEGEND_STYLE}">Wide tables scroll sideways; hover over a column '
                 "header for what it measures.</p>")
    for heading, body in sections:
        parts += [f'<h4 style="margin:1.2em 0 0.4em 0">{escape(heading)}</h4>', body]
    if figures:
        parts.append('<h4 style="margin:1.2em 0 0.4em 0">Plots</h4>')
        parts += [figure_html(name, figure) for name, figure in figures.items()]
    if notes:
        parts += ['<h4 style="margin:1.2em 0 0.4em 0">Notes</h4>',
                  '<ul style="max-width:60em">'
                  + "".join(f"<li>{escape(note)}</li>" for note in notes) + "</ul>"]
    parts.append("</div>")
    return "\n".join(parts)
