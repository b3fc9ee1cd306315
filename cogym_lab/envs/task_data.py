"""What the registered tasks need from the data directory, asked of each task's class.

A task declares its files as ``data_files`` and may say more about them through ``data_report``
(see :class:`~cogym_lab.envs.dataset_env.DatasetEnv`). The registry finds the task, so a task
installed through an entry point is covered like a built-in one; a task that declares nothing
reads no data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from cogym_lab.datasets import (
    CHOOSE_ANOTHER_DIR,
    DataItem,
    DataSample,
    missing_message,
    status,
    uses_sample,
)
from cogym_lab.envs.registry import EnvFactory, available_envs, task_class

__all__ = ["DataSource", "all_data_files", "data_commands", "data_files", "data_report",
           "data_sample", "missing_data_message", "prepare_data", "sample_in_use",
           "tasks_with_data"]

#: What ``session.json`` and ``run.json`` record as ``data`` for a task that reads a dataset:
#: its full data, or the small sample that comes with the package (not comparable with the
#: papers' numbers).
DataSource = Literal["full", "sample"]


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


def data_sample(task: str) -> DataSample | None:
    """The sample of its data that the task ships inside the package, if any."""
    return getattr(_task(task), "data_sample", None)


def sample_in_use(task: str, data_dir: str | Path | None = None) -> DataSample | None:
    """The sample ``task``'s sessions read instead of its data, if they do: nobody chose a
    data directory (``data_dir``, a session's folder, ``COGYM_DATA``) and the default one lacks
    the task's files (see :func:`cogym_lab.datasets.uses_sample`). ``None`` otherwise."""
    sample = data_sample(task)
    return sample if uses_sample(data_files(task), sample, data_dir) else None


def tasks_with_data() -> tuple[str, ...]:
    """The registered tasks that declare data items, by name. Loads every task's class."""
    return tuple(name for name in available_envs()
                 if getattr(task_class(name), "data_files", ()))


def all_data_files() -> list[DataItem]:
    """The data items of every registered task, task by task."""
    return [item for task in tasks_with_data() for item in data_files(task)]


def data_commands() -> list[str]:
    """Where each task's own ``cogym-lab data`` commands are (``package.module:command``)."""
    return [path for task in tasks_with_data()
            for path in getattr(_task(task), "data_commands", ())]


def data_report(task: str, data_dir: Path, *, progress: bool = False) -> list[str]:
    """What the task says about its data in ``data_dir`` beyond present or missing (its
    ``data_report``); may be slow. Empty when the task has nothing to add."""
    report = getattr(_task(task), "data_report", None)
    return list(report(data_dir, progress=progress)) if report is not None else []


def prepare_data(task: str, data_dir: Path | None, *, progress: bool = False) -> list[str]:
    """Build what the task's sessions would build on first use (its ``prepare_data``), and
    say what was done (``data_dir`` None: for the data they would read when nobody chose a
    folder, the task's bundled sample perhaps). Empty when the task prepares nothing."""
    prepare = getattr(_task(task), "prepare_data", None)
    return list(prepare(data_dir, progress=progress)) if prepare is not None else []


def missing_data_message(task: str, data_dir: Path, message: str, *,
                         where: str = "command line") -> str:
    """``message`` (a ``DataMissing`` raised while ``task``'s env was made from ``data_dir``),
    with advice for a person ``where`` they are (see :func:`cogym_lab.datasets.missing_message`).

    The task's declared files are checked again, so the message lists exactly what is missing
    whichever loader raised it; if they are all there (the loader missed something else), its
    own message is kept, with its command-line advice replaced for a notebook."""
    if where == "command line":
        return message
    try:
        items = data_files(task)
    except KeyError:
        items = ()
    missing = [state for state in status(items, data_dir) if not state.present] if items else []
    if missing:
        return missing_message(task, data_dir, missing, where=where)
    advice = (f"If the data is in another folder, run `%cogym config data_dir=/path/to/that/"
              f"folder` in the notebook (the folder that holds {task}/), then start the session "
              "again.")
    if CHOOSE_ANOTHER_DIR in message:
        return message.replace(CHOOSE_ANOTHER_DIR, advice)
    return f"{message.rstrip()}\n{advice}"
