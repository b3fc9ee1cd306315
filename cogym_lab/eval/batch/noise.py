"""Where run-to-run noise comes from: the judge, the agent, or the rest (the simulated user).

Repeated trials (``run(..., trials=K)``) show how much an instance's score varies; this module
splits that variance by re-running one side with the other held fixed:

* **Judge noise.** Each saved outcome is graded again ``repeats`` times by the task's own grader
  (``CoEnv.aevaluate`` on the state the log replays to), its LM with a new seed each time. A
  grader that asks an LM (Related Work's rubric judge, Tabular Analysis's hypothesis judge, a
  free-text travel plan's parser) may vary; a deterministic one gives the same score every time,
  and the study says so. A session that did not deliver scores 0 however it is graded.
* **Agent noise.** Each session is run again ``repeats`` times with its simulated user replaced by
  a member that replays the user's logged turns in order, one per turn
  (:class:`cogym_lab.users.replay.ReplayUser`), while the agents get new seeds. The environment
  keeps its seed and the task's tools theirs. What the reruns' scores vary by, less the judge
  noise each grade carries, is the agent's.

The rest of the within-instance variance is attributed to the simulated user and to how user and
agent play off each other: it is what is left, not a measurement (see
:func:`cogym_lab.eval.stats.trials.noise_shares`). The replayed user does not react to what the
agent does, so the agent's variance against it is not the variance it would show against a live
user; with few repeats every share is a rough estimate.

Results go to ``RUN_DIR/noise/noise.json`` (the model :class:`NoiseStudy`; the report's trials
table reads it) and the reruns to ``RUN_DIR/noise/agent/<session>-r<k>/``, a folder a search of
the run passes over (:data:`cogym_lab.records.trajectory.DERIVED_MARKER`). Reruns that finished are
kept when the study runs again.

    from cogym_lab.eval.batch.noise import study_noise
    study = study_noise("runs/collaborative", repeats=3, base_urls="http://localhost:8000/v1")
    print(study.summary)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from pydantic import BaseModel, Field

from cogym_lab.core.blocking import run_to_end
from cogym_lab.eval.batch.progress import BatchProgress, CostMeter
from cogym_lab.eval.batch.seeds import trial_seed
from cogym_lab.eval.batch.sessions import clear_partial, is_finished, read_session_file
from cogym_lab.eval.stats.trials import (
    NoiseShares,
    noise_shares,
    sample_variance,
    trial_score,
    trial_stats,
)
from cogym_lab.lm import LM
from cogym_lab.records.trajectory import DERIVED_MARKER, SessionRecord, load_session
from cogym_lab.records.trajectory import find_sessions as _find_sessions
from cogym_lab.sessions import EVERY_LM, LMSettings, SessionSpec, build_session
from cogym_lab.teams.build import attach_tool_lms, tool_lm_config
from cogym_lab.teams.config import MemberConfig, TeamConfig, load_team
from cogym_lab.users.replay import turn_script

NOISE_DIR = "noise"
NOISE_FILE = "noise.json"
AGENT_DIR = "agent"
DEFAULT_REPEATS = 3
PerRole = str | Mapping[str, str] | None


class Regrades(BaseModel):
    """One saved outcome graded ``repeats`` times: the score each grading gave."""

    session: str  # the session's folder name in the run
    instance: str
    trial: int = 0
    scores: list[float] = Field(default_factory=list)  # Collab Scores; NaN for a failed grading
    lm_calls: int = 0  # the grader's LM calls over every grading: 0 for a deterministic grader
    note: str | None = None

    @property
    def variance(self) -> float:
        return sample_variance(self.scores)


class Reruns(BaseModel):
    """One session run again ``repeats`` times against its user's logged turns."""

    session: str
    instance: str
    trial: int = 0
    directories: list[str] = Field(default_factory=list)  # relative to the noise folder
    scores: list[float] = Field(default_factory=list)  # Collab Scores of the reruns that ran
    errors: list[str] = Field(default_factory=list)

    @property
    def variance(self) -> float:
        return sample_variance(self.scores)


class NoiseSummary(BaseModel):
    """The variances measured and the shares of the within-instance variance they explain."""

    within: float | None = None  # the trials' mean within-instance variance
    judge: float | None = None  # mean variance of one outcome's re-grades
    agent: float | None = None  # mean variance of one session's reruns (judge noise included)
    judge_share: float | None = None
    agent_share: float | None = None
    rest_share: float | None = None  # the simulated user and the interplay: what is left
    deterministic_grader: bool = False


