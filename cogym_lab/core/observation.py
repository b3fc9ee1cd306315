"""Observations: named components, public or private, each declaring how it is rendered."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict


class RenderType:
    """Well-known render types. Widgets pick a view from these; envs may add their own strings."""

    TEXT = "text"
    EDITOR = "editor"
    TABLE = "table"
    SEARCH_RESULTS = "search_results"
    LIBRARY = "library"
    NOTEBOOK = "notebook"
    PLAN = "plan"
    CHECKLIST = "checklist"


class Component(BaseModel):
    """One part of what a member sees: an editor, a search window, a checklist, ..."""

    model_config = ConfigDict(frozen=True)

    name: str
    render_type: str
    content: Any
    private: bool = False
    title: str = ""

    def to_text(self) -> str:
        """Plain text for prompts. Strings as they are, everything else as indented JSON."""
        body = self.content if isinstance(self.content, str) else json.dumps(
            self.content, indent=2, ensure_ascii=False
        )
        scope = "private to you" if self.private else "shared"
        return f"## {self.title or self.name} ({scope})\n{body}"


class Observation(BaseModel):
    """What one role sees of the workspace: the public components plus its own private ones."""

    model_config = ConfigDict(frozen=True)

    components: tuple[Component, ...] = ()

    def __getitem__(self, name: str) -> Component:
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(component.name == name for component in self.components)

    def to_text(self) -> str:
        return "\n\n".join(component.to_text() for component in self.components)
