"""What the registered tasks need from the data directory, asked of each task's class.

A task declares its files as ``data_files`` and may say more about them through ``data_report``
(see :class:`~cogym_lab.envs.dataset_env.DatasetEnv`). The registry finds the task, so a task
installed through an entry point is covered like a built-in one; a task that declares nothing
reads no data.
"""

from __future__ import annotations

from pathlib import Path

from cogym_lab.datasets import DataItem
from cogym_lab.envs.registry import EnvFactory, available_envs, task_class

__all__ = ["all_data_files", "data_files", "data_report", "tasks_with_data"]


def _task(name: str) -> EnvFactory:
    factory = task_class(name)
    if factory is None:
        raise KeyError(f"Unknown task {name!r}. Tasks with data: "
                       f"{', '.join(tasks_with_data())}.")
    return factory


def data_files(task: str) -> tuple[DataItem, ...]:
    """The data items the task registered as ``task`` declares (none for a task that reads no
    data). KeyError for a task this installation does not have."""
    return tuple(getattr(_task(task), "data_files", ()))


def tasks_with_data() -> tuple[str, ...]:
    """The registered tasks that declare data items, by name. Loads every task's class."""
    return tuple(name for name in available_envs()
                 if getattr(task_class(name), "data_files", ()))


def all_data_files() -> list[DataItem]:
    """The data items of every registered task, task by task."""
    return [item for task in tasks_with_data() for item in data_files(task)]


def data_report(task: str, data_dir: Path, *, progress: bool = False) -> list[str]:
    """What the task says about its data in ``data_dir`` beyond present or missing (its
    ``data_report``); may be slow. Empty when the task has nothing to add."""
    report = getattr(_task(task), "data_report", None)
    return list(report(data_dir, progress=progress)) if report is not None else []
