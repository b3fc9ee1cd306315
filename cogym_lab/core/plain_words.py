"""Actions and events in plain sentences, for people reading a transcript.

The same wording as the panel's (``describeAction`` in ``js/session_panel.js``): an action is
its spec's description with its arguments quoted ("Add a library entry: title “BERT”"), a
message is what it says. The action as written stays in the event log; these words are for
reading only, never parsed back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from cogym_lab.core.actions import ActionError, ActionSpec
from cogym_lab.core.collaboration import ALL_ACTS
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.messages import TEXT_UPDATES, Event, EventType

__all__ = ["describe_action", "describe_event", "specs_by_name"]


def specs_by_name(task_specs: Iterable[ActionSpec]) -> dict[str, ActionSpec]:
    """A task's action specs together with the collaboration acts every task shares."""
    return {spec.name: spec for spec in (*ALL_ACTS, *task_specs)}


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _short(text: str, limit: int) -> str:
    """One line (line breaks of any kind shown as ⏎), no control characters, at most
    ``limit`` characters."""
    text = " ⏎ ".join(part.strip() for part in _CONTROL.sub("", text).splitlines()
                      if part.strip())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def describe_action(raw: str, specs: Mapping[str, ActionSpec]) -> str:
    """``raw`` in plain words: what it does and its arguments; a message by what it says."""
    try:
        action, spec = parse_action(raw, specs)
    except ActionError:
        return _short(raw, 200)
    if action.name == "SEND_TEAMMATE_MESSAGE":
        to = action.args.get("to")
        said = f"said: “{_short(str(action.args.get('message', '')), 200)}”"
        return f"{said} (to {to})" if to else said
    what = spec.description.rstrip(". ")
    args = [f"{name} “{_short(value if isinstance(value, str) else json.dumps(value), 80)}”"
            for name, value in action.args.items()
            if value is not None and value != "" and not (
                (param := spec.param(name)) and not param.required and value == param.default)]
    return f"{what}: {', '.join(args)}" if args else what


def _pending_action(raw: str | None, specs: Mapping[str, ActionSpec]) -> str | None:
    """The task action a confirmation request asks to run."""
    try:
        action, _ = parse_action(raw or "", specs)
    except ActionError:
        return None
    pending = action.args.get("pending_action")
    return pending if isinstance(pending, str) else None


def describe_event(event: Event, specs: Mapping[str, ActionSpec]) -> str:
    """One event as a sentence: who did what, in words."""
    actor = event.actor or "the session"
    action = describe_action(event.action, specs) if event.action else ""
    info = event.info
    match event.type:
        case EventType.START:
            return "The session started."
        case EventType.END:
            reason = info.get("reason") or info.get("end_reason") or "it ended"
            return f"The session ended: {reason}."
        case EventType.MESSAGE:
            return f"{actor} {action}"
        case EventType.ACTION | EventType.FINISH:
            return f"{actor}: {action}." if event.type is EventType.ACTION else \
                f"{actor} declared the task done."
        case EventType.WAIT:
            return f"{actor} waits for a teammate."
        case EventType.ERROR:
            tried = f" to {action[0].lower()}{action[1:]}" if action else ""
            return f"{actor} tried{tried}, but it was refused: {event.error or 'no reason'}"
        case EventType.CONFIRM_REQUEST:
            pending = _pending_action(event.action, specs)
            what = describe_action(pending, specs) if pending else action
            return f"{actor} asks for approval before: {what}."
        case EventType.CONFIRM_ACCEPT:
            return f"{actor} approved the request."
        case EventType.CONFIRM_REJECT:
            return f"{actor} turned the request down."
        case EventType.PAUSE:
            return f"{actor} paused the agent."
        case EventType.RESUME:
            return f"{actor} resumed the agent."
        case EventType.TICK:
            return "Nobody acted for a while (an idle tick)."
        case EventType.EDIT:  # what changed is in the text: the Yjs update says nothing to read
            return f"{actor} typed in the {next(iter(info.get(TEXT_UPDATES) or {}), 'text')}."
        case EventType.CLOCK:
            earned = f": {event.reward:+g}" if event.reward else ""
            return f"Tick {info.get('tick', '?')}{earned}."
        case _:
            return f"{actor}: {action or event.type.value}"
