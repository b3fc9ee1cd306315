"""Plans made earlier, as examples for the plan-aware agent's proposals (Cocoa §4.4.3: the
agent learns from the plans its users made and edited before).

The earlier plans are read from the results folder the session writes into: the other
sessions beside this one (a batch's folder, a notebook's results directory), newest first, as
each plan stood when its session ended, so the steps the person edited, added or reassigned are
what the agent sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cogym_lab.core.plan_env import PLAN_COMPONENT


def earlier_plans(member_folder: str | Path | None, limit: int = 3) -> list[dict[str, Any]]:
    """Up to ``limit`` plans of the sessions beside the one whose member writes into
    ``member_folder`` (``<results>/<session>/<role>``): ``{"request", "title", "steps"}``."""
    if member_folder is None or limit <= 0:
        return []
    session_folder = Path(member_folder).parent
    found: list[tuple[float, dict[str, Any]]] = []
    for summary in session_folder.parent.glob("*/session.json"):
        if summary.parent == session_folder:
            continue
        plan = _final_plan(summary)
        if plan is not None:
            found.append((summary.stat().st_mtime, plan))
    found.sort(key=lambda pair: pair[0], reverse=True)
    return [plan for _, plan in found[:limit]]


def _final_plan(summary: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(summary.read_text(encoding="utf-8")).get("final_state") or {}
    except (OSError, ValueError):  # a session still writing, or a damaged file: no example
        return None
    for view in (state.get("views") or {}).values():
        for component in view.get("components", ()):
            content = component.get("content")
            if component.get("name") == PLAN_COMPONENT and isinstance(content, dict) \
                    and isinstance(content.get("plan"), dict):
                return {"request": content.get("request", ""),
                        "title": content["plan"].get("title", ""),
                        "steps": [{"description": s.get("description"),
                                   "assignee": s.get("assignee")}
                                  for s in content["plan"].get("steps", ())]}
    return None


__all__ = ["earlier_plans"]
