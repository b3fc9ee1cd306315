"""``cogym-lab study simulate``: a study design walked by simulated participants."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cogym_lab.cli.options import env_args, lm_options_saying, lm_settings

console = Console()


@click.command("simulate")
@click.argument("design")
@click.option("--participants", type=click.IntRange(min=1), required=True,
              help="How many simulated participants walk the design.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the export (participants.csv, sessions.csv, answers.csv, "
                   "events.csv, study.json) and the sessions' results (sessions/). Run again "
                   "with the same folder to resume.")
@click.option("--scripted", is_flag=True,
              help="Scripted participants: questionnaire answers follow from the outcome by "
                   "rule, and the team's own member keeps the person's seat: rule-based where "
                   "the team has one (no LM for the person), else the team's LM simulated "
                   "user (give it a model).")
@lm_options_saying(
    "Model for every LM (the simulated user, agents, the task's tools), or for ROLE "
    "(repeatable).",
    "OpenAI-compatible endpoint for every LM, or for ROLE.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Cap every session at SECONDS (a quick pilot run).")
@click.option("--env-arg", multiple=True, metavar="KEY=VALUE",
              help="Task argument for every session whose task takes it, e.g. ticks=60 for "
                   "short real-time games (repeatable; values are JSON when they parse).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="The study's seed: the orders of a random assignment.")
@click.option("--no-progress", is_flag=True, help="Do not draw the progress bar.")
def simulate_command(design: str, participants: int, out: Path, scripted: bool,
                     models: tuple[str, ...], base_urls: tuple[str, ...],
                     time_limit: float | None, env_arg: tuple[str, ...], seed: int,
                     no_progress: bool) -> None:
    """Run DESIGN (a ready design's name or a design file) with simulated participants."""
    from cogym_lab.lm import LMNotConfigured
    from cogym_lab.studies.simulate import (
        SimulationError,
        SimulationSettings,
        load_study_design,
        simulate_study,
    )

    try:
        study = load_study_design(design)
    except (SimulationError, FileNotFoundError, ValueError) as error:
        raise click.BadParameter(str(error), param_hint="DESIGN") from None
    settings = SimulationSettings(scripted=scripted, lm=lm_settings(models, base_urls),
                                  seed=seed, time_limit=time_limit, env_args=env_args(env_arg))
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, disable=no_progress)
    with progress:
        bar = progress.add_task(f"{study.name}: participants", total=participants)

        def done(participant: str, skipped: bool) -> None:
            progress.update(bar, advance=1, description=f"{study.name}: {participant}"
                            + (" (done before)" if skipped else ""))

        try:
            summary = asyncio.run(simulate_study(study, out, participants, settings=settings,
                                                 on_participant=done))
        except (SimulationError, LMNotConfigured) as error:
            raise click.ClickException(str(error)) from None
    counts = summary.counts
    console.print(f"[bold]{study.name}[/] · simulated{' (scripted)' if scripted else ''}: "
                  f"{summary.participants} participants ({summary.ran} run now, "
                  f"{summary.skipped} done before); {counts['sessions']} sessions, "
                  f"{counts['answers']} answers, {counts['events']} events")
    console.print(f"Export: {out}")
