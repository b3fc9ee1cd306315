"""Writing a Related Work section from the shared library, and reading its citations.

:func:`draft_from_library` asks an LM (purpose ``"draft"``) to write, or revise, the section in
the editor using only the library's papers, cited as ``[n]`` with the library's numbers.
:func:`citations_in` and :func:`unresolved_citations` read the numeric citations of a text:
``[1]``, ``[2, 3]``, ``[2; 3]``, ``[4-6]`` (also with an en or em dash) and mixtures such as
``[1, 4-6]``.

The prompts are the template files ``prompts/draft_system.md`` and ``prompts/draft.md`` (with
``draft_new.md``, ``draft_revise.md`` and ``draft_empty_library.md`` for the parts that depend on
the situation).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from cogym_lab.lm import LM, LMError
from cogym_lab.prompts import render

__all__ = ["ABSTRACT_LIMIT", "DraftError", "LibraryEntry", "citations_in", "draft_from_library",
           "format_library", "unresolved_citations"]

log = logging.getLogger(__name__)

PACKAGE = "cogym_lab.envs.related_work"
ABSTRACT_LIMIT = 1500  # characters of an abstract or snippet shown to the LM
_RANGE_LIMIT = 200  # a wider range is not read as citations
_MAX_NUMBER = 999  # a bracket with a larger number ([2024], [2019-2024]) holds years, not citations


class DraftError(LMError):
    """The LM's answer cannot be used as the section (it was empty)."""


@runtime_checkable
class LibraryEntry(Protocol):
    """A paper in the library, as :func:`draft_from_library` reads it. A plain dict with these
    keys does as well; ``snippet`` stands in for a missing ``abstract``."""

    number: int
    title: str
    authors: Any  # a string or a list of names
    year: Any
    abstract: str
    note: str


# --- citations -------------------------------------------------------------------------------

_DASH = r"[-‐‑‒–—]"
_ITEM = rf"\d+(?:\s*{_DASH}\s*\d+)?"
_CITATION = re.compile(rf"\[\s*({_ITEM}(?:\s*[,;]\s*{_ITEM})*)\s*\]")
_RANGE = re.compile(rf"(\d+)\s*{_DASH}\s*(\d+)")


def _numbers(group: str) -> list[int] | None:
    """The numbers of one bracket's content, or None when it is not a citation."""
    numbers: list[int] = []
    for item in re.split(r"\s*[,;]\s*", group.strip()):
        span = _RANGE.fullmatch(item)
        if span:
            low, high = int(span.group(1)), int(span.group(2))
            if low < 1 or high < low or high - low > _RANGE_LIMIT or high > _MAX_NUMBER:
                return None
            numbers.extend(range(low, high + 1))
        else:
            number = int(item)
            if not 1 <= number <= _MAX_NUMBER:
                return None
            numbers.append(number)
    return numbers


def citations_in(text: str) -> list[int]:
    """Every number cited in ``text`` (``[1]``, ``[2, 3]``, ``[4-6]``, ``[1, 4-6]``, ``[2; 3]``),
    each once, in order of first appearance. A bracket holding 0, a number above 999 (years such as
    ``[2024]`` or ``[2019-2024]``), a reversed range or a range wider than 200 numbers is not a
    citation."""
    seen: dict[int, None] = {}
    for match in _CITATION.finditer(text or ""):
        for number in _numbers(match.group(1)) or ():
            seen.setdefault(number, None)
    return list(seen)


def unresolved_citations(text: str, numbers: Iterable[int]) -> list[int]:
    """The numbers cited in ``text`` that are not in ``numbers`` (the library's), in order of
    first appearance."""
    known = set(numbers)
    return [n for n in citations_in(text) if n not in known]


# --- the library as the LM sees it -----------------------------------------------------------

def _field(entry: Any, name: str, default: Any = None) -> Any:
    if isinstance(entry, Mapping):
        return entry.get(name, default)
    return getattr(entry, name, default)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value if _text(v))
    return " ".join(str(value).split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _number(entry: Any, position: int) -> int:
    value = _field(entry, "number")
    if isinstance(value, bool) or not isinstance(value, (int, str)) \
            or not str(value).strip().isdigit() or int(value) < 1:
        raise ValueError(f"library entry {position} has no usable number (a positive integer): "
                         f"{value!r}")
    return int(value)


def format_library(library: Sequence[Any]) -> str:
    """The library entries as numbered text for a prompt, in the order given. Raises
    ValueError when an entry has no positive integer ``number`` or two entries share one."""
    blocks: list[str] = []
    used: set[int] = set()
    for position, entry in enumerate(library):
        number = _number(entry, position)
        if number in used:
            raise ValueError(f"two library entries share the number {number}")
        used.add(number)
        title = _text(_field(entry, "title")) or "(untitled)"
        authors = _text(_field(entry, "authors"))
        year = _text(_field(entry, "year"))
        byline = ", ".join(part for part in (authors, year) if part)
        lines = [f"[{number}] {title}" + (f" ({byline})" if byline else "")]
        abstract = _text(_field(entry, "abstract")) or _text(_field(entry, "snippet"))
        if abstract:
            lines.append(f"    Abstract: {_clip(abstract, ABSTRACT_LIMIT)}")
        note = _text(_field(entry, "note"))
        if note:
            lines.append(f"    Team note: {note}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# --- drafting --------------------------------------------------------------------------------

_FENCE = re.compile(r"\A```[\w-]*[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)


def _unwrap(text: str) -> str:
    """The reply without surrounding whitespace, and without a code fence around all of it."""
    text = text.strip()
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


async def draft_from_library(lm: LM, *, task_query: str, library: Sequence[Any],
                             current_text: str, instructions: str,
                             max_tokens: int | None = None) -> str:
    """Write (empty ``current_text``) or revise the Related Work section from ``library`` only.

    ``library`` holds :class:`LibraryEntry`-like objects or dicts with ``number``, ``title``,
    ``authors``, ``year``, ``abstract`` (or ``snippet``) and ``note``. The LM is asked to cite
    them as ``[n]`` with their numbers. Returns the new text of the editor (a code fence around
    the whole reply is removed). ``max_tokens`` overrides the LM's configured limit for this call.

    Raises :class:`DraftError` when the reply is empty, :class:`cogym_lab.lm.LMError` when the
    LM fails, ValueError when a library entry has no usable number."""
    listing = format_library(library) or render(PACKAGE, "draft_empty_library")
    current = (current_text or "").strip()
    mode = render(PACKAGE, "draft_revise" if current else "draft_new")
    messages = [
        {"role": "system", "content": render(PACKAGE, "draft_system")},
        {"role": "user", "content": render(
            PACKAGE, "draft", task_query=task_query.strip(), library=listing,
            current_text=current or "(empty)", mode=mode,
            instructions=(instructions or "").strip() or "(no further instructions)")},
    ]
    completion = await lm.complete(messages, purpose="draft", max_tokens=max_tokens)
    text = _unwrap(completion.text or "")
    if not text:
        raise DraftError("the LM returned an empty draft for the Related Work section; the "
                         "editor was left as it was")
    unknown = unresolved_citations(text, {_number(e, i) for i, e in enumerate(library)})
    if unknown:
        log.warning("the draft cites numbers that are not in the library: %s", unknown)
    return text
