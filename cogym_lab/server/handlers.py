"""REST and websocket handlers under ``/cogym/api``. Every one requires an authenticated user
allowed on the ``cogym`` resource, and reaches sessions through a :class:`Gate` for that user:
a session is its creator's, and others reach only the seats shared with them.

Hosted sessions live on a loop of their own (:mod:`cogym_lab.server.sessions_loop`): a handler
reads and checks its request on the server's loop, hands everything that touches the host or a
session over to the sessions' loop (``self.loops.run`` / ``self.loops.call``) and writes the
answer back on the server's loop. A seat's WebSocket frames are built on the sessions' loop and
written on the server's.

Bodies are read within the server's limits before anything else happens (see
:mod:`cogym_lab.server.limits`): too big is ``413``, not UTF-8, not JSON or nested too deeply is
``400``, and a well-formed body is then validated by its pydantic model (``400`` naming the field).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
from typing import Any

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import ensure_async
from pydantic import BaseModel, ValidationError
from tornado import web
from tornado.http1connection import HTTP1Connection
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from cogym_lab.bus.base import Subscription
from cogym_lab.core.collector import collector_pauses
from cogym_lab.core.loop_lag import LoopLagMonitor
from cogym_lab.runtime.access import (
    SessionAccess,
    identity_of,
    new_seat_token,
    visible_state,
)
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.runtime.models import (
    ActionBody,
    ActionFrame,
    CreateRequest,
    PairwiseOffer,
    RatingRequest,
    SeatClaim,
    validation_message,
)
from cogym_lab.runtime.settlements import Submitted
from cogym_lab.server.create_policy import CreatePolicy
from cogym_lab.server.gate import Gate
from cogym_lab.server.limits import ServerLimits, TokenBucket, drain_ceiling, read_json
from cogym_lab.server.quota import ActionRates, SessionQuota
from cogym_lab.server.sessions_loop import SessionsLoop

log = logging.getLogger(__name__)

AUTH_RESOURCE = "cogym"
_BODY_METHODS = ("POST", "PUT", "PATCH")


class ServerParts:
    """What the handlers share, from the extension's settings."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.host: SessionHost = settings["cogym_lab_host"]
        self.limits: ServerLimits = settings["cogym_lab_limits"]
        self.policy: CreatePolicy = settings["cogym_lab_policy"]
        self.quota: SessionQuota = settings["cogym_lab_quota"]
        self.rates: ActionRates = settings["cogym_lab_rates"]
        self.loop_lag: LoopLagMonitor = settings["cogym_lab_loop_lag"]
        self.loops: SessionsLoop = settings["cogym_lab_sessions_loop"]


class _UsesServerParts:
    """The extension's shared parts, for a handler (its ``settings`` are tornado's)."""

    settings: dict[str, Any]

    @property
    def parts(self) -> ServerParts:
        return ServerParts(self.settings)

    @property
    def host(self) -> SessionHost:
        return self.parts.host

    @property
    def loops(self) -> SessionsLoop:
        """The sessions' loop, where the host and its sessions are touched."""
        return self.parts.loops


