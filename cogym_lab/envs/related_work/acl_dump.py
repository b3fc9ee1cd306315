"""The papers of the ACL Anthology's BibTeX export (with abstracts), as corpus records.

The export (``anthology+abstracts.bib.gz``; CC BY 4.0) is parsed with ``bibtexparser``, a few
hundred entries at a time so that the whole file is never held as one library. An entry is kept
when it has a title and a year from :data:`FIRST_YEAR` on; the proceedings volumes themselves
(``@proceedings``) are not papers and are left out. LaTeX in the text (accents, braces,
``--``, quotes) is decoded to plain Unicode; math between ``$`` is kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bibtexparser
from bibtexparser.library import Library
from bibtexparser.middlewares import LatexDecodingMiddleware, SeparateCoAuthors, SplitNameParts
from bibtexparser.middlewares.names import NameParts
from bibtexparser.model import Entry, ParsingFailedBlock

from cogym_lab.envs.related_work.dumps import (
    READ_ERRORS,
    DumpCounts,
    DumpProgress,
    OpenDump,
    clean_text,
    open_dump,
    read_failure,
)

__all__ = ["FIRST_YEAR", "acl_record", "read_acl"]

#: The corpus holds Anthology papers from this year on.
FIRST_YEAR = 2016

_FIELDS = ("title", "author", "booktitle", "journal", "year", "url", "abstract")
_NOT_PAPERS = frozenset({"proceedings", "book", "comment", "preamble", "string"})
_ENTRIES_PER_CHUNK = 500
# Anthology ids in its addresses: https://aclanthology.org/2023.acl-long.1/ or .../P16-1001.pdf
_ANTHOLOGY_URL = re.compile(
    r"(?:aclanthology\.org|aclweb\.org/anthology)/(?:[^/\s]*/)*?([A-Za-z0-9][\w.\-]*?)(?:\.pdf)?/?$")
# Only text with one of these can hold LaTeX; the decoder is slow, so plain text skips it.
_LATEX_MARK = re.compile(r"[\\{}~$]|--|``|''")


def _segments(text: str) -> list[str]:
    """``text`` cut at the spaces outside braces and outside ``$...$``: pieces that decode on
    their own (``{\\"u}ber``, ``\\emph{two words}``, ``$a + b$``)."""
    pieces: list[str] = []
    current: list[str] = []
    depth, in_math = 0, False
    for token in text.split():
        current.append(token)
        depth += token.count("{") - token.count("}")
        if (token.count("$") - token.count("\\$")) % 2:
            in_math = not in_math
        if depth <= 0 and not in_math:
            pieces.append(" ".join(current))
            current, depth = [], 0
    if current:
        pieces.append(" ".join(current))
    return pieces


class _DecodeWhereNeeded(LatexDecodingMiddleware):
    """bibtexparser's LaTeX decoding, applied only to the pieces of a string that can hold LaTeX:
    the decoder takes milliseconds per abstract, and most words have nothing to decode."""

    def _transform_python_value_string(self, python_string: str) -> tuple[str, str]:
        if _LATEX_MARK.search(python_string) is None:
            return python_string, ""
        decode = super()._transform_python_value_string
        return " ".join(decode(piece)[0] if _LATEX_MARK.search(piece) else piece
                        for piece in _segments(python_string)), ""


def _chunks(dump: OpenDump) -> Iterator[str]:
    """The file's text, cut between entries every :data:`_ENTRIES_PER_CHUNK` entries. A cut
    falls only before a line starting with ``@`` at brace depth 0 (not inside a value)."""
    lines: list[str] = []
    entries = depth = 0
    for raw in dump.stream:
        line = raw.decode("utf-8", errors="replace")
        if line.startswith("@") and depth <= 0:
            if entries >= _ENTRIES_PER_CHUNK:
                yield "".join(lines)
                lines, entries = [], 0
            entries += 1
            depth = 0
        lines.append(line)
        depth += line.count("{") - line.count("}")
    if lines:
        yield "".join(lines)


def _names(value: Any) -> list[str]:
    """Author names as "First von Last, Jr" from bibtexparser's name parts."""
    names = []
    for parts in value if isinstance(value, list) else []:
        if isinstance(parts, NameParts):
            name = " ".join([*parts.first, *parts.von, *parts.last])
            if parts.jr:
                name += ", " + " ".join(parts.jr)
        else:
            name = str(parts)
        name = clean_text(name)
        if name:
            names.append(name)
    return names


def _anthology_id(entry: Entry, url: str) -> str:
    match = _ANTHOLOGY_URL.search(url)
    return match.group(1) if match else clean_text(entry.key)


def _year(value: str) -> int | None:
    match = re.search(r"\d{4}", value)
    return int(match.group(0)) if match else None


def _why_left_out(entry: Entry) -> str | None:
    """Why an entry (before decoding) is not a paper of the corpus, or None to keep it."""
    if entry.entry_type.lower() in _NOT_PAPERS:
        return "proceedings volumes"
    if not clean_text(_value(entry, "title")):
        return "without a title"
    year = _year(_value(entry, "year"))
    if year is None or year < FIRST_YEAR:
        return f"before {FIRST_YEAR} or without a year"
    return None


def _value(entry: Entry, key: str) -> str:
    found = entry.fields_dict.get(key)
    return found.value if found is not None and isinstance(found.value, str) else ""


def acl_record(entry: Entry) -> dict[str, Any]:
    """The corpus record of one decoded Anthology entry (that :func:`_why_left_out` keeps)."""
    url = clean_text(_value(entry, "url"))
    venue = clean_text(_value(entry, "booktitle") or _value(entry, "journal"))
    found = entry.fields_dict.get("author")
    record: dict[str, Any] = {
        "id": f"acl:{_anthology_id(entry, url)}", "title": clean_text(_value(entry, "title")),
        "abstract": clean_text(_value(entry, "abstract")),
        "authors": _names(found.value if found is not None else None),
        "year": _year(_value(entry, "year")), "categories": ["cs.CL"]}
    if venue:
        record["venue"] = venue
    return {**record, "url": url, "source": "acl"}


def _decoded(entries: list[Entry], decode: list[Any]) -> list[Entry]:
    """``entries`` with only the fields the corpus uses, LaTeX decoded and authors split."""
    library = Library()
    for entry in entries:
        for key in [f.key for f in entry.fields if f.key.lower() not in _FIELDS]:
            entry.pop(key)
        library.add(entry)
    for middleware in decode:
        library = middleware.transform(library)
    decoded = []
    for block in library.blocks:
        # A field the decoder failed on keeps its text as written; the entry is still good.
        inner = block.ignore_error_block if isinstance(block, ParsingFailedBlock) else block
        if isinstance(inner, Entry):
            decoded.append(inner)
    return decoded


def read_acl(path: str | Path, counts: DumpCounts | None = None, *,
             progress: bool = False) -> Iterator[dict[str, Any]]:
    """The papers of the Anthology export at ``path`` (plain or gzip), in its order, counted on
    ``counts``. :class:`~cogym_lab.envs.related_work.dumps.DumpError` when the file cannot be
    read."""
    decode = [_DecodeWhereNeeded(), SeparateCoAuthors(), SplitNameParts()]
    with open_dump(path) as dump:
        counts = counts if counts is not None else DumpCounts("ACL Anthology", dump.path.name)
        bar = DumpProgress(dump, counts, progress, every=1)
        try:
            for text in _chunks(dump):
                library = bibtexparser.parse_string(text)
                counts.read += len(library.entries)
                for _failed in library.failed_blocks:
                    counts.leave_out("unparsable BibTeX blocks")
                kept = []
                for entry in library.entries:
                    reason = _why_left_out(entry)
                    if reason is None:
                        kept.append(entry)
                    else:
                        counts.leave_out(reason)
                for entry in _decoded(kept, decode):
                    counts.kept += 1
                    yield acl_record(entry)
                bar.tick()
        except READ_ERRORS as error:
            raise read_failure(dump.path, error) from None
        finally:
            bar.close()
