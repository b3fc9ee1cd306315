"""``cogym-lab eval audit`` and ``cogym-lab eval validation-sheet``: checking the simulated user.

Registered on the ``eval`` group by :mod:`cogym_lab.cli.eval_command`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

console = Console(highlight=False)


def judge_settings(model: str | None, base_url: str | None) -> dict[str, Any] | None:
    """The ``--judge`` and ``--judge-base-url`` options as LM settings for ``make_judge``."""
    if not model:
        return None
    return {"model": model, **({"base_url": base_url} if base_url else {})}


async def _audit(dirs: list[Path], model: str | None, base_url: str | None, force: bool,
                 failures: bool) -> list[Any]:
    from cogym_lab.eval.judging.failure_taxonomy import taxonomy_for
    from cogym_lab.eval.judging.judges import make_judge
    from cogym_lab.eval.session_metrics import task_description
    from cogym_lab.eval.users.audit import aaudit

    judge = make_judge(judge_settings(model, base_url))
    try:
        audited = await aaudit(dirs, judge, force=force)
        if failures and judge is not None:
            await asyncio.gather(*(taxonomy_for(item.record, judge, task_description(
                item.record.task, json.dumps(item.record.env_args, sort_keys=True)),
                force=force) for item in audited if item.record.events))
        return audited
    finally:
        if judge is not None:
            await judge.lm.aclose()


@click.command("audit")
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge", "judge_model", default=None, metavar="MODEL",
              help="Model of the LM reviewer; without one, only the programmatic checks run.")
@click.option("--judge-base-url", default=None, metavar="URL",
              help="OpenAI-compatible endpoint of the reviewer's model.")
@click.option("--force", is_flag=True,
              help="Audit again the sessions that already have a user_audit.json.")
@click.option("--failures", is_flag=True,
              help="Also annotate the failure taxonomy (failures.json) with the judge.")
@click.option("--rerun-flagged", is_flag=True,
              help="Run the flagged sessions again, in their run folders, with the run's "
                   "settings (the old folders move to .replaced/).")
def audit_command(dirs: tuple[Path, ...], judge_model: str | None, judge_base_url: str | None,
                  force: bool, failures: bool, rerun_flagged: bool) -> None:
    """Audit the simulated users of the sessions under DIRS (writes each user_audit.json)."""
    from cogym_lab.eval.users.audit import summary_lines
    from cogym_lab.eval.users.rerun import plan_reruns, rerun

    try:
        audited = asyncio.run(_audit(list(dirs), judge_model, judge_base_url, force, failures))
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    for line in summary_lines(audited):
        click.echo(line)
    if not rerun_flagged:
        return
    flagged = [item.record for item in audited if item.audit is not None and item.audit.flagged]
    plan = plan_reruns(flagged)
    for folder, why in plan.skipped.items():
        console.print(f"[yellow]not rerun[/] {folder}: {why}")
    if not plan.runs:
        click.echo("Nothing to rerun.")
        return
    try:
        summaries = rerun(plan, progress=True)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    for folder, summary in zip(plan.runs, summaries, strict=False):
        keys = ", ".join(f"{i}" + (f" (trial {t})" if t else "") for i, t in plan.runs[folder])
        click.echo(f"Reran {keys} in {folder}: {summary.counts.finished}/"
                   f"{summary.counts.total} sessions finished, {summary.counts.failed} failed")


@click.command("validation-sheet")
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="CSV file to write: one row per act of a simulated user.")
@click.option("--judge", "judge_model", default=None, metavar="MODEL",
              help="Fill the sheet with this LM's ratings (rater lm:MODEL) instead of leaving "
                   "it blank for people.")
@click.option("--judge-base-url", default=None, metavar="URL",
              help="OpenAI-compatible endpoint of the judge model.")
def validation_sheet_command(dirs: tuple[Path, ...], out: Path, judge_model: str | None,
                             judge_base_url: str | None) -> None:
    """Write the simulator validation sheet of the sessions under DIRS (accuracy,
    consistency, plausibility per act; Co-Gym Appendix D). Rate it, then pass it to
    `cogym-lab eval report --validation`."""
    from cogym_lab.eval.users.simulator_validation import write_sheet

    try:
        rows, missing = asyncio.run(_sheet(list(dirs), judge_model, judge_base_url))
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    write_sheet(rows, out)
    sessions = len({row.session_dir for row in rows})
    click.echo(f"{len(rows)} turns of simulated users in {sessions} sessions -> {out}")
    for folder in missing:
        console.print(f"[yellow]not rated[/] {folder}: the judge gave no usable ratings")


async def _sheet(dirs: list[Path], model: str | None, base_url: str | None
                 ) -> tuple[list[Any], list[Path]]:
    from cogym_lab.eval.judging.judges import make_judge
    from cogym_lab.eval.session_metrics import task_description
    from cogym_lab.eval.users.simulator_validation import lm_rows, sheet_rows
    from cogym_lab.records.trajectory import load_sessions

    records = load_sessions(dirs)
    judge = make_judge(judge_settings(model, base_url))
    if judge is None:
        return [row for record in records for row in sheet_rows(record)], []
    try:
        rated = await asyncio.gather(*(lm_rows(judge, record, task_description(
            record.task, json.dumps(record.env_args, sort_keys=True))) for record in records))
    finally:
        await judge.lm.aclose()
    rows = [row for found in rated if found for row in found]
    missing = [record.path for record, found in zip(records, rated, strict=True)
               if found is None]
    return rows, missing
