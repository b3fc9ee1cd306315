"""Turn observations, chat and histories into prompt text, choosing the format by render type."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from cogym_lab.core import ChatMessage, Component, Observation, RenderType

Renderer = Callable[[Any], str]


def _checklist(items: Any) -> str:
    if not items:
        return "(empty)"
    return "\n".join(f"- [{'x' if i.get('done') else ' '}] #{i.get('id')} {i.get('text')}"
                     + (f" (added by {i['added_by']})" if i.get("added_by") else "")
                     for i in items)


def _search_results(results: Any) -> str:
    if not results:
        return "(no results yet)"
    if isinstance(results, list):
        return "\n".join(f"{n}. {r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)}"
                         for n, r in enumerate(results, 1))
    return str(results)


def _table(rows: Any) -> str:
    if isinstance(rows, dict) and "rows" in rows:  # a titled result: {title, columns, rows, note}
        body = _table(rows["rows"]) if rows["rows"] else ""
        return "\n".join(part for part in (rows.get("note", ""), body) if part) or "(no rows)"
    if not rows:
        return "(empty table)"
    if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
        columns = list(dict.fromkeys(k for r in rows for k in r))
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
        return "\n".join(lines)
    return str(rows)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content or "(empty)"
    return json.dumps(content, indent=1, ensure_ascii=False)


RENDERERS: dict[str, Renderer] = {
    RenderType.CHECKLIST: _checklist,
    RenderType.SEARCH_RESULTS: _search_results,
    RenderType.TABLE: _table,
    RenderType.EDITOR: _text,
    RenderType.TEXT: _text,
}


def render_component(component: Component, max_chars: int = 6000) -> str:
    body = RENDERERS.get(component.render_type, _text)(component.content)
    if len(body) > max_chars:  # keep prompts bounded; the head is the most useful part
        body = body[:max_chars] + f"\n... ({len(body) - max_chars} more characters)"
    scope = "only you see this" if component.private else "shared with the team"
    return f"## {component.title or component.name} ({scope})\n{body}"


def render_observation(observation: Observation) -> str:
    return "\n\n".join(render_component(c) for c in observation.components) or "(nothing)"


def render_chat(messages: Sequence[ChatMessage], me: str, window: int) -> str:
    if not messages:
        return "(no messages yet)"
    shown = list(messages)[-window:]
    skipped = len(messages) - len(shown)
    lines = [f"({skipped} earlier messages not shown)"] if skipped else []
    for m in shown:
        sender = "you" if m.sender == me else m.sender
        to = f" to {'you' if m.to == me else m.to}" if m.to else ""
        lines.append(f"[{sender}{to}] {m.text}")
    return "\n".join(lines)
