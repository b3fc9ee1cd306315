"""Words in place of a widget that cannot be shown.

A notebook saves a widget's output as a MIME bundle: the widget view (which needs the widget's
live model in the kernel) and, beside it, ``text/plain``, which is what shows wherever the view
cannot: the notebook reopened after its kernel restarted, an untrusted notebook, a notebook read
as a file (nbconvert, a repository's preview). anywidget puts ``repr(self)`` there, the Python
default ``<... object at 0x...>``. :class:`TextFallback` puts words there instead, and the same
words as ``text/html``, saying what the widget showed and the code that shows it again.
"""

from __future__ import annotations

import html
from typing import Any

#: The MIME type of a widget's view in an output (ipywidgets' and anywidget's).
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


class Fallback:
    """What a widget says where it cannot be shown: a title line, then lines of words, each
    with the code (if any) that goes with it."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.lines: list[tuple[str, str]] = []

    def add(self, words: str, code: str = "") -> Fallback:
        """A line: ``words``, then ``code`` to run (shown as code in HTML)."""
        self.lines.append((words, code))
        return self

    def text(self) -> str:
        rows = [self.title]
        for words, code in self.lines:
            rows.append(f"{words} {code}".rstrip() if code else words)
        return "\n".join(rows)

    def html(self) -> str:
        rows = "".join(
            f"<li>{html.escape(words)}"
            + (f" <code>{html.escape(code)}</code>" if code else "") + "</li>"
            for words, code in self.lines)
        return (f'<div class="cogym-fallback"><p><b>{html.escape(self.title)}</b></p>'
                f"<ul>{rows}</ul></div>")


class TextFallback:
    """Mixin for cogym_lab's anywidgets (put it first among the bases): their ``text/plain``
    and ``text/html`` say what the widget is, in words, and the widget view stays as it was.

    Subclasses define :meth:`fallback`.
    """

    def fallback(self) -> Fallback:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.fallback().title

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        words = self.fallback()
        return {**data, "text/plain": words.text(), "text/html": words.html()}, metadata


__all__ = ["WIDGET_VIEW_MIME", "Fallback", "TextFallback"]