@web.stream_request_body
class CogymAPIHandler(_UsesServerParts, ExtensionHandlerMixin, APIHandler):
    """Streams its body, keeping at most the endpoint's limit of it: a body over the limit is
    read to its end and dropped, then answered ``413`` (:meth:`refuse_oversized`).

    Why read it at all: a server that answers while the client is still sending, and closes
    the connection, has the client's network stack reset it, and the client never sees the
    answer, only a broken connection. So a body over the limit is answered after its end when
    it is at most :data:`~cogym_lab.server.limits.DRAIN_FACTOR` times the limit (and within
    tornado's ``c.ServerApp.max_body_size``); only a larger declared one, or one whose client
    waits for ``Expect: 100-continue``, is answered at once, from its headers.
    """

    auth_resource = AUTH_RESOURCE
    #: The setting that limits this endpoint's body.
    body_limit = "max_request_bytes"

    @property
    def who(self) -> str:
        return identity_of(self.current_user, self.identity_provider)

    @property
    def gate(self) -> Gate:
        return Gate(self.host, self.who)

    @property
    def body_limit_bytes(self) -> int:
        """The most bytes this endpoint's body may have."""
        return int(getattr(self.parts.limits, self.body_limit))

    async def prepare(self) -> None:  # type: ignore[override]
        connection = self.request.connection
        http1 = connection if isinstance(connection, HTTP1Connection) else None
        limit = self.body_limit_bytes
        self._chunks: list[bytes] = []
        self._received = 0
        self._ceiling = drain_ceiling(limit, http1)
        await super().prepare()
        if self.request.method not in _BODY_METHODS:
            return
        declared = self.request.headers.get("Content-Length", "")
        size = int(declared) if declared.isdigit() else None
        if size is not None and size > limit and (
                size > self._ceiling
                or self.request.headers.get("Expect", "").lower() == "100-continue"):
            if http1 is not None:  # tornado must not answer it a second time, with a bare 400
                http1.set_max_body_size(size)
            return self.error(413, self.too_large_message(size))

    def data_received(self, chunk: bytes) -> None:
        if self._finished:  # answered already: what still comes is dropped unread
            return
        self._received += len(chunk)
        if self._received <= self.body_limit_bytes:
            self._chunks.append(chunk)
            return
        self._chunks.clear()  # over the limit: only its size matters any more
        if self._received > self._ceiling:  # a chunked body that goes on and on
            self.error(413, self.too_large_message(self._received, more=True))

    def too_large_message(self, size: int, *, more: bool = False) -> str:
        return (f"The request body is {'more than ' if more else ''}{size} bytes; this endpoint "
                f"takes at most {self.body_limit_bytes} (c.CogymLab.{self.body_limit}).")

    def refuse_oversized(self) -> None:
        """Raise ``HostingError`` (413) when the body was over the endpoint's limit."""
        if self._received > self.body_limit_bytes:
            raise HostingError(self.too_large_message(self._received), status=413)

    def error(self, status: int, message: str) -> None:
        if self._finished:  # a body refused while it came in: answered then
            return
        self.set_status(status)
        answer: dict[str, Any] = {"error": message, "message": message}
        if status == 413:  # what the body may be, for a client that splits or trims it
            answer |= {"limit": self.body_limit_bytes,
                       "setting": f"c.CogymLab.{self.body_limit}"}
        self.finish(answer)

    def json_body(self) -> dict[str, Any]:
        """The body as a JSON object, within the limits; ``HostingError`` otherwise."""
        self.refuse_oversized()
        limits = self.parts.limits
        body = read_json(b"".join(self._chunks) or b"{}", max_bytes=self.body_limit_bytes,
                         max_depth=limits.max_json_depth, what="The request body",
                         size_setting=self.body_limit)
        if not isinstance(body, dict):
            raise HostingError("The request body must be a JSON object.")
        return body

    def model_body(self, model: type[BaseModel]) -> Any:
        try:
            return model.model_validate(self.json_body())
        except ValidationError as error:
            raise HostingError(validation_message(error)) from None

    def send(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, default=str))


class StatusHandler(CogymAPIHandler):
    """``GET``: how the server that hosts the sessions is doing: sessions running here and the
    event loop's lag over the last minute (a loop that lags answers nobody)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        parts = self.parts
        running = await self.loops.call(self.host.running)
        self.send({"sessions_running": running,
                   "loop_lag": _lag_json(parts.loop_lag.summary()),
                   "sessions_loop_lag": _lag_json(self.loops.lag),
                   "collector": _lag_json(collector_pauses())})


class SessionsHandler(CogymAPIHandler):
    """``GET``: the caller's sessions (created or shared with them). ``POST``: create one."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.send({"sessions": await self.loops.call(self.gate.sessions)})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        parts, who = self.parts, self.who
        try:
            checked = parts.policy.check(self.model_body(CreateRequest))
            request = checked.request
            tokens = {role: new_seat_token() for role in request.seat_tokens}
            access = SessionAccess(owner=who, seat_users=dict(request.seat_users),
                                   seat_tokens={role: digest for role, (_, digest)
                                                in tokens.items()})
            gate = self.gate

            async def create() -> tuple[str, dict[str, Any]]:
                with parts.quota.place(who):
                    hosted = await self.host.create(request.spec(), access=access,
                                                   created_in=request.created_in)
                return hosted.session_id, gate.summary(hosted)

            session_id, answer = await self.loops.run(create())
        except HostingError as error:
            return self.error(error.status, error.message)
        self.set_header("Location", self.request.path.rstrip("/") + "/" + session_id)
        if tokens:  # shown this once: the server keeps only their digests
            answer["seat_tokens"] = {role: token for role, (token, _) in tokens.items()}
        if checked.notes:  # settings of the request's that the server did not use
            answer["notes"] = checked.notes
        self.send(answer, status=201)


