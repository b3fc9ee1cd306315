"""The LM behind the browser tests: one loopback OpenAI-compatible server for the whole run,
whose replies each test scripts by setting a handler."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from cogym_lab.testing import Reply, ScriptedOpenAIServer

__all__ = ["Handler", "ScriptedLM"]

Handler = Callable[[dict[str, Any]], "str | Reply"]


class ScriptedLM:
    """Routes every chat request of the server to the handler the current test set.

    Without a handler the request gets an HTTP 500 that names the problem, so a test that
    forgot to script its LM fails loudly instead of hanging.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handler: Handler | None = None
        self.bodies: list[dict[str, Any]] = []
        self.server = ScriptedOpenAIServer(responder=self._answer)

    def use(self, handler: Handler | None) -> None:
        """Answer the next requests with ``handler`` (``None``: refuse them)."""
        with self._lock:
            self._handler = handler
            self.bodies = []

    def _answer(self, body: dict[str, Any]) -> str | Reply:
        with self._lock:
            handler = self._handler
            self.bodies.append(body)
        if handler is None:
            return Reply(status=500, error="no LM script is set for this browser test")
        return handler(body)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def __enter__(self) -> ScriptedLM:
        self.server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.stop()
