"""The Related Work sample that ships inside the package: a newcomer with no data directory runs
sessions, searches and `cogym-lab run` from it; a chosen folder is never replaced by it; its
tasks and papers are the full data's own; its licences are there; and the maintainer script
that makes it chooses the papers it says it does, the same bytes every time.

The script is run here on a small corpus, not the full one: over the full corpus it first
builds the whole search index (about 70 s on two idle cores, several minutes on a busy machine)
and then reads 500,000 records. Its choice of papers on the full corpus is checked the other
way round: every committed record is the full corpus's record of that id, in the same file,
and the sample holds every paper the tasks ask to cite that the full corpus holds."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.datasets import DATA_ENV_VAR, DataMissing, is_sample
from cogym_lab.envs import make_env
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.related_work.corpus import (
    BASE_FILE,
    CORPUS_FILES,
    SUPPLEMENT_FILE,
    corpus_files,
    read_lines,
)
from cogym_lab.envs.related_work.coverage import title_coverage
from cogym_lab.envs.related_work.data_files import SAMPLE
from cogym_lab.envs.related_work.instances import load_tasks
from cogym_lab.envs.related_work.search import BM25PaperIndex
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.paths import REPO_ROOT
from tests.support.related_scripts import RelatedWorkRolePlay

SCRIPT = REPO_ROOT / "scripts" / "samples" / "build_related_work_sample.py"
SAMPLE_TASKS = 8


def _script():
    """The maintainer script as a module (it lives outside the package)."""
    name = "build_related_work_sample"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One fresh user cache for the module: the sample's index is built once here."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def newcomer(tmp_path, shared_cache, monkeypatch) -> Path:
    """A person with no data: a fresh home and cache, no ``COGYM_DATA``."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    return tmp_path


def _sample_lines(name: str) -> list[bytes]:
    return list(read_lines(SAMPLE.folder / name))


# --- a newcomer --------------------------------------------------------------------------------

NEWCOMER_SESSION = """
import json
from cogym_lab.envs import make_env
first = make_env("related_work", instance=0)
first.reset()
first.step("agent", 'SEARCH_PAPER(query="push relabel maximum flow")')
second = make_env("related_work", instance=2)
print(json.dumps({"title": first.task.title, "data_dir": first.data_dir,
                  "hits": first.results["agent"], "unfindable": second.unfindable_titles()}))
"""


def test_a_newcomer_without_data_runs_from_the_sample_and_is_told_once(newcomer):
    """In a process of its own: the notice is printed once per process, however many sessions."""
    env = {k: v for k, v in os.environ.items() if k != DATA_ENV_VAR}
    done = subprocess.run([sys.executable, "-c", NEWCOMER_SESSION], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(REPO_ROOT)}, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["title"] == "Warm-starting Push-Relabel" and out["data_dir"] is None
    assert len(out["hits"]) == 10
    assert "push" in out["hits"][0]["title"].lower() or "flow" in out["hits"][0]["title"].lower()
    # Task 2's paper to cite is not in the full corpus either: flagged the same way.
    assert out["unfindable"] == ["Recssd: near data processing for solid state drive based "
                                 "recommendation inference"]
    notice = "Using the related_work sample that comes with cogym_lab"
    assert done.stderr.count(notice) == 1, done.stderr
    assert SAMPLE.summary in done.stderr and "cogym-lab data download related_work" in done.stderr


def test_the_sample_has_instances_0_to_7_and_no_more(newcomer):
    assert len(RelatedWorkEnv.instances()) == SAMPLE_TASKS
    assert make_env("related_work", instance=7).task.index == 7
    with pytest.raises(IndexError, match="instances 0 to 7"):
        make_env("related_work", instance=8)


def test_each_sample_task_finds_relevant_papers_for_its_topic(newcomer, shared_cache):
    files = corpus_files()
    assert all(is_sample(path.parent) for path in files)
    index = BM25PaperIndex.load_or_build(progress=False)
    assert index.folder.parent == shared_cache.resolve() / "cogym_lab" / "related_work"
    assert index.folder.name.startswith("index-sample-")  # apart from a full corpus's index
    for task in load_tasks():
        hits = index.search(task.topic, k=10)
        assert len(hits) == 10, task.topic
        stems = set(index._analyzer.stems(task.topic))
        for hit in hits[:5]:  # the best hits are about the topic: they share its words
            text = f"{hit.paper.title} {hit.paper.abstract}"
            assert stems & set(index._analyzer.stems(text)), (task.topic, hit.paper.title)
        title_hit = index.search(task.title, k=1)[0]
        assert title_hit.score > 0


