"""Building the Related Work corpus from public dumps (``corpus_build``): the written files, read
back through the real reader and searched through a real index built on them."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from cogym_lab.datasets import DataMissing
from cogym_lab.envs.related_work import acl_dump
from cogym_lab.envs.related_work.corpus import (
    BASE_FILE,
    CORPUS_FILES,
    SUPPLEMENT_FILE,
    corpus_files,
    count_papers,
    iter_records,
    read_lines,
)
from cogym_lab.envs.related_work.corpus_build import (
    BUILD_RECORD,
    DumpError,
    build_corpus,
    built_from,
)
from cogym_lab.envs.related_work.dumps import how_many
from cogym_lab.envs.related_work.search import BM25PaperIndex
from tests.support.corpus_dumps import (
    ACL_EXPECTED,
    ARXIV_EXPECTED,
    HOSTILE_TITLE_CLEANED,
    write_acl,
    write_arxiv,
)


def _dumps(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return write_arxiv(folder / "arxiv-metadata.json.gz"), write_acl(folder / "anthology.bib")


def _records(root: Path) -> dict[str, dict]:
    files = [root / "related_work" / name for name in CORPUS_FILES]
    return {r["id"]: r for r in iter_records(files)}


def test_build_keeps_cs_arxiv_and_recent_acl_papers_cleaned(tmp_path: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    build = build_corpus(tmp_path / "data", arxiv=arxiv, acl=acl)

    records = _records(tmp_path / "data")
    assert set(records) == set(ARXIV_EXPECTED) | set(ACL_EXPECTED)
    for paper_id, expected in {**ARXIV_EXPECTED, **ACL_EXPECTED}.items():
        record = records[paper_id]
        for key, value in expected.items():
            assert record[key] == value, (paper_id, key)
    zephyr = records["arxiv:2106.01234"]
    assert zephyr["abstract"] == "An abstract over two lines."
    assert zephyr["url"] == "https://arxiv.org/abs/2106.01234"
    assert zephyr["source"] == "arxiv" and "venue" not in zephyr
    uber = records["acl:2023.acl-long.1"]
    assert uber["abstract"] == ("We study things with $x^2$, 50% of “quoted” words and @ a "
                                "line that starts with an at sign.")
    assert uber["source"] == "acl"
    assert count_papers([tmp_path / "data" / "related_work" / n for n in CORPUS_FILES]) == 7

    arxiv_counts, acl_counts = build.sources
    assert (arxiv_counts.read, arxiv_counts.kept) == (7, 4)  # the broken line is read, not kept
    assert arxiv_counts.left_out["not computer science"] == 2
    assert arxiv_counts.left_out["not valid JSON"] == 1
    assert (acl_counts.read, acl_counts.kept) == (6, 3)
    assert acl_counts.left_out == {"proceedings volumes": 1, "without a title": 1,
                                   "before 2016 or without a year": 1}
    summary = "\n".join(build.summary())
    assert "arXiv (arxiv-metadata.json.gz): 4 papers kept of 7 records" in summary
    assert "ACL Anthology (anthology.bib): 3 papers kept of 6 records" in summary


def test_arxiv_2020_to_2024_go_to_the_supplement(tmp_path: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    build = build_corpus(tmp_path / "data", arxiv=arxiv, acl=acl)
    folder = tmp_path / "data" / "related_work"
    ids = {name: [json.loads(line)["id"] for line in read_lines(folder / name)]
           for name in CORPUS_FILES}
    assert sorted(ids[SUPPLEMENT_FILE]) == ["arxiv:2106.01234", "arxiv:2203.00042"]
    assert ids[BASE_FILE] == ["arxiv:0704.0002", "arxiv:2501.00007", "acl:2023.acl-long.1",
                              "acl:Q19-1001", "acl:keyed-only-2018"]
    assert build.written == {BASE_FILE: 5, SUPPLEMENT_FILE: 2}
    for name in CORPUS_FILES:  # real gzip files, one JSON object a line, id first
        with gzip.open(folder / name, "rb") as handle:
            assert all(line.startswith(b'{"id": "') for line in handle)


def test_hostile_titles_survive_writing_reading_and_searching(tmp_path: Path,
                                                             datasets_dir: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    data = tmp_path / "data"
    build_corpus(data, arxiv=arxiv, acl=acl)
    for name in ("test.json", "rubric.txt"):  # the whole task's data, as a session needs it
        shutil.copyfile(datasets_dir / "related_work" / name, data / "related_work" / name)
    written = gzip.decompress((data / "related_work" / SUPPLEMENT_FILE).read_bytes())
    assert b"\x00" not in written and "\u2028".encode() not in written

    index = BM25PaperIndex.load_or_build(data, tmp_path / "cache", progress=False)
    assert len(index) == 7
    assert index.search("Quillwort")[0].paper.id == "acl:2023.acl-long.1"
    assert index.search("zephyrine transformers")[0].paper.id == "arxiv:2106.01234"
    assert index.search("heliotrope")[0].paper.id == "acl:Q19-1001"
    hostile = index.find_title(HOSTILE_TITLE_CLEANED)
    assert hostile is not None and hostile.id == "arxiv:2203.00042"
    assert index.find_title("Über BERT: Café-style Quillwort Models – a study of naïve Spanish")
    assert corpus_files(data) == tuple(data / "related_work" / n for n in CORPUS_FILES)


def test_one_dump_is_enough_and_plain_or_gzip_read_alike(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    plain = write_arxiv(dumps / "arxiv.json")
    build_corpus(tmp_path / "plain", arxiv=plain)
    build_corpus(tmp_path / "gz", arxiv=write_arxiv(dumps / "arxiv.json.gz"))
    assert _records(tmp_path / "plain") == _records(tmp_path / "gz")
    assert set(_records(tmp_path / "plain")) == set(ARXIV_EXPECTED)
    for name in CORPUS_FILES:  # the same dump gives the same bytes (no timestamp inside)
        assert ((tmp_path / "plain" / "related_work" / name).read_bytes()
                == (tmp_path / "gz" / "related_work" / name).read_bytes())

    only_acl = build_corpus(tmp_path / "acl", acl=write_acl(dumps / "anthology.bib.gz"))
    assert set(_records(tmp_path / "acl")) == set(ACL_EXPECTED)
    assert only_acl.written == {BASE_FILE: 3, SUPPLEMENT_FILE: 0}
    with pytest.raises(ValueError, match="at least one dump"):
        build_corpus(tmp_path / "none")


def test_bibtex_read_in_small_chunks_gives_the_same_papers(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    acl = write_acl(tmp_path / "anthology.bib")
    whole = list(acl_dump.read_acl(acl))
    monkeypatch.setattr(acl_dump, "_ENTRIES_PER_CHUNK", 1)
    assert list(acl_dump.read_acl(acl)) == whole


def test_existing_corpus_is_kept_unless_forced(tmp_path: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    data = tmp_path / "data"
    build_corpus(data, acl=acl)
    folder = data / "related_work"
    before = {name: (folder / name).read_bytes() for name in CORPUS_FILES}
    with pytest.raises(FileExistsError, match="--force"):
        build_corpus(data, arxiv=arxiv)
    assert {name: (folder / name).read_bytes() for name in CORPUS_FILES} == before

    build_corpus(data, arxiv=arxiv, force=True)
    assert set(_records(data)) == set(ARXIV_EXPECTED)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*CORPUS_FILES, BUILD_RECORD])


def test_a_dump_that_fails_part_way_leaves_the_old_corpus(tmp_path: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    data = tmp_path / "data"
    build_corpus(data, acl=acl)
    folder = data / "related_work"
    before = {name: (folder / name).read_bytes() for name in CORPUS_FILES}
    cut = tmp_path / "dumps" / "cut.json.gz"
    cut.write_bytes(arxiv.read_bytes()[:-20])  # a download that stopped early

    with pytest.raises(DumpError, match="ends early"):
        build_corpus(data, arxiv=cut, force=True)
    assert {name: (folder / name).read_bytes() for name in CORPUS_FILES} == before
    assert sorted(p.name for p in folder.iterdir()) == sorted([*CORPUS_FILES, BUILD_RECORD])


def test_missing_or_unreadable_dumps_fail_before_writing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with pytest.raises(DumpError, match="does not exist"):
        build_corpus(data, arxiv=tmp_path / "nowhere.json.gz")
    with pytest.raises(DumpError, match="is not a file"):
        build_corpus(data, acl=tmp_path)
    assert not (data / "related_work").exists()


def test_the_build_record_says_how_the_files_were_made(tmp_path: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    data = tmp_path / "data"
    build_corpus(data, arxiv=arxiv, acl=acl)
    folder = data / "related_work"
    said = built_from(folder)
    assert said is not None
    assert said.startswith("arXiv (arxiv-metadata.json.gz), ACL Anthology (anthology.bib) on ")
    # Files put there otherwise (the released corpus, say) are not called built.
    with gzip.open(folder / BASE_FILE, "at", encoding="utf-8") as out:
        out.write(json.dumps({"id": "x:1", "title": "Another paper"}) + "\n")
    assert built_from(folder) is None
    assert built_from(tmp_path) is None


def test_the_search_names_the_build_command_when_the_corpus_is_missing(tmp_path: Path) -> None:
    with pytest.raises(DataMissing) as raised:
        corpus_files(tmp_path)
    message = str(raised.value)
    assert "Build the 2 missing files from arXiv metadata / ACL Anthology with `cogym-lab data build-corpus --arxiv " in message
    assert "no single download" not in message


def test_the_summary_counts_one_paper_in_the_singular() -> None:
    assert how_many(1, "paper") == "1 paper" and how_many(12_000, "record") == "12,000 records"
