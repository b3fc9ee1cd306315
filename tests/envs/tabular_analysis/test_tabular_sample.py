"""The Tabular Analysis sample inside the package: a newcomer with no data directory (a fresh home
and cache, no ``COGYM_DATA``) gets sessions and ``cogym-lab run`` from it, graded against the
right gold; no file of the package, and nothing a sandboxed kernel can walk to, holds a gold
hypothesis plain; a chosen data directory is never replaced by it; and the maintainer script
rebuilds it byte for byte from the full data.

Gold texts are read from the shared full data at test time, never written in this file, so the
repository itself (which a kernel may walk through ``PYTHONPATH``) holds none."""

from __future__ import annotations

import base64
import csv
import dataclasses
import gzip
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import cogym_lab
from cogym_lab.cli.main import main
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.datasets import DATA_ENV_VAR, DataMissing, DatasetError, is_sample
from cogym_lab.datasets import samples as samples_module
from cogym_lab.envs import make_env
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.envs.tabular_analysis.data_files import SAMPLE, SAMPLE_DOMAINS
from cogym_lab.envs.tabular_analysis.instances import (
    ANSWER_KEY,
    TEST_SUBDIR,
    data_folder,
    load_instances,
)
from cogym_lab.envs.tabular_analysis.sealed import SEALED_NAME, seal, unseal
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes.leakage import LeakageGuard
from cogym_lab.nodes.results import read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.envs.tabular_analysis.test_tabular_env import JUDGE, first_csv, judge_reply
from tests.envs.tabular_analysis.test_tabular_sandbox import run_cell
from tests.support.paths import REPO_ROOT
from tests.support.tabular_scripts import TabularRolePlay

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(240)]
TEAM = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]
NOTICE = "Using the tabular_analysis sample"
SAMPLE_QUERIES = 22  # 16 non-native plants + 6 World Bank, all multi-table
FRAGMENT = 40  # characters: a gold fragment this long is not honest text
STRIDE = 4  # the kernel's search looks for every 4th fragment, to stay fast
BUILD_SCRIPT = REPO_ROOT / "scripts" / "samples" / "build_tabular_analysis_sample.py"


def squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def gold_key(datasets_dir: Path) -> dict[tuple[str, int, int], str]:
    """The full answer key of the shared data: (domain, metadata id, query id) -> gold."""
    path = datasets_dir / "tabular_analysis" / TEST_SUBDIR / ANSWER_KEY
    with path.open(newline="", encoding="utf-8") as handle:
        return {(r["dataset"], int(r["metadataid"]), int(r["query_id"])): r["gold_hypo"].strip()
                for r in csv.DictReader(handle)}


def queries(datasets_dir: Path) -> list[str]:
    """Every query of the split, squashed: the agent is given its query, so a piece of a gold
    hypothesis that a query repeats (some repeat over half of it) is no secret."""
    found = []
    for path in (datasets_dir / "tabular_analysis" / TEST_SUBDIR).glob("*/metadata_*.json"):
        metadata = json.loads(path.read_text(encoding="utf-8"))
        found += [squash(str(query["question"])) for group in metadata.get("queries") or []
                  for query in (group if isinstance(group, list) else [group])]
    return found


def fragments(golds: list[str], visible: list[str], stride: int = 1) -> set[str]:
    """The distinctive fragments of ``golds``: every ``FRAGMENT``-character window (every
    ``stride``-th) that no ``visible`` text holds, squashed; a shorter gold whole."""
    found: set[str] = set()
    for gold in map(squash, golds):
        if len(gold) <= FRAGMENT:
            found.add(gold)
        else:
            found.update(gold[i:i + FRAGMENT] for i in range(0, len(gold) - FRAGMENT + 1, stride))
    return {fragment for fragment in found if not any(fragment in text for text in visible)}


def file_texts(path: Path) -> list[str]:
    """A file's text, and that of what it holds compressed (``.gz``, or a zip's members)."""
    data = path.read_bytes()
    texts = [data]
    if data[:2] == b"\x1f\x8b":
        texts.append(gzip.decompress(data))
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            texts += [archive.read(member) for member in archive.namelist()]
    return [squash(t.decode("utf-8", errors="ignore")) for t in texts]


def files_holding(top: Path, needles: set[str]) -> list[str]:
    """The files under ``top`` whose text holds any of ``needles`` (same length, squashed)."""
    size = len(next(iter(needles)))
    hits = []
    for path in sorted(p for p in top.rglob("*") if p.is_file()):
        for text in file_texts(path):
            if any(text[i:i + size] in needles for i in range(len(text) - size + 1)):
                hits.append(str(path.relative_to(top)))
                break
    return hits


