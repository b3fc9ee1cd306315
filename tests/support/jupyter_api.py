"""Helpers for tests that drive the cogym_lab server extension in an in-process Jupyter server
(pytest-jupyter): a JSON client for ``/cogym/api/sessions`` and waits on snapshots and
websockets."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_server.auth.identity import IdentityProvider, User
from tornado.httpclient import HTTPClientError
from traitlets import Dict, Unicode

API = ("cogym", "api", "sessions")


class UserTokens(IdentityProvider):
    """An identity provider that tells users apart: each user has a token of their own, and
    the token names the user (``c.UserTokens.users = {token: username}``). A server configured
    with ``c.ServerApp.identity_provider_class`` set to it has as many identities as tokens."""

    users = Dict(key_trait=Unicode(), value_trait=Unicode(),
                 help="token -> username").tag(config=True)

    @property
    def auth_enabled(self) -> bool:
        return True

    async def get_user_token(self, handler: Any) -> User | None:
        given = self.get_token(handler)
        name = self.users.get(given) if given else None
        return User(username=name, name=name, display_name=name) if name else None

    def get_user_cookie(self, handler: Any) -> User | None:
        return None  # these tests authenticate every request by its token


def server_config(results_dir: Any, *users: str, **cogym: Any) -> dict[str, Any]:
    """Config of an in-process server with the extension on, its results in ``results_dir`` and
    ``cogym`` as ``c.CogymLab`` settings; with ``users``, each of them has a token of their own
    (``<name>-token``, see :class:`UserTokens`) and the server's own token names nobody."""
    config: dict[str, Any] = {
        "ServerApp": {"jpserver_extensions": {"cogym_lab": True}},
        "CogymLab": {"results_dir": str(results_dir), **cogym}}
    if users:
        config["ServerApp"]["identity_provider_class"] = UserTokens
        config["UserTokens"] = {"users": {f"{name}-token": name for name in users}}
    return config


def as_user(name: str) -> dict[str, str]:
    """Headers that authenticate as ``name`` on a server configured by server_config."""
    return {"Authorization": f"token {name}-token"}

ApiCall = Callable[..., Awaitable[tuple[int, Any]]]


def session_api(jp_fetch: Callable[..., Awaitable[Any]], user: str | None = None) -> ApiCall:
    """``await api(method, *path, body=..., headers=..., raw=...)`` -> (status, JSON) under
    ``/cogym/api/sessions``; HTTP errors are returned, not raised. ``user`` authenticates as that
    user (see server_config) instead of with the server's token."""

    async def call(method: str, *path: str, body: Any = None,
                   headers: dict[str, str] | None = None, raw: str | bytes | None = None
                   ) -> tuple[int, Any]:
        headers = {**(as_user(user) if user else {}), **(headers or {})}
        kwargs: dict[str, Any] = {"method": method, "headers": headers}
        if raw is not None:
            kwargs["body"] = raw
        elif body is not None:
            kwargs["body"] = json.dumps(body)
        elif method == "POST":
            kwargs["body"] = "{}"
        try:
            response = await jp_fetch(*API, *path, **kwargs)
        except HTTPClientError as error:
            response = error.response
            if response is None:
                raise
        try:
            return response.code, json.loads(response.body or b"null")
        except ValueError:  # an answer that is not JSON (tornado's own bare errors)
            return response.code, {"message": response.body.decode(errors="replace")}

    return call


async def wait_until(api: ApiCall, session_id: str, predicate: Callable[[Any], bool],
                     timeout: float = 60.0) -> Any:
    """Poll the session's snapshot until ``predicate`` holds; returns that snapshot."""
    deadline = time.monotonic() + timeout
    while True:
        status, snapshot = await api("GET", session_id)
        assert status == 200, snapshot
        if predicate(snapshot):
            return snapshot
        assert time.monotonic() < deadline, f"timed out; last snapshot: {snapshot}"
        await asyncio.sleep(0.1)


async def receive_until(ws: Any, predicate: Callable[[Any], bool],
                        timeout: float = 60.0) -> list[Any]:
    """JSON messages from ``ws`` until one matches ``predicate``; returns them all."""
    seen: list[Any] = []
    async with asyncio.timeout(timeout):
        while True:
            text = await ws.read_message()
            assert text is not None, f"websocket closed; received {seen}"
            seen.append(json.loads(text))
            if predicate(seen[-1]):
                return seen
