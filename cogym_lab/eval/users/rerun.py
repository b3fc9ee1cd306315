"""Running flagged sessions again (``cogym-lab eval audit --rerun-flagged``).

A session whose simulated user made a critical error is run again in its own run folder, with
the run's own settings as ``run.json`` recorded them: the task, the team, the protocol, the env
arguments, the session limits and each role's model and endpoint. The batch runner moves the
old folder aside into ``OUT/.replaced/`` and writes the new trial where it was
(:func:`cogym_lab.eval.batch.runner.run`, ``rerun=``). LM settings that were given on the command
line other than the model and endpoint (a temperature, say) are not in ``run.json`` and are
not repeated; the environment (``OPENAI_API_KEY`` ...) must still hold what the run used.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cogym_lab.eval.batch.manifest import RunSummary, read_run
from cogym_lab.records.trajectory import SessionRecord
from cogym_lab.sessions.spec import Limits
from cogym_lab.teams.config import TeamConfig

SessionKey = tuple[int, int]  # (instance, trial)
_FOLDER = re.compile(r"(\d+)(?:-t(\d+))?")


def session_key(record: SessionRecord) -> SessionKey | None:
    """The (instance, trial) of a batch session: from ``session.json``'s ``batch`` field, else
    from its folder's name (``003``, ``003-t2``); ``None`` for a session not from a batch."""
    batch = record.session.get("batch")
    if isinstance(batch, dict) and isinstance(batch.get("instance"), int):
        trial = batch.get("trial")
        return batch["instance"], trial if isinstance(trial, int) else 0
    found = _FOLDER.fullmatch(record.path.name)
    if found and record.run is not None:
        return int(found.group(1)), int(found.group(2) or 0)
    return None


@dataclass
class RerunPlan:
    """The sessions to run again, by run folder, and those that cannot be (with why)."""

    runs: dict[Path, list[SessionKey]] = field(default_factory=dict)
    skipped: dict[Path, str] = field(default_factory=dict)


def plan_reruns(records: Iterable[SessionRecord]) -> RerunPlan:
    """Group the sessions ``records`` by the run folder they belong to."""
    plan = RerunPlan()
    runs: dict[Path, list[SessionKey]] = defaultdict(list)
    for record in records:
        key = session_key(record)
        if record.run is None or key is None:
            plan.skipped[record.path] = "not part of a batch run (no run.json beside it)"
            continue
        runs[record.path.parent].append(key)
    plan.runs = {folder: sorted(set(keys)) for folder, keys in runs.items()}
    return plan


def run_arguments(run: RunSummary) -> dict[str, Any]:
    """The keyword arguments that repeat ``run``'s settings in :func:`~cogym_lab.eval.run`."""
    models = {role: lm.model for role, lm in run.lms.items() if lm.model}
    base_urls = {role: lm.base_url for role, lm in run.lms.items() if lm.base_url}
    limits = {name: value for name, value in run.session_config.items()
              if name in Limits.model_fields and value is not None}
    return {"task": run.task, "team": TeamConfig.model_validate(run.team_config),
            "env_args": dict(run.env_args), "protocol": run.protocol,
            "concurrency": run.concurrency, "models": models or None,
            "base_urls": base_urls or None, "session": limits,
            # a run its owner allowed onto the sample of the task's data goes on there
            "allow_sample": run.data == "sample"}


def rerun(plan: RerunPlan, *, progress: bool | TextIO = False) -> list[RunSummary]:
    """Run every planned session again; returns each run folder's new summary."""
    from cogym_lab.eval.batch.runner import run

    summaries = []
    for folder, keys in plan.runs.items():
        recorded = read_run(folder)
        if recorded is None:
            plan.skipped[folder] = "its run.json cannot be read"
            continue
        arguments = run_arguments(recorded)
        summaries.append(run(arguments.pop("task"), arguments.pop("team"),
                             sorted({instance for instance, _ in keys}), out=folder,
                             rerun=keys, progress=progress, **arguments))
    return summaries
