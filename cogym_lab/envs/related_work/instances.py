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

**Papers the offline search cannot find.** Many ``RP`` papers are not in the offline corpus
(105 of the 237 are, by normalised title). :meth:`RelatedWorkTask.hidden_information` takes the
titles the search in use cannot find and appends :data:`UNFINDABLE_NOTE` to their sentences, so
the simulated user knows not to insist on them; the environment decides which titles those are
(none when the live arXiv search is used).

**Hidden strings** (:meth:`RelatedWorkTask.hidden_strings`, the texts a leak check looks for in
what agents are sent): the free-text requirements of at least :data:`HIDDEN_STRING_MIN_WORDS`
words (in practice the ``PS`` passages), each whole and each of its sentences that is that long
on its own. Paper titles (``RP``) are never hidden strings, since an agent finds titles by
searching; numbers (``NS``, ``NC``) and short headings (``RH``) are too short to be told apart
from honest text.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.datasets import data_dir as resolve_data_dir
from cogym_lab.envs.related_work.data_files import data_file, task_dir
from cogym_lab.envs.related_work.titles import normalize_title

__all__ = ["HIDDEN_STRING_MIN_WORDS", "REQUIREMENT_CODES", "TASKS_FILE", "UNFINDABLE_NOTE",
           "RelatedWorkTask", "load_tasks", "parse_task", "related_work_dir",
           "requirement_sentence"]

TASKS_FILE = "test.json"

#: Appended to the sentence of a paper to cite that the offline search cannot find.
UNFINDABLE_NOTE = ("(This paper is not findable in the offline paper search, so the assistant "
                   "cannot add it to the library: do not insist on it.)")

#: The fewest words a hidden requirement's text (or one of its sentences) needs to count as a
#: hidden string: shorter texts could be written by an agent that never saw them.
HIDDEN_STRING_MIN_WORDS = 12

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

    @property
    def cited_titles(self) -> tuple[str, ...]:
        """The titles of the papers the section should cite (the ``RP`` requirements)."""
        return tuple(_title_text(value) for code, value in self.raw_requirements
                     if _code(code) == "RP")

    def hidden_information(self, unfindable: Collection[str] = ()) -> str:
        """The hidden requirements as a bullet list, for the simulated user only.

        A paper to cite whose title is in ``unfindable`` (compared by normalised title) gets
        :data:`UNFINDABLE_NOTE` after its sentence."""
        missing = {normalize_title(title) for title in unfindable}
        lines = []
        for sentence, (code, value) in zip(self.requirements, self.raw_requirements,
                                           strict=True):
            unfindable_paper = (bool(missing) and _code(code) == "RP"
                                and normalize_title(_title_text(value)) in missing)
            lines.append(f"- {sentence} {UNFINDABLE_NOTE}" if unfindable_paper else f"- {sentence}")
        return "\n".join(lines)

    def hidden_strings(self) -> list[str]:
        """Distinctive hidden texts a leak check looks for (see the module doc for the rule)."""
        found: dict[str, None] = {}
        for code, value in self.raw_requirements:
            if _code(code) == "RP":
                continue  # titles: an agent finds them by searching
            text = _one_line(value)
            if _word_count(text) < HIDDEN_STRING_MIN_WORDS:
                continue
            found.setdefault(text, None)
            for sentence in _SENTENCE_END.split(text):
                if _word_count(sentence) >= HIDDEN_STRING_MIN_WORDS:
                    found.setdefault(sentence.strip(), None)
        return list(found)

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


def _title_text(value: Any) -> str:
    """A title or heading as one line, without surrounding quotes or a trailing full stop."""
    text = _one_line(value).strip().strip('"“”').strip()
    return text.rstrip(".").rstrip()


def _quoted(value: Any) -> str:
    """A title or heading in double quotes, without a trailing full stop."""
    return f'"{_title_text(value)}"'


def _code(code: Any) -> str:
    return str(code).strip().upper()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _word_count(text: str) -> int:
    return len(text.split())


def requirement_sentence(code: str, value: Any) -> str:
    """One hidden requirement in plain English (see the module docstring for the codes)."""
    key = _code(code)
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
        named = requirement.get("code", requirement.get("type"))
        if named is not None:
            return str(named), requirement.get("value")
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
    """``<data dir>/related_work`` (see :func:`cogym_lab.datasets.data_dir`); need not exist.
    The folder the task actually reads is :func:`~.data_files.task_dir` (it may be the sample)."""
    return resolve_data_dir(data_dir) / "related_work"


def load_tasks(data_dir: str | Path | None = None) -> list[RelatedWorkTask]:
    """All tasks, in file order, from :func:`~.data_files.task_dir` (the bundled sample's
    first tasks when nobody chose a data directory and the default one lacks the data). Cached
    per folder; the list returned is a copy. Only ``test.json`` is needed (not the paper
    corpus). Raises :class:`cogym_lab.datasets.DataMissing` when it is missing."""
    folder = task_dir(data_dir, (data_file(TASKS_FILE),)).resolve()
    with _lock:
        tasks = _cache.get(folder)
        if tasks is None:
            path = folder / TASKS_FILE
            records = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(records, list):
                raise ValueError(f"{path}: expected a JSON list of tasks, found "
                                 f"{type(records).__name__}")
            tasks = _cache[folder] = [parse_task(i, r) for i, r in enumerate(records)]
    return list(tasks)
