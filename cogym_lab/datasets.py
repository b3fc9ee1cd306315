"""Where the task data lives, what each task needs, and how to get it.

Every task reads its files from one *data directory*, chosen by :func:`data_dir`:

1. an explicit argument (``--data-dir`` on the command line),
2. else the ``COGYM_DATA`` environment variable,
3. else the user cache directory: ``$XDG_CACHE_HOME/cogym_lab/datasets``, or
   ``~/.cache/cogym_lab/datasets`` when ``XDG_CACHE_HOME`` is not set.

Inside it each task has a folder (``travel_planning/``, ``related_work/``, ``tabular_analysis/``)
laid out as :data:`MANIFEST` lists. :func:`status` says what is present, :func:`require` raises
:class:`DataMissing` (naming the directory, the missing files and how to get them) and
:func:`download` fetches what has a public download address. Some items have none (they must be
placed by hand); those are marked ``manual`` and point at their project page.

Only the standard library is used: downloads go through :mod:`urllib` and print a one-line
progress report on stderr.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "DATA_ENV_VAR", "MANIFEST", "TASKS", "DataItem", "DataMissing", "DatasetError",
    "DownloadError", "ItemStatus", "data_dir", "data_dir_origin", "download", "format_size",
    "items_for", "require", "status",
]

DATA_ENV_VAR = "COGYM_DATA"


class DatasetError(RuntimeError):
    """Base class of the data-directory errors."""


class DataMissing(DatasetError):
    """Files a task needs are not in the data directory."""


class DownloadError(DataMissing):
    """A download was attempted and failed (network unreachable, HTTP error, bad archive)."""


@dataclass(frozen=True)
class DataItem:
    """One file or folder a task needs.

    ``path`` is relative to the data directory, with ``/`` separators; a trailing ``/`` marks a
    folder. ``url`` is a direct download address, or None when the item must be obtained by hand
    from ``homepage``. When ``archive_member`` is set, ``url`` is a zip archive and the folder
    ``archive_member`` inside it (below the archive's top-level folder) becomes ``path``.
    """

    task: str
    path: str
    description: str
    source: str
    homepage: str
    license: str
    url: str | None = None
    archive_member: str | None = None

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


# --- the manifest ----------------------------------------------------------------------------

_COGYM = "the Collaborative Gym release"
_COGYM_HOME = "https://github.com/SALT-NLP/collaborative-gym"
_COGYM_RAW = "https://raw.githubusercontent.com/SALT-NLP/collaborative-gym/main/datasets"

_TP = "the TravelPlanner repository"
_TP_HOME = "https://github.com/OSU-NLP-Group/TravelPlanner"
# Pinned commits of the TravelPlanner repository that hold the sandbox database files.
_TP_RAW = ("https://raw.githubusercontent.com/OSU-NLP-Group/TravelPlanner/"
           "958f30d7e7629d18f33d79183dedf9b2830ff88c/database")
_TP_RAW_TRAIN = ("https://raw.githubusercontent.com/OSU-NLP-Group/TravelPlanner/"
                 "75767a7c21703f2d4b53f9dd373733b9219f8b0a/database")

_DB = "DiscoveryBench"
_DB_HOME = "https://github.com/allenai/discoverybench"
_DB_COMMIT_TEST = "6955693ea863c78d881f136aef5a3133fb46d8a6"
_DB_COMMIT_KEY = "77af7d6514bd45da4b2d11fe014a0e57b4803d5a"


def _tp_db(path: str, description: str, *, train: bool = False) -> DataItem:
    base = _TP_RAW_TRAIN if train else _TP_RAW
    return DataItem("travel_planning", f"travel_planning/database/{path}", description, _TP,
                    _TP_HOME, "MIT", f"{base}/{path}")


MANIFEST: dict[str, tuple[DataItem, ...]] = {
    "travel_planning": (
        DataItem("travel_planning", "travel_planning/validation_with_hidden_profile.csv",
                 "102 TravelPlanner validation queries with hidden preferences and reference "
                 "information (the flights come from here)", _COGYM, _COGYM_HOME, "MIT",
                 f"{_COGYM_RAW}/TravelPlanner/validation_with_hidden_profile.csv"),
        _tp_db("accommodations/clean_accommodations_2022.csv", "accommodations"),
        _tp_db("attractions/attractions.csv", "attractions"),
        _tp_db("restaurants/clean_restaurant_2022.csv", "restaurants"),
        _tp_db("googleDistanceMatrix/distance.csv", "driving distances between cities"),
        _tp_db("background/citySet.txt", "the cities of the sandbox"),
        _tp_db("background/citySet_with_states.txt", "city <TAB> state"),
        _tp_db("background/stateSet.txt", "the states of the sandbox"),
        _tp_db("train_ref_info.jsonl", "reference information of the training queries "
               "(more flights)", train=True),
    ),
    "related_work": (
        DataItem("related_work", "related_work/test.json",
                 "100 related-work writing tasks with hidden requirements", _COGYM, _COGYM_HOME,
                 "MIT"),
        DataItem("related_work", "related_work/rubric.txt",
                 "the 1-5 rubric used to grade a related-work section", _COGYM, _COGYM_HOME,
                 "MIT"),
        DataItem("related_work", "related_work/papers.jsonl.gz",
                 "computer-science papers for the offline paper search, built from arXiv "
                 "metadata (CC0) and the ACL Anthology (CC BY 4.0); there is no single "
                 "download, build it from their public dumps",
                 "arXiv metadata / ACL Anthology",
                 "https://info.arxiv.org/help/bulk_data.html and https://aclanthology.org/",
                 "CC0 / CC BY 4.0"),
        # Read after papers.jsonl.gz: its records replace those with the same id and remove the
        # ids they supersede (cogym_lab.envs.related_work.corpus).
        DataItem("related_work", "related_work/papers-2020-2024-supplement.jsonl.gz",
                 "2020-2024 computer-science papers and corrected records that extend and "
                 "supersede papers.jsonl.gz, built from public arXiv metadata (CC0); there is "
                 "no single download, build it from their public dumps",
                 "arXiv metadata", "https://info.arxiv.org/help/bulk_data.html", "CC0"),
    ),
    "tabular_analysis": (
        DataItem("tabular_analysis", "tabular_analysis/discoverybench/real/test/",
                 "DiscoveryBench-Real test split: one folder a domain (tables + metadata)",
                 _DB, _DB_HOME, "ODC-By",
                 f"https://github.com/allenai/discoverybench/archive/{_DB_COMMIT_TEST}.zip",
                 archive_member="discoverybench/real/test/"),
        DataItem("tabular_analysis",
                 "tabular_analysis/discoverybench/real/test/answer_key_real.csv",
                 "gold hypotheses for grading", _DB, _DB_HOME, "ODC-By",
                 "https://raw.githubusercontent.com/allenai/discoverybench/"
                 f"{_DB_COMMIT_KEY}/eval/answer_key_real.csv"),
    ),
}

TASKS: tuple[str, ...] = tuple(MANIFEST)


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


def data_dir_origin(explicit: str | Path | None = None) -> str:
    """Which rule :func:`data_dir` follows: ``"argument"``, ``"COGYM_DATA"`` or ``"cache"``."""
    if explicit is not None and str(explicit).strip():
        return "argument"
    if os.environ.get(DATA_ENV_VAR, "").strip():
        return DATA_ENV_VAR
    return "cache"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data directory: ``explicit``, else ``$COGYM_DATA``, else the user cache directory.

    The path is returned absolute; it need not exist."""
    origin = data_dir_origin(explicit)
    if origin == "argument":
        path = Path(explicit).expanduser()  # type: ignore[arg-type]
    elif origin == DATA_ENV_VAR:
        path = Path(os.environ[DATA_ENV_VAR].strip()).expanduser()
    else:
        path = _cache_dir()
    return path.resolve()


_resolve_dir = data_dir  # the functions below take a parameter called ``data_dir``


# --- status and require ----------------------------------------------------------------------

def items_for(task: str | None = None) -> list[DataItem]:
    """The manifest items of one task, or of every task."""
    if task is None:
        return [item for items in MANIFEST.values() for item in items]
    if task not in MANIFEST:
        raise KeyError(f"unknown task {task!r}; known tasks: {', '.join(TASKS)}")
    return list(MANIFEST[task])


def disk_size(path: Path) -> int:
    """Bytes a file or a whole folder takes on disk."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                pass
    return total


def _present(item: DataItem, path: Path) -> bool:
    if item.is_dir:
        return path.is_dir() and any(path.iterdir())
    return path.is_file()


def _status_of(item: DataItem, root: Path) -> ItemStatus:
    path = root / PurePosixPath(item.path)
    present = _present(item, path)
    return ItemStatus(item, path, present, disk_size(path) if present else 0)


def status(data_dir: str | Path | None = None, task: str | None = None, *,
           items: Iterable[DataItem] | None = None) -> list[ItemStatus]:
    """Present/missing and size of every manifest item (of ``task`` when given)."""
    root = _resolve_dir(data_dir)
    chosen = list(items) if items is not None else items_for(task)
    return [_status_of(item, root) for item in chosen]


def _missing_message(task: str, root: Path, missing: Sequence[ItemStatus],
                     intro: str | None = None) -> str:
    lines = [intro or f"The {task} data is incomplete in the data directory {root}",
             "Missing:"]
    lines += [f"  - {s.item.path}  ({s.item.how_to_get()})" for s in missing]
    downloadable = [s for s in missing if not s.item.manual]
    if downloadable:
        lines.append(f"Run `cogym-lab data --task {task} --download` to fetch what can be "
                     "downloaded, or place the files by hand.")
    else:
        lines.append("Place the files by hand (see the sources above).")
    lines.append(f"Choose another data directory with --data-dir or the {DATA_ENV_VAR} "
                 "environment variable.")
    return "\n".join(lines)


def require(task: str, data_dir: str | Path | None = None) -> Path:
    """The task's folder in the data directory; :class:`DataMissing` if anything is missing."""
    root = _resolve_dir(data_dir)
    missing = [s for s in status(root, task) if not s.present]
    if missing:
        raise DataMissing(_missing_message(task, root, missing))
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


def download(task: str, data_dir: str | Path | None = None, progress: bool = True, *,
             items: Iterable[DataItem] | None = None, timeout: float = 30.0) -> list[Path]:
    """Fetch the task's missing items that have a download address; return what was fetched.

    Raises :class:`DownloadError` when a download fails (no network, HTTP error) and
    :class:`DataMissing` when, afterwards, manual items are still missing. ``items`` replaces
    the manifest's items (used by tests)."""
    root = _resolve_dir(data_dir)
    chosen = list(items) if items is not None else items_for(task)
    fetched: list[Path] = []
    failures: list[str] = []
    for state in status(root, items=chosen):
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
    still_missing = [s for s in status(root, items=chosen) if not s.present]
    if still_missing:
        raise DataMissing(_missing_message(
            task, root, still_missing,
            intro=f"Some {task} files cannot be downloaded automatically; the data directory "
                  f"{root} still lacks them"))
    return fetched
