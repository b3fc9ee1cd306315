"""A full disk during a batch run: named in one line, and ``run.json`` still says how the run ended.

When the disk that holds a run fills up, every session after that would fail the same way, so
the batch stops (:class:`DiskFull`): the sessions under way stay ``pending`` and ``run.json``
says ``interrupted``; the same command, once there is space again, resumes them.

``run.json`` is written whole (a temporary file, then a rename), which needs as much free space
as the file takes. So each invocation first sets a little space aside (:class:`DiskReserve`, a
hidden file in the run's folder) and gives it back just before ``run.json`` is written for the
last time: a full disk can no longer leave ``run.json`` saying ``running``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from cogym_lab.errors import CogymError

#: The errors of a disk (or a user's quota) with no room left.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
RESERVE_FILE = ".disk-reserve"
#: Space set aside for the last ``run.json``: a base, and this much for each session it lists
#: (a session's entry is well under 2 KiB; the temporary copy and the old file share the rest).
RESERVE_BASE = 64 * 1024
RESERVE_PER_SESSION = 4 * 1024

T = TypeVar("T")


class DiskFull(CogymError, OSError):
    """The disk that holds the run is full: the batch stopped, its sessions under way are still
    pending, and ``run.json`` says ``interrupted`` (when it could be written at all)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def disk_full_cause(error: BaseException | None) -> OSError | None:
    """The "no space left" error behind ``error`` (itself, or what caused it), if there is one."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return error
        error = error.__cause__ or error.__context__
    return None


def disk_full(folder: Path, cause: OSError | None, *, resume: str = "") -> DiskFull:
    """The one-line error for a full disk under ``folder``: what could not be written, the
    space left there, and what to do."""
    what = cause.filename if cause is not None and cause.filename else "the run's files"
    return DiskFull(f"the disk is full: {what} could not be written ({free_space(folder)} free "
                    f"in {folder}). Free some space and run the same command again"
                    + (f": {resume}" if resume else "."))


def free_space(folder: Path) -> str:
    """The space left on the disk that holds ``folder`` (or its nearest existing parent)."""
    place = folder
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        free = float(shutil.disk_usage(place).free)
    except OSError:
        return "unknown space"
    if free < 1024:
        return f"{free:.0f} bytes"
    for unit in ("KiB", "MiB"):
        free /= 1024
        if free < 1024:
            return f"{free:.1f} {unit}"
    return f"{free / 1024:.1f} GiB"


class DiskReserve:
    """Space set aside in a run's folder until :meth:`release` gives it back."""

    def __init__(self, folder: Path, sessions: int) -> None:
        self.path = folder / RESERVE_FILE
        self.size = RESERVE_BASE + RESERVE_PER_SESSION * max(0, sessions)

    def take(self) -> None:
        """Write the reserve. Raises the ``OSError`` of a disk already too full for it (the
        reserve is then removed again)."""
        try:
            with open(self.path, "wb") as file:
                chunk = b"\0" * 65536
                left = self.size
                while left > 0:  # real bytes: a sparse file would hold no space
                    left -= file.write(chunk[:min(left, len(chunk))])
                file.flush()
                os.fsync(file.fileno())
        except OSError:
            self.release()
            raise

    def release(self) -> None:
        """Give the space back (nothing happens when there is none set aside)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def write_or_release(write: Callable[[], T], reserve: DiskReserve) -> T:
    """``write()``; when the disk is full, once more after the reserve is given back."""
    try:
        return write()
    except OSError as error:
        if disk_full_cause(error) is None:
            raise
        reserve.release()
        return write()


__all__ = ["DISK_FULL_ERRNOS", "RESERVE_FILE", "DiskFull", "DiskReserve", "disk_full",
           "disk_full_cause", "free_space", "write_or_release"]
