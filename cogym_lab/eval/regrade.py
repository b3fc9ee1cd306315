"""Re-grade a run's stored outcomes with today's graders, and say what changed.

Each finished session of the run folder is rebuilt from its event log (the state its log
replays to, as :mod:`cogym_lab.nodes.replay` rebuilds it) and graded again by its task's grader
as it is now, under the protocol the session recorded. ``regrade.json`` in the run folder then
holds, per session, the scores it stored and the scores it gets today, and the versions
(:class:`~cogym_lab.provenance.Provenance`) that differ between then and now. Nothing the run
wrote is changed.

A grader that asks an LM (a judge, a plan parser) uses the LM settings the session recorded for
the task's tools, with the caller's overrides on top; ``judges=False`` grades with the
deterministic part alone (``CoEnv.evaluate``) and compares only the scores it gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cogym_lab._version import __version__
from cogym_lab.core.blocking import run_to_end
from cogym_lab.eval.batch.noise import _merged, _stored_spec, _team
from cogym_lab.lm import LM
from cogym_lab.nodes.grading import grade, is_delivered
from cogym_lab.provenance import Provenance
from cogym_lab.provenance.versions import grader_version, judge_versions, user_prompt_version
from cogym_lab.records.trajectory import SessionRecord, find_sessions, load_session
from cogym_lab.teams.build import attach_tool_lms, tool_lm_config

__all__ = ["REGRADE_FILE", "RegradeReport", "ScoreChange", "SessionRegrade", "aregrade",
           "regrade"]

REGRADE_FILE = "regrade.json"
#: Scores closer than this are the same score (float noise of a mean, not a change).
_SAME = 1e-9


class ScoreChange(BaseModel):
    """One score that differs: as stored, and as graded today (``None``: not given)."""

    name: str
    before: float | None
    now: float | None


class VersionChange(BaseModel):
    """One version that differs between the session's record and today."""

    name: str  # cogym_lab, protocol, grader:<task>, judge:<name>, user_prompts
    before: str | None
    now: str | None


class SessionRegrade(BaseModel):
    """One session, re-graded."""

    directory: str  # relative to the run folder
    instance: str
    trial: int = 0
    delivered_before: bool | None = None
    delivered_now: bool | None = None
    before: dict[str, float] = Field(default_factory=dict)
    now: dict[str, float] = Field(default_factory=dict)
    changed: list[ScoreChange] = Field(default_factory=list)
    versions_changed: list[VersionChange] = Field(default_factory=list)
    #: Why the session was not re-graded, or what to know about its re-grading.
    note: str | None = None


class RegradeReport(BaseModel):
    """What ``regrade.json`` holds."""

    run: str
    regraded_at: float
    cogym_lab_version: str = __version__
    judges: bool = True
    sessions: list[SessionRegrade] = Field(default_factory=list)

    @property
    def changed(self) -> list[SessionRegrade]:
        """The sessions whose scores or delivery changed."""
        return [s for s in self.sessions
                if s.changed or s.delivered_before != s.delivered_now]

    def table(self) -> str:
        """A short plain-text table: one line per session, then the totals."""
        lines = []
        for s in self.sessions:
            if s.note and not s.now and not s.changed:
                lines.append(f"{s.directory}: {s.note}")
                continue
            scores = ", ".join(f"{c.name} {_shown(c.before)} -> {_shown(c.now)}"
                               for c in s.changed) or "same scores"
            if s.delivered_before != s.delivered_now:
                scores += f"; delivered {s.delivered_before} -> {s.delivered_now}"
            versions = ", ".join(f"{v.name} {v.before or '-'} -> {v.now or '-'}"
                                 for v in s.versions_changed if v.name != "cogym_lab")
            lines.append(f"{s.directory}: {scores}" + (f" ({versions})" if versions else ""))
        graded = sum(1 for s in self.sessions if s.delivered_now is not None)
        lines.append(f"{len(self.changed)} of {graded} sessions re-graded differently"
                     + ("" if self.judges else " (deterministic graders only: --no-judges)"))
        return "\n".join(lines)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def regrade(run_dir: str | Path, *, judges: bool = True,
            lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
            write: bool = True) -> RegradeReport:
    """Re-grade every finished session under ``run_dir`` with today's graders and write
    ``run_dir/regrade.json`` (unless ``write`` is false). ``judges=False`` leaves the LM out
    (deterministic graders only); ``lm_arguments`` override the recorded LM settings by role
    (``"*"`` or ``"tools"``)."""
    return run_to_end(aregrade(run_dir, judges=judges, lm_arguments=lm_arguments, write=write))


