"""``cogym-lab study designs`` and ``cogym-lab study check``: the ready designs, and checking
a design file before anyone is asked to take part."""

from __future__ import annotations

import click

from cogym_lab.studies.designs import (
    StudyDesignError,
    load_design,
    participant_plan,
    ready_designs,
)


@click.command("designs")
def designs() -> None:
    """List the ready study designs (use a name, or the path to your own file)."""
    rows = [("name", "conditions", "sessions", "minutes", "title", "source")]
    for name in ready_designs():
        design = load_design(name, check=False)  # shipped: checked by the tests
        plan = participant_plan(design)
        rows.append((name, str(len(design.participant_conditions())), str(plan.sessions),
                     f"~{round(plan.minutes)}", design.title, design.source))
    widths = [max(len(row[k]) for row in rows) for k in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        click.echo("  ".join([*cells, row[4]]))
        if row[5] and row is not rows[0]:
            click.echo(" " * (sum(widths) + 8) + f"from: {row[5]}")
    click.echo("\nsessions: per participant; minutes: about, in all. "
               "`cogym-lab study check NAME` says more.")


@click.command("check")
@click.argument("design", metavar="DESIGN_OR_FILE")
def check(design: str) -> None:
    """Check a study design (a ready one by name, or a TOML file): exit 0 with what it asks of
    a participant, or exit 1 with one line per problem."""
    try:
        checked = load_design(design)
    except StudyDesignError as error:
        click.echo(f"{error.source}: {len(error.problems)} problem"
                   f"{'s' if len(error.problems) != 1 else ''}", err=True)
        for line in error.problems:
            click.echo(f"  {line}", err=True)
        raise SystemExit(1) from None
    plan = checked.assignment
    click.echo(f"{checked.name}: {checked.title}")
    if checked.source:
        click.echo(f"  from: {checked.source}")
    click.echo(f"  design: {plan.subjects}-subjects"
               + (f", order {plan.order}, each condition {plan.repeat}x"
                  if plan.subjects == "within" else ""))
    for condition in checked.conditions:
        session = condition.session
        role = "baseline, run by the agents alone" if condition.baseline \
            else f"shown as {condition.label!r}"
        mode = f", mode {'+'.join(session.mode)}" if session.mode else ""
        click.echo(f"  condition {condition.name}: {session.task} with team {session.team}"
                   f"{mode} ({role})")
    for questionnaire in checked.questionnaires:
        kinds = ", ".join(item.kind for item in questionnaire.items)
        click.echo(f"  questionnaire {questionnaire.name} after each {questionnaire.after}: "
                   f"{len(questionnaire.items)} items ({kinds})"
                   .replace("after each end", "at the end"))
    if checked.measures:
        click.echo(f"  measures: {', '.join(checked.measures)}")
    click.echo(participant_plan(checked).summary)


COMMANDS: list[click.Command] = [designs, check]

__all__ = ["COMMANDS", "check", "designs"]
