"""``cogym-lab study``: studies with people and their simulated arm (docs/studies.md)."""

from __future__ import annotations

import click

from cogym_lab.cli.study_hub import export_command, open_command, serve_command


@click.group("study")
def study() -> None:
    """Run a study: serve it to participants, export what they did."""


study.add_command(serve_command)
study.add_command(open_command)
study.add_command(export_command)
