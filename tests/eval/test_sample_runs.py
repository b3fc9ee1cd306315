"""A batch evaluation never passes numbers from the sample of a task's data off as comparable with
the papers': under the ``cogym`` protocol ``cogym-lab eval run`` (and ``cogym_lab.eval.run``)
refuses to start on the sample, saying how to get the full data; with ``--allow-sample``, or
under the ``cogym_lab`` protocol, it runs, marks ``run.json`` and the sessions, and the report
says the numbers are not comparable.

The task is ``sampled_todo`` (tests/support/sampled_task.py), played by the rule-based todo
team: no LM. Each test has a fresh home and cache folder and no ``COGYM_DATA``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.eval import report, run
from cogym_lab.eval.batch.runner import SampleDataRefused
from tests.support.sampled_task import TASK, full_data

NOT_COMPARABLE = "Sample data: not comparable with the papers' numbers"


def _eval_run(folder: Path, out: str, *extra: str):
    return CliRunner().invoke(main, ["eval", "run", "--task", TASK, "--team",
                                     str(folder / "sampled-example.toml"), "--instances", "0",
                                     "--out", str(folder / out), "--no-progress", *extra])


def _run_json(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())


def test_the_paper_protocol_refuses_the_sample(sampled_task) -> None:
    result = _eval_run(sampled_task, "refused")
    assert result.exit_code == 1, result.output
    message = result.output.replace("\n", " ")
    assert "would read the small sample that comes with cogym_lab (1 of the 3 trips" in message
    assert "not comparable with the papers'" in message
    assert f"`cogym-lab data download {TASK}`" in message
    assert "--allow-sample" in message
    assert not (sampled_task / "refused").exists()  # nothing was started


def test_allowed_it_runs_and_the_run_and_its_report_say_sample(sampled_task) -> None:
    folder = sampled_task
    result = _eval_run(folder, "allowed", "--allow-sample")
    assert result.exit_code == 0, result.output
    assert "protocol cogym · sample data" in result.stdout
    assert result.stderr.count(f"Using the {TASK} sample") == 1
    recorded = _run_json(folder / "allowed")
    assert (recorded["protocol"], recorded["data"]) == ("cogym", "sample")
    assert recorded["counts"]["finished"] == 1
    session = json.loads((folder / "allowed" / "000" / "session.json").read_text())
    assert session["data"] == "sample"

    shown = CliRunner().invoke(main, ["eval", "report", str(folder / "allowed")])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[2] == "Scoring protocol: cogym"
    marked = [line for line in lines[3:6] if line.startswith(NOT_COMPARABLE)]  # near the top
    assert len(marked) == 1 and "1 of 1 sessions" in marked[0], lines[:6]
    html = report([folder / "allowed"])._repr_html_()
    assert "not comparable with the papers" in html


def test_the_projects_own_protocol_runs_on_the_sample(sampled_task) -> None:
    result = _eval_run(sampled_task, "own", "--protocol", "cogym_lab")
    assert result.exit_code == 0, result.output
    assert _run_json(sampled_task / "own")["data"] == "sample"


def test_on_the_full_data_nothing_is_refused_or_marked(sampled_task, monkeypatch) -> None:
    folder = sampled_task
    monkeypatch.setenv(DATA_ENV_VAR, str(full_data(folder / "data")))
    result = _eval_run(folder, "full")
    assert result.exit_code == 0, result.output
    assert "sample data" not in result.stdout and "comes with cogym_lab" not in result.stderr
    assert _run_json(folder / "full")["data"] == "full"
    shown = CliRunner().invoke(main, ["eval", "report", str(folder / "full")])
    assert shown.exit_code == 0 and "Sample data" not in shown.stdout, shown.output


def test_the_python_api_takes_allow_sample(sampled_task, monkeypatch) -> None:
    folder = sampled_task
    team = str(folder / "sampled-example.toml")
    with pytest.raises(SampleDataRefused, match="allow_sample=True"):
        run(TASK, team, "0", out=folder / "api", progress=False)
    summary = run(TASK, team, "0", out=folder / "api", progress=False, allow_sample=True)
    assert summary.data == "sample" and summary.counts.finished == 1
    assert NOT_COMPARABLE in report([folder / "api"]).to_text()

    # The same folder never takes a run on the full data beside the sample's.
    monkeypatch.setenv(DATA_ENV_VAR, str(full_data(folder / "data")))
    with pytest.raises(ValueError, match="holds a run on the sample data"):
        run(TASK, team, "0", out=folder / "api", progress=False)
