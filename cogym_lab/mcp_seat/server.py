"""The MCP server of a seat: the seat's tools, its view as resources, over any MCP transport.

Built on the ``mcp`` SDK's low-level ``Server``, because the tools are not known before the
session starts: they are the seat's own action specs (:mod:`cogym_lab.mcp_seat.tools`). The
server knows only the :class:`~cogym_lab.mcp_seat.seat.Seat` interface, so any seat can be
served, and over any transport the SDK has (:func:`serve_stdio` for a local server).

Every tool call is answered: an action the env refused, an argument it does not take, a
session that has ended, even a failure of this server, come back as a tool error
(``isError``) with the reason and the action's expected form, never as a dropped request.
Nothing the client can read holds a secret: the text comes from the seat's view, the task's
action specs and the env's answers, none of which carries an LM's key or a server's token.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import quote, unquote

try:
    import mcp.types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.shared.exceptions import MCPError

    SDK_MISSING: str | None = None
except ImportError as missing:  # the `mcp` extra: this module still imports, SeatServer says so
    SDK_MISSING = f"{missing}. Serving a seat over MCP needs the `mcp` extra: " \
                  "pip install 'cogym_lab[mcp]'"

from cogym_lab._version import __version__
from cogym_lab.core.messages import EventType
from cogym_lab.core.plain_words import describe_event, specs_by_name
from cogym_lab.mcp_seat.seat import ActOutcome, News, Seat, SeatError
from cogym_lab.mcp_seat.tools import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, SeatTool, seat_tools
from cogym_lab.mcp_seat.views import view_content, view_text

log = logging.getLogger(__name__)

#: The JSON-RPC error code MCP gives an unknown resource.
RESOURCE_NOT_FOUND = -32002

INSTRUCTIONS = """\
You hold one seat of a Co-Gym session: a shared workspace where you and your teammates (people,
simulated users, other agents) work on one task at the same time, without turns. Call observe
first: it shows the task, the workspace as you see it, and what is new. Act with the task's
tools (named after its actions, e.g. ADD_ITEM) and the collaboration tools (send_message,
request_confirmation, accept_confirmation, reject_confirmation, finish). Your teammates are
told of what you do, and you of what they do: call wait_for_news to wait for them rather than
polling. Some actions need a teammate's approval first: the session then sends them as a
confirmation request, and they run once approved. A refused action comes back as a tool error
that says why and what form the action expects. finish ends the session for everyone."""


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


def _result(text: str, content: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=content)


def mcp_tool(tool: SeatTool) -> types.Tool:
    """A seat tool as MCP declares it."""
    hints = tool.hints
    return types.Tool(
        name=tool.name, title=hints.title, description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            title=hints.title, read_only_hint=hints.read_only,
            destructive_hint=None if hints.read_only else hints.destructive,
            idempotent_hint=hints.idempotent, open_world_hint=False))


class SeatServer:
    """The MCP server of ``seat``.

    ``start_timeout``: how long a first request waits for the session to start;
    ``act_timeout``: how long an action waits for the env's answer; ``progress_seconds``: how
    often ``wait_for_news`` reports progress while it waits.
    """

    def __init__(self, seat: Seat, *, start_timeout: float = 60.0, act_timeout: float = 60.0,
                 progress_seconds: float = 5.0) -> None:
        if SDK_MISSING is not None:
            raise ImportError(SDK_MISSING)
        self.seat = seat
        self.start_timeout = start_timeout
        self.act_timeout = act_timeout
        self.progress_seconds = progress_seconds
        #: The seq of the last view the client was shown: news is what came after it.
        self.shown = 0
        self.calls: dict[str, int] = {}
        self.server: Server[Any] = Server(
            "cogym-lab-seat", version=__version__, title="Co-Gym seat",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources, on_read_resource=self._read_resource)

    # -- tools --------------------------------------------------------------------------------

    async def tools(self) -> dict[str, SeatTool]:
        """The seat's tools by name, once its session has started. Raises ``SeatError``."""
        context = await self.seat.ready(self.start_timeout)
        return {tool.name: tool for tool in seat_tools(context)}

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        try:
            tools = await self.tools()
        except SeatError as error:
            raise MCPError(types.INTERNAL_ERROR, str(error)) from None
        return types.ListToolsResult(tools=[mcp_tool(tool) for tool in tools.values()])

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        self.calls[name] = self.calls.get(name, 0) + 1
        try:
            return await self.call(name, params.arguments, ctx)
        except SeatError as error:
            return _error(str(error))
        except Exception:  # the server stays up and the client is answered; the log says why
            log.exception("tool %r failed", name)
            return _error(f"The tool {name!r} failed inside the session's server; its log "
                          "says why. The session goes on.")

    async def call(self, name: str, arguments: Any,
                   ctx: ServerRequestContext[Any] | None = None) -> types.CallToolResult:
        """Run tool ``name`` with ``arguments``; ``ctx`` carries progress to the client."""
        tools = await self.tools()
        tool = tools.get(name)
        if tool is None:
            return _error(f"There is no tool {name!r}. The tools are: {', '.join(tools)}.")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return _error(f"{name} takes its arguments as an object.")
        if tool.kind == "observe":
            if arguments:
                return _error(f"observe takes no arguments; got {', '.join(map(repr, arguments))}.")
            return self.observe()
        if tool.kind == "wait_for_news":
            return await self.wait_for_news(arguments, ctx)
        return await self.act(tool, arguments)

    def observe(self) -> types.CallToolResult:
        """The seat's view and the news since the client last looked; marks it seen."""
        current = self.seat.current
        news = self.seat.news_since(self.shown)
        context = self.seat.context
        text = view_text(current, news, context, self.seat.role)
        content = view_content(current, news)
        if current is not None:
            self.shown = current.seq
        return _result(text, content)

    async def wait_for_news(self, arguments: dict[str, Any],
                            ctx: ServerRequestContext[Any] | None) -> types.CallToolResult:
        unknown = sorted(set(arguments) - {"timeout_seconds"})
        if unknown:
            return _error(f"wait_for_news has no argument {', '.join(map(repr, unknown))}. "
                          "Expected form: wait_for_news(timeout_seconds=60)")
        timeout = arguments.get("timeout_seconds", DEFAULT_WAIT_SECONDS)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or \
                not 0 <= timeout <= MAX_WAIT_SECONDS:
            return _error(f"timeout_seconds must be a number of seconds from 0 to "
                          f"{MAX_WAIT_SECONDS:g}; got {json.dumps(timeout)[:80]}.")
        started = time.monotonic()
        while True:
            elapsed = time.monotonic() - started
            remaining = timeout - elapsed
            news = await self.seat.wait_for_news(self.shown, min(self.progress_seconds,
                                                                 max(remaining, 0.0)))
            if news or self.seat.ended or time.monotonic() - started >= timeout:
                break
            if ctx is not None:  # a no-op when the client asked for no progress
                await ctx.session.report_progress(
                    round(time.monotonic() - started, 1), float(timeout),
                    "waiting for news from the session")
        result = self.observe()
        if not news and not self.seat.ended:
            first = result.content[0]
            assert isinstance(first, types.TextContent)
            first.text = f"No news in {timeout:g} s.\n\n" + first.text
        return result

    async def act(self, tool: SeatTool, arguments: dict[str, Any]) -> types.CallToolResult:
        """Send the tool's action as the seat's role; the env's answer as the result."""
        current = self.seat.current
        if current is not None and current.done:
            return _error(f"The session has ended ({current.end_reason}); {tool.name} was not "
                          "sent.")
        assert tool.action is not None
        outcome = await self.seat.act({"name": tool.action, "args": arguments},
                                      timeout=self.act_timeout, seen_seq=self.shown or None)
        error = outcome.error
        if error is not None:
            if tool.spec is not None and "Expected form" not in error:
                error = f"{error} Expected form: {tool.spec.signature()}"
            return _error(error)
        return _result(self._done_text(tool, outcome), self._done_content(outcome))

    def _done_text(self, tool: SeatTool, outcome: ActOutcome) -> str:
        event = outcome.event
        settlement = outcome.settlement
        seq = settlement.seq if settlement is not None else None
        if event is None:
            return f"Done (event {seq})." if seq is not None else "Done."
        if event.type is EventType.CONFIRM_REQUEST and tool.kind == "action":
            request_id = event.info.get("request_id")
            return (f"This action needs a teammate's approval first: it was sent as "
                    f"confirmation request {request_id} (event {event.seq}) and runs once "
                    "accepted. wait_for_news tells you when they answer.")
        context = self.seat.context
        specs = specs_by_name(context.action_specs if context is not None else ())
        return f"Done (event {event.seq}): {describe_event(event, specs)}"

    @staticmethod
    def _done_content(outcome: ActOutcome) -> dict[str, Any]:
        event = outcome.event
        settlement = outcome.settlement
        return {"status": "applied", "seq": settlement.seq if settlement is not None else None,
                "event": event.type.value if event is not None else None,
                "request_id": event.info.get("request_id") if event is not None and
                event.type is EventType.CONFIRM_REQUEST else None}

    # -- resources ----------------------------------------------------------------------------

    def _base(self) -> str:
        return f"cogym://session/{self.seat.session_id}"

    async def _list_resources(self, ctx: ServerRequestContext[Any],
                              params: types.PaginatedRequestParams | None
                              ) -> types.ListResourcesResult:
        try:
            await self.seat.ready(self.start_timeout)
        except SeatError as error:
            raise MCPError(types.INTERNAL_ERROR, str(error)) from None
        base = self._base()
        resources = [
            types.Resource(uri=f"{base}/task", name="task", mime_type="text/plain",
                           description="The task, your role and the forms of your actions."),
            types.Resource(uri=f"{base}/view", name="view", mime_type="application/json",
                           description="Your whole view: every component you see, pending "
                                       "confirmations and your step count."),
            types.Resource(uri=f"{base}/chat", name="chat", mime_type="application/json",
                           description="The messages you may see."),
        ]
        current = self.seat.current
        for component in current.view.components if current is not None else ():
            scope = "only you see it" if component.private else "shared with the team"
            resources.append(types.Resource(
                uri=f"{base}/view/{quote(component.name, safe='')}",
                name=f"view/{component.name}", title=component.title or component.name,
                mime_type="application/json",
                description=f"The {component.render_type} component "
                            f"{component.title or component.name!r} ({scope})."))
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(self, ctx: ServerRequestContext[Any],
                             params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        text, mime = self.resource(uri)
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    def resource(self, uri: str) -> tuple[str, str]:
        """The text and MIME type of resource ``uri``; ``MCPError`` for one this seat has
        not."""
        base = self._base()
        current = self.seat.current
        if not uri.startswith(base + "/") or current is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"No resource {uri[:200]!r} in this seat.")
        path = uri[len(base) + 1:]
        if path == "task":
            context = self.seat.context
            specs = [*context.action_specs, *context.collaboration_specs] if context else []
            lines = [f"Session {current.session_id}; you are {self.seat.role!r}.",
                     f"Task: {context.task_description}" if context else "", "",
                     "Your actions:", *(spec.to_text() for spec in specs if not spec.internal)]
            return "\n".join(lines), "text/plain"
        if path == "view":
            content = view_content(current, News())
            content.pop("new_events", None)
            content.pop("new_messages", None)
            return json.dumps(content, ensure_ascii=False), "application/json"
        if path == "chat":
            return json.dumps([m.model_dump(mode="json") for m in current.chat],
                              ensure_ascii=False), "application/json"
        if path.startswith("view/"):
            name = unquote(path[len("view/"):])
            if name in current.view:
                return (json.dumps(current.view[name].model_dump(mode="json"),
                                   ensure_ascii=False), "application/json")
        raise MCPError(RESOURCE_NOT_FOUND, f"No resource {uri[:200]!r} in this seat.")


async def serve_stdio(server: SeatServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until the client goes away. While
    it serves, anything printed lands on stderr, never in the protocol's stream."""
    from mcp.server.stdio import stdio_server

    mcp_server = server.server
    async with stdio_server() as (read_stream, write_stream):
        await mcp_server.run(read_stream, write_stream,
                             mcp_server.create_initialization_options())


__all__ = ["INSTRUCTIONS", "SDK_MISSING", "SeatServer", "mcp_tool", "serve_stdio"]
