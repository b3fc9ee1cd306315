"""The 100 related-work writing tasks of the Collaborative Gym release, read from
``<data dir>/related_work/test.json``.

Each task names a published paper (title, topic, domain, conference, link) and carries *hidden
requirements* that only the simulated user knows. The file codes them as ``[code, value]`` pairs;
:func:`requirement_sentence` turns each into a plain English sentence the user simulator can
state in its own words. The codes found in the release:

``PS``  a passage from the paper's own related-work section: content the section should cover.
``NS``  the number of subsections (``0``: one block of prose without subsections).
``NC``  the number of papers the original section cites.
``RP``  the title of a paper the section should cite.
``RH``  a subsection heading the section should contain.

A code not listed here is kept as a readable sentence ("Another requirement (code XY): ...")
rather than dropped.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.datasets import DataMissing, items_for
from cogym_lab.datasets import data_dir as resolve_data_dir

__all__ = ["REQUIREMENT_CODES", "TASKS_FILE", "RelatedWorkTask", "load_tasks",
           "parse_task", "related_work_dir", "requirement_sentence"]

TASKS_FILE = "test.json"

REQUIREMENT_CODES: dict[str, str] = {
    "PS": "content the section should cover (a passage of the original section)",
    "NS": "number of subsections",
    "NC": "number of cited papers",
    "RP": "a paper the section should cite",
    "RH": "a subsection heading the section should contain",
}

_cache: dict[Path, list[RelatedWorkTask]] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class RelatedWorkTask:
    """One task: write the Related Work section of the paper ``title``.

    ``index`` is the position in ``test.json`` (from 0). ``requirements`` are the hidden
    requirements as plain sentences, in file order; ``raw_requirements`` the same as
    ``(code, value)`` pairs exactly as the file gives them."""

    index: int
    title: str
    topic: str
    domain: str
    conference: str
    paper_link: str
    requirements: tuple[str, ...]
    raw_requirements: tuple[tuple[str, Any], ...]

    @property
    def query(self) -> str:
        """The request the agent sees: the paper's title and topic, nothing hidden."""
        return (f'Help me write the Related Work section for my paper "{self.title}" '
                f"on {self.topic}.")

    def hidden_information(self) -> str:
        """The hidden requirements as a bullet list, for the simulated user only."""
        return "\n".join(f"- {sentence}" for sentence in self.requirements)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "title": self.title, "topic": self.topic,
                "domain": self.domain, "conference": self.conference,
                "paper_link": self.paper_link, "query": self.query,
                "requirements": list(self.requirements),
                "raw_requirements": [list(pair) for pair in self.raw_requirements]}


# --- requirement codes -> sentences ----------------------------------------------------------

def _one_line(value: Any) -> str:
    """A value as one line of text: whitespace (newlines included) collapsed."""
    if isinstance(value, (list, tuple)):
        value = "; ".join(_one_line(v) for v in value)
    elif isinstance(value, dict):
        value = "; ".join(f"{k}: {_one_line(v)}" for k, v in value.items())
    return " ".join(str(value).split())


def _count(value: Any) -> int | None:
    """An integer count from an int, a whole float or a numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(\.0+)?\s*", value):
        return int(float(value))
    return None


def _quoted(value: Any) -> str:
    """A title or heading in double quotes, without a trailing full stop."""
    text = _one_line(value).strip().strip('"“”').strip()
    return f'"{text.rstrip(".").rstrip()}"'


def requirement_sentence(code: str, value: Any) -> str:
    """One hidden requirement in plain English (see the module docstring for the codes)."""
    key = str(code).strip().upper()
    if key == "PS":
        return f"It should cover: {_one_line(value)}"
    if key == "NS":
        count = _count(value)
        if count is None:
            return f"About the subsections: {_one_line(value)}"
        if count == 0:
            return ("The section should have no subsections: one continuous piece of prose "
                    "without subheadings.")
        return f"The section should have {count} subsection{'s' if count != 1 else ''}."
    if key == "NC":
        count = _count(value)
        if count is None:
            return f"About the number of citations: {_one_line(value)}"
        return f"It should cite about {count} paper{'s' if count != 1 else ''}."
    if key == "RP":
        return f"It should cite the paper {_quoted(value)}."
    if key == "RH":
        return f"It should include a subsection titled {_quoted(value)}."
    return f"Another requirement (code {key or '?'}): {_one_line(value)}"


def _pair(requirement: Any, task_index: int) -> tuple[str, Any]:
    """``[code, value]`` (the file's form), ``{"code"/"type": ..., "value": ...}`` or
    ``"CODE=value"`` as a ``(code, value)`` pair."""
    if isinstance(requirement, (list, tuple)) and requirement:
        code = str(requirement[0])
        rest = tuple(requirement[1:])
        return code, (rest[0] if len(rest) == 1 else rest)
    if isinstance(requirement, dict):
        code = requirement.get("code", requirement.get("type"))
        if code is not None:
            return str(code), requirement.get("value")
    if isinstance(requirement, str):
        match = re.fullmatch(r"\s*([A-Za-z]{1,4})\s*[=:]\s*(.*)", requirement, re.DOTALL)
        if match:
            return match.group(1), match.group(2).strip()
    raise ValueError(f"task {task_index}: cannot read the hidden requirement {requirement!r}")


def parse_task(index: int, record: dict[str, Any]) -> RelatedWorkTask:
    """One entry of ``test.json`` as a :class:`RelatedWorkTask`."""
    try:
        title, topic = record["title"], record["topic"]
    except KeyError as error:
        raise ValueError(f"task {index}: no {error.args[0]!r} field") from None
    pairs = tuple(_pair(r, index) for r in record.get("hidden_requirements") or ())
    return RelatedWorkTask(
        index=index,
        title=_one_line(title),
        topic=_one_line(topic),
        domain=_one_line(record.get("domain", "")),
        conference=_one_line(record.get("conference", "")),
        paper_link=str(record.get("paper_link", "")).strip(),
        requirements=tuple(requirement_sentence(code, value) for code, value in pairs),
        raw_requirements=pairs,
    )


# --- loading ---------------------------------------------------------------------------------

def related_work_dir(data_dir: str | Path | None = None) -> Path:
    """``<data dir>/related_work`` (see :func:`cogym_lab.datasets.data_dir`); need not exist."""
    return resolve_data_dir(data_dir) / "related_work"


def _missing(path: Path) -> DataMissing:
    item = next(i for i in items_for("related_work") if i.path.endswith(path.name))
    return DataMissing(f"The related_work data is incomplete: {path} is missing "
                       f"({item.how_to_get()}). Choose another data directory with --data-dir "
                       "or the COGYM_DATA environment variable.")


def load_tasks(data_dir: str | Path | None = None) -> list[RelatedWorkTask]:
    """All tasks, in file order. Cached per folder; the list returned is a copy. Only
    ``test.json`` is needed (not the paper corpus). Raises
    :class:`cogym_lab.datasets.DataMissing` when it is missing."""
    folder = related_work_dir(data_dir).resolve()
    with _lock:
        tasks = _cache.get(folder)
        if tasks is None:
            path = folder / TASKS_FILE
            if not path.is_file():
                raise _missing(path)
            records = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(records, list):
                raise ValueError(f"{path}: expected a JSON list of tasks, found "
                                 f"{type(records).__name__}")
            tasks = _cache[folder] = [parse_task(i, r) for i, r in enumerate(records)]
    return list(tasks)
