"""Paper search for the Related Work task: the ``SEARCH_PAPER(query)`` backend.

Two providers share one interface, :class:`PaperSearch`:

* :class:`BM25PaperIndex` — BM25 over title + abstract of the local corpus (``bm25s`` with the
  Snowball English stemmer and English stopwords), plus a title-only BM25 field and a re-ranking
  of the best candidates by title overlap, so that pasting a paper's title finds that paper first.
  The corpus is both corpus files read with the supersede rule
  (:mod:`cogym_lab.envs.related_work.corpus`). The index is built once per corpus version into
  ``<cache>/related_work/index-<fingerprint>/`` (see :mod:`cogym_lab.envs.related_work.store`;
  the fingerprint covers both files, so changing either rebuilds it) and opened memory-mapped
  afterwards. It also answers exact title lookups (:class:`TitleLookup`), which the environment
  uses to tell the simulated user which required papers the offline search cannot find.
* :class:`ArxivLiveSearch` — the public arXiv API, for when the machine is online. Offline it
  raises :class:`SearchUnavailable`.

Scoring of :meth:`BM25PaperIndex.search`, for a query whose analysed terms are ``Q``::

    base(d)  = BM25_text(d, Q) + TITLE_WEIGHT * BM25_title(d, Q)
    final(d) = base(d) + top * overlap(d)**2 + EXACT_BONUS * top * exact(d)

for the ``max(POOL, 3k)`` best documents by ``base`` plus every paper whose normalised title
equals the normalised query; ``top`` is the best ``base`` score, ``overlap`` the Jaccard
similarity of the query's and the title's stemmed terms and ``exact`` 1 when the normalised
titles are equal (:func:`~cogym_lab.envs.related_work.titles.normalize_title`: case, punctuation
and spacing ignored).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cogym_lab.core.progress import ProgressListener, ProgressMeter, counting
from cogym_lab.datasets import disk_size
from cogym_lab.envs.related_work.corpus import CorpusFiles, corpus_files
from cogym_lab.envs.related_work.papers import Paper
from cogym_lab.envs.related_work.store import PaperStore, cache_folder, say
from cogym_lab.envs.related_work.titles import normalize_title
from cogym_lab.errors import CogymError

__all__ = [
    "ARXIV_API_URL", "ArxivLiveSearch", "BM25PaperIndex", "PaperSearch", "SearchHit",
    "SearchUnavailable", "TitleLookup", "normalize_title",
]

INDEX_FORMAT = 3  # 3: built from both corpus files with the supersede rule
ARXIV_API_URL = "http://export.arxiv.org/api/query"


class SearchUnavailable(CogymError, RuntimeError):
    """A search provider cannot answer (e.g. the network is unreachable)."""


@dataclass(frozen=True)
class SearchHit:
    """One search result: the paper, its score (higher is better) and a snippet of its abstract."""

    paper: Paper
    score: float
    snippet: str

    def to_row(self) -> dict[str, Any]:
        """A flat dict for display: id, title, authors (short), year, snippet, url."""
        return {
            "id": self.paper.id,
            "title": self.paper.title,
            "authors": self.paper.short_authors(),
            "year": self.paper.year,
            "snippet": self.snippet,
            "url": self.paper.url,
        }


@runtime_checkable
class PaperSearch(Protocol):
    """What the Related Work environment needs from a paper search."""

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        """The ``k`` best papers for ``query``, best first; ``[]`` for a blank query."""
        ...

    def get(self, paper_id: str) -> Paper | None:
        """The paper with this id, or None."""
        ...


@runtime_checkable
class TitleLookup(Protocol):
    """A search that can say, without the network, whether it holds a paper of a given title.

    The offline index implements it; the live arXiv search does not (what it can find is not
    known in advance), so nothing is flagged as unfindable when it is used."""

    def find_title(self, title: str) -> Paper | None:
        """A paper whose normalised title equals ``title``'s, or None."""
        ...


# --- text analysis ---------------------------------------------------------------------------

