"""What ``observe`` and ``wait_for_news`` return: the seat's view and its news, as text for the
model and as structured content for programs.

The text uses the words the transcript and the panel use (:mod:`cogym_lab.core.plain_words`)
and the agents' own rendering of components. Long texts are cut in the text (a message of a
megabyte would swamp a model's context); the structured content keeps them whole.
"""

from __future__ import annotations

from typing import Any

from cogym_lab.agents.render import render_component
from cogym_lab.core.messages import ChatMessage, Event, Notification, SessionContext
from cogym_lab.core.plain_words import describe_event, specs_by_name
from cogym_lab.mcp_seat.seat import News

#: Characters of one message or component the text shows before cutting it.
TEXT_LIMIT = 4000


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def _message_line(message: ChatMessage, role: str) -> str:
    sender = "you" if message.sender == role else message.sender
    to = f" to {'you' if message.to == role else message.to}" if message.to else ""
    return f"  [{message.seq}] {sender}{to}: {_cut(message.text)}"


def describe_events(events: list[Event], context: SessionContext | None) -> list[str]:
    specs = specs_by_name(context.action_specs if context is not None else ())
    return [f"  {event.seq:>4}  {describe_event(event, specs)}" for event in events]


def view_text(current: Notification | None, news: News, context: SessionContext | None,
              role: str) -> str:
    """The seat as text: who and where it is, its view, what is pending, and the news."""
    if current is None:
        return "The session has not started yet; wait_for_news returns once it does."
    lines = [f"You are {role!r} in session {current.session_id}."]
    if context is not None:
        lines.append(f"Task: {context.task_description}")
    if current.done:
        lines.append(f"The session has ended ({current.end_reason}). Nothing more can be done.")
    limit = current.step_limits.get(role)
    lines.append(f"Your steps: {current.step_counts.get(role, 0)}"
                 + (f" of {limit}" if limit is not None else ""))
    if current.paused and role in current.paused:
        lines.append("You are paused: you may not act until a person resumes you.")
    if current.turn is not None:
        lines.append(f"Turn {current.turn.number}: {current.turn.role}'s"
                     + (" (busy)" if current.turn.busy else ""))
    for pending in current.pending_confirmations:
        lines.append(f"Pending confirmation {pending.request_id} from {pending.requester}: "
                     f"{_cut(pending.pending_action, 500)}")
    lines.append("")
    lines += [render_component(component, TEXT_LIMIT) for component in current.view.components]
    if news.events:
        lines += ["", "New since you last looked:", *describe_events(news.events, context)]
    if news.messages:
        lines += ["", "New messages:", *(_message_line(m, role) for m in news.messages)]
    if not news:
        lines += ["", "Nothing new since you last looked."]
    return "\n".join(lines)


def view_content(current: Notification | None, news: News) -> dict[str, Any]:
    """The same as structured content (JSON)."""
    if current is None:
        return {"started": False}
    return {
        "started": True,
        "session_id": current.session_id,
        "role": current.recipient,
        "seq": current.seq,
        "done": current.done,
        "end_reason": current.end_reason,
        "step_count": current.step_counts.get(current.recipient, 0),
        "step_limit": current.step_limits.get(current.recipient),
        "paused": current.recipient in current.paused,
        "view": {component.name: component.model_dump(mode="json")
                 for component in current.view.components},
        "pending_confirmations": [c.model_dump(mode="json")
                                  for c in current.pending_confirmations],
        "new_events": [event.model_dump(mode="json", exclude={"recipients"})
                       for event in news.events],
        "new_messages": [message.model_dump(mode="json") for message in news.messages],
    }


__all__ = ["TEXT_LIMIT", "describe_events", "view_content", "view_text"]
