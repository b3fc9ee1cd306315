"""The batch runner: one team on many instances of a task, many sessions at once in one event loop.

LM calls are I/O-bound, so sessions share one asyncio loop, each on its own in-process bus, with a
semaphore bounding how many run at a time. That loop is one of their own on a thread, not the
caller's, which stays responsive meanwhile (:mod:`cogym_lab.eval.batch.engines.inprocess`). With
``engine="ray"`` they run in Ray actors across a cluster instead, and this process writes what
they send back (:mod:`cogym_lab.eval.batch.engines`); everything below holds for both. Every session
writes ``OUT/<instance>/`` (a fixed name, so an interrupted run resumes: finished sessions are
skipped and partial ones redone from scratch, each attempt under a session id of its own:
``<team>-<task>-<instance>-<random>``).

With ``trials=K`` each instance runs K times: trial 0 in ``OUT/003/``, the others in
``OUT/003-t1/`` ... ``OUT/003-t<K-1>/``. Resuming works per trial. Each trial's members, the
task's tools and the environment get seeds derived from the instance, the trial and the role
(:func:`cogym_lab.eval.batch.seeds.trial_seed`), unless the caller fixed one; ``session.json``
records them (``batch.seeds``), and every LM call log line its seed. ``rerun`` names (instance,
trial) sessions to redo even when they finished: their old folders move to ``OUT/.replaced/``.

A failing session is recorded, with its error, in its directory and in the run's manifest
(``OUT/run.json``, plus ``OUT/sessions.jsonl`` while it runs); the batch goes on. ``run.json`` also
holds the configuration, package versions, LM names and token totals.

    from cogym_lab.eval import run

    summary = run(TASK, "collaborative", "0:10", out="results/collaborative",
                  models={"agent": "gpt-4o", "user": "gpt-4o-mini"}, concurrency=8)
    print(summary.counts, summary.tokens.total_tokens)
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from cogym_lab.core.blocking import run_to_end
from cogym_lab.core.protocol import DEFAULT_PROTOCOL, PAPER_PROTOCOL, get_protocol
from cogym_lab.core.turns import NOTIFICATIONS, check_interaction
from cogym_lab.datasets import announce_once, data_dir
from cogym_lab.envs.registry import task_class
from cogym_lab.envs.task_data import DataSource, data_files, sample_in_use
from cogym_lab.errors import CogymError
from cogym_lab.eval.batch.disk import DiskReserve, disk_full, disk_full_cause, write_or_release
from cogym_lab.eval.batch.engines import RayOptions, Workers, check_engine
from cogym_lab.eval.batch.engines.inprocess import InProcess
from cogym_lab.eval.batch.engines.processes import (
    ProcessWorkers,
    portable_task,
    smallest_limit,
    worker_count,
)
from cogym_lab.eval.batch.instance_spec import InstanceSpec, parse_instances
from cogym_lab.eval.batch.limits import batch_limits
from cogym_lab.eval.batch.manifest import (
    Invocation,
    LMDescription,
    Price,
    RunSummary,
    SessionEntry,
    SessionLog,
    package_versions,
    read_run,
)
from cogym_lab.eval.batch.plan import BatchPlan, SessionKey, run_planned_session
from cogym_lab.eval.batch.progress import BatchProgress, CostMeter, cost_usd
from cogym_lab.eval.batch.seeds import ENV
from cogym_lab.eval.batch.sessions import (
    finished_entry,
    is_finished,
    move_aside,
    session_dir_name,
    session_id_prefix,
)
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.lm.limits import ProviderLimits, current_gate
from cogym_lab.members import member_type
from cogym_lab.provenance import Provenance, run_provenance
from cogym_lab.sessions import (
    EVERY_LM,
    TOOLS,
    Limits,
    LMSettings,
    SessionSpec,
    session_config,
)
from cogym_lab.teams import load_team
from cogym_lab.teams.build import tool_lm_config
from cogym_lab.teams.config import TeamConfig

__all__ = ["RunSummary", "SampleDataRefused", "arun", "run"]

DEFAULT_TIMEOUT = 600.0  # seconds per session: a stuck session must not hold the batch forever
PerRole = str | Mapping[str, str] | None


@dataclass
class _Batch:
    """A batch on the driver: the plan each session is built from (what a Ray worker gets), the
    run's folder, and its accounting."""

    plan: BatchPlan
    out: Path
    meter: CostMeter
    lms: dict[str, LMDescription]
    #: Which data the task reads (``run.json``'s ``data``); None: it reads no dataset.
    data: DataSource | None = None

    @property
    def spec(self) -> SessionSpec:
        return self.plan.spec

    @property
    def team(self) -> TeamConfig:
        return self.plan.team

    @property
    def task(self) -> str:
        return self.plan.task

    @property
    def prices(self) -> dict[str, Price]:
        return self.plan.prices


