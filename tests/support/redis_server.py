"""Pytest fixtures that start a real ``redis-server`` (see :mod:`cogym_lab.testing`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogym_lab.testing import RedisServer

__all__ = ["RedisServer", "redis_server", "redis_server_session"]


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh server per test; the test may stop, kill and restart it."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_server_session() -> Iterator[RedisServer]:
    """One server for the whole session, for tests that only need a live Redis."""
    with RedisServer() as server:
        yield server
