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
from cogym_lab.cli.transcript import Transcript

EXAMPLE_TEAMMATES = {
    "example-agent": "cogym_lab.envs.todo:ExampleAgent",
    "example-user": "cogym_lab.envs.todo:ExampleUser",
}
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


def _make_env(task: str, env_arg: tuple[str, ...]) -> Any:
    from cogym_lab.envs import make_env

    try:
        return make_env(task, **_env_args(env_arg))
    except KeyError as error:
        raise click.BadParameter(str(error.args[0]), param_hint="--task") from None
    except (TypeError, ValueError) as error:
        raise click.BadParameter(str(error), param_hint="--env-arg") from None


def _teammate(spec: str) -> Any:
    from cogym_lab.envs import load_object

    path = EXAMPLE_TEAMMATES.get(spec, spec)
    try:
        return load_object(path)()
    except (ImportError, AttributeError, ValueError) as error:
        known = ", ".join(EXAMPLE_TEAMMATES)
        raise click.BadParameter(f"cannot load {spec!r} ({error}); use one of {known} or "
                                 "package.module:Class", param_hint="--impl") from None


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
@click.option("--task", default="todo", show_default=True, help="Task to run (see `tasks`).")
@click.option("--env-arg", multiple=True, metavar="KEY=VALUE", help="Argument for the task.")
@click.option("--bus", "bus_url", default=None, metavar="URL",
              help="memory:// (default) or redis://HOST:PORT/DB.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Parent folder of the session's results directory.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=5.0, show_default=True,
              help="Inactivity before a tick notifies everyone.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=300.0, show_default=True,
              help="Wall-clock limit for the session, in seconds.")
@click.option("--quiet", is_flag=True, help="Print only the summary.")
def run(task: str, env_arg: tuple[str, ...], bus_url: str | None, out: Path,
        idle_seconds: float, timeout: float, quiet: bool) -> None:
    """Run one session of the example team (a rule-based agent and user) on TASK."""
    from cogym_lab.nodes import Session, SessionConfig

    if task != "todo":
        raise click.BadParameter("the example team plays only the 'todo' task; LM teams come "
                                 "with the agents", param_hint="--task")
    env = _make_env(task, env_arg)
    session = Session(
        env, {"agent": _teammate("example-agent"), "user": _teammate("example-user")},
        bus=_bus(bus_url), config=SessionConfig(idle_seconds=idle_seconds, timeout=timeout),
        observers=[] if quiet else [Transcript(console)],
    )
    session.results_dir = out / session.session_id
    if not quiet:
        console.print(f"[bold]Task:[/] {env.task_description}")
    result = session.run_sync()
    console.print(f"\n[bold]Session {result.session_id}[/] ended: {result.end_reason} after "
                  f"{result.events} events in {result.duration:.2f}s")
    console.print(f"Delivered: {result.delivered}   Outcome: {json.dumps(result.outcome)}")
    console.print("Scores: " + ", ".join(f"{k}={v:.2f}" for k, v in result.scores.items()))
    console.print(f"Results: {result.results_dir}")


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
    from cogym_lab.nodes import replay

    try:
        replayed = replay(results_dir)
        state = replayed.final_state if seq is None else replayed.state_at(seq)
    except (FileNotFoundError, KeyError) as error:
        raise click.ClickException(f"cannot replay {results_dir}: {error}") from None
    console.print(f"Replayed {len(replayed.frames)} events.")
    click.echo(json.dumps(state, indent=2, ensure_ascii=False))


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
@click.option("--task", default="todo", show_default=True)
@click.option("--env-arg", multiple=True, metavar="KEY=VALUE")
@click.option("--member", "members", multiple=True, required=True, metavar="ROLE=KIND",
              help="A team member, e.g. agent=agent or user=user. Repeat for each.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=60.0, show_default=True)
@click.option("--join-timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None)
def env_node(session_id: str, redis_url: str, out: Path | None, task: str,
             env_arg: tuple[str, ...], members: tuple[str, ...], idle_seconds: float,
             join_timeout: float, timeout: float | None) -> None:
    """Host the env: wait for the members to join, run the session, write the results."""
    from cogym_lab.nodes import Session, SessionConfig

    kinds = _parse_pairs(members, "--member")
    bad = {k: v for k, v in kinds.items() if v not in ("agent", "user", "person")}
    if bad:
        raise click.BadParameter(f"kinds must be agent, user or person: {bad}",
                                 param_hint="--member")
    session = Session(_make_env(task, env_arg), dict.fromkeys(kinds), kinds=kinds,  # type: ignore[arg-type]
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
    @click.option("--impl", default=f"example-{kind}", show_default=True,
                  help="example-agent, example-user, or package.module:Class.")
    def command(session_id: str, redis_url: str, out: Path | None, role: str, impl: str) -> None:
        from cogym_lab.nodes import AgentNode, UserNode

        node_class = AgentNode if kind == "agent" else UserNode
        member = node_class(_bus(redis_url), session_id, role, _teammate(impl), results_dir=out)
        final = asyncio.run(_run_and_close(member.bus, member.run()))
        console.print(f"{role}: session ended ({final.end_reason})")

    command.__doc__ = f"Run a {kind} member: join the session and act until it ends."
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
