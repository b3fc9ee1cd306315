"""Reading the Related Work corpus: both files in order, the supersede rule, categories as lists,
and the title coverage of the papers the tasks ask to cite.

Small corpora written to temporary files pin the rule down; one test reads the whole shared
corpus (about twenty seconds) and checks the published figures: 442,299 papers, and 55 then 105
of the 237 cited titles."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from cogym_lab.envs.related_work.corpus import (
    BASE_FILE,
    CORPUS_FILES,
    SUPPLEMENT_FILE,
    corpus_files,
    corpus_fingerprint,
    count_papers,
    iter_papers,
    iter_records,
    project_records,
    surviving_records,
    title_of_line,
)
from cogym_lab.envs.related_work.coverage import cited_papers, title_coverage
from cogym_lab.envs.related_work.instances import load_tasks
from cogym_lab.envs.related_work.papers import Paper, normalize_categories
from cogym_lab.envs.related_work.titles import normalize_title


def paper(id: str, title: str = "", **fields) -> dict:
    return {"id": id, "title": title or f"Paper {id}", "abstract": f"About {id}.",
            "authors": ["Ada Lovelace"], "year": 2021, "categories": ["cs.CL"], "url": "",
            "source": "test", **fields}


def write(path: Path, records: list[dict], *, gzipped: bool = True, blank_lines: bool = False
          ) -> Path:
    text = "".join(json.dumps(r) + ("\n\n" if blank_lines else "\n") for r in records)
    if gzipped:
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    base = write(tmp_path / BASE_FILE, [
        paper("a"), paper("b", "Old B"), paper("c"), paper("d", "First D"), paper("d", "Second D"),
        paper("e"),
    ], blank_lines=True)
    supplement = write(tmp_path / SUPPLEMENT_FILE, [
        paper("b", "New B"),  # replaces b
        paper("x", supersedes=["c", "zzz", "x"]),  # removes c; an unknown id and itself: nothing
        paper("y", supersedes=["later"]),  # "later" is read after y: it stays
        paper("later"),
        paper("e2", supersedes=["e"], categories="cs.LG stat.ML"),
    ], gzipped=False)
    return base, supplement


def test_the_supersede_rule(two_files: tuple[Path, Path]) -> None:
    records = list(iter_records(two_files))
    assert [r["id"] for r in records] == ["a", "d", "b", "x", "y", "later", "e2"]
    by_id = {r["id"]: r for r in records}
    assert by_id["b"]["title"] == "New B"  # the later file's record, at its own place
    assert by_id["d"]["title"] == "Second D"  # a repeat inside one file: the later one wins
    assert by_id["x"]["supersedes"] == ["c", "zzz", "x"]  # kept as the file gives it
    assert by_id["e2"]["categories"] == ["cs.LG", "stat.ML"]
    assert count_papers(two_files) == 7
    assert surviving_records(two_files).tolist() == [
        True, False, False, False, True, False,  # a, b (replaced), c (removed), d, d, e (removed)
        True, True, True, True, True]


def test_limits_single_files_and_papers(two_files: tuple[Path, Path]) -> None:
    base, supplement = two_files
    assert [r["id"] for r in iter_records(two_files, limit=3)] == ["a", "d", "b"]
    assert list(iter_records(two_files, limit=0)) == []
    assert [r["id"] for r in iter_records(base)] == ["a", "b", "c", "d", "e"]  # one file alone
    assert [r["id"] for r in iter_records(supplement)] == ["b", "x", "y", "later", "e2"]
    papers = list(iter_papers(two_files, limit=2))
    assert all(isinstance(p, Paper) for p in papers) and papers[1].title == "Second D"


def test_a_light_read_projects_the_same_survivors(two_files: tuple[Path, Path]) -> None:
    for files in (two_files, two_files[0], two_files[1]):
        titles = [r["title"] for r in iter_records(files)]
        assert project_records(files, title_of_line) == titles


def test_title_of_line_reads_escapes_and_any_layout() -> None:
    for title in ['Plain title', 'A "quoted" word', 'Back\\slash and \u00e9t\u00e9', 'Naïve — ✓',
                  'Tab\there', '']:
        line = (json.dumps(paper("x", title=title)) + "\n").encode()
        assert title_of_line(line) == (title or "Paper x")
        assert title_of_line(json.dumps(paper("x", title=title), ensure_ascii=False).encode()) \
            == (title or "Paper x")
    reordered = json.dumps({"title": "Title first", "id": "z"}).encode()
    assert title_of_line(reordered) == "Title first"
    assert title_of_line(json.dumps({"id": "z"}).encode()) == ""


def test_fingerprint_covers_every_file(two_files: tuple[Path, Path], tmp_path: Path) -> None:
    base, supplement = two_files
    first = corpus_fingerprint(two_files)
    assert corpus_fingerprint(two_files) == first
    assert corpus_fingerprint(two_files, limit=10) == f"{first}-first10"
    assert corpus_fingerprint(base) != first
    write(supplement, [paper("b", "Newer B")], gzipped=False)
    assert corpus_fingerprint(two_files) != first
    assert [r["title"] for r in iter_records(two_files)][-1] == "Newer B"  # not a stale answer


def test_categories_are_always_lists(tmp_path: Path) -> None:
    assert normalize_categories(["cs.CL", " cs.LG ", "", "cs.CL"]) == ["cs.CL", "cs.LG"]
    assert normalize_categories("cs.CL cs.LG") == ["cs.CL", "cs.LG"]
    assert normalize_categories("hep-th q-bio.NC") == ["hep-th", "q-bio.NC"]
    assert normalize_categories("Computational Geometry") == ["Computational Geometry"]
    assert normalize_categories("Distributed, Parallel, and Cluster Computing") == [
        "Distributed, Parallel, and Cluster Computing"]
    assert normalize_categories("cs.AI") == ["cs.AI"]
    assert normalize_categories(None) == [] and normalize_categories("") == []
    corpus = write(tmp_path / "c.jsonl.gz", [
        paper("s", categories="cs.CL"), paper("n", categories=None), paper("m")])
    records = list(iter_records(corpus))
    assert [r["categories"] for r in records] == [["cs.CL"], [], ["cs.CL"]]
    assert Paper.from_record({**paper("t"), "categories": "cs.CV cs.RO"}).categories == (
        "cs.CV", "cs.RO")


def test_a_numeric_id_is_read_as_text(tmp_path: Path) -> None:
    corpus = write(tmp_path / "n.jsonl.gz", [{**paper("x"), "id": 1001.021},
                                             paper("y", supersedes=["1001.021"])])
    assert [r["id"] for r in iter_records(corpus)] == ["y"]


def test_the_shared_corpus(datasets_dir: Path) -> None:
    """The whole corpus through the reader: the published paper count, unique ids, categories
    as lists, and the coverage of the cited titles before and after the supplement."""
    files = corpus_files(datasets_dir)
    assert [f.name for f in files] == list(CORPUS_FILES)
    ids: set[str] = set()
    titles: set[str] = set()
    count = 0
    for record in iter_records(files):
        count += 1
        ids.add(record["id"])
        titles.add(normalize_title(record["title"]))
        assert isinstance(record["categories"], list)
    assert count == len(ids) == 442_299

    tasks = load_tasks(datasets_dir)
    named = cited_papers(tasks)
    assert len(named) == 237
    assert sum(normalize_title(title) in titles for _, title in named) == 105
    before = title_coverage(tasks, files[:1])
    assert (before.papers, before.found, before.total) == (345_827, 55, 237)
