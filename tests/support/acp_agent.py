"""A small Agent Client Protocol agent for the tests of the ``acp`` member type.

Run as ``python -m tests.support.acp_agent --lm-url URL --record FILE [--no-http]``: it speaks
ACP on its stdio (the ``agent-client-protocol`` SDK's agent side), connects to the MCP server
``session/new`` gives it with the official ``mcp`` client SDK (over HTTP, or over stdio when
started with ``--no-http``, which stops it advertising HTTP), and on each prompt asks an LM, through
cogym_lab's own LM client against the test's loopback OpenAI-compatible server, what to do next.
The LM (scripted by the test) answers one JSON object a step:

* ``{"tool": NAME, "arguments": {...}}``: call the seat's tool (a destructive one only after
  asking the ACP client's permission, as real agents do);
* ``{"ask": {"title": ..., "kind": ...}}``: ask permission for something else (a shell command);
* ``{"raw_call": {"tool": NAME, "arguments": {...}}}``: call a tool over a fresh MCP session
  of hand-made JSON-RPC requests with every non-ASCII character escaped (HTTP only): the way
  text no UTF-8 encoder takes, a lone surrogate, still reaches the server, as a JavaScript
  agent's ``JSON.stringify`` sends it;
* ``{"read_resources": true}``: read every MCP resource of the seat;
* ``{"crash": CODE}``: say something on stderr and exit with ``CODE``;
* ``{"end_turn": true}``: end the prompt turn.

Each step's result goes back to the LM as the next user message, and the whole conversation is
kept across prompts, as a real agent keeps it. Every turn reports the LM's tokens
(``PromptResponse.usage`` and a ``usage_update``). Everything it saw is written to the ``--record``
file (JSON) for the test to check: its environment, the client's capabilities, the MCP server it
was given, its tools, every call and answer, the permissions' outcomes, the prompts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx2
from acp import PROTOCOL_VERSION, run_agent, start_tool_call, update_tool_call
from acp.schema import (
    AgentCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
)
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from cogym_lab.lm import LMConfig, make_lm

#: Characters of one text kept in the record.
KEPT = 5000
#: Steps one prompt turn may take before the agent ends it itself.
MAX_STEPS = 16

PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


class ScriptedAgent:
    """The agent (see the module docstring)."""

    def __init__(self, lm_url: str, record: Path, http: bool) -> None:
        self.lm = make_lm(LMConfig(model="scripted-acp", base_url=lm_url, max_retries=0,
                                   timeout=30, deadline=60), member="agent")
        self.record_path = record
        self.http = http
        self.conn: Any = None
        self.stack = contextlib.AsyncExitStack()
        self.mcp: ClientSession | None = None
        self.server_name = ""
        self.http_server: HttpMcpServer | None = None
        self.destructive: set[str] = set()
        self.messages: list[dict[str, str]] = []
        self.calls = 0
        self.record: dict[str, Any] = {"env": dict(os.environ), "calls": [], "permissions": [],
                                       "resources": [], "prompts": [], "cancelled": 0}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def save(self) -> None:
        self.record_path.write_text(json.dumps(self.record, default=str))

    # -- ACP ------------------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        self.record["client_capabilities"] = client_capabilities.model_dump(mode="json") \
            if client_capabilities is not None else None
        self.record["client_info"] = client_info.model_dump(mode="json") if client_info else None
        self.save()
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(mcp_capabilities=McpCapabilities(http=self.http)),
            agent_info=Implementation(name="scripted-acp-agent", version="1.0"))

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        server = (mcp_servers or [])[0]
        self.server_name = server.name
        self.http_server = server if isinstance(server, HttpMcpServer) else None
        self.record["cwd"] = cwd
        self.record["cwd_entries"] = sorted(os.listdir(cwd))
        if isinstance(server, HttpMcpServer):
            headers = {header.name: header.value for header in server.headers}
            self.record["mcp_server"] = {"type": "http", "url": server.url,
                                         "header_names": sorted(headers)}
            http = await self.stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)))
            read, write = await self.stack.enter_async_context(
                streamable_http_client(server.url, http_client=http))
        else:
            env = {variable.name: variable.value for variable in server.env}
            self.record["mcp_server"] = {"type": "stdio", "command": server.command,
                                         "args": server.args, "env_names": sorted(env)}
            if "PYTHONPATH" in os.environ:  # the tests run cogym_lab from the source tree
                env["PYTHONPATH"] = os.environ["PYTHONPATH"]
            read, write = await self.stack.enter_async_context(stdio_client(
                StdioServerParameters(command=server.command, args=server.args, env=env)))
        self.mcp = await self.stack.enter_async_context(ClientSession(read, write))
        initialized = await self.mcp.initialize()
        tools = (await self.mcp.list_tools()).tools
        self.destructive = {tool.name for tool in tools
                            if tool.annotations and tool.annotations.destructive_hint}
        self.record["instructions"] = initialized.instructions
        self.record["tools"] = [tool.model_dump(mode="json") for tool in tools]
        self.save()
        tool_list = ", ".join(tool.name for tool in tools)
        self.messages.append({"role": "system", "content": f"Tools: {tool_list}. Answer with "
                              "one JSON object per step."})
        return NewSessionResponse(session_id="scripted-session")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "\n".join(getattr(block, "text", "") for block in prompt)
        self.record["prompts"].append(text[:KEPT])
        self.messages.append({"role": "user", "content": text})
        prompt_tokens = completion_tokens = 0
        for _ in range(MAX_STEPS):
            completion = await self.lm.complete(self.messages, purpose="act")
            prompt_tokens += completion.usage.prompt_tokens
            completion_tokens += completion.usage.completion_tokens
            self.messages.append({"role": "assistant", "content": completion.text})
            step = json.loads(completion.text)
            if step.get("end_turn"):
                break
            result = await self.step(session_id, step)
            self.messages.append({"role": "user", "content": result})
            self.save()
        await self.conn.session_update(session_id, UsageUpdate(
            session_update="usage_update", used=prompt_tokens, size=128_000))
        self.save()
        return PromptResponse(stop_reason="end_turn", usage=Usage(
            input_tokens=prompt_tokens, output_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.record["cancelled"] += 1
        self.save()

    # -- steps ------------------------------------------------------------------------------------

    async def step(self, session_id: str, step: dict[str, Any]) -> str:
        if "crash" in step:
            print("scripted agent: crashing on purpose", file=sys.stderr, flush=True)
            os._exit(int(step["crash"]))
        if "ask" in step:
            allowed = await self.ask(session_id, step["ask"]["title"], step["ask"].get("kind"))
            return f"Permission {'granted' if allowed else 'refused'}."
        if step.get("read_resources"):
            return await self.read_resources()
        if "raw_call" in step:
            return await self.raw_call(step["raw_call"]["tool"], step["raw_call"]["arguments"])
        return await self.call(session_id, step["tool"], step.get("arguments") or {})

    async def ask(self, session_id: str, title: str, kind: str | None,
                  tool_call_id: str | None = None) -> bool:
        tool_call = ToolCallUpdate(tool_call_id=tool_call_id or f"ask-{self.calls}",
                                   title=title, kind=kind)
        answer = await self.conn.request_permission(session_id=session_id,
                                                    tool_call=tool_call,
                                                    options=PERMISSION_OPTIONS)
        chosen = getattr(answer.outcome, "option_id", None)
        self.record["permissions"].append({"title": title, "kind": kind, "outcome": chosen})
        return chosen == "allow"

    async def call(self, session_id: str, name: str, arguments: dict[str, Any]) -> str:
        assert self.mcp is not None
        self.calls += 1
        call_id = f"call-{self.calls}"
        title = f"mcp__{self.server_name}__{name}"
        await self.conn.session_update(session_id, start_tool_call(
            call_id, title, kind="other", status="pending", raw_input=arguments))
        if name in self.destructive and not await self.ask(session_id, title, "other", call_id):
            self.record["calls"].append({"tool": name, "arguments": arguments,
                                         "permission": "refused"})
            return "Permission refused."
        result = await self.mcp.call_tool(name, arguments)
        said = "\n".join(getattr(block, "text", "") for block in result.content)
        structured = json.dumps(result.structured_content or {}, ensure_ascii=False)
        self.record["calls"].append({"tool": name, "arguments": _cut(arguments),
                                     "is_error": result.is_error, "text": said[:KEPT],
                                     "structured": structured[:KEPT]})
        await self.conn.session_update(session_id, update_tool_call(
            call_id, status="failed" if result.is_error else "completed"))
        return f"Result of {name} (error: {result.is_error}): {said[:KEPT]}\n{structured[:KEPT]}"

    async def raw_call(self, name: str, arguments: dict[str, Any]) -> str:
        assert self.http_server is not None, "raw calls go over HTTP only"
        server = self.http_server
        headers = {header.name: header.value for header in server.headers}
        headers |= {"Accept": "application/json, text/event-stream",
                    "Content-Type": "application/json"}

        def body(message: dict[str, Any]) -> bytes:
            return json.dumps({"jsonrpc": "2.0", **message}).encode("ascii")  # all escaped

        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(server.url, headers=headers, content=body({
                "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}}))
            session = opened.headers.get("mcp-session-id", "")
            headers |= {"mcp-session-id": session,
                        "mcp-protocol-version": "2025-06-18"}
            await http.post(server.url, headers=headers, content=body({
                "method": "notifications/initialized"}))
            answer = await http.post(server.url, headers=headers, content=body({
                "id": 2, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}))
            text = answer.text
            await http.delete(server.url, headers=headers)
        self.record["calls"].append({"tool": name, "arguments": _cut(arguments), "raw": True,
                                     "status": answer.status_code, "text": text[:KEPT]})
        return f"Raw result of {name} (HTTP {answer.status_code}): {text[:KEPT]}"

    async def read_resources(self) -> str:
        assert self.mcp is not None
        listed = (await self.mcp.list_resources()).resources
        for resource in listed:
            read = await self.mcp.read_resource(resource.uri)
            texts = [getattr(block, "text", "") for block in read.contents]
            self.record["resources"].append({"uri": str(resource.uri),
                                             "text": "\n".join(texts)[:KEPT]})
        return f"Read {len(listed)} resources."


def _cut(arguments: dict[str, Any]) -> dict[str, Any]:
    return {key: value[:200] if isinstance(value, str) else value
            for key, value in arguments.items()}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lm-url", required=True)
    parser.add_argument("--record", required=True, type=Path)
    parser.add_argument("--no-http", action="store_true")
    options = parser.parse_args()
    agent = ScriptedAgent(options.lm_url, options.record, http=not options.no_http)
    try:
        await run_agent(agent)
    finally:
        with contextlib.suppress(Exception):
            await agent.stack.aclose()
        with contextlib.suppress(Exception):
            await agent.lm.aclose()


if __name__ == "__main__":
    asyncio.run(main())