def run(task: str, team: str | Path | TeamConfig = "collaborative",
        instances: InstanceSpec = None, *, out: str | Path, concurrency: int = 8,
        models: PerRole = None, base_urls: PerRole = None,
        lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
        env_args: Mapping[str, Any] | None = None, idle_seconds: float | None = None,
        timeout: float | None = DEFAULT_TIMEOUT, agent_step_limit: int | None = None,
        session: Mapping[str, Any] | None = None,
        prices: Mapping[str, Price | tuple[float, float] | Mapping[str, float]] | None = None,
        protocol: str = DEFAULT_PROTOCOL, progress: bool | TextIO = True, trials: int = 1,
        rerun: Iterable[tuple[int, int]] = (), interaction: str | None = None,
        limits: ProviderLimits | Mapping[str, Any] | None = None,
        engine: str = "inprocess", address: str | None = None,
        sessions_per_actor: int | None = None, actors_per_node: int | None = None,
        storage: str | Path | None = None, allow_sample: bool = False,
        retry_failed: bool = False, workers: int | None = None) -> RunSummary:
    """Run ``team`` on ``instances`` of ``task`` and write every session under ``out``.

    ``instances`` is a spec such as ``"0:102"`` or ``"0,3,5"``, a list, or ``None`` for all.
    ``models`` and ``base_urls`` set every LM member's model and endpoint (a string) or some
    roles' (``{"agent": "gpt-4o", "user": "gpt-4o-mini"}``; ``"*"`` means every member, and
    ``"tools"`` the task's own tools; settings for a role the team lacks are left out, so one
call may serve several teams); ``lm_arguments`` gives any other LM setting by role. Task
    tools (judges, drafting, plan parsing) use the settings for ``"*"`` and ``"tools"``, then the
    environment (``COGYM_MODEL`` ...), then the team file's ``[tools.lm]`` (else its first
    agent's LM). ``protocol`` names the scoring protocol (``cogym``, the paper's, by default; it
    also picks the instance set). ``env_args`` go to every instance; ``idle_seconds``,
    ``timeout``, ``agent_step_limit`` and ``session`` override the team's session settings.
    ``prices`` (US dollars per million input and output tokens, by model name) add a dollar
    figure to the running cost; a team file may give them too, as ``price = {input = 2.5,
    output = 10.0}`` under ``[members.ROLE.lm]``. ``progress`` draws a tqdm bar on stderr (or on
    the given stream; ``False`` for none), counting sessions.

    ``trials`` runs each instance that many times, each trial with seeds of its own (see the
    module docstring); a seed given in ``lm_arguments`` (``{"agent": {"seed": 7}}``), a team
    file's LM table or, for the environment, ``session={"seed": ...}`` or the team's
    ``[session] seed`` is kept for every trial. ``rerun`` lists (instance, trial) sessions to
    run again even when they finished (their old folders move to ``OUT/.replaced/``); they are
    run whether or not ``instances`` and ``trials`` cover them.

    ``interaction``: ``"turns"`` runs every session with strict turn-taking (the Co-Gym paper's
    §5.3 ablation, ``cogym_lab.core.turns``), ``"notifications"`` with Co-Gym's protocol;
    ``None`` keeps the team's ``[session] interaction`` (else notifications). A run folder holds
    one interaction: run the other into a folder of its own, and report both together.

    ``limits`` (:class:`~cogym_lab.lm.limits.ProviderLimits`) bound the LM requests in flight
    and per minute, by endpoint and model, over those the team file gives in its LM tables
    (``max_in_flight``, ``requests_per_minute``); they hold for every LM call of this process
    while the run lasts (docs/evaluation-runs.md, "Provider limits").

    ``workers`` spreads the in-process engine's sessions over that many worker processes of
    this machine, each with its own event loop (:mod:`cogym_lab.eval.batch.engines.processes`);
    ``0`` keeps them all on one loop in this process. ``None`` (the default) chooses: one loop
    up to 250 sessions at once, above that one process per 250, up to the cores less one.
    Tasks registered with ``register_env`` reach the workers if their factory pickles.

    ``engine="ray"`` runs the sessions on a Ray cluster (the ``ray`` extra) instead of in this
    process: ``address`` names the cluster (``None``: as ``ray.init()`` finds one, ``"auto"``,
    ``"HOST:PORT"`` or ``"ray://HOST:PORT"``), ``actors_per_node`` actors (1) start on each node,
    each running ``sessions_per_actor`` sessions (8) at once; ``concurrency`` is then theirs.
    The workers send each session's folder back and this process writes it, unless ``storage``
    names the run folder as the workers see it (a shared file system), where they write it
    themselves. Everything else (``run.json``, resuming, the bar and the cost) is the same;
    see :mod:`cogym_lab.eval.batch.engines.ray_engine` for what a lost worker costs.

    When nobody chose a data directory (no ``env_args["data_dir"]``, no ``COGYM_DATA``) and the
    default one lacks the task's files, the sessions read the small sample of the task's data
    that comes with the package. Numbers from it are not comparable with the papers', so under
    the ``cogym`` protocol (the paper's) the run refuses to start
    (:class:`SampleDataRefused`, saying how to get the full data) unless ``allow_sample``; a
    run on the sample says ``"data": "sample"`` in ``run.json``, and its report says so.

    ``retry_failed`` runs again only the sessions of the run in ``out`` that ended for a cause
    outside the team: an LM that failed past its retries (the agent's, the simulated user's, a
    judge's), a crash, a log that could not be written (their ``outcome_class`` in ``run.json``
    is not ``completed``; :mod:`cogym_lab.core.outcome_class`). Their old folders move to
    ``OUT/.replaced/``; ``instances`` and ``trials`` are not used then.

    Works inside a running event loop too (a notebook): the batch then runs on a thread of its
    own. Use :func:`arun` from async code.
    """
    coroutine = arun(task, team, instances, out=out, concurrency=concurrency, models=models,
                     base_urls=base_urls, lm_arguments=lm_arguments, env_args=env_args,
                     idle_seconds=idle_seconds, timeout=timeout,
                     agent_step_limit=agent_step_limit, session=session, prices=prices,
                     protocol=protocol, progress=progress, trials=trials, rerun=rerun,
                     interaction=interaction, limits=limits, engine=engine, address=address,
                     sessions_per_actor=sessions_per_actor, actors_per_node=actors_per_node,
                     storage=storage, allow_sample=allow_sample, retry_failed=retry_failed,
                     workers=workers)
    return run_to_end(coroutine)


