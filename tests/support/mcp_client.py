"""The real MCP client SDK driving ``cogym-lab mcp`` over stdio, for the MCP seat's tests.

``seat_client(tmp_path, "--task", "todo", "--role", "agent")`` launches the command as a
subprocess through ``mcp.client.stdio.stdio_client`` (as Claude Code or Codex launch a local
server), initializes a ``ClientSession`` on it and yields a :class:`SeatClient`. The server's
stderr goes to ``tmp_path / "server.log"``; its results folder is ``tmp_path / "results"``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support.paths import REPO_ROOT


@dataclass
class SeatClient:
    """A connected client, with the helpers the tests share."""

    session: ClientSession
    results: Path
    initialized: types.InitializeResult
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    async def call(self, name: str, arguments: dict[str, Any] | None = None,
                   **options: Any) -> types.CallToolResult:
        result = await self.session.call_tool(name, arguments or {}, **options)
        assert isinstance(result, types.CallToolResult)
        return result

    async def act(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Call an action's tool; it must succeed. Its structured content."""
        result = await self.call(name, arguments)
        assert not result.is_error, text_of(result)
        return result.structured_content or {}

    async def wait_until(self, found: Callable[[dict[str, Any]], bool],
                         rounds: int = 20, timeout: float = 10.0) -> dict[str, Any]:
        """Call ``wait_for_news`` until its structured content satisfies ``found``."""
        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.progress.append((value, total, message))

        for _ in range(rounds):
            result = await self.call("wait_for_news", {"timeout_seconds": timeout},
                                     progress_callback=progress)
            assert not result.is_error, text_of(result)
            content = result.structured_content or {}
            if found(content):
                return content
        raise AssertionError("the news never came")

    def session_folder(self) -> Path:
        folders = [p for p in self.results.iterdir() if p.is_dir()]
        assert len(folders) == 1, folders
        return folders[0]


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content
                     if isinstance(block, types.TextContent))


def server_parameters(tmp_path: Path, *args: str,
                      env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cogym_lab", "mcp", "--out", str(tmp_path / "results"), *args],
        env={"PYTHONPATH": str(REPO_ROOT), **(env or {})}, cwd=str(tmp_path))


@asynccontextmanager
async def seat_client(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                      ) -> AsyncIterator[SeatClient]:
    """The client of a ``cogym-lab mcp`` server started with ``args`` (see the module doc)."""
    results = tmp_path / "results"
    with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
        async with stdio_client(server_parameters(tmp_path, *args, env=env), errlog=errlog) \
                as (read_stream, write_stream), ClientSession(read_stream, write_stream) as session:
            initialized = await session.initialize()
            yield SeatClient(session, results, initialized)


def news_events(content: dict[str, Any]) -> list[dict[str, Any]]:
    return list(content.get("new_events") or [])


__all__ = ["SeatClient", "news_events", "seat_client", "server_parameters", "text_of"]
