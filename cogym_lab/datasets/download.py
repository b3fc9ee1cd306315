"""Fetch a task's downloadable files into the data directory: resumable, checked against their
SHA-256, one progress bar a file, and one line a file that failed.

A file is downloaded to ``<destination>.part`` next to where it belongs (an archive to
``<folder>.zip.part``) and moved into place only when it is whole and its checksum (when the
task declares one) matches. An interrupted download leaves its part file, and the next run
continues it (see :mod:`.transfer`); a file whose checksum does not match loses its part file, so
the next run fetches it afresh. Files already present are not fetched again.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cogym_lab.datasets.checks import download_command, missing_message, status, task_of
from cogym_lab.datasets.checksums import file_sha256, folder_sha256, short
from cogym_lab.datasets.items import DataItem, DataMissing, DownloadError
from cogym_lab.datasets.location import data_dir as _resolve_dir
from cogym_lab.datasets.transfer import TransferError, fetch, format_size
from cogym_lab.errors import CogymError

__all__ = ["download", "format_size", "part_file", "verify_present"]


class _ItemFailed(CogymError):
    """One item could not be fetched; the text says why."""


@dataclass(frozen=True)
class _Failure:
    item: DataItem
    reason: str
    kept: int  # bytes left in the part file for the next run; 0 when there is none

    def line(self) -> str:
        """``- <path> from <address>: <reason>``, and what is kept for the next run."""
        text = f"  - {self.item.path} from {self.item.url}: {self.reason}"
        if self.kept:
            text += f"; {format_size(self.kept)} kept, the next run continues from there"
        return text


def part_file(item: DataItem, root: Path) -> Path:
    """Where the download of ``item`` into ``root`` collects its bytes until it is whole."""
    destination = root / PurePosixPath(item.name)
    suffix = ".zip.part" if item.archive_member else ".part"
    return destination.with_name(destination.name + suffix)


def _mismatch(what: str, found: str, expected: str) -> str:
    return (f"{what} SHA-256 is {short(found)}..., not the expected {short(expected)}... (the "
            "source changed or the download was damaged); the partial file was removed")


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
        raise _ItemFailed(f"the archive has no folder {member!r}")
    return count


def _fetch_file(item: DataItem, destination: Path, part: Path, progress: bool,
                timeout: float) -> None:
    assert item.url is not None
    done = fetch(item.url, part, label=item.name, progress=progress, timeout=timeout,
                 size_hint=item.size)
    if item.sha256 and done.sha256 != item.sha256.lower():
        part.unlink(missing_ok=True)
        raise _ItemFailed(_mismatch("its", done.sha256, item.sha256))
    part.replace(destination)


def _fetch_folder(item: DataItem, destination: Path, part: Path, progress: bool,
                  timeout: float) -> None:
    """Fetch the archive, unpack the item's folder beside the destination, check it, move it in.

    The archive itself has no checksum: the host builds it on request, and its bytes may differ
    from one request to the next. The unpacked folder's manifest has one (see :mod:`.checksums`).
    """
    assert item.url is not None and item.archive_member is not None
    fetch(item.url, part, label=item.name, progress=progress, timeout=timeout,
          size_hint=item.size)
    with tempfile.TemporaryDirectory(prefix=".unpacking-", dir=part.parent) as scratch:
        staging = Path(scratch) / "folder"
        try:
            _extract_folder(part, item.archive_member, staging)
        except (zipfile.BadZipFile, _ItemFailed) as error:
            part.unlink(missing_ok=True)
            raise _ItemFailed(f"the download is not the expected zip archive ({error}); the "
                              "partial file was removed") from None
        found = folder_sha256(staging)
        if item.sha256 and found != item.sha256.lower():
            part.unlink(missing_ok=True)
            raise _ItemFailed(_mismatch("the unpacked folder's", found, item.sha256))
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, destination, dirs_exist_ok=True)
    part.unlink(missing_ok=True)


def _download_item(item: DataItem, root: Path, progress: bool, timeout: float) -> None:
    destination = root / PurePosixPath(item.name)
    part = part_file(item, root)
    part.parent.mkdir(parents=True, exist_ok=True)
    try:
        if item.archive_member is None:
            _fetch_file(item, destination, part, progress, timeout)
        else:
            _fetch_folder(item, destination, part, progress, timeout)
    except TransferError as error:
        raise _ItemFailed(str(error)) from None


def _failure_message(task: str, root: Path, failures: Sequence[_Failure], tried: int,
                     where: str) -> str:
    """One line a file that failed, then how to go on; the last words are the retry command."""
    kept = any(failure.kept for failure in failures)
    return "\n".join([
        f"Downloading the {task} data into {root} failed for {len(failures)} of {tried} "
        f"file(s):",
        *(failure.line() for failure in failures),
        "Place those files there by hand, or retry"
        + (" (it continues the partial files)" if kept else "")
        + f": `{download_command(task, root, where=where)}`"])


def download(items: Sequence[DataItem], data_dir: str | Path | None = None,
             progress: bool = True, *, timeout: float = 30.0,
             where: str = "command line") -> list[Path]:
    """Fetch those of one task's ``items`` that are missing and have a download address; return
    what was fetched. ``progress`` draws a bar a file on stderr; ``timeout`` is how long the
    server may stay silent; ``where`` the person typed the command (``"command line"`` or
    ``"notebook"``), for the retry command a failure names.

    Raises :class:`DownloadError` when files failed (no network, HTTP error, checksum mismatch),
    one line each, and :class:`DataMissing` when, afterwards, manual items are still missing."""
    task = task_of(items)
    root = _resolve_dir(data_dir)
    fetched: list[Path] = []
    failures: list[_Failure] = []
    wanted = [state for state in status(items, root)
              if not state.present and not state.item.manual]
    for state in wanted:
        try:
            _download_item(state.item, root, progress, timeout)
        except _ItemFailed as error:
            part = part_file(state.item, root)
            failures.append(_Failure(state.item, str(error),
                                     part.stat().st_size if part.is_file() else 0))
        else:
            fetched.append(state.path)
    if failures:
        raise DownloadError(_failure_message(task, root, failures, len(wanted), where))
    still_missing = [s for s in status(items, root) if not s.present]
    if still_missing:
        raise DataMissing(missing_message(
            task, root, still_missing,
            intro=f"Some {task} files cannot be downloaded automatically: {root} still "
                  "lacks them."))
    return fetched


def verify_present(items: Sequence[DataItem], data_dir: str | Path | None = None
                   ) -> list[tuple[DataItem, str]]:
    """The present files among ``items`` whose SHA-256 is not the declared one, each with the
    checksum found. Folders are not checked (other items may sit inside them); files with no
    declared checksum neither."""
    root = _resolve_dir(data_dir)
    changed = []
    for state in status(items, root):
        item = state.item
        if state.present and item.sha256 and not item.is_dir:
            found = file_sha256(state.path)
            if found != item.sha256.lower():
                changed.append((item, found))
    return changed