async def arun(task: str, team: str | Path | TeamConfig = "collaborative",
               instances: InstanceSpec = None, *, out: str | Path, concurrency: int = 8,
               models: PerRole = None, base_urls: PerRole = None,
               lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
               env_args: Mapping[str, Any] | None = None, idle_seconds: float | None = None,
               timeout: float | None = DEFAULT_TIMEOUT, agent_step_limit: int | None = None,
               session: Mapping[str, Any] | None = None,
               prices: Mapping[str, Price | tuple[float, float] | Mapping[str, float]]
               | None = None,
               protocol: str = DEFAULT_PROTOCOL,
               progress: bool | TextIO = True, trials: int = 1,
               rerun: Iterable[tuple[int, int]] = (),
               interaction: str | None = None,
               limits: ProviderLimits | Mapping[str, Any] | None = None,
               engine: str = "inprocess", address: str | None = None,
               sessions_per_actor: int | None = None, actors_per_node: int | None = None,
               storage: str | Path | None = None, allow_sample: bool = False,
               retry_failed: bool = False, workers: int | None = None) -> RunSummary:
    """:func:`run` for async code."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if trials < 1:
        raise ValueError("trials must be at least 1")
    engine_name = check_engine(engine)
    ray_options = _ray_options(engine_name, address, sessions_per_actor, actors_per_node,
                               storage)
    if workers is not None and (engine_name == "ray" or workers < 0):
        raise ValueError("workers: a number from 0, for engine='inprocess'")
    chosen = check_interaction(interaction) if interaction is not None else None
    redo = _rerun_keys(rerun)
    if retry_failed:
        redo |= _failed_keys(Path(out))
    team_config = team if isinstance(team, TeamConfig) else load_team(team)
    people = [role for role, member in team_config.members.items() if member.is_person]
    if people:
        raise ValueError(f"{', '.join(people)} must be a person, who joins from a notebook "
                         "panel; a batch runs agents and simulated users only")
    team_config.check_plays(task)
    protocol = get_protocol(protocol).name
    # Before the instances are counted: counting loads the dataset (or its sample).
    data = _data_of_run(task, env_args or {}, protocol, allow_sample)
    numbers = parse_instances(instances, _instance_count(task, protocol))
    session_limits = {"idle_seconds": idle_seconds, "timeout": timeout,
                      "agent_step_limit": agent_step_limit, "interaction": chosen,
                      **(session or {})}
    # The team itself goes into the spec: each session.json then holds the team it ran with.
    spec = SessionSpec(task=task, team=team_config, env_args=dict(env_args or {}),
                       lm=_team_lm(team_config, _lm_arguments(models, base_urls, lm_arguments)),
                       protocol=protocol,
                       limits=Limits(**{k: v for k, v in session_limits.items()
                                        if v is not None}))
    all_prices = {**_team_prices(spec, team_config), **_prices(prices)}
    out = Path(out)
    lms = _describe_lms(spec, team_config)
    provider_limits = batch_limits(_limit_tables(spec, team_config), limits)
    plan = BatchPlan(spec=spec, team=team_config, run_name=out.name, prices=all_prices,
                     fixed_seeds=_fixed_seeds(spec, team_config, lms))
    batch = _Batch(plan=plan, out=out, meter=CostMeter(all_prices), lms=lms, data=data)
    keys = sorted(redo if retry_failed else
                  {*((n, t) for n in numbers for t in range(trials)), *redo})
    if ray_options is not None:
        ray_options = dataclasses.replace(ray_options, limits=provider_limits)
    async with _workers(batch, concurrency, ray_options, workers,
                        provider_limits) as engine_workers:
        return await _run_batch(batch, engine_workers, keys, redo, provider_limits, progress,
                                label=f"{task} · {team_config.name}"
                                + (f" · {trials} trials" if trials > 1 else ""))


async def _run_batch(batch: _Batch, workers: Workers, keys: list[SessionKey],
                     redo: set[SessionKey], provider_limits: ProviderLimits,
                     progress: bool | TextIO, *, label: str) -> RunSummary:
    """Run the batch's sessions that have not finished on ``workers``, keeping ``run.json``,
    the bar and the cost meter up to date; the summary, once every session has ended (or the
    run was interrupted: it is written then too)."""
    out = batch.out
    # Space for the last run.json, taken before the first: a disk that fills up during the run
    # still lets run.json say the run was interrupted (cogym_lab.eval.batch.disk).
    reserve = DiskReserve(out, len(keys) + _earlier_sessions(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
        reserve.take()
        summary = _start_summary(batch, keys, workers.concurrency, redo, workers.describe(),
                                 provider_limits)
    except OSError as error:
        reserve.release()
        if (cause := disk_full_cause(error)) is None:
            raise
        raise disk_full(out, cause, resume="nothing of this run was started.") from None
    entries = {s.key: s for s in summary.sessions}
    pending = [key for key in keys if entries[key].status != "finished"]
    for key in keys:
        if entries[key].status == "finished":
            batch.meter.add(entries[key].tokens.by_model)
    invocation = summary.invocations[-1]
    bar = BatchProgress(len(keys), done=len(keys) - len(pending), meter=batch.meter,
                        label=label, output=progress, gate=workers.gate)
    # run.json was written whole by _start_summary; until this invocation ends, each session
    # that ends costs one line of sessions.jsonl, not a rewrite of every entry (see
    # batch.manifest). Counts and totals are worked out once, at the end, for the same reason.
    session_log = SessionLog(out, invocation=len(summary.invocations) - 1)
    position = {s.key: i for i, s in enumerate(summary.sessions)}

    def ended(entry: SessionEntry) -> None:
        summary.sessions[position[entry.key]] = entry
        invocation.ran += 1
        session_log.append(entry)
        bar.session_ended(failed=entry.status == "failed")

    gate = current_gate()  # the run's provider limits hold for every LM of the process meanwhile
    layer = None if provider_limits.is_empty else gate.add_limits(provider_limits)
    bar.start_ticking()
    full: OSError | None = None
    try:
        await workers.run(pending, ended)
    except OSError as error:
        if (full := disk_full_cause(error)) is None:
            raise
    finally:
        session_log.close()
        invocation.ended_at = time.time()
        invocation.loop_lag = workers.lag
        invocation.loop_lags = workers.lags
        requested = set(keys)
        invocation.interrupted = any(s.status == "pending" for s in summary.sessions
                                     if s.key in requested)
        summary.status = "interrupted" if invocation.interrupted else "finished"
        summary.ended_at = invocation.ended_at
        summary.recount()
        written = False
        try:
            write_or_release(lambda: summary.write(out), reserve)
            written = True
            session_log.close(remove=True)  # run.json now holds every line of it
        except OSError as error:
            if full is None and (full := disk_full_cause(error)) is None:
                raise
        finally:
            reserve.release()
            if layer is not None:
                gate.remove_limits(layer)
            await bar.close()
    if full is not None:
        counts = summary.counts
        state = f"run.json says {summary.status}" if written else \
            "run.json could not be updated, sessions.jsonl holds what ended"
        raise disk_full(out, full, resume=(
            f"the {counts.finished} finished sessions are kept and the other "
            f"{counts.total - counts.finished} resume ({state}).")) from None
    return summary


def _earlier_sessions(out: Path) -> int:
    """How many sessions the run in ``out`` lists already (0 for none): they stay in run.json."""
    earlier = read_run(out) if (out / "run.json").is_file() else None
    return len(earlier.sessions) if earlier is not None else 0


# -- one session ----------------------------------------------------------------------------------

async def _run_session(batch: _Batch, number: int, trial: int = 0) -> SessionEntry:
    """Run one trial of an instance from scratch in this process, into its folder of the run;
    any failure is recorded and returned, never raised."""
    return await run_planned_session(batch.plan, batch.out / session_dir_name(number, trial),
                                     number, trial, meter=batch.meter)


@contextlib.asynccontextmanager
async def _workers(batch: _Batch, concurrency: int, ray_options: RayOptions | None,
                   processes: int | None = None,
                   limits: ProviderLimits | None = None) -> AsyncIterator[Workers]:
    """The engine that runs the batch's sessions, for the ``async with`` block."""
    if ray_options is None:
        count, factory = _process_count(batch.task, concurrency, processes, limits)
        if count:
            yield ProcessWorkers(plan=batch.plan, out=batch.out, meter=batch.meter,
                                 concurrency=concurrency, workers=count, limits=limits,
                                 task_factory=factory)
            return
        # _run_session looked up on each call (a benchmark replaces it)
        yield InProcess(lambda key: _run_session(batch, *key), concurrency)
        return
    # imports without Ray; ray_workers says how to install it when it is missing
    from cogym_lab.eval.batch.engines.ray_engine import ray_workers

    async with ray_workers(batch.plan, batch.out, ray_options, batch.meter) as workers:
        yield workers