_SPLIT = r"(?u)\b\w\w+\b"  # the bm25s default: words of two characters or more
_SPLIT_RE = re.compile(_SPLIT)


def _title_key(text: str) -> int:
    digest = hashlib.blake2b(normalize_title(text).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class _Analyzer:
    """Lower-case, split, drop stopwords, stem: the same steps the bm25s Tokenizer takes."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self.stemmer = Stemmer.Stemmer("english")
        self.stopwords: tuple[str, ...] = tuple(STOPWORDS_EN_PLUS)
        self._stop = frozenset(self.stopwords)

    def tokenizer(self):
        from bm25s.tokenization import Tokenizer

        return Tokenizer(lower=True, splitter=_SPLIT, stopwords=list(self.stopwords),
                         stemmer=self.stemmer)

    def stems(self, text: str) -> list[str]:
        words = [w for w in _SPLIT_RE.findall(text.lower()) if w not in self._stop]
        return self.stemmer.stemWords(words) if words else []


# --- the local BM25 index --------------------------------------------------------------------

#: One field's BM25 weights, a sparse matrix in CSC form: data, indices, indptr.
_CscArrays = tuple[npt.NDArray[np.float64], npt.NDArray[np.integer], npt.NDArray[np.integer]]


def _csc_arrays(scores: dict[str, Any]) -> _CscArrays:
    """Plain ndarray views of a bm25s model's memory maps: same pages, without np.memmap's
    slicing cost."""
    return (np.asarray(scores["data"]), np.asarray(scores["indices"]),
            np.asarray(scores["indptr"]))


#: :meth:`BM25PaperIndex.shared`'s open indexes and per-folder build locks, by index folder.
_shared_indexes: dict[Path, BM25PaperIndex] = {}
_building: dict[Path, threading.Lock] = {}
_shared_lock = threading.Lock()


class BM25PaperIndex:
    """BM25 search over the local corpus (see the module doc for the scoring).

    Usually obtained with :meth:`load_or_build`; ``BM25PaperIndex(folder)`` opens an index folder
    (``<cache>/related_work/index-<fingerprint>``) that is already built.

    Attributes: ``folder``, ``store`` (the :class:`PaperStore`), ``built`` (True when this call
    built the index) and ``build_seconds`` (the build's duration, from the index's metadata)."""

    K1 = 1.5
    B = 0.75
    TITLE_WEIGHT = 1.0
    POOL = 100
    EXACT_BONUS = 2.0

    builds = 0  # how many indexes this process has built (all instances)

    def __init__(self, folder: str | Path, *, built: bool = False) -> None:
        import bm25s

        self.folder = Path(folder)
        meta_path = self.folder / "bm25" / "index.json"
        self.meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
        if self.meta.get("format") != INDEX_FORMAT:
            raise ValueError(f"{self.folder} holds an index of another format")
        self.built = built
        self.build_seconds: float = float(self.meta.get("build_seconds", 0.0))
        self.store = PaperStore(self.folder / "store")
        bm25_dir = self.folder / "bm25"
        self._text = bm25s.BM25.load(bm25_dir / "text", mmap=True, load_vocab=True,
                                     show_progress=False)
        self._title = bm25s.BM25.load(bm25_dir / "title", mmap=True, load_vocab=False,
                                      show_progress=False)
        self._vocab: dict[str, int] = self._text.vocab_dict
        self._title_keys = np.load(bm25_dir / "title_keys.npy", mmap_mode="r")
        self._title_rows = np.load(bm25_dir / "title_rows.npy", mmap_mode="r")
        self._title_terms = np.load(bm25_dir / "title_terms.npy", mmap_mode="r")
        self._title_terms_indptr = np.load(bm25_dir / "title_terms_indptr.npy", mmap_mode="r")
        self._fields = [_csc_arrays(model.scores) for model in (self._text, self._title)]
        self._title_terms = np.asarray(self._title_terms)
        self._title_terms_indptr = np.asarray(self._title_terms_indptr)
        self._analyzer = _Analyzer()
        self._n = len(self.store)

    #: Each phase's rough share of a whole-corpus build's time, for the progress bar's estimate
    #: of the time left (measured by ``benchmarks/index_build_lag.py``).
    BUILD_PHASES: ClassVar[dict[str, float]] = {
        "corpus ids": 5.0, "reading papers": 10.0, "tokenizing": 28.0,
        "computing BM25 weights": 22.5, "title lookups": 2.0,
    }

    @classmethod
    def build_meter(cls, listener: ProgressListener | None = None, *,
                    echo: bool = False) -> ProgressMeter:
        """A meter over this index's build phases, to pass as ``progress``."""
        return ProgressMeter("Building the paper search index", cls.BUILD_PHASES,
                             listener=listener, echo=echo)

    # -- construction --

    @staticmethod
    def is_built(folder: str | Path) -> bool:
        meta = Path(folder) / "bm25" / "index.json"
        if not meta.is_file() or not PaperStore.is_built(Path(folder) / "store"):
            return False
        try:
            return json.loads(meta.read_text(encoding="utf-8")).get("format") == INDEX_FORMAT
        except (OSError, ValueError):
            return False

    @staticmethod
    def folder_for(data_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                   *, limit: int | None = None) -> Path:
        """The folder the index of the data directory's corpus is kept in: one per corpus
        version, cache folder and ``limit`` (a limited index holds other papers, so it is
        another index). Raises :class:`cogym_lab.datasets.DataMissing` without the corpus."""
        return cache_folder(corpus_files(data_dir), cache_dir, limit)

    @classmethod
    def load_or_build(cls, data_dir: str | Path | None = None,
                      cache_dir: str | Path | None = None, *, limit: int | None = None,
                      progress: bool | ProgressMeter = True) -> BM25PaperIndex:
        """The index of the data directory's corpus (both files of
        :data:`~cogym_lab.envs.related_work.corpus.CORPUS_FILES`, supersede rule applied).

        ``data_dir`` follows :func:`cogym_lab.datasets.data_dir` (argument, ``COGYM_DATA``,
        user cache); a missing file raises :class:`cogym_lab.datasets.DataMissing`.
        ``cache_dir`` defaults to the user cache directory. ``limit`` indexes only the first N
        papers. The first call for a corpus version builds the index (minutes for the whole
        corpus, with progress on stderr when ``progress`` is true, or counted on it when it is a
        meter from :meth:`build_meter`); later calls open it. A change to either file (size or
        modification time) is a new corpus version."""
        return cls.from_corpus(corpus_files(data_dir), cache_dir, limit=limit,
                               progress=progress)

    @classmethod
    def shared(cls, data_dir: str | Path | None = None, cache_dir: str | Path | None = None,
               *, limit: int | None = None,
               progress: bool | ProgressMeter = True) -> BM25PaperIndex:
        """:meth:`load_or_build`, opened once per process and corpus version: every session
        searches the same memory maps instead of opening its own copy, and sessions that ask
        while the first builds it wait for that build instead of starting another. A build
        runs in a child process (:mod:`~cogym_lab.envs.related_work.index_process`), whose
        progress goes to ``progress``'s listener when it is a meter."""
        from cogym_lab.envs.related_work.index_process import build_in_child

        files = corpus_files(data_dir)
        folder = cache_folder(files, cache_dir, limit)
        with _shared_lock:
            lock = _building.setdefault(folder, threading.Lock())
        with lock:
            index = _shared_indexes.get(folder)
            if index is None:
                if not cls.is_built(folder):  # in a child: the server's loop must not stall
                    meter = progress if isinstance(progress, ProgressMeter) else None
                    echo = meter.echo if meter is not None else bool(progress)
                    build_in_child(tuple(files), cache_dir, limit,
                                   meter.listener if meter is not None else None, echo=echo)
                index = cls(folder)
                _shared_indexes[folder] = index
        return index

    @classmethod
    def from_corpus(cls, files: CorpusFiles, cache_dir: str | Path | None = None, *,
                    limit: int | None = None,
                    progress: bool | ProgressMeter = True) -> BM25PaperIndex:
        """Like :meth:`load_or_build`, for corpus files given by path (in reading order)."""
        folder = cache_folder(files, cache_dir, limit)
        if cls.is_built(folder):
            return cls(folder)
        started = time.monotonic()
        say(progress, f"Building the paper search index in {folder} "
                      "(once per corpus version; the whole corpus takes a few minutes)")
        store_dir = folder / "store"
        if PaperStore.is_built(store_dir):
            store = PaperStore(store_dir)
        else:
            store = PaperStore.build(files, store_dir, limit=limit, progress=progress)
        cls._build_bm25(store, folder / "bm25", progress=progress, started=started)
        if isinstance(progress, ProgressMeter):
            progress.finish()
        cls.builds += 1
        say(progress, f"  index ready in {time.monotonic() - started:.1f} s")
        return cls(folder, built=True)

    @classmethod
    def _build_bm25(cls, store: PaperStore, target: Path, *, progress: bool | ProgressMeter,
                    started: float) -> None:
        import bm25s
        from bm25s.tokenization import Tokenized

        analyzer = _Analyzer()
        tokenizer = analyzer.tokenizer()
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            titles: list[str] = []

            def texts() -> Iterator[str]:
                with counting(progress, "tokenizing", len(store), " papers") as advance:
                    for record in store.iter_records():
                        title = str(record.get("title") or "")
                        titles.append(title)
                        advance(1)
                        yield f"{title}\n{record.get('abstract') or ''}"

            # Compact per-paper arrays instead of lists of Python ints: about 10% less peak memory
            # for the whole corpus (bm25s only iterates them and takes their length).
            text_ids = [array("I", ids) for ids in
                        tokenizer.streaming_tokenize(texts(), update_vocab=True)]
            vocab = tokenizer.get_vocab_dict()
            title_ids = list(tokenizer.streaming_tokenize(titles, update_vocab=False))
            say(progress, f"  {len(store):,} papers, {len(vocab):,} terms; computing BM25 "
                          "weights")

            with counting(progress, "computing BM25 weights"):
                text = bm25s.BM25(k1=cls.K1, b=cls.B, method="lucene")
                text.index(Tokenized(ids=text_ids, vocab=vocab), show_progress=False)
                del text_ids
                text.save(staging / "text", show_progress=False)
                del text
                title = bm25s.BM25(k1=cls.K1, b=cls.B, method="lucene")
                title.index(Tokenized(ids=title_ids, vocab=vocab), show_progress=False)
                title.save(staging / "title", show_progress=False)
                (staging / "title" / "vocab.index.json").unlink()  # the same as text's
                del title

            with counting(progress, "title lookups"):
                empty = vocab.get("")
                lengths = np.zeros(len(title_ids) + 1, dtype=np.int64)
                flat: list[int] = []
                for row, ids in enumerate(title_ids):
                    unique = sorted({i for i in ids if i != empty})
                    flat.extend(unique)
                    lengths[row + 1] = len(unique)
                np.save(staging / "title_terms.npy", np.asarray(flat, dtype=np.int32))
                np.save(staging / "title_terms_indptr.npy", np.cumsum(lengths))
                del flat, title_ids

                keys = np.fromiter((_title_key(t) for t in titles), dtype=np.uint64,
                                   count=len(titles))
                order = np.argsort(keys, kind="stable")
                np.save(staging / "title_keys.npy", keys[order])
                np.save(staging / "title_rows.npy", order.astype(np.int32))
            (staging / "index.json").write_text(json.dumps({
                "format": INDEX_FORMAT, "papers": len(titles), "terms": len(vocab),
                "k1": cls.K1, "b": cls.B, "method": "lucene", "stemmer": "snowball-english",
                "stopwords": "bm25s english_plus", "bm25s": bm25s.__version__,
                "built_at": time.time(), "build_seconds": time.monotonic() - started,
            }), encoding="utf-8")
            if target.exists():
                meta = target / "index.json"
                try:
                    current = json.loads(meta.read_text(encoding="utf-8")).get("format")
                except (OSError, ValueError):
                    current = None
                if current == INDEX_FORMAT:  # another process finished the same build first
                    shutil.rmtree(staging, ignore_errors=True)
                    return
                shutil.rmtree(target)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    # -- queries --

    def __len__(self) -> int:
        return self._n

    def get(self, paper_id: str) -> Paper | None:
        return self.store.get(paper_id)

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self.store

    def disk_size(self) -> int:
        """Bytes on disk of the index folder (the paper store included)."""
        return disk_size(self.folder)

    def _term_ids(self, stems: Iterable[str]) -> list[int]:
        seen: dict[int, None] = {}
        for stem in stems:
            term = self._vocab.get(stem)
            if term is not None and stem:
                seen[term] = None
        return list(seen)

    def find_title(self, title: str) -> Paper | None:
        """The first paper (in reading order) whose normalised title equals ``title``'s."""
        wanted = normalize_title(title)
        if not wanted:
            return None
        for row in sorted(self._exact_rows(title)):
            paper = self.store.paper_at(row)
            if normalize_title(paper.title) == wanted:
                return paper
        return None

    def _exact_rows(self, query: str) -> list[int]:
        key = np.uint64(_title_key(query))
        lo = int(np.searchsorted(self._title_keys, key, side="left"))
        hi = int(np.searchsorted(self._title_keys, key, side="right"))
        return [int(r) for r in self._title_rows[lo:hi]]

    @staticmethod
    def _field_scores(field: _CscArrays, terms: list[int], n: int) -> npt.NDArray[np.float64]:
        """Sum of the BM25 weights of ``terms`` for every document (one bincount)."""
        data, indices, indptr = field
        pieces_i, pieces_w = [], []
        for term in terms:
            start, end = int(indptr[term]), int(indptr[term + 1])
            if end > start:
                pieces_i.append(indices[start:end])
                pieces_w.append(data[start:end])
        if not pieces_i:
            return np.zeros(n, dtype=np.float64)
        sums = np.bincount(np.concatenate(pieces_i), weights=np.concatenate(pieces_w), minlength=n)
        # Weighted, the counts are float64 already (numpy's stubs say intp): no copy is made.
        return sums.astype(np.float64, copy=False)

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        if not isinstance(query, str) or not query.strip() or k <= 0 or not self._n:
            return []
        query = " ".join(query.split())
        query_stems = set(self._analyzer.stems(query))
        terms = self._term_ids(query_stems)
        normal_query = normalize_title(query)
        exact = [row for row in self._exact_rows(query)
                 if normalize_title(self.store.paper_at(row).title) == normal_query]
        if not terms and not exact:
            return []
        if terms:
            base = self._field_scores(self._fields[0], terms, self._n)
            base += self.TITLE_WEIGHT * self._field_scores(self._fields[1], terms, self._n)
            # argpartition is slow on the many zeros (ties) of a short query: skip them first
            pool = np.flatnonzero(base)
            pool_size = max(self.POOL, 3 * k)
            if len(pool) > pool_size:
                cut = len(pool) - pool_size
                pool = pool[np.argpartition(base[pool], cut)[cut:]]
        else:
            base = np.zeros(self._n, dtype=np.float64)
            pool = np.zeros(0, dtype=np.int64)
        candidates = np.union1d(pool, np.asarray(exact, dtype=np.int64)).astype(np.int64)
        top = float(base[candidates].max()) if len(candidates) else 0.0
        top = top if top > 0 else 1.0
        wanted = set(terms)
        indptr, title_terms = self._title_terms_indptr, self._title_terms
        scores = base[candidates].astype(np.float64)
        for position, row in enumerate(candidates.tolist()):
            title = title_terms[int(indptr[row]):int(indptr[row + 1])].tolist()
            shared = len(wanted.intersection(title))
            union = len(query_stems) + len(title) - shared
            overlap = shared / union if union else 0.0
            scores[position] += top * overlap * overlap
        if exact:
            scores[np.isin(candidates, exact)] += self.EXACT_BONUS * top
        order = np.lexsort((candidates, -scores))[:k]
        hits = []
        for position in order.tolist():
            paper = self.store.paper_at(int(candidates[position]))
            hits.append(SearchHit(paper, round(float(scores[position]), 4), paper.snippet(query)))
        return hits


# --- the live arXiv provider -----------------------------------------------------------------

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_ARXIV_ID = re.compile(r"arxiv\.org/abs/(?P<id>.+?)(?:v\d+)?$")


class ArxivLiveSearch:
    """Search through the public arXiv API (Atom feed, parsed with the standard library).

    ``base_url`` is the API's query address (the public one by default). Any network failure
    raises :class:`SearchUnavailable`; use :class:`BM25PaperIndex` offline. Paper ids take the
    corpus's form, ``arxiv:<id>`` without the version."""

    def __init__(self, base_url: str = ARXIV_API_URL, *, timeout: float = 10.0,
                 user_agent: str = "cogym-lab related-work search") -> None:
        self.base_url = base_url
        self.timeout = timeout
        self.user_agent = user_agent

    def _fetch(self, params: dict[str, str | int]) -> bytes:
        url = f"{self.base_url}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"User-Agent": self.user_agent})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            raise SearchUnavailable(
                f"The arXiv API at {self.base_url} answered HTTP {error.code} {error.reason}; "
                "use the local index (BM25PaperIndex) instead.") from error
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise SearchUnavailable(
                f"The network is unreachable: cannot reach the arXiv API at {self.base_url} "
                f"({reason}). Use the local index (BM25PaperIndex) instead.") from error

    @staticmethod
    def parse_feed(feed: bytes | str) -> list[Paper]:
        """The papers of an arXiv API Atom feed."""
        try:
            root = ET.fromstring(feed)
        except ET.ParseError as error:
            raise SearchUnavailable(f"The arXiv API sent an unreadable answer: {error}") from error
        papers = []
        for entry in root.iter(f"{_ATOM}entry"):
            link = (entry.findtext(f"{_ATOM}id") or "").strip()
            match = _ARXIV_ID.search(link)
            if not match:  # the API reports errors as an entry without an arXiv id
                continue
            published = (entry.findtext(f"{_ATOM}published") or "").strip()
            categories = tuple(c.get("term", "") for c in entry.findall(f"{_ATOM}category")
                               if c.get("term"))
            primary = entry.find(f"{_ARXIV}primary_category")
            if primary is not None and primary.get("term") in categories:
                first = primary.get("term", "")
                categories = (first, *(c for c in categories if c != first))
            papers.append(Paper(
                id=f"arxiv:{match.group('id')}",
                title=" ".join((entry.findtext(f"{_ATOM}title") or "").split()),
                abstract=" ".join((entry.findtext(f"{_ATOM}summary") or "").split()),
                authors=tuple(" ".join((a.findtext(f"{_ATOM}name") or "").split())
                              for a in entry.findall(f"{_ATOM}author")),
                year=int(published[:4]) if published[:4].isdigit() else None,
                categories=categories,
                url=f"https://arxiv.org/abs/{match.group('id')}",
                source="arxiv",
            ))
        return papers

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        if not isinstance(query, str) or not query.strip() or k <= 0:
            return []
        query = " ".join(query.split())
        words = re.findall(r"\w+", query)
        expression = " AND ".join(f"all:{w}" for w in words) if words else f'all:"{query}"'
        papers = self.parse_feed(self._fetch({
            "search_query": expression, "start": 0, "max_results": int(k),
            "sortBy": "relevance", "sortOrder": "descending",
        }))
        count = len(papers)
        return [SearchHit(p, float(count - i), p.snippet(query)) for i, p in enumerate(papers[:k])]

    def get(self, paper_id: str) -> Paper | None:
        bare = paper_id.split(":", 1)[1] if paper_id.startswith("arxiv:") else paper_id
        if not bare.strip():
            return None
        papers = self.parse_feed(self._fetch({"id_list": bare.strip(), "max_results": 1}))
        return papers[0] if papers else None
