"""The content shape of each render type: checked, documented, and kept in step with the panel."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cogym_lab.core import RenderType
from cogym_lab.core.render_shapes import CONTENT_SHAPES, ContentShape, content_problem
from cogym_lab.envs.kitchen import KitchenEnv
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
#: The built-in render types and those a task brings with a view of its own (the kitchen's).
SHAPES: dict[str, ContentShape] = {**CONTENT_SHAPES, **KitchenEnv.content_shapes}
KITCHEN = "kitchen"
PANEL = (ROOT / "js" / "session_panel.js").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")

FITS: list[tuple[str, Any]] = [
    (RenderType.TEXT, 42),
    (RenderType.EDITOR, ""),
    (RenderType.EDITOR, "# Plan"),
    (RenderType.CHECKLIST, [{"id": 1, "text": "tent", "done": True, "added_by": "agent"}]),
    (RenderType.CHECKLIST, None),
    (RenderType.TABLE, [{"a": 1}, [1, 2], "row"]),
    (RenderType.TABLE, {"title": "T", "columns": ["a"], "rows": [[1]], "note": "n"}),
    (RenderType.TABLE, {}),
    (RenderType.SEARCH_RESULTS, ["idea", {"title": "x", "url": "https://example.org"}]),
    (RenderType.SEARCH_RESULTS, {"columns": ["a"], "rows": []}),
    (RenderType.LIBRARY, [{"title": "Co-Gym", "year": 2025}, "A bare title"]),
    (RenderType.NOTEBOOK, {"cells": [{"source": "1 + 1", "outputs": []}], "running": {}}),
    (RenderType.NOTEBOOK, {}),
    (RenderType.PLAN, "1. pack"),
    (RenderType.PLAN, {"proposals": [], "plan": None}),
    (KITCHEN, {"grid": ["XXX", "X X"], "legend": {"X": "counter"}}),
    ("hologram", {"depth": 3}),
]

MISFITS: list[tuple[str, Any, str]] = [
    (RenderType.EDITOR, None, "is null, not a string"),
    (RenderType.EDITOR, {"text": "x"}, "is an object, not a string"),
    (RenderType.CHECKLIST, {"items": ["tent"]}, "is an object, not a list of items"),
    (RenderType.CHECKLIST, ["tent"], 'item [0] is a string, not an object with a "text"'),
    (RenderType.CHECKLIST, [{"id": 1, "title": "tent"}], 'item [0] has no "text" string'),
    (RenderType.TABLE, {"title": "T"}, 'its "rows" is null, not a list'),
    (RenderType.TABLE, {"rows": [], "columns": "a,b"}, 'its "columns" is a string, not a list'),
    (RenderType.TABLE, "a | b", "is a string, not a list of rows"),
    (RenderType.SEARCH_RESULTS, {"results": ["x"]}, 'its "rows" is null, not a list'),
    (RenderType.LIBRARY, {"papers": []}, "is an object, not a list of entries"),
    (RenderType.LIBRARY, [{"name": "Co-Gym"}], 'entry [0] has no "title" string'),
    (RenderType.NOTEBOOK, [{"source": "1"}], "is a list, not an object"),
    (RenderType.NOTEBOOK, {"cells": [None]}, 'cell [0] is null, not an object with a "source"'),
    (RenderType.NOTEBOOK, {"cells": [], "kernel": "py"}, "does not show its keys 'kernel'"),
    (KITCHEN, {"grid": []}, 'has no non-empty "grid" list'),
    (KITCHEN, {"grid": [[1, 2]]}, 'its "grid" holds something other than strings'),
]


@pytest.mark.parametrize(("render_type", "content"), FITS)
def test_content_its_view_shows_passes(render_type: str, content: Any) -> None:
    assert content_problem(render_type, content, SHAPES) is None


@pytest.mark.parametrize(("render_type", "content", "problem"), MISFITS)
def test_content_its_view_cannot_show_is_named(render_type: str, content: Any,
                                               problem: str) -> None:
    found = content_problem(render_type, content, SHAPES)
    assert found is not None and problem in found


def panel_render_types() -> set[str]:
    """The render types the panel has a view of its own for."""
    table = re.search(r"const CONTENT_VIEWS = \{(.*?)\};", PANEL, re.DOTALL)
    assert table is not None, "the panel's table of read-only views moved"
    read_only = set(re.findall(r"^\s*(\w+): \w+View,$", table.group(1), re.MULTILINE))
    acting = set(re.findall(r'component\.render_type === "(\w+)"', PANEL))
    return read_only | acting


def test_every_view_of_the_panel_has_its_shape_and_every_shape_its_view():
    assert panel_render_types() == set(SHAPES)


def test_the_guide_lists_the_content_of_every_render_type():
    section = GUIDE.split("### What each render type shows", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    assert sorted(listed) == sorted(SHAPES)


def test_a_task_brings_the_shape_of_its_own_render_type_and_only_its_env_checks_it() -> None:
    """A task's own render type is checked where its env declares it; elsewhere it is a name
    the panel does not know, whose content shows as JSON."""
    assert content_problem(KITCHEN, {"grid": []}) is None
    assert "grid" in (content_problem(KITCHEN, {"grid": []}, SHAPES) or "")
