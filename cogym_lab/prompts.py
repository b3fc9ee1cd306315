"""Prompt templates are data files next to the code that uses them (``prompts/*.md`` in the
package that owns them: an agent's, a simulated user's, a judge's, a task's tools').

They use ``$name`` placeholders (``string.Template``), so JSON examples need no escaping.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from string import Template


@cache
def _load(package: str, name: str) -> Template:
    return Template((files(package) / "prompts" / f"{name}.md").read_text(encoding="utf-8"))


def render(package: str, name: str, **values: object) -> str:
    """Fill template ``prompts/NAME.md`` of ``package``. A missing value is an error."""
    return _load(package, name).substitute({k: str(v) for k, v in values.items()}).strip()


__all__ = ["render"]
