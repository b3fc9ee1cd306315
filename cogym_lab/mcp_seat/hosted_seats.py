"""The outside seats of the sessions a Jupyter server hosts, served over MCP's streamable HTTP.

:class:`HostedSeats` keeps one :class:`SeatEndpoint` per (session, role), made when its first
request comes: a :class:`~cogym_lab.mcp_seat.bus_seat.BusSeat` on the session's bus, the
:class:`~cogym_lab.mcp_seat.server.SeatServer` over it, and the ``mcp`` SDK's
``StreamableHTTPSessionManager`` that speaks the transport (an ASGI app, which the server's
tornado handler feeds through :mod:`cogym_lab.server.asgi_bridge`). An endpoint closes a
minute after its session ends (meanwhile its client reads the end and the last view), and all
of them when the server stops; the session itself goes on whatever the clients do.

Each endpoint tells the session's panels about its seat on the agents' status channel: an
agent status for the role (``acting`` while an action runs, ``waiting`` while the client waits
for news or is away, ``thinking`` between its calls) with ``outside``: ``{"attached",
"last_act_seq", "last_seen"}``. ``attached`` means a request of an MCP client is open on the
seat: an SDK client keeps its notification stream (a GET) open for as long as it is connected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from cogym_lab.bus import Bus
from cogym_lab.core.deadline import within
from cogym_lab.core.messages import AgentState, AgentStatus, Notification, status_channel
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.seat import ActOutcome, News

log = logging.getLogger(__name__)

#: Seconds an endpoint goes on after its session ended: its client learns of the end from its
#: tools (observe, wait_for_news) and reads the seat's last view.
END_GRACE = 60.0
#: MCP sessions one seat's endpoint keeps open at once (a client that reconnects opens another;
#: the SDK closes one idle for its idle timeout).
MAX_MCP_SESSIONS = 16
#: Seconds an MCP session with no request in flight is kept before the SDK closes it.
MCP_SESSION_IDLE_SECONDS = 30 * 60


class Exchange(Protocol):
    """One HTTP request served by an ASGI app (see :mod:`cogym_lab.server.asgi_bridge`)."""

    async def run(self, app: Any) -> None: ...


class HostedSessionLike(Protocol):
    """What an endpoint needs of a hosted session (a ``runtime.hosted.HostedSession``)."""

    bus: Bus | None
    runner: asyncio.Task[Any] | None

    @property
    def session_id(self) -> str: ...

    @property
    def outside(self) -> list[str]: ...


class WatchedBusSeat(BusSeat):
    """A bus seat that tells its endpoint when the client acts and waits."""

    def __init__(self, bus: Bus, session_id: str, role: str,
                 on_change: Callable[[], Awaitable[None]]) -> None:
        super().__init__(bus, session_id, role)
        self.on_change = on_change
        self.acting = 0
        self.waiting = 0
        self.last_act_seq: int | None = None
        self.last_action: str | None = None

    async def act(self, action: dict[str, Any], *, timeout: float = 60.0,
                  seen_seq: int | None = None) -> ActOutcome:
        self.acting += 1
        await self.on_change()
        try:
            outcome = await super().act(action, timeout=timeout, seen_seq=seen_seq)
        finally:
            self.acting -= 1
        if outcome.settlement is not None and outcome.settlement.applied:
            self.last_act_seq = outcome.settlement.seq
            self.last_action = outcome.event.action if outcome.event is not None else None
        await self.on_change()
        return outcome

    async def wait_for_news(self, seq: int, timeout: float) -> News:
        self.waiting += 1
        if self.waiting == 1:
            await self.on_change()
        try:
            return await super().wait_for_news(seq, timeout)
        finally:
            self.waiting -= 1


class SeatEndpoint:
    """One outside seat served over streamable HTTP (see the module docstring)."""

    def __init__(self, bus: Bus, session_id: str, role: str, *, max_body: int,
                 progress_seconds: float = 5.0) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from cogym_lab.mcp_seat.server import SeatServer

        self.bus = bus
        self.session_id = session_id
        self.role = role
        self.seat = WatchedBusSeat(bus, session_id, role, self.publish_status)
        self.server = SeatServer(self.seat, progress_seconds=progress_seconds)
        self.manager = StreamableHTTPSessionManager(
            self.server.server, max_request_body_size=max_body, max_sessions=MAX_MCP_SESSIONS,
            session_idle_timeout=MCP_SESSION_IDLE_SECONDS)
        self.open_requests = 0
        self.last_seen: float | None = None
        self.closed = False
        self._running = asyncio.Event()
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._published: tuple[Any, ...] | None = None

    async def start(self) -> None:
        """Join the seat (the env sends it the current state) and start the transport."""
        await self.seat.start()
        self._runner = asyncio.create_task(self._run_manager())
        await self._running.wait()

    async def _run_manager(self) -> None:
        try:
            async with self.manager.run():
                self._running.set()
                await self._stop.wait()
        except Exception:  # the endpoint closes; the session goes on
            log.exception("the MCP endpoint of %s/%s stopped", self.session_id, self.role)
        finally:
            self._running.set()  # nobody waits for a start that failed

    async def serve(self, exchange: Exchange) -> None:
        """Answer one HTTP request of an MCP client."""
        if self.closed:
            raise RuntimeError("this seat's endpoint is closed")
        self.open_requests += 1
        self.last_seen = time.time()
        await self.publish_status()
        try:
            await exchange.run(self.manager.handle_request)
        finally:
            self.open_requests -= 1
            self.last_seen = time.time()
            with contextlib.suppress(Exception):  # the answer went out; a status may not
                await self.publish_status()

    @property
    def attached(self) -> bool:
        return self.open_requests > 0

    def status(self) -> dict[str, Any]:
        """The seat's status for a session's snapshot."""
        return {"attached": self.attached, "last_act_seq": self.seat.last_act_seq,
                "last_seen": self.last_seen}

    def agent_status(self) -> dict[str, Any]:
        """The seat as the panels' agents list shows it, with ``outside`` beside."""
        seat = self.seat
        state: AgentState
        if seat.acting:
            state = "acting"
        elif seat.waiting or not self.attached:
            state = "waiting"
        else:
            state = "thinking"
        current: Notification | None = seat.current
        if current is not None and current.done:
            state = "finished"
        status = AgentStatus(role=self.role, status=state, last_action=seat.last_action,
                             ts=time.time())
        return status.model_dump(mode="json") | {"outside": self.status()}

    async def publish_status(self) -> None:
        if self.closed:
            return
        status = self.agent_status()
        key = (status["status"], status["last_action"], status["outside"]["attached"],
               status["outside"]["last_act_seq"])
        if key == self._published:  # only changes: a client's every request is no news
            return
        self._published = key
        try:
            await self.bus.publish(status_channel(self.session_id), status)
        except Exception:  # a bus that closed as the session ended
            log.debug("status of %s/%s not published", self.session_id, self.role,
                      exc_info=True)

    async def close(self) -> None:
        """Stop the transport (open streams end) and let go of the seat."""
        if self.closed:
            return
        await self.publish_status()  # attached no more, as far as panels go
        self.closed = True
        self._stop.set()
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await within(10.0, asyncio.shield(self._runner))
        await self.seat.close()


