"""The computer-science papers of the arXiv metadata snapshot, as corpus records.

The snapshot (arXiv's OAI metadata, distributed as one JSON object a line; CC0) has ``id``,
``title``, ``abstract``, ``authors`` (one string) and ``authors_parsed`` (``[last, first,
suffix]`` lists), ``categories`` (space-separated codes), ``versions`` (``[{"version",
"created"}]``) and ``update_date``. A paper is kept when any of its categories is ``cs.*``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cogym_lab.envs.related_work.dumps import (
    READ_ERRORS,
    DumpCounts,
    DumpProgress,
    clean_text,
    open_dump,
    read_failure,
)

__all__ = ["arxiv_record", "read_arxiv"]

_YEAR = re.compile(r"\b(1[89]\d\d|2\d\d\d)\b")
_AUTHOR_SEPARATORS = re.compile(r",\s*|\s+and\s+")


def _year(entry: dict[str, Any]) -> int | None:
    """The year of the first version (its ``created`` date), else of ``update_date``."""
    versions = entry.get("versions")
    candidates = []
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        candidates.append(versions[0].get("created"))
    candidates.append(entry.get("update_date"))
    for value in candidates:
        match = _YEAR.search(str(value or ""))
        if match:
            return int(match.group(1))
    return None


def _authors(entry: dict[str, Any]) -> list[str]:
    """Names as "First Last Suffix", from ``authors_parsed`` when the dump has it."""
    parsed = entry.get("authors_parsed")
    if isinstance(parsed, list) and parsed:
        names = []
        for parts in parsed:
            if isinstance(parts, list) and parts:
                last, first, suffix = ([*map(clean_text, parts), "", ""])[:3]
                name = " ".join(p for p in (first, last, suffix) if p)
                if name:
                    names.append(name)
        if names:
            return names
    text = clean_text(entry.get("authors"))
    return [name for name in (n.strip() for n in _AUTHOR_SEPARATORS.split(text)) if name]


def arxiv_record(entry: dict[str, Any]) -> dict[str, Any] | str:
    """The corpus record of one snapshot entry, or why it is left out."""
    categories = clean_text(entry.get("categories")).split()
    if not any(code.startswith("cs.") for code in categories):
        return "not computer science"
    arxiv_id = clean_text(entry.get("id"))
    title = clean_text(entry.get("title"))
    if not arxiv_id or not title:
        return "without an id or a title"
    return {"id": f"arxiv:{arxiv_id}", "title": title,
            "abstract": clean_text(entry.get("abstract")), "authors": _authors(entry),
            "year": _year(entry), "categories": list(dict.fromkeys(categories)),
            "url": f"https://arxiv.org/abs/{arxiv_id}", "source": "arxiv"}


def read_arxiv(path: str | Path, counts: DumpCounts | None = None, *,
               progress: bool = False) -> Iterator[dict[str, Any]]:
    """The computer-science papers of the snapshot at ``path`` (plain or gzip), in its order,
    counted on ``counts``. Lines that are not a JSON object are left out and counted.
    :class:`~cogym_lab.envs.related_work.dumps.DumpError` when the file cannot be read."""
    with open_dump(path) as dump:
        counts = counts if counts is not None else DumpCounts("arXiv", dump.path.name)
        bar = DumpProgress(dump, counts, progress)
        try:
            for line in dump.stream:
                if not line.strip():
                    continue
                counts.read += 1
                bar.tick()
                if b'"cs.' not in line and b" cs." not in line:
                    counts.leave_out("not computer science")  # no need to parse it
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    counts.leave_out("not valid JSON")
                    continue
                record = arxiv_record(entry) if isinstance(entry, dict) else "not valid JSON"
                if isinstance(record, str):
                    counts.leave_out(record)
                    continue
                counts.kept += 1
                yield record
        except READ_ERRORS as error:
            raise read_failure(dump.path, error) from None
        finally:
            bar.close()
