"""Typed step outputs (Cocoa §4.2.3): what kind of thing each item of a plan step's output
is, and what a step should produce (its output format).

The paper's sidebar shows a step's output by its type: papers, authors and topics as cards,
entities (queries, questions, concepts) as pills, text in a text box. Here every output item
carries a ``kind`` (:data:`ITEM_KINDS`) that the panel draws a card for, and a step may carry an
``output_format`` (:data:`OUTPUT_FORMATS`) that says what it should produce, set by anyone
(``SET_STEP_FORMAT``) and given to the agent with the step.

An item's kind is the one it was given, else read from its fields, else the step's format's:
a paper has a title with authors, a year, a venue or an abstract; an author a name with an
affiliation or papers; a topic a ``topic`` field; a notebook cell its ``source``; an item with
a title or a text only (and perhaps an id) is an entity. Nothing here names a task: the fields
are the ones the tasks' search results already have. An item whose kind cannot be told (an old
log's, a table row with no format) has none, and the panel shows it as a generic card.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from cogym_lab.core.actions import ActionError

ItemKind = Literal["paper", "author", "topic", "entity", "cell", "record", "text"]
ITEM_KINDS: tuple[str, ...] = get_args(ItemKind)
OutputFormat = Literal["paper_list", "author_list", "topic_list", "entity_list", "cell_list",
                       "table", "text"]
OUTPUT_FORMATS: tuple[str, ...] = get_args(OutputFormat)

#: The kind of item each format lists (``text`` is a paragraph: the output's text, no items).
FORMAT_KINDS: dict[str, ItemKind] = {
    "paper_list": "paper", "author_list": "author", "topic_list": "topic",
    "entity_list": "entity", "cell_list": "cell", "table": "record"}

#: How the agent is told what a step should produce, by format.
FORMAT_WORDS: dict[str, str] = {
    "paper_list": 'a list of papers: items {"kind": "paper", "id", "title", "authors", "year"}',
    "author_list": 'a list of authors: items {"kind": "author", "name", "affiliation", '
                   '"papers"}',
    "topic_list": 'a list of topics (fields of study, not papers): items {"kind": "topic", '
                  '"topic", "description"}',
    "entity_list": 'a list of short phrases (queries, questions, concepts): items '
                   '{"kind": "entity", "text"}',
    "cell_list": 'notebook cells: items {"kind": "cell", "source", "output"}',
    "table": 'a table: items {"kind": "record", ...}, one per row, the same fields in each',
    "text": "a paragraph of text, in the step's text (no items needed)",
}

_TEXT_FIELDS = frozenset({"id", "title", "text", "label", "kind"})


class OutputItem(BaseModel):
    """One item of a step's output: its ``kind`` and its own fields (any JSON), as produced.

    ``kind`` is ``None`` for an item whose kind cannot be told, and in logs written before
    kinds existed: such an item is shown as a generic card."""

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: ItemKind | None = None

    def field(self, name: str) -> Any:
        """The value of one of the item's own fields (``None`` when it has none)."""
        return (self.model_extra or {}).get(name)

    def as_dict(self) -> dict[str, Any]:
        """The item as plain JSON: ``kind`` first when it has one, then its fields."""
        fields = dict(self.model_extra or {})
        return {"kind": self.kind, **fields} if self.kind is not None else fields


def infer_kind(fields: Mapping[str, Any], output_format: str | None = None) -> ItemKind | None:
    """The kind an item's fields show, else the one ``output_format`` lists (see the module)."""
    keys = {key for key, value in fields.items() if value not in (None, "", [], {})}
    if "source" in keys:
        return "cell"
    if "title" in keys and keys & {"authors", "year", "venue", "abstract"}:
        return "paper"
    if "name" in keys and keys & {"affiliation", "papers", "paper_count", "h_index"}:
        return "author"
    if "topic" in keys:
        return "topic"
    if output_format in FORMAT_KINDS:
        return FORMAT_KINDS[output_format]
    if keys & {"title", "text", "label"} and keys <= _TEXT_FIELDS:
        return "entity"
    return None


def output_items(raw: Any, output_format: str | None = None,
                 default_kind: ItemKind | None = None) -> tuple[OutputItem, ...]:
    """``raw`` (a list of objects, as a member sent it) as output items, each with its kind:
    the one it gave, else inferred, else ``default_kind``. Refuses anything else."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(item, Mapping) for item in raw):
        raise ActionError('A step\'s items are a list of objects, e.g. [{"kind": "paper", '
                          '"id": "...", "title": "..."}].')
    items = []
    for item in raw:
        fields = {str(key): value for key, value in item.items()}
        given = fields.pop("kind", None)
        if given in (None, ""):
            given = infer_kind(fields, output_format) or default_kind
        elif given not in ITEM_KINDS:
            raise ActionError(f"An item's kind is one of {', '.join(ITEM_KINDS)}, "
                              f"not {str(given)[:40]!r}.")
        try:
            items.append(OutputItem(kind=given, **fields))
        except (ValidationError, TypeError) as error:  # a field pydantic cannot hold
            raise ActionError(f"An output item could not be read: {error}") from None
    return tuple(items)


def output_format(value: Any) -> OutputFormat | None:
    """``value`` as a step's output format; empty clears it. Refuses an unknown format."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    name = value.strip().lower() if isinstance(value, str) else value
    if name not in OUTPUT_FORMATS:
        raise ActionError(f"A step's output format is one of {', '.join(OUTPUT_FORMATS)} "
                          f"(or empty for none), not {str(value)[:40]!r}.")
    return cast(OutputFormat, name)  # one of the literal's values, checked above


def format_words(value: str | None) -> str:
    """What a step of format ``value`` should produce, in words for the agent's prompt."""
    if value is None or value not in FORMAT_WORDS:
        return "(no format set: produce what fits the step)"
    return FORMAT_WORDS[value]


__all__ = ["FORMAT_KINDS", "FORMAT_WORDS", "ITEM_KINDS", "OUTPUT_FORMATS", "ItemKind",
           "OutputFormat", "OutputItem", "format_words", "infer_kind", "output_format",
           "output_items"]
