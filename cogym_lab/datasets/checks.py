"""Whether a task's files are in the data directory (:func:`status`, :func:`require`), and the
message that tells a person how to get what is missing."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from cogym_lab.datasets.items import DataItem, DataMissing, ItemStatus
from cogym_lab.datasets.location import CHOOSE_ANOTHER_DIR, _cache_dir
from cogym_lab.datasets.location import data_dir as _resolve_dir

__all__ = ["ASKED_FROM_ENV_VAR", "as_typed", "asked_from", "disk_size", "download_command",
           "list_command", "missing_message", "require", "status", "task_of"]


#: Set to ``notebook`` by ``%cogym data`` for the ``cogym-lab data`` process it starts, so the
#: commands that process names are the ones typed in a cell (``%cogym data download TASK``).
ASKED_FROM_ENV_VAR = "COGYM_ASKED_FROM"


def asked_from() -> str:
    """Where the person typed the running command: ``"notebook"`` or ``"command line"``."""
    return "notebook" if os.environ.get(ASKED_FROM_ENV_VAR) == "notebook" else "command line"


def task_of(items: Iterable[DataItem]) -> str:
    """The one task that declares ``items``: its folder and the name its messages use.
    ValueError when there are no items or they belong to several tasks."""
    tasks = {item.task for item in items}
    if len(tasks) != 1:
        raise ValueError(f"expected the data items of one task, got those of {len(tasks)} "
                         f"({', '.join(sorted(tasks)) or 'none'})")
    return tasks.pop()


def disk_size(path: Path) -> int:
    """Bytes a file or a whole folder takes on disk."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # a file removed while we count
                total += (Path(root) / name).stat().st_size
    return total


def _present(item: DataItem, path: Path) -> bool:
    if item.is_dir:
        return path.is_dir() and any(path.iterdir())
    return path.is_file()


def _status_of(item: DataItem, root: Path) -> ItemStatus:
    path = root / PurePosixPath(item.path)
    present = _present(item, path)
    return ItemStatus(item, path, present, disk_size(path) if present else 0)


def status(items: Iterable[DataItem], data_dir: str | Path | None = None) -> list[ItemStatus]:
    """Present/missing and size of each of ``items`` in the data directory."""
    root = _resolve_dir(data_dir)
    return [_status_of(item, root) for item in items]


def _default_root() -> Path:
    return _cache_dir().resolve()


def _what(missing: Sequence[ItemStatus], named_up_to: int = 2) -> str:
    """The missing items in a few words: named when there are ``named_up_to`` or fewer, else
    counted (``the 9 missing files``); ``cogym-lab data`` lists them one by one."""
    if len(missing) <= named_up_to:
        return " and ".join(state.item.path for state in missing)
    folders = sum(1 for state in missing if state.item.is_dir)
    kind = "folders" if folders == len(missing) else "files" if not folders else "items"
    return f"the {len(missing)} missing {kind}"


def _sources(missing: Sequence[ItemStatus]) -> str:
    """Where the hand-placed items come from, each source named once."""
    names: list[str] = []
    for state in missing:
        if state.item.source not in names:
            names.append(state.item.source)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def as_typed(command: str, where: str) -> str:
    """A ``cogym-lab data ...`` command as typed ``where`` the person is (a notebook's magic)."""
    prefix = "cogym-lab data "
    if where == "notebook" and command.startswith(prefix):
        return "%cogym data " + command[len(prefix):]
    return command


def _folder_option(root: Path | None) -> str:
    """`` --data-dir ROOT`` (quoted for a shell when it needs it), or nothing for the default."""
    if root is None or root == _default_root():
        return ""
    return f" --data-dir {shlex.quote(str(root))}"


def download_command(task: str, root: Path | None = None, *,
                     where: str = "command line") -> str:
    """The one command that fetches ``task``'s downloadable data (into ``root`` when it is not
    the default data directory), as typed ``where`` the person is."""
    folder = _folder_option(root)
    if where == "notebook":
        return f"%cogym data download {task}{folder}"
    return f"cogym-lab data download {task}{folder}"


def list_command(task: str, root: Path | None = None, *, where: str = "command line") -> str:
    """The command that lists ``task``'s data item by item, with each one's source."""
    folder = _folder_option(root)
    return f"%cogym data {task}{folder}" if where == "notebook" else \
        f"cogym-lab data {task}{folder}"


def missing_message(task: str, root: Path, missing: Sequence[ItemStatus],
                    intro: str | None = None, *, where: str = "command line") -> str:
    """One short paragraph for a person whose ``root`` lacks the ``missing`` items of ``task``:
    the command that fixes it first, then what is missing in a few words (the item-by-item
    list is one command away, named at the end), then how to point at another folder from
    ``where`` they are: ``"command line"`` (options and environment variables) or
    ``"notebook"`` (``%cogym config data_dir=...``, which reaches a session however it runs)."""
    downloadable = [s for s in missing if not s.item.manual]
    built = [s for s in missing if s.item.build]
    manual = [s for s in missing if s.item.manual and not s.item.build]
    sentences = [intro or f"The {task} task needs data that is missing from {root}."]
    if downloadable:
        fetch = f"Run `{download_command(task, root, where=where)}`"
        if where == "notebook":
            fetch += f" in a cell (or `{download_command(task, root)}` in a terminal)"
        else:
            fetch += f" (or `{download_command(task, root, where='notebook')}` in a notebook)"
        if manual:  # the rest of the sentence says what the command cannot do
            sentences.append(f"{fetch} to fetch {_what(downloadable)}; {_what(manual)} must "
                             f"be placed by hand, from {_sources(manual)}.")
        else:
            sentences.append(f"{fetch} to fetch {_what(downloadable)}.")
    elif manual:
        what = _what(manual)
        sentences.append(f"{what[0].upper()}{what[1:]} must be placed by hand, from "
                         f"{_sources(manual)}.")
    # After the download: a build may need what the download fetches, and takes longer.
    for command in dict.fromkeys(state.item.build for state in built if state.item.build):
        items = [state for state in built if state.item.build == command]
        source = max((state.item.source for state in items), key=len)  # the fullest name
        sentences.append(f"Build {_what(items, named_up_to=1)} from {source} with "
                         f"`{as_typed(command, where)}`.")
    sentences.append(f"`{list_command(task, root, where=where)}` lists each missing item with "
                     "its source.")
    if where == "notebook":
        sentences.append(f"If the data is in another folder (on the machine that runs the "
                         f"session), run `%cogym config data_dir=/path/to/that/folder` (the "
                         f"folder that holds {task}/) and start the session again.")
    else:
        sentences.append(CHOOSE_ANOTHER_DIR)
    return " ".join(sentences)


def require(items: Sequence[DataItem], data_dir: str | Path | None = None) -> Path:
    """The folder of the task that declares ``items`` in the data directory;
    :class:`DataMissing` if any of them is missing."""
    task = task_of(items)
    root = _resolve_dir(data_dir)
    missing = [s for s in status(items, root) if not s.present]
    if missing:
        raise DataMissing(missing_message(task, root, missing))
    return root / task


