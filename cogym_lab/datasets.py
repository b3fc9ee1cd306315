"""Where the task data lives, and how to check and fetch the files a task declares it needs.

Every task reads its files from one *data directory*, chosen by :func:`data_dir`:

1. an explicit argument (``--data-dir`` on the command line),
2. else the folder a session is being built for (:func:`reading_from`: a session spec's
   ``data_dir``, such as the one ``%cogym config data_dir=...`` sends from a notebook),
3. else the ``COGYM_DATA`` environment variable,
4. else the user cache directory: ``$XDG_CACHE_HOME/cogym_lab/datasets``, or
   ``~/.cache/cogym_lab/datasets`` when ``XDG_CACHE_HOME`` is not set.

Inside it each task has a folder of its own (named after the task).
A task declares the files it needs there as :class:`DataItem` records, each with its source
(``data_files`` on the task's class; :mod:`cogym_lab.envs.task_data` asks the registered tasks).
Given a task's items, :func:`status` says what is present, :func:`require` raises
:class:`DataMissing` (naming the directory, the missing files and how to get them) and
:func:`download` fetches what has a public download address. Some items have none (they must be
placed by hand); those are marked ``manual`` and point at their project page. This module names
no task: tasks import it, not the other way round.

Only the standard library is used: downloads go through :mod:`urllib` and print a one-line
progress report on stderr.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cogym_lab.errors import CogymError

__all__ = [
    "CHOOSE_ANOTHER_DIR",
    "DATA_ENV_VAR",
    "DataItem",
    "DataMissing",
    "DatasetError",
    "DownloadError",
    "ItemStatus",
    "cache_root",
    "data_dir",
    "data_dir_origin",
    "disk_size",
    "download",
    "download_command",
    "format_size",
    "list_command",
    "missing_message",
    "reading_from",
    "require",
    "status",
    "task_of",
]

DATA_ENV_VAR = "COGYM_DATA"
#: How a missing-data message ends when it is read at a command line: the ways to choose
#: another data directory there. Messages for a notebook end differently (``missing_message``).
CHOOSE_ANOTHER_DIR = (f"Choose another data directory with --data-dir or the {DATA_ENV_VAR} "
                      "environment variable.")


class DatasetError(CogymError, RuntimeError):
    """Base class of the data-directory errors."""


class DataMissing(DatasetError):
    """Files a task needs are not in the data directory."""


class DownloadError(DataMissing):
    """A download was attempted and failed (network unreachable, HTTP error, bad archive)."""


@dataclass(frozen=True)
class DataItem:
    """One file or folder a task needs, with where to get it.

    ``task`` names the task that declares it, whose folder holds it. ``path`` is relative to the
    data directory, with ``/`` separators; a trailing ``/`` marks a folder. ``url`` is a direct
    download address, or None when the item must be obtained by hand from ``homepage``. When
    ``archive_member`` is set, ``url`` is a zip archive and the folder ``archive_member`` inside
    it (below the archive's top-level folder) becomes ``path``. ``build`` is the command that
    makes the item from public sources, for an item with no single download (the Related Work
    corpus, built from metadata dumps).
    """

    task: str
    path: str
    description: str
    source: str
    homepage: str
    license: str
    url: str | None = None
    archive_member: str | None = None
    build: str | None = None

    @property
    def is_dir(self) -> bool:
        return self.path.endswith("/")

    @property
    def manual(self) -> bool:
        return self.url is None

    @property
    def name(self) -> str:
        return self.path.rstrip("/")

    def how_to_get(self) -> str:
        if self.build:
            return f"build it with `{self.build}` from {self.source} ({self.homepage})"
        if self.manual:
            return (f"manual: get it from {self.source} ({self.homepage}) and place it at "
                    f"<data dir>/{self.path}")
        if self.archive_member:
            return (f"run `cogym-lab data --task {self.task} --download`, or fetch {self.url} "
                    f"by hand and unpack its folder {self.archive_member} there")
        return f"run `cogym-lab data --task {self.task} --download`, or fetch {self.url} by hand"


@dataclass(frozen=True)
class ItemStatus:
    item: DataItem
    path: Path  # absolute location inside the data directory
    present: bool
    size: int  # bytes; for a folder the total of its files; 0 when missing

    @property
    def task(self) -> str:
        return self.item.task


# --- the data directory ----------------------------------------------------------------------

def cache_root() -> Path:
    """cogym_lab's user cache folder: ``$XDG_CACHE_HOME/cogym_lab``, else
    ``~/.cache/cogym_lab``. The data directory defaults to its ``datasets/``; indexes live
    beside it."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "cogym_lab"


def _cache_dir() -> Path:
    return cache_root() / "datasets"


#: The data directory of the session being built here, if its spec names one (see
#: :func:`reading_from`). A context variable, so that two sessions built by one server (one
#: event loop, several requests) never see each other's folder.
_SESSION_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "cogym_session_data_dir", default=None)


