"""``cogym-lab data build-corpus``: from small dumps the tests write to a corpus that
``cogym-lab data`` reports present (and built locally) and that the real reader and search read;
run through click and as a real process with a new HOME, as a newcomer would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.envs.related_work.corpus import CORPUS_FILES, count_papers, iter_records
from cogym_lab.envs.related_work.search import BM25PaperIndex
from tests.support.corpus_dumps import ACL_EXPECTED, ARXIV_EXPECTED, write_acl, write_arxiv


def _dumps(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return write_arxiv(folder / "arxiv-metadata-oai-snapshot.json.gz"), write_acl(
        folder / "anthology+abstracts.bib")


def _with_tasks(data: Path, source: Path) -> None:
    """The tasks and rubric beside a built corpus: the rest of the Related Work data."""
    for name in ("test.json", "rubric.txt"):
        shutil.copyfile(source / "related_work" / name, data / "related_work" / name)


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_build_corpus_through_click(tmp_path: Path, datasets_dir: Path) -> None:
    arxiv, acl = _dumps(tmp_path / "dumps")
    data = tmp_path / "data"
    result = _invoke("data", "build-corpus", "--arxiv", str(arxiv), "--acl", str(acl),
                     "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    assert "arXiv (arxiv-metadata-oai-snapshot.json.gz): 4 papers kept of 7 records" in (
        result.output)
    assert "ACL Anthology (anthology+abstracts.bib): 3 papers kept of 6 records" in result.output
    assert "wrote papers.jsonl.gz: 5 records" in result.output
    assert "wrote papers-2020-2024-supplement.jsonl.gz: 2 records" in result.output
    files = [data / "related_work" / name for name in CORPUS_FILES]
    assert count_papers(files) == 7
    assert {r["id"] for r in iter_records(files)} == set(ARXIV_EXPECTED) | set(ACL_EXPECTED)

    # Again without --force: refused, the corpus untouched.
    before = [f.read_bytes() for f in files]
    again = _invoke("data", "build-corpus", "--arxiv", str(arxiv), "--data-dir", str(data))
    assert again.exit_code == 1
    assert "already in" in again.output and "--force" in again.output
    assert [f.read_bytes() for f in files] == before

    # `data --data-dir X build-corpus` is the same as giving it to the subcommand.
    forced = _invoke("data", "--data-dir", str(data), "build-corpus", "--acl", str(acl),
                     "--force")
    assert forced.exit_code == 0, forced.output
    assert {r["id"] for r in iter_records(files)} == set(ACL_EXPECTED)

    _with_tasks(data, datasets_dir)
    report = _invoke("data", "--task", "related_work", "--data-dir", str(data))
    assert report.exit_code == 0, report.output
    assert "3 papers." in report.output
    assert "Built locally from public dumps: ACL Anthology (anthology+abstracts.bib) on " in (
        report.output)
    assert "All 4 item(s) present." in report.output


def test_build_corpus_errors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    nothing = _invoke("data", "build-corpus", "--data-dir", str(data))
    assert nothing.exit_code == 2
    assert "Give at least one dump: --arxiv PATH and/or --acl PATH." in nothing.output
    missing = _invoke("data", "build-corpus", "--arxiv", str(tmp_path / "absent.json.gz"),
                      "--data-dir", str(data))
    assert missing.exit_code == 1
    assert f"Error: The dump {tmp_path / 'absent.json.gz'} does not exist." in missing.output
    broken = tmp_path / "broken.bib.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    unreadable = _invoke("data", "build-corpus", "--acl", str(broken), "--data-dir", str(data))
    assert unreadable.exit_code == 1
    assert f"Error: Cannot read the dump {broken} to its end" in unreadable.output
    assert not any((data / "related_work").glob("*.gz"))


def test_missing_corpus_names_the_build_command(tmp_path: Path, datasets_dir: Path) -> None:
    data = tmp_path / "data"
    (data / "related_work").mkdir(parents=True)
    _with_tasks(data, datasets_dir)
    result = _invoke("data", "--task", "related_work", "--data-dir", str(data))
    assert result.exit_code == 1
    assert "no single download" not in result.output
    assert ("Build it: run `cogym-lab data build-corpus --arxiv <arxiv-metadata-oai-snapshot"
            f".json> --acl <anthology+abstracts.bib.gz> --data-dir {data}`") in result.output
    assert "Build the corpus from public dumps: cogym-lab data build-corpus" in result.output
    rows = [line for line in result.output.splitlines() if "papers" in line and "│" in line]
    assert len(rows) == 2 and all("missing" in row and "build" in row for row in rows)


def test_a_newcomer_builds_the_corpus_and_searches_it(tmp_path: Path,
                                                      datasets_dir: Path) -> None:
    """As a person would: the installed command, a fresh HOME, no COGYM_DATA, a new folder."""
    arxiv, acl = _dumps(tmp_path / "dumps")
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "new data"
    env = {key: value for key, value in os.environ.items()
           if key not in ("COGYM_DATA", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), COLUMNS="120")
    command = str(Path(sys.executable).parent / "cogym-lab")
    built = subprocess.run(
        [command, "data", "build-corpus", "--arxiv", str(arxiv), "--acl", str(acl),
         "--data-dir", str(data)], capture_output=True, text=True, env=env, timeout=120,
        check=False)
    assert built.returncode == 0, built.stderr
    assert "4 papers kept of 7 records" in built.stdout
    assert "3 papers kept of 6 records" in built.stdout
    assert not (home / ".cache").exists()  # --data-dir was used, not the default folder

    _with_tasks(data, datasets_dir)
    report = subprocess.run(
        [command, "data", "--task", "related_work", "--data-dir", str(data), "--prepare"],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "7 papers." in report.stdout
    assert "Built locally from public dumps: arXiv (arxiv-metadata-oai-snapshot.json.gz), ACL " \
           "Anthology (anthology+abstracts.bib) on " in report.stdout

    # The index --prepare built is in the new HOME's cache, and finds papers by title words.
    index = BM25PaperIndex.load_or_build(data, home / ".cache" / "cogym_lab", progress=False)
    assert not index.built
    assert index.search("zephyrine")[0].paper.id == "arxiv:2106.01234"
    assert index.search("Quillwort")[0].paper.title.startswith("Über BERT: Café-style")