async def aregrade(run_dir: str | Path, *, judges: bool = True,
                   lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
                   write: bool = True) -> RegradeReport:
    """:func:`regrade` for async code. Sessions are graded one after another: a judge's LM
    may be rate-limited, and a deterministic grader is quick."""
    folder = Path(run_dir)
    paths = find_sessions([folder])
    if not paths:
        raise FileNotFoundError(f"No session results under {folder}")
    report = RegradeReport(run=folder.name, regraded_at=time.time(), judges=judges)
    for path in paths:
        report.sessions.append(await _regrade_session(path, folder, judges,
                                                      lm_arguments or {}))
    if write:
        (folder / REGRADE_FILE).write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report


async def _regrade_session(path: Path, run_dir: Path, judges: bool,
                           overrides: Mapping[str, Mapping[str, Any]]) -> SessionRegrade:
    record = load_session(path)
    relative = path.relative_to(run_dir).as_posix() if path != run_dir else path.name
    batch = record.session.get("batch")
    number = batch.get("instance") if isinstance(batch, dict) else None
    instance = str(number) if isinstance(number, int) else record.instance
    result = SessionRegrade(directory=relative, instance=instance, trial=record.trial,
                            delivered_before=record.session.get("delivered"),
                            before=dict(record.scores),
                            versions_changed=_version_changes(record))
    if record.status != "finished":
        result.note = f"not re-graded: the session is {record.status}, not finished"
        return result
    try:
        env = _rebuilt_env(record)
    except Exception as error:  # noqa: BLE001 - one session that cannot be rebuilt is a note
        result.note = f"not re-graded: its outcome could not be rebuilt: " \
                      f"{type(error).__name__}: {error}"
        return result
    lms: dict[str, LM] = {}
    try:
        if judges:
            lms = _attach_tools(env, record, overrides)
            grading = await grade(env, record.end_reason, record.session_id)
            result.delivered_now, result.now = grading.delivered, dict(grading.scores)
            result.note = grading.note if grading.error else None
        else:
            result.delivered_now = is_delivered(env, record.end_reason)
            result.now = await asyncio.to_thread(env.evaluate) if result.delivered_now else {}
    except Exception as error:  # noqa: BLE001 - a grader that fails is this session's note
        result.note = f"the grader failed: {type(error).__name__}: {error}"
    finally:
        for lm in lms.values():
            with contextlib.suppress(Exception):
                await lm.aclose()
        with contextlib.suppress(Exception):
            await env.aclose()
    names = set(result.now) if not judges else set(result.before) | set(result.now)
    result.changed = [ScoreChange(name=name, before=result.before.get(name),
                                  now=result.now.get(name))
                      for name in sorted(names)
                      if not _same(result.before.get(name), result.now.get(name))]
    return result


def _same(before: float | None, now: float | None) -> bool:
    if before is None or now is None:
        return before is now
    if math.isnan(before) or math.isnan(now):
        return math.isnan(before) and math.isnan(now)
    return abs(before - now) <= _SAME


def _rebuilt_env(record: SessionRecord) -> Any:
    """The env in the state the session's log replays to."""
    from cogym_lab.nodes.replay import rebuild_coordinator, replay_events

    coordinator = rebuild_coordinator(record.session)
    for _ in replay_events(coordinator, record.events):
        pass
    return coordinator.env


def _attach_tools(env: Any, record: SessionRecord,
                  overrides: Mapping[str, Mapping[str, Any]]) -> dict[str, LM]:
    """Fresh LMs for the env's tool slots (judge, plan parser), from the LM settings the
    session recorded with ``overrides`` on top; none when it recorded no spec (the task then
    uses the LM the environment configures)."""
    for slot in [s for s in vars(env) if s.endswith("_lm")]:
        setattr(env, slot, None)
    try:
        spec = _stored_spec(record)
    except ValueError:
        return {}
    tools = tool_lm_config(_team(spec), _merged(spec, overrides).lm_arguments())
    return attach_tool_lms(env, tools)


def today_versions(task: str, protocol: str, *, user_prompts: bool) -> dict[str, str | None]:
    """The versions a session of ``task`` under ``protocol`` would record today
    (:meth:`Provenance.versions`); the simulated user's prompts only when ``user_prompts``."""
    version = grader_version(task)
    return Provenance(protocol=protocol, graders={task: version} if version else {},
                      judges=judge_versions(),
                      user_prompts=user_prompt_version() if user_prompts else None).versions()


def _version_changes(record: SessionRecord) -> list[VersionChange]:
    """The versions that differ between what the session recorded and today; a session from
    before versions were recorded has each of them as ``None`` before."""
    stored = record.session.get("provenance")
    before: dict[str, str | None] = {}
    user_prompts = any(m.kind == "user" for m in record.team)
    if isinstance(stored, dict):
        with contextlib.suppress(ValueError):
            recorded = Provenance.model_validate(stored)
            before = recorded.versions()
            user_prompts = recorded.user_prompts is not None
    protocol = record.protocol.name
    now = today_versions(record.task, protocol, user_prompts=user_prompts)
    return [VersionChange(name=name, before=before.get(name), now=value)
            for name, value in now.items() if before.get(name) != value]
