"""The ``mcp-client`` member type: a program that is an MCP client takes the seat.

A team file names the program and how to start it::

    [members.agent]
    type = "mcp-client"
    [members.agent.options]
    command = "claude"
    args = ["-p", "{prompt}", "--mcp-config", "{mcp_config}", "--output-format", "json"]
    model = "claude-sonnet-4-5"        # for the record only: what the program runs on
    pass_env = ["ANTHROPIC_API_KEY"]  # variables of this process it may see (none by default)
    env = { DISABLE_AUTOUPDATER = "1" }

The session opens the seat's MCP server on a loopback port (:class:`SeatEndpoint`) and starts
the program with these placeholders filled in, in ``args`` and ``env`` values:

* ``{mcp_url}``: the endpoint's URL;
* ``{mcp_config}``: a JSON file holding ``{"mcpServers": {"cogym": {"type": "http", "url": ...,
  "headers": {"Authorization": "Bearer ..."}}}}``, the form Claude Code's ``--mcp-config`` reads;
* ``{prompt}``: the first instruction (the ``prompt`` option, or a default one), with the task;
  when ``args`` do not use it, it is written to the program's stdin instead.

It also gets ``COGYM_MCP_URL``, ``COGYM_MCP_HEADERS`` (the headers as JSON), ``COGYM_MCP_TOKEN``
(the bearer token alone), ``COGYM_MCP_CONFIG`` and ``COGYM_USAGE_FILE`` in its environment.
The environment is this process's without anything that looks like a secret (names with KEY,
TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH) and without cogym_lab's and Jupyter's own
settings, so no LM key or Jupyter token of the session reaches the program unless the team
file passes it (``pass_env``) or sets it (``env``).

Its stdout and stderr go to ``ROLE/agent.log`` in the results folder. When the session ends the
program gets ``exit_grace`` seconds to end by itself (its last tool calls are answered: the
session has ended), then SIGTERM, then SIGKILL ``kill_grace`` seconds later; its whole process
group goes. Token use is read from ``COGYM_USAGE_FILE`` when the program wrote one, else from
the JSON it printed: Claude Code's result (``--output-format json``/``stream-json``) or Codex's
``turn.completed`` events (``codex exec --json``) (:func:`usage_from_output`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from cogym_lab.core.deadline import within
from cogym_lab.core.member import MemberSetup, MemberType, SeatDriverFailed
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.driver import OutsideAgent
from cogym_lab.mcp_seat.endpoint import SeatEndpoint

log = logging.getLogger(__name__)

#: The first instruction when the team file gives none. ``{role}`` and ``{task}`` are filled in.
DEFAULT_PROMPT = (
    "You are the {role} of a Co-Gym session: you work with a teammate on a shared task at the "
    "same time, through the tools of the MCP server named cogym. The task: {task}\n"
    "Call observe first. Then work on the task with the task's tools, talk with your teammate "
    "through send_message, and call wait_for_news to wait for them (not observe in a loop). "
    "Keep going until the task is done and your teammate agrees, then call finish. Do not stop "
    "before the session has ended.")
#: Names of this process's variables that never reach the program unless the team file says so.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_OWN_SETTINGS = ("COGYM_", "JUPYTER", "JPY_")
#: Seconds between looks at whether the session ended while the program runs.
POLL_SECONDS = 0.2
#: The last characters of the program's output kept in a failure's detail.
TAIL_CHARS = 2000


def child_environment(parent: Mapping[str, str], passed: Sequence[str],
                      given: Mapping[str, str]) -> dict[str, str]:
    """The program's environment: ``parent`` without secrets and without cogym_lab's and
    Jupyter's settings, then the ``passed`` names taken from ``parent`` as they are, then
    ``given``."""
    kept = {name: value for name, value in parent.items()
            if not _SECRET_NAME.search(name) and not name.upper().startswith(_OWN_SETTINGS)}
    kept |= {name: parent[name] for name in passed if name in parent}
    return kept | dict(given)


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` of ``values`` replaced; other braces stay as they are."""
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def usage_from_output(lines: Sequence[str]) -> tuple[dict[str, int], str | None]:
    """Token use and model from what an MCP client printed, in cogym_lab's names
    (``prompt_tokens``, ``completion_tokens``, ``calls``): Claude Code's result object (its
    input, cache-creation and cache-read tokens are the prompt), or the sum of Codex's
    ``turn.completed`` events (whose cached tokens are part of the input). Empty when neither
    is there."""
    result: dict[str, Any] | None = None
    turns: list[dict[str, Any]] = []
    for raw in lines:
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("usage"), dict):
            continue
        if record.get("type") == "result":
            result = record  # Claude Code's final summary: the last one counts
        elif record.get("type") == "turn.completed":
            turns.append(record["usage"])
    if result is not None:
        usage = result["usage"]
        prompt = sum(_count(usage, name) for name in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        models = result.get("modelUsage")
        model = next(iter(models), None) if isinstance(models, dict) and models else None
        return ({"prompt_tokens": prompt, "completion_tokens": _count(usage, "output_tokens"),
                 "calls": _count(result, "num_turns")}, model)
    if turns:
        return ({"prompt_tokens": sum(_count(u, "input_tokens") for u in turns),
                 "completion_tokens": sum(_count(u, "output_tokens") for u in turns),
                 "calls": len(turns)}, None)
    return {}, None


def usage_from_file(path: Path) -> tuple[dict[str, int], str | None]:
    """Token use the program wrote to ``COGYM_USAGE_FILE``: ``prompt_tokens`` (or
    ``input_tokens``), ``completion_tokens`` (or ``output_tokens``), ``calls``, ``model``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, None
    if not isinstance(data, dict):
        return {}, None
    usage = {"prompt_tokens": _count(data, "prompt_tokens") or _count(data, "input_tokens"),
             "completion_tokens": _count(data, "completion_tokens")
             or _count(data, "output_tokens"),
             "calls": _count(data, "calls")}
    model = data.get("model")
    return usage, str(model) if isinstance(model, str) and model else None


def _count(record: Mapping[str, Any], name: str) -> int:
    value = record.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class McpClientAgent(OutsideAgent):
    """A program that is an MCP client, in the seat (see the module docstring)."""

    member_type = "mcp-client"

    def __init__(self, setup: MemberSetup, *, command: str, args: Sequence[str] = (),
                 prompt: str | None = None, env: Mapping[str, str] | None = None,
                 pass_env: Sequence[str] = (), model: str | None = None,
                 cwd: str | None = None, exit_grace: float = 10.0,
                 kill_grace: float = 5.0) -> None:
        super().__init__(setup)
        if not isinstance(command, str) or not command.strip():
            raise ValueError("an mcp-client member needs its program: options.command")
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise ValueError("options.args is a list of strings")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in (env or {}).items()):
            raise ValueError("options.env maps names to strings")
        if isinstance(pass_env, str) or not all(isinstance(n, str) for n in pass_env):
            raise ValueError("options.pass_env is a list of variable names")
        if exit_grace < 0 or kill_grace < 0:
            raise ValueError("exit_grace and kill_grace are seconds, 0 or more")
        self.command = command
        self.args = list(args)
        self.prompt_template = prompt if prompt is not None else DEFAULT_PROMPT
        self.env = dict(env or {})
        self.pass_env = list(pass_env)
        self.model = model
        self.cwd = cwd
        self.exit_grace = float(exit_grace)
        self.kill_grace = float(kill_grace)
        # The session waits this long after its end before it cancels drive().
        self.end_grace = self.exit_grace + self.kill_grace + 1.0
        self.returncode: int | None = None

    @property
    def teammate(self) -> str:
        return f"MCP client: {Path(self.command).name}"

    def prompt(self, role: str) -> str:
        return fill(self.prompt_template, {"role": role, "task": self.setup.task.description})

    async def run_agent(self, seat: BusSeat, endpoint: SeatEndpoint) -> None:
        scratch = Path(tempfile.mkdtemp(prefix="cogym-mcp-client-"))  # private: 0700
        try:
            await self._run(seat, endpoint, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # the config holds the seat's secret

    async def _run(self, seat: BusSeat, endpoint: SeatEndpoint, scratch: Path) -> None:
        config = scratch / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"cogym": {
            "type": "http", "url": endpoint.url, "headers": endpoint.headers}}}, indent=2))
        usage_file = scratch / "usage.json"
        prompt = self.prompt(seat.role)
        values = {"mcp_url": endpoint.url, "mcp_config": str(config), "prompt": prompt,
                  "role": seat.role}
        argv = [self.command, *(fill(arg, values) for arg in self.args)]
        env = child_environment(os.environ, self.pass_env,
                                {name: fill(value, values) for name, value in self.env.items()})
        env |= {"COGYM_MCP_URL": endpoint.url, "COGYM_MCP_HEADERS": json.dumps(endpoint.headers),
                "COGYM_MCP_TOKEN": endpoint.secret,  # the bare token: Codex's bearer_token_env_var
                "COGYM_MCP_CONFIG": str(config), "COGYM_USAGE_FILE": str(usage_file)}
        prompt_on_stdin = not any("{prompt}" in arg for arg in self.args)
        log_path = self._log_path(seat, scratch)
        with log_path.open("ab") as output:
            process = await self._start(argv, env, output, prompt_on_stdin)
            try:
                if prompt_on_stdin:
                    await self._write_prompt(process, prompt)
                await self._follow(process, seat)
            finally:
                await self._stop(process)
                self.returncode = process.returncode
                self._read_usage(usage_file, log_path)
        if seat.ended:
            return
        if process.returncode == 0:
            self.stopped = "its program exited (code 0) before the session ended"
            return  # it left: the session ends for that
        raise SeatDriverFailed(f"its program exited with code {process.returncode} before the "
                               "session ended", detail=_tail(log_path), agent=self.teammate)

    def _log_path(self, seat: BusSeat, scratch: Path) -> Path:
        if self.results_dir is not None and self.results_dir.is_dir():
            folder = self.results_dir / seat.role
            folder.mkdir(parents=True, exist_ok=True)
            return folder / "agent.log"
        return scratch / "agent.log"

    async def _start(self, argv: list[str], env: dict[str, str], output: IO[bytes],
                     prompt_on_stdin: bool) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE if prompt_on_stdin
                else asyncio.subprocess.DEVNULL,
                stdout=output, stderr=asyncio.subprocess.STDOUT, env=env,
                cwd=self.cwd or None, start_new_session=True)  # its own group: stopped whole
        except OSError as error:
            raise SeatDriverFailed(f"its program could not be started ({error.strerror or error})",
                                   agent=self.teammate) from error

    @staticmethod
    async def _write_prompt(process: asyncio.subprocess.Process, prompt: str) -> None:
        stdin = process.stdin
        if stdin is None:
            return
        with contextlib.suppress(OSError):  # a program that exits at once: its exit says why
            stdin.write(prompt.encode())
            await stdin.drain()
            stdin.close()

    async def _follow(self, process: asyncio.subprocess.Process, seat: BusSeat) -> None:
        """Until the program exits; once the session has ended, ``exit_grace`` seconds more."""
        exited = asyncio.create_task(process.wait())
        try:
            while not seat.ended:
                done, _ = await asyncio.wait({exited}, timeout=POLL_SECONDS)
                if done:
                    return
            await asyncio.wait({exited}, timeout=self.exit_grace)
        finally:
            if not exited.done():
                exited.cancel()

    async def _stop(self, process: asyncio.subprocess.Process) -> None:
        """SIGTERM to the program's process group, SIGKILL ``kill_grace`` seconds later."""
        if process.returncode is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)  # what it started and left behind
            return
        for sent in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sent)
            try:
                await within(self.kill_grace, asyncio.shield(process.wait()))
                return
            except TimeoutError:
                continue

    def _read_usage(self, usage_file: Path, log_path: Path) -> None:
        usage, model = usage_from_file(usage_file)
        if not any(usage.values()):
            try:
                lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            usage, model = usage_from_output(lines)
        if any(usage.values()):
            self.usage = usage
        self.model = model or self.model


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-TAIL_CHARS:]
    except OSError:
        return ""


def _build(setup: MemberSetup) -> McpClientAgent:
    return McpClientAgent(setup, **dict(setup.options))


MCP_CLIENT = MemberType(
    name="mcp-client", kind="agent", uses_lm=False, build=_build,
    summary="An outside program that is an MCP client (Claude Code, Codex, ...) in the "
            "agent's seat, through the seat's MCP server on a loopback port.")

__all__ = ["DEFAULT_PROMPT", "MCP_CLIENT", "McpClientAgent", "child_environment", "fill",
           "usage_from_file", "usage_from_output"]
