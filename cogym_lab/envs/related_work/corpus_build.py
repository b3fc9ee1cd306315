"""Building the Related Work corpus files from public metadata dumps (``cogym-lab data
build-corpus``).

The two files the reader expects (:data:`~cogym_lab.envs.related_work.corpus.CORPUS_FILES`) are
written from the arXiv metadata snapshot and/or the ACL Anthology's BibTeX export, split as the
released corpus is: arXiv papers first submitted 2020-2024 go to the supplement, every other
paper (other arXiv years, all ACL Anthology papers) to ``papers.jsonl.gz``. No record of a built
corpus has ``supersedes``: the reader's supersede rule is left with nothing to do but drop a
repeated id.

Each file is written to a temporary file beside it and renamed into place once both are
complete, so an interrupted build leaves the previous files (or none) and never half a file.
A small ``corpus-build.json`` beside them records what they were built from, for
``cogym-lab data`` to report.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.envs.related_work.corpus import BASE_FILE, CORPUS_FILES, SUPPLEMENT_FILE
from cogym_lab.envs.related_work.dumps import DumpCounts, DumpError, how_many, open_dump

__all__ = ["BUILD_RECORD", "SUPPLEMENT_YEARS", "CorpusBuild", "DumpError", "build_corpus",
           "built_from", "supplement_holds"]

#: The arXiv years the supplement holds (as in the released corpus).
SUPPLEMENT_YEARS = range(2020, 2025)
#: Beside the corpus files: what they were built from.
BUILD_RECORD = "corpus-build.json"


def supplement_holds(record: dict[str, Any]) -> bool:
    """Whether a built record goes to the supplement rather than ``papers.jsonl.gz``."""
    return record.get("source") == "arxiv" and record.get("year") in SUPPLEMENT_YEARS


@dataclass
class CorpusBuild:
    """What a build read and wrote."""

    folder: Path
    sources: list[DumpCounts] = field(default_factory=list)
    written: dict[str, int] = field(default_factory=dict)  # file name -> records
    seconds: float = 0.0

    def summary(self) -> list[str]:
        """Printable lines: papers kept per source, then records per file written."""
        lines = [f"Built the Related Work corpus in {self.folder} ({self.seconds:.0f} s):"]
        lines += [f"  {counts.summary()}" for counts in self.sources]
        lines += [f"  wrote {name}: {how_many(count, 'record')}"
                  for name, count in self.written.items()]
        return lines


def _check_targets(folder: Path, force: bool) -> None:
    existing = [name for name in CORPUS_FILES if (folder / name).exists()]
    if existing and not force:
        raise FileExistsError(f"{', '.join(existing)} already in {folder}; pass --force to "
                              "replace the corpus.")


def _line(record: dict[str, Any]) -> bytes:
    # ensure_ascii=False as in the released files; the text was cleaned of control characters
    # and line separators, and json escapes whatever else a line could break on.
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


class _AtomicGzip:
    """A gzip file written under a temporary name beside ``target`` and renamed onto it by
    :meth:`commit`; :meth:`discard` removes it unless it was committed."""

    def __init__(self, target: Path) -> None:
        self.target = target
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                             dir=target.parent)
        self.temporary = Path(temporary)
        self.raw = os.fdopen(handle, "wb")
        # mtime 0 in the header: the same dumps give the same bytes.
        self.out = gzip.GzipFile(filename=target.name, fileobj=self.raw, mode="wb",
                                 compresslevel=6, mtime=0)
        self.records = 0

    def write(self, line: bytes) -> None:
        self.out.write(line)
        self.records += 1

    def finish(self) -> None:
        """Everything on disk under the temporary name."""
        self.out.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()
        self.temporary.chmod(0o644)  # mkstemp makes it private; the corpus is not

    def commit(self) -> None:
        os.replace(self.temporary, self.target)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.out.close()
            self.raw.close()
        self.temporary.unlink(missing_ok=True)  # committed: already gone


def build_corpus(data_root: Path, *, arxiv: str | Path | None = None,
                 acl: str | Path | None = None, force: bool = False,
                 progress: bool = False) -> CorpusBuild:
    """Write the corpus files into ``data_root/related_work/`` from the given dumps (at least
    one). ``FileExistsError`` when a corpus file is there and ``force`` is not set;
    :class:`~cogym_lab.envs.related_work.dumps.DumpError` when a dump cannot be read (checked
    before anything is written, and again while reading)."""
    from cogym_lab.envs.related_work.acl_dump import read_acl
    from cogym_lab.envs.related_work.arxiv_dump import read_arxiv

    if arxiv is None and acl is None:
        raise ValueError("give at least one dump: the arXiv metadata snapshot or the ACL "
                         "Anthology BibTeX export")
    for dump in (arxiv, acl):
        if dump is not None:
            open_dump(dump).close()  # a missing or unreadable dump fails before any work
    folder = Path(data_root) / "related_work"
    folder.mkdir(parents=True, exist_ok=True)
    _check_targets(folder, force)
    started = time.monotonic()
    build = CorpusBuild(folder)
    readers: list[Iterable[dict[str, Any]]] = []
    if arxiv is not None:
        build.sources.append(DumpCounts("arXiv", Path(arxiv).name))
        readers.append(read_arxiv(arxiv, build.sources[-1], progress=progress))
    if acl is not None:
        build.sources.append(DumpCounts("ACL Anthology", Path(acl).name))
        readers.append(read_acl(acl, build.sources[-1], progress=progress))
    files = {name: _AtomicGzip(folder / name) for name in CORPUS_FILES}
    try:
        for reader in readers:
            for record in reader:
                files[SUPPLEMENT_FILE if supplement_holds(record) else BASE_FILE].write(
                    _line(record))
        for file in files.values():
            file.finish()
        for file in files.values():  # both complete: only now replace what was there
            file.commit()
    finally:
        for file in files.values():
            file.discard()
    build.written = {name: file.records for name, file in files.items()}
    build.seconds = time.monotonic() - started
    _write_build_record(folder, build)
    return build


def _write_build_record(folder: Path, build: CorpusBuild) -> None:
    record = {
        "built": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "sources": [{"source": c.source, "dump": c.dump, "read": c.read, "kept": c.kept}
                    for c in build.sources],
        "files": {name: (folder / name).stat().st_size for name in CORPUS_FILES},
    }
    handle, temporary = tempfile.mkstemp(prefix=f".{BUILD_RECORD}.", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(record, out, indent=1)
    Path(temporary).chmod(0o644)
    os.replace(temporary, folder / BUILD_RECORD)


def built_from(folder: Path) -> str | None:
    """How the corpus files in ``folder`` were built (``"arXiv (snapshot.json.gz), ACL
    Anthology (anthology+abstracts.bib.gz) on 2026-01-02"``) when this build made them, None
    when they came otherwise (the build record is absent, or the files changed since)."""
    try:
        record = json.loads((folder / BUILD_RECORD).read_text(encoding="utf-8"))
        sizes = {name: (folder / name).stat().st_size for name in CORPUS_FILES}
        if record.get("files") != sizes:
            return None
        sources = ", ".join(f"{s['source']} ({s['dump']})" for s in record["sources"])
        return f"{sources} on {str(record['built'])[:10]}"
    except (OSError, ValueError, KeyError, TypeError):
        return None

