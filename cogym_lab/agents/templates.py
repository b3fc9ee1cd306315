"""The agents' prompt templates (``cogym_lab/agents/prompts/*.md``)."""

from __future__ import annotations

from cogym_lab.prompts import render


def agent_prompt(name: str, **values: object) -> str:
    """Fill the agents' template ``prompts/NAME.md``."""
    return render("cogym_lab.agents", name, **values)
