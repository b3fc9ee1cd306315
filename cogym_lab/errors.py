"""The one base of every exception cogym_lab defines, so a caller can catch all of them at once.

Each of the package's exceptions also keeps the builtin its callers catch it by (``ActionError``
is a ``ValueError``, ``LMError`` a ``RuntimeError``), so ``except ValueError`` still works.
A module of its own below ``core`` (scripts/import_graph.py), so that every part may import
it, and importing it loads nothing else of the package: the light modules stay light.
"""

from __future__ import annotations

__all__ = ["CogymError"]


class CogymError(Exception):
    """Anything cogym_lab raises on purpose: ``except CogymError`` catches every error the
    package defines, and none of Python's own (a bug in a task still shows as itself)."""
