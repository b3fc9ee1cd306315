"""Member types this checkout declares in pyproject.toml but the installed metadata lacks (a
worktree's new entry point before the package is reinstalled): registered for the test run, so
team files naming them load as they will once installed."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogym_lab.core.plugins import installed_entry_points
from cogym_lab.members.registry import MEMBERS_GROUP, register_member, unregister_member

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def declared_members() -> dict[str, str]:
    data = tomllib.loads(PYPROJECT.read_text("utf-8"))
    return dict(data.get("project", {}).get("entry-points", {}).get(MEMBERS_GROUP, {}))


@pytest.fixture(autouse=True, scope="session")
def checkout_member_types() -> Iterator[None]:
    installed = {point.name for point in installed_entry_points(MEMBERS_GROUP)}
    missing = {name: path for name, path in declared_members().items() if name not in installed}
    for name, path in missing.items():
        register_member(path, name)
    yield
    for name in missing:
        unregister_member(name)
