"""``docs/extending.md`` runs as written: its Python blocks, in order, in one namespace, in an
empty working folder. What they register in this process (the picnic task and the
``budget-shopper`` member type) is removed again afterwards."""

from __future__ import annotations

import re
import tomllib

import pytest

from cogym_lab.envs import registry as env_registry
from cogym_lab.members import MEMBERS_GROUP, member_type_names, unregister_member
from tests.support.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "extending.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
TASK, MEMBER_TYPE = "picnic", "budget-shopper"  # what the doc registers in-process


def blocks(language: str) -> list[tuple[int, str]]:
    """Each fenced block of ``language`` in the doc, with the line it starts on."""
    text = DOC.read_text(encoding="utf-8")
    return [(text.count("\n", 0, match.start()) + 1, match.group(2))
            for match in FENCE.finditer(text) if match.group(1) == language]


@pytest.fixture
def clean_registries():
    assert TASK not in env_registry.available_envs()
    assert MEMBER_TYPE not in member_type_names()
    yield
    unregister_member(MEMBER_TYPE)
    env_registry._registered.pop(TASK, None)  # the env registry has no unregister function


@pytest.mark.timeout(180)
def test_the_python_blocks_run_in_order(tmp_path, monkeypatch, clean_registries, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "extending_doc"}
    python = blocks("python")
    assert len(python) >= 8
    for line, code in python:
        exec(compile(code, f"{DOC.name}, block at line {line}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "finished" in printed
    assert (tmp_path / "picnic-team.toml").is_file()
    assert (tmp_path / "picnic-run" / "events.jsonl").is_file()
    assert sorted(p.name for p in (tmp_path / "picnic-batch").iterdir() if p.is_dir()) == [
        "000", "001"]


def test_the_registrations_did_not_outlive_the_doc():
    assert TASK not in env_registry.available_envs()
    assert MEMBER_TYPE not in member_type_names()


def test_the_toml_blocks_parse_and_use_the_real_entry_point_groups():
    groups = []
    for _, code in blocks("toml"):
        groups += list(tomllib.loads(code).get("project", {}).get("entry-points", {}))
    assert sorted(groups) == sorted(["cogym_lab.envs", MEMBERS_GROUP])


def test_every_block_says_whether_it_runs():
    text = DOC.read_text(encoding="utf-8")
    languages = {match.group(1) for match in FENCE.finditer(text)}
    assert "" not in languages, "mark each block: python (runs), text or toml (does not)"
    assert languages <= {"python", "text", "toml"}


def test_the_concept_list_says_how_many_it_has():
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Concepts you need", 1)[1]
    items = re.findall(r"^(\d+)\. \*\*", section, re.MULTILINE)
    assert [int(number) for number in items] == list(range(1, len(items) + 1))
    words = {5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine"}
    assert f"{words[len(items)]} concepts" in section
