"""Asking one paper of the corpus a question (Cocoa's ask-this-paper tool).

:func:`answer_about_paper` gives the LM (purpose ``"ask_paper"``) the paper's text as the corpus
holds it (title, authors, year, venue, categories and abstract: the corpus has no full texts)
and the question, and returns the answer. :func:`clean_question` makes a member's question safe
to send: control characters go, line and paragraph separators become newlines, and a question
longer than :data:`QUESTION_LIMIT` is refused rather than cut (a cut question may ask something
else).

The prompts are ``prompts/ask_paper_system.md`` and ``prompts/ask_paper.md``.
"""

from __future__ import annotations

import re

from cogym_lab.core.actions import ActionError
from cogym_lab.envs.related_work.papers import Paper
from cogym_lab.lm import LM, LMError
from cogym_lab.prompts import render

__all__ = ["QUESTION_LIMIT", "AnswerError", "answer_about_paper", "clean_question", "paper_text"]

PACKAGE = "cogym_lab.envs.related_work"
QUESTION_LIMIT = 2000  # characters: a question, not a document
ANSWER_LIMIT = 4000  # characters of an answer kept in the view
_SEPARATORS = re.compile("[\u2028\u2029\r\x85]\n?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")


class AnswerError(LMError):
    """The LM's answer cannot be shown (it was empty)."""


def clean_question(question: str) -> str:
    """``question`` with control characters removed and line separators as newlines. Raises
    :class:`ActionError` when nothing is left or it is longer than :data:`QUESTION_LIMIT`."""
    if len(question) > 4 * QUESTION_LIMIT:  # refused before any regex walks a huge text
        raise ActionError(_too_long(len(question)))
    text = _CONTROL.sub("", _SEPARATORS.sub("\n", question)).strip()
    if not text:
        raise ActionError("ASK_PAPER needs a question about the paper.")
    if len(text) > QUESTION_LIMIT:
        raise ActionError(_too_long(len(text)))
    return text


def _too_long(length: int) -> str:
    return (f"A question about a paper is at most {QUESTION_LIMIT:,} characters; this one has "
            f"{length:,}. Ask something shorter.")


def paper_text(paper: Paper) -> str:
    """Everything the corpus holds about ``paper``, as text for the prompt."""
    lines = [f"Title: {paper.title or '(untitled)'}"]
    if paper.authors:
        lines.append(f"Authors: {', '.join(paper.authors)}")
    details = [str(paper.year) if paper.year is not None else "", paper.venue or "",
               ", ".join(paper.categories)]
    if any(details):
        lines.append(f"Published: {'; '.join(d for d in details if d)}")
    lines.append(f"Abstract: {paper.abstract or '(the corpus has no abstract for this paper)'}")
    return "\n".join(lines)


async def answer_about_paper(lm: LM, paper: Paper, question: str) -> str:
    """The LM's answer to ``question`` (already :func:`clean_question`-ed) from ``paper``'s text
    only. Raises :class:`AnswerError` for an empty answer, :class:`LMError` when the LM fails."""
    messages = [
        {"role": "system", "content": render(PACKAGE, "ask_paper_system")},
        {"role": "user", "content": render(PACKAGE, "ask_paper", paper=paper_text(paper),
                                           question=question)},
    ]
    completion = await lm.complete(messages, purpose="ask_paper")
    answer = (completion.text or "").strip()
    if not answer:
        raise AnswerError("the LM returned an empty answer about the paper")
    return answer if len(answer) <= ANSWER_LIMIT else answer[:ANSWER_LIMIT].rstrip() + " ..."
