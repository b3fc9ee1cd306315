"""A small MCP-client agent for the tests: a program, as Claude Code or Codex would be, that
takes the todo task's agent seat through the official ``mcp`` client SDK and decides each move
with an LM over plain HTTP (the loopback OpenAI-compatible server of ``tests/support/lm.py``).

Run as ``python mcp_client_agent.py --mcp-config FILE --prompt TEXT``: it reads the server's URL
and headers from the Claude-Code-style config file the ``mcp-client`` member writes, the LM's
base URL and model from ``AGENT_LM_BASE_URL`` and ``AGENT_LM_MODEL``. Each round it observes,
asks the LM for one tool call (the LM sees the prompt, its view, the chat and what the last
call answered, as JSON) and makes it, until the session has ended. At the end it prints its
token use the way Claude Code's ``--output-format json`` does (a ``result`` object), which the
member reads.

:func:`todo_policy` is the LM's side, for a ``ScriptedOpenAIServer(responder=...)``: it plays
the seat as the task's rule-based agent would (search ideas, fill the list, add what the
teammate asks for, report in the chat, wait for news), from nothing but the request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from typing import Any

#: Rounds the agent plays at most: a safety net, the session ends long before.
MAX_ROUNDS = 60


def todo_policy(body: dict[str, Any]) -> str:
    """The next tool call, as JSON text, for the request ``body`` the agent sent."""
    messages = body.get("messages") or []
    prompt = str(messages[0].get("content", "")) if messages else ""
    state = json.loads(str(messages[-1].get("content", "{}"))) if messages else {}
    trip = (re.search(r"weekend (\w+) trip", prompt) or [None, "camping"])[1]
    least = int((re.search(r"at least (\d+) items", prompt) or [None, "4"])[1])
    view = state.get("view") or {}
    items = [item["text"] for item in (view.get("checklist") or {}).get("content") or []]
    listed = {item.lower() for item in items}
    ideas = (view.get("ideas") or {}).get("content") or []
    asked = [thing for message in state.get("chat") or [] if message.get("sender") != "agent"
             for thing in _requested(str(message.get("text", "")))]

    def call(tool: str, **arguments: Any) -> str:
        return json.dumps({"tool": tool, "arguments": arguments})

    missing = [thing for thing in asked if thing.lower() not in listed]
    if missing:
        return call("ADD_ITEM", text=missing[0])
    if not ideas:
        return call("SEARCH_IDEAS", trip=trip)
    fresh = [idea for idea in ideas if idea.lower() not in listed]
    if len(items) < least and fresh:
        return call("ADD_ITEM", text=fresh[0])
    if not state.get("reported"):
        return call("send_message", message=f"The list has {len(items)} items: "
                    f"{', '.join(items)}. Anything else you need?")
    return call("wait_for_news", timeout_seconds=5)


def _requested(text: str) -> list[str]:
    """Items named after 'bring' ('Please bring a rain jacket and a headlamp')."""
    lowered = text.lower()
    if "bring" not in lowered:
        return []
    tail = lowered.split("bring", 1)[1].strip(" .!?:")
    parts = (part.strip().removeprefix("a ").removeprefix("an ").strip(" .")
             for part in tail.replace(" and ", ",").split(","))
    return [part for part in parts if part]


async def play(server: dict[str, Any], prompt: str) -> dict[str, int]:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    base_url = os.environ["AGENT_LM_BASE_URL"].rstrip("/")
    model = os.environ.get("AGENT_LM_MODEL", "scripted")
    used = {"input_tokens": 0, "output_tokens": 0, "turns": 0}
    chat: list[dict[str, Any]] = []
    reported = False
    async with create_mcp_http_client(headers=server["headers"]) as http, \
            streamable_http_client(server["url"], http_client=http) as (read, write), \
            ClientSession(read, write) as session, httpx.AsyncClient(timeout=30) as lm:
        await session.initialize()
        answer: dict[str, Any] = {}
        for _ in range(MAX_ROUNDS):
            looked = (await session.call_tool("observe", {})).structured_content or {}
            chat += looked.get("new_messages") or []
            if looked.get("done"):
                break
            state = {"view": looked.get("view"), "chat": chat, "reported": reported,
                     "pending": looked.get("pending_confirmations"), "last_answer": answer}
            reply = (await lm.post(f"{base_url}/chat/completions", json={
                "model": model, "messages": [{"role": "system", "content": prompt},
                                             {"role": "user", "content": json.dumps(state)}]}
                                   )).json()
            used["input_tokens"] += reply["usage"]["prompt_tokens"]
            used["output_tokens"] += reply["usage"]["completion_tokens"]
            used["turns"] += 1
            decision = json.loads(reply["choices"][0]["message"]["content"])
            result = await session.call_tool(decision["tool"], decision["arguments"])
            answer = result.structured_content or {}
            chat += answer.get("new_messages") or []
            reported = reported or (decision["tool"] == "send_message" and not result.is_error)
            if answer.get("done"):
                break
    return used


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcp-config", required=True)
    parser.add_argument("--prompt", default=None)
    options = parser.parse_args()
    prompt = options.prompt if options.prompt is not None else sys.stdin.read()
    with open(options.mcp_config, encoding="utf-8") as handle:
        server = json.load(handle)["mcpServers"]["cogym"]
    used = asyncio.run(play(server, prompt))
    print(f"played {used['turns']} turns", file=sys.stderr)
    print(json.dumps({"type": "result", "subtype": "success", "num_turns": used["turns"],
                      "usage": {"input_tokens": used["input_tokens"],
                                "output_tokens": used["output_tokens"]},
                      "modelUsage": {os.environ.get("AGENT_LM_MODEL", "scripted"): {}}}))


if __name__ == "__main__":
    main()
