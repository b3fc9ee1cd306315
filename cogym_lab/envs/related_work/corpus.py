"""Reading the Related Work corpus: its files, in order, with the supersede rule.

The corpus is two files in ``<data dir>/related_work/`` (see :mod:`cogym_lab.datasets`; the
bundled sample has the same two, smaller), read in this order (:data:`CORPUS_FILES`):

1. ``papers.jsonl.gz``: the first release of the corpus;
2. ``papers-2020-2024-supplement.jsonl.gz``: records that add to it and correct it.

Each is one JSON object a line (gzip-compressed or not): ``id, title, abstract, authors, year,
categories, url, source``, ``venue`` for ACL Anthology papers, and, in a later file, an optional
``supersedes`` list of ids.

**The supersede rule.** Records are keyed by ``id``. Reading the files in order, a record
replaces any earlier record with the same ``id``, and removes every id in its ``supersedes`` list
that was read before it. Put another way: a record is part of the corpus unless a record read
*after* it has the same id or lists its id in ``supersedes`` (a record never removes itself).
The papers come out in reading order, each surviving record at its own place: a replacement sits
where it is in the later file, not where the record it replaced was.

:func:`iter_records` is the reader: the paper store, and so the search index, and anything
else that reads papers go through it. It reads the files twice: a quick first pass over the ids
(and ``supersedes`` lists) decides which records survive, and the second pass parses and yields
only those. The first pass's answer is kept for the process, keyed by the files' sizes and
modification times. For reads that need one field only, :func:`project_records` runs a
function over every line during that same first pass and keeps the survivors' results (the
title coverage of ``cogym-lab data`` reads titles this way, with :func:`title_of_line`).

Every record :func:`iter_records` yields has an ``id`` string and ``categories`` as a list
(:func:`~cogym_lab.envs.related_work.papers.normalize_categories`).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from cogym_lab.core.progress import ProgressMeter, counting
from cogym_lab.envs.related_work.data_files import task_dir
from cogym_lab.envs.related_work.papers import Paper, normalize_categories

__all__ = [
    "BASE_FILE", "CORPUS_FILES", "SUPPLEMENT_FILE", "CorpusFiles", "as_files", "corpus_files",
    "corpus_fingerprint", "count_papers", "iter_papers", "iter_records", "project_records",
    "read_lines", "surviving_records", "title_of_line",
]

BASE_FILE = "papers.jsonl.gz"
SUPPLEMENT_FILE = "papers-2020-2024-supplement.jsonl.gz"
CORPUS_FILES: tuple[str, ...] = (BASE_FILE, SUPPLEMENT_FILE)

# Part of every fingerprint: a change to how the files are read makes every cached index stale.
READER_VERSION = 2

CorpusFiles = Path | str | Sequence[Path | str]
T = TypeVar("T")


def corpus_files(data_dir: str | Path | None = None) -> tuple[Path, ...]:
    """The corpus files of the data directory, in reading order: the bundled sample's when
    nobody chose a data directory and the default one lacks the data
    (:func:`~cogym_lab.envs.related_work.data_files.task_dir`). Raises
    :class:`cogym_lab.datasets.DataMissing` (saying how to get them) when any is missing."""
    folder = task_dir(data_dir)
    return tuple(folder / name for name in CORPUS_FILES)


def as_files(files: CorpusFiles) -> tuple[Path, ...]:
    """One path or several, as a tuple of paths in reading order."""
    if isinstance(files, (str, Path)):
        return (Path(files),)
    paths = tuple(Path(f) for f in files)
    if not paths:
        raise ValueError("the corpus needs at least one file")
    return paths


def corpus_fingerprint(files: CorpusFiles, limit: int | None = None) -> str:
    """A short hex digest of the reader's version and every file's name, size and modification
    time (ns), plus ``-first<N>`` for a limited slice. Any change to any file changes it."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"reader{READER_VERSION}".encode())
    for path in as_files(files):
        info = path.stat()
        digest.update(f"|{path.name}:{info.st_size}:{info.st_mtime_ns}".encode())
    text = digest.hexdigest()
    if limit is not None:
        text += f"-first{int(limit)}"
    return text


