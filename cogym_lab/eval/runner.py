"""The batch runner: one team on many instances of a task, many sessions at once in one event loop.

LM calls are I/O-bound, so sessions share one asyncio loop, each on its own in-process bus, with a
semaphore bounding how many run at a time. Every session writes ``OUT/<instance>/`` (a fixed name,
so an interrupted run resumes: finished sessions are skipped and partial ones redone from scratch).
A failing session is recorded, with its error, in its directory and in ``OUT/run.json``; the batch
goes on. ``run.json`` also holds the configuration, package versions, LM names and token totals.

    from cogym_lab.eval import run

    summary = run("travel_planning", "collaborative", "0:10", out="results/travel-collab",
                  models={"agent": "gpt-4o", "user": "gpt-4o-mini"}, concurrency=8)
    print(summary.counts, summary.tokens.total_tokens)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from cogym_lab.agents import AGENT_TYPES
from cogym_lab.core import CoEnv
from cogym_lab.core.protocol import DEFAULT_PROTOCOL, get_protocol
from cogym_lab.envs import make_env
from cogym_lab.envs.registry import _resolve as env_factory
from cogym_lab.eval.batch_manifest import (
    Invocation,
    LMDescription,
    Price,
    RunSummary,
    SessionEntry,
    Tokens,
    package_versions,
    read_run,
)
from cogym_lab.eval.batch_progress import BatchProgress, CostMeter, cost_usd, lm_usage
from cogym_lab.eval.batch_sessions import (
    clear_partial,
    finished_entry,
    is_finished,
    merge_session_file,
    record_failure,
    session_dir_name,
    usage_by_model,
)
from cogym_lab.eval.instance_spec import InstanceSpec, parse_instances
from cogym_lab.lm import LM, LMConfig, make_lm
from cogym_lab.nodes.session import Session, SessionConfig
from cogym_lab.teams import load_team
from cogym_lab.teams.build import attach_tool_lms, build_team, session_config, tool_lm_config
from cogym_lab.teams.config import TeamConfig

__all__ = ["RunSummary", "arun", "run"]

DEFAULT_TIMEOUT = 600.0  # seconds per session: a stuck session must not hold the batch forever
PerRole = str | Mapping[str, str] | None


@dataclass
class _Batch:
    """Everything the sessions of one batch share."""

    task: str
    team: TeamConfig
    protocol: str
    out: Path
    env_args: dict[str, Any]
    lm_arguments: dict[str, dict[str, Any]]
    tools_lm: LMConfig
    config: SessionConfig
    prices: dict[str, Price]
    meter: CostMeter
    lms: dict[str, LMDescription]


def run(task: str, team: str | Path | TeamConfig = "collaborative",
        instances: InstanceSpec = None, *, out: str | Path, concurrency: int = 8,
        models: PerRole = None, base_urls: PerRole = None,
        lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
        env_args: Mapping[str, Any] | None = None, idle_seconds: float | None = None,
        timeout: float | None = DEFAULT_TIMEOUT, agent_step_limit: int | None = None,
        session: Mapping[str, Any] | None = None,
        prices: Mapping[str, Price | tuple[float, float] | Mapping[str, float]] | None = None,
        protocol: str = DEFAULT_PROTOCOL, progress: bool | TextIO = True) -> RunSummary:
    """Run ``team`` on ``instances`` of ``task`` and write every session under ``out``.

    ``instances`` is a spec such as ``"0:102"`` or ``"0,3,5"``, a list, or ``None`` for all.
    ``models`` and ``base_urls`` set every LM member's model and endpoint (a string) or some
    roles' (``{"agent": "gpt-4o", "user": "gpt-4o-mini"}``; ``"*"`` means every member, and
    ``"tools"`` the task's own tools); ``lm_arguments`` gives any other LM setting by role. Task
    tools (judges, drafting, plan parsing) use the settings for ``"*"`` and ``"tools"``, then the
    environment (``COGYM_MODEL`` ...), then the team file's ``[tools.lm]`` (else its first
    agent's LM). ``protocol`` names the scoring protocol (``cogym``, the paper's, by default; it
    also picks the instance set). ``env_args`` go to every instance; ``idle_seconds``,
    ``timeout``, ``agent_step_limit`` and ``session`` override the team's session settings.
    ``prices`` (US dollars per million input and output tokens, by model name) add a dollar
    figure to the running cost; a team file may give them too, as ``price = {input = 2.5,
    output = 10.0}`` under ``[members.ROLE.lm]``. ``progress`` draws a tqdm bar on stderr (or on
    the given stream; ``False`` for none).

    Works inside a running event loop too (a notebook): the batch then runs on a thread of its
    own. Use :func:`arun` from async code.
    """
    coroutine = arun(task, team, instances, out=out, concurrency=concurrency, models=models,
                     base_urls=base_urls, lm_arguments=lm_arguments, env_args=env_args,
                     idle_seconds=idle_seconds, timeout=timeout,
                     agent_step_limit=agent_step_limit, session=session, prices=prices,
                     protocol=protocol, progress=progress)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


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
               progress: bool | TextIO = True) -> RunSummary:
    """:func:`run` for async code."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    team_config = team if isinstance(team, TeamConfig) else load_team(team)
    people = [role for role, member in team_config.members.items() if member.kind == "person"]
    if people:
        raise ValueError(f"{', '.join(people)} must be a person, who joins from a notebook "
                         "panel; a batch runs agents and simulated users only")
    protocol = get_protocol(protocol).name
    numbers = parse_instances(instances, _instance_count(task, protocol))
    arguments = _lm_arguments(models, base_urls, lm_arguments)
    all_prices = {**_team_prices(team_config, arguments), **_prices(prices)}
    config = session_config(team_config, idle_seconds=idle_seconds, timeout=timeout,
                            agent_step_limit=agent_step_limit)
    if session:
        config = dataclasses.replace(config, **session)
    out = Path(out)
    batch = _Batch(task=task, team=team_config, protocol=protocol, out=out,
                   env_args=dict(env_args or {}), lm_arguments=arguments,
                   tools_lm=tool_lm_config(team_config, arguments), config=config,
                   prices=all_prices,
                   meter=CostMeter(all_prices), lms=_describe_lms(team_config, arguments))
    summary = _start_summary(batch, numbers, concurrency)
    todo = [n for n in numbers if summary.entry(n).status != "finished"]
    for number in numbers:
        if number not in todo:
            batch.meter.add(summary.entry(number).tokens.by_model)
    invocation = summary.invocations[-1]
    bar = BatchProgress(len(numbers), done=len(numbers) - len(todo), meter=batch.meter,
                        label=f"{task} · {team_config.name}", output=progress)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        async with semaphore:
            entry = await _run_session(batch, number)
        summary.sessions = [entry if s.instance == number else s for s in summary.sessions]
        invocation.ran += 1
        summary.recount()
        summary.write(out)
        bar.session_ended(failed=entry.status == "failed")

    tasks = [asyncio.create_task(one(number)) for number in todo]
    bar.start_ticking()
    try:
        await asyncio.gather(*tasks)
    finally:
        for task_ in tasks:
            task_.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        invocation.ended_at = time.time()
        invocation.interrupted = any(s.status == "pending" for s in summary.sessions
                                     if s.instance in numbers)
        summary.status = "interrupted" if invocation.interrupted else "finished"
        summary.ended_at = invocation.ended_at
        summary.recount()
        summary.write(out)
        await bar.close()
    return summary