class SessionHandler(CogymAPIHandler):
    """``GET``: the session as the caller's seats see it. ``DELETE``: its creator ends it."""

    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        try:
            answer = await self.loops.call(lambda: self.gate.snapshot(session_id)
                                           | {"outside_status": self.outside_status(session_id)})
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send(answer)

    def outside_status(self, session_id: str) -> dict[str, Any]:
        """The outside seats the caller may see (all for the creator, else its own), each
        with whether an MCP client is attached and the seq of its last applied action."""
        gate = self.gate
        entry = gate.entry(session_id)
        roles = entry.outside if gate.summary(entry)["owned"] else gate.outside_seats(entry)
        seats = self.settings.get("cogym_lab_mcp_seats")
        if seats is None:
            return {role: {"attached": False, "last_act_seq": None, "last_seen": None}
                    for role in roles}
        return dict(seats.statuses(session_id, roles))

    @web.authenticated
    @authorized
    async def delete(self, session_id: str) -> None:
        gate = self.gate

        async def end() -> dict[str, Any]:
            gate.owned(session_id, "end")
            return gate.summary(await self.host.end(session_id))

        try:
            answer = await self.loops.run(end())
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send(answer)


class ActionsHandler(CogymAPIHandler):
    """``POST {"role", "action", "base"?}``: act in one of the caller's seats.

    Answers with what became of the action once the env has settled it: ``200`` applied (and
    logged: ``seq`` names its event; ``error`` is the env's when it refused the action as
    invalid, which is logged too), ``409`` not applied (the session ended first; the message
    says how). Only when no answer comes within :attr:`answer_wait` seconds (a session still
    starting) it is ``202``: on its way, the seat's notifications tell the rest.
    """

    body_limit = "max_action_bytes"
    #: Seconds the answer waits for the env's settlement before it says ``202``.
    answer_wait = 5.0

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        parts, who = self.parts, self.who
        try:
            body = self.model_body(ActionBody)
            await self.loops.call(Gate(self.host, who).seat, session_id, body.role)
            if not parts.rates.allow(who, session_id):
                raise HostingError(rate_message(parts.limits), status=429)

            async def act() -> tuple[Submitted, Any]:
                submitted = await self.host.submit(session_id, body.role, body.action,
                                                   base=body.base, seen_seq=body.seen_seq)
                return submitted, await submitted.settled(self.answer_wait)

            submitted, settled = await self.loops.run(act())
        except HostingError as error:
            return self.error(error.status, error.message)
        request = submitted.request
        answer: dict[str, Any] = {"request_id": request.id, "role": request.role}
        if settled is None:
            return self.send(answer | {"status": "pending"}, status=202)
        if not settled.applied:
            message = settled.message or "The action was not applied."
            return self.send(answer | {"status": settled.status, "end_reason": settled.end_reason,
                                       "error": message, "message": message}, status=409)
        answer |= {"status": "applied", "seq": settled.seq}
        if settled.error is not None:
            answer["error"] = settled.error
        self.send(answer)


