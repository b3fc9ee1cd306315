"""``cogym-lab grade TASK FILE ...``: grade a file of a task's outcomes with the task's own batch
grader. A task offers one by naming a click command in ``CoEnv.grade_command``; its options are
the task's own (``cogym-lab grade TASK --help``)."""

from __future__ import annotations

from typing import Any

import click

from cogym_lab.envs import available_envs
from cogym_lab.envs.registry import load_object, task_class


def _grader_path(task: str) -> str | None:
    factory = task_class(task)
    return getattr(factory, "grade_command", None) if factory is not None else None


class TaskGraders(click.Group):
    """One subcommand per task with a batch grader, found by asking the tasks."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [task for task in available_envs() if _grader_path(task)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        path = _grader_path(name)
        if path is None:
            graders = ", ".join(self.list_commands(ctx)) or "none"
            raise click.UsageError(f"{name!r} has no batch grader; `cogym-lab grade` supports "
                                   f"{graders}.", ctx)
        command: Any = load_object(path)
        return command


@click.group("grade", cls=TaskGraders)
def grade() -> None:
    """Grade a file of TASK's outcomes (one JSON object a line) and print its summary rates."""
