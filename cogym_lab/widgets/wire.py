"""Custom messages between the panel's browser code and the kernel, in local mode.

Browser to kernel: ``hello`` (a view opened: send the current state), ``action`` (the person
acts; ``base`` for whole-text replacements, ``id`` to have a refusal name it), ``rating`` and
``pairwise`` (the rating form asks for its comparison with the autonomous agent's outcome).
Kernel to browser: ``notification``, ``status``, ``error`` (with the ``id`` of the action it
refuses, if any), ``rated`` / ``rating_error`` answering a rating by its ``id``, and
``pairwise_offer`` / ``pairwise_error`` answering a ``pairwise`` request by its ``id``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from cogym_lab.records.likert import COCOA_ITEMS, LEGACY_NAMES


class Hello(BaseModel):
    type: Literal["hello"]


class ActionMessage(BaseModel):
    type: Literal["action"]
    action: str | dict[str, Any]
    base: str | None = None
    seen_seq: int | None = None  # a live edit: the update whose shared texts it was made on
    id: str | int | None = None  # the panel's name for the action, repeated in a refusal


class RatingMessage(BaseModel):
    type: Literal["rating"]
    id: int | str
    role: str | None = None
    outcome_rating: int
    satisfaction: int
    comment: str = ""
    # The Cocoa study's optional Likert items (records.likert; the old three names too). Any
    # JSON value is let through here on purpose: ``SessionHost.rate`` checks them strictly
    # (1-5, no text, no booleans), so a bad one is answered by a ``rating_error`` naming the
    # item and the request's id.
    useful_outputs: Any = None
    insights: Any = None
    clear_steps: Any = None
    understanding: Any = None
    easy_to_use: Any = None
    steerable: Any = None
    fits_workflow: Any = None
    artifact: Any = None
    next_steps: Any = None
    steerability: Any = None
    ease_of_use: Any = None
    utility: Any = None
    # The pairwise answer and the order shown, checked strictly by ``SessionHost.rate`` too.
    pairwise: Any = None
    pairwise_order: Any = None

    def likert(self) -> dict[str, Any]:
        """The Likert items sent, by the name they were sent under."""
        return {item: value for item in (*COCOA_ITEMS, *LEGACY_NAMES)
                if (value := getattr(self, item)) is not None}


class PairwiseRequest(BaseModel):
    """The rating form asks for its pairwise question (answered by ``pairwise_offer``)."""

    type: Literal["pairwise"]
    id: int | str


FromPanel = Annotated[Hello | ActionMessage | RatingMessage | PairwiseRequest,
                      Field(discriminator="type")]
FROM_PANEL: TypeAdapter[FromPanel] = TypeAdapter(FromPanel)


def notification(data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "notification", "data": data}


def status(data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "status", "data": data}


def error(message: str, action_id: str | int | None = None) -> dict[str, Any]:
    """An error for the panel; ``action_id`` names the action it refuses, if any."""
    content: dict[str, Any] = {"type": "error", "error": message}
    if action_id is not None:
        content["id"] = action_id
    return content


def rated(request_id: int | str, ratings: dict[str, Any]) -> dict[str, Any]:
    return {"type": "rated", "id": request_id, "ratings": ratings}


def rating_error(request_id: int | str, message: str) -> dict[str, Any]:
    return {"type": "rating_error", "id": request_id, "error": message}


def pairwise_offer(request_id: int | str, offer: dict[str, Any]) -> dict[str, Any]:
    """The pairwise question (a ``PairwiseOffer`` in JSON) for the request ``request_id``."""
    return {"type": "pairwise_offer", "id": request_id, "offer": offer}


def pairwise_error(request_id: int | str, message: str) -> dict[str, Any]:
    return {"type": "pairwise_error", "id": request_id, "error": message}
