"""Fetch a task's downloadable files into the data directory, with a progress line."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from cogym_lab.datasets.checks import missing_message, status, task_of
from cogym_lab.datasets.items import DataItem, DataMissing, DownloadError
from cogym_lab.datasets.location import data_dir as _resolve_dir

__all__ = ["download", "format_size"]


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
