"""Fixtures for LM tests: a loopback OpenAI-compatible server, no LM settings leaking in from the
machine's environment, and the LM clients a test left open closed with its event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from cogym_lab.core.blocking import close_lm_clients_of_this_loop
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.testing import ScriptedOpenAIServer


@pytest.fixture
def no_ambient_lm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
async def lm_clients_closed() -> AsyncIterator[None]:
    """When the test ends, the LM clients still open on its event loop are closed, on that loop,
    before the loop ends (as ``Session.run_sync`` does with its own): a test that made an LM and
    ran a ``Session`` it built itself has no ``build_session`` to close it, and a client left
    open is left to the garbage collector ("Unclosed client session")."""
    yield
    await close_lm_clients_of_this_loop()


@pytest.fixture(autouse=True)
def async_tests_close_their_lm_clients(request: pytest.FixtureRequest) -> None:
    """Every async test on an event loop of its own gets ``lm_clients_closed``; a test that runs
    loops itself (``asyncio.run``) closes its LMs inside them, or uses ``Session.run_sync``."""
    marker = request.node.get_closest_marker("asyncio")
    if marker is not None and marker.kwargs.get("loop_scope", "function") == "function":
        request.getfixturevalue("lm_clients_closed")