def test_the_sample_index_builds_in_seconds(tmp_path, newcomer):
    index = BM25PaperIndex.from_corpus(corpus_files(), tmp_path / "own-cache", progress=False)
    assert index.built and index.build_seconds < 30, index.build_seconds


def test_a_chosen_data_directory_is_never_replaced_by_the_sample(newcomer, monkeypatch):
    empty = newcomer / "empty"
    empty.mkdir()
    with pytest.raises(DataMissing, match="related_work"):
        make_env("related_work", instance=0, data_dir=str(empty))
    with pytest.raises(DataMissing):
        corpus_files(empty)
    monkeypatch.setenv(DATA_ENV_VAR, str(empty))
    with pytest.raises(DataMissing):
        make_env("related_work", instance=0)


def test_a_scripted_session_runs_from_the_sample_through_the_command_line(
        newcomer, no_ambient_lm, monkeypatch):
    play = RelatedWorkRolePlay("Push Relabel")
    out = newcomer / "runs"
    with ScriptedOpenAIServer(responder=play) as server:
        monkeypatch.setenv("COGYM_MODEL", "tool-lm")  # the drafting assistant and the judge
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = CliRunner().invoke(main, [
            "run", "--task", "related_work", "--instance", "0", "--team", "collaborative",
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--out", str(out), "--idle-seconds", "2"])
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    (session,) = out.iterdir()
    meta = json.loads((session / "session.json").read_text())
    assert meta["scores"]["rubric_score"] == 4 and play.drafts == 1 and play.judged == 1
    events = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    added = [e["action"] for e in events if e.get("action", "").startswith("LIBRARY_ADD_PAPER")]
    assert added  # the library holds papers the sample's search found


def test_data_prepare_builds_the_sample_index_when_there_is_no_data(newcomer, shared_cache):
    result = CliRunner().invoke(main, ["data", "prepare", "related_work", "--no-coverage"])
    # What sessions will read is ready: the command succeeds, and says the full data is missing
    # without listing each file (the sample's paragraph names the commands that get it).
    assert result.exit_code == 0, result.output
    assert "4 of 4 item(s) missing" in result.output
    assert "Sessions of related_work read the bundled sample, prepared." in result.output
    assert "How to obtain the missing items" not in result.output
    assert "(the bundled sample's)" in result.output, result.output
    assert f"{SAMPLE.summary.split(', ')[1].split(' ')[0]} papers" in result.output
    assert "index-sample-" in result.output and str(shared_cache) in result.output


# --- the sample's content ----------------------------------------------------------------------

def test_the_sample_tasks_and_rubric_are_the_full_ones(datasets_dir, newcomer):
    sample = load_tasks()
    full = load_tasks(datasets_dir)
    assert len(sample) == SAMPLE_TASKS
    assert [t.to_dict() for t in sample] == [t.to_dict() for t in full[:SAMPLE_TASKS]]
    assert (SAMPLE.folder / "rubric.txt").read_bytes() == \
        (datasets_dir / "related_work" / "rubric.txt").read_bytes()


def test_the_sample_papers_are_full_corpus_records(datasets_dir):
    """Each record is the full corpus's record of its id, byte for byte, in the file it is in
    there; the summary's count is right; and the sample holds the papers the tasks ask to cite
    that the full corpus holds."""
    full_files = tuple(datasets_dir / "related_work" / name for name in CORPUS_FILES)
    sample_files = tuple(SAMPLE.folder / name for name in CORPUS_FILES)
    script = _script()
    sample = [_sample_lines(name) for name in CORPUS_FILES]
    ids = [script._id_of(line) for lines in sample for line in lines]
    assert len(ids) == len(set(ids))
    assert script.chosen_lines(full_files, ids) == sample
    assert f"{len(ids):,} papers" in SAMPLE.summary
    assert 2000 <= len(ids) <= 4000
    tasks = load_tasks(datasets_dir)[:SAMPLE_TASKS]
    assert title_coverage(tasks, sample_files).found == title_coverage(tasks, full_files).found


def test_the_sample_is_small_and_carries_its_licences():
    size = sum(path.stat().st_size for path in SAMPLE.folder.iterdir())
    assert size < 3_000_000, size
    assert is_sample(SAMPLE.folder)
    assert {p.name for p in SAMPLE.folder.iterdir()} == {
        "test.json", "rubric.txt", BASE_FILE, SUPPLEMENT_FILE, "SAMPLE.md", "LICENSE.md"}
    licences = (SAMPLE.folder / "LICENSE.md").read_text()
    for needed in ("MIT License", "Stanford Social and Language Technologies", "CC0",
                   "ACL Anthology", "CC BY 4.0", "https://creativecommons.org/licenses/by/4.0/"):
        assert needed in licences, needed
    about = (SAMPLE.folder / "SAMPLE.md").read_text()
    assert "first 8 of the 100 tasks" in about and "cogym-lab data build-corpus" in about
    sources = {json.loads(line)["source"] for name in CORPUS_FILES for line in _sample_lines(name)}
    assert sources <= {"arxiv", "acl"}


# --- the maintainer script ---------------------------------------------------------------------

def _record(id_: str, title: str, abstract: str, **fields) -> dict:
    return {"id": id_, "title": title, "abstract": abstract, "authors": ["Ada Lovelace"],
            "year": 2021, "categories": ["cs.DS"], "url": "", "source": "arxiv", **fields}


def _write(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def small_data(tmp_path_factory, datasets_dir) -> Path:
    """The real tasks, rubric and licence with a small corpus: the committed sample's papers,
    unrelated filler, a paper superseded by the supplement and one replaced there."""
    root = tmp_path_factory.mktemp("small-data")
    folder = root / "related_work"
    folder.mkdir()
    for name in ("test.json", "rubric.txt"):
        shutil.copyfile(datasets_dir / "related_work" / name, folder / name)
    shutil.copyfile(datasets_dir / "LICENSE.collaborative-gym.txt",
                    root / "LICENSE.collaborative-gym.txt")
    base = [json.loads(line) for line in _sample_lines(BASE_FILE)]
    supplement = [json.loads(line) for line in _sample_lines(SUPPLEMENT_FILE)]
    filler = [_record(f"filler:{n}", f"Cooking recipes volume {n}", "Soups and stews.")
              for n in range(300)]
    gone = _record("gone:1", "Push relabel maximum flow warm start heuristics",
                   "Push relabel push relabel maximum flow.")
    moved = _record("moved:1", "Push relabel with gap heuristics", "An early version.")
    _write(folder / BASE_FILE, [*filler[:150], gone, moved, *base])
    _write(folder / SUPPLEMENT_FILE, [
        _record("fix:1", "A corrected record", "Nothing on flows.", supersedes=["gone:1"]),
        _record("moved:1", "Push relabel with gap heuristics", "The final version."),
        *filler[150:], *supplement])
    return root


def test_the_script_chooses_the_papers_it_says_the_same_bytes_every_time(
        small_data, tmp_path, datasets_dir):
    script = _script()
    first, second = tmp_path / "first", tmp_path / "second"
    cache = tmp_path / "cache"
    assert script.main(["--data-dir", str(small_data), "--out", str(first),
                        "--cache-dir", str(cache)]) == 0
    script.build_sample(small_data, second, cache)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in SAMPLE.folder.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    for name in ("test.json", "rubric.txt", "LICENSE.md"):  # not a matter of the corpus
        assert (first / name).read_bytes() == (SAMPLE.folder / name).read_bytes(), name

    # The choice: every query's hits and every held paper to cite, nothing else.
    small = tuple(small_data / "related_work" / name for name in CORPUS_FILES)
    index = BM25PaperIndex.from_corpus(small, cache, progress=False)
    wanted: set[str] = set()
    for task in load_tasks(datasets_dir)[:SAMPLE_TASKS]:
        for query in script.task_queries(task):
            wanted |= {hit.paper.id for hit in index.search(query.text, k=query.hits)}
        wanted |= {p.id for p in map(index.find_title, task.cited_titles) if p is not None}
    lines = [list(read_lines(first / name)) for name in CORPUS_FILES]
    chosen = [script._id_of(line) for file_lines in lines for line in file_lines]
    assert set(chosen) == wanted and len(chosen) == len(wanted)
    assert "gone:1" not in chosen  # superseded: never chosen
    originals = [list(read_lines(path)) for path in small]
    for kept, source in zip(lines, originals, strict=True):  # verbatim, in its file, in order
        assert kept == [line for line in source if line in set(kept)]
    moved = [json.loads(line) for line in lines[1] if b'"moved:1"' in line]
    assert moved == [] or moved[0]["abstract"] == "The final version."
    assert not any(b'"moved:1"' in line for line in lines[0])
    assert gzip.decompress((first / BASE_FILE).read_bytes())  # a plain gzip stream
    assert (first / BASE_FILE).read_bytes()[4:8] == b"\0\0\0\0"  # no time in the header
