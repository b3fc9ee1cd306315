"""The per-round progress ratings for the usability drop, from the simulated user itself (as in
paper 002 §4) or from the post-hoc judge.

A simulated user with ``rate_progress = true`` writes ``<session>/<role>/progress.jsonl``
(:mod:`cogym_lab.users.progress`). Each rating carries ``seq``, the last event the user had seen
when it rated, and goes to the round (:func:`cogym_lab.eval.metrics.rounds.split_rounds`) holding
that event; when a round got several (the user counted a round boundary the log does not have, say
after the agent only waited), the last one stands, since it saw the most of that round.

The user's ratings are used when they cover every round of the session; a session whose user
rated only some rounds (an LM failure, an unusable reply) takes the judge's ratings for all of
its rounds instead, so one session's ratings never mix two raters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cogym_lab.eval.metrics.rounds import Round
from cogym_lab.records.trajectory import SessionRecord
from cogym_lab.users.progress import read_ratings

if TYPE_CHECKING:
    from cogym_lab.eval.judging.judges import Judge

#: Where the usability drop's ratings come from: ``"user"`` (the simulated user's, the judge's
#: when it gave none for some round) or ``"judge"`` (always the post-hoc judge).
ProgressSource = Literal["user", "judge"]
PROGRESS_SOURCES: tuple[ProgressSource, ...] = ("user", "judge")


@dataclass(frozen=True)
class UserProgress:
    """The user's ratings placed in rounds: ``ratings`` (one per round, in order) when every
    round has one, else ``None``; ``rated`` says how many rounds have one."""

    ratings: list[int] | None
    rated: int
    rounds: int
    raters: list[str]  # the roles whose ratings were read

    @property
    def given(self) -> bool:
        """Whether any simulated user of the session rated any round."""
        return bool(self.raters)


def user_progress(record: SessionRecord, rounds: Sequence[Round]) -> UserProgress:
    """The simulated users' own progress ratings of ``record``'s ``rounds``. With several
    simulated users (rare), a round takes the mean of their last ratings, rounded half up."""
    users = [role for role, kind in record.kinds.items() if kind == "user"]
    starts = [item.events[0].seq if item.events else item.end_seq for item in rounds]
    by_round: dict[int, dict[str, int]] = {}
    raters = []
    for role in users:
        written = read_ratings(record.path / role)
        if written:
            raters.append(role)
        for rating in written:  # in the order written: a later one replaces an earlier one
            position = _round_of(rating.seq, starts)
            if position is not None:
                by_round.setdefault(position, {})[role] = rating.rating
    rated = len(by_round)
    if not rounds or rated < len(rounds):
        return UserProgress(None, rated, len(rounds), raters)
    ratings = []
    for position in range(len(rounds)):
        values = list(by_round[position].values())
        ratings.append(int(sum(values) / len(values) + 0.5))
    return UserProgress(ratings, rated, len(rounds), raters)


@dataclass(frozen=True)
class RoundProgress:
    """A session's progress ratings for the usability drop, who gave them (``"user"``,
    ``"judge"``, or ``None`` when there are none) and a note on why not the user's."""

    ratings: list[int] | None
    source: str | None
    note: str | None = None


async def round_progress(record: SessionRecord, rounds: Sequence[Round],
                         outcomes: Sequence[Any], task: str, judge: Judge | None,
                         source: ProgressSource = "user") -> RoundProgress:
    """The progress ratings of ``record``'s ``rounds``: the simulated user's own (``source``
    ``"user"``) when they cover every round, else the judge's (``outcomes``: the outcome at
    each round's end, shown to the judge), else none."""
    if source not in PROGRESS_SOURCES:
        raise ValueError(f"progress must be one of {', '.join(PROGRESS_SOURCES)}, not "
                         f"{source!r}")
    own = user_progress(record, rounds) if source == "user" else None
    if own is not None and own.ratings is not None:
        return RoundProgress(own.ratings, "user")
    note = None
    if own is not None and own.given:
        fallback = "the judge's are used" if judge is not None else \
            "no judge was given, so there is no usability drop"
        note = (f"{record.session_id}: the simulated user rated the progress of {own.rated} "
                f"of {own.rounds} rounds; {fallback}")
    if judge is None:
        return RoundProgress(None, None, note)
    ratings = await judge.rate_progress(record, rounds, list(outcomes), task)
    return RoundProgress(ratings, "judge" if ratings is not None else None, note)


def _round_of(seq: int, starts: Sequence[int]) -> int | None:
    """The position of the round holding event ``seq``: the last round starting at or before
    it (``None`` before the first)."""
    position = None
    for index, start in enumerate(starts):
        if start <= seq:
            position = index
        else:
            break
    return position
