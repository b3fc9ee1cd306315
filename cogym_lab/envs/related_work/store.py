"""The paper store: id -> :class:`Paper` over the whole corpus, kept on disk in a cache folder.

:class:`PaperStore` does not keep the papers as Python objects: the first time, it writes the
corpus (as :func:`cogym_lab.envs.related_work.corpus.iter_records` reads it, supersede rule
applied) to an uncompressed file together with the byte offsets of its lines and a sorted id
table (numpy arrays); afterwards it opens those files memory-mapped, so a lookup is a binary
search plus one JSON parse of one line.

The cache folder is ``<cache>/related_work/index-<fingerprint>/`` where ``<cache>`` is the
``cache_dir`` argument or the user cache directory (``$XDG_CACHE_HOME/cogym_lab``, else
``~/.cache/cogym_lab``) and the fingerprint
(:func:`~cogym_lab.envs.related_work.corpus.corpus_fingerprint`) covers the name, size and
modification time of *every* corpus file (plus ``-first<N>`` when only the first N papers are
used): changing either file gives a new folder, so the store and the index are rebuilt. The
bundled sample's corpus gets ``index-sample-<fingerprint>/``, built in seconds.
:mod:`cogym_lab.envs.related_work.search` keeps its BM25 index in the same folder.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cogym_lab.core.progress import ProgressMeter
from cogym_lab.datasets import cache_root, is_sample
from cogym_lab.envs.related_work.corpus import (
    CorpusFiles,
    as_files,
    corpus_files,
    corpus_fingerprint,
    iter_records,
)
from cogym_lab.envs.related_work.papers import Paper

__all__ = ["PaperStore", "cache_folder", "default_cache_dir"]

STORE_FORMAT = 2  # 2: written from the supersede-rule reader, categories always lists


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cogym_lab``, else ``~/.cache/cogym_lab``."""
    return cache_root()


def cache_folder(files: CorpusFiles, cache_dir: str | Path | None = None,
                 limit: int | None = None) -> Path:
    """``<cache>/related_work/index-<fingerprint>/`` for these corpus files (in reading order);
    ``index-sample-<fingerprint>/`` for the bundled sample's, so the two are told apart at a
    glance (the fingerprints differ anyway: the files do)."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    kind = "index-sample" if is_sample(as_files(files)[0].parent) else "index"
    return root.resolve() / "related_work" / f"{kind}-{corpus_fingerprint(files, limit)}"


def say(progress: bool | ProgressMeter, text: str) -> None:
    """A progress line on stderr, when ``progress`` is true or a meter that echoes."""
    if progress.echo if isinstance(progress, ProgressMeter) else progress:
        print(text, file=sys.stderr, flush=True)


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
    :meth:`load_or_build` do whichever is needed. Rows are numbered in reading order."""

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
    def build(cls, files: CorpusFiles, folder: str | Path, *, limit: int | None = None,
              progress: bool | ProgressMeter = True) -> PaperStore:
        """Write the corpus (its first ``limit`` papers) into ``folder`` and index the ids.

        Files are written next to the folder and moved in place at the end, so a build that
        is interrupted leaves nothing half-written behind."""
        paths = as_files(files)
        folder = Path(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        store_files = _Files.inside(staging)
        offsets = [0]
        ids: list[bytes] = []
        position = 0
        try:
            with open(store_files.lines, "wb") as out:
                for record in iter_records(paths, limit, progress=progress):
                    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
                    ids.append(record["id"].encode("utf-8"))
                    out.write(line)
                    position += len(line)
                    offsets.append(position)
            width = max((len(i) for i in ids), default=1)
            id_array = np.array(ids, dtype=f"S{width}")
            del ids
            order = np.argsort(id_array, kind="stable")
            sorted_ids = id_array[order]
            if len(sorted_ids) > 1 and bool((sorted_ids[1:] == sorted_ids[:-1]).any()):
                raise ValueError("the corpus reader yielded an id twice; the supersede rule "
                                 "should make ids unique")
            np.save(store_files.offsets, np.asarray(offsets, dtype=np.int64))
            np.save(store_files.ids, sorted_ids)
            np.save(store_files.id_rows, order.astype(np.int32))
            store_files.meta.write_text(json.dumps({
                "format": STORE_FORMAT, "papers": len(offsets) - 1,
                "corpus": [p.name for p in paths], "limit": limit, "built_at": time.time(),
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
                      progress: bool | ProgressMeter = True) -> PaperStore:
        """The store of the data directory's corpus, built on first use (see the module doc)."""
        paths = corpus_files(data_dir)
        folder = cache_folder(paths, cache_dir, limit) / "store"
        if cls.is_built(folder):
            return cls(folder)
        say(progress, f"Building the paper store in {folder} (once per corpus version)")
        return cls.build(paths, folder, limit=limit, progress=progress)

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
        """The record of row ``row``, as the corpus reader gave it."""
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