class HostedSeats:
    """The endpoints of the outside seats of one server's sessions, by (session, role)."""

    def __init__(self, *, max_body: int, progress_seconds: float = 5.0,
                 end_grace: float = END_GRACE) -> None:
        self.max_body = max_body
        self.progress_seconds = progress_seconds
        self.end_grace = end_grace
        self.endpoints: dict[tuple[str, str], SeatEndpoint] = {}
        #: The last status of each closed endpoint's seat (its session ended).
        self.last_statuses: dict[tuple[str, str], dict[str, Any]] = {}
        self._opening: dict[tuple[str, str], asyncio.Future[SeatEndpoint]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def serving(self, session_id: str, role: str) -> SeatEndpoint | None:
        """The open endpoint of that seat, if one is."""
        found = self.endpoints.get((session_id, role))
        return found if found is not None and not found.closed else None

    async def endpoint(self, hosted: HostedSessionLike, role: str) -> SeatEndpoint:
        """The endpoint of ``hosted``'s outside seat ``role``, made on first use. The caller
        has checked that the session runs and the seat is the requester's."""
        key = (hosted.session_id, role)
        found = self.endpoints.get(key)
        if found is not None and not found.closed:
            return found
        opening = self._opening.get(key)
        if opening is not None:  # two first requests at once: one endpoint
            return await asyncio.shield(opening)
        future: asyncio.Future[SeatEndpoint] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            assert hosted.bus is not None
            endpoint = SeatEndpoint(hosted.bus, hosted.session_id, role, max_body=self.max_body,
                                    progress_seconds=self.progress_seconds)
            await endpoint.start()
            self.endpoints[key] = endpoint
            self._close_at_end(hosted)
            future.set_result(endpoint)
            return endpoint
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: a lone first request does not warn
            raise
        finally:
            del self._opening[key]

    def _close_at_end(self, hosted: HostedSessionLike) -> None:
        runner = hosted.runner
        if runner is None:
            return
        session_id = hosted.session_id

        def ended(_: Any) -> None:
            task = asyncio.ensure_future(self._close_later(session_id))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

        runner.add_done_callback(ended)

    async def _close_later(self, session_id: str) -> None:
        await asyncio.sleep(self.end_grace)
        await self.close_session(session_id)

    def statuses(self, session_id: str, roles: list[str]) -> dict[str, dict[str, Any]]:
        """Each of ``roles``' seat status (detached for a seat no client reached yet)."""
        statuses = {}
        for role in roles:
            endpoint = self.endpoints.get((session_id, role))
            if endpoint is not None:
                statuses[role] = endpoint.status()
            else:
                statuses[role] = self.last_statuses.get((session_id, role)) or {
                    "attached": False, "last_act_seq": None, "last_seen": None}
        return statuses

    async def close_session(self, session_id: str) -> None:
        for key in [key for key in self.endpoints if key[0] == session_id]:
            endpoint = self.endpoints.pop(key)
            await endpoint.close()
            self.last_statuses[key] = endpoint.status() | {"attached": False}

    async def close(self) -> None:
        """The server stops: every endpoint closes (the sessions are the host's to end)."""
        for task in list(self._closing):
            task.cancel()
        endpoints, self.endpoints = list(self.endpoints.values()), {}
        await asyncio.gather(*(endpoint.close() for endpoint in endpoints),
                             return_exceptions=True)


__all__ = ["END_GRACE", "HostedSeats", "SeatEndpoint", "WatchedBusSeat"]
