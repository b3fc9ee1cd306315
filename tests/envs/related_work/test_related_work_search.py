"""Paper search of the Related Work task, on a slice of the real corpus (the shared data).

The index is built once per test module over the first 5,000 papers of the corpus (both files,
supersede rule applied), in a temporary cache folder. Nothing here touches the internet: the
arXiv provider is exercised against loopback addresses only."""

from __future__ import annotations

import gzip
import http.server
import json
import math
import os
import re
import shutil
import socket
import threading
from collections import Counter
from pathlib import Path

import pytest

from cogym_lab.datasets import DataMissing
from cogym_lab.envs.related_work.corpus import (
    BASE_FILE,
    CORPUS_FILES,
    SUPPLEMENT_FILE,
    corpus_fingerprint,
    iter_papers,
    iter_records,
)
from cogym_lab.envs.related_work.papers import Paper
from cogym_lab.envs.related_work.search import (
    ArxivLiveSearch,
    BM25PaperIndex,
    PaperSearch,
    SearchHit,
    SearchUnavailable,
    TitleLookup,
    normalize_title,
)
from cogym_lab.envs.related_work.store import PaperStore, cache_folder

SLICE = 5_000


@pytest.fixture(scope="module")
def corpus(datasets_dir: Path) -> tuple[Path, ...]:
    return tuple(datasets_dir / "related_work" / name for name in CORPUS_FILES)


@pytest.fixture(scope="module")
def records(corpus: tuple[Path, ...]) -> list[dict]:
    return list(iter_records(corpus, limit=SLICE))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("paper-cache")


@pytest.fixture(scope="module")
def index(datasets_dir: Path, cache_dir: Path) -> BM25PaperIndex:
    built = BM25PaperIndex.load_or_build(datasets_dir, cache_dir, limit=SLICE, progress=False)
    assert built.built
    return built


def _unique_titles(records: list[dict]) -> Counter:
    return Counter(normalize_title(r["title"]) for r in records)


# --- the records and the store ---------------------------------------------------------------

def test_iter_papers_streams_typed_records(corpus: tuple[Path, ...],
                                          records: list[dict]) -> None:
    papers = list(iter_papers(corpus, limit=3))
    assert [p.id for p in papers] == [r["id"] for r in records[:3]]
    first = papers[0]
    assert isinstance(first.authors, tuple) and isinstance(first.categories, tuple)
    assert isinstance(first.year, int) and first.title and first.abstract
    assert Paper.from_record(first.to_record()) == first


def test_store_returns_full_records(index: BM25PaperIndex, records: list[dict]) -> None:
    store = index.store
    assert len(store) == SLICE
    for record in records[::250]:
        paper = store.get(record["id"])
        assert paper is not None
        assert paper == Paper.from_record(record)
        assert paper.abstract == " ".join(record["abstract"].split())
        assert list(paper.authors) == record["authors"]
        assert paper.venue == record.get("venue")
        assert record["id"] in store
        assert index.get(record["id"]) == paper
    assert store.get("arxiv:0000.00000") is None
    assert "no such paper" not in store
    assert store.get("x" * 500) is None
    assert 12345 not in store


def test_store_alone_uses_the_same_cache(datasets_dir: Path, index: BM25PaperIndex,
                                         cache_dir: Path) -> None:
    store = PaperStore.load_or_build(datasets_dir, cache_dir, limit=SLICE, progress=False)
    assert not store.built
    assert store.folder == index.store.folder
    assert store.get(index.store.paper_at(42).id) == index.store.paper_at(42)


def test_cite_label_and_short_authors() -> None:
    def paper(authors: tuple[str, ...], year: int | None = 2017) -> Paper:
        return Paper("x:1", "T", "A", authors, year, ("cs.CL",), "u", "arxiv")

    many = ("Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit")
    assert paper(many).cite_label() == "Vaswani et al., 2017"
    assert paper(many).short_authors() == "Ashish Vaswani, Noam Shazeer, Niki Parmar et al."
    assert paper(("Ada Lovelace", "Alan Turing"), 1950).cite_label() == "Lovelace and Turing, 1950"
    assert paper(("Thilo van Eimeren",), 2020).cite_label() == "van Eimeren, 2020"
    assert paper(("Martin Luther King Jr.",), 1963).cite_label() == "King, 1963"
    assert paper((), None).cite_label() == "Anonymous, n.d."


