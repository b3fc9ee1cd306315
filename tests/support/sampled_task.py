"""A task whose instances come from a data file and that carries a sample of it, for the tests of
how sessions and runs say they read a sample, independent of any real task's sample and data.

``sampled_todo`` is the todo task with its trips read from ``<data dir>/sampled_todo/trips.json``
through :func:`cogym_lab.datasets.task_folder`, as a real task's loader does: from the sample
when nobody chose a data directory and the default one lacks the file. The rule-based todo
members play it (:data:`TEAM`), so its sessions need no LM.

:func:`install` makes the sample in a folder the test gives (with ``SAMPLE.md``) and registers
the task in this process; :func:`full_data` writes the full data into a data directory. A test
in this process uses the ``sampled_task`` fixture (a plugin of tests/conftest.py); a kernel
calls :func:`install` itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cogym_lab.core.protocol import DEFAULT_PROTOCOL
from cogym_lab.datasets import DATA_ENV_VAR, DataItem, DataSample, samples, task_folder
from cogym_lab.envs import registry
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.registry import register_env
from cogym_lab.envs.todo import TodoEnv

TASK = "sampled_todo"
TRIPS = [{"trip": "camping", "min_items": 3, "must_have": ["headlamp"]},
         {"trip": "beach", "min_items": 2, "must_have": ["hat"]},
         {"trip": "city", "min_items": 2, "must_have": ["charger"]}]
SAMPLE_TRIPS = TRIPS[1:2]
SUMMARY = "1 of the 3 trips, the beach"
DATA_FILES = (DataItem(task=TASK, path=f"{TASK}/trips.json", description="The trips to pack for",
                       source="the cogym_lab tests", homepage="https://example.org/sampled-todo",
                       license="CC0", url="https://example.org/sampled-todo/trips.json"),)

#: The rule-based todo team, allowed to play this task too; short idle times keep runs quick.
TEAM = f"""\
name = "sampled-example"
description = "The todo task's rule-based agent and user, on the sampled todo task."
tasks = ["{TASK}"]

[session]
idle_seconds = 0.5
timeout = 60

[members.agent]
type = "example-agent"

[members.user]
type = "example-user"
"""


@dataclass
class SampledTodo(DatasetEnv, TodoEnv):
    """The todo task, instance ``instance`` of the trips in its data file."""

    name = TASK
    data_files: ClassVar[tuple[DataItem, ...]] = DATA_FILES
    _loading = False

    def __post_init__(self) -> None:
        if self._loading:
            # DatasetEnv's set-up calls the next class's __init__ (the todo env's), which calls
            # this again: that call sets up the todo env, and nothing more.
            TodoEnv.__post_init__(self)
            return
        self._loading = True
        try:
            DatasetEnv.__post_init__(self)
        finally:
            self._loading = False
        self.trip, self.min_items = self.task["trip"], self.task["min_items"]
        self.must_have = list(self.task["must_have"])

    @classmethod
    def load_dataset(cls, data_dir: str | None,
                     protocol: str = DEFAULT_PROTOCOL) -> list[dict[str, Any]]:
        folder = task_folder(cls.data_files, cls.data_sample, data_dir)
        return json.loads((folder / "trips.json").read_text(encoding="utf-8"))


def install(sample_folder: str | Path) -> type[SampledTodo]:
    """Write the task's sample into ``sample_folder`` and register the task, carrying it."""
    folder = Path(sample_folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trips.json").write_text(json.dumps(SAMPLE_TRIPS), encoding="utf-8")
    (folder / "SAMPLE.md").write_text(f"# The {TASK} sample\n\n{SUMMARY}, for the tests.\n",
                                      encoding="utf-8")
    SampledTodo.data_sample = DataSample(TASK, folder, SUMMARY)
    register_env(TASK, SampledTodo)
    return SampledTodo


def full_data(data_dir: Path) -> Path:
    """The task's full data written into ``data_dir`` (its ``sampled_todo/`` folder)."""
    folder = data_dir / TASK
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trips.json").write_text(json.dumps(TRIPS), encoding="utf-8")
    return data_dir


def team_file(folder: Path) -> Path:
    """:data:`TEAM` written as a team file in ``folder``."""
    path = folder / "sampled-example.toml"
    path.write_text(TEAM, encoding="utf-8")
    return path


@pytest.fixture
def sampled_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh home and cache folder (no task data anywhere, no ``COGYM_DATA``), nothing
    announced yet in this process, and the task registered with its sample, for one test.
    Yields the test's folder, which holds the sample (``sample/``) and the team file."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    monkeypatch.setattr(samples, "_announced", set())
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    monkeypatch.setattr(SampledTodo, "data_sample", None)
    install(tmp_path / "sample")
    team_file(tmp_path)
    yield tmp_path