@pytest.fixture
def newcomer(tmp_path, monkeypatch) -> Path:
    """A person who chose no data directory: a fresh home and cache, no ``COGYM_DATA``, and a
    process that has not shown the sample notice yet."""
    for name in ("home", "cache"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    monkeypatch.setattr(samples_module, "_announced", set())
    return tmp_path


def test_make_env_reads_the_sample_under_both_protocols_and_says_so_once(newcomer, datasets_dir,
                                                                         capsys):
    env = make_env("tabular_analysis", instance=0)
    assert is_sample(data_folder()) and data_folder() == SAMPLE.folder
    assert TabularAnalysisEnv.data_sample is SAMPLE
    cogym, lab = TabularAnalysisEnv.instances("cogym"), TabularAnalysisEnv.instances("cogym_lab")
    assert len(cogym) == len(lab) == SAMPLE_QUERIES  # every sample query is multi-table
    last = make_env("tabular_analysis", instance=SAMPLE_QUERIES - 1, protocol="cogym_lab")
    err = capsys.readouterr().err
    assert err.count(NOTICE) == 1 and "cogym-lab data download tabular_analysis" in err
    assert {env.task.domain, last.task.domain} == set(SAMPLE_DOMAINS)

    # The same queries as in the full data, gold included: the caches keep the two apart.
    full = {i.key: i for i in load_instances(datasets_dir, multi_table_only=True)}
    gold = gold_key(datasets_dir)
    for protocol in (True, False):
        for instance in load_instances(multi_table_only=protocol):
            assert instance.gold_hypothesis == gold[
                (instance.domain, instance.metadata_id, instance.query_id)]
            assert dataclasses.replace(full[instance.key], index=instance.index) == instance
    assert len(full) == 110


def test_the_full_data_in_the_default_cache_wins_over_the_sample(newcomer, datasets_dir, capsys):
    datasets = newcomer / "cache" / "cogym_lab" / "datasets"
    datasets.parent.mkdir(parents=True)
    datasets.symlink_to(datasets_dir, target_is_directory=True)
    assert len(TabularAnalysisEnv.instances()) == 110
    assert not is_sample(data_folder())
    assert NOTICE not in capsys.readouterr().err


def test_a_chosen_data_dir_without_the_data_is_never_replaced_by_the_sample(newcomer,
                                                                            monkeypatch):
    empty = newcomer / "empty"
    empty.mkdir()
    with pytest.raises(DataMissing, match="cogym-lab data download tabular_analysis"):
        TabularAnalysisEnv(instance=0, data_dir=str(empty))
    monkeypatch.setenv(DATA_ENV_VAR, str(empty))
    with pytest.raises(DataMissing):
        make_env("tabular_analysis", instance=0)


async def test_grading_a_sample_instance_sends_the_judge_its_gold(newcomer, datasets_dir,
                                                                  server, tmp_path):
    server.add(judge_reply("A) very similar"))
    env = TabularAnalysisEnv(instance=SAMPLE_QUERIES - 1, protocol="cogym_lab",
                             workdir=str(tmp_path / "work"),
                             judge_lm=make_lm(LMConfig(model="judge", base_url=server.base_url,
                                                       temperature=0, max_retries=0)))
    coordinator = Coordinator(env, TEAM, session_id="sample-graded")
    coordinator.start(0.0)
    coordinator.handle("agent", {"name": "EDITOR_UPDATE", "args": {
        "text": "Education spending goes with higher GDP per head."}}, 1.0)
    scores = await env.aevaluate()
    await env.aclose()
    assert scores == {"performance": 1.0, "recall_context": 1.0, "hms": 1.0,
                      "context_f1_relation": 1.0}
    task = env.task
    expected = gold_key(datasets_dir)[(task.domain, task.metadata_id, task.query_id)]
    assert task.domain == "worldbank_education_gdp_indicators"
    assert expected in server.bodies[0]["messages"][-1]["content"]
    assert env.hidden_strings()[0] == expected  # the leakage guard looks for it
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == sorted(task.file_names)


def test_no_file_of_the_installed_package_holds_a_gold_hypothesis(datasets_dir, tmp_path):
    golds = sorted(set(gold_key(datasets_dir).values()))
    needles = fragments(golds, queries(datasets_dir))
    package = Path(cogym_lab.__file__).resolve().parent
    assert (package / "envs" / "tabular_analysis" / "sample" / TEST_SUBDIR / SEALED_NAME).is_file()
    assert files_holding(package, needles) == []
    # The search is real: it finds a fragment plain, gzipped and zipped.
    probe = tmp_path / "probe"
    probe.mkdir()
    sample_gold = golds[0]
    (probe / "plain.txt").write_text(f"notes: {sample_gold[5:60].upper()}", encoding="utf-8")
    (probe / "packed.gz").write_bytes(gzip.compress(sample_gold.encode()))
    with zipfile.ZipFile(probe / "packed.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("inner.csv", sample_gold)
    (probe / "sealed.bin").write_bytes(seal(sample_gold))
    assert files_holding(probe, needles) == ["packed.gz", "packed.zip", "plain.txt"]


def test_the_sealed_key_round_trips_and_a_damaged_one_is_an_error():
    text = "dataset,metadataid,query_id,gold_hypo\nx,0,0,\"a, b\"\n"
    sealed = seal(text)
    assert unseal(sealed) == text and b"gold_hypo" not in sealed
    with pytest.raises(DatasetError, match="damaged"):
        unseal(sealed[:-1] + bytes([sealed[-1] ^ 1]))
    with pytest.raises(DatasetError, match="format"):
        unseal(b"dataset,metadataid")


#: A curious cell: read every file under every folder the kernel is told of (its working folder
#: and that folder's parent, home, temp folder, each folder an environment variable names) and
#: look for the gold (any distinctive run of ``FRAGMENT`` + ``STRIDE`` - 1 characters). The
#: needles come in base64, so the cell's own source (which IPython keeps in its history under
#: the kernel's home) holds no gold text either.
SEARCH = r'''
import base64, gzip, json, os, tempfile, zipfile
needles = set(json.loads(base64.b64decode(NEEDLES)))
size = len(next(iter(needles)))

def texts(path):
    with open(path, "rb") as handle:
        data = handle.read()
    found = [] if b"\0" in data[:4096] else [data]  # programs and other binaries hold no text
    if data[:2] == b"\x1f\x8b":
        try:
            found.append(gzip.decompress(data))
        except Exception:
            pass
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                found += [archive.read(m) for m in archive.namelist()]
        except Exception:
            pass
    return [" ".join(t.decode("utf-8", "ignore").split()).casefold() for t in found]

def holding(top):
    hits, read = [], 0
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
                    continue
                for text in texts(path):
                    read += 1
                    if any(needle in text for needle in needles):
                        hits.append(path)
                        break
            except OSError:
                continue
    return hits, read
'''

PLACES = r'''
cwd = os.getcwd()
places = {"cwd": cwd, "parent of cwd": os.path.dirname(cwd),
          "home": os.path.expanduser("~"), "temp": tempfile.gettempdir()}
for variable, value in os.environ.items():
    for n, entry in enumerate(value.split(os.pathsep)):
        if os.path.isabs(entry) and os.path.isdir(entry):
            places[f"${variable}[{n}]"] = entry
report = {name: holding(top) for name, top in places.items()}
print(json.dumps({"places": places, "found": {k: v[0] for k, v in report.items()},
                  "read": {k: v[1] for k, v in report.items()}, "environ": dict(os.environ),
                  "cwd_files": sorted(os.listdir(cwd))}))
'''


async def test_a_sandbox_kernel_on_a_sample_instance_cannot_walk_to_the_gold(newcomer,
                                                                             datasets_dir):
    key = gold_key(datasets_dir)
    golds = sorted({gold for (domain, _, _), gold in key.items() if domain in SAMPLE_DOMAINS})
    distinctive = sorted(fragments(golds, queries(datasets_dir), stride=STRIDE))
    needles = base64.b64encode(json.dumps(distinctive).encode()).decode()
    setup = f"NEEDLES = {needles!r}\nMAX_BYTES = 4_000_000\n{SEARCH}"
    env = TabularAnalysisEnv(instance=0)
    assert is_sample(data_folder())
    coordinator = Coordinator(env, TEAM, session_id="sample-sandbox")
    coordinator.start(0.0)
    try:
        report = json.loads(await run_cell(coordinator, setup + PLACES, 1.0))
        # The search is real: pointed at the full data's test folder, it finds the answer key.
        control = await run_cell(coordinator, "print(json.dumps(holding("
                                 f"{str(datasets_dir / 'tabular_analysis' / TEST_SUBDIR)!r})))",
                                 2.0)
    finally:
        await env.aclose()
    hits, _ = json.loads(control)
    assert [Path(hit).name for hit in hits] == [ANSWER_KEY]
    assert {"cwd", "parent of cwd", "home", "temp"} <= report["places"].keys()
    assert report["found"] == {place: [] for place in report["places"]}
    assert report["read"]["cwd"] == len(env.task.file_names)  # the walk read the data files
    assert report["cwd_files"] == sorted(env.task.file_names)  # and nothing else is there
    for name, value in report["environ"].items():  # nothing points at the sample
        assert str(SAMPLE.folder) not in value, name
        assert str(newcomer / "cache") not in value, name


async def test_a_cell_that_unseals_the_gold_on_purpose_gets_it_and_the_guard_reports_it(
        newcomer):
    """What sealing cannot stop: the kernel runs as the same user with cogym_lab importable, so
    a cell that calls the loader on purpose reads the gold. The leakage guard then finds it in
    the notebook the agent is shown."""
    env = TabularAnalysisEnv(instance=0)
    guard = LeakageGuard(env.hidden_strings(), agents={"agent"}, humans={"user"})
    coordinator = Coordinator(env, TEAM, session_id="sample-unsealed")
    transitions = [coordinator.start(0.0)]
    code = ("from cogym_lab.envs.tabular_analysis.instances import load_instances\n"
            "print(load_instances(multi_table_only=True)[0].gold_hypothesis)")
    try:
        transitions.append(coordinator.handle("agent", {"name": "EXECUTE_JUPYTER_CELL",
                                                        "args": {"code": code}}, 1.0))
        (role, deferred), = transitions[-1].deferred
        transitions.append(coordinator.apply_follow_up(role, await deferred.work(), 2.0))
    finally:
        await env.aclose()
    cell = env.cells[-1]
    assert cell["status"] == "ok", cell
    assert env.task.gold_hypothesis in "".join(o.get("text", "") for o in cell["outputs"])
    for transition in transitions:
        for event in transition.events:
            guard.watch_event(event)
        for update in transition.updates:
            guard.watch_update(update)
    leaks = guard.report().leaks
    assert [(hit.role, hit.where) for hit in leaks] == [("agent", "view:notebook")]


def test_cogym_lab_run_finishes_from_the_sample(newcomer, tmp_path, monkeypatch):
    env = make_env("tabular_analysis", instance=0)
    play = TabularRolePlay(first_csv(env), JUDGE)
    with ScriptedOpenAIServer(responder=play) as server:
        monkeypatch.setenv("COGYM_MODEL", "tool-lm")  # the hypothesis judge
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = CliRunner().invoke(main, [
            "run", "--task", "tabular_analysis", "--instance", "0", "--team", "collaborative",
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--out", str(tmp_path / "results"), "--idle-seconds", "3"])
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    (session,) = (tmp_path / "results").iterdir()
    meta = read_session(session)
    assert meta["scores"]["performance"] == 1.0 and play.judged == 1
    cells = meta["final_state"]["views"]["agent"]["components"][0]["content"]["cells"]
    assert [c["status"] for c in cells] == ["ok", "ok"]
    assert cells[0]["outputs"][0]["text"].startswith("rows")


def run_build(data_dir: Path, out: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--data-dir", str(data_dir), "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": path})


def tree(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes()
            for p in sorted(top.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_the_build_script_reproduces_the_committed_sample(datasets_dir, tmp_path):
    out = tmp_path / "sample"
    done = run_build(datasets_dir, out)
    assert done.returncode == 0, done.stderr
    built, committed = tree(out), tree(SAMPLE.folder)
    assert sorted(built) == sorted(committed)
    assert [name for name in built if built[name] != committed[name]] == []
    assert sum(map(len, committed.values())) < 1_000_000
    assert {"SAMPLE.md", "discoverybench/license.md"} <= committed.keys()
    notes = committed["SAMPLE.md"].decode()
    assert "ODC-By" in notes and "cogym-lab data download tabular_analysis" in notes
    assert not any(name.endswith(ANSWER_KEY) for name in committed)
    assert run_build(datasets_dir, out).returncode == 0  # a sample folder is rebuilt in place
    assert tree(out) == built
    # A folder that is not a sample is never overwritten.
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert run_build(datasets_dir, other).returncode != 0
    assert [p.name for p in other.iterdir()] == ["keep.txt"]


def test_the_sealed_key_holds_the_rows_of_the_sample_domains():
    sealed = (SAMPLE.folder / TEST_SUBDIR / SEALED_NAME).read_bytes()
    key = unseal(sealed)
    rows = list(csv.DictReader(io.StringIO(key)))
    assert {r["dataset"] for r in rows} == set(SAMPLE_DOMAINS) and len(rows) == SAMPLE_QUERIES
