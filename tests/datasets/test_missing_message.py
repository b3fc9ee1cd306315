"""What a newcomer reads when a task's data is missing: one short paragraph whose first advice is
the one command that fixes it, the files grouped (``cogym-lab data TASK`` lists them one by one),
for each task that reads data, from a fresh home folder with an empty data directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab import datasets
from cogym_lab.cli.data_command import data
from cogym_lab.envs.task_data import data_files, missing_data_message, tasks_with_data

TASKS = tasks_with_data()


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new home folder: no cache, no COGYM_DATA; the data directory is the default one."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(datasets.DATA_ENV_VAR, raising=False)
    return tmp_path


def _missing(task: str) -> str:
    with pytest.raises(datasets.DataMissing) as caught:
        datasets.require(data_files(task))
    return str(caught.value)


def _sentences(message: str) -> list[str]:
    return [part for part in message.split(". ") if part]


@pytest.mark.parametrize("task", TASKS)
def test_one_short_paragraph_with_the_fixing_command_first(task: str, fresh_home: Path) -> None:
    message = _missing(task)
    assert "\n" not in message and len(message) < 700, message
    first, second = _sentences(message)[:2]
    assert first == f"The {task} task needs data that is missing from {datasets.data_dir()}"
    items = data_files(task)
    if any(not item.manual for item in items):
        assert second.startswith(f"Run `cogym-lab data download {task}` (or "
                                 f"`%cogym data download {task}` in a notebook)"), message
    else:  # nothing to download: where the files come from instead
        assert "must be placed by hand, from " in second or "Build the " in second, message
    if any(item.build for item in items):  # files a command builds: that command too
        assert "Build the " in message and "with `cogym-lab data build-corpus" in message, message
    assert f"`cogym-lab data {task}` lists each missing item" in message
    assert "--data-dir" not in message.split("Choose another")[0]  # the default folder


@pytest.mark.parametrize("task", TASKS)
def test_from_a_notebook_the_advice_is_a_magic(task: str, fresh_home: Path) -> None:
    root = datasets.data_dir()
    message = missing_data_message(task, root, _missing(task), where="notebook")
    assert "\n" not in message and len(message) < 800, message
    assert "!cogym-lab" not in message and "environment variable" not in message
    second = _sentences(message)[1]
    if any(not item.manual for item in data_files(task)):
        assert second.startswith(f"Run `%cogym data download {task}` in a cell"), message
    assert f"`%cogym data {task}` lists each missing item" in message
    assert "%cogym config data_dir=" in message


def test_many_files_are_counted_a_few_are_named(fresh_home: Path) -> None:
    travel = _missing("travel_planning")
    assert "to fetch the 9 missing files." in travel
    assert not any(item.path in travel for item in data_files("travel_planning"))
    root = datasets.data_dir()
    present = data_files("travel_planning")[1:]
    for item in present:  # all but one there: the one missing is named
        (root / item.path).parent.mkdir(parents=True, exist_ok=True)
        (root / item.path).write_text("x")
    assert f"to fetch {data_files('travel_planning')[0].path}." in _missing("travel_planning")


def test_another_data_folder_is_named_in_the_commands(tmp_path: Path, fresh_home: Path) -> None:
    with pytest.raises(datasets.DataMissing) as caught:
        datasets.require(data_files("travel_planning"), tmp_path / "elsewhere")
    folder = (tmp_path / "elsewhere").resolve()
    assert f"`cogym-lab data download travel_planning --data-dir {folder}`" in str(caught.value)


@pytest.mark.parametrize("task", TASKS)
def test_the_listing_the_message_names_shows_each_file(task: str, fresh_home: Path) -> None:
    result = CliRunner().invoke(data, [task, "--no-coverage"])
    assert result.exit_code == 1
    for item in data_files(task):
        assert item.path in result.output
