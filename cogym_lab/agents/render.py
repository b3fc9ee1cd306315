"""Turn observations, chat and histories into prompt text, choosing the format by render type."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

from cogym_lab.core import Component, Observation, RenderType
from cogym_lab.core.messages import ChatMessage
from cogym_lab.core.plan_env import PLAN_COMPONENT

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


NOTEBOOK_WINDOW = 4  # recent cells shown whole; older ones are summarised in a line each


def _notebook(content: Any) -> str:
    cells = content.get("cells", []) if isinstance(content, dict) else list(content or [])
    lines = [f"(cell {c['index']}, {c['ran_by']}: {_first_line(c['source'])} -> {c['status']})"
             for c in cells[:-NOTEBOOK_WINDOW]]
    for cell in cells[-NOTEBOOK_WINDOW:]:
        lines.append(f"In [{cell.get('execution_count') or ' '}] ({cell['ran_by']}):\n"
                     f"{cell['source']}")
        output = _cell_text(cell)
        if output:
            lines.append("Out:\n" + (output if len(output) <= 1500 else
                                      output[:1500] + "\n... (output cut for the prompt)"))
    running = content.get("running", {}) if isinstance(content, dict) else {}
    lines += [f"({role} is running: {_first_line(code)})" for role, code in running.items()]
    return "\n".join(lines) or "(no cells yet)"


def _first_line(code: str) -> str:
    first = code.strip().splitlines()[0] if code.strip() else ""
    return first if len(first) <= 80 else first[:80] + "…"


def _cell_text(cell: dict[str, Any]) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("kind") == "error":
            parts.append(output.get("traceback") or output.get("text", ""))
        elif output.get("text"):
            parts.append(output["text"])
        elif output.get("png"):
            parts.append("[image]")
    if cell.get("error") and not any(o.get("kind") == "error" for o in cell.get("outputs", [])):
        parts.append(cell["error"])
    return "\n".join(part.rstrip() for part in parts if part)


def _plan(content: Any) -> str:
    """An interactive plan (docs/plans.md) as lines a member can act on: the proposals to pick
    from, then each step with its id, status, side and output."""
    if not isinstance(content, dict) or "proposals" not in content:
        return _text(content)
    lines = []
    for number, proposal in enumerate(content.get("proposals") or []):
        lines.append(f"Proposed plan {number}: {proposal.get('title') or '(untitled)'}")
        lines += [f"  - {step['description']} ({step['assignee']})"
                  for step in proposal.get("steps", [])]
    plan = content.get("plan")
    if plan is None:
        return "\n".join(lines) or "(no plan yet)"
    mode = "running on, step after step" if content.get("continuous") else "run step by step"
    lines.append(f"The plan: {plan.get('title') or '(untitled)'} ({mode})")
    for number, step in enumerate(plan.get("steps", []), 1):
        status = step["status"].replace("_", " ")
        shape = f", makes {step['output_format']}" if step.get("output_format") else ""
        lines.append(f"{number}. [{step['id']}, {step['assignee']}, {status}{shape}] "
                     f"{step['description']}")
        output = step.get("output")
        if output:
            items = "; ".join((f"{i['kind']}: " if i.get("kind") else "")
                              + str(i.get("title") or i.get("name") or i.get("text")
                                    or i.get("id") or i) for i in output["items"])
            lines.append(f"   output: {output['text']}" + (f" [items: {items}]" if items else "")
                         + (" (edited by the person)" if output.get("edited") else ""))
    if content.get("awaiting_output"):
        lines.append("Every step is done: the plan output is still to be written.")
    if content.get("output"):
        lines.append(f"Plan output: {content['output']}")
    return "\n".join(lines)


RENDERERS: dict[str, Renderer] = {
    RenderType.PLAN: _plan,
    RenderType.NOTEBOOK: _notebook,
    RenderType.CHECKLIST: _checklist,
    RenderType.SEARCH_RESULTS: _search_results,
    RenderType.TABLE: _table,
    RenderType.EDITOR: _text,
    RenderType.TEXT: _text,
}


def _plan_heading(component: Component) -> tuple[str, str]:
    """What a plan's heading adds: the name its actions take as ``plan`` (a session may hold
    several plans), and, for a plan after the first, what it is for (the first answers the
    task's request, which the prompt already gives)."""
    content = component.content if isinstance(component.content, dict) else {}
    request = content.get("request") if component.name != PLAN_COMPONENT else None
    purpose = f"For: {str(request)[:300]}\n" if request else ""
    return f'plan="{component.name}", ', purpose


def render_component(component: Component, max_chars: int = 6000) -> str:
    body = RENDERERS.get(component.render_type, _text)(component.content)
    if len(body) > max_chars:  # keep prompts bounded; the head is the most useful part
        body = body[:max_chars] + f"\n... ({len(body) - max_chars} more characters)"
    scope = "only you see this" if component.private else "shared with the team"
    named, purpose = _plan_heading(component) if component.render_type == RenderType.PLAN \
        else ("", "")
    return f"## {component.title or component.name} ({named}{scope})\n{purpose}{body}"


#: How much of a component a member asked about with a selection the prompt shows: the whole
#: document is the selection's context (Cocoa §4.1.1), within a bound that keeps prompts sane.
WHOLE_CHARS = 60_000
#: How much of a selected text a chat line quotes (the document holds all of it).
QUOTE_CHARS = 2000


def render_observation(observation: Observation, whole: Collection[str] = ()) -> str:
    """The view as prompt text; the components named in ``whole`` (those a teammate selected
    text in, :func:`selected_components`) are shown up to :data:`WHOLE_CHARS`."""
    return "\n\n".join(render_component(c, WHOLE_CHARS) if c.name in whole
                       else render_component(c) for c in observation.components) or "(nothing)"


def selected_components(messages: Sequence[ChatMessage], window: int) -> set[str]:
    """The components the chat's last ``window`` messages selected text in."""
    return {m.selection.component for m in list(messages)[-window:] if m.selection is not None}


def _quoted(text: str) -> str:
    shown = text if len(text) <= QUOTE_CHARS else \
        text[:QUOTE_CHARS] + f"… ({len(text) - QUOTE_CHARS} more characters)"
    return json.dumps(shown, ensure_ascii=False)


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
        if m.selection is not None:
            who = "you" if m.sender == me else m.sender
            lines.append(f"  ({who} selected this text in {m.selection.component}, characters "
                         f"{m.selection.start} to {m.selection.end}: "
                         f"{_quoted(m.selection.text)}; the whole {m.selection.component} is in "
                         "your view above, and the message is about the selection in it)")
    return "\n".join(lines)