def _process_count(task: str, concurrency: int, asked: int | None,
                   limits: ProviderLimits | None) -> tuple[int, Any]:
    """How many worker processes the in-process engine runs on (0: one loop here), and the
    task's factory to send them when it was registered at run time.

    Asked for (``asked``), a count is kept unless a provider limit is smaller (each worker gets
    a share of it) or the task cannot reach a worker: both are refused. Chosen here, the count
    drops to what the limits allow, and to none for a task that cannot reach a worker."""
    count = worker_count(concurrency) if asked is None else asked
    smallest = smallest_limit(limits)
    if count and smallest is not None and smallest < count:
        if asked is not None:
            raise ValueError(f"a provider limit of {smallest} cannot be shared by {count} "
                             "worker processes (each gets a share of it); ask for fewer "
                             "workers, or run on Ray, whose workers share one gate")
        count = smallest if smallest > 1 else 0
    try:
        factory = portable_task(task) if count else None
    except ValueError:
        if asked is not None:
            raise
        return 0, None  # one loop here, where the task is known
    return count, factory


def _ray_options(engine: str, address: str | None, sessions_per_actor: int | None,
                 actors_per_node: int | None, storage: str | Path | None) -> RayOptions | None:
    """The Ray engine's options; ``None`` for the in-process engine, which takes none."""
    given = {"address": address, "sessions_per_actor": sessions_per_actor,
             "actors_per_node": actors_per_node, "storage": storage}
    if engine != "ray":
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise ValueError(f"{', '.join(named)}: options of engine='ray'")
        return None
    defaults = RayOptions()
    return RayOptions(address=address,
                      sessions_per_actor=defaults.sessions_per_actor
                      if sessions_per_actor is None else sessions_per_actor,
                      actors_per_node=defaults.actors_per_node
                      if actors_per_node is None else actors_per_node,
                      storage=None if storage is None else str(storage))


