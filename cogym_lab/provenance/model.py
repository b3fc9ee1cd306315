"""``Provenance``: what a result was made with, as ``session.json`` and ``run.json`` record it.

Both writers build it here: :func:`session_provenance` for one session (``Session.run``, on the
session's own process), :func:`run_provenance` for a batch run (its driver). The fields are
described in docs/evaluation-runs.md, "Provenance".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from cogym_lab._version import __version__
from cogym_lab.datasets import DataSample, data_dir
from cogym_lab.envs.task_data import DataSource, data_files
from cogym_lab.provenance.data import DataChecksum, data_checksums
from cogym_lab.provenance.shipped_prompts import prompt_differences
from cogym_lab.provenance.standard import (
    instance_differences,
    run_instance_differences,
    team_differences,
)
from cogym_lab.provenance.versions import grader_version, judge_versions, user_prompt_version
from cogym_lab.teams.config import TeamConfig

__all__ = ["Custom", "Provenance", "run_provenance", "session_provenance"]

#: The member type of the simulated user, whose prompts are versioned.
SIMULATED_USER = "simulated"


class Custom(BaseModel):
    """What differs from the shipped setup, part by part: each list says why in short phrases;
    an empty list is the shipped one. ``instances`` is ``None`` when it could not be told."""

    team: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)
    instances: list[str] | None = Field(default_factory=list)


class Provenance(BaseModel):
    """The versions and data a result was made with (docs/evaluation-runs.md, "Provenance")."""

    cogym_lab_version: str = __version__
    protocol: str
    #: The task's grader: a short hash of its code and its judge's prompts, by task name.
    graders: dict[str, str] = Field(default_factory=dict)
    #: The evaluation suite's LM judges (``eval report --judge``), each a short hash of its code
    #: and prompts, by judge name.
    judges: dict[str, str] = Field(default_factory=dict)
    #: A short hash of the simulated user's prompts; ``None``: no simulated user took part.
    user_prompts: str | None = None
    #: Which data the task read (``"full"``, ``"sample"``), ``None`` for no dataset.
    data: DataSource | None = None
    #: The checksum of each data file the task declares, where the task read it.
    data_files: list[DataChecksum] = Field(default_factory=list)
    custom: Custom = Field(default_factory=Custom)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def setup(self) -> Literal["standard", "custom"]:
        """``standard`` when the team, the prompts and the instances are the shipped ones."""
        parts = (self.custom.team, self.custom.prompts, self.custom.instances or [])
        return "custom" if any(parts) else "standard"

    def versions(self) -> dict[str, str | None]:
        """The versions that decide a score, flat: ``grader:<task>``, ``judge:<name>``,
        ``user_prompts``, ``cogym_lab``, ``protocol``; for telling two results apart."""
        return {"cogym_lab": self.cogym_lab_version, "protocol": self.protocol,
                **{f"grader:{name}": version for name, version in self.graders.items()},
                **{f"judge:{name}": version for name, version in self.judges.items()},
                "user_prompts": self.user_prompts}


def _graders(task: str) -> dict[str, str]:
    version = grader_version(task)
    return {task: version} if version is not None else {}


def _data(task: str, source: DataSource | None, folder: str | Path | None,
          sample: DataSample | None) -> list[DataChecksum]:
    """The checksums of the task's declared files where it read them: its sample's folder, or
    ``<data dir>/<task>/``."""
    if source is None:
        return []
    try:
        items = data_files(task)
    except KeyError:
        return []
    if source == "sample" and sample is not None:
        return data_checksums(items, sample.folder, sample=True)
    return data_checksums(items, data_dir(folder) / task)


def session_provenance(*, task: str, protocol: str, env: Any, team: TeamConfig | None,
                       people: Iterable[str] = (), simulated_user: bool,
                       data: DataSource | None = None, data_folder: str | Path | None = None,
                       sample: DataSample | None = None) -> Provenance:
    """The provenance of one session of ``task`` on ``env``. ``team`` is the team file it was
    built from (``None``: members given in code), ``people`` the seats people took,
    ``simulated_user`` whether a simulated user plays in it. Hashes the data files (once per
    process and file): call it off the event loop."""
    return Provenance(
        protocol=protocol, graders=_graders(task), judges=judge_versions(),
        user_prompts=user_prompt_version() if simulated_user else None,
        data=data, data_files=_data(task, data, data_folder, sample),
        custom=Custom(team=team_differences(team, people), prompts=list(prompt_differences()),
                      instances=instance_differences(task, protocol, env)))


def run_provenance(*, task: str, protocol: str, team: TeamConfig, instances: Sequence[int],
                   instance_count: int, data: DataSource | None = None,
                   data_folder: str | Path | None = None,
                   sample: DataSample | None = None) -> Provenance:
    """The provenance of a batch run of ``team`` on ``instances`` of ``task``, out of the
    protocol's ``instance_count``. Hashes the data files: call it off the event loop."""
    simulated = any(member.type == SIMULATED_USER for member in team.members.values())
    return Provenance(
        protocol=protocol, graders=_graders(task), judges=judge_versions(),
        user_prompts=user_prompt_version() if simulated else None,
        data=data, data_files=_data(task, data, data_folder, sample),
        custom=Custom(team=team_differences(team), prompts=list(prompt_differences()),
                      instances=run_instance_differences(instances, instance_count)))
