"""The small sample of a task's data that ships inside the package, and when it stands in.

A task may carry a :class:`DataSample`: a folder inside the installed package laid out like the
task's folder of the data directory (the same relative paths, fewer records), with the licence
and attribution of what it holds and a ``SAMPLE.md`` that says what was taken. When nobody chose
a data directory (no ``--data-dir``, no session folder, no ``COGYM_DATA``) and the default one
lacks the task's files, the task reads its sample instead, and says so once per process with the
command that fetches the full data. A folder someone chose is never replaced: its missing files
are an error that says how to get them.

Numbers computed on a sample are not comparable with the papers': :func:`is_sample` tells a
folder of sample data from a full one, so sessions and evaluations can mark or refuse it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cogym_lab.datasets.checks import (
    as_typed,
    download_command,
    list_command,
    require,
    status,
    task_of,
)
from cogym_lab.datasets.items import DataItem
from cogym_lab.datasets.location import data_dir as _resolve_dir
from cogym_lab.datasets.location import data_dir_origin

__all__ = ["SAMPLE_MARKER", "DataSample", "announce_once", "is_sample", "task_folder",
           "uses_sample"]

#: The file at the top of every sample folder: what the sample holds and where it comes from.
SAMPLE_MARKER = "SAMPLE.md"

_announced: set[str] = set()
_announce_lock = threading.Lock()


@dataclass(frozen=True)
class DataSample:
    """A task's bundled sample: ``folder`` stands for ``<data dir>/<task>/``; ``summary`` says
    in a few words what it holds ("12 of the 102 validation queries, ...")."""

    task: str
    folder: Path
    summary: str
    #: The commands that get the full data, as typed at a command line; empty: the task's
    #: ``cogym-lab data download TASK`` does it all.
    full_data: tuple[str, ...] = ()

    def full_data_commands(self, *, where: str = "command line") -> list[str]:
        """The commands that get the full data, as typed ``where`` the person is."""
        if not self.full_data:
            return [download_command(self.task, where=where)]
        return [as_typed(command, where) for command in self.full_data]

    def notice(self, *, where: str = "command line") -> str:
        """The one paragraph that says the sample is in use and how to get the full data."""
        commands = " and ".join(f"`{command}`"
                                for command in self.full_data_commands(where=where))
        return (f"Using the {self.task} sample that comes with cogym_lab ({self.summary}); "
                f"numbers from it are not comparable with the papers'. For the full data, run "
                f"{commands} (`{list_command(self.task, where=where)}` says what each file is "
                "and where it comes from).")


def is_sample(folder: str | Path) -> bool:
    """Whether ``folder`` (a task's data folder) is a bundled sample rather than full data."""
    return (Path(folder) / SAMPLE_MARKER).is_file()


def uses_sample(items: Sequence[DataItem], sample: DataSample | None,
                data_dir: str | Path | None = None) -> bool:
    """Whether the task whose files are ``items`` reads its ``sample``: nobody chose a data
    directory and the default one lacks some of ``items``."""
    if sample is None or data_dir_origin(data_dir) != "cache":
        return False
    return not all(state.present for state in status(items, _resolve_dir(data_dir)))


def task_folder(items: Sequence[DataItem], sample: DataSample | None,
                data_dir: str | Path | None = None, *, announce: bool = True) -> Path:
    """The folder the task reads its files from: ``<data dir>/<task>/``, or the bundled sample
    (see :func:`uses_sample`), announced once per process on stderr. Raises
    :class:`~cogym_lab.datasets.DataMissing` (with how to get the files) when a chosen data
    directory lacks them."""
    if uses_sample(items, sample, data_dir):
        assert sample is not None
        if announce:
            announce_once(sample)
        return sample.folder
    task = task_of(items)
    require(items, data_dir)
    return _resolve_dir(data_dir) / task


def announce_once(sample: DataSample, *, told_elsewhere: bool = False) -> None:
    """Print ``sample``'s notice on stderr, once per process and task: the task's loader and
    the command that started the session may both call it, and a person reads it once.
    ``told_elsewhere``: the person is told in other words where they are (a notebook's), so
    this process prints nothing, now or later."""
    with _announce_lock:
        if sample.task in _announced:
            return
        _announced.add(sample.task)
    if not told_elsewhere:
        print(sample.notice(), file=sys.stderr, flush=True)
