"""What the host answers to a request it refuses: a :class:`HostingError` with the HTTP status
that fits it, and the words for a role that is no person seat."""

from __future__ import annotations

from typing import Any

from cogym_lab.errors import CogymError


class HostingError(CogymError):
    """A request the host refuses; ``status`` is the HTTP status that fits it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def not_a_seat(role: Any, people: list[str]) -> str:
    """Why ``role`` cannot act or rate: it is not one of the session's person seats."""
    seats = ", ".join(people) or "none"
    return f"{role!r} is not a person seat of this session (person seats: {seats})."


__all__ = ["HostingError", "not_a_seat"]
