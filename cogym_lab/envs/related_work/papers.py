"""The paper corpus of the Related Work task: records, streaming, and an id -> paper store.

The corpus is ``related_work/papers.jsonl.gz`` in the data directory (see
:mod:`cogym_lab.datasets`): one JSON object a line with ``id, title, abstract, authors, year,
categories, url, source`` and, for ACL Anthology papers, ``venue``.

:class:`PaperStore` gives id -> :class:`Paper` lookup over the whole corpus without keeping the
papers as Python objects: the first time, it writes the decompressed lines to a cache folder
together with their byte offsets and a sorted id table (numpy arrays); afterwards it opens those
files memory-mapped, so a lookup is a binary search plus one JSON parse of one line.

The cache folder is ``<cache>/related_work/index-<fingerprint>/`` where ``<cache>`` is the
``cache_dir`` argument or the user cache directory (``$XDG_CACHE_HOME/cogym_lab``, else
``~/.cache/cogym_lab``) and the fingerprint is the corpus file's size and modification time (plus
``-first<N>`` when only the first N papers are used), so a changed corpus gets a new folder.
:mod:`cogym_lab.envs.related_work.search` keeps its BM25 index in the same folder.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from cogym_lab.datasets import require

__all__ = [
    "CORPUS_FILE", "Paper", "PaperStore", "cache_folder", "corpus_fingerprint", "corpus_path",
    "default_cache_dir", "iter_papers", "iter_records",
]

CORPUS_FILE = "papers.jsonl.gz"
STORE_FORMAT = 1

# --- the record ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")

# Words never worth matching when picking a snippet.
_SNIPPET_STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most",
    "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our",
    "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "via", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "you", "your", "using", "based",
    "towards", "toward",
])

_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "ness", "ies", "ied", "ers", "ed", "er",
             "es", "s", "ly")
_PARTICLES = frozenset({"van", "von", "de", "der", "den", "del", "della", "di", "da", "du", "le",
                        "la", "dos", "das", "ter", "ten", "st.", "al", "el", "bin", "ibn"})
_NAME_SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"})


def _light_stem(word: str) -> str:
    """A crude suffix stripper, enough to match 'translation' with 'translating' in snippets."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=512)
