"""``cogym-lab study``: run the papers' human studies and their simulated arm (docs/studies.md).

Each part of the kit adds its subcommands from a module of its own, one line each below.
"""

from __future__ import annotations

import click

from cogym_lab.cli.study_analysis import analyse_command, compare_command


@click.group("study")
def study() -> None:
    """Studies with people and with simulated participants: designs, runs, exports, analyses."""


study.add_command(analyse_command)
study.add_command(compare_command)
