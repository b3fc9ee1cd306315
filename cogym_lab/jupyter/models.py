"""Wire and file formats of the hosting layer: the create request and its parts, WebSocket action
frames, ratings, and the ``hosting.json`` record that lets a restarted server rebuild a session.

Every request model is strict (``"30"`` is not a number, ``true`` is not an integer) and forbids
unknown fields, so a bad request is refused with the field's name before anything is built.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cogym_lab.jupyter.access import SessionAccess

HOSTING_FILE = "hosting.json"
RATINGS_FILE = "ratings.json"

Score = Annotated[int, Field(ge=1, le=5, strict=True)]
#: A seat's name: what the panel puts in a URL, so letters, digits, '_', '.' and '-'.
RoleName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
#: How a client names one of its actions, so that an answer about it can say which.
ClientActionId = Annotated[str, Field(max_length=64)] | Annotated[int, Field(ge=0, lt=2**53)]

_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class SessionSettings(BaseModel):
    """Overrides of a session's timing and limits (``SessionConfig``), each optional."""

    model_config = _STRICT

    idle_seconds: float | None = Field(default=None, gt=0, le=86_400)
    timeout: float | None = Field(default=None, gt=0, le=7 * 86_400)
    max_idle_ticks: int | None = Field(default=None, ge=1, le=10_000)
    max_events: int | None = Field(default=None, ge=1, le=1_000_000)
    agent_step_limit: int | None = Field(default=None, ge=0, le=100_000)
    join_timeout: float | None = Field(default=None, gt=0, le=3_600)
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)

    def overrides(self) -> dict[str, Any]:
        """The settings given, by name (``SessionConfig`` keeps its defaults for the rest)."""
        return {name: getattr(self, name) for name in SessionSettings.model_fields
                if getattr(self, name) is not None}


class LMRequest(BaseModel):
    """LM settings a request may give every LM member and the task's tools."""

    model_config = _STRICT

    model: str | None = Field(default=None, max_length=500)
    base_url: str | None = Field(default=None, max_length=2_000)
    api_key: str | None = Field(default=None, max_length=1_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    timeout: float | None = Field(default=None, gt=0, le=3_600)
    max_retries: int | None = Field(default=None, ge=0, le=20)

    def settings(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class CreateRequest(SessionSettings):
    """What it takes to start a session: the body of ``POST /cogym/api/sessions``, and what the
    Python API and the magics send to either backend.

    ``seat_users`` gives person seats to other users of the server by name, and ``seat_tokens``
    asks for one token per named seat, which the creator hands on (see docs/server.md)."""

    task: str = Field(min_length=1, max_length=200)
    instance: int | None = Field(default=None, ge=0)
    team: str | None = Field(default=None, min_length=1, max_length=4_096)
    people: list[RoleName] = Field(default_factory=list)
    env_args: dict[str, Any] = Field(default_factory=dict)
    lm: LMRequest | None = None
    notebook: dict[str, str] | None = None  # {"path", "kernel_id"}: share this kernel
    protocol: str | None = Field(default=None, max_length=200)
    seat_users: dict[RoleName, Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=dict)
    seat_tokens: list[RoleName] = Field(default_factory=list)

    @model_validator(mode="after")
    def _seats_are_named_once(self) -> CreateRequest:
        repeated = sorted({role for role in self.people if self.people.count(role) > 1})
        if repeated:
            raise ValueError(f"people lists {', '.join(repeated)} more than once")
        both = sorted(set(self.seat_users) & set(self.seat_tokens))
        if both:
            raise ValueError(f"seat {', '.join(both)} is given both to a user and to a token")
        if len(set(self.seat_tokens)) != len(self.seat_tokens):
            raise ValueError("seat_tokens names a seat more than once")
        return self

    def body(self) -> dict[str, Any]:
        """The JSON body, without the fields left unset."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)

    def settings(self) -> SessionSettings:
        return SessionSettings.model_validate(
            {name: getattr(self, name) for name in SessionSettings.model_fields})

    def host_arguments(self) -> dict[str, Any]:
        """Keyword arguments of ``SessionHost.create``."""
        return {"task": self.task, "instance": self.instance, "env_args": dict(self.env_args),
                "team": self.team, "people": list(self.people),
                "lm": self.lm.settings() if self.lm is not None else None,
                "notebook": self.notebook, "protocol": self.protocol,
                **self.settings().overrides()}


class ActionFrame(BaseModel):
    """A message a person's browser sends over the seat's WebSocket.

    ``action`` is an action string or ``{"name", "args"}``; ``base`` goes with a whole-text
    replacement; ``id`` is the client's own name for the action, repeated in any answer about it.
    """

    model_config = _STRICT

    action: str | dict[str, Any]
    base: str | None = None
    id: ClientActionId | None = None


class ActionBody(BaseModel):
    """Body of ``POST /cogym/api/sessions/<id>/actions``."""

    model_config = _STRICT

    role: RoleName
    action: str | dict[str, Any]
    base: str | None = None


class SeatClaim(BaseModel):
    """Body of ``POST /cogym/api/sessions/<id>/seats``: a seat token the creator handed on."""

    model_config = _STRICT

    token: str = Field(min_length=1, max_length=200)


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
    settings, ...); ``team`` and ``people`` are what they resolved to. ``access`` says whose
    session it is (``None`` in records older than ownership: the server token's holder's).
    """

    session_id: str
    request: dict[str, Any]
    team: str
    people: list[str]
    created_at: float
    access: SessionAccess | None = None
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
        message = problem["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