# -- set-up ---------------------------------------------------------------------------------------

class SampleDataRefused(CogymError, ValueError):
    """A run under the paper's protocol would read the sample of the task's data that comes
    with the package, whose numbers are not comparable with the papers'."""


def _data_of_run(task: str, env_args: Mapping[str, Any], protocol: str,
                 allow_sample: bool) -> DataSource | None:
    """Which data the run's sessions will read (decided here, as each session's build decides
    it); raises :class:`SampleDataRefused` for the sample under the paper's protocol unless
    ``allow_sample``. On the sample, its notice goes to stderr once."""
    try:
        if not data_files(task):
            return None
    except KeyError:  # an unknown task: counting its instances says so
        return None
    folder = env_args.get("data_dir")
    sample = sample_in_use(task, folder if isinstance(folder, str | Path) else None)
    if sample is None:
        return "full"
    if protocol == PAPER_PROTOCOL and not allow_sample:
        raise SampleDataRefused(
            f"The {task} data is not in {data_dir(None)}, so this run would read the small "
            f"sample that comes with cogym_lab ({sample.summary}). The {PAPER_PROTOCOL} "
            "protocol follows the Co-Gym paper, and numbers from a sample are not comparable "
            "with the papers', so the run does not start. For the full data, run "
            + " and ".join(f"`{command}`" for command in sample.full_data_commands())
            + " (in a notebook: " + " and ".join(
                f"`{command}`" for command in sample.full_data_commands(where="notebook"))
            + "), or "
            "pass --allow-sample (allow_sample=True in Python) to run on the sample anyway: "
            "run.json and the report then mark the run as sample data.")
    announce_once(sample)
    return "sample"


