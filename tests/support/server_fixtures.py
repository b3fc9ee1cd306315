"""Fixtures for tests against the in-process Jupyter server (pytest-jupyter's ``jp_*``):
running a coroutine in the server's loop, the REST API with the server's token or as alice or
bob, and the server's session host. A test module sets ``jp_server_config`` for its server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from cogym_lab.runtime.hosting import SessionHost
from tests.support.jupyter_api import ApiCall, session_api

__all__ = ["alice", "api", "bob", "host", "run"]

#: A cap on one awaited step, so a hang fails the test instead of the whole run.
STEP_CAP = 200


@pytest.fixture
def run(jp_asyncio_loop, jp_serverapp) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """Run a coroutine to completion in the server's loop."""
    return lambda coroutine: jp_asyncio_loop.run_until_complete(
        asyncio.wait_for(coroutine, STEP_CAP))


@pytest.fixture
def api(jp_fetch) -> ApiCall:
    """The REST API with the server's own token."""
    return session_api(jp_fetch)


@pytest.fixture
def alice(jp_fetch) -> ApiCall:
    return session_api(jp_fetch, "alice")


@pytest.fixture
def bob(jp_fetch) -> ApiCall:
    return session_api(jp_fetch, "bob")


@pytest.fixture
def host(jp_serverapp) -> SessionHost:
    """The session host of the in-process server."""
    return jp_serverapp.web_app.settings["cogym_lab_host"]
