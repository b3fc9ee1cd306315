"""The client side of an ACP connection to an agent that holds a seat: what the agent's requests
to its client meet.

The agent works only through the seat's MCP tools, so this client offers no file system and no
terminal (both capabilities off, and their requests refused). It answers the agent's permission
requests by the session's rules:

* a call of one of the **seat's own tools** is allowed: the session already decides what needs a
  teammate's approval (a task action the task wants confirmed becomes a Co-Gym confirmation
  request, which a person answers in the panel), so asking again here would only hide that;
* **anything else** (the agent's own file edits, shell commands, fetches) is rejected by default,
  or allowed when the team file says ``permissions = "allow"``.

A permission request is the seat's own when its title or metadata names the seat's MCP server
and one of its tools (``mcp__cogym__ADD_ITEM``, ``cogym/ADD_ITEM``, ``ADD_ITEM (cogym MCP
Server)``), or is exactly a tool's name, and its kind is not one that touches the machine
(execute, edit, delete, move). It also keeps what the agent reports of its work: tool calls, its
context window and cost (``usage_update``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection
from typing import Any

try:  # the `acp` extra: without it this module still imports (acp_member says what to add)
    from acp import RequestError
    from acp.schema import (
        AllowedOutcome,
        DeniedOutcome,
        PermissionOption,
        RequestPermissionResponse,
        ToolCallStart,
        ToolCallUpdate,
        UsageUpdate,
    )
except ImportError:  # a clean install without the extra imports every module
    pass

from cogym_lab.mcp_seat.acp_options import PermissionPolicy

log = logging.getLogger(__name__)

#: The tool kinds that act on the machine: never taken for one of the seat's tools.
MACHINE_KINDS = frozenset({"execute", "edit", "delete", "move"})
#: Tool calls remembered by id, for permission requests that name only the id.
KEPT_TOOL_CALLS = 1000


def _names_tool(text: str, tool: str) -> bool:
    """``tool`` appears in ``text`` as a name of its own (``mcp__cogym__wait`` names ``wait``,
    ``wait_for_news`` does not)."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(tool)}(?![A-Za-z0-9_])", text) is not None


def seat_tool_of(texts: Collection[str], kind: str | None, server: str,
                 tools: Collection[str]) -> str | None:
    """The seat tool a tool call described by ``texts`` (its title, its metadata) is a call
    of, by the rule of the module docstring; ``None`` when it is not one."""
    if kind in MACHINE_KINDS:
        return None
    for text in texts:
        stripped = text.strip()
        if stripped in tools:
            return stripped
        if server.lower() not in text.lower():
            continue
        named = [tool for tool in tools if _names_tool(text, tool)]
        if named:
            return max(named, key=len)
    return None


def _option(options: list[PermissionOption], *kinds: str) -> PermissionOption | None:
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option
    return None


class SeatClient:
    """The ACP client of one seat's agent. ``server`` is the name the seat's MCP server was
    given in ``session/new``; ``tools`` the seat's tool names."""

    def __init__(self, server: str, tools: Collection[str],
                 permissions: PermissionPolicy = "reject") -> None:
        self.server = server
        self.tools = frozenset(tools)
        self.permissions = permissions
        #: The agent's permission requests and the answers, in order (tool, title, decision).
        self.decisions: list[dict[str, Any]] = []
        self.tool_calls = 0
        #: The latest ``usage_update``: tokens in context, context size, cumulative cost.
        self.context: UsageUpdate | None = None
        self._titles: dict[str, list[str]] = {}

    # -- permissions --------------------------------------------------------------------------

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: list[PermissionOption],
                                 **kwargs: Any) -> RequestPermissionResponse:
        texts = [*self._titles.get(tool_call.tool_call_id, [])]
        if tool_call.title:
            texts.append(tool_call.title)
        if tool_call.field_meta:
            texts.append(json.dumps(tool_call.field_meta, ensure_ascii=False, default=str))
        tool = seat_tool_of(texts, tool_call.kind, self.server, self.tools)
        allow = tool is not None or self.permissions == "allow"
        chosen = _option(options, "allow_once", "allow_always") if allow else \
            _option(options, "reject_once", "reject_always")
        decision = "allowed" if allow and chosen is not None else "rejected"
        self.decisions.append({"tool": tool, "title": (tool_call.title or "")[:200],
                               "kind": tool_call.kind, "decision": decision})
        log.info("ACP permission for %r (%s): %s", (tool_call.title or "")[:80],
                 tool or "not a seat tool", decision)
        if chosen is None:  # no option of the kind wanted: the request is cancelled
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    # -- what the agent reports ---------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, ToolCallStart):
            self.tool_calls += 1
            self._remember(update.tool_call_id, update.title, update.field_meta)
        elif isinstance(update, ToolCallUpdate) and update.title:
            self._remember(update.tool_call_id, update.title, update.field_meta)
        elif isinstance(update, UsageUpdate):
            self.context = update

    def _remember(self, tool_call_id: str, title: str, meta: dict[str, Any] | None) -> None:
        if len(self._titles) >= KEPT_TOOL_CALLS:
            self._titles.pop(next(iter(self._titles)))
        texts = self._titles.setdefault(tool_call_id, [])
        texts.append(title)
        if meta:
            texts.append(json.dumps(meta, ensure_ascii=False, default=str))

    # -- what this client does not offer ------------------------------------------------------

    @staticmethod
    def _refuse(what: str) -> RequestError:
        return RequestError(-32601, f"This client offers no {what}: work only through the "
                                    "seat's MCP tools.")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("file system")

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("file system")

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("terminal")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("terminal")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("terminal")

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("terminal")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("terminal")

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        raise self._refuse("way to ask a person questions (use send_message)")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


__all__ = ["MACHINE_KINDS", "SeatClient", "seat_tool_of"]