# -- one session ----------------------------------------------------------------------------------

async def _run_session(batch: _Batch, number: int) -> SessionEntry:
    """Run one instance from scratch; any failure is recorded and returned, never raised."""
    name = session_dir_name(number)
    directory = batch.out / name
    session_id = f"{batch.team.name}-{batch.task}-{name}"
    lms: dict[str, LM] = {}
    env: CoEnv | None = None
    entry = SessionEntry(instance=number, directory=name, session_id=session_id)
    try:
        clear_partial(directory)
        env = make_env(batch.task, instance=number, protocol=batch.protocol, **batch.env_args)
        tools = attach_tool_lms(env, batch.tools_lm)
        lms.update({f"env.{slot}": lm for slot, lm in tools.items()})
        members, kinds = build_team(batch.team, env, batch.lm_arguments)
        lms.update({role: lm for role, teammate in members.items()
                    if isinstance(lm := getattr(teammate, "lm", None), LM)})
        batch.meter.track(number, lms)
        session = Session(env, members, kinds=kinds, results_dir=directory,
                          session_id=session_id, config=batch.config, task=batch.task)
        result = await session.run()
        env = None  # the session closed it
        usage = lm_usage(lms)
        merge_session_file(directory, lm_usage=usage,
                           batch={"run": batch.out.name, "instance": number})
        entry = entry.model_copy(update={
            "status": "finished", "end_reason": result.end_reason,
            "delivered": result.delivered, "scores": result.scores,
            "duration": round(result.duration, 3)})
    except Exception as error:  # recorded, and the batch goes on
        usage = lm_usage(lms)
        message = record_failure(directory, error, session_id=session_id, task=batch.task,
                                 env_args={"instance": number, **batch.env_args},
                                 lm_usage=usage, batch={"run": batch.out.name,
                                                        "instance": number})
        entry = entry.model_copy(update={"status": "failed", "error": message})
    finally:
        await _close(env, lms.values())
    by_model = usage_by_model(usage)
    batch.meter.settle(number, by_model)
    return entry.model_copy(update={"tokens": Tokens.from_models(by_model),
                                    "cost_usd": cost_usd(by_model, batch.prices)})


