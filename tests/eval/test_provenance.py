"""Versioned, re-gradable runs: ``run.json`` and every ``session.json`` record what their results
were made with (cogym_lab's version, the protocol, the graders', judges' and simulated user's
prompt versions, the data's checksums, standard or custom), and ``cogym-lab eval regrade``
grades the stored outcomes again with today's graders and writes the difference.

The runs are of the todo task played by its rule-based team (no LM), and of the sampled todo
task (tests/support/sampled_task.py); the data checksums are also checked on the shared
TravelPlanner files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.datasets.checksums import file_sha256
from cogym_lab.envs.task_data import data_files
from cogym_lab.eval import run
from cogym_lab.provenance import data as provenance_data
from cogym_lab.provenance import run_provenance, shipped_prompts
from cogym_lab.provenance.data import data_checksums
from cogym_lab.provenance.standard import team_differences
from cogym_lab.provenance.versions import REPORT_JUDGES, grader_version, user_prompt_version
from cogym_lab.teams import load_team
from cogym_lab.teams.config import MemberConfig
from tests.support.sampled_task import TASK as SAMPLED_TASK

pytestmark = pytest.mark.timeout(300)
FIELDS = {"cogym_lab_version", "protocol", "graders", "judges", "user_prompts", "data",
          "data_files", "custom", "setup"}


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _todo_run(out: Path, instances: str) -> Path:
    summary = run("todo", "example", instances, out=out, concurrency=3, progress=False)
    assert summary.status == "finished" and summary.counts.delivered == summary.counts.total
    return out


def test_a_run_and_each_of_its_sessions_record_their_provenance(tmp_path: Path) -> None:
    folder = _todo_run(tmp_path / "run", "0:3")  # the protocol's whole instance set
    recorded = _json(folder / "run.json")["provenance"]
    assert set(recorded) == FIELDS
    assert recorded["cogym_lab_version"] and recorded["protocol"] == "cogym"
    assert recorded["graders"] == {"todo": grader_version("todo")}
    assert len(recorded["graders"]["todo"]) == 12
    assert set(recorded["judges"]) == set(REPORT_JUDGES)
    assert recorded["user_prompts"] is None  # the example team has no simulated user
    assert (recorded["data"], recorded["data_files"]) == (None, [])  # todo reads no dataset
    assert recorded["custom"] == {"team": [], "prompts": [], "instances": []}
    assert recorded["setup"] == "standard"
    invocation = _json(folder / "run.json")["invocations"][-1]
    assert invocation["versions"]["grader:todo"] == recorded["graders"]["todo"]
    for name in ("000", "001", "002"):
        session = _json(folder / name / "session.json")["provenance"]
        assert set(session) == FIELDS
        assert {k: session[k] for k in ("graders", "judges", "protocol", "setup")} == \
            {k: recorded[k] for k in ("graders", "judges", "protocol", "setup")}


def test_regrade_writes_the_difference_and_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    folder = _todo_run(tmp_path / "run", "0:2")
    assert _json(folder / "run.json")["provenance"]["custom"]["instances"] == [
        "2 of the protocol's 3 instances"]
    assert _json(folder / "run.json")["provenance"]["setup"] == "custom"
    # The stored outcome of 000 as an older grader scored it, with that grader's version.
    stored = _json(folder / "000" / "session.json")
    real = stored["scores"]["performance"]
    stored["scores"]["performance"] = 0.25
    stored["provenance"]["graders"]["todo"] = "0123456789ab"
    (folder / "000" / "session.json").write_text(json.dumps(stored), encoding="utf-8")
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}

    for flags in (["--no-judges"], []):
        result = CliRunner().invoke(main, ["eval", "regrade", str(folder), *flags])
        assert result.exit_code == 0, result.output
        assert f"000: performance 0.25 -> {real:.4g} (grader:todo 0123456789ab -> " \
               f"{grader_version('todo')})" in result.output
        assert "001: same scores" in result.output
        assert "1 of 2 sessions re-graded differently" in result.output
        report = _json(folder / "regrade.json")
        assert report["judges"] is (not flags)
        first, second = report["sessions"]
        assert (first["directory"], first["instance"]) == ("000", "0")
        assert first["changed"] == [{"name": "performance", "before": 0.25, "now": real}]
        assert first["versions_changed"] == [{"name": "grader:todo", "before": "0123456789ab",
                                              "now": grader_version("todo")}]
        assert (second["changed"], second["versions_changed"]) == ([], [])
        assert second["before"] == second["now"] and second["delivered_now"] is True
    after = {path: path.read_bytes() for path in folder.rglob("*")
             if path.is_file() and path.name != "regrade.json"}
    assert after == before  # the run's own files are untouched


def test_a_team_is_standard_only_as_shipped() -> None:
    shipped = load_team("collaborative")
    assert team_differences(shipped) == []
    # Which model a member uses is recorded apart (lms), and a person may take a seat.
    other_model = shipped.model_copy(deep=True)
    other_model.members["agent"].lm["model"] = "another-model"
    assert team_differences(other_model) == []
    person = shipped.model_copy(update={"members": {**shipped.members,
                                                    "user": MemberConfig(kind="person")}})
    assert team_differences(person, people=["user"]) == []
    tuned = shipped.model_copy(deep=True)
    tuned.members["agent"].options["history_window"] = 3
    assert team_differences(tuned) == ["members.agent.options.history_window differs from the "
                                       "ready team 'collaborative'"]
    own = shipped.model_copy(update={"name": "my-team"})
    assert team_differences(own) == ["'my-team' is not a ready team"]
    assert team_differences(None) == ["the members were given in code, not by a team file"]
    recorded = run_provenance(task="todo", protocol="cogym", team=tuned, instances=[0, 1, 2],
                              instance_count=3)
    assert recorded.setup == "custom" and recorded.custom.instances == []
    assert recorded.user_prompts == user_prompt_version()  # it has a simulated user


def test_an_edited_prompt_makes_the_prompts_custom(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The list of shipped prompts is the prompts of this checkout: a prompt changed without
    # `python -m cogym_lab.provenance.shipped_prompts` fails here.
    assert shipped_prompts.shipped_prompts() == shipped_prompts.current_prompts()
    edited = dict(shipped_prompts.shipped_prompts())
    edited["users/prompts/answer.md"] = "0" * 64
    del edited["agents/prompts/act.md"]
    manifest = tmp_path / "shipped_prompts.json"
    manifest.write_text(json.dumps(edited), encoding="utf-8")
    monkeypatch.setattr(shipped_prompts, "MANIFEST", manifest)
    shipped_prompts.prompt_differences.cache_clear()
    try:
        assert shipped_prompts.prompt_differences() == (
            "users/prompts/answer.md differs from the shipped prompt",
            "agents/prompts/act.md is not a shipped prompt")
    finally:
        shipped_prompts.prompt_differences.cache_clear()


def test_travel_planning_data_checksums_match_the_declared_ones(use_shared_data: Path) -> None:
    items = data_files("travel_planning")
    found = data_checksums(items, use_shared_data / "travel_planning")
    assert [c.path for c in found] == [item.path for item in items]
    assert all(c.matches is True and c.sha256 == c.declared for c in found)
    cached = len(provenance_data._cache)
    assert data_checksums(items, use_shared_data / "travel_planning") == found
    assert len(provenance_data._cache) == cached  # hashed once per process


def test_a_run_on_the_sample_records_the_samples_checksums(sampled_task: Path) -> None:
    out = sampled_task / "out"
    summary = run(SAMPLED_TASK, str(sampled_task / "sampled-example.toml"), None, out=out,
                  progress=False, allow_sample=True)
    assert summary.counts.finished == 1
    expected = [{"path": f"{SAMPLED_TASK}/trips.json",
                 "sha256": file_sha256(sampled_task / "sample" / "trips.json"),
                 "declared": None, "matches": None}]
    for recorded in (_json(out / "run.json")["provenance"],
                     _json(out / "000" / "session.json")["provenance"]):
        assert recorded["data"] == "sample" and recorded["data_files"] == expected
        assert recorded["custom"]["team"] == ["'sampled-example' is not a ready team"]


def test_a_task_defined_in_a_script_is_versioned_by_the_script(tmp_path: Path) -> None:
    """A task class in a script's ``__main__`` (as a benchmark or a notebook-exported script
    defines one) has no module spec: its grader version comes from the script's own bytes,
    where it used to crash the batch runner."""
    import subprocess
    import sys

    script = tmp_path / "my_task.py"
    source = (
        "from cogym_lab.envs import register_env\n"
        "from cogym_lab.envs.todo import TodoEnv\n"
        "from cogym_lab.provenance.versions import grader_sources, grader_version\n"
        "class MyTodo(TodoEnv):\n"
        "    name = 'my_todo'\n"
        "register_env('my_todo', MyTodo)\n"
        "print(grader_sources('my_todo'), grader_version('my_todo'))\n")

    def version() -> str:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    script.write_text(source, encoding="utf-8")
    first = version()
    assert first.startswith("('__main__',) ") and len(first.split()[-1]) == 12
    assert version() == first  # the same script, the same version
    script.write_text(source + "# a changed byte\n", encoding="utf-8")
    assert version().split()[-1] != first.split()[-1]
