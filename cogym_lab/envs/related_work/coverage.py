"""Title coverage: how many of the papers the tasks ask to cite the offline corpus holds.

Each ``RP`` hidden requirement of ``test.json`` names a paper the section should cite (237 of
them over the 100 tasks). A named paper is *covered* when the corpus, read with the supersede
rule (:mod:`cogym_lab.envs.related_work.corpus`), holds a paper with the same normalised title
(:func:`cogym_lab.envs.related_work.titles.normalize_title`: NFKC, lower case, punctuation and
spacing ignored). Entries are counted one by one, so a title named by two tasks
counts twice, as it does in the data's own figures (55 of 237 with ``papers.jsonl.gz`` alone, 105
of 237 with the supplement).

Only titles are needed, so the corpus is read in a single pass that takes each record's id,
``supersedes`` list and title without parsing the rest
(:func:`~cogym_lab.envs.related_work.corpus.project_records`): about six seconds for the whole
corpus on two cores (progress on stderr). The result is kept for the process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from cogym_lab.envs.related_work.corpus import (
    CorpusFiles,
    as_files,
    corpus_fingerprint,
    project_records,
    title_of_line,
)
from cogym_lab.envs.related_work.instances import RelatedWorkTask
from cogym_lab.envs.related_work.titles import normalize_title

__all__ = ["CitedPaper", "TitleCoverage", "cited_papers", "title_coverage"]


@dataclass(frozen=True)
class CitedPaper:
    """One ``RP`` requirement: the task's index, the title as the task names it, and whether the
    corpus holds a paper of that normalised title."""

    task: int
    title: str
    found: bool


@dataclass(frozen=True)
class TitleCoverage:
    """The coverage of the tasks' ``RP`` titles by a corpus of ``papers`` papers."""

    papers: int
    cited: tuple[CitedPaper, ...]

    @property
    def total(self) -> int:
        return len(self.cited)

    @property
    def found(self) -> int:
        return sum(c.found for c in self.cited)

    @property
    def missing(self) -> list[CitedPaper]:
        return [c for c in self.cited if not c.found]

    @property
    def share(self) -> float:
        """``found / total`` (0 when no task names a paper)."""
        return self.found / self.total if self.total else 0.0


def cited_papers(tasks: Sequence[RelatedWorkTask]) -> list[tuple[int, str]]:
    """``(task index, title)`` of every ``RP`` requirement, in task and file order."""
    return [(task.index, title) for task in tasks for title in task.cited_titles]


_cache: dict[tuple[str, frozenset[str]], tuple[int, frozenset[str]]] = {}
_lock = threading.Lock()


def _scan(files: CorpusFiles, wanted: frozenset[str], progress: bool) -> tuple[int, frozenset[str]]:
    """How many papers the corpus holds, and which of the ``wanted`` normalised titles."""
    key = (corpus_fingerprint(files), wanted)

    def wanted_title(line: bytes) -> str | None:
        title = normalize_title(title_of_line(line))
        return title if title in wanted else None

    with _lock:
        if key not in _cache:
            titles = project_records(files, wanted_title, progress=progress)
            _cache[key] = (len(titles), frozenset(t for t in titles if t is not None))
        return _cache[key]


def title_coverage(tasks: Sequence[RelatedWorkTask], files: CorpusFiles, *,
                   progress: bool = False) -> TitleCoverage:
    """The coverage of the ``RP`` titles of ``tasks`` by the corpus ``files`` (in reading
    order, supersede rule applied)."""
    named = cited_papers(tasks)
    wanted = frozenset(normalize_title(title) for _, title in named)
    papers, found = _scan(as_files(files), wanted, progress)
    return TitleCoverage(papers=papers, cited=tuple(
        CitedPaper(task=index, title=title, found=normalize_title(title) in found)
        for index, title in named))