class SeatsHandler(CogymAPIHandler):
    """``POST {"token"}``: take the seat a seat token opens (each token works once). Answers
    ``{"session_id", "role"}``; the seat is then the caller's, as if it had been given by name."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        try:
            claim = self.model_body(SeatClaim)
            role = await self.loops.call(self.host.claim_seat, session_id, claim.token, self.who)
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send({"session_id": session_id, "role": role})


class ResumeHandler(CogymAPIHandler):
    """``POST .../sessions/<id>/resume``: its creator carries on a session a server restart
    interrupted. Answers with the summary and the state (as the caller's seats see it)."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        parts, gate = self.parts, self.gate

        async def resume() -> dict[str, Any]:
            gate.owned(session_id, "resume")
            with parts.quota.place(gate.who):
                hosted = await self.host.resume(session_id)
            state = visible_state(hosted.restored_state, gate.seats(hosted))
            return gate.summary(hosted) | {"state": state}

        try:
            self.refuse_oversized()
            answer = await self.loops.run(resume())
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send(answer)


class InterruptHandler(CogymAPIHandler):
    """``POST .../sessions/<id>/interrupt``: stop the cell the session's kernel is running
    (the agent sees a KeyboardInterrupt); its creator or a seat holder may. Answers
    ``{"interrupted": bool}``."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        try:
            self.refuse_oversized()
            gate = self.gate

            async def interrupt() -> bool:
                gate.entry(session_id)
                return await self.host.interrupt(session_id)

            interrupted = await self.loops.run(interrupt())
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send({"session_id": session_id, "interrupted": interrupted})


class RatingHandler(CogymAPIHandler):
    """``POST .../sessions/<id>/rating`` with ``{"role", "outcome_rating", "satisfaction",
    "comment"}`` and, optionally, the nine Likert items (1-5, named in
    :data:`~cogym_lab.records.likert.COCOA_ITEMS`; the three old names still read) and the
    pairwise answer ``pairwise`` (``own`` / ``autonomous`` /
    ``tie``) with the ``pairwise_order`` shown: a person rates the session from a seat of
    theirs (also after it ended)."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        gate = self.gate
        try:
            body = self.model_body(RatingRequest)

            def rate() -> Any:
                gate.seat(session_id, body.role)
                self.host.rate(session_id, body.role, body.outcome_rating, body.satisfaction,
                               body.comment, likert=body.likert(),
                               pairwise=body.pairwise, pairwise_order=body.pairwise_order)
                return gate.snapshot(session_id)["ratings"]

            ratings = await self.loops.call(rate)
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send({"session_id": session_id, "ratings": ratings}, status=201)


class PairwiseHandler(CogymAPIHandler):
    """``GET .../sessions/<id>/pairwise?role=<seat>``: the rating form's comparison with the
    autonomous agent's outcome (``PairwiseOffer``), for a seat of the caller's, once the
    session has ended."""

    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        role = self.get_query_argument("role", None, strip=False)  # "user\u2028" is no seat
        try:
            gate = self.gate

            async def offer_of() -> PairwiseOffer:
                gate.seat(session_id, role)
                return await self.host.pairwise_offer(session_id, str(role))

            offer = await self.loops.run(offer_of())
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send(offer.model_dump(mode="json"))


class SessionWebSocketHandler(_UsesServerParts, ExtensionHandlerMixin, WebSocketMixin,
                              WebSocketHandler, JupyterHandler):
    """Follows one person seat of the caller's: streams its updates, takes its actions.

    Open ``.../sessions/<id>/ws?role=<role>``. Each update (what an event changed for the seat)
    arrives as a JSON text message; send ``{"action": "..."}`` or ``{"action": {"name": ...,
    "args": {...}}}`` to act (add ``"base": text`` to a whole-text replacement, and ``"id"`` to
    have answers name the action).
    Send ``{"type": "sync"}`` to be sent the seat's whole state again (a panel whose copy missed
    an update does): the env answers with a whole update, which every socket of the seat gets.
    Agents' status updates arrive as ``{"type": "status", ...}``. Every action is either sent
    on to the env or answered by ``{"type": "error", "code", "error", "id"}``: a frame too big,
    not JSON, of the wrong shape, or over the connection's rate (``"rate_limited"``). One sent
    on that the env did not apply (the session ended first) is answered by a ``"refused"`` error
    frame once the env settles it; an applied one by the seat's notifications. The socket
    stays open through all of them. Opening asks the env for the current state, so a
    reconnecting browser catches up.

    The seat is followed on the sessions' loop (its feed, the panel count, the env's
    settlements); only the frames' writing happens on the server's loop.

    Each open socket counts as a panel of its seat (``SessionHost.panel_opened``): a session
    with person seats whose sockets have all closed goes on, and ends only when no one has been
    at it for the server's ``unattended_seconds``.

    Watch mode, ``...?role=<member>&watch=1``: the session's creator follows any member (an
    agent, a simulated user, a seat) read-only. The socket streams that member's notifications
    and the agents' statuses, starting with the member's current state (built without a sync,
    which the member itself would receive and act on); every frame sent on it is answered by
    ``{"type": "error", "code": "read_only", ...}`` and changes nothing, except
    ``{"type": "sync"}``, which this socket alone answers with the member's current state again
    (built as when it opened). It is not a person's panel, so it is never counted for the grace
    period.
    """

    auth_resource = AUTH_RESOURCE
    #: What a watch socket answers to any frame.
    READ_ONLY = ("This connection only watches {role}: it takes no actions. Open the session "
                 "with a person seat of yours to act.")

    @property
    def max_message_size(self) -> int:
        return self.parts.limits.ws_frame_ceiling

    @ws_authenticated
    async def get(self, session_id: str) -> None:
        allowed = await ensure_async(self.authorizer.is_authorized(
            self, self.current_user, "execute", AUTH_RESOURCE))
        if not allowed:
            raise web.HTTPError(403)
        self.role = self.get_argument("role", "")
        self.watching = self.get_argument("watch", "") in ("1", "true", "yes")
        gate = Gate(self.host, identity_of(self.current_user, self.identity_provider))

        def check() -> None:
            if self.watching:
                gate.watch(session_id, self.role)
                self.host.get(session_id)  # 409 until a stored session resumes
            else:
                gate.seat(session_id, self.role)
                self.host.check_seat(session_id, self.role)  # 409 until a stored one resumes

        try:
            await self.loops.call(check)
        except HostingError as error:
            raise web.HTTPError(error.status, error.message) from None
        limits = self.parts.limits
        self.session_id = session_id
        self.bucket = TokenBucket(limits.ws_actions_per_second, limits.ws_action_burst)
        self._seat: concurrent.futures.Future[None] | None = None
        # The env's settlements still awaited, on the sessions' loop.
        self._answers: set[concurrent.futures.Future[None]] = set()
        await super().get(session_id)

    async def open(self, session_id: str) -> None:
        super().open()  # WebSocketMixin: keep-alive pings
        # The seat is followed on the sessions' loop, until the socket closes (on_close
        # cancels it there).
        self._seat = self.loops.spawn(self._follow_seat())
        self._seat.add_done_callback(self._seat_ended)

    def _seat_ended(self, seat: concurrent.futures.Future[None]) -> None:
        """Say in the server's log why following the seat failed (nobody awaits it)."""
        if not seat.cancelled() and (error := seat.exception()) is not None:
            log.error("cogym_lab: following seat %s of session %s failed", self.role,
                      self.session_id, exc_info=error)

    async def _follow_seat(self) -> None:
        """On the sessions' loop: count the panel, subscribe to the seat's feed, forward it to
        the socket, and ask the env for the current state; undo it all when cancelled."""
        host, session_id, counted = self.host, self.session_id, False
        try:
            if not self.watching:  # a watcher is nobody at a seat: it must not keep it going
                host.panel_opened(session_id, self.role)
                counted = True
            try:
                feed = await host.follow(session_id, self.role, watch=self.watching)
            except HostingError as error:  # gone since the handshake (forgotten, evicted)
                await self._send(error_frame("refused", error.message))
                return
            if feed is None:  # ended between the handshake and now
                await self._send(error_frame("refused", f"Session {session_id!r} has ended."))
                return
            pumps: list[asyncio.Task[None]] = []
            try:
                if feed.current is not None:  # a watcher starts with the member's current state
                    await self._send(feed.current)
                pumps = [asyncio.create_task(self._forward(feed.updates)),
                         asyncio.create_task(self._forward(feed.statuses, {"type": "status"}))]
                if not self.watching:
                    try:
                        await host.sync(session_id, self.role)
                    except HostingError as error:
                        await self._send(error_frame("refused", error.message))
                await asyncio.gather(*pumps)
                # The session's feed ended (the session is over): the panel stays counted
                # until its socket closes, as the socket stays open.
                await asyncio.get_running_loop().create_future()
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
                await feed.close()
        finally:
            if counted:
                host.panel_closed(session_id, self.role)

    async def _forward(self, subscription: Subscription,
                       marks: dict[str, Any] | None = None) -> None:
        """Forward a subscription's messages (each with ``marks``) to the socket, in order."""
        async for message in subscription:
            text = json.dumps(message if marks is None else {**marks, **message}, default=str)
            try:  # awaited: a browser that reads slowly slows its own feed, not the server
                await self.loops.to_server(self._write(text))
            except WebSocketClosedError:
                return

    async def _write(self, text: str) -> None:
        """On the server's loop: one frame to the browser."""
        await self.write_message(text)

    async def on_message(self, message: str | bytes) -> None:
        try:
            reply = await self._handle(message)
        except Exception:  # tornado would drop the socket: the person gets an answer instead
            log.exception("cogym_lab: a WebSocket message of session %s failed",
                          self.session_id)
            reply = error_frame("internal", "The server could not handle that message.")
        if reply is not None:
            await self._send(reply)

    async def _handle(self, message: str | bytes) -> dict[str, Any] | None:
        """Send one frame's action on, or say why not (the answer to send back)."""
        limits = self.parts.limits
        data: Any = None
        problem: HostingError | None = None
        try:
            data = read_json(message, max_bytes=limits.max_action_bytes,
                             max_depth=limits.max_json_depth, what="The message",
                             size_setting="max_action_bytes")
        except HostingError as error:
            problem = error
        frame_id = _frame_id(data)
        if not self.bucket.take():  # every frame counts, well formed or not
            return error_frame("rate_limited", rate_message(limits), frame_id)
        if isinstance(data, dict) and data.get("type") == "sync":  # a watcher may ask too
            return await self.loops.run(self._sync(frame_id))
        if self.watching:  # whatever it says: nothing reaches the session from a watcher
            return error_frame("read_only", self.READ_ONLY.format(role=self.role), frame_id)
        if problem is not None:
            code = "too_large" if problem.status == 413 else "bad_message"
            return error_frame(code, problem.message, frame_id)
        try:
            frame = ActionFrame.model_validate(data)
        except ValidationError as error:
            return error_frame("bad_message", 'Send {"action": ...}: '
                               + validation_message(error), frame_id)
        try:
            submitted = await self.loops.run(self.host.submit(
                self.session_id, self.role, frame.action, base=frame.base,
                seen_seq=frame.seen_seq))
        except HostingError as error:
            return error_frame("refused", error.message, frame_id)
        # The answer comes later, on the sessions' loop; meanwhile the socket reads the next
        # frames.
        answer = self.loops.spawn(self._refuse_if_not_applied(submitted, frame_id))
        self._answers.add(answer)
        answer.add_done_callback(self._answers.discard)
        return None

    async def _refuse_if_not_applied(self, submitted: Submitted, frame_id: Any) -> None:
        """Tell the panel when the env did not apply the action (the session ended first): an
        error frame naming the action. An applied one is told by the seat's notifications."""
        settled = await submitted.settled()
        if settled is not None and not settled.applied:
            await self._send(error_frame("refused", settled.message
                                         or "The action was not applied.", frame_id))

    async def _sync(self, frame_id: Any) -> dict[str, Any] | None:
        """On the sessions' loop: send the whole state again: a watcher's to this socket
        alone, a seat's by asking the env (its answer reaches every socket of the seat). The
        answer to send back, if any."""
        try:
            if self.watching:
                current = self.host.watched(self.session_id, self.role)
                if current is not None:
                    await self._send(current)
            else:
                await self.host.sync(self.session_id, self.role)
        except HostingError as error:
            return error_frame("refused", error.message, frame_id)
        return None

    async def _send(self, data: dict[str, Any]) -> None:
        """One frame to the browser, from either loop; nothing when the socket has closed."""
        text = json.dumps(data)
        with contextlib.suppress(WebSocketClosedError):
            await self.loops.to_server(self._write(text))

    def on_close(self) -> None:
        # The seat's feed and the panel count are undone on the sessions' loop, where they
        # were made; a future cancelled before its coroutine started never counts the panel.
        seat = getattr(self, "_seat", None)
        if seat is not None:
            seat.cancel()
        for answer in list(getattr(self, "_answers", ())):
            answer.cancel()


def error_frame(code: str, message: str, frame_id: Any = None) -> dict[str, Any]:
    """A WebSocket answer that refuses an action: ``code`` for programs, ``error`` for people,
    ``id`` naming the client's action when it gave one."""
    frame: dict[str, Any] = {"type": "error", "code": code, "error": message}
    if frame_id is not None:
        frame["id"] = frame_id
    return frame


def rate_message(limits: ServerLimits) -> str:
    return (f"Too many actions at once: this connection may send {limits.ws_actions_per_second:g} "
            f"a second (bursts of {limits.ws_action_burst}). This one was not applied; send it "
            "again in a moment.")


def _frame_id(data: Any) -> Any:
    """The client's id of a frame, if it gave a usable one (echoed back as it came)."""
    if not isinstance(data, dict):
        return None
    value = data.get("id")
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and len(value) <= 64):
        return value
    return None


def _lag_json(figures: BaseModel) -> dict[str, Any]:
    """A loop's lag or the collector's pauses as JSON: NaN (none yet) is not JSON, ``None`` is."""
    return {key: (None if isinstance(value, float) and value != value else value)
            for key, value in figures.model_dump().items()}
