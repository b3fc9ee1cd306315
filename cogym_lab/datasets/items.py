"""What a task declares about its data (:class:`DataItem`), what was found of it
(:class:`ItemStatus`), and the errors of the data directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogym_lab.errors import CogymError

__all__ = ["DataItem", "DataMissing", "DatasetError", "DownloadError", "ItemStatus"]


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

    ``sha256`` is the checksum a download must match before it is moved into place (64 hex
    digits; None when the source is not pinned to fixed bytes). For a file it is the file's; for
    a folder unpacked from an archive, the checksum of the folder's manifest, taken right after
    unpacking (:mod:`cogym_lab.datasets.checksums`). ``size`` is the file's size in bytes, for
    the progress bar when the server does not say it.
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
    sha256: str | None = None
    size: int | None = None

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
            return (f"run `cogym-lab data download {self.task}`, or fetch {self.url} "
                    f"by hand and unpack its folder {self.archive_member} there")
        return f"run `cogym-lab data download {self.task}`, or fetch {self.url} by hand"


@dataclass(frozen=True)
class ItemStatus:
    item: DataItem
    path: Path  # absolute location inside the data directory
    present: bool
    size: int  # bytes; for a folder the total of its files; 0 when missing

    @property
    def task(self) -> str:
        return self.item.task


