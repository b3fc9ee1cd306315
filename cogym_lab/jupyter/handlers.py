"""REST and websocket handlers under ``/cogym/api``. Every one requires an authenticated user
allowed on the ``cogym`` resource."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import ensure_async
from pydantic import ValidationError
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from cogym_lab.core.messages import obs_channel, status_channel
from cogym_lab.jupyter.hosting import HostingError, SessionHost
from cogym_lab.jupyter.models import RatingRequest, validation_message

AUTH_RESOURCE = "cogym"
_CREATE_FIELDS = {"task", "instance", "team", "people", "env_args", "lm", "notebook",
                  "idle_seconds", "timeout", "max_events", "agent_step_limit", "seed",
                  "protocol"}


class CogymAPIHandler(ExtensionHandlerMixin, APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def host(self) -> SessionHost:
        return self.settings["cogym_lab_host"]

    def error(self, status: int, message: str) -> None:
        self.set_status(status)
        self.finish({"error": message, "message": message})

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError as error:
            raise HostingError(f"The request body is not JSON: {error}") from None
        if not isinstance(body, dict):
            raise HostingError("The request body must be a JSON object.")
        return body

    def send(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, default=str))


class SessionsHandler(CogymAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.send({"sessions": self.host.list()})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            body = self.json_body()
            unknown = set(body) - _CREATE_FIELDS
            if unknown:
                raise HostingError(f"Unknown fields: {', '.join(sorted(unknown))}.")
            instance, env_args = body.pop("instance", None), body.pop("env_args", None) or {}
            if instance is not None and (not isinstance(instance, int)
                                         or isinstance(instance, bool)):
                raise HostingError("'instance' must be an integer.")
            if not isinstance(env_args, dict):
                raise HostingError("'env_args' must be an object.")
            people = body.pop("people", None) or []
            if not isinstance(people, list):
                raise HostingError("'people' must be a list of role names.")
            hosted = await self.host.create(body.pop("task", None), instance=instance,
                                            env_args=env_args, team=body.pop("team", None),
                                            people=people, **body)
        except HostingError as error:
            return self.error(error.status, error.message)
        self.set_header("Location", self.request.path.rstrip("/") + "/" + hosted.session_id)
        self.send(hosted.summary(), status=201)


class SessionHandler(CogymAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        try:
            self.send(self.host.snapshot(session_id))
        except HostingError as error:
            self.error(error.status, error.message)

    @web.authenticated
    @authorized
    async def delete(self, session_id: str) -> None:
        try:
            hosted = await self.host.end(session_id)
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send(hosted.summary())


class ActionsHandler(CogymAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        try:
            body = self.json_body()
            request = await self.host.act(session_id, body.get("role"), body.get("action"),
                                          base=body.get("base"))
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send({"request_id": request.id, "role": request.role}, status=202)


class ResumeHandler(CogymAPIHandler):
    """``POST .../sessions/<id>/resume``: carry on a session a server restart interrupted.
    Answers with the session's summary and the state restored from its log."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        try:
            hosted = await self.host.resume(session_id)
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send(hosted.summary() | {"state": hosted.restored_state})


class InterruptHandler(CogymAPIHandler):
    """``POST .../sessions/<id>/interrupt``: stop the cell the session's kernel is running
    (the agent sees a KeyboardInterrupt). Answers ``{"interrupted": bool}``."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        try:
            interrupted = await self.host.interrupt(session_id)
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send({"session_id": session_id, "interrupted": interrupted})


class RatingHandler(CogymAPIHandler):
    """``POST .../sessions/<id>/rating`` with ``{"role", "outcome_rating", "satisfaction",
    "comment"}``: a person seat rates the session (also after it ended)."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        try:
            body = RatingRequest.model_validate(self.json_body())
            ratings = self.host.rate(session_id, body.role, body.outcome_rating,
                                     body.satisfaction, body.comment)
        except ValidationError as error:
            return self.error(400, validation_message(error))
        except HostingError as error:
            return self.error(error.status, error.message)
        self.send({"session_id": session_id, "ratings": ratings}, status=201)


class SessionWebSocketHandler(ExtensionHandlerMixin, WebSocketMixin, WebSocketHandler,
                              JupyterHandler):
    """Follows one person seat: streams its notifications, forwards its actions.

    Open ``.../sessions/<id>/ws?role=<role>``. Each notification arrives as a JSON text message;
    send ``{"action": "..."}`` or ``{"action": {"name": ..., "args": {...}}}`` to act (add
    ``"base": text`` to a whole-text replacement: the text the person edited, so edits made
    meanwhile are merged). Agents' status updates arrive as ``{"type": "status", ...}``. Opening
    asks the env for the current state, so a reconnecting browser catches up.
    """

    auth_resource = AUTH_RESOURCE

    @property
    def host(self) -> SessionHost:
        return self.settings["cogym_lab_host"]

    @ws_authenticated
    async def get(self, session_id: str) -> None:
        allowed = await ensure_async(self.authorizer.is_authorized(
            self, self.current_user, "execute", AUTH_RESOURCE))
        if not allowed:
            raise web.HTTPError(403)
        self.role = self.get_argument("role", "")
        try:
            self.host.check_seat(session_id, self.role)
        except HostingError as error:
            raise web.HTTPError(error.status, error.message) from None
        self.session_id = session_id
        self._subscription = None
        self._pump: asyncio.Task[None] | None = None
        await super().get(session_id)

    async def open(self, session_id: str) -> None:  # type: ignore[override]
        super().open()  # WebSocketMixin: keep-alive pings
        hosted = self.host.get(session_id)
        self._subscription = await hosted.bus.subscribe(obs_channel(session_id, self.role))
        self._pump = asyncio.create_task(self._forward())
        # From the beginning: a panel that (re)connects learns each agent's latest status.
        self._statuses = await hosted.bus.subscribe(status_channel(session_id),
                                                    from_beginning=True)
        self._status_pump = asyncio.create_task(self._forward_statuses())
        try:
            await self.host.sync(session_id, self.role)
        except HostingError as error:
            self._reply({"error": error.message})

    async def _forward(self) -> None:
        subscription = self._subscription
        async for message in subscription:
            try:
                await self.write_message(json.dumps(message, default=str))
            except WebSocketClosedError:
                return

    async def _forward_statuses(self) -> None:
        async for status in self._statuses:
            try:
                await self.write_message(json.dumps({"type": "status", **status}, default=str))
            except WebSocketClosedError:
                return

    async def on_message(self, message: str | bytes) -> None:  # type: ignore[override]
        try:
            data = json.loads(message)
            if not isinstance(data, dict) or "action" not in data:
                raise HostingError("Send {\"action\": ...}.")
            await self.host.act(self.session_id, self.role, data["action"],
                                base=data.get("base"))
        except (ValueError, HostingError) as error:
            text = error.message if isinstance(error, HostingError) else f"Not JSON: {error}"
            self._reply({"error": text})

    def _reply(self, data: dict[str, Any]) -> None:
        try:
            self.write_message(json.dumps(data))
        except WebSocketClosedError:
            pass

    def on_close(self) -> None:
        for name in ("_subscription", "_statuses"):
            subscription = getattr(self, name, None)
            if subscription is not None:
                asyncio.ensure_future(subscription.close())
        for name in ("_pump", "_status_pump"):
            pump = getattr(self, name, None)
            if pump is not None:
                pump.cancel()