def _instance_count(task: str, protocol: str) -> int:
    factory = task_class(task)
    if factory is None:
        from cogym_lab.envs import available_envs

        raise ValueError(f"Unknown task {task!r}. Available: {', '.join(available_envs())}.")
    instances = getattr(factory, "instances", None)
    return len(instances(protocol)) if callable(instances) else 1


def _lm_arguments(models: PerRole, base_urls: PerRole,
                  extra: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    arguments: dict[str, dict[str, Any]] = {}
    for key, given in (("model", models), ("base_url", base_urls)):
        per_role = {"*": given} if isinstance(given, str) else dict(given or {})
        for role, value in per_role.items():
            arguments.setdefault(role, {})[key] = value
    for role, settings in (extra or {}).items():
        arguments.setdefault(role, {}).update(settings)
    return arguments


def _team_lm(team: TeamConfig,
             arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, LMSettings]:
    """The LM settings that apply to ``team``: one batch call may give settings by role for
    several teams (an autonomous team has no ``user``), so those for roles it lacks are left
    out rather than refused."""
    keys = {EVERY_LM, TOOLS, *team.members}
    return {key: LMSettings(**settings) for key, settings in arguments.items() if key in keys}


def _lm_members(team: TeamConfig) -> list[str]:
    """The roles whose member type uses an LM."""
    return [role for role, member in team.members.items()
            if not member.is_person and member_type(member.type).uses_lm]


def _resolved_lm(spec: SessionSpec, team: TeamConfig, role: str) -> LMConfig:
    """The LM settings of one member, checked now so a missing model fails before any session."""
    config = LMConfig.resolve(arguments=spec.lm_for(role), toml=team.members[role].lm)
    make_lm(config, member=role)  # raises LMNotConfigured with what to set
    return config


def _limit_tables(spec: SessionSpec, team: TeamConfig) -> list[tuple[LMConfig, dict[str, Any]]]:
    """Each LM's resolved settings with the team-file table that may give its provider limits
    (``[members.ROLE.lm]``, ``[tools.lm]``)."""
    tables = [(_resolved_lm(spec, team, role), team.members[role].lm)
              for role in _lm_members(team)]
    if team.tools is not None:
        tables.append((tool_lm_config(team, spec.lm_arguments()), team.tools.lm))
    return tables


def _describe_lms(spec: SessionSpec, team: TeamConfig) -> dict[str, LMDescription]:
    described = {}
    for role in _lm_members(team):
        config = _resolved_lm(spec, team, role)
        described[role] = LMDescription(model=config.model, base_url=config.base_url,
                                        provider=config.provider)
    tools = tool_lm_config(team, spec.lm_arguments())
    if tools.model:
        described[TOOLS] = LMDescription(model=tools.model, base_url=tools.base_url,
                                         provider=tools.provider)
    return described


def _fixed_seeds(spec: SessionSpec, team: TeamConfig,
                 lms: Mapping[str, LMDescription]) -> dict[str, int | None]:
    """The roles that get a seed in each trial (the LM members, the task's tools when they have
    an LM, the environment), each with the seed the caller fixed, else ``None``."""
    fixed: dict[str, int | None] = {role: _resolved_lm(spec, team, role).seed
                                    for role in _lm_members(team)}
    if TOOLS in lms:
        fixed[TOOLS] = tool_lm_config(team, spec.lm_arguments()).seed
    fixed[ENV] = session_config(team, spec).seed
    return fixed


def _failed_keys(out: Path) -> set[SessionKey]:
    """The sessions of the run in ``out`` that ended for a cause outside the team."""
    earlier = read_run(out)
    if earlier is None:
        raise ValueError(f"{out} holds no run (run.json) whose failed sessions could be retried")
    return {entry.key for entry in earlier.not_counted}


def _rerun_keys(rerun: Iterable[tuple[int, int]]) -> set[SessionKey]:
    keys = set()
    for key in rerun:
        instance, trial = key
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                   for n in (instance, trial)):
            raise ValueError(f"rerun names sessions as (instance, trial) pairs of numbers "
                             f"from 0; got {key!r}")
        keys.add((instance, trial))
    return keys


