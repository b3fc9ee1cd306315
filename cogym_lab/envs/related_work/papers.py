"""One paper of the Related Work corpus: :class:`Paper`, its citation label and its snippets.

Reading the corpus files is :mod:`cogym_lab.envs.related_work.corpus`; the id -> paper store on
disk is :mod:`cogym_lab.envs.related_work.store`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["Paper", "normalize_categories"]

# --- the record ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")

# Words never worth matching when picking a snippet.
_SNIPPET_STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most",
    "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our",
    "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "via", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "you", "your", "using", "based",
    "towards", "toward",
])

_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "ness", "ies", "ied", "ers", "ed", "er",
             "es", "s", "ly")
_PARTICLES = frozenset({"van", "von", "de", "der", "den", "del", "della", "di", "da", "du", "le",
                        "la", "dos", "das", "ter", "ten", "st.", "al", "el", "bin", "ibn"})
_NAME_SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"})


def _light_stem(word: str) -> str:
    """A crude suffix stripper, enough to match 'translation' with 'translating' in snippets."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=512)
def _query_pattern(query: str) -> re.Pattern[str] | None:
    """A regex matching the words of ``query`` loosely in a text, one group per query word.

    A query word matches words that start with its light stem when that stem has 4 or more
    characters ('translation' -> 'transl' matches 'translating'), else the word itself with an
    optional plural ending. Stopwords are ignored."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word in _SNIPPET_STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        stem = _light_stem(word)
        if stem not in terms:
            terms.append(stem)
    if not terms:
        return None
    parts = [f"({re.escape(t)}\\w*)" if len(t) >= 4 else f"({re.escape(t)}(?:s|es)?)"
             for t in terms]
    return re.compile(r"\b(?:" + "|".join(parts) + r")\b", re.IGNORECASE)


def _surname(name: str) -> str:
    parts = name.replace(",", " ").split()
    while len(parts) > 1 and parts[-1].lower() in _NAME_SUFFIXES:
        parts.pop()
    if not parts:
        return ""
    surname = [parts[-1]]
    index = len(parts) - 2
    while index > 0 and parts[index].lower() in _PARTICLES:
        surname.insert(0, parts[index])
        index -= 1
    return " ".join(surname)


_CATEGORY_CODE = re.compile(r"^[a-z]+(?:-[a-z]+)?(?:\.[A-Za-z-]+)?$")  # cs.CL, hep-th, q-bio.NC


def normalize_categories(value: Any) -> list[str]:
    """``categories`` as a list of non-empty strings, whatever form a record gives it in.

    A list (or tuple) keeps its items in order, stripped, without blanks or repeats. A string is
    one category, unless every whitespace-separated piece of it is an arXiv code: then it is
    those codes (``"cs.CL cs.LG"``, the arXiv metadata dumps' form). A descriptive name such as
    ``"Computational Geometry"`` or ``"Distributed, Parallel, and Cluster Computing"`` is never
    split. ``None`` is no category."""
    if value is None:
        return []
    if isinstance(value, str):
        pieces = value.split()
        if len(pieces) > 1 and all(_CATEGORY_CODE.match(p) for p in pieces):
            items: Iterable[Any] = pieces
        else:
            items = [value]
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        items = [value]
    seen: dict[str, None] = {}
    for item in items:
        text = " ".join(str(item).split())
        if text:
            seen.setdefault(text, None)
    return list(seen)


@dataclass(frozen=True)
class Paper:
    """One paper of the corpus."""

    id: str
    title: str
    abstract: str
    authors: tuple[str, ...]
    year: int | None
    categories: tuple[str, ...]
    url: str
    source: str
    venue: str | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Paper:
        year = record.get("year")
        try:
            year = int(year) if year not in (None, "") else None
        except (TypeError, ValueError):
            year = None
        return cls(
            id=str(record["id"]),
            title=" ".join(str(record.get("title") or "").split()),
            abstract=" ".join(str(record.get("abstract") or "").split()),
            authors=tuple(str(a) for a in record.get("authors") or ()),
            year=year,
            categories=tuple(normalize_categories(record.get("categories"))),
            url=str(record.get("url") or ""),
            source=str(record.get("source") or ""),
            venue=record.get("venue") or None,
        )

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "id": self.id, "title": self.title, "abstract": self.abstract,
            "authors": list(self.authors), "year": self.year,
            "categories": list(self.categories), "url": self.url, "source": self.source,
        }
        if self.venue is not None:
            record["venue"] = self.venue
        return record

    def cite_label(self) -> str:
        """``"Vaswani et al., 2017"``, ``"Smith and Jones, 2020"``, ``"Smith, 2020"``."""
        names = [s for s in (_surname(a) for a in self.authors) if s]
        if not names:
            who = "Anonymous"
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who}, {self.year if self.year is not None else 'n.d.'}"

    def short_authors(self, count: int = 3) -> str:
        """The first ``count`` authors, then ``et al.``."""
        if not self.authors:
            return ""
        shown = ", ".join(self.authors[:count])
        return shown + (" et al." if len(self.authors) > count else "")

    def snippet(self, query: str | None = None, length: int = 240) -> str:
        """About ``length`` characters of the abstract, around the query's words when it has them.

        The window is chosen to hold as many different query words as possible (matched loosely:
        case-insensitive, common suffixes ignored); without a match it is the abstract's start.
        Cut ends are marked with ``…``."""
        text = self.abstract
        if len(text) <= length:
            return text
        pattern = _query_pattern(" ".join(query.split())) if query else None
        hits: list[tuple[int, int, int]] = []  # (start, end, which query word)
        words = 0  # how many query words there are
        if pattern is not None:
            hits = [(m.start(), m.end(), m.lastindex or 0) for m in pattern.finditer(text)]
            words = pattern.groups
        start = 0
        if hits:
            lead = length // 5
            best = (-1, 0)
            for anchor, _end, _term in hits:
                begin = max(0, anchor - lead)
                covered = {t for s, e, t in hits if s >= begin and e <= begin + length}
                if len(covered) > best[0]:
                    best = (len(covered), begin)
                    if best[0] == words:  # every word in the window: none better
                        break
            start = best[1]
        start = min(start, max(0, len(text) - length))
        if start > 0:  # begin on a word boundary
            space = text.find(" ", start)
            if space != -1 and space - start < 30:
                start = space + 1
        end = start + length
        if end < len(text):
            space = text.rfind(" ", start, end)
            if space > start + length // 2:
                end = space
        piece = text[start:end].strip()
        return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")
