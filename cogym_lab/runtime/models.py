"""Wire and file formats of the hosting layer: the create request (a ``SessionSpec`` and its
sharing), WebSocket action frames, ratings, and the ``hosting.json`` record that lets a restarted
server rebuild a session.

Every request model is strict (``"30"`` is not a number, ``true`` is not an integer) and forbids
unknown fields, so a bad request is refused with the field's name before anything is built.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cogym_lab.records.likert import COCOA_ITEMS, renamed
from cogym_lab.runtime.access import SessionAccess
from cogym_lab.sessions.spec import REVEAL_SECRETS, RoleName, SessionSpec

HOSTING_FILE = "hosting.json"
RATINGS_FILE = "ratings.json"

Score = Annotated[int, Field(ge=1, le=5, strict=True)]
#: How a client names one of its actions, so that an answer about it can say which.
ClientActionId = Annotated[str, Field(max_length=64)] | Annotated[int, Field(ge=0, lt=2**53)]

_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class CreatedIn(BaseModel):
    """The notebook cell a create request came from: its kernel, and, when known, the notebook's
    path and the cell's id. A server ends the session when that kernel ends, and a cell run
    again (after a kernel restart too) finds the session it started."""

    model_config = _STRICT

    kernel_id: str = Field(min_length=1, max_length=200)
    path: str | None = Field(default=None, min_length=1, max_length=4_096)
    cell_id: str | None = Field(default=None, min_length=1, max_length=200)


class CreateRequest(SessionSpec):
    """The body of ``POST /cogym/api/sessions``: a :class:`SessionSpec` and who else may take
    its person seats. ``seat_users`` gives seats to other users of the server by name, and
    ``seat_tokens`` asks for one token per named seat, which the creator hands on (see
    docs/server.md). ``created_in``: the notebook cell that asks (a notebook's kernel sends
    it)."""

    seat_users: dict[RoleName, Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=dict)
    seat_tokens: list[RoleName] = Field(default_factory=list)
    created_in: CreatedIn | None = None

    @model_validator(mode="after")
    def _seats_are_shared_once(self) -> CreateRequest:
        both = sorted(set(self.seat_users) & set(self.seat_tokens))
        if both:
            raise ValueError(f"seat {', '.join(both)} is given both to a user and to a token")
        if len(set(self.seat_tokens)) != len(self.seat_tokens):
            raise ValueError("seat_tokens names a seat more than once")
        return self

    def spec(self) -> SessionSpec:
        """The session this request asks for, without the sharing."""
        return SessionSpec.model_validate(self.model_dump(
            exclude={"seat_users", "seat_tokens", "created_in"}))

    def body(self) -> dict[str, Any]:
        """The JSON body, without the fields left unset. API keys are written out: this is
        what a client sends over the server's authenticated REST API, and nothing else."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True,
                               context={REVEAL_SECRETS: True})


class ActionFrame(BaseModel):
    """A message a person's browser sends over the seat's WebSocket.

    ``action`` is an action string or ``{"name", "args"}``; ``base`` goes with a whole-text
    replacement (the text it started from), ``seen_seq`` with a live edit (the update whose
    shared texts it was made on); ``id`` is the client's own name for the action, repeated in
    any answer about it.
    """

    model_config = _STRICT

    action: str | dict[str, Any]
    base: str | None = None
    seen_seq: int | None = Field(default=None, ge=0)
    id: ClientActionId | None = None


class ActionBody(BaseModel):
    """Body of ``POST /cogym/api/sessions/<id>/actions``."""

    model_config = _STRICT

    role: RoleName
    action: str | dict[str, Any]
    base: str | None = None
    seen_seq: int | None = Field(default=None, ge=0)


class SeatClaim(BaseModel):
    """Body of ``POST /cogym/api/sessions/<id>/seats``: a seat token the creator handed on."""

    model_config = _STRICT

    token: str = Field(min_length=1, max_length=200)


#: The optional 5-point items of the rating form: the Cocoa study's nine (its §6.1 and
#: Appendix H; :mod:`cogym_lab.records.likert` has their statements and the utility composite).
LIKERT_ITEMS = COCOA_ITEMS


#: The two outcomes of the pairwise question (Co-Gym C.4): this session's, and the fully
#: autonomous agent's on the same task and instance.
Side = Literal["own", "autonomous"]
#: The person's answer: which outcome is better, or neither.
PairwiseChoice = Literal["own", "autonomous", "tie"]
#: The fields of the pairwise question in a rating; like the Likert items, left out of
#: ``ratings.json`` when not answered.
PAIRWISE_FIELDS = ("pairwise", "pairwise_order", "pairwise_baseline")


def _two_sides(order: list[Side] | None) -> list[Side] | None:
    if order is not None and sorted(order) != ["autonomous", "own"]:
        raise ValueError("pairwise_order must name 'own' and 'autonomous' once each")
    return order


