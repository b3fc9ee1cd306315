"""``cogym-lab study``: studies with people and their simulated arm (docs/studies.md). Each part
adds its subcommands from a module of its own."""

from __future__ import annotations

import click

from cogym_lab.cli.study_simulate import simulate_command


@click.group("study")
def study_group() -> None:
    """Studies: designs, the simulated arm, analysis, serving to people."""


study_group.add_command(simulate_command)
