"""Wire and file formats of the hosting layer: ratings, and the ``hosting.json`` record that lets
a restarted server rebuild a session."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

HOSTING_FILE = "hosting.json"
RATINGS_FILE = "ratings.json"

Score = Annotated[int, Field(ge=1, le=5, strict=True)]


class Rating(BaseModel):
    """A person's verdict on a session (Co-Gym's outcome rating and overall satisfaction)."""

    model_config = ConfigDict(extra="forbid")

    outcome_rating: Score
    satisfaction: Score
    comment: str = Field(default="", max_length=10_000)


class RatingRequest(Rating):
    """Body of ``POST /cogym/api/sessions/<id>/rating``."""

    role: str = Field(min_length=1)


class StoredRating(Rating):
    """One role's entry in ``ratings.json``."""

    ts: float


class HostingRecord(BaseModel):
    """``hosting.json``: how the server created a session, so a later server can rebuild it.

    ``request`` holds the create arguments as given (task, instance, env_args, team, people,
    settings, ...); ``team`` and ``people`` are what they resolved to.
    """

    session_id: str
    request: dict[str, Any]
    team: str
    people: list[str]
    created_at: float
    # The process that hosts the session: while it lives, the session is its own, and a
    # restarted server sharing the folder must not mark it interrupted.
    hostname: str | None = None
    pid: int | None = None
    process_start: str | None = None  # tells a reused pid from the same process


def validation_message(error: ValidationError) -> str:
    """One readable line per problem, e.g. ``outcome_rating: Input should be less than or
    equal to 5``."""
    parts = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "body"
        parts.append(f"{where}: {problem['msg']}")
    return "; ".join(parts)
