"""A session whose task reads the sample of its data that comes with the package says so: in
``session.json`` (``"data": "sample"``, else ``"full"``), once on stderr from ``cogym-lab run``,
and, for a session a notebook asked for, in its summary's ``data_notice`` in the notebook's
words, which the panel shows.

The task is ``sampled_todo`` (tests/support/sampled_task.py): the todo task with its trips read
from a data file, played by the rule-based todo team, so every session here runs to its end
with no LM. Each test has a fresh home and cache folder and no ``COGYM_DATA``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.sessions import SessionBuildError, SessionSpec, build_session
from cogym_lab.widgets import SessionPanel
from tests.support.sampled_task import TASK, full_data

NOTICE = f"Using the {TASK} sample that comes with cogym_lab (1 of the 3 trips, the beach)"


def _spec(folder: Path, **fields) -> SessionSpec:
    return SessionSpec(task=TASK, instance=0, team=str(folder / "sampled-example.toml"),
                       **fields)


def _run(folder: Path, spec: SessionSpec, name: str) -> dict:
    session = build_session(spec, results_dir=folder / name)
    result = session.run_sync()
    assert result.end_reason == "finished", result
    return json.loads((folder / name / "session.json").read_text())


def test_session_json_says_the_session_read_the_sample(sampled_task, capsys) -> None:
    folder = sampled_task
    session = build_session(_spec(folder))
    assert (session.data_source, session.data_sample.task) == ("sample", TASK)
    assert session.env.trip == "beach"  # the sample's one trip
    recorded = _run(folder, _spec(folder), "on-sample")
    assert recorded["data"] == "sample" and recorded["status"] == "finished"
    # the loader said it on stderr once, however many sessions this process built
    assert capsys.readouterr().err.count(NOTICE) == 1


def test_session_json_says_full_with_the_full_data(sampled_task, monkeypatch, capsys) -> None:
    folder = sampled_task
    data = full_data(folder / "data")
    monkeypatch.setenv(DATA_ENV_VAR, str(data))
    recorded = _run(folder, _spec(folder), "from-cogym-data")
    assert recorded["data"] == "full"
    assert recorded["env_args"]["instance"] == 0
    monkeypatch.delenv(DATA_ENV_VAR)
    recorded = _run(folder, _spec(folder, data_dir=str(data)), "from-the-spec")
    assert recorded["data"] == "full"
    assert NOTICE not in capsys.readouterr().err


def test_a_chosen_data_directory_is_never_replaced_by_the_sample(sampled_task) -> None:
    empty = sampled_task / "chosen"
    empty.mkdir()
    with pytest.raises(SessionBuildError) as raised:
        build_session(_spec(sampled_task, data_dir=str(empty)))
    assert raised.value.field == "data_dir"
    assert "trips.json" in raised.value.message
    assert "comes with cogym_lab" not in raised.value.message


def test_a_task_that_reads_no_dataset_records_no_data(sampled_task) -> None:
    session = build_session(SessionSpec(task="todo", team="example"))
    assert session.data_source is None
    assert "data" not in session.describe()


def test_cogym_lab_run_says_it_once(sampled_task) -> None:
    folder = sampled_task
    result = CliRunner().invoke(main, ["run", "--task", TASK, "--instance", "0", "--team",
                                       str(folder / "sampled-example.toml"), "--out",
                                       str(folder / "results"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.stderr.count(NOTICE) == 1, result.stderr
    assert "`cogym-lab data download sampled_todo`" in result.stderr
    assert "(protocol cogym, sample data)" in result.stdout
    [session] = (folder / "results").iterdir()
    assert json.loads((session / "session.json").read_text())["data"] == "sample"


def test_cogym_lab_run_on_the_full_data_says_nothing(sampled_task, monkeypatch) -> None:
    folder = sampled_task
    monkeypatch.setenv(DATA_ENV_VAR, str(full_data(folder / "data")))
    result = CliRunner().invoke(main, ["run", "--task", TASK, "--instance", "2", "--team",
                                       str(folder / "sampled-example.toml"), "--out",
                                       str(folder / "results"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "comes with cogym_lab" not in result.stderr and "sample data" not in result.stdout
    [session] = (folder / "results").iterdir()
    assert json.loads((session / "session.json").read_text())["data"] == "full"


async def test_a_hosted_session_from_a_notebook_gives_the_notice_in_its_words(
        sampled_task, capsys) -> None:
    """What a kernel's (or a server's) host answers a notebook: the summary says the data is
    the sample, with the notice in the notebook's words; the panel shows it, and the process
    hosting the session does not print the command-line notice beside it."""
    folder = sampled_task
    host = SessionHost(folder / "results", build_in_thread=False, unattended_seconds=None)
    try:
        hosted = await host.create(_spec(folder, people=["user"], origin="notebook"))
        summary = host.find(hosted.session_id).summary()
        assert summary["data"] == "sample"
        notice = summary["data_notice"]
        assert notice.startswith(NOTICE)
        assert "`%cogym data download sampled_todo`" in notice
        assert "`%cogym data sampled_todo`" in notice and "cogym-lab" not in notice
        panel = SessionPanel(session_id=hosted.session_id, role="user", yjs_module="")
        panel.describe(summary)
        assert panel.data_notice == notice
        assert "data_notice" in panel.keys  # a synced trait: the browser's panel shows it
        panel.close()

        # A session of the same task asked for from a command line gets that line's words.
        other = await host.create(_spec(folder))
        assert "`cogym-lab data download sampled_todo`" in other.summary()["data_notice"]
        await asyncio.wait_for(asyncio.wait({other.runner}), 60)
        assert json.loads((other.directory / "session.json").read_text())["data"] == "sample"
    finally:
        await host.close()
    assert NOTICE not in capsys.readouterr().err


async def test_a_session_on_the_full_data_has_no_notice(sampled_task, monkeypatch) -> None:
    folder = sampled_task
    monkeypatch.setenv(DATA_ENV_VAR, str(full_data(folder / "data")))
    host = SessionHost(folder / "results", build_in_thread=False, unattended_seconds=None)
    try:
        hosted = await host.create(_spec(folder, people=["user"], origin="notebook"))
        summary = hosted.summary()
        assert (summary["data"], summary["data_notice"]) == ("full", None)
        panel = SessionPanel(session_id=hosted.session_id, role="user", yjs_module="")
        panel.describe(summary)
        assert panel.data_notice == ""
        panel.close()
    finally:
        await host.close()
