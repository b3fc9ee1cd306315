"""``cogym-lab grade travel_planning PLANS``: grade a file of plans, one JSON object a line, and
print the summary rates.

The travel task's batch grader (``TravelPlanningEnv.grade_command`` names it, and the CLI finds it
there): PLANS holds TravelPlanner plans (see :mod:`cogym_lab.envs.travel_planning.plans_file`),
graded with TravelPlanner's checks in the ``official``, ``corrected`` or ``release`` mode. Each
input line gets one output line in ``--out``, in order; a line that cannot be graded gets
``{"line": N, "error": "..."}`` and never stops the run. ``docs/travel-grader.md`` describes
the verdicts and the rates.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from cogym_lab.envs.travel_planning.grading_rules import GRADER_MODES

console = Console(highlight=False)

def _lines(path: Path) -> Iterator[bytes]:
    """The raw lines of ``path`` (gzip-compressed when it ends in ``.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for raw in handle:
            yield raw.rstrip(b"\r\n")


def _rates_table(rates: Any, mode: str) -> Table:
    table = Table(title=f"{rates.plans} plans, {mode} mode", highlight=False)
    table.add_column("Rate")
    table.add_column("Value", justify="right")
    for label, value in (("Delivery rate", rates.delivery_rate),
                         ("Commonsense micro pass rate", rates.commonsense_micro),
                         ("Commonsense macro pass rate", rates.commonsense_macro),
                         ("Hard constraint micro pass rate", rates.hard_micro),
                         ("Hard constraint macro pass rate", rates.hard_macro),
                         ("Final pass rate", rates.final_pass_rate),
                         ("Co-Gym task performance (mean)", rates.cogym_performance)):
        table.add_row(label, f"{value:.1%}" if "performance" not in label else f"{value:.3f}")
    return table


def _checks_table(counts: dict[str, Counter[Any]]) -> Table:
    from cogym_lab.envs.travel_planning.constraint_names import COMMONSENSE, HARD

    table = Table(title="Verdicts by constraint", highlight=False)
    table.add_column("Constraint", no_wrap=True)
    for column in ("Passed", "Failed", "N/A"):
        table.add_column(column, justify="right")
    for name in (*COMMONSENSE, *HARD):
        seen = counts.get(name, Counter())
        table.add_row(name, str(seen[True]), str(seen[False]), str(seen[None]))
    return table


@click.command("travel_planning")
@click.argument("plans", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", type=click.Choice(list(GRADER_MODES)), default="official",
              show_default=True,
              help="official: the official evaluator's verdicts, quirks included; corrected: "
                   "its bugs fixed; release: the Co-Gym release's evaluator (protocol cogym).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where to write the verdicts, one JSON line per input line.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The data directory (default: COGYM_DATA, else the user cache).")
@click.option("--flights", type=click.Choice(["database", "reference"]), default="database",
              show_default=True,
              help="Check flights against every flight the search tools serve, or against "
                   "each query's reference flights only.")
def grade(plans: Path, mode: str, out: Path, data_dir: Path | None, flights: str) -> None:
    """Grade every line of PLANS (TravelPlanner plans, JSON lines) and write the verdicts to
    --out."""
    from cogym_lab.datasets import DatasetError
    from cogym_lab.envs.travel_planning.pass_rates import pass_rates
    from cogym_lab.envs.travel_planning.plans_file import PlansFileGrader

    try:
        grader = PlansFileGrader(data_dir, mode=mode, flights=flights)
    except DatasetError as error:
        raise click.ClickException(str(error)) from None
    grades, failed = [], 0
    counts: dict[str, Counter[Any]] = {}
    with open(out, "w", encoding="utf-8") as sink:
        for number, raw in enumerate(_lines(plans), start=1):
            graded = grader.grade_line(number, raw)
            sink.write(json.dumps(graded.record, ensure_ascii=False) + "\n")
            if graded.grade is None:
                failed += 1
                continue
            grades.append(graded.grade)
            for name, verdict in (*graded.grade.commonsense.items(), *graded.grade.hard.items()):
                counts.setdefault(name, Counter())[verdict.passed] += 1
    console.print(f"{len(grades) + failed} lines: {len(grades)} graded, {failed} not "
                  f"gradable (error lines in {out}).")
    if not grades:
        console.print("No plan could be graded, so there are no rates.")
        return
    console.print(_rates_table(pass_rates(grades), mode))
    console.print(_checks_table(counts))
    console.print(f"Verdicts: {out}")