def test_snippet_is_short_and_around_the_query_words(records: list[dict]) -> None:
    checked = 0
    for record in records:
        paper = Paper.from_record(record)
        if len(paper.abstract) < 900:
            continue
        head = paper.abstract[:600].lower()  # words matching loosely only after character 600
        late = [m.group() for m in re.finditer(r"\b[A-Za-z]{7,}\b", paper.abstract)
                if m.start() >= 600 and m.group()[:5].lower() not in head]
        if not late:
            continue
        word = late[0]
        snippet = paper.snippet(word)
        assert word.lower() in snippet.lower(), (paper.id, word, snippet)
        assert len(snippet) <= 240 + 2
        assert snippet.startswith("…")
        checked += 1
        if checked == 20:
            break
    assert checked == 20
    paper = Paper.from_record(records[0])
    assert paper.snippet().startswith(paper.abstract[:50]) and paper.snippet().endswith("…")
    assert paper.snippet("zzzz qqqq") == paper.snippet()
    short = Paper("x:1", "T", "Tiny abstract.", (), None, (), "", "acl")
    assert short.snippet("tiny") == "Tiny abstract."


# --- the BM25 index --------------------------------------------------------------------------

def test_index_implements_the_interface(index: BM25PaperIndex) -> None:
    assert isinstance(index, PaperSearch)
    assert isinstance(ArxivLiveSearch(), PaperSearch)
    assert isinstance(index, TitleLookup)
    assert not isinstance(ArxivLiveSearch(), TitleLookup)  # what it can find is not known
    assert len(index) == SLICE
    hits = index.search("dependency parsing", k=5)
    assert len(hits) == 5 and all(isinstance(h, SearchHit) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    row = hits[0].to_row()
    assert set(row) == {"id", "title", "authors", "year", "snippet", "url"}
    assert row["id"] == hits[0].paper.id and row["url"] == hits[0].paper.url


def test_exact_titles_come_first(index: BM25PaperIndex, records: list[dict]) -> None:
    counts = _unique_titles(records)
    checked = 0
    for position in range(0, SLICE, 500):
        record = next(r for r in records[position:] if counts[normalize_title(r["title"])] == 1)
        hits = index.search(record["title"])
        assert hits and hits[0].paper.id == record["id"], (record["title"], hits[:3])
        checked += 1
    assert checked == SLICE // 500


def test_find_title_matches_normalised_titles_only(index: BM25PaperIndex,
                                                  records: list[dict]) -> None:
    for record in records[::1000]:
        title = record["title"]
        for variant in (title, title.upper(), re.sub(r"[^\w\s]", " ", title) + " ."):
            found = index.find_title(variant)
            assert found is not None and normalize_title(found.title) == normalize_title(title)
        assert index.find_title(title + " extra words") is None
    assert index.find_title("") is None and index.find_title(" ?! ") is None


def test_near_exact_titles_come_first(index: BM25PaperIndex, records: list[dict]) -> None:
    counts = _unique_titles(records)
    sample = [r for r in records[250::500] if counts[normalize_title(r["title"])] == 1]
    assert len(sample) >= 5
    for record in sample:
        title = record["title"]
        variants = [title.lower(), re.sub(r"[^\w\s]", " ", title), "  " + title.upper() + " "]
        for variant in variants:
            hits = index.search(variant, k=3)
            assert hits[0].paper.id == record["id"], (variant, hits)


def test_duplicate_titles_return_a_paper_of_that_title(index: BM25PaperIndex,
                                                       records: list[dict]) -> None:
    counts = _unique_titles(records)
    duplicated = [r for r in records if counts[normalize_title(r["title"])] > 1]
    for record in duplicated[:5]:
        hits = index.search(record["title"], k=10)
        same = {h.paper.id for h in hits if normalize_title(h.paper.title)
                == normalize_title(record["title"])}
        assert normalize_title(hits[0].paper.title) == normalize_title(record["title"])
        assert record["id"] in same


def _distinctive_words(records: list[dict], record: dict, count: int = 4) -> list[str]:
    """The ``count`` words of the abstract (not in the title) that fewest abstracts contain."""
    frequency: Counter = Counter()
    for other in records:
        frequency.update(set(re.findall(r"[a-z]{5,}", other["abstract"].lower())))
    title_words = set(re.findall(r"[a-z]+", record["title"].lower()))
    words = sorted({w for w in re.findall(r"[a-z]{5,}", record["abstract"].lower())
                    if w not in title_words}, key=lambda w: (frequency[w], w))
    return words[:count]


def test_topic_queries_find_the_paper(index: BM25PaperIndex, records: list[dict]) -> None:
    found = 0
    sample = records[100::700]
    for record in sample:
        words = _distinctive_words(records, record)
        hits = index.search(" ".join(words), k=10)
        ids = [h.paper.id for h in hits]
        assert record["id"] in ids, (words, [h.paper.title for h in hits])
        found += 1
        top = next(h for h in hits if h.paper.id == record["id"])
        assert any(w in top.snippet.lower() for w in words), (words, top.snippet)
    assert found == len(sample) >= 5


def test_topic_queries_return_relevant_papers(index: BM25PaperIndex) -> None:
    for query, stem in [("neural machine translation for low-resource languages", "translat"),
                        ("sentiment analysis of tweets", "sentiment"),
                        ("named entity recognition", "entit"),
                        ("speech recognition", "speech")]:
        hits = index.search(query, k=10)
        assert len(hits) == 10
        for hit in hits:
            text = (hit.paper.title + " " + hit.paper.abstract).lower()
            assert stem in text, (query, hit.paper.title)
        assert sum(stem in h.paper.title.lower() for h in hits) >= 5, query
        assert sum(any(w in h.snippet.lower() for w in query.lower().split() if len(w) > 4)
                   for h in hits) == 10


def test_blank_and_useless_queries(index: BM25PaperIndex) -> None:
    assert index.search("") == []
    assert index.search("   \n\t ") == []
    assert index.search("the of and is") == []
    assert index.search("dependency parsing", k=0) == []
    assert index.search("qwxzvbnm") == []
    assert len(index.search("parsing", k=10_000)) > 10


def test_cache_is_reused(index: BM25PaperIndex, cache_dir: Path, datasets_dir: Path,
                         use_shared_data: Path) -> None:
    builds = BM25PaperIndex.builds
    marker = index.folder / "bm25" / "index.json"
    stamp = marker.stat().st_mtime_ns
    again = BM25PaperIndex.load_or_build(cache_dir=cache_dir, limit=SLICE, progress=False)
    assert not again.built
    assert BM25PaperIndex.builds == builds
    assert again.folder == index.folder
    assert marker.stat().st_mtime_ns == stamp
    files = [datasets_dir / "related_work" / name for name in CORPUS_FILES]
    assert again.folder.name == f"index-{corpus_fingerprint(files, SLICE)}"
    assert again.folder.parent == cache_dir.resolve() / "related_work"
    query = index.store.paper_at(1234).title
    assert [h.paper.id for h in again.search(query)] == [h.paper.id for h in index.search(query)]


def _write_jsonl_gz(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("".join(json.dumps(r) + "\n" for r in records))


def _small_data_dir(root: Path, source: Path, records: list[dict],
                    extra: dict | None = None, supplement: list[dict] | None = None) -> Path:
    """A data directory whose corpus is ``records`` (+ ``extra``) in the first file and
    ``supplement`` (default: nothing) in the second; the tasks and rubric from ``source``."""
    folder = root / "related_work"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("test.json", "rubric.txt"):
        if not (folder / name).exists():
            shutil.copyfile(source / "related_work" / name, folder / name)
    _write_jsonl_gz(folder / BASE_FILE, records + ([extra] if extra else []))
    _write_jsonl_gz(folder / SUPPLEMENT_FILE, supplement or [])
    return root


def _later(path: Path, seconds: int = 5) -> None:
    """Move ``path``'s modification time ``seconds`` later (a coarse clock cannot hide it)."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + seconds * 1_000_000_000))


EXTRA = {"id": "test:extra", "title": "Zyxwvut Gardening Robots", "abstract":
         "We teach quadrupeds to prune bonsai trees.", "authors": ["Ada Lovelace"],
         "year": 2031, "categories": ["cs.RO"], "url": "", "source": "test"}


def test_changed_first_file_rebuilds(tmp_path: Path, datasets_dir: Path,
                                     records: list[dict]) -> None:
    data = _small_data_dir(tmp_path / "data", datasets_dir, records[:300])
    cache = tmp_path / "cache"
    first = BM25PaperIndex.load_or_build(data, cache, progress=False)
    assert first.built and len(first) == 300
    assert not BM25PaperIndex.load_or_build(data, cache, progress=False).built

    base = data / "related_work" / BASE_FILE
    _later(base)
    touched = BM25PaperIndex.load_or_build(data, cache, progress=False)
    assert touched.built and touched.folder != first.folder

    _small_data_dir(tmp_path / "data", datasets_dir, records[:300], EXTRA)
    changed = BM25PaperIndex.load_or_build(data, cache, progress=False)
    files = [data / "related_work" / name for name in CORPUS_FILES]
    assert changed.built and len(changed) == 301
    assert changed.folder == cache_folder(files, cache)
    assert changed.search("zyxwvut gardening robots")[0].paper.id == "test:extra"
    assert changed.search("pruning bonsai")[0].paper.id == "test:extra"
    assert "test:extra" not in {h.paper.id for h in first.search("zyxwvut gardening robots")}


def test_changed_supplement_rebuilds_and_unchanged_files_reuse_the_cache(
        tmp_path: Path, datasets_dir: Path, records: list[dict]) -> None:
    data = _small_data_dir(tmp_path / "data", datasets_dir, records[:200])
    cache = tmp_path / "cache"
    first = BM25PaperIndex.load_or_build(data, cache, progress=False)
    builds = BM25PaperIndex.builds
    reused = BM25PaperIndex.load_or_build(data, cache, progress=False)
    assert not reused.built and reused.folder == first.folder
    assert BM25PaperIndex.builds == builds

    # The supplement replaces the first paper and adds one: a new corpus version.
    replaced = {**records[0], "title": "Qwertyuiop Replaced Title", "abstract": "Corrected."}
    _small_data_dir(tmp_path / "data", datasets_dir, records[:200], supplement=[replaced, EXTRA])
    changed = BM25PaperIndex.load_or_build(data, cache, progress=False)
    assert changed.built and BM25PaperIndex.builds == builds + 1
    assert changed.folder != first.folder and len(changed) == 201
    assert changed.get(records[0]["id"]).title == "Qwertyuiop Replaced Title"
    assert changed.search("Qwertyuiop Replaced Title")[0].paper.id == records[0]["id"]
    assert changed.store.paper_at(len(changed) - 1).id == "test:extra"  # reading order
    assert first.get(records[0]["id"]).title == records[0]["title"]  # the old one is intact

    # Only the supplement's modification time changes: a new version too (no content hashing).
    _later(data / "related_work" / SUPPLEMENT_FILE)
    assert BM25PaperIndex.load_or_build(data, cache, progress=False).built
    assert not BM25PaperIndex.load_or_build(data, cache, progress=False).built
    store = PaperStore.load_or_build(data, cache, progress=False)
    assert not store.built and len(store) == 201


def test_missing_corpus_says_what_is_missing(tmp_path: Path, datasets_dir: Path,
                                            records: list[dict]) -> None:
    with pytest.raises(DataMissing, match="cogym-lab data download related_work") as caught:
        BM25PaperIndex.load_or_build(tmp_path, tmp_path / "cache", progress=False)
    assert "`cogym-lab data related_work --data-dir" in str(caught.value)  # lists them
    data = _small_data_dir(tmp_path / "data", datasets_dir, records[:10])
    (data / "related_work" / SUPPLEMENT_FILE).unlink()
    with pytest.raises(DataMissing, match=SUPPLEMENT_FILE) as caught:
        BM25PaperIndex.load_or_build(data, tmp_path / "cache", progress=False)
    assert f"related_work/{BASE_FILE} " not in str(caught.value)  # only the missing one


def test_interrupted_build_leaves_no_index(tmp_path: Path, datasets_dir: Path,
                                          records: list[dict]) -> None:
    data = _small_data_dir(tmp_path / "data", datasets_dir, records[:50])
    supplement = data / "related_work" / SUPPLEMENT_FILE
    with gzip.open(supplement, "at", encoding="utf-8") as out:
        out.write("{not json\n")
    with pytest.raises(ValueError):
        BM25PaperIndex.load_or_build(data, tmp_path / "cache", progress=False)
    files = [data / "related_work" / name for name in CORPUS_FILES]
    folder = cache_folder(files, tmp_path / "cache")
    assert not BM25PaperIndex.is_built(folder)
    assert not list(folder.parent.glob("**/*.tmp-*"))


# --- the arXiv provider ----------------------------------------------------------------------

def _closed_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_arxiv_fails_clearly_offline() -> None:
    live = ArxivLiveSearch(f"http://127.0.0.1:{_closed_loopback_port()}/api/query", timeout=2)
    with pytest.raises(SearchUnavailable, match="network is unreachable") as caught:
        live.search("attention is all you need")
    assert "local index" in str(caught.value)
    with pytest.raises(SearchUnavailable, match="local index"):
        live.get("arxiv:1706.03762")
    assert live.search("   ") == []


_FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title>ArXiv Query</title>
  <entry>
    <id>http://arxiv.org/abs/1706.03762v7</id>
    <published>2017-06-12T17:57:34Z</published>
    <title>Attention Is All
      You Need</title>
    <summary>  The dominant sequence transduction models are based on complex recurrent or
      convolutional neural networks. We propose the Transformer, based solely on attention.
    </summary>
    <author><name>Ashish Vaswani</name></author>
    <author><name>Noam Shazeer</name></author>
    <author><name>Niki Parmar</name></author>
    <arxiv:primary_category term="cs.CL"/>
    <category term="cs.LG"/><category term="cs.CL"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/cs/0112017v1</id>
    <published>2001-12-17T00:00:00Z</published>
    <title>An Old-Style Identifier</title>
    <summary>Short.</summary>
    <author><name>Some One</name></author>
    <category term="cs.AI"/>
  </entry>
</feed>"""


@pytest.fixture
def fake_arxiv():
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            if "status503" in self.path:
                self.send_error(503, "busy")
                return
            body = _FEED.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/atom+xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/query", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_arxiv_parses_the_atom_feed(fake_arxiv) -> None:
    url, requests = fake_arxiv
    live = ArxivLiveSearch(url, timeout=5)
    hits = live.search("attention transformer", k=5)
    assert "search_query=all%3Aattention+AND+all%3Atransformer" in requests[-1]
    assert "max_results=5" in requests[-1]
    assert [h.paper.id for h in hits] == ["arxiv:1706.03762", "arxiv:cs/0112017"]
    paper = hits[0].paper
    assert paper.title == "Attention Is All You Need"
    assert paper.authors == ("Ashish Vaswani", "Noam Shazeer", "Niki Parmar")
    assert paper.year == 2017 and paper.categories == ("cs.CL", "cs.LG")
    assert paper.url == "https://arxiv.org/abs/1706.03762"
    assert paper.cite_label() == "Vaswani et al., 2017"
    assert hits[0].score > hits[1].score
    assert live.get("arxiv:1706.03762") == paper
    assert "id_list=1706.03762" in requests[-1]


def test_arxiv_http_error_is_unavailable(fake_arxiv) -> None:
    url, _requests = fake_arxiv
    with pytest.raises(SearchUnavailable, match="503"):
        ArxivLiveSearch(url + "/status503").search("anything")


def test_scores_are_finite(index: BM25PaperIndex) -> None:
    for hit in index.search("graph neural networks for text classification", k=20):
        assert math.isfinite(hit.score) and hit.score > 0
