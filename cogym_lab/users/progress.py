"""The simulated user's own per-round progress ratings (effort scaling, paper 002 §4): the file
format, and reading a rating out of an LM's reply.

A simulated user whose persona has ``rate_progress = true`` rates each round as it hands the work
back to the agent, and the last round when the session ends (see
:class:`~cogym_lab.users.simulated.SimulatedUser`). Each rating is one line of
``<session>/<user role>/progress.jsonl``::

    {"round": 2, "rating": 4, "seq": 17}

``round`` is the user's own count of rounds (from 1), ``rating`` the 1-5 rating, and ``seq`` the
last event the user had seen when it rated: the evaluation places each rating in the round that
holds that event (:mod:`cogym_lab.eval.metrics.progress`), so a count that drifted from the log's
rounds does no harm.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cogym_lab.agents.base import extract_field
from cogym_lab.agents.choice import read_choice

log = logging.getLogger(__name__)

PROGRESS_FILE = "progress.jsonl"
RATINGS = range(1, 6)
#: The LM call purposes of the ratings: the effort metrics leave these tokens out of the user's
#: effort, since a real person does not write them.
PURPOSE = "progress_rating"


class RoundRating(BaseModel):
    """One line of ``progress.jsonl``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    round: Annotated[int, Field(ge=1)]
    rating: Annotated[int, Field(ge=1, le=5)]
    seq: Annotated[int, Field(ge=0)]


def read_rating(reply: str) -> int:
    """The 1-5 rating on the reply's ``Rating:`` line. Raises
    :class:`~cogym_lab.agents.choice.UnusableChoice` (a ``ValueError``) when there is none, or
    it is not one whole number from 1 to 5 ("4/5", "four", "3.5", "7" are all refused)."""
    return read_choice(extract_field(reply, "Rating"), RATINGS, field="Rating")


def append_rating(folder: Path, rating: RoundRating) -> None:
    """Add one rating to ``folder``'s ``progress.jsonl``."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / PROGRESS_FILE).open("a", encoding="utf-8") as file:
        file.write(rating.model_dump_json() + "\n")


def read_ratings(folder: Path) -> list[RoundRating]:
    """The ratings in ``folder``'s ``progress.jsonl``, in order; a line that is not a rating
    (torn by a crash, edited by hand) is skipped with a warning. ``[]`` without the file."""
    path = folder / PROGRESS_FILE
    if not path.is_file():
        return []
    ratings = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ratings.append(RoundRating.model_validate_json(line))
        except ValidationError as error:
            log.warning("%s line %d is not a progress rating: %s", path, number,
                        error.errors()[0]["msg"])
    return ratings
