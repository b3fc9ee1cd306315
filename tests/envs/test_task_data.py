"""Each task declares the files it reads (``data_files`` on its class), and ``cogym_lab.datasets``
and ``cogym-lab data`` report exactly that declaration: no generic module lists a task's files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from cogym_lab import datasets
from cogym_lab.cli.data_command import data
from cogym_lab.core import Component
from cogym_lab.datasets import DataItem
from cogym_lab.envs import registry
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.task_data import all_data_files, data_files, data_report, tasks_with_data

SHIPPED_WITH_DATA = ("related_work", "tabular_analysis", "travel_planning")


@dataclass
class _Weather(DatasetEnv):
    """A third-party task: one file, which no generic module knows about."""

    name = "weather"
    data_files: ClassVar[tuple[DataItem, ...]] = (
        DataItem("weather", "weather/stations.csv", "weather stations", "a test source",
                 "https://example.org/", "CC0"),)

    @classmethod
    def data_report(cls, data_dir: Path, *, progress: bool = False) -> list[str]:
        return [f"Weather: {len(list((data_dir / 'weather').glob('*.csv')))} table(s)."]

    @classmethod
    def load_dataset(cls, data_dir: str | None, protocol: str = "") -> list[Any]:
        return [{}]

    @property
    def task_description(self) -> str:
        return "Forecast."

    def _reset(self, seed: int | None) -> None:
        pass

    def public_components(self) -> list[Component]:
        return []


@pytest.fixture
def weather_task(monkeypatch: pytest.MonkeyPatch) -> type[_Weather]:
    monkeypatch.setitem(registry._registered, "weather", _Weather)
    return _Weather


def _short(item: DataItem) -> str:
    return item.path.removeprefix(f"{item.task}/")


def test_the_shipped_tasks_with_data_are_found() -> None:
    assert tasks_with_data() == SHIPPED_WITH_DATA
    assert data_files("todo") == ()  # reads no data
    assert all_data_files() == [item for task in SHIPPED_WITH_DATA for item in data_files(task)]


@pytest.mark.parametrize("task", SHIPPED_WITH_DATA)
def test_datasets_reports_what_the_task_declares(task: str, datasets_dir: Path) -> None:
    declared = registry.task_class(task).data_files  # type: ignore[union-attr]
    assert declared and data_files(task) == declared
    assert all(item.task == task and item.path.startswith(f"{task}/") for item in declared)
    assert datasets.task_of(declared) == task
    states = datasets.status(declared, datasets_dir)
    assert [state.item for state in states] == list(declared)
    assert all(state.present for state in states)
    assert [state.path for state in states] == [datasets_dir.resolve() / item.path.rstrip("/")
                                                for item in declared]
    assert datasets.require(declared, datasets_dir) == datasets_dir.resolve() / task


def test_the_data_command_lists_every_declared_item(datasets_dir: Path) -> None:
    result = CliRunner().invoke(data, ["--data-dir", str(datasets_dir), "--no-coverage"])
    assert result.exit_code == 0, result.output
    for item in all_data_files():
        assert _short(item) in result.output
    assert f"All {len(all_data_files())} item(s) present." in result.output


def test_a_task_installed_later_is_asked_like_a_shipped_one(weather_task: type[_Weather],
                                                            tmp_path: Path) -> None:
    assert "weather" in tasks_with_data()
    assert data_files("weather") == weather_task.data_files
    assert data_report("weather", tmp_path) == ["Weather: 0 table(s)."]

    result = CliRunner().invoke(data, ["--data-dir", str(tmp_path), "--task", "weather"])
    assert result.exit_code == 1
    assert "stations.csv" in result.output and "1 of 1 item(s) missing." in result.output
    assert "Weather: 0 table(s)." in result.output

    (tmp_path / "weather").mkdir()
    (tmp_path / "weather" / "stations.csv").write_text("id\n1\n")
    result = CliRunner().invoke(data, ["--data-dir", str(tmp_path), "--task", "weather"])
    assert result.exit_code == 0, result.output
    assert "Weather: 1 table(s)." in result.output


def test_the_data_command_refuses_a_task_without_data() -> None:
    result = CliRunner().invoke(data, ["--task", "todo"])
    assert result.exit_code == 2
    assert "'todo' is not one of" in result.output and "travel_planning" in result.output


def test_only_tasks_with_something_to_say_report(tmp_path: Path) -> None:
    assert data_report("travel_planning", tmp_path) == []
    lines = data_report("related_work", tmp_path)
    assert lines[0].startswith("Related Work corpus: papers.jsonl.gz, then ")
    assert "(missing)" in lines[1]
    assert lines[-1].startswith("  Build the corpus from public dumps: cogym-lab data "
                                "build-corpus --arxiv ")
