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
from cogym_lab.cli.transcript import Transcript

console = Console(highlight=False)


def _parse_pairs(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    parsed = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=what)
        parsed[key] = value
    return parsed


def _env_args(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--env-arg k=v``: values are JSON when they parse as JSON, text otherwise."""
    args: dict[str, Any] = {}
    for key, value in _parse_pairs(pairs, "--env-arg").items():
        try:
            args[key] = json.loads(value)
        except ValueError:
            args[key] = value
    return args


def _make_env(task: str, env_arg: tuple[str, ...], instance: int | None = None,
              protocol: str | None = None) -> Any:
    from cogym_lab.envs import make_env

    try:
        return make_env(task, instance=instance, protocol=protocol, **_env_args(env_arg))
    except KeyError as error:
        raise click.BadParameter(str(error.args[0]), param_hint="--task") from None
    except IndexError as error:
        raise click.BadParameter(str(error), param_hint="--instance") from None
    except (TypeError, ValueError) as error:
        raise click.BadParameter(str(error), param_hint="--env-arg") from None


def _load_team(name: str) -> Any:
    from cogym_lab.teams import load_team

    try:
        return load_team(name)
    except FileNotFoundError as error:
        raise click.BadParameter(str(error), param_hint="--team") from None
    except ValueError as error:  # TOML or schema errors
        raise click.BadParameter(f"cannot read team {name!r}: {error}", param_hint="--team") \
            from None


def _lm_arguments(roles: list[str], models: tuple[str, ...],
                  base_urls: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``--model gpt-4o`` for every LM (members and the task's tools), ``--model
    user=gpt-4o-mini`` for one member, ``--model tools=gpt-4o`` for the task's tools only."""
    from cogym_lab.teams.build import TOOLS

    arguments: dict[str, dict[str, str]] = {}
    for key, values in (("model", models), ("base_url", base_urls)):
        for value in values:
            role, sep, rest = value.partition("=")
            named = sep and role in (*roles, TOOLS)
            target, setting = (role, rest) if named else ("*", value)
            arguments.setdefault(target, {})[key] = setting
    return arguments


def _build(team: Any, env: Any, lm_arguments: dict[str, dict[str, str]],
           only: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    from cogym_lab.lm import LMNotConfigured
    from cogym_lab.teams.build import build_member, build_team

    try:
        if only is not None:
            if only not in team.members:
                raise click.BadParameter(f"team {team.name!r} has no member {only!r}; its "
                                         f"members are {', '.join(team.members)}",
                                         param_hint="--role")
            lm_args = {**lm_arguments.get("*", {}), **lm_arguments.get(only, {})}
            member = build_member(only, team.members[only], env, lm_args)
            return {only: member}, {only: team.members[only].kind}
        return build_team(team, env, lm_arguments)
    except LMNotConfigured as error:
        raise click.ClickException(str(error)) from None
    except (ValueError, TypeError) as error:
        raise click.BadParameter(str(error), param_hint="--team") from None


def _bus(url: str | None) -> Bus:
    try:
        return connect_bus(url)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--bus/--redis") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cogym_lab")
def main() -> None:
    """Co-Gym in notebooks: people and LM agents working on one shared workspace."""


def _task_options(func: Any) -> Any:
    func = click.option("--env-arg", multiple=True, metavar="KEY=VALUE",
                        help="Argument for the task, on top of the instance.")(func)
    func = click.option("--instance", type=click.IntRange(min=0), default=None,
                        help="Instance number of the task (default: the task's defaults).")(func)
    return click.option("--task", default="todo", show_default=True,
                        help="Task to run (see `tasks`).")(func)


def _lm_options(func: Any) -> Any:
    func = click.option("--base-url", "base_urls", multiple=True, metavar="[ROLE=]URL",
                        help="OpenAI-compatible endpoint for every LM, or for ROLE ('tools': "
                             "the task's drafting assistant, judges and parsers).")(func)
    return click.option("--model", "models", multiple=True, metavar="[ROLE=]MODEL",
                        help="Model for every LM (members and the task's tools), or for ROLE "
                             "(repeatable; 'tools' for the task's tools).")(func)


def _protocol_option(func: Any) -> Any:
    from cogym_lab.core.protocol import DEFAULT_PROTOCOL, PROTOCOLS

    return click.option("--protocol", type=click.Choice(sorted(PROTOCOLS)),
                        default=DEFAULT_PROTOCOL, show_default=True,
                        help="Scoring protocol: 'cogym' follows the Co-Gym paper and release; "
                             "see docs/evaluation.md for 'cogym_lab'.")(func)


def _attach_tools(env: Any, team: Any, lm_arguments: dict[str, dict[str, str]]) -> None:
    """The task's own LMs (drafting, judging, parsing) get the session's LM settings."""
    from cogym_lab.teams.build import attach_tool_lms, tool_lm_config

    attach_tool_lms(env, tool_lm_config(team, lm_arguments))


@main.command()
@_task_options
@click.option("--team", default="example", show_default=True,
              help="A ready team (see `teams`) or the path of a team file.")
@_lm_options
@click.option("--bus", "bus_url", default=None, metavar="URL",
              help="memory:// (default) or redis://HOST:PORT/DB.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Parent folder of the session's results directory.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=None,
              help="Inactivity before a tick notifies everyone (default: the team's, else 60).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=600.0, show_default=True,
              help="Wall-clock limit for the session, in seconds.")
@_protocol_option
@click.option("--quiet", is_flag=True, help="Print only the summary.")
def run(task: str, instance: int | None, env_arg: tuple[str, ...], team: str,
        models: tuple[str, ...], base_urls: tuple[str, ...], bus_url: str | None, out: Path,
        idle_seconds: float | None, timeout: float, protocol: str, quiet: bool) -> None:
    """Run one session of TEAM on TASK and write its results directory."""
    from cogym_lab.nodes import Session
    from cogym_lab.teams.build import session_config

    env = _make_env(task, env_arg, instance, protocol)
    team_config = _load_team(team)
    if team_config.name == "example" and task != "todo":
        raise click.BadParameter("the example team plays only the 'todo' task",
                                 param_hint="--team")
    people = [role for role, m in team_config.members.items() if m.kind == "person"]
    if people:
        raise click.BadParameter(f"{', '.join(people)} must be a person, who joins from the "
                                 "notebook panel; `run` needs agents and simulated users only",
                                 param_hint="--team")
    lm_arguments = _lm_arguments(list(team_config.members), models, base_urls)
    members, kinds = _build(team_config, env, lm_arguments)
    _attach_tools(env, team_config, lm_arguments)
    session = Session(
        env, members, kinds=kinds, bus=_bus(bus_url), task=task,
        config=session_config(team_config, idle_seconds=idle_seconds, timeout=timeout),
        observers=[] if quiet else [Transcript(console)],
    )
    session.results_dir = out / session.session_id
    if not quiet:
        console.print(f"[bold]Task:[/] {env.task_description}")
        console.print(f"[bold]Team:[/] {team_config.name}: {team_config.description}")
    result = session.run_sync()
    console.print(f"\n[bold]Session {result.session_id}[/] ended: {result.end_reason} after "
                  f"{result.events} events in {result.duration:.2f}s (protocol {env.protocol})")
    console.print(f"Delivered: {result.delivered}   Outcome: {json.dumps(result.outcome)}")
    console.print("Scores: " + (", ".join(f"{k}={v:.2f}" for k, v in result.scores.items())
                                or "none"))
    console.print(f"Results: {result.results_dir}")


@main.command()
def teams() -> None:
    """List the ready teams (use a name, or a path to your own file, with --team)."""
    from cogym_lab.teams import load_team, ready_teams

    for name in sorted(ready_teams()):
        console.print(f"[bold]{name}[/]: {load_team(name).description}")


@main.command()
def tasks() -> None:
    """List the tasks this installation can run."""
    from cogym_lab.envs import available_envs

    for name in available_envs():
        console.print(name)


@main.command("replay")
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--seq", type=int, default=None, help="Print the state after this event.")
def replay_command(results_dir: Path, seq: int | None) -> None:
    """Rebuild a session's states from RESULTS_DIR and print the final one (or one at --seq)."""
    from cogym_lab.nodes import ReplayMismatch, replay

    try:
        replayed = replay(results_dir)
        state = replayed.final_state if seq is None else replayed.state_at(seq)
    except (FileNotFoundError, KeyError, ValueError, ReplayMismatch) as error:
        # ValueError: a log damaged before its last line (LogReadError names file and line)
        raise click.ClickException(f"cannot replay {results_dir}: {error}") from None
    console.print(f"Replayed {len(replayed.frames)} events.")
    click.echo(json.dumps(state, indent=2, ensure_ascii=False))


main.add_command(data)
main.add_command(eval_group)
main.add_command(grade)


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
@_task_options
@click.option("--member", "members", multiple=True, required=True, metavar="ROLE=KIND",
              help="A team member, e.g. agent=agent or user=user. Repeat for each.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=60.0, show_default=True)
@click.option("--join-timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None)
@click.option("--team", default=None,
              help="Team file (or ready team) whose [tools.lm] the task's own LMs use.")
@_lm_options
@_protocol_option
def env_node(session_id: str, redis_url: str, out: Path | None, task: str,
             instance: int | None, env_arg: tuple[str, ...], members: tuple[str, ...],
             idle_seconds: float, join_timeout: float, timeout: float | None, team: str | None,
             models: tuple[str, ...], base_urls: tuple[str, ...], protocol: str) -> None:
    """Host the env: wait for the members to join, run the session, write the results."""
    from cogym_lab.nodes import Session, SessionConfig
    from cogym_lab.teams.config import TeamConfig

    kinds = _parse_pairs(members, "--member")
    bad = {k: v for k, v in kinds.items() if v not in ("agent", "user", "person")}
    if bad:
        raise click.BadParameter(f"kinds must be agent, user or person: {bad}",
                                 param_hint="--member")
    env = _make_env(task, env_arg, instance, protocol)
    team_config = _load_team(team) if team else TeamConfig(name="members", members={})
    _attach_tools(env, team_config, _lm_arguments(list(kinds), models, base_urls))
    session = Session(env, dict.fromkeys(kinds), kinds=kinds,  # type: ignore[arg-type]
                      bus=_bus(redis_url), session_id=session_id, results_dir=out, task=task,
                      config=SessionConfig(idle_seconds=idle_seconds, join_timeout=join_timeout,
                                           timeout=timeout),
                      observers=[Transcript(console)])
    result = asyncio.run(_run_and_close(session.bus, session.run()))
    console.print(f"Session {result.session_id} ended: {result.end_reason}; "
                  f"delivered={result.delivered}")


def _member_command(kind: str) -> Any:
    @_node_options
    @click.option("--role", default=kind, show_default=True, help="This member's role.")
    @click.option("--team", default="example", show_default=True,
                  help="Team file (or ready team) that describes this member.")
    @_task_options
    @_lm_options
    @_protocol_option
    def command(session_id: str, redis_url: str, out: Path | None, role: str, team: str,
                task: str, instance: int | None, env_arg: tuple[str, ...],
                models: tuple[str, ...], base_urls: tuple[str, ...], protocol: str) -> None:
        from cogym_lab.nodes import AgentNode, UserNode

        team_config = _load_team(team)
        # The env is built here only to read what a simulated user may know (the same
        # task, instance and protocol as the env node's).
        env = _make_env(task, env_arg, instance, protocol)
        lm_arguments = _lm_arguments(list(team_config.members), models, base_urls)
        members, _ = _build(team_config, env, lm_arguments, only=role)
        node_class = AgentNode if kind == "agent" else UserNode
        member = node_class(_bus(redis_url), session_id, role, members[role], results_dir=out)
        final = asyncio.run(_run_and_close(member.bus, member.run()))
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