async def _close(env: CoEnv | None, lms: Any) -> None:
    if env is not None:  # a session that failed before closing its env (a kernel, say)
        with contextlib.suppress(Exception):
            await env.aclose()
    for lm in lms:
        with contextlib.suppress(Exception):
            await lm.aclose()


# -- set-up ---------------------------------------------------------------------------------------

def _instance_count(task: str, protocol: str) -> int:
    try:
        factory = env_factory(task)
    except KeyError as error:
        raise ValueError(str(error.args[0])) from None
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


def _lm_members(team: TeamConfig) -> list[str]:
    return [role for role, member in team.members.items()
            if member.kind != "person" and (member.type in AGENT_TYPES
                                            or member.type == "simulated")]


def _resolved_lm(team: TeamConfig, role: str,
                 arguments: Mapping[str, Mapping[str, Any]]) -> LMConfig:
    """The LM settings of one member, checked now so a missing model fails before any session."""
    merged = {**arguments.get("*", {}), **arguments.get(role, {})}
    config = LMConfig.resolve(arguments=merged, toml=team.members[role].lm)
    make_lm(config, member=role)  # raises LMNotConfigured with what to set
    return config


def _describe_lms(team: TeamConfig,
                  arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, LMDescription]:
    described = {}
    for role in _lm_members(team):
        config = _resolved_lm(team, role, arguments)
        described[role] = LMDescription(model=config.model, base_url=config.base_url,
                                        provider=config.provider)
    tools = tool_lm_config(team, arguments)
    if tools.model:
        described["tools"] = LMDescription(model=tools.model, base_url=tools.base_url,
                                           provider=tools.provider)
    return described


def _team_prices(team: TeamConfig,
                 arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, Price]:
    prices = {}
    for role in _lm_members(team):
        given = team.members[role].lm.get("price")
        model = _resolved_lm(team, role, arguments).model
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


def _start_summary(batch: _Batch, numbers: list[int], concurrency: int) -> RunSummary:
    """The run.json of this invocation: an earlier run's sessions carried over, then written."""
    batch.out.mkdir(parents=True, exist_ok=True)
    earlier = read_run(batch.out)
    if earlier is not None and (earlier.task, earlier.team, earlier.protocol) != (
            batch.task, batch.team.name, batch.protocol):
        raise ValueError(f"{batch.out} holds a run of team {earlier.team!r} on "
                         f"{earlier.task!r} under protocol {earlier.protocol!r}; give another "
                         "output folder")
    kept = {s.instance: s for s in (earlier.sessions if earlier else [])
            if s.instance not in numbers}
    sessions = dict(kept)
    skipped = 0
    for number in numbers:
        name = session_dir_name(number)
        directory = batch.out / name
        if is_finished(directory):
            entry = finished_entry(directory, number, f"{batch.team.name}-{batch.task}-{name}")
            entry.cost_usd = cost_usd(entry.tokens.by_model, batch.prices)
            skipped += 1
        else:
            entry = SessionEntry(instance=number, directory=name,
                                 session_id=f"{batch.team.name}-{batch.task}-{name}")
        sessions[number] = entry
    now = time.time()
    summary = RunSummary(
        task=batch.task, team=batch.team.name, protocol=batch.protocol,
        team_config=batch.team.model_dump(mode="json"),
        instances=sorted(sessions), concurrency=concurrency, env_args=batch.env_args,
        session_config=dataclasses.asdict(batch.config),
        lms=batch.lms, prices=batch.prices,
        versions=package_versions(), status="running",
        started_at=earlier.started_at if earlier else now,
        sessions=[sessions[n] for n in sorted(sessions)],
        invocations=[*(earlier.invocations if earlier else []),
                     Invocation(started_at=now, skipped=skipped)],
    )
    summary.out = str(batch.out)
    summary.recount(skipped=skipped)
    summary.write(batch.out)
    return summary
