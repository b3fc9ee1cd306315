"""One session of a batch run, from the batch's plan.

A :class:`BatchPlan` holds what every session of a batch shares: the spec each session is built
from (its ``instance`` set per session), the team, the seeds the caller fixed, the prices and the
run's name. It is plain data (pydantic models and numbers), so it can be shipped to a worker
process on another machine, which then runs a session exactly as the driver would:
:func:`run_planned_session` builds it from the plan with its trial's seeds, runs it into a folder
and returns its ``run.json`` entry, recording a failure rather than raising it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.core import CoEnv
from cogym_lab.eval.batch.disk import disk_full_cause
from cogym_lab.eval.batch.manifest import Price, SessionEntry, Tokens
from cogym_lab.eval.batch.progress import CostMeter, cost_usd, lm_usage, outside_usage
from cogym_lab.eval.batch.seeds import ENV, trial_seed
from cogym_lab.eval.batch.sessions import (
    LM_USAGE_FIELD,
    clear_partial,
    new_batch_session_id,
    record_failure,
    session_dir_name,
    usage_by_model,
)
from cogym_lab.lm import LM
from cogym_lab.nodes.env_node import LOG_FAILED
from cogym_lab.nodes.session import Session
from cogym_lab.sessions import LMSettings, SessionSpec, build_session
from cogym_lab.teams.config import TeamConfig

SessionKey = tuple[int, int]  # (instance, trial)


@dataclass
class BatchPlan:
    """What the sessions of one batch share, wherever they run."""

    spec: SessionSpec
    team: TeamConfig
    #: The run folder's name, recorded in each session.json (``batch.run``).
    run_name: str
    prices: dict[str, Price]
    #: Seeds the caller fixed (the run's arguments, the team file), by role; the other roles
    #: (LM members, ``tools``, ``env``) get one per trial.
    fixed_seeds: dict[str, int | None]

    @property
    def task(self) -> str:
        return self.spec.task

    def seeds(self, instance: int, trial: int) -> dict[str, int]:
        """Every seed of one trial, by role: fixed ones as fixed, the others derived."""
        return {role: trial_seed(instance, trial, role) if fixed is None else fixed
                for role, fixed in self.fixed_seeds.items()}

    def identity(self, instance: int, trial: int) -> dict[str, Any]:
        """What ``session.json`` records of the session's place in the batch (``batch``)."""
        return {"run": self.run_name, "instance": instance, "trial": trial,
                "seeds": self.seeds(instance, trial)}

    def spec_for(self, instance: int, seeds: Mapping[str, int]) -> SessionSpec:
        """The spec of one trial: the instance, each LM's seed and the environment's."""
        lm = dict(self.spec.lm)
        for role, seed in seeds.items():
            if role != ENV:
                lm[role] = lm.get(role, LMSettings()).model_copy(update={"seed": seed})
        limits = self.spec.limits.model_copy(update={"seed": seeds[ENV]})
        return self.spec.model_copy(update={"instance": instance, "lm": lm, "limits": limits})


async def run_planned_session(plan: BatchPlan, directory: Path, number: int, trial: int = 0, *,
                              meter: CostMeter | None = None) -> SessionEntry:
    """Run one trial of an instance from scratch into ``directory``; any failure is recorded
    there and returned, never raised, but a full disk's (an ``OSError`` the batch stops on,
    :mod:`cogym_lab.eval.batch.disk`). ``meter`` follows the session's LMs while it runs."""
    name = session_dir_name(number, trial)
    session_id = new_batch_session_id(plan.team.name, plan.task, number, trial)
    lms: dict[str, LM] = {}
    env: CoEnv | None = None
    entry = SessionEntry(instance=number, trial=trial, directory=name, session_id=session_id)
    identity = plan.identity(number, trial)
    seeds = identity["seeds"]
    try:
        clear_partial(directory)
        session = build_session(plan.spec_for(number, seeds), results_dir=directory,
                                session_id=session_id)
        env, lms = session.env, session.lms
        if meter is not None:
            meter.track((number, trial), lms)
        # The runner's own record goes into the session's two writes of session.json (no third
        # one): its place in the batch at the start, its LM usage with the end, so a session.json
        # that says finished always holds it. An outside agent's tokens are those it reported
        # (its LM is not the session's).
        recorded: dict[str, dict[str, Any]] = {}
        session.record_fields = {"batch": identity}
        session.closing_fields = functools.partial(_closing_usage, session, recorded)
        result = await session.run()
        env = None  # the session closed it
        if result.end_reason == LOG_FAILED and session.env_node is not None and \
                (full := disk_full_cause(session.env_node.log_error)) is not None:
            raise full  # not this session's failure: the batch stops (below)
        usage = recorded or _usage(session)
        entry = entry.model_copy(update={
            "status": "finished", "end_reason": result.end_reason,
            "delivered": result.delivered, "scores": result.scores,
            "duration": round(result.duration, 3), "outcome_class": result.outcome_class,
            "cause": result.failure.describe() if result.failure else None})
    except Exception as error:
        if disk_full_cause(error) is not None:
            # A full disk fails every session alike: raised, it stops the batch, and this
            # session stays pending. Its folder goes (which frees space too), so a resumed run
            # starts it again from scratch.
            with contextlib.suppress(OSError):
                clear_partial(directory)
            raise
        usage = lm_usage(lms)
        message = record_failure(directory, error, session_id=session_id, task=plan.task,
                                 env_args={"instance": number, **plan.spec.env_args},
                                 lm_usage=usage, batch=identity)
        entry = entry.model_copy(update={"status": "failed", "error": message,
                                         "outcome_class": "infrastructure"})
    finally:
        await _close(env, lms.values())
    by_model = usage_by_model(usage)
    if meter is not None:
        meter.settle((number, trial), by_model)
    return entry.model_copy(update={"tokens": Tokens.from_models(by_model),
                                    "cost_usd": cost_usd(by_model, plan.prices)})


def _usage(session: Session) -> dict[str, dict[str, Any]]:
    return {**lm_usage(session.lms), **outside_usage(session.members)}


def _closing_usage(session: Session, recorded: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The LM usage for the session's last write of session.json, kept in ``recorded`` for the
    run.json entry too (the same numbers in both)."""
    recorded.clear()
    recorded.update(_usage(session))
    return {LM_USAGE_FIELD: recorded}


async def _close(env: CoEnv | None, lms: Iterable[LM]) -> None:
    if env is not None:  # a session that failed before closing its env (a kernel, say)
        with contextlib.suppress(Exception):
            await env.aclose()
    for lm in lms:
        with contextlib.suppress(Exception):
            await lm.aclose()


__all__ = ["BatchPlan", "SessionKey", "run_planned_session"]
