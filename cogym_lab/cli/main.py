"""The ``cogym-lab`` command."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from cogym_lab.bus import Bus, connect_bus
from cogym_lab.cli.data_command import data
from cogym_lab.cli.eval_command import eval_group
from cogym_lab.cli.grade_command import grade
from cogym_lab.cli.mcp_command import mcp_command
from cogym_lab.cli.options import (
    build_failed,
    env_args,
    lm_options,
    lm_settings,
    make_spec,
    protocol_option,
    read_spec,
    task_options,
)
from cogym_lab.cli.study_command import study
from cogym_lab.core.outcome_class import CLASS_WORDS
from cogym_lab.nodes.transcript import Transcript
from cogym_lab.sessions import SessionBuildError

console = Console(highlight=False)


def _bus(url: str | None) -> Bus:
    try:
        return connect_bus(url)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--bus/--redis") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cogym_lab")
def main() -> None:
    """Co-Gym in notebooks: people and LM agents working on one shared workspace."""


@main.command()
@task_options
@click.option("--team", default=None,
              help="A ready team (see `teams`) or the path of a team file (default: the task's "
                   "own).")
@lm_options
@click.option("--spec", "spec_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Run the session a spec file describes: a session.json from "
                                 "a results directory, or a bare spec (JSON). LM and timing "
                                 "options still apply on top.")
@click.option("--bus", "bus_url", default=None, metavar="URL",
              help="memory:// (default) or redis://HOST:PORT/DB.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Parent folder of the session's results directory.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=None,
              help="Inactivity before a tick notifies everyone (default: the team's, else 60).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
              help="Wall-clock limit for the session, in seconds [default: 600].")
@protocol_option
@click.option("--quiet", is_flag=True, help="Print only the summary.")
@click.pass_context
def run(ctx: click.Context, task: str, instance: int | None, env_arg: tuple[str, ...],
        team: str | None, models: tuple[str, ...], base_urls: tuple[str, ...],
        spec_path: Path | None, bus_url: str | None, out: Path, idle_seconds: float | None,
        timeout: float | None, protocol: str, quiet: bool) -> None:
    """Run one session of TEAM on TASK (or the session --spec describes) and write its results
    directory."""
    from cogym_lab.sessions import build_session

    limits = {"idle_seconds": idle_seconds, "timeout": timeout}
    lm = lm_settings(models, base_urls)
    if spec_path is not None:
        _refuse_with_spec(ctx, ("task", "instance", "env_arg", "team", "protocol"))
        spec = read_spec(spec_path)
        spec = make_spec(**spec.model_dump(exclude_none=True) | {
            "lm": _merged_lm(spec.lm_arguments(), lm),
            "limits": spec.limits.overrides() | {k: v for k, v in limits.items() if v}})
    else:
        spec = make_spec(task=task, instance=instance, env_args=env_args(env_arg), team=team,
                         lm=lm, protocol=protocol, limits=limits | {"timeout": timeout or 600.0})
    try:
        session = build_session(spec, bus=_bus(bus_url),
                                observers=[] if quiet else [Transcript(console, spec.task)])
    except SessionBuildError as error:
        raise build_failed(error) from None
    people = [member.role for member in session.team if member.kind == "person"]
    if people:
        raise click.BadParameter(f"{', '.join(people)} must be a person, who joins from the "
                                 "notebook panel; `run` needs agents and simulated users only",
                                 param_hint="--spec" if spec_path else "--team")
    session.results_dir = out / session.session_id
    _say_if_sample(session)
    if not quiet:
        console.print(f"[bold]Task:[/] {session.env.task_description}")
        console.print(f"[bold]Team:[/] {session.spec.team_name}")
    result = session.run_sync()
    console.print(f"\n[bold]Session {result.session_id}[/] ended: {result.end_reason} after "
                  f"{result.events} events in {result.duration:.2f}s (protocol "
                  f"{session.env.protocol}"
                  f"{', sample data' if session.data_source == 'sample' else ''})",
                  soft_wrap=True)  # one line whatever the terminal's width, like the cause
    if result.failure is not None:  # said before the outcome: it is why the outcome is so
        console.print(f"[red]{CLASS_WORDS[result.outcome_class].capitalize()}:[/] "
                      f"{result.failure.describe()}", soft_wrap=True)
    console.print(f"Delivered: {result.delivered}   Outcome: {json.dumps(result.outcome)}")
    console.print("Scores: " + (", ".join(f"{k}={v:.2f}" for k, v in result.scores.items())
                                or "none"))
    console.print(f"Results: {result.results_dir}")


def _say_if_sample(session: Any) -> None:
    """A session on the sample that comes with the package says so once, on stderr (the task's
    loader may have said it already: then this says nothing)."""
    if session.data_sample is not None:
        from cogym_lab.datasets import announce_once

        announce_once(session.data_sample)


def _refuse_with_spec(ctx: click.Context, names: tuple[str, ...]) -> None:
    """The options a spec file replaces may not be given beside it."""
    given = [name for name in names
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
    if given:
        shown = ", ".join("--" + name.replace("_", "-") for name in given)
        raise click.BadParameter(f"{shown} cannot be given with --spec: the spec says it",
                                 param_hint="--spec")


def _merged_lm(stored: dict[str, dict[str, Any]],
               given: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    return {key: {**stored.get(key, {}), **given.get(key, {})} for key in {*stored, *given}}


@main.command()
def teams() -> None:
    """List the ready teams (use a name, or a path to your own file, with --team)."""
    from cogym_lab.teams import load_team, ready_teams

    for name in sorted(ready_teams()):
        console.print(f"[bold]{name}[/]: {load_team(name).description}")


@main.command()
def tasks() -> None:
    """List the tasks this installation can run, with the names of their instances where they
    have names (``--instance N``)."""
    from cogym_lab.envs import available_envs
    from cogym_lab.envs.registry import task_class

    for name in available_envs():
        console.print(name, markup=False)
        titles = getattr(task_class(name), "instance_titles", None)
        for number, title in enumerate(titles() if callable(titles) else []):
            console.print(f"  --instance {number}: {title}", markup=False, highlight=False)


@main.command("replay")
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--seq", type=int, default=None, help="Print the state after this event.")
def replay_command(results_dir: Path, seq: int | None) -> None:
    """Rebuild a session's states from RESULTS_DIR and print the final one (or one at --seq)."""
    from cogym_lab.nodes import ReplayMismatch, replay

    try:
        replayed = replay(results_dir, keep=[] if seq is None else [seq])
        state = replayed.final_state if seq is None else replayed.state_at(seq)
    except (FileNotFoundError, KeyError, ValueError, ReplayMismatch) as error:
        # ValueError: a log damaged before its last line (LogReadError names file and line)
        raise click.ClickException(f"cannot replay {results_dir}: {error}") from None
    console.print(f"Replayed {len(replayed.events)} events.")
    click.echo(json.dumps(state, indent=2, ensure_ascii=False))


