"""Helpers for tests that drive the cogym_lab server extension in an in-process Jupyter server
(pytest-jupyter): a JSON client for ``/cogym/api/sessions`` and waits on snapshots and
websockets."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tornado.httpclient import HTTPClientError

API = ("cogym", "api", "sessions")

ApiCall = Callable[..., Awaitable[tuple[int, Any]]]


def session_api(jp_fetch: Callable[..., Awaitable[Any]]) -> ApiCall:
    """``await api(method, *path, body=..., headers=..., raw=...)`` -> (status, JSON) under
    ``/cogym/api/sessions``; HTTP errors are returned, not raised."""

    async def call(method: str, *path: str, body: Any = None,
                   headers: dict[str, str] | None = None, raw: str | None = None
                   ) -> tuple[int, Any]:
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
        return response.code, json.loads(response.body or b"null")

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