@contextlib.contextmanager
def reading_from(folder: str | Path | None) -> Iterator[None]:
    """Within the block, :func:`data_dir` without an argument is ``folder`` (unless it is
    ``None``): for code that builds one session's env, whose loaders look the data directory up
    themselves (a task's list of instances)."""
    if folder is None or not str(folder).strip():
        yield
        return
    token = _SESSION_DIR.set(Path(folder).expanduser())
    try:
        yield
    finally:
        _SESSION_DIR.reset(token)


def data_dir_origin(explicit: str | Path | None = None) -> str:
    """Which rule :func:`data_dir` follows: ``"argument"``, ``"session"`` (inside
    :func:`reading_from`), ``"COGYM_DATA"`` or ``"cache"``."""
    if explicit is not None and str(explicit).strip():
        return "argument"
    if _SESSION_DIR.get() is not None:
        return "session"
    if os.environ.get(DATA_ENV_VAR, "").strip():
        return DATA_ENV_VAR
    return "cache"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data directory: ``explicit``, else the session's (:func:`reading_from`), else
    ``$COGYM_DATA``, else the user cache directory.

    The path is returned absolute; it need not exist."""
    origin = data_dir_origin(explicit)
    session_dir = _SESSION_DIR.get()
    if origin == "argument":
        path = Path(explicit).expanduser()  # type: ignore[arg-type]
    elif origin == "session" and session_dir is not None:
        path = session_dir
    elif origin == DATA_ENV_VAR:
        path = Path(os.environ[DATA_ENV_VAR].strip()).expanduser()
    else:
        path = _cache_dir()
    return path.resolve()


_resolve_dir = data_dir  # the functions below take a parameter called ``data_dir``


# --- status and require ----------------------------------------------------------------------

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


def _as_typed(command: str, where: str) -> str:
    """A ``cogym-lab data ...`` command as typed ``where`` the person is (a notebook's magic)."""
    prefix = "cogym-lab data "
    if where == "notebook" and command.startswith(prefix):
        return "%cogym data " + command[len(prefix):]
    return command


def download_command(task: str, root: Path | None = None, *,
                     where: str = "command line") -> str:
    """The one command that fetches ``task``'s downloadable data (into ``root`` when it is not
    the default data directory), as typed ``where`` the person is."""
    folder = f" --data-dir {root}" if root is not None and root != _default_root() else ""
    if where == "notebook":
        return f"%cogym data download {task}{folder}"
    return f"cogym-lab data download {task}{folder}"


def list_command(task: str, root: Path | None = None, *, where: str = "command line") -> str:
    """The command that lists ``task``'s data item by item, with each one's source."""
    folder = f" --data-dir {root}" if root is not None and root != _default_root() else ""
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
    for command in dict.fromkeys(state.item.build for state in built if state.item.build):
        items = [state for state in built if state.item.build == command]
        source = max((state.item.source for state in items), key=len)  # the fullest name
        sentences.append(f"Build {_what(items, named_up_to=1)} from {source} with "
                         f"`{_as_typed(command, where)}`.")
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


# --- download --------------------------------------------------------------------------------

def format_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover


class _Progress:
    """``name  3.2 MB / 10.0 MB (32%)`` on one stderr line, refreshed at most 10 times a second."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self.done = 0
        self._last = 0.0

    def update(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if self.enabled and now - self._last >= 0.1:
            self._last = now
            self._write()

    def _write(self, end: str = "") -> None:
        text = f"\r  {self.label}  {format_size(self.done)}"
        if self.total:
            text += f" / {format_size(self.total)} ({100 * self.done // self.total}%)"
        sys.stderr.write(text + end)
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            self._write("\n")


def _fetch(url: str, destination: Path, label: str, progress: bool, timeout: float) -> None:
    """Download ``url`` to ``destination`` through a temporary file next to it."""
    if not url.startswith(("http://", "https://")):
        raise DownloadError(f"refusing to download {url!r}: only http(s) addresses are fetched")
    destination.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".part",
                                         dir=destination.parent)
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "cogym-lab data"})
        with os.fdopen(handle, "wb") as out, urllib.request.urlopen(request,
                                                                   timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            meter = _Progress(label, int(length) if length and length.isdigit() else None,
                              progress)
            while chunk := response.read(1 << 16):
                out.write(chunk)
                meter.update(len(chunk))
            meter.finish()
        os.replace(temporary, destination)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _extract_folder(archive: Path, member: str, target: Path) -> int:
    """Copy the folder ``member`` (below the archive's top folder) out of a zip into ``target``."""
    prefix = member.strip("/") + "/"
    count = 0
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            parts = PurePosixPath(info.filename).parts
            inner = "/".join(parts[1:])  # drop "<repo>-<ref>/"
            if info.is_dir() or not inner.startswith(prefix):
                continue
            relative = PurePosixPath(inner[len(prefix):])
            if ".." in relative.parts or relative.is_absolute():
                continue
            out = target / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, open(out, "wb") as sink:
                shutil.copyfileobj(source, sink)
            count += 1
    if not count:
        raise DownloadError(f"the archive has no folder {member!r}")
    return count


def _download_item(item: DataItem, root: Path, progress: bool, timeout: float) -> None:
    assert item.url is not None
    destination = root / PurePosixPath(item.path)
    if item.archive_member is None:
        _fetch(item.url, destination, item.name, progress, timeout)
        return
    with tempfile.TemporaryDirectory(prefix="cogym-data-") as scratch:
        archive = Path(scratch) / "archive.zip"
        _fetch(item.url, archive, item.name, progress, timeout)
        staging = Path(scratch) / "folder"
        try:
            _extract_folder(archive, item.archive_member, staging)
        except zipfile.BadZipFile as error:
            raise DownloadError(f"{item.url} is not a zip archive: {error}") from None
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, destination, dirs_exist_ok=True)


def download(items: Sequence[DataItem], data_dir: str | Path | None = None,
             progress: bool = True, *, timeout: float = 30.0) -> list[Path]:
    """Fetch those of one task's ``items`` that are missing and have a download address; return
    what was fetched.

    Raises :class:`DownloadError` when a download fails (no network, HTTP error) and
    :class:`DataMissing` when, afterwards, manual items are still missing."""
    task = task_of(items)
    root = _resolve_dir(data_dir)
    fetched: list[Path] = []
    failures: list[str] = []
    for state in status(items, root):
        if state.present or state.item.manual:
            continue
        try:
            _download_item(state.item, root, progress, timeout)
        except DownloadError as error:
            failures.append(f"  - {state.item.path}: {error}")
        except urllib.error.HTTPError as error:
            failures.append(f"  - {state.item.path}: {state.item.url} answered HTTP "
                            f"{error.code} {error.reason}")
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            failures.append(f"  - {state.item.path}: could not fetch {state.item.url}: {reason}")
        else:
            fetched.append(state.path)
    if failures:
        raise DownloadError(
            f"Downloading the {task} data into {root} failed (is the network reachable?):\n"
            + "\n".join(failures)
            + "\nPlace the files by hand at the paths above, or retry with "
              "`cogym-lab data --download` when online.")
    still_missing = [s for s in status(items, root) if not s.present]
    if still_missing:
        raise DataMissing(missing_message(
            task, root, still_missing,
            intro=f"Some {task} files cannot be downloaded automatically: {root} still "
                  "lacks them."))
    return fetched