def _query_pattern(query: str) -> re.Pattern[str] | None:
    """A regex matching the words of ``query`` loosely in a text, one group per query word.

    A query word matches words that start with its light stem when that stem has 4 or more
    characters ('translation' -> 'transl' matches 'translating'), else the word itself with an
    optional plural ending. Stopwords are ignored."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word in _SNIPPET_STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        stem = _light_stem(word)
        if stem not in terms:
            terms.append(stem)
    if not terms:
        return None
    parts = [f"({re.escape(t)}\\w*)" if len(t) >= 4 else f"({re.escape(t)}(?:s|es)?)"
             for t in terms]
    return re.compile(r"\b(?:" + "|".join(parts) + r")\b", re.IGNORECASE)


def _surname(name: str) -> str:
    parts = name.replace(",", " ").split()
    while len(parts) > 1 and parts[-1].lower() in _NAME_SUFFIXES:
        parts.pop()
    if not parts:
        return ""
    surname = [parts[-1]]
    index = len(parts) - 2
    while index > 0 and parts[index].lower() in _PARTICLES:
        surname.insert(0, parts[index])
        index -= 1
    return " ".join(surname)


@dataclass(frozen=True)
class Paper:
    """One paper of the corpus."""

    id: str
    title: str
    abstract: str
    authors: tuple[str, ...]
    year: int | None
    categories: tuple[str, ...]
    url: str
    source: str
    venue: str | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Paper:
        year = record.get("year")
        try:
            year = int(year) if year not in (None, "") else None
        except (TypeError, ValueError):
            year = None
        return cls(
            id=str(record["id"]),
            title=" ".join(str(record.get("title") or "").split()),
            abstract=" ".join(str(record.get("abstract") or "").split()),
            authors=tuple(str(a) for a in record.get("authors") or ()),
            year=year,
            categories=tuple(str(c) for c in record.get("categories") or ()),
            url=str(record.get("url") or ""),
            source=str(record.get("source") or ""),
            venue=record.get("venue") or None,
        )

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "id": self.id, "title": self.title, "abstract": self.abstract,
            "authors": list(self.authors), "year": self.year,
            "categories": list(self.categories), "url": self.url, "source": self.source,
        }
        if self.venue is not None:
            record["venue"] = self.venue
        return record

    def cite_label(self) -> str:
        """``"Vaswani et al., 2017"``, ``"Smith and Jones, 2020"``, ``"Smith, 2020"``."""
        names = [s for s in (_surname(a) for a in self.authors) if s]
        if not names:
            who = "Anonymous"
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who}, {self.year if self.year is not None else 'n.d.'}"

    def short_authors(self, count: int = 3) -> str:
        """The first ``count`` authors, then ``et al.``."""
        if not self.authors:
            return ""
        shown = ", ".join(self.authors[:count])
        return shown + (" et al." if len(self.authors) > count else "")

    def snippet(self, query: str | None = None, length: int = 240) -> str:
        """About ``length`` characters of the abstract, around the query's words when it has them.

        The window is chosen to hold as many different query words as possible (matched loosely:
        case-insensitive, common suffixes ignored); without a match it is the abstract's start.
        Cut ends are marked with ``…``."""
        text = self.abstract
        if len(text) <= length:
            return text
        pattern = _query_pattern(" ".join(query.split())) if query else None
        hits: list[tuple[int, int, int]] = []  # (start, end, which query word)
        if pattern is not None:
            hits = [(m.start(), m.end(), m.lastindex or 0) for m in pattern.finditer(text)]
        start = 0
        if hits:
            lead = length // 5
            best = (-1, 0)
            for anchor, _end, _term in hits:
                begin = max(0, anchor - lead)
                covered = {t for s, e, t in hits if s >= begin and e <= begin + length}
                if len(covered) > best[0]:
                    best = (len(covered), begin)
                    if best[0] == pattern.groups:  # type: ignore[union-attr]
                        break
            start = best[1]
        start = min(start, max(0, len(text) - length))
        if start > 0:  # begin on a word boundary
            space = text.find(" ", start)
            if space != -1 and space - start < 30:
                start = space + 1
        end = start + length
        if end < len(text):
            space = text.rfind(" ", start, end)
            if space > start + length // 2:
                end = space
        piece = text[start:end].strip()
        return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")


# --- reading the corpus ----------------------------------------------------------------------

def _open_lines(path: str | Path):
    path = Path(path)
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def _iter_lines(path: str | Path, limit: int | None = None) -> Iterator[bytes]:
    """The non-blank lines of a ``.jsonl`` or ``.jsonl.gz`` file, as bytes with their newline."""
    count = 0
    with _open_lines(path) as handle:
        for line in handle:
            if limit is not None and count >= limit:
                return
            if not line.strip():
                continue
            if not line.endswith(b"\n"):
                line += b"\n"
            count += 1
            yield line


def iter_records(path: str | Path, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Stream the corpus as dicts (``limit``: only the first N)."""
    for line in _iter_lines(path, limit):
        yield json.loads(line)


def iter_papers(path: str | Path, limit: int | None = None) -> Iterator[Paper]:
    """Stream the corpus (``papers.jsonl.gz`` or an uncompressed ``.jsonl``) as :class:`Paper`."""
    for record in iter_records(path, limit):
        yield Paper.from_record(record)


# --- where the cache lives -------------------------------------------------------------------

def corpus_path(data_dir: str | Path | None = None) -> Path:
    """``related_work/papers.jsonl.gz`` in the data directory; :class:`DataMissing` if absent."""
    return require("related_work", data_dir) / CORPUS_FILE


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cogym_lab``, else ``~/.cache/cogym_lab``."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "cogym_lab"


