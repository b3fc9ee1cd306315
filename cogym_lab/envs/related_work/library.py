"""The shared paper library: papers with stable citation numbers and notes anyone can edit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cogym_lab.envs.related_work.papers import Paper


@dataclass
class LibraryEntry:
    number: int  # the [n] the text cites; never reused, so citations stay right after a drop
    paper: Paper
    added_by: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        p = self.paper
        return {"number": self.number, "id": p.id, "title": p.title, "authors": list(p.authors),
                "year": p.year, "url": p.url, "note": self.note, "added_by": self.added_by}

    def for_drafting(self) -> dict[str, Any]:
        return {"number": self.number, "title": self.paper.title,
                "authors": ", ".join(self.paper.authors[:3]) +
                           (" et al." if len(self.paper.authors) > 3 else ""),
                "year": self.paper.year, "abstract": self.paper.abstract, "note": self.note}


@dataclass
class Library:
    entries: dict[str, LibraryEntry] = field(default_factory=dict)  # by paper id, in add order
    next_number: int = 1

    def add(self, paper: Paper, role: str) -> LibraryEntry | None:
        """Add ``paper``; ``None`` if it is already there (it keeps its number)."""
        if paper.id in self.entries:
            return None
        entry = LibraryEntry(number=self.next_number, paper=paper, added_by=role)
        self.entries[paper.id] = entry
        self.next_number += 1
        return entry

    def drop(self, paper_id: str) -> LibraryEntry | None:
        return self.entries.pop(paper_id, None)

    def numbers(self) -> set[int]:
        return {entry.number for entry in self.entries.values()}

    def to_content(self) -> list[dict[str, Any]]:
        return [entry.to_dict() for entry in self.entries.values()]
