"""Reading a public metadata dump: opening it (plain or gzip-compressed), cleaning the text taken
from it, and counting what was kept and what was left out and why.

Shared by the arXiv and ACL Anthology readers (:mod:`~cogym_lab.envs.related_work.arxiv_dump`,
:mod:`~cogym_lab.envs.related_work.acl_dump`).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tqdm import tqdm

from cogym_lab.errors import CogymError

__all__ = ["READ_ERRORS", "DumpCounts", "DumpError", "DumpProgress", "OpenDump", "clean_text",
           "open_dump", "read_failure"]


class DumpError(CogymError, OSError):
    """A dump cannot be read: missing, not a file, unreadable, or cut short."""


#: What reading a damaged file raises part way (a cut-short or corrupt gzip stream).
READ_ERRORS: tuple[type[Exception], ...] = (EOFError, OSError, gzip.BadGzipFile, zlib.error)

# Control characters (NUL included) and lone surrogates: never meaningful in a title or abstract,
# and a surrogate cannot even be written as UTF-8.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: object) -> str:
    """``value`` as one line of text: control characters dropped, lone surrogates replaced by
    U+FFFD, and every run of whitespace (line and paragraph separators too) one space."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    text = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", text))
    return " ".join(text.split())


@dataclass
class DumpCounts:
    """What reading one dump gave: records read, papers kept, and the others by reason."""

    source: str  # "arXiv", "ACL Anthology"
    dump: str  # the dump's file name
    read: int = 0
    kept: int = 0
    left_out: Counter[str] = field(default_factory=Counter)

    def leave_out(self, reason: str) -> None:
        self.left_out[reason] += 1

    def summary(self) -> str:
        """``arXiv (snapshot.json): 12 papers kept of 30 records (18 not computer science)``."""
        text = (f"{self.source} ({self.dump}): {how_many(self.kept, 'paper')} kept of "
                f"{how_many(self.read, 'record')}")
        if self.left_out:
            reasons = ", ".join(f"{n:,} {reason}" for reason, n in self.left_out.most_common())
            text += f" ({reasons})"
        return text


def how_many(count: int, noun: str) -> str:
    """``1 paper``, ``12,000 papers``: a count with its noun, for the build's summary."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


class OpenDump:
    """One dump opened for reading as bytes, gzip or not (told by its first bytes), with how far
    through the file on disk reading has got (for a progress bar over the file's size)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.raw: BinaryIO = open(path, "rb")  # noqa: SIM115 (closed by close())
            gzipped = self.raw.read(2) == b"\x1f\x8b"
            self.raw.seek(0)
            self.size = path.stat().st_size
        except OSError as error:
            raise DumpError(f"Cannot read the dump {path}: {error.strerror or error}.") from None
        self.stream: io.BufferedIOBase | BinaryIO = (
            gzip.GzipFile(fileobj=self.raw, mode="rb") if gzipped else self.raw)

    def position(self) -> int:
        """Bytes of the file on disk read so far."""
        return self.raw.tell()

    def close(self) -> None:
        self.stream.close()
        self.raw.close()

    def __enter__(self) -> OpenDump:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def open_dump(path: str | Path) -> OpenDump:
    """The dump at ``path``, opened; :class:`DumpError` (saying why) when it is missing, a folder
    or unreadable."""
    path = Path(path).expanduser()
    if not path.exists():
        raise DumpError(f"The dump {path} does not exist.")
    if not path.is_file():
        raise DumpError(f"The dump {path} is not a file.")
    return OpenDump(path)


def read_failure(path: Path, error: Exception) -> DumpError:
    """A :class:`DumpError` for a dump that failed part way (a cut-short or corrupt gzip)."""
    reason = ("it ends early (an incomplete download?)" if isinstance(error, EOFError)
              else str(error))
    return DumpError(f"Cannot read the dump {path} to its end: {reason}.")


class DumpProgress:
    """A tqdm bar over the dump's size on disk, with the papers kept so far; refreshed every
    ``every`` records (asking the file where it is costs a system call)."""

    def __init__(self, dump: OpenDump, counts: DumpCounts, enabled: bool, every: int = 2000):
        self.dump, self.counts, self.every = dump, counts, every
        self.bar = tqdm(total=dump.size, desc=counts.source, unit="B", unit_scale=True,
                        disable=not enabled, leave=True, dynamic_ncols=True)
        self._shown = 0

    def tick(self) -> None:
        """One more record read."""
        if self.counts.read % self.every == 0:
            self.refresh()

    def refresh(self) -> None:
        position = self.dump.position()
        self.bar.update(position - self._shown)
        self._shown = position
        self.bar.set_postfix_str(f"{self.counts.kept:,} kept of {self.counts.read:,}",
                                 refresh=False)

    def close(self) -> None:
        self.refresh()
        self.bar.close()