def corpus_fingerprint(corpus: str | Path, limit: int | None = None) -> str:
    """``<size>-<mtime in ns>`` of the corpus file, plus ``-first<N>`` for a limited slice."""
    info = Path(corpus).stat()
    text = f"{info.st_size}-{info.st_mtime_ns}"
    if limit is not None:
        text += f"-first{int(limit)}"
    return text


def cache_folder(corpus: str | Path, cache_dir: str | Path | None = None,
                 limit: int | None = None) -> Path:
    """``<cache>/related_work/index-<fingerprint>/`` for this corpus file."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root.resolve() / "related_work" / f"index-{corpus_fingerprint(corpus, limit)}"


class _Progress:
    """``  label 125,000 papers (40.1 s)`` on one stderr line, refreshed every few seconds."""

    def __init__(self, label: str, enabled: bool, total: int | None = None) -> None:
        self.label, self.enabled, self.total = label, enabled, total
        self.started = self._last = time.monotonic()
        self.count = 0

    def tick(self, count: int = 1) -> None:
        self.count += count
        if self.enabled and self.count % 1000 == 0:
            now = time.monotonic()
            if now - self._last >= 2.0:
                self._last = now
                self._write("")

    def _write(self, end: str) -> None:
        total = f" / {self.total:,}" if self.total else ""
        sys.stderr.write(f"\r  {self.label}: {self.count:,}{total} papers "
                         f"({time.monotonic() - self.started:.1f} s){end}")
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            self._write("\n")


def _say(enabled: bool, text: str) -> None:
    if enabled:
        print(text, file=sys.stderr, flush=True)


# --- the store -------------------------------------------------------------------------------

@dataclass
class _Files:
    lines: Path
    offsets: Path
    ids: Path
    id_rows: Path
    meta: Path

    @classmethod
    def inside(cls, folder: Path) -> _Files:
        return cls(folder / "papers.jsonl", folder / "offsets.npy", folder / "ids.npy",
                   folder / "id_rows.npy", folder / "store.json")


@dataclass(eq=False)
class PaperStore:
    """id -> :class:`Paper` over the corpus, backed by memory-mapped files in a cache folder.

    Open a built folder with ``PaperStore(folder)``; build one with :meth:`build`, or let
    :meth:`load_or_build` do whichever is needed. Rows are numbered in corpus order."""

    folder: Path
    built: bool = False  # True when this object's folder was built by this process just now
    _ids: np.ndarray = field(init=False, repr=False)
    _id_rows: np.ndarray = field(init=False, repr=False)
    _offsets: np.ndarray = field(init=False, repr=False)
    _data: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        files = _Files.inside(self.folder)
        meta = json.loads(files.meta.read_text(encoding="utf-8"))
        if meta.get("format") != STORE_FORMAT:
            raise ValueError(f"{self.folder} holds a paper store of another format")
        # np.asarray: plain views of the memory maps (slicing an np.memmap costs more)
        self._offsets = np.asarray(np.load(files.offsets, mmap_mode="r"))
        self._ids = np.asarray(np.load(files.ids, mmap_mode="r"))
        self._id_rows = np.asarray(np.load(files.id_rows, mmap_mode="r"))
        size = files.lines.stat().st_size
        self._data = (np.asarray(np.memmap(files.lines, dtype=np.uint8, mode="r")) if size
                      else np.zeros(0, dtype=np.uint8))

    # -- building --

    @staticmethod
    def is_built(folder: str | Path) -> bool:
        files = _Files.inside(Path(folder))
        if not files.meta.is_file():
            return False
        try:
            return json.loads(files.meta.read_text(encoding="utf-8")).get("format") == STORE_FORMAT
        except (OSError, ValueError):
            return False

    @classmethod
    def build(cls, corpus: str | Path, folder: str | Path, *, limit: int | None = None,
              progress: bool = True) -> PaperStore:
        """Decompress ``corpus`` (its first ``limit`` papers) into ``folder`` and index the ids.

        Files are written next to the folder and moved in place at the end, so a build that
        is interrupted leaves nothing half-written behind."""
        folder = Path(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        files = _Files.inside(staging)
        meter = _Progress("reading papers", progress)
        offsets = [0]
        ids: list[bytes] = []
        position = 0
        try:
            with open(files.lines, "wb") as out:
                for line in _iter_lines(corpus, limit):
                    record = json.loads(line)
                    ids.append(str(record["id"]).encode("utf-8"))
                    out.write(line)
                    position += len(line)
                    offsets.append(position)
                    meter.tick()
            meter.finish()
            width = max((len(i) for i in ids), default=1)
            id_array = np.array(ids, dtype=f"S{width}")
            order = np.argsort(id_array, kind="stable")
            sorted_ids = id_array[order]
            if len(sorted_ids) > 1:
                same = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
                if len(same):
                    _say(progress, f"  note: {len(same)} duplicate paper ids; the first wins")
            np.save(files.offsets, np.asarray(offsets, dtype=np.int64))
            np.save(files.ids, sorted_ids)
            np.save(files.id_rows, order.astype(np.int32))
            files.meta.write_text(json.dumps({
                "format": STORE_FORMAT, "papers": len(ids), "corpus": Path(corpus).name,
                "limit": limit, "built_at": time.time(),
            }), encoding="utf-8")
            if folder.exists():  # another process finished first, or an outdated store
                if cls.is_built(folder):
                    shutil.rmtree(staging, ignore_errors=True)
                    return cls(folder)
                shutil.rmtree(folder)
            os.replace(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls(folder, built=True)

    @classmethod
    def load_or_build(cls, data_dir: str | Path | None = None,
                      cache_dir: str | Path | None = None, *, limit: int | None = None,
                      progress: bool = True) -> PaperStore:
        """The store of the data directory's corpus, built on first use (see the module doc)."""
        corpus = corpus_path(data_dir)
        folder = cache_folder(corpus, cache_dir, limit) / "store"
        if cls.is_built(folder):
            return cls(folder)
        _say(progress, f"Building the paper store in {folder} (once per corpus version)")
        return cls.build(corpus, folder, limit=limit, progress=progress)

    # -- lookup --

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def row_of(self, paper_id: str) -> int | None:
        """The row of ``paper_id``, or None."""
        try:
            key = paper_id.encode("utf-8")
        except (AttributeError, UnicodeError):
            return None
        if len(key) > self._ids.dtype.itemsize or not len(self._ids):
            return None
        where = int(np.searchsorted(self._ids, np.array(key, dtype=self._ids.dtype)))
        if where < len(self._ids) and self._ids[where] == key:
            return int(self._id_rows[where])
        return None

    def record_at(self, row: int) -> dict[str, Any]:
        """The raw JSON record of row ``row``."""
        if not 0 <= row < len(self):
            raise IndexError(row)
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return json.loads(self._data[start:end].tobytes())

    def paper_at(self, row: int) -> Paper:
        return Paper.from_record(self.record_at(row))

    def get(self, paper_id: str) -> Paper | None:
        row = self.row_of(paper_id)
        return None if row is None else self.paper_at(row)

    def __contains__(self, paper_id: object) -> bool:
        return isinstance(paper_id, str) and self.row_of(paper_id) is not None

    def __iter__(self) -> Iterator[Paper]:
        for row in range(len(self)):
            yield self.paper_at(row)

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every record in row order, read sequentially from the uncompressed copy."""
        with open(_Files.inside(self.folder).lines, "rb") as handle:
            for line in handle:
                yield json.loads(line)

    def disk_size(self) -> int:
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())
