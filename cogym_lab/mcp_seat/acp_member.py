"""The member type ``acp``: an Agent Client Protocol agent that the session launches into a seat.

A team file names the agent's command (``claude-code-acp``, ``codex-acp``, ``gemini
--experimental-acp``; the options are in :mod:`cogym_lab.mcp_seat.acp_options`). When the session
starts, :class:`AcpAgent` spawns it with its stdio as the ACP connection (the
``agent-client-protocol`` SDK's client side), initializes it with no file system and no terminal,
and opens an ACP session whose only MCP server is the seat's (over HTTP when the agent says it
can, else through :mod:`cogym_lab.mcp_seat.stdio_bridge`). Then:

* the first prompt gives the task, the role, how the tools work and the current view;
* whenever news reaches the seat while the agent is not in a prompt, the news (everything it has
  not seen through its own ``observe`` or ``wait_for_news``) becomes its next prompt;
* its permission requests are answered by :class:`~cogym_lab.mcp_seat.acp_client.SeatClient`;
* the tokens it reports (``PromptResponse.usage``, ``usage_update``) and the time of each prompt
  are accounted as an LM member's are (``ROLE/usage.json``; ``ROLE/member.json``).

At the session's end the prompt under way is cancelled and the agent stopped (its stdin closed,
then its process group terminated). Its stderr is ``ROLE/agent.log``. An agent that exits, or
fails three prompts in a row, before the session ends is reported to the session as its
member's model failing, so the session ends for it (``lm_failed``) rather than idling on, unless a
person is in the team (``on_lm_failure``).

The agent's environment is the few variables a program needs (PATH, HOME, USER, SHELL, TERM,
LOGNAME), the ones the team file passes by name (``pass_env``) and the ones it sets (``env``):
no LM key or token of the session's process reaches it unless the team file says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any, ClassVar

from cogym_lab._version import __version__
from cogym_lab.bus import Bus
from cogym_lab.core.deadline import within
from cogym_lab.core.member import MemberSetup, MemberType, SeatDriverFailed
from cogym_lab.errors import CogymError
from cogym_lab.mcp_seat.acp_options import AcpOptions
from cogym_lab.mcp_seat.acp_prompts import first_prompt, news_prompt
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.driver import OutsideAgent
from cogym_lab.mcp_seat.endpoint import SeatEndpoint
from cogym_lab.mcp_seat.seat import News
from cogym_lab.mcp_seat.server import SDK_MISSING
from cogym_lab.mcp_seat.stdio_bridge import SECRET_ENV
from cogym_lab.mcp_seat.tools import seat_tools

try:  # the `acp` extra: this module still imports, and the member type says what to install
    from acp import PROTOCOL_VERSION, connect_to_agent, text_block
    from acp.schema import (
        ClientCapabilities,
        EnvVariable,
        FileSystemCapabilities,
        HttpHeader,
        HttpMcpServer,
        Implementation,
        InitializeResponse,
        McpServerStdio,
        PromptResponse,
    )
    from acp.transports import default_environment

    from cogym_lab.mcp_seat.acp_client import SeatClient

    ACP_MISSING: str | None = None
except ImportError as missing:
    ACP_MISSING = (f"{missing}. An acp member needs the `acp` extra: "
                   "pip install 'cogym_lab[acp]'")

log = logging.getLogger(__name__)

#: The name the seat's MCP server has in the agent's session (its tools: mcp__cogym__ADD_ITEM).
SERVER_NAME = "cogym"
#: Bytes one ACP message may have (a view with a megabyte-long message fits).
STDIO_LIMIT = 50 * 1024 * 1024
#: Seconds a cancelled prompt has to answer before the agent is stopped anyway.
CANCEL_WAIT = 2.0
#: Seconds the agent has to exit once its stdin is closed, and again once terminated.
EXIT_WAIT = 2.0
#: Prompts that may fail in a row before the agent counts as stopped.
MAX_PROMPT_FAILURES = 3
#: Characters of the agent's stderr kept in its record when it stops.
STDERR_TAIL = 2000
#: The ``usage`` fields of an ACP ``Usage`` and this record's names for them.
_TOKEN_FIELDS = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
                 "total_tokens": "total_tokens", "thought_tokens": "thought_tokens",
                 "cached_read_tokens": "cached_read_tokens",
                 "cached_write_tokens": "cached_write_tokens"}


class AgentStopped(CogymError):
    """The agent is gone or unusable; the message says why."""


class AcpAgent(OutsideAgent):
    """An ACP agent in a seat (see the module docstring)."""

    member_type: ClassVar[str] = "acp"

    def __init__(self, setup: MemberSetup) -> None:
        for missing in (ACP_MISSING, SDK_MISSING):
            if missing is not None:  # said when the team is built, not mid-session
                raise ValueError(missing)
        super().__init__(setup)
        self.options = AcpOptions.parse(setup.options)
        self.agent_info: dict[str, Any] | None = None
        self.mcp_transport: str | None = None
        self.turns: list[dict[str, Any]] = []
        self.cost: dict[str, Any] | None = None
        self.client: SeatClient | None = None
        self.results_dir: Path | None = None
        self._failures_in_a_row = 0

    @property
    def teammate(self) -> str:
        return f"ACP agent: {Path(self.options.command).name}"

    async def drive(self, bus: Bus, session_id: str, role: str,
                    results_dir: Path | None) -> None:
        self.results_dir = results_dir  # where the agent's stderr and usage go
        await super().drive(bus, session_id, role, results_dir)

    # -- the agent's life ---------------------------------------------------------------------

    async def run_agent(self, seat: BusSeat, endpoint: SeatEndpoint) -> None:
        context = await seat.ready(self.options.start_timeout)
        self.client = SeatClient(SERVER_NAME, [tool.name for tool in seat_tools(context)],
                                 self.options.permissions)
        workdir, made = self._workdir()
        stderr = self._stderr_file(seat.role)
        process = await asyncio.create_subprocess_exec(
            self.options.command, *self.options.args, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=stderr, env=self._environment(),
            cwd=workdir, start_new_session=True, limit=STDIO_LIMIT)
        assert process.stdin is not None and process.stdout is not None
        exited = asyncio.create_task(process.wait())
        conn = connect_to_agent(self.client, process.stdin, process.stdout)
        session_id: list[str] = []
        try:
            await self._converse(conn, seat, endpoint, workdir, exited, session_id)
        except AgentStopped as stopped:
            if not seat.ended:
                tail = self._stderr_tail(stderr)
                self.stopped = f"{stopped}{tail}"
                log.warning("%s: %s", seat.role, self.stopped)
                # the session records it as this member's failure (its on_lm_failure decides)
                raise SeatDriverFailed(str(stopped), detail=tail.strip(),
                                       agent=self.teammate) from None
        finally:
            self._account()  # first: a cancellation while the agent stops keeps the totals
            try:
                await asyncio.shield(self._stop(conn, process, exited, session_id))
            finally:
                stderr.close()
                if made:
                    shutil.rmtree(workdir, ignore_errors=True)

    async def _converse(self, conn: Any, seat: BusSeat, endpoint: SeatEndpoint, workdir: str,
                        exited: asyncio.Task[int], session_id: list[str]) -> None:
        """Start the agent's session, then prompt it with the task and the news until the
        session ends."""
        init = await self._until_exit(conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False),
            client_info=Implementation(name="cogym-lab", title="Co-Gym", version=__version__)),
            exited, self.options.start_timeout, "initialize")
        assert isinstance(init, InitializeResponse)
        if init.agent_info is not None:
            self.agent_info = init.agent_info.model_dump(mode="json", exclude_none=True,
                                                         exclude={"field_meta"})
        server = self._mcp_server(init, endpoint)
        new = await self._until_exit(conn.new_session(cwd=workdir, mcp_servers=[server]),
                                     exited, self.options.start_timeout, "session/new")
        session_id.append(new.session_id)
        context = seat.context
        assert context is not None
        seen = self._mark_seen(seat, endpoint)
        text = first_prompt(context, seat.current, seat.news_since(0), seat.role, SERVER_NAME)
        while not seat.ended:
            await self._prompt(conn, new.session_id, text, seat, exited)
            if seat.ended:
                return
            since = max(seen, endpoint.seat_server.shown)  # what it saw through its tools too
            news = await self._next_news(seat, since, exited)
            if seat.ended:
                return
            seen = self._mark_seen(seat, endpoint)
            text = news_prompt(seat.context, seat.current, news, seat.role)

    async def _next_news(self, seat: BusSeat, since: int, exited: asyncio.Task[int]) -> News:
        """What reaches the seat after ``since``, once something has (gathered for
        ``settle_seconds`` more, so that a burst of events makes one prompt)."""
        while True:
            waiting = asyncio.create_task(seat.wait_for_news(since, 60.0))
            done, _ = await asyncio.wait({waiting, exited}, return_when=asyncio.FIRST_COMPLETED)
            if waiting not in done:
                waiting.cancel()
                raise AgentStopped(self._exit_words(exited.result()))
            if waiting.result() or seat.ended:
                break
        if self.options.settle_seconds and not seat.ended:
            await asyncio.sleep(self.options.settle_seconds)
        return seat.news_since(since)

    async def _prompt(self, conn: Any, session_id: str, text: str, seat: BusSeat,
                      exited: asyncio.Task[int]) -> None:
        """One prompt turn, cancelled if the session ends during it."""
        started = time.monotonic()
        turn: dict[str, Any] = {"prompt_chars": len(text)}
        prompting = asyncio.create_task(conn.prompt(session_id=session_id,
                                                    prompt=[text_block(text)]))
        ending = asyncio.create_task(_until_ended(seat))
        try:
            done, _ = await asyncio.wait({prompting, ending, exited},
                                         return_when=asyncio.FIRST_COMPLETED)
            if prompting not in done and ending in done:
                turn["cancelled"] = True
                with contextlib.suppress(Exception):
                    await conn.cancel(session_id=session_id)
                await asyncio.wait({prompting, exited}, timeout=CANCEL_WAIT)
        finally:
            ending.cancel()
            turn["seconds"] = round(time.monotonic() - started, 3)
            self.turns.append(turn)
        if not prompting.done():
            prompting.cancel()
            if exited.done() and not seat.ended:
                raise AgentStopped(self._exit_words(exited.result()))
            return
        error = prompting.exception()
        if error is not None:
            if exited.done():
                raise AgentStopped(self._exit_words(exited.result()))
            self._failures_in_a_row += 1
            turn["error"] = str(error)[:500]
            log.warning("%s: the ACP agent's prompt failed: %s", seat.role, error)
            if self._failures_in_a_row >= MAX_PROMPT_FAILURES and not seat.ended:
                raise AgentStopped(f"The ACP agent failed {MAX_PROMPT_FAILURES} prompts in a "
                                   f"row; the last: {str(error)[:300]}")
            return
        self._failures_in_a_row = 0
        self._count_turn(turn, prompting.result())

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    async def _until_exit(call: Any, exited: asyncio.Task[int], timeout: float,
                          what: str) -> Any:
        """``call``'s answer, unless the agent exits or says nothing for ``timeout`` s."""
        answering = asyncio.ensure_future(call)
        done, _ = await asyncio.wait({answering, exited}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if answering in done:
            error = answering.exception()
            if error is not None:
                raise AgentStopped(f"The ACP agent refused {what}: {str(error)[:300]}")
            return answering.result()
        answering.cancel()
        if exited.done():
            raise AgentStopped(AcpAgent._exit_words(exited.result()))
        raise AgentStopped(f"The ACP agent did not answer {what} within {timeout:g} s.")

    @staticmethod
    def _exit_words(code: int) -> str:
        return f"The ACP agent exited with code {code} before the session ended."

    def _mark_seen(self, seat: BusSeat, endpoint: SeatEndpoint) -> int:
        """The seq up to which the prompt about to go tells the agent everything; its own
        ``observe`` then starts after it."""
        current = seat.current
        seq = current.seq if current is not None else 0
        endpoint.seat_server.shown = max(endpoint.seat_server.shown, seq)
        return seq

    def _mcp_server(self, init: InitializeResponse, endpoint: SeatEndpoint) -> Any:
        """The seat's MCP server as the agent can take it: over HTTP when it says it can."""
        capabilities = init.agent_capabilities
        http = bool(capabilities and capabilities.mcp_capabilities
                    and capabilities.mcp_capabilities.http)
        transport = self.options.mcp_transport
        if transport == "http" or (transport == "auto" and http):
            self.mcp_transport = "http"
            return HttpMcpServer(type="http", name=SERVER_NAME, url=endpoint.url,
                                 headers=[HttpHeader(name=name, value=value)
                                          for name, value in endpoint.headers.items()])
        self.mcp_transport = "stdio"
        return McpServerStdio(
            name=SERVER_NAME, command=sys.executable,
            args=["-m", "cogym_lab.mcp_seat.stdio_bridge", endpoint.url],
            env=[EnvVariable(name=SECRET_ENV, value=endpoint.secret)])

    def _environment(self) -> dict[str, str]:
        environment = default_environment()
        environment.update({name: os.environ[name] for name in self.options.pass_env
                            if name in os.environ})
        environment.update(self.options.env)
        return environment

    def _workdir(self) -> tuple[str, bool]:
        """The agent's working directory, and whether it was made for it (removed after)."""
        if self.options.cwd:
            return str(Path(self.options.cwd).expanduser().resolve()), False
        return tempfile.mkdtemp(prefix="cogym-acp-"), True

    def _stderr_file(self, role: str) -> IO[bytes]:
        if self.results_dir is not None and self.results_dir.is_dir():
            folder = self.results_dir / role
            folder.mkdir(exist_ok=True)
            return open(folder / "agent.log", "w+b")  # closed by run_agent
        return tempfile.TemporaryFile()  # its tail still says why it stopped

    @staticmethod
    def _stderr_tail(stderr: IO[bytes]) -> str:
        with contextlib.suppress(OSError, ValueError):
            stderr.flush()
            size = stderr.seek(0, os.SEEK_END)
            stderr.seek(max(0, size - STDERR_TAIL))
            tail = stderr.read().decode("utf-8", "replace").strip()
            if tail:
                return f" Its last words on stderr: {tail}"
        return ""

    async def _stop(self, conn: Any, process: asyncio.subprocess.Process,
                    exited: asyncio.Task[int], session_id: list[str]) -> None:
        """Cancel what the agent does, close its stdin, then end its process group."""
        if not exited.done() and session_id:
            with contextlib.suppress(Exception):
                await within(1.0, conn.cancel(session_id=session_id[0]))
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        for sent in (None, signal.SIGTERM, signal.SIGKILL):
            if sent is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sent)
            await asyncio.wait({exited}, timeout=EXIT_WAIT)
            if exited.done():
                break
        with contextlib.suppress(Exception):
            await conn.close()

    # -- accounting ---------------------------------------------------------------------------

    def _count_turn(self, turn: dict[str, Any], response: PromptResponse) -> None:
        turn["stop_reason"] = response.stop_reason
        usage = response.usage
        if usage is not None:
            for name, key in _TOKEN_FIELDS.items():
                value = getattr(usage, name, None)
                if value is not None:
                    turn[key] = int(value)

    def _account(self) -> None:
        """``self.usage``: the totals of the turns and what the agent reported."""
        done = [turn for turn in self.turns if "stop_reason" in turn]
        usage: dict[str, int] = {"prompts": len(self.turns),
                                 "prompt_failures": sum("error" in t for t in self.turns)}
        for key in _TOKEN_FIELDS.values():
            values = [turn[key] for turn in done if key in turn]
            if values:
                usage[key] = sum(values)
        client = self.client
        if client is not None:
            usage["tool_calls"] = client.tool_calls
            usage["permissions_allowed"] = sum(d["decision"] == "allowed"
                                               for d in client.decisions)
            usage["permissions_rejected"] = sum(d["decision"] == "rejected"
                                                for d in client.decisions)
            if client.context is not None:
                usage["context_used"] = client.context.used
                usage["context_size"] = client.context.size
                if client.context.cost is not None:
                    self.cost = {"amount": client.context.cost.amount,
                                 "currency": client.context.cost.currency}
        # the names every agent's usage goes by in the batch's records (OutsideAgent.lm_usage)
        usage["prompt_tokens"] = usage.get("input_tokens", 0)
        usage["completion_tokens"] = usage.get("output_tokens", 0)
        usage["calls"] = usage["prompts"]
        self.usage = usage
        self.model = (self.agent_info or {}).get("name") or Path(self.options.command).name

    def record(self, seat: BusSeat) -> dict[str, Any]:
        record = super().record(seat)
        record.update(agent=self.agent_info, mcp_transport=self.mcp_transport,
                      permissions=self.options.permissions,
                      prompt_seconds=[turn["seconds"] for turn in self.turns],
                      permission_requests=self.client.decisions if self.client else [])
        return record

    def _write_record(self, seat: BusSeat, results_dir: Path | None) -> None:
        """``member.json``, and ``usage.json`` as an LM member writes it (its tokens, calls
        and seconds), so reports count an ACP agent's tokens as an LM agent's."""
        super()._write_record(seat, results_dir)
        if results_dir is None or not (results_dir / seat.role).is_dir():
            return
        usage = self.usage
        reported = "input_tokens" in usage or "output_tokens" in usage
        latency = round(sum(turn["seconds"] for turn in self.turns), 4)
        summary = {
            "agent_type": "acp", "model": (self.agent_info or {}).get("name")
            or Path(self.options.command).name,
            "calls": usage.get("prompts", 0), "failures": usage.get("prompt_failures", 0),
            "prompt_tokens": usage.get("input_tokens", 0),
            "completion_tokens": usage.get("output_tokens", 0),
            "total_tokens": usage.get("total_tokens", usage.get("input_tokens", 0)
                                      + usage.get("output_tokens", 0)),
            "latency": latency, "tokens_reported": reported, "cost": self.cost,
            "by_purpose": {"prompt": {"calls": usage.get("prompts", 0),
                                      "prompt_tokens": usage.get("input_tokens", 0),
                                      "completion_tokens": usage.get("output_tokens", 0),
                                      "latency": latency}},
            "turns": self.turns,
        }
        (results_dir / seat.role / "usage.json").write_text(json.dumps(summary, indent=2))


async def _until_ended(seat: BusSeat) -> None:
    """Return once the seat's session has ended."""
    while not seat.ended:
        await seat.wait_for_news(sys.maxsize, 60.0)  # news after no event: only the end counts


ACP = MemberType(
    name="acp", kind="agent", uses_lm=False, build=AcpAgent,
    summary="An Agent Client Protocol agent (claude-code-acp, codex-acp, gemini "
            "--experimental-acp) launched into the seat; its command and args in the options.")


__all__ = ["ACP", "ACP_MISSING", "SERVER_NAME", "AcpAgent", "AgentStopped"]
