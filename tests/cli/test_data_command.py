"""`cogym-lab data` for the Related Work corpus: both corpus files (present or missing, size), the
paper count after the supersede rule, and the title coverage of the papers the tasks ask to cite.

One test reads the whole shared corpus (about ten seconds); the others use small corpora."""

from __future__ import annotations

import gzip
import json
import shlex
import shutil
from pathlib import Path

from click.testing import CliRunner

from cogym_lab.cli.data_command import data
from cogym_lab.datasets import format_size, reading_from
from cogym_lab.envs import make_env
from cogym_lab.envs.related_work.corpus import BASE_FILE, CORPUS_FILES, SUPPLEMENT_FILE
from cogym_lab.envs.related_work.coverage import title_coverage
from cogym_lab.envs.related_work.env import RelatedWorkEnv
from cogym_lab.envs.related_work.instances import load_tasks
from cogym_lab.magics import build_parser
from tests.support.paths import REPO_ROOT


def _paper(id_: str, title: str, **fields) -> dict:
    return {"id": id_, "title": title, "abstract": "An abstract.", "authors": [], "year": 2023,
            "categories": ["cs.AI"], "url": "", "source": "test", **fields}


def _write(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("".join(json.dumps(r) + "\n" for r in records))


def _data_dir(root: Path, source: Path, base: list[dict] | None,
              supplement: list[dict] | None) -> Path:
    """The real tasks and rubric, with the given corpus files (None: the file is absent)."""
    folder = root / "related_work"
    folder.mkdir(parents=True)
    for name in ("test.json", "rubric.txt"):
        shutil.copyfile(source / "related_work" / name, folder / name)
    for name, records in ((BASE_FILE, base), (SUPPLEMENT_FILE, supplement)):
        if records is not None:
            _write(folder / name, records)
    return root


def _run(*args: str):
    return CliRunner().invoke(data, ["--task", "related_work", *args])


def test_the_shared_corpus_is_reported_with_its_coverage(datasets_dir: Path) -> None:
    result = _run("--data-dir", str(datasets_dir))
    assert result.exit_code == 0, result.output
    output = result.output
    for name in CORPUS_FILES:
        size = (datasets_dir / "related_work" / name).stat().st_size
        row = next(line for line in output.splitlines() if name in line and "present" in line)
        assert format_size(size) in row
    assert f"{BASE_FILE}, then {SUPPLEMENT_FILE}" in output
    assert "442,299 papers." in output
    assert "105 of 237 (44%) are in the corpus by normalised exact title" in output
    assert "the other 132 are not findable offline" in output


def test_coverage_of_a_small_corpus_follows_the_supersede_rule(tmp_path: Path,
                                                               datasets_dir: Path) -> None:
    tasks = load_tasks(datasets_dir)
    base = [_paper("a", tasks[15].cited_titles[0]), _paper("b", tasks[2].cited_titles[0]),
            _paper("c", "Unrelated")]
    supplement = [_paper("d", tasks[26].cited_titles[1].lower()),  # case does not matter
                  _paper("e", "A correction", supersedes=["b"])]  # task 2's paper is gone
    root = _data_dir(tmp_path / "data", datasets_dir, base, supplement)
    result = _run("--data-dir", str(root))
    assert result.exit_code == 0, result.output
    assert "4 papers." in result.output
    assert "2 of 237 (1%) are in the corpus" in result.output

    files = [root / "related_work" / name for name in CORPUS_FILES]
    coverage = title_coverage(tasks, files)
    assert (coverage.papers, coverage.found, coverage.total) == (4, 2, 237)
    assert {(c.task, c.title) for c in coverage.cited if c.found} == {
        (15, tasks[15].cited_titles[0]), (26, tasks[26].cited_titles[1])}
    assert (2, tasks[2].cited_titles[0]) in {(c.task, c.title) for c in coverage.missing}
    assert (89, tasks[89].cited_titles[1]) in {(c.task, c.title) for c in coverage.missing}
    # The first file alone still has task 2's paper, which task 89 names too ("RecSSD: Near
    # Data Processing ..."): every entry counts.
    before = title_coverage(tasks, files[:1])
    assert (before.papers, before.found) == (3, 3)


def test_a_missing_supplement_is_reported(tmp_path: Path, datasets_dir: Path) -> None:
    root = _data_dir(tmp_path / "data", datasets_dir, [_paper("a", "A paper")], None)
    result = _run("--data-dir", str(root))
    assert result.exit_code == 1
    output = result.output
    row = next(line for line in output.splitlines() if SUPPLEMENT_FILE in line)
    assert "missing" in row
    assert f"Paper count and title coverage need {SUPPLEMENT_FILE} (missing)." in output
    assert f"related_work/{SUPPLEMENT_FILE}" in output.split("How to obtain")[1]
    assert "1 of 4 item(s) missing." in output


def test_no_coverage_skips_reading_the_corpus(tmp_path: Path, datasets_dir: Path) -> None:
    root = _data_dir(tmp_path / "data", datasets_dir, [_paper("a", "A paper")], [])
    result = _run("--data-dir", str(root), "--no-coverage")
    assert result.exit_code == 0, result.output
    assert SUPPLEMENT_FILE in result.output and "Related Work corpus" not in result.output


def test_prepare_builds_the_paper_index_once(tmp_path: Path, datasets_dir: Path,
                                             monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    papers = [_paper(f"p{i}", f"Paper number {i} on graphs") for i in range(40)]
    root = _data_dir(tmp_path / "data", datasets_dir, papers, [])
    first = _run("--data-dir", str(root), "--no-coverage", "--prepare")
    assert first.exit_code == 0, first.output
    assert "paper search index over 40 papers built" in first.output
    assert "on disk: " in first.output and "the papers' text " in first.output
    index_folders = list((tmp_path / "cache").rglob("index.json"))
    assert len(index_folders) == 1  # in the user cache, where sessions look for it
    again = _run("--data-dir", str(root), "--no-coverage", "--prepare")
    assert "paper search index over 40 papers already built" in again.output


def test_prepare_skips_a_task_whose_data_is_missing(tmp_path: Path, datasets_dir: Path,
                                                    monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _data_dir(tmp_path / "data", datasets_dir, None, None)
    result = _run("--data-dir", str(root), "--no-coverage", "--prepare")
    assert result.exit_code == 1 and "index" not in result.output
    assert not (tmp_path / "cache").exists()


def _example_session_lines() -> list[str]:
    """Every ``%cogym new related_work ...`` line of the example notebooks."""
    lines = []
    for notebook in sorted((REPO_ROOT / "examples").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                lines += [line.strip() for line in "".join(cell["source"]).splitlines()
                          if line.startswith("%cogym new related_work")]
    return lines


def test_prepare_builds_the_one_index_the_examples_open(tmp_path: Path, datasets_dir: Path,
                                                        monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    papers = [_paper(f"p{i}", f"Paper number {i} on graphs") for i in range(30)]
    root = _data_dir(tmp_path / "data", datasets_dir, papers, [])
    # `data prepare TASK` is `data --task TASK --prepare`; off a terminal, progress is lines.
    result = CliRunner().invoke(data, ["prepare", "related_work", "--data-dir", str(root),
                                       "--no-coverage"])
    assert result.exit_code == 0, result.output
    assert "tokenizing: done (30 papers, " in result.output, result.output
    built = [path.parent.parent for path in (tmp_path / "cache").rglob("bm25/index.json")]
    assert built == [RelatedWorkEnv.prepared_index_folder(root)]

    examples = _example_session_lines()
    assert len(examples) >= 2, examples  # the Related Work and the plans notebooks
    for line in examples:
        arguments = build_parser().parse_args(shlex.split(line.removeprefix("%cogym ")))
        with reading_from(root):  # as a session built for this data folder
            env = make_env("related_work", instance=arguments.instance or 0,
                           data_dir=str(root), **dict(arguments.env_arg))
        assert env.index_folder() == built[0], line


def test_a_limited_index_is_another_index(tmp_path: Path, datasets_dir: Path,
                                          monkeypatch) -> None:
    """``index_limit`` keeps fewer papers, so it cannot share the whole corpus's folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _data_dir(tmp_path / "data", datasets_dir, [_paper("a", "A paper")], [])
    with reading_from(root):
        limited = make_env("related_work", instance=0, data_dir=str(root), index_limit=5000)
        whole = make_env("related_work", instance=0, data_dir=str(root))
    assert limited.index_folder() != RelatedWorkEnv.prepared_index_folder(root)
    assert whole.index_folder() == RelatedWorkEnv.prepared_index_folder(root)


def test_download_task_is_the_download_flag_for_that_task(tmp_path: Path) -> None:
    words = CliRunner().invoke(data, ["download", "related_work", "--data-dir", str(tmp_path),
                                      "--no-coverage"])
    flags = CliRunner().invoke(data, ["--task", "related_work", "--download", "--data-dir",
                                      str(tmp_path), "--no-coverage"])
    assert words.exit_code == flags.exit_code == 1  # its files are placed by hand
    assert words.output == flags.output
    assert "travel_planning" not in words.output
    wrong = CliRunner().invoke(data, ["download", "no_such_task"])
    assert wrong.exit_code == 2 and "'no_such_task' is not one of" in wrong.output
    unknown = CliRunner().invoke(data, ["no_such_task"])
    assert unknown.exit_code == 2
    assert "'no_such_task' is not a task with data" in unknown.output
    assert "download, prepare, build-corpus" in unknown.output