def _team_prices(spec: SessionSpec, team: TeamConfig) -> dict[str, Price]:
    prices = {}
    for role in _lm_members(team):
        given = team.members[role].lm.get("price")
        model = _resolved_lm(spec, team, role).model
        if given is not None and model:
            prices[model] = _price(given)
    return prices


def _prices(given: Mapping[str, Any] | None) -> dict[str, Price]:
    return {model: _price(price) for model, price in (given or {}).items()}


def _price(value: Any) -> Price:
    if isinstance(value, Price):
        return value
    if isinstance(value, Mapping):
        return Price.model_validate(value)
    input_price, output_price = value
    return Price(input=input_price, output=output_price)


def _start_summary(batch: _Batch, keys: list[SessionKey], concurrency: int,
                   redo: Iterable[SessionKey] = (),
                   engine: Mapping[str, Any] | None = None,
                   limits: ProviderLimits | None = None) -> RunSummary:
    """The run.json of this invocation: an earlier run's sessions carried over, the sessions to
    redo moved aside, then written."""
    batch.out.mkdir(parents=True, exist_ok=True)
    earlier = read_run(batch.out)
    protocol = batch.spec.protocol or DEFAULT_PROTOCOL
    if earlier is not None and (earlier.task, earlier.team, earlier.protocol) != (
            batch.task, batch.team.name, protocol):
        raise ValueError(f"{batch.out} holds a run of team {earlier.team!r} on "
                         f"{earlier.task!r} under protocol {earlier.protocol!r}; give another "
                         "output folder")
    interaction = session_config(batch.team, batch.spec).interaction
    earlier_interaction = (earlier.session_config if earlier else {}).get(
        "interaction", NOTIFICATIONS)  # runs from before the option had notifications
    if earlier is not None and earlier_interaction != interaction:  # never resume into a mix
        raise ValueError(f"{batch.out} holds a run with interaction {earlier_interaction!r}, "
                         f"not {interaction!r}; give another output folder")
    if earlier is not None and earlier.data and batch.data and earlier.data != batch.data:
        raise ValueError(f"{batch.out} holds a run on the {earlier.data} data, and this one "
                         f"would read the {batch.data} data; give another output folder")
    requested, redo = set(keys), set(redo)
    sessions = {s.key: s for s in (earlier.sessions if earlier else [])
                if s.key not in requested}
    skipped = 0
    for number, trial in keys:
        name = session_dir_name(number, trial)
        directory = batch.out / name
        prefix = session_id_prefix(batch.team.name, batch.task, number, trial)
        if (number, trial) in redo:
            move_aside(directory)  # before anything else: a kill now leaves it pending
        if is_finished(directory):
            entry = finished_entry(directory, number, prefix, trial)
            entry.cost_usd = cost_usd(entry.tokens.by_model, batch.prices)
            skipped += 1
        else:
            entry = SessionEntry(instance=number, trial=trial, directory=name,
                                 session_id=prefix)
        sessions[number, trial] = entry
    now = time.time()
    provenance = _provenance(batch, sorted({number for number, _ in sessions}))
    summary = RunSummary(
        task=batch.task, team=batch.team.name, protocol=protocol, data=batch.data,
        team_config=batch.team.model_dump(mode="json"),
        instances=sorted({number for number, _ in sessions}), concurrency=concurrency,
        env_args=batch.spec.env_args,
        session_config=dataclasses.asdict(session_config(batch.team, batch.spec)),
        lms=batch.lms, prices=batch.prices,
        versions=package_versions(), provenance=provenance, status="running",
        started_at=earlier.started_at if earlier else now,
        sessions=[sessions[key] for key in sorted(sessions)],
        invocations=[*(earlier.invocations if earlier else []),
                     Invocation(started_at=now, skipped=skipped, engine=dict(engine or {}),
                                limits=limits or ProviderLimits(),
                                versions=provenance.versions())],
    )
    summary.out = str(batch.out)
    summary.recount(skipped=skipped)
    summary.write(batch.out)
    return summary


def _provenance(batch: _Batch, instances: list[int]) -> Provenance:
    """The run's provenance over ``instances`` (every instance the run folder holds). Hashes
    the task's data files once for the process: its sessions find them in the cache."""
    protocol = batch.spec.protocol or DEFAULT_PROTOCOL
    folder = batch.spec.env_args.get("data_dir")
    folder = folder if isinstance(folder, str | Path) else None
    sample = sample_in_use(batch.task, folder) if batch.data == "sample" else None
    return run_provenance(task=batch.task, protocol=protocol, team=batch.team,
                          instances=instances,
                          instance_count=_instance_count(batch.task, protocol),
                          data=batch.data, data_folder=folder, sample=sample)