class Rating(BaseModel):
    """A person's verdict on a session: Co-Gym's outcome rating and overall satisfaction, and,
    when the form asks them, the Cocoa study's nine Likert items and Co-Gym's pairwise
    comparison with the autonomous agent's outcome (``None`` when not answered, as in every
    rating saved before they existed). The three items' old names (``steerability``,
    ``ease_of_use``, ``utility``) are read as ``steerable``, ``easy_to_use`` and
    ``useful_outputs`` (:data:`~cogym_lab.records.likert.LEGACY_NAMES`), so old files read.

    ``pairwise_order`` is the order the two outcomes were shown in, left to right; the host
    checks it against the order it offered (see :meth:`SessionHost.pairwise_offer`)."""

    model_config = ConfigDict(extra="forbid")

    outcome_rating: Score
    satisfaction: Score
    comment: str = Field(default="", max_length=10_000)
    useful_outputs: Score | None = None
    insights: Score | None = None
    clear_steps: Score | None = None
    understanding: Score | None = None
    easy_to_use: Score | None = None
    steerable: Score | None = None
    fits_workflow: Score | None = None
    artifact: Score | None = None
    next_steps: Score | None = None
    # A literal takes only its own strings (no case folding, no numbers), so it needs no
    # strict mode.
    pairwise: PairwiseChoice | None = None
    pairwise_order: list[Side] | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_item_names(cls, data: Any) -> Any:
        return renamed(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _pairwise_is_whole(self) -> Rating:
        _two_sides(self.pairwise_order)
        if self.pairwise_order is not None and self.pairwise is None:
            raise ValueError("pairwise_order without a pairwise answer")
        return self

    def likert(self) -> dict[str, int]:
        """The Likert items answered, by name."""
        return {item: value for item in LIKERT_ITEMS
                if (value := getattr(self, item)) is not None}


class RatingRequest(Rating):
    """Body of ``POST /cogym/api/sessions/<id>/rating``."""

    role: str = Field(min_length=1)


class StoredRating(Rating):
    """One role's entry in ``ratings.json``. ``pairwise_baseline`` names the autonomous
    session compared with (its folder, relative to the baseline folder it was found in)."""

    ts: float
    pairwise_baseline: str | None = None


class ShownOutcome(BaseModel):
    """One of the two outcomes of the pairwise question, as the form shows it."""

    side: Side
    label: str  # "A" or "B": the form does not say which side is which
    text: str


class PairwiseOffer(BaseModel):
    """Answer to ``GET .../sessions/<id>/pairwise?role=...`` (and to the panel's ``pairwise``
    message in local mode): the two outcomes in the order to show them, or why there is no
    question (``available`` false and ``note`` in plain words)."""

    available: bool
    note: str = ""
    outcomes: list[ShownOutcome] = Field(default_factory=list)
    baseline: str | None = None

    @property
    def order(self) -> list[Side]:
        return [shown.side for shown in self.outcomes]


class PairwiseShown(BaseModel):
    """What ``pairwise.json`` keeps per role: the order the outcomes were first offered in (a
    reload shows the same) and the baseline session they came from."""

    order: list[Side]
    baseline: str
    ts: float

    @model_validator(mode="after")
    def _both_sides(self) -> PairwiseShown:
        _two_sides(self.order)
        return self


class HostingRecord(BaseModel):
    """``hosting.json``: how the server created a session, so a later server can rebuild it.

    ``spec`` is the session's spec as resolved, always without its API keys (the record drops
    any it is given: a key lives only in the memory of the server it was sent to, and a
    resume reads keys from that server's environment); records older than specs hold it as
    ``request``, which reads the same.
    ``team`` and ``people`` are what it resolved to. ``access`` says whose
    session it is (``None`` in records older than ownership: the server token's holder's).
    """

    model_config = ConfigDict(hide_input_in_errors=True)

    session_id: str
    spec: SessionSpec
    team: str
    people: list[str]
    created_at: float
    access: SessionAccess | None = None
    created_in: CreatedIn | None = None  # the notebook cell that asked for it, if one did
    # The process that hosts the session: while it lives, the session is its own, and a
    # restarted server sharing the folder must not mark it interrupted.
    hostname: str | None = None
    pid: int | None = None
    process_start: str | None = None  # tells a reused pid from the same process

    @model_validator(mode="before")
    @classmethod
    def _read_older_records(cls, data: Any) -> Any:
        if isinstance(data, dict) and "spec" not in data and "request" in data:
            data = {**data, "spec": data["request"]}
            del data["request"]
        return data

    @model_validator(mode="after")
    def _holds_no_secret(self) -> HostingRecord:
        """Whoever builds a record, ``hosting.json`` never holds a key."""
        if any(settings.api_key is not None for settings in self.spec.lm.values()):
            self.spec = self.spec.without_secrets()
        return self


def validation_message(error: ValidationError) -> str:
    """One readable line per problem, e.g. ``outcome_rating: Input should be less than or
    equal to 5``."""
    parts = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "body"
        message = problem["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
