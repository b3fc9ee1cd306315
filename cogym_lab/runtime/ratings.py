"""A person rating a session: the rating form's answers, saved in the session's
``ratings.json`` by seat, and its pairwise question (this session's outcome beside the
autonomous agent's on the same task and instance, see :mod:`cogym_lab.runtime.pairwise`).

A seat may rate while the session runs or after it ended, and again (the later rating replaces
its earlier one). The host offers this through :meth:`SessionHost.rate`,
:meth:`SessionHost.pairwise_offer` and :meth:`SessionHost.ratings`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogym_lab.runtime.errors import HostingError, not_a_seat
from cogym_lab.runtime.hosted import HostedSession, final_outcome
from cogym_lab.runtime.models import (
    LIKERT_ITEMS,
    PAIRWISE_FIELDS,
    RATINGS_FILE,
    PairwiseOffer,
    Rating,
    StoredRating,
    validation_message,
)
from cogym_lab.runtime.pairwise import make_offer, read_shown
from cogym_lab.runtime.stored import StoredSession, write_json

log = logging.getLogger(__name__)

#: Finds a session by id, hosted or stored; ``HostingError`` 404 if there is none.
FindSession = Callable[[str], HostedSession | StoredSession]


class Ratings:
    """The ratings of the sessions ``find`` knows. ``baselines``: folders of fully autonomous
    runs, where the pairwise question finds the autonomous outcome (none: it is not asked)."""

    def __init__(self, find: FindSession, baselines: Sequence[str | Path] = ()) -> None:
        self._find = find
        self.baselines = [Path(folder) for folder in baselines]
        #: Draws the order of the pairwise question's two outcomes (a test may seed it).
        self.rng: random.Random = random.SystemRandom()

    def rate(self, session_id: str, role: str, outcome_rating: int, satisfaction: int,
             comment: str = "", *, likert: Mapping[str, Any] | None = None,
             pairwise: str | None = None, pairwise_order: Sequence[str] | None = None
             ) -> dict[str, Any]:
        """Save a person seat's rating of a session (while it runs or after it ended) in the
        session's ``ratings.json``, replacing that role's earlier one; returns all ratings.

        Ratings are 1 to 5 (outcome: how good the result is; satisfaction: how the
        collaboration felt). ``likert`` answers the Cocoa study's optional 1-5 items by name
        (:data:`~cogym_lab.records.likert.COCOA_ITEMS`; the three old names are read as their
        new ones); an item left out, or ``None``, is not written, and an unknown name is
        refused. ``pairwise`` answers the
        comparison with the autonomous agent's outcome (``"own"``, ``"autonomous"`` or
        ``"tie"``), only after :meth:`pairwise_offer` showed it to this seat; the order it was
        shown in is recorded, and ``pairwise_order``, when given, must be that order. Raises
        ``HostingError`` (404 unknown session, 400 bad values, 409 a pairwise answer to a
        question not shown, or shown in another order), having saved nothing.
        """
        entry = self._find(session_id)
        if not isinstance(role, str) or role not in entry.people:
            raise HostingError(not_a_seat(role, entry.people), status=400)
        try:
            rating = Rating.model_validate({
                **dict(likert or {}), "outcome_rating": outcome_rating,
                "satisfaction": satisfaction, "comment": comment, "pairwise": pairwise,
                "pairwise_order": pairwise_order})
        except ValidationError as error:
            raise HostingError(validation_message(error)) from None
        directory = entry.directory
        if directory is None:
            raise HostingError(f"Session {session_id!r} has no results directory.", status=409)
        shown = None
        if rating.pairwise is not None:
            shown = read_shown(directory).get(role)
            if shown is None:
                raise HostingError("pairwise: no comparison with the autonomous agent was "
                                   "shown to this seat.", status=409)
            if rating.pairwise_order is not None and rating.pairwise_order != shown.order:
                raise HostingError("pairwise_order: the comparison was shown in the order "
                                   f"{' | '.join(shown.order)}; reload the form.", status=409)
        ratings = self.saved(session_id)
        stored = StoredRating(**rating.model_dump(exclude={"pairwise_order"}), ts=time.time(),
                              pairwise_order=shown.order if shown else None,
                              pairwise_baseline=shown.baseline if shown else None)
        # Unanswered items are left out, so a form without them writes the file it always
        # wrote.
        ratings[role] = stored.model_dump(exclude={
            item for item in (*LIKERT_ITEMS, *PAIRWISE_FIELDS) if getattr(stored, item) is None})
        directory.mkdir(parents=True, exist_ok=True)
        write_json(directory / RATINGS_FILE, ratings)
        return ratings

    async def pairwise_offer(self, session_id: str, role: str) -> PairwiseOffer:
        """The rating form's pairwise question for person seat ``role``: this session's
        outcome and the autonomous agent's on the same task and instance, in the order kept
        for the seat, or why there is none. The baseline folders are searched in a worker
        thread, off the loop. Raises ``HostingError`` (404 unknown session, 400 no person
        seat, 409 not ended yet)."""
        entry = self._find(session_id)
        if not isinstance(role, str) or role not in entry.people:
            raise HostingError(not_a_seat(role, entry.people), status=400)
        ended, outcome = final_outcome(entry)
        if not ended:
            raise HostingError(f"Session {session_id!r} has not ended: its outcome is compared "
                               "once it is over.", status=409)
        directory = entry.directory
        if directory is None:
            raise HostingError(f"Session {session_id!r} has no results directory.", status=409)
        return await asyncio.to_thread(make_offer, directory, role, outcome,
                                       list(self.baselines), self.rng)

    def saved(self, session_id: str) -> dict[str, Any]:
        """The ratings saved for a session, by role (``{}`` when there are none)."""
        directory = self._find(session_id).directory
        path = directory / RATINGS_FILE if directory is not None else None
        if path is None or not path.is_file():
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            log.warning("%s is not JSON; starting the ratings afresh", path)
            return {}


__all__ = ["FindSession", "Ratings"]
