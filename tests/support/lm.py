"""Fixtures for LM tests: a loopback OpenAI-compatible server, and no LM settings leaking in
from the machine's environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
