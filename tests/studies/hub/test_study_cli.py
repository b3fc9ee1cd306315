"""``cogym-lab study serve``, ``open`` and ``export`` on a real study folder, and the answer
checks that the server's text policy leaves to them (a caller other than the server)."""

from __future__ import annotations

import re

import csv
import json

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.studies.design import FreeTextItem
from cogym_lab.studies.hub.answers import AnswerError, check_item
from cogym_lab.studies.hub.flow import ParticipantFlow
from cogym_lab.studies.hub.store import StudyFolder
from tests.support.hub_study import SECRET_NAMES, small_design

DESIGN_TOML = """
name = "tiny"
title = "A tiny study"
consent = "Agree?"
[[conditions]]
name = "hidden-one"
label = "System 1"
session = { task = "todo", team = "example" }
[[conditions]]
name = "hidden-two"
label = "System 2"
session = { task = "todo", team = "example" }
[assignment]
subjects = "between"
"""


def test_serve_writes_the_servers_and_the_hubs_configuration(tmp_path):
    design = tmp_path / "tiny.toml"
    design.write_text(DESIGN_TOML)
    study = tmp_path / "study"
    result = CliRunner().invoke(main, ["study", "serve", str(design), "--dir", str(study),
                                       "--hub", "--port", "8123"])
    assert result.exit_code == 0, result.output
    assert "jupyterhub -f" in result.output
    config = json.loads((study / "jupyter-config" / "jupyter_server_config.json").read_text())
    assert config["ServerApp"]["jpserver_extensions"] == {"cogym_lab": True,
                                                         "cogym_lab.studies.hub": True}
    assert config["CogymStudy"]["study_dir"] == str(study.resolve())
    hub = (study / "hub" / "jupyterhub_config.py").read_text()
    compile(hub, "jupyterhub_config.py", "exec")
    assert "c.JupyterHub.port = 8123" in hub and "/lab/tree/study.ipynb" in hub
    assert "SimpleLocalProcessSpawner" in hub and "allow_all = True" in hub
    # again: the same design keeps the folder (and its salt); another is refused
    salt = json.loads((study / "study.json").read_text())["salt"]
    assert CliRunner().invoke(main, ["study", "serve", str(design), "--dir",
                                     str(study)]).exit_code == 0
    assert json.loads((study / "study.json").read_text())["salt"] == salt
    design.write_text(DESIGN_TOML.replace("A tiny study", "Another"))
    refused = CliRunner().invoke(main, ["study", "serve", str(design), "--dir", str(study)])
    assert refused.exit_code != 0 and "another design" in refused.output


def test_open_writes_the_notebook(tmp_path):
    result = CliRunner().invoke(main, ["study", "open", "--into", str(tmp_path)])
    assert result.exit_code == 0, result.output
    notebook = json.loads((tmp_path / "study.ipynb").read_text())
    assert "StudyFlow()" in "".join(notebook["cells"][1]["source"])


def test_export_writes_the_four_tables(tmp_path):
    folder = StudyFolder.create(tmp_path / "study", small_design(), seed=1)
    for login in ("ann", "ben"):
        state, _ = folder.arrive(login)
        flow = ParticipantFlow(folder.design(), state)
        flow.consent(True)
        flow.finish(flow.current)  # instructions
        flow.finish(flow.current)  # a session never started
        flow.answer(flow.current.id, {"satisfied": 5, "comment": "fine\u2028ok"})
        folder.save(flow.state)
        folder.append_event({"participant": state.participant, "ts": 1.0,
                             "event": "consented", "step": "consent"})
    out = tmp_path / "export"
    result = CliRunner().invoke(main, ["study", "export", str(folder.root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "participants.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert [row["sequence"] for row in rows] == ["|".join(SECRET_NAMES),
                                                 "|".join(reversed(SECRET_NAMES))]
    assert all(row["participant"].startswith("p-") for row in rows)
    with (out / "answers.csv").open(newline="") as table:
        answers = list(csv.DictReader(table))
    assert {row["value"] for row in answers if row["item"] == "comment"} == {"fine\u2028ok"}
    assert {row["condition"] for row in answers} == set(SECRET_NAMES)
    assert json.loads((out / "study.json").read_text())["arm"] == "human"
    exported = "".join(p.read_text() for p in out.glob("*.csv"))
    assert not re.search(r"\b(ann|ben)\b", exported)  # no login, as a word, in any table


@pytest.mark.parametrize("text, words", [("a\ud800b", "lone surrogate"), ("\x00", "NUL"),
                                         ("x" * 5001, "at most")])
def test_free_text_is_text(text, words):
    with pytest.raises(AnswerError, match=words):
        check_item(FreeTextItem(name="c", text="?"), text, [])
