"""The content each render type's view can show, and a check that a component's content has it.

The notebook panel (``js/session_panel.js``) draws each component with the view of its render
type, and the agents' prompts (``cogym_lab.agents.render``) read the same content. A view reads
the content it expects defensively: content of another shape does not break the panel, but it
shows as an empty list, or loses fields. :func:`content_problem` says so before a person sees
it; ``check_env`` runs it on every view. ``docs/extending.md`` lists the shapes for authors.

Empty content is always fine (``None``, an empty list, ``{}``; for an editor ``""``): a view
says "nothing yet". A render type not listed in :data:`CONTENT_SHAPES` shows its content as
JSON, whatever it is, unless its task declares the shape (``CoEnv.content_shapes``), as a task
with a view of its own in the panel does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cogym_lab.core.observation import RenderType

__all__ = ["CONTENT_SHAPES", "ContentShape", "content_problem"]


@dataclass(frozen=True)
class ContentShape:
    """The content a render type's view shows: in ``words`` for docs and messages, and as a
    ``problem`` check that says why some content does not fit (``None`` when it does)."""

    words: str
    problem: Callable[[Any], str | None] | None = None


#: What each built-in render type's view shows, in words: for docs and for the check's messages.
_WORDS: dict[str, str] = {
    RenderType.TEXT: "a string (shown as preformatted text), or an object (shown as key: value "
                     "lines); anything else shows as JSON",
    RenderType.EDITOR: "a string: the shared text",
    RenderType.TABLE: 'a list of rows (objects, lists or single values), or an object '
                      '{"title", "columns", "rows", "note"} whose "rows" is such a list',
    RenderType.SEARCH_RESULTS: "a list of results (objects titled by their title, name, text, "
                               "label or id; or strings), or a table object as for 'table'",
    RenderType.LIBRARY: 'a list of entries: objects with a "title" (and optionally "authors", '
                        '"year", "id", "url", "note", "number"), or strings (a bare title)',
    RenderType.NOTEBOOK: 'an object {"cells": [...], "running": {role: code}}, each cell an '
                         'object with its "source" (and "outputs", "status", "ran_by", '
                         '"execution_count", "error")',
    RenderType.PLAN: 'the interactive plan ({"proposals", "plan", ...}, see docs/plans.md), a '
                     'string (markdown) or a list of steps',
    RenderType.CHECKLIST: 'a list of items, each an object with a "text" (and optionally "id", '
                          '"done", "added_by")',
}

#: The keys a table object's view reads; any other key is not shown.
_TABLE_KEYS = frozenset({"title", "columns", "rows", "note"})
_NOTEBOOK_KEYS = frozenset({"cells", "running"})


def content_problem(render_type: str, content: Any,
                    shapes: Mapping[str, ContentShape] | None = None) -> str | None:
    """Why the view of ``render_type`` cannot show ``content`` as it is, or ``None`` when it
    can. The reason names where the content parts from the expected shape. ``shapes``: the
    render types known (default: the built-in ones, :data:`CONTENT_SHAPES`)."""
    shape = (CONTENT_SHAPES if shapes is None else shapes).get(render_type)
    if shape is None or shape.problem is None:
        return None
    if render_type != RenderType.EDITOR and _is_empty(content):  # an editor's text is a string
        return None
    return shape.problem(content)


def _is_empty(content: Any) -> bool:
    return content is None or (isinstance(content, list | tuple | Mapping) and not content)


def _editor(content: Any) -> str | None:
    if isinstance(content, str):
        return None
    return f"is {_kind(content)}, not a string (the editor edits text only)"


def _table(content: Any) -> str | None:
    if isinstance(content, list | tuple):
        return None
    if not isinstance(content, Mapping):
        return f"is {_kind(content)}, not a list of rows or a table object"
    problems = []
    if not isinstance(content.get("rows"), list | tuple):
        problems.append(f'its "rows" is {_kind(content.get("rows"))}, not a list (the view shows '
                        f'"No rows.")')
    if "columns" in content and not isinstance(content["columns"], list | tuple):
        problems.append(f'its "columns" is {_kind(content["columns"])}, not a list')
    unread = sorted(set(content) - _TABLE_KEYS)
    if unread:
        problems.append(f"the view does not show its keys {', '.join(map(repr, unread))}")
    return "; ".join(problems) or None


def _search_results(content: Any) -> str | None:
    if isinstance(content, list | tuple):
        return None
    if isinstance(content, Mapping):
        return _table(content)
    return f"is {_kind(content)}, not a list of results or a table object"


def _library(content: Any) -> str | None:
    if not isinstance(content, list | tuple):
        return f"is {_kind(content)}, not a list of entries (the view shows an empty library)"
    for index, entry in enumerate(content):
        if isinstance(entry, Mapping):
            if not isinstance(entry.get("title"), str):
                return f'entry [{index}] has no "title" string (the view shows it untitled)'
        elif not isinstance(entry, str):
            return f"entry [{index}] is {_kind(entry)}, not an object or a string"
    return None


def _notebook(content: Any) -> str | None:
    if not isinstance(content, Mapping):
        return f'is {_kind(content)}, not an object {{"cells": [...]}} (the view shows no cells)'
    unread = sorted(set(content) - _NOTEBOOK_KEYS)
    if unread:
        return f"the view does not show its keys {', '.join(map(repr, unread))}"
    cells = content.get("cells", [])
    if not isinstance(cells, list | tuple):
        return f'its "cells" is {_kind(cells)}, not a list (the view shows no cells)'
    for index, cell in enumerate(cells):
        if not isinstance(cell, Mapping) or not isinstance(cell.get("source"), str):
            return f'cell [{index}] is {_kind(cell)}, not an object with a "source" string'
    running = content.get("running", {})
    if not isinstance(running, Mapping):
        return f'its "running" is {_kind(running)}, not an object {{role: code}}'
    return None


def _checklist(content: Any) -> str | None:
    if not isinstance(content, list | tuple):
        return f"is {_kind(content)}, not a list of items (the view shows an empty list)"
    for index, item in enumerate(content):
        if not isinstance(item, Mapping):
            return (f'item [{index}] is {_kind(item)}, not an object with a "text" (agents\' '
                    f"prompts read each item's fields)")
        if not isinstance(item.get("text"), str):
            return f'item [{index}] has no "text" string (the view shows it without its text)'
    return None



def _kind(value: Any) -> str:
    """``value``'s JSON kind, with an article, for a message: "a string", "an object"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


#: The check of each render type whose view expects a shape (``text``, ``plan`` and unknown
#: types show any content).
_CHECKS: dict[str, Callable[[Any], str | None]] = {
    RenderType.EDITOR: _editor,
    RenderType.TABLE: _table,
    RenderType.SEARCH_RESULTS: _search_results,
    RenderType.LIBRARY: _library,
    RenderType.NOTEBOOK: _notebook,
    RenderType.CHECKLIST: _checklist,
}

#: The built-in render types and the content their views show.
CONTENT_SHAPES: dict[str, ContentShape] = {
    render_type: ContentShape(words, _CHECKS.get(render_type))
    for render_type, words in _WORDS.items()
}
