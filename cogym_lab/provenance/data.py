"""Checksums of the data files a session's task read, hashed once per process.

Each file the task declares (``data_files``, :class:`~cogym_lab.datasets.DataItem`) is hashed
where the task read it: ``<data dir>/<task>/...``, or the bundled sample's folder, which stands
for ``<data dir>/<task>/``. A file is hashed again only when its size or modification time
changed, so the sessions of a run (and a run's own record) cost one pass over the data.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from cogym_lab.datasets import DataItem
from cogym_lab.datasets.checksums import file_sha256, folder_sha256

__all__ = ["DataChecksum", "cached_sha256", "data_checksums"]

_cache: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


class DataChecksum(BaseModel):
    """One declared data item as the session found it."""

    #: Where the task declares it, relative to the data directory (``travel_planning/...``).
    path: str
    #: The SHA-256 of the file (of a folder's manifest, see :mod:`cogym_lab.datasets.checksums`)
    #: as read; ``None`` when it is not there.
    sha256: str | None = None
    #: The checksum the task declares for it (``DataItem.sha256``), if any.
    declared: str | None = None
    #: Whether ``sha256`` is the declared one: ``None`` when there is nothing to compare, for a
    #: folder (other items may be placed inside it after it is unpacked) and for the sample.
    matches: bool | None = None


def cached_sha256(path: Path) -> str:
    """The SHA-256 of the file at ``path``, from the cache while its size and modification time
    are the same."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _cache.get(key)
    if known is not None:
        return known
    checksum = file_sha256(path)  # outside the lock: sessions in other threads hash meanwhile
    with _lock:
        _cache[key] = checksum
    return checksum


def data_checksums(items: Sequence[DataItem], folder: Path, *,
                   sample: bool = False) -> list[DataChecksum]:
    """The checksum of each of ``items`` in ``folder``, the task's folder the session read
    (``<data dir>/<task>/`` or its sample's folder). ``sample``: the folder is the bundled
    sample, whose files are not the declared ones."""
    found = []
    for item in items:
        task_prefix = f"{item.task}/"
        relative = item.name.removeprefix(task_prefix)
        location = folder / relative
        checksum: str | None = None
        if item.is_dir and location.is_dir():
            checksum = folder_sha256(location, cached_sha256)
        elif not item.is_dir and location.is_file():
            checksum = cached_sha256(location)
        compare = checksum is not None and item.sha256 is not None and not item.is_dir \
            and not sample
        found.append(DataChecksum(path=item.path, sha256=checksum, declared=item.sha256,
                                  matches=(checksum == item.sha256) if compare else None))
    return found
