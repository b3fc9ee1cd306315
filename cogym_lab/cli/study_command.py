"""``cogym-lab study``: studies with people and their simulated arm (docs/studies.md).

Each part of the kit adds its subcommands from its own module, one line each below.
"""

from __future__ import annotations

import click

from cogym_lab.cli import study_designs
from cogym_lab.cli.study_analysis import analyse_command, compare_command
from cogym_lab.cli.study_hub import export_command, open_command, serve_command
from cogym_lab.cli.study_simulate import simulate_command


@click.group("study")
def study() -> None:
    """Run a study: its design, its participants (people or simulated), its analysis."""


for _command in study_designs.COMMANDS:  # designs, check
    study.add_command(_command)
study.add_command(simulate_command)
study.add_command(serve_command)
study.add_command(open_command)
study.add_command(export_command)
study.add_command(analyse_command)
study.add_command(compare_command)
