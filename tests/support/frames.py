"""What a seat's update frames (JSON, as a panel or a socket receives them) add up to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cogym_lab.core.member_copy import MemberCopy
from cogym_lab.core.messages import Update


def seen(frames: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The whole notification (JSON) after each frame, as the seat's copy builds them: the view
    and chat in full, whatever each frame carried."""
    copy: MemberCopy | None = None
    made = []
    for frame in frames:
        update = Update.model_validate(frame)
        copy = copy or MemberCopy(update.recipient)
        notification = copy.apply(update)
        if notification is not None:
            made.append(notification.model_dump(mode="json"))
    return made


def last_seen(frames: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The whole notification (JSON) the seat holds after ``frames``."""
    made = seen(frames)
    assert made, "no frame made a notification"
    return made[-1]


__all__ = ["last_seen", "seen"]