# --- lines -----------------------------------------------------------------------------------

def _open(path: Path) -> io.BufferedIOBase:
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def read_lines(path: str | Path, limit: int | None = None) -> Iterator[bytes]:
    """The non-blank lines of one ``.jsonl`` or ``.jsonl.gz`` file, as bytes ending in a newline.

    Both passes of :func:`iter_records` count records with this, so they agree on positions."""
    count = 0
    with _open(Path(path)) as handle:
        for line in handle:
            if limit is not None and count >= limit:
                return
            if not line.strip():
                continue
            count += 1
            yield line if line.endswith(b"\n") else line + b"\n"


# --- pass 1: which records survive -----------------------------------------------------------

_ID_PREFIX = b'{"id": "'


def _keys_of(line: bytes) -> tuple[bytes, list[bytes]]:
    """The record's id and its ``supersedes`` ids, as UTF-8 bytes.

    The files are written by ``json.dumps`` with ``id`` first, so most lines give their id
    without parsing; a line that mentions ``supersedes`` anywhere, or whose id is not a plain
    string, is parsed in full."""
    if line.startswith(_ID_PREFIX) and b"supersedes" not in line:
        end = line.find(b'"', len(_ID_PREFIX))
        key = line[len(_ID_PREFIX):end]
        if end > 0 and b"\\" not in key:
            return key, []
    record = json.loads(line)
    key = str(record["id"]).encode("utf-8")
    removed = [str(i).encode("utf-8") for i in record.get("supersedes") or ()]
    return key, [r for r in removed if r != key]  # a record never removes itself


def _stamp(paths: tuple[Path, ...]) -> tuple[tuple[str, int, int], ...]:
    stamps = []
    for path in paths:
        info = path.stat()
        stamps.append((str(path.resolve()), info.st_size, info.st_mtime_ns))
    return tuple(stamps)


def surviving_records(files: CorpusFiles, *,
                      progress: bool | ProgressMeter = False) -> np.ndarray:
    """A read-only bool array, one entry per record of the files in reading order (blank lines
    not counted): True for the records the supersede rule keeps."""
    stamps = _stamp(as_files(files))
    with _survivors_lock:
        alive = _survivors_cache.get(stamps)
        if alive is None:
            alive, _ = _first_pass(stamps, progress)
            _remember(stamps, alive)
    return alive


def project_records(files: CorpusFiles, project: Callable[[bytes], T], *,
                    progress: bool | ProgressMeter = False) -> list[T]:
    """``project(line)`` for every record the supersede rule keeps, in reading order, in one
    pass over the files: for light reads such as :func:`title_of_line` that need not parse
    whole records. ``project`` sees every line, superseded ones too."""
    stamps = _stamp(as_files(files))
    with _survivors_lock:
        alive, projected = _first_pass(stamps, progress, project)
        _remember(stamps, alive)
    return [value for value, keep in zip(projected or [], alive.tolist(), strict=True) if keep]


_survivors_cache: dict[tuple[tuple[str, int, int], ...], np.ndarray] = {}
_survivors_lock = threading.Lock()  # concurrent sessions asking at once read the files once


def _remember(stamps: tuple[tuple[str, int, int], ...], alive: np.ndarray) -> None:
    if stamps not in _survivors_cache and len(_survivors_cache) >= 4:
        _survivors_cache.pop(next(iter(_survivors_cache)))  # a few corpora a process at most
    _survivors_cache[stamps] = alive