class NoiseStudy(BaseModel):
    """The content of ``RUN_DIR/noise/noise.json``."""

    run: str
    repeats: int
    created_at: float = Field(default_factory=time.time)
    judge: list[Regrades] = Field(default_factory=list)
    agent: list[Reruns] = Field(default_factory=list)
    summary: NoiseSummary = Field(default_factory=NoiseSummary)
    notes: list[str] = Field(default_factory=list)

    def variances(self) -> tuple[float, float]:
        """Mean judge variance and mean agent variance over the sessions measured (NaN for a
        source not measured)."""
        return (_mean([r.variance for r in self.judge]),
                _mean([r.variance for r in self.agent]))

    def shares(self, within: float) -> NoiseShares:
        """The shares of ``within`` each source explains (see :func:`trials.noise_shares`)."""
        judge, agent = self.variances()
        return noise_shares(within, judge, agent)


def _mean(values: list[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return float(np.mean(clean)) if clean else math.nan


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def noise_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / NOISE_DIR


def read_noise(run_dir: str | Path) -> NoiseStudy | None:
    """The noise study of ``run_dir``, or ``None`` when it has none (or it is unreadable)."""
    try:
        return NoiseStudy.model_validate_json(
            (noise_dir(run_dir) / NOISE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# -- the study ----------------------------------------------------------------------------------

def study_noise(run_dir: str | Path, *, repeats: int = DEFAULT_REPEATS, judge: bool = True,
                agent: bool = True, models: PerRole = None, base_urls: PerRole = None,
                lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
                concurrency: int = 4, session: Mapping[str, Any] | None = None,
                progress: bool | TextIO = True) -> NoiseStudy:
    """Measure judge and agent noise on the sessions of the run in ``run_dir`` and write
    ``RUN_DIR/noise/noise.json``.

    ``repeats`` gradings of each outcome and reruns of each session (at least 2, for a
    variance). ``judge=False`` or ``agent=False`` leaves a source out. ``models``,
    ``base_urls`` and ``lm_arguments`` override the LM settings the sessions recorded, as
    :func:`cogym_lab.eval.run` takes them (the recorded endpoint may be gone; API keys come
    from the environment). ``session`` overrides the reruns' limits (``idle_seconds``,
    ``timeout`` ...). Works inside a running event loop (a notebook) too.
    """
    coroutine = astudy_noise(run_dir, repeats=repeats, judge=judge, agent=agent, models=models,
                             base_urls=base_urls, lm_arguments=lm_arguments,
                             concurrency=concurrency, session=session, progress=progress)
    return run_to_end(coroutine)


async def astudy_noise(run_dir: str | Path, *, repeats: int = DEFAULT_REPEATS,
                       judge: bool = True, agent: bool = True, models: PerRole = None,
                       base_urls: PerRole = None,
                       lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
                       concurrency: int = 4, session: Mapping[str, Any] | None = None,
                       progress: bool | TextIO = True) -> NoiseStudy:
    """:func:`study_noise` for async code."""
    from cogym_lab.eval.batch.runner import _lm_arguments

    if repeats < 2:
        raise ValueError("repeats must be at least 2: a variance needs two values")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    run_dir = Path(run_dir)
    records = [load_session(path) for path in _find_sessions([run_dir])]
    if not records:
        raise FileNotFoundError(f"{run_dir} holds no sessions")
    overrides = _lm_arguments(models, base_urls, lm_arguments)
    folder = noise_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DERIVED_MARKER).write_text(
        "Sessions derived from the run around this folder (its noise study); a search of the "
        "run passes over them.\n", encoding="utf-8")
    study = NoiseStudy(run=run_dir.name, repeats=repeats)
    semaphore = asyncio.Semaphore(concurrency)
    if judge:
        study.judge = list(await asyncio.gather(*(
            _bounded(semaphore, regrade(record, repeats, overrides)) for record in records
            if record.finished)))
        graded = [r for r in study.judge if r.note is None]
        study.summary.deterministic_grader = bool(graded) and all(r.lm_calls == 0
                                                                  for r in graded)
        if study.summary.deterministic_grader:
            study.notes.append("The task's grader made no LM call in any re-grading: it is "
                               "deterministic, so the judge adds no noise (0).")
    if agent:
        rerunnable = [r for r in records if r.finished and _user_roles(r)]
        if len(rerunnable) < len([r for r in records if r.finished]):
            study.notes.append("Sessions without a simulated user were not rerun: there is no "
                               "user side to hold fixed.")
        bar = BatchProgress(len(rerunnable) * repeats, done=0, meter=CostMeter(),
                            label=f"noise · {run_dir.name}", output=progress)
        try:
            study.agent = list(await asyncio.gather(*(
                _rerun_all(record, repeats, overrides, session or {}, folder, semaphore, bar)
                for record in rerunnable)))
        finally:
            await bar.close()
    within = _within_variance(records)
    judge_var, agent_var = study.variances()
    shares = noise_shares(within, judge_var, agent_var)
    study.summary = study.summary.model_copy(update={
        "within": _number(within), "judge": _number(judge_var), "agent": _number(agent_var),
        "judge_share": _number(shares.judge), "agent_share": _number(shares.agent),
        "rest_share": _number(shares.rest)})
    if math.isnan(within):
        study.notes.append("The run has no instance with two trials or more: the shares need "
                           "its within-instance variance (run it with trials=K).")
    path = folder / NOISE_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(study.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)
    return study


async def _bounded(semaphore: asyncio.Semaphore, coroutine: Any) -> Any:
    async with semaphore:
        return await coroutine


def _within_variance(records: list[SessionRecord]) -> float:
    by_instance: dict[str, list[tuple[bool, float]]] = {}
    for record in records:
        by_instance.setdefault(record.instance, []).append((record.delivered,
                                                            record.performance))
    return trial_stats(by_instance).variance.within


# -- judge noise --------------------------------------------------------------------------------

async def regrade(record: SessionRecord, repeats: int,
                  overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Regrades:
    """Grade ``record``'s outcome ``repeats`` times with its task's own grader, each time with
    a new LM (its seed from the instance, the trial and the grading's number)."""
    from cogym_lab.nodes.replay import rebuild_coordinator, replay_events

    instance, trial = _identity(record)
    result = Regrades(session=record.path.name, instance=record.instance, trial=trial)
    if not record.delivered:
        result.scores = [0.0] * repeats
        result.note = "not delivered: it scores 0 however it is graded"
        return result
    try:
        spec = _stored_spec(record)
        team = _team(spec)
        tools = tool_lm_config(team, _merged(spec, overrides or {}).lm_arguments())
        coordinator = rebuild_coordinator(record.session)
        for _ in replay_events(coordinator, record.events):
            pass
    except Exception as error:  # noqa: BLE001 - one session that cannot be rebuilt is a note
        result.note = f"could not rebuild its outcome: {type(error).__name__}: {error}"
        return result
    env = coordinator.env
    try:
        for number in range(repeats):
            seed = trial_seed(instance, trial, f"tools/regrade-{number}")
            for slot in [s for s in vars(env) if s.endswith("_lm")]:
                setattr(env, slot, None)  # a fresh LM, with this grading's seed, in each slot
            lms = attach_tool_lms(env, tools.model_copy(update={"seed": seed}))
            try:
                scores = await env.aevaluate()
                result.scores.append(trial_score(True, float(scores.get("performance",
                                                                         math.nan))))
            except Exception as error:  # noqa: BLE001 - a failed grading is a missing value
                result.scores.append(math.nan)
                result.note = f"a grading failed: {type(error).__name__}: {error}"
            finally:
                result.lm_calls += sum(lm.meter.calls + lm.meter.failures
                                       for lm in lms.values())
                for lm in lms.values():
                    await lm.aclose()
    finally:
        with contextlib.suppress(Exception):
            await env.aclose()
    return result


# -- agent noise --------------------------------------------------------------------------------

def _user_roles(record: SessionRecord) -> list[str]:
    """The roles played by a simulated user (an LM, kind ``user``)."""
    return [member.role for member in record.team if member.kind == "user"]


async def _rerun_all(record: SessionRecord, repeats: int,
                     overrides: Mapping[str, Mapping[str, Any]], limits: Mapping[str, Any],
                     folder: Path, semaphore: asyncio.Semaphore, bar: BatchProgress) -> Reruns:
    result = Reruns(session=record.path.name, instance=record.instance, trial=record.trial)
    outcomes = await asyncio.gather(*(
        _bounded(semaphore, rerun(record, number, overrides, limits, folder))
        for number in range(repeats)))
    for directory, score, error in outcomes:
        result.directories.append(directory)
        if error is not None:
            result.errors.append(error)
        else:
            result.scores.append(score)
        bar.session_ended(failed=error is not None)
    return result


def replay_spec(record: SessionRecord, number: int,
                overrides: Mapping[str, Mapping[str, Any]] | None = None,
                limits: Mapping[str, Any] | None = None) -> SessionSpec:
    """The spec of rerun ``number`` of ``record``: its recorded spec, each simulated user
    replaced by a replay of its logged turns, each other LM member with a new seed (the
    environment's and the tools' seeds as they were)."""
    instance, trial = _identity(record)
    spec = _merged(_stored_spec(record), overrides or {})
    team = _team(spec)
    members = dict(team.members)
    users = _user_roles(record)
    for role in users:
        moves = record.members.get(role, {}).get("usage", {}).get("moves")
        turns = turn_script(record.events, role, moves if isinstance(moves, list) else None)
        members[role] = MemberConfig(type="replay", options={"turns": turns})
    lm = {key: settings for key, settings in spec.lm.items() if key not in users}
    for role in [r for r, kind in record.kinds.items() if kind == "agent" and r in members]:
        seed = trial_seed(instance, trial, f"{role}/noise-{number}")
        lm[role] = lm.get(role, LMSettings()).model_copy(update={"seed": seed})
    update: dict[str, Any] = {"team": team.model_copy(update={"members": members}), "lm": lm}
    if limits:
        update["limits"] = spec.limits.model_copy(update=dict(limits))
    return spec.model_copy(update=update)


async def rerun(record: SessionRecord, number: int,
                overrides: Mapping[str, Mapping[str, Any]], limits: Mapping[str, Any],
                folder: Path) -> tuple[str, float, str | None]:
    """Run rerun ``number`` of ``record`` (or read it, when an earlier study finished it): its
    folder relative to ``folder``, its Collab Score, and its error when it failed."""
    name = f"{AGENT_DIR}/{record.path.name}-r{number}"
    directory = folder / name
    if is_finished(directory):
        return name, _score(read_session_file(directory) or {}), None
    clear_partial(directory)
    lms: dict[str, LM] = {}
    try:
        spec = replay_spec(record, number, overrides, limits)
        session = build_session(spec, results_dir=directory,
                                session_id=f"noise-{record.path.name}-r{number}-"
                                           f"{uuid.uuid4().hex[:8]}")
        lms = session.lms
        result = await session.run()
        return name, trial_score(result.delivered,
                                 float(result.scores.get("performance", math.nan))), None
    except Exception as error:  # noqa: BLE001 - one rerun failing is recorded, not raised
        return name, math.nan, f"{type(error).__name__}: {error}"
    finally:
        for lm in lms.values():
            with contextlib.suppress(Exception):
                await lm.aclose()


def _score(session: Mapping[str, Any]) -> float:
    scores = session.get("scores") or {}
    performance = scores.get("performance") if isinstance(scores, dict) else None
    return trial_score(bool(session.get("delivered")),
                       float(performance) if isinstance(performance, int | float) else math.nan)


# -- reading what a session recorded ------------------------------------------------------------

def _identity(record: SessionRecord) -> tuple[int, int]:
    """The instance number (0 for a task without instances) and the trial."""
    batch = record.session.get("batch")
    number = batch.get("instance") if isinstance(batch, dict) else None
    if not isinstance(number, int):
        number = record.env_args.get("instance")
    return (number if isinstance(number, int) and number >= 0 else 0), record.trial


def _stored_spec(record: SessionRecord) -> SessionSpec:
    stored = record.session.get("spec")
    if not isinstance(stored, dict):  # a results directory without it: a value, not a type
        raise ValueError(  # noqa: TRY004
            f"{record.path} stores no session spec (it predates stored specs)")
    return SessionSpec.model_validate(stored)


def _team(spec: SessionSpec) -> TeamConfig:
    if isinstance(spec.team, TeamConfig):
        return spec.team
    return load_team(spec.team or "collaborative")


def _merged(spec: SessionSpec, overrides: Mapping[str, Mapping[str, Any]]) -> SessionSpec:
    """``spec`` with the caller's LM settings over the recorded ones: settings for every LM
    (``"*"``) replace that field in every recorded entry, so a recorded endpoint that is gone
    is replaced everywhere."""
    if not overrides:
        return spec
    lm = dict(spec.lm)
    every = dict(overrides.get(EVERY_LM, {}))
    if every:
        lm = {key: settings.model_copy(update=every) for key, settings in lm.items()}
        lm[EVERY_LM] = lm.get(EVERY_LM, LMSettings()).model_copy(update=every)
    for key, settings in overrides.items():
        if key != EVERY_LM:
            lm[key] = lm.get(key, LMSettings()).model_copy(update=dict(settings))
    return spec.model_copy(update={"lm": lm})


__all__ = ["AGENT_DIR", "DEFAULT_REPEATS", "NOISE_DIR", "NOISE_FILE", "NoiseStudy",
           "NoiseSummary", "Regrades", "Reruns", "astudy_noise", "noise_dir", "read_noise",
           "regrade", "replay_spec", "rerun", "study_noise"]