main.add_command(data)
main.add_command(eval_group)
main.add_command(grade)
main.add_command(mcp_command)
main.add_command(study)


@main.group()
def node() -> None:
    """Run one node of a session in this process, on a shared Redis."""


def _node_options(func: Any) -> Any:
    func = click.option("--session", "session_id", required=True, help="Session id.")(func)
    func = click.option("--redis", "redis_url", required=True, metavar="URL",
                        help="redis://HOST:PORT/DB shared by the session's nodes.")(func)
    return click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help="Results directory of the session.")(func)


@node.command("env")
@_node_options
@task_options
@click.option("--team", default=None,
              help="Team file (or ready team) whose members join from their own processes "
                   "(default: the task's own).")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=60.0, show_default=True)
@click.option("--join-timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None)
@lm_options
@protocol_option
def env_node(session_id: str, redis_url: str, out: Path | None, task: str,
             instance: int | None, env_arg: tuple[str, ...], team: str | None,
             idle_seconds: float, join_timeout: float, timeout: float | None,
             models: tuple[str, ...], base_urls: tuple[str, ...], protocol: str) -> None:
    """Host the env: wait for the team's members to join, run the session, write the
    results."""
    from cogym_lab.sessions import build_session

    spec = make_spec(task=task, instance=instance, env_args=env_args(env_arg), team=team,
                     lm=lm_settings(models, base_urls), protocol=protocol,
                     limits={"idle_seconds": idle_seconds, "join_timeout": join_timeout,
                             "timeout": timeout})
    try:
        session = build_session(spec, session_id=session_id, results_dir=out, remote=True,
                                bus=_bus(redis_url),
                                observers=[Transcript(console, spec.task)])
    except SessionBuildError as error:
        raise build_failed(error) from None
    _say_if_sample(session)
    result = asyncio.run(_run_and_close(session.bus, session.run()))
    console.print(f"Session {result.session_id} ended: {result.end_reason}; "
                  f"delivered={result.delivered}", soft_wrap=True)
    if result.failure is not None:  # a member's LM, reported by its own node, or the judge's
        console.print(f"[red]{CLASS_WORDS[result.outcome_class].capitalize()}:[/] "
                      f"{result.failure.describe()}", soft_wrap=True)


def _member_command(kind: str) -> Any:
    @_node_options
    @click.option("--role", default=kind, show_default=True, help="This member's role.")
    @click.option("--team", default=None,
                  help="Team file (or ready team) that describes this member (default: the "
                       "task's own).")
    @task_options
    @lm_options
    @protocol_option
    def command(session_id: str, redis_url: str, out: Path | None, role: str, team: str | None,
                task: str, instance: int | None, env_arg: tuple[str, ...],
                models: tuple[str, ...], base_urls: tuple[str, ...], protocol: str) -> None:
        from cogym_lab.nodes import AgentNode, UserNode
        from cogym_lab.sessions import build_one_member

        # The same spec as the env node's: the member learns the task as the env sets it.
        spec = make_spec(task=task, instance=instance, env_args=env_args(env_arg), team=team,
                         lm=lm_settings(models, base_urls), protocol=protocol)
        try:
            member, member_kind = build_one_member(spec, role)
        except SessionBuildError as error:
            raise build_failed(error) from None
        if member_kind != kind:
            raise click.BadParameter(f"{role!r} is a member of kind {member_kind!r}; run it "
                                     f"with `cogym-lab node {member_kind}`", param_hint="--role")
        node_class = AgentNode if kind == "agent" else UserNode
        # The env's process cannot watch this member's LM: the node tells it of failures.
        running = node_class(_bus(redis_url), session_id, role, member, results_dir=out,
                             report_lm_failures=True)
        final = asyncio.run(_run_and_close(running.bus, running.run()))
        console.print(f"{role}: session ended ({final.end_reason})")

    command.__doc__ = (f"Run a {kind} member from a team file: join the session and act until "
                       "it ends.")
    return command


node.command("agent")(_member_command("agent"))
node.command("user")(_member_command("user"))


async def _run_and_close(bus: Bus | None, coroutine: Any) -> Any:
    try:
        return await coroutine
    finally:
        if bus is not None:
            await bus.close()


if __name__ == "__main__":
    sys.exit(main())
