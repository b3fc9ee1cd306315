"""Checking an LM reviewer's quotes against the session log, and finding the event each is from.

A reviewer is asked to copy its evidence word for word, but LMs paraphrase and invent. A quote
counts as verified when, whitespace and case aside, it occurs in the log as the judges were
shown it (:func:`cogym_lab.eval.judging.judges.session_log`, actions unshortened) or in the final
outcome. Its ``seq`` is that of the first event whose own line holds it, so a viewer can put the
label at that event; a quote found only across two events' lines, or only in the outcome, is
verified without a ``seq``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from cogym_lab.core.text import clean_text
from cogym_lab.eval.judging.judges import session_log
from cogym_lab.records.trajectory import SessionRecord

#: Quotes shorter than this (once normalised) prove nothing: "ok" occurs in most logs.
MIN_QUOTE_CHARS = 4
#: Actions are quoted whole here, however long, so that a quote from a long edit can be found.
_FULL = 1_000_000


def normalise(text: str) -> str:
    """Lower case, runs of whitespace (U+2028 and NUL included) as one space, valid Unicode."""
    return re.sub(r"[\s\x00]+", " ", clean_text(text)).strip().lower()


@dataclass(frozen=True)
class Located:
    """Where a quote was found: ``verified`` when it occurs at all, ``seq`` its event."""

    verified: bool
    seq: int | None


class QuoteLocator:
    """Finds quotes in one session's log (each event's line, then the whole log and outcome)."""

    def __init__(self, record: SessionRecord) -> None:
        self.record = record

    @cached_property
    def _lines(self) -> list[tuple[int, str]]:
        lines = []
        for event in self.record.events:
            text = session_log(self.record, action_chars=_FULL, events=[event])
            if text:
                lines.append((event.seq, normalise(text)))
        return lines

    @cached_property
    def _whole(self) -> str:
        outcome = self.record.outcome
        return " ".join([*(line for _, line in self._lines),
                         normalise(outcome if isinstance(outcome, str) else str(outcome or ""))])

    def locate(self, quote: object) -> Located:
        """Where ``quote`` is in the log; anything that is not a usable string is unverified."""
        if not isinstance(quote, str):
            return Located(False, None)
        needle = normalise(quote.strip().strip('"“”\''))
        if len(needle) < MIN_QUOTE_CHARS:
            return Located(False, None)
        for seq, line in self._lines:
            if needle in line:
                return Located(True, seq)
        return Located(needle in self._whole, None)
