"""``cogym-lab mcp``: start a new session and serve one of its seats over MCP (stdio).

An MCP client (Claude Code, Codex, any client of the Model Context Protocol) launches this
command as a local server: the session's other seats are the team's members, as ``run`` builds
them, and the seat ``--role`` is the client's, with one tool per action (see
``docs/outside-agents.md``). stdout carries the protocol only: every log line and notice goes to
stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from cogym_lab.bus import connect_bus
from cogym_lab.cli.options import (
    build_failed,
    env_args,
    lm_options,
    lm_settings,
    make_spec,
    protocol_option,
    task_options,
)
from cogym_lab.sessions import SessionBuildError

#: What to install when the MCP SDK is missing.
MCP_EXTRA = "pip install 'cogym_lab[mcp]'"


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "`cogym-lab mcp` needs the Model Context Protocol SDK, which comes with the "
            f"optional extra 'mcp': {MCP_EXTRA}") from None


def _say(text: str) -> None:
    click.echo(f"cogym-lab mcp: {text}", err=True)


@click.command("mcp")
@task_options
@click.option("--team", default=None,
              help="A ready team or a team file's path (default: the task's own). Its member "
                   "for --role is not built: the MCP client takes that seat.")
@click.option("--role", default=None,
              help="The seat the MCP client takes (e.g. agent). With --session: default, "
                   "your single outside seat of that session.")
@click.option("--session", "session_id", default=None, metavar="ID",
              help="Join this session of the Jupyter server at --url instead of starting one: "
                   "relay stdio to its outside seat over HTTP (the token comes from "
                   "JUPYTER_TOKEN or --token-file).")
@click.option("--url", default=None, metavar="URL",
              help="With --session: the Jupyter server's address (e.g. http://127.0.0.1:8888/, "
                   "or https://HUB/user/NAME/). Never put the token in it.")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="With --session: a file holding the server's token (when "
                                 "JUPYTER_TOKEN is not set).")
@lm_options
@click.option("--bus", "bus_url", default=None, metavar="URL",
              help="memory:// (default) or redis://HOST:PORT/DB.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Parent folder of the session's results directory.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=None,
              help="Inactivity before a tick notifies everyone (default: the team's, else 60). "
                   "An LM client thinks slowly: give it room.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=3600.0, show_default=True,
              help="Wall-clock limit for the session, in seconds.")
@click.option("--progress-seconds", type=click.FloatRange(min=0.05), default=5.0,
              show_default=True, help="How often wait_for_news reports progress while it waits.")
@protocol_option
@click.option("--verbose", is_flag=True, help="Log the session's work on stderr.")
def mcp_command(task: str, instance: int | None, env_arg: tuple[str, ...], team: str | None,
                role: str | None, session_id: str | None, url: str | None,
                token_file: Path | None, models: tuple[str, ...], base_urls: tuple[str, ...],
                bus_url: str | None, out: Path, idle_seconds: float | None, timeout: float,
                progress_seconds: float, protocol: str, verbose: bool) -> None:
    """Start a session of TEAM on TASK and serve seat ROLE over MCP on stdin/stdout; or, with
    --session and --url, relay stdin/stdout to your outside seat of a session a Jupyter server
    hosts.

    A new session ends as any does (a FINISH, its limits), or when the client goes away; its
    results directory is written either way. A hosted session goes on when the relay stops."""
    _require_mcp()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if session_id is not None or url is not None:
        if session_id is None or url is None:
            raise click.UsageError("--session and --url go together: the session's id and the "
                                   "address of the Jupyter server that hosts it.")
        return _relay(session_id, url, role, token_file)
    if role is None:
        raise click.UsageError("Missing option '--role' (the seat the MCP client takes), or "
                               "--session ID --url URL to join a hosted session.")
    from cogym_lab.mcp_seat.local import LocalSeatSession

    spec = make_spec(task=task, instance=instance, env_args=env_args(env_arg), team=team,
                     lm=lm_settings(models, base_urls), protocol=protocol,
                     limits={"idle_seconds": idle_seconds, "timeout": timeout})
    try:
        bus = connect_bus(bus_url)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--bus") from None
    try:
        local = LocalSeatSession(spec, role, bus=bus, results_parent=out)
    except SessionBuildError as error:
        raise build_failed(error) from None
    if local.session.data_sample is not None:
        from cogym_lab.datasets import announce_once

        announce_once(local.session.data_sample)  # on stderr
    asyncio.run(_serve(local, progress_seconds))


def _token(token_file: Path | None) -> str | None:
    """The server's token: JUPYTER_TOKEN, else the file's first line (never an argument)."""
    token = os.environ.get("JUPYTER_TOKEN") or None
    if token is None and token_file is not None:
        token = token_file.read_text(encoding="utf-8").strip() or None
    if token is None:
        _say("no token (JUPYTER_TOKEN or --token-file): the server must not require one")
    return token


def _relay(session_id: str, url: str, role: str | None, token_file: Path | None) -> None:
    from cogym_lab.mcp_seat.http_relay import RelayError, find_seat, relay_stdio

    token = _token(token_file)

    async def run() -> None:
        address = await find_seat(url, session_id, role, token)
        _say(f"session {address.session_id}: relaying seat {address.role!r} at "
             f"{address.base_url}")
        await relay_stdio(address)

    try:
        asyncio.run(run())
    except RelayError as error:
        raise click.ClickException(str(error)) from None
    except KeyboardInterrupt:
        pass


async def _serve(local: Any, progress_seconds: float) -> None:
    """Serve the seat until the client goes away (or a signal says stop), then end the session
    if it still runs and write its results."""
    from cogym_lab.mcp_seat.local import LEFT_REASON
    from cogym_lab.mcp_seat.server import SeatServer, serve_stdio

    seat = await local.start()
    _say(f"session {local.session.session_id}: seat {local.role!r} ({local.kind}); results in "
         f"{local.session.results_dir}")
    serving = asyncio.create_task(serve_stdio(SeatServer(seat, progress_seconds=progress_seconds)))
    loop = asyncio.get_running_loop()

    def stop() -> None:  # a client that stops its server sends SIGTERM after closing stdin
        if not serving.done():
            serving.cancel()

    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
            loop.add_signal_handler(signum, stop)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    except Exception:  # the transport broke: the session is still ended and written below
        logging.getLogger(__name__).exception("serving the seat over stdio failed")
    finally:
        result = await local.finish(LEFT_REASON)
        if result is not None:
            _say(f"session {result.session_id} ended: {result.end_reason}; delivered="
                 f"{result.delivered}; results in {result.results_dir}")


__all__ = ["MCP_EXTRA", "mcp_command"]