def _first_pass(stamps: tuple[tuple[str, int, int], ...], progress: bool | ProgressMeter,
                project: Callable[[bytes], T] | None = None) -> tuple[np.ndarray, list[T] | None]:
    """Which records survive, and ``project`` of every record when given."""
    own: list[bytes] = []  # the id of every record, by position
    removed_ids: list[bytes] = []
    removed_at: list[int] = []
    projected: list[T] | None = [] if project is not None else None
    with counting(progress, "corpus ids", unit=" records") as advance:
        for path, _size, _mtime in stamps:
            for line in read_lines(path):
                key, removes = _keys_of(line)
                for other in removes:
                    removed_ids.append(other)
                    removed_at.append(len(own))
                own.append(key)
                if project is not None and projected is not None:  # both or neither
                    projected.append(project(line))
                advance(1)
    return _last_touch_wins(own, removed_ids, removed_at), projected


def _last_touch_wins(own: list[bytes], removed_ids: list[bytes],
                     removed_at: list[int]) -> np.ndarray:
    """The records that are the last touch of their id (see the module doc)."""
    count = len(own)
    if not count:
        return np.zeros(0, dtype=bool)
    # Every id's touches (its records, and the records that remove it), sorted by id and then
    # by position: a record survives when it is the last touch of its id.
    keys = np.array(own + removed_ids, dtype=bytes)
    positions = np.concatenate([np.arange(count, dtype=np.int64),
                                np.asarray(removed_at, dtype=np.int64)])
    order = np.lexsort((positions, keys))
    sorted_keys = keys[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_keys[1:] != sorted_keys[:-1]
    winners = order[last]
    alive = np.zeros(count, dtype=bool)
    alive[winners[winners < count]] = True  # indexes below count are records, not removals
    alive.flags.writeable = False
    return alive


_TITLE_AFTER_ID = re.compile(rb'^\{"id": "[^"\\]*", "title": "((?:[^"\\]|\\.)*)"')


def title_of_line(line: bytes) -> str:
    """The ``title`` of one record line, read without parsing the whole record when the line
    has the files' layout (``id`` then ``title``); any other line is parsed in full."""
    match = _TITLE_AFTER_ID.match(line)
    if match is None:
        return str(json.loads(line).get("title") or "")
    raw = match.group(1)
    if b"\\" in raw:
        return json.loads(b'"' + raw + b'"')  # escapes: let the JSON decoder read them
    return raw.decode("utf-8")


def count_papers(files: CorpusFiles, *, progress: bool | ProgressMeter = False) -> int:
    """How many papers the files hold once the supersede rule is applied."""
    return int(surviving_records(files, progress=progress).sum())


# --- pass 2: the records ---------------------------------------------------------------------

def normalize_record(record: dict[str, Any]) -> dict[str, Any]:
    """The record with ``id`` a string and ``categories`` a list of strings (in place)."""
    record["id"] = str(record["id"])
    record["categories"] = normalize_categories(record.get("categories"))
    return record


def iter_records(files: CorpusFiles, limit: int | None = None, *,
                 progress: bool | ProgressMeter = False) -> Iterator[dict[str, Any]]:
    """The corpus as dicts, in reading order, with the supersede rule applied (see the module
    doc). ``files`` is one path or several in reading order; ``limit`` stops after the first N
    papers; ``progress`` shows tqdm bars on stderr, or counts on a meter."""
    paths = as_files(files)
    alive = surviving_records(paths, progress=progress)
    wanted = int(alive.sum()) if limit is None else min(int(limit), int(alive.sum()))
    if wanted <= 0:
        return
    position = yielded = 0
    with counting(progress, "reading papers", wanted, " papers") as advance:
        for path in paths:
            for line in read_lines(path):
                if position >= len(alive):
                    raise RuntimeError(f"{path} changed while the corpus was being read")
                keep = alive[position]
                position += 1
                if not keep:
                    continue  # superseded: not even parsed
                yield normalize_record(json.loads(line))
                yielded += 1
                advance(1)
                if yielded >= wanted:
                    return


def iter_papers(files: CorpusFiles, limit: int | None = None, *,
                progress: bool | ProgressMeter = False) -> Iterator[Paper]:
    """:func:`iter_records` as :class:`~cogym_lab.envs.related_work.papers.Paper` objects."""
    for record in iter_records(files, limit, progress=progress):
        yield Paper.from_record(record)
