"""The tools a seat offers an outside agent, made from its action specs, with no MCP in sight.

Every tool is one of three things:

* a **task action**: one tool per action spec of the seat's context, named after the action
  (``ADD_ITEM``), its params as a JSON schema with their types and descriptions;
* a **collaboration act**: the acts the seat's kind may take, under short lowercase names
  (``send_message``, ``wait``, ``finish``, ``request_confirmation``, ``accept_confirmation``,
  ``reject_confirmation``; ``pause_agent`` and ``resume_agent`` for the human side);
* a **look**: ``observe`` (the view and what is new) and ``wait_for_news``.

No tool takes the acting role: a seat acts as its own role only. The schemas allow no other
property, and the env refuses an argument an action does not have, with its expected form.

**Annotations.** ``observe`` and ``wait_for_news`` are read-only. An action is *destructive*
when it may remove or overwrite what the team shares: it replaces a shared text whole
(``ActionSpec.replaces``), or its name starts with a verb that removes (``REMOVE_``,
``DELETE_``, ``CLEAR_``, ...); ``finish`` is destructive too (it ends the session for everyone,
for good). A private action (its result only the seat sees) is never destructive. Every other
tool is additive. Hints only: whether a risky action runs is decided by the session, where an
agent's action that the task wants approved is turned into a confirmation request, whatever the
client does with the hints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cogym_lab.core import collaboration as acts
from cogym_lab.core.actions import ActionSpec, ParamSpec
from cogym_lab.core.messages import SessionContext

ToolKind = Literal["action", "act", "observe", "wait_for_news"]

#: The collaboration acts' tool names.
ACT_TOOLS: dict[str, str] = {
    acts.SEND_TEAMMATE_MESSAGE.name: "send_message",
    acts.WAIT_TEAMMATE_CONTINUE.name: "wait",
    acts.FINISH.name: "finish",
    acts.REQUEST_TEAMMATE_CONFIRM.name: "request_confirmation",
    acts.ACCEPT_CONFIRMATION.name: "accept_confirmation",
    acts.REJECT_CONFIRMATION.name: "reject_confirmation",
    acts.PAUSE_AGENT.name: "pause_agent",
    acts.RESUME_AGENT.name: "resume_agent",
}

#: What the acts' tools add to the act's own description, for an agent outside the session.
_ACT_NOTES: dict[str, str] = {
    acts.SEND_TEAMMATE_MESSAGE.name: "Everyone it goes to is notified, you included.",
    acts.WAIT_TEAMMATE_CONTINUE.name: "Logged; notifies nobody. To wait for an answer, use "
                                      "wait_for_news.",
    acts.FINISH.name: "Ends the session for everyone; it cannot be undone.",
    acts.REQUEST_TEAMMATE_CONFIRM.name: "Give the task action as an action string, e.g. "
                                        "ADD_ITEM(text=\"tent\"); it runs once approved.",
}

#: First words of action names that remove or overwrite shared content.
DESTRUCTIVE_VERBS = frozenset({"REMOVE", "DELETE", "CLEAR", "RESET", "REPLACE", "OVERWRITE",
                               "DROP", "UNDO", "ERASE", "DISCARD"})

#: Seconds ``wait_for_news`` waits by default, and at most.
DEFAULT_WAIT_SECONDS = 60.0
MAX_WAIT_SECONDS = 600.0


@dataclass(frozen=True)
class ToolAnnotationHints:
    """MCP's tool annotations, as this module decides them."""

    title: str
    read_only: bool
    destructive: bool | None = None  # meaningful only when not read-only
    idempotent: bool | None = None


@dataclass(frozen=True)
class SeatTool:
    """One tool: its name, description, input schema and hints; ``action`` is the action it
    sends (the spec's name), ``None`` for the looks."""

    name: str
    kind: ToolKind
    description: str
    input_schema: dict[str, Any]
    hints: ToolAnnotationHints
    action: str | None = None
    spec: ActionSpec | None = None


def is_destructive(spec: ActionSpec) -> bool:
    """The rule of the module docstring."""
    if spec.private:
        return False
    if spec.name == acts.FINISH.name or spec.replaces is not None:
        return True
    return spec.name.split("_", 1)[0] in DESTRUCTIVE_VERBS


def param_schema(param: ParamSpec) -> dict[str, Any]:
    """One param as a JSON-schema property."""
    schema: dict[str, Any] = {} if param.type == "any" else {"type": param.type}
    if param.description:
        schema["description"] = param.description
    if not param.required and param.default is not None:
        schema["default"] = param.default
    return schema


def input_schema(spec: ActionSpec) -> dict[str, Any]:
    """The action's params as a tool's input schema: no property besides them."""
    return {
        "type": "object",
        "properties": {param.name: param_schema(param) for param in spec.params},
        "required": [param.name for param in spec.params if param.required],
        "additionalProperties": False,
    }


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def action_tool(spec: ActionSpec) -> SeatTool:
    """The tool of one of the task's actions."""
    notes = [spec.description.rstrip()]
    if spec.private:
        notes.append("Private: only you see its result.")
    if spec.replaces is not None:
        notes.append(f"Replaces the whole shared {spec.replaces!r}; edits your teammates made "
                     "since your last observe are merged in, not lost.")
    notes.append(f"Expected form: {spec.signature()}")
    return SeatTool(name=spec.name, kind="action", description=" ".join(notes),
                    input_schema=input_schema(spec), action=spec.name, spec=spec,
                    hints=ToolAnnotationHints(title=_title(spec.name), read_only=False,
                                              destructive=is_destructive(spec)))


def act_tool(spec: ActionSpec) -> SeatTool:
    """The tool of one collaboration act."""
    note = _ACT_NOTES.get(spec.name)
    description = spec.description.rstrip() + (f" {note}" if note else "")
    name = ACT_TOOLS[spec.name]
    return SeatTool(name=name, kind="act", description=description,
                    input_schema=input_schema(spec), action=spec.name, spec=spec,
                    hints=ToolAnnotationHints(title=_title(name), read_only=False,
                                              destructive=is_destructive(spec)))


OBSERVE = SeatTool(
    name="observe", kind="observe",
    description="Your current view of the shared workspace (and your private parts), pending "
                "confirmations, your step count, and every event and message that reached you "
                "since you last observed or waited. Changes nothing.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    hints=ToolAnnotationHints(title="Observe", read_only=True))

WAIT_FOR_NEWS = SeatTool(
    name="wait_for_news", kind="wait_for_news",
    description="Wait until a teammate acts, a message arrives, the session ticks or ends, or "
                "the timeout passes; then returns what observe would. Sends progress while it "
                "waits. Use it instead of polling observe. Changes nothing.",
    input_schema={"type": "object", "properties": {"timeout_seconds": {
        "type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS,
        "default": DEFAULT_WAIT_SECONDS,
        "description": f"How long to wait at most, in seconds (at most {MAX_WAIT_SECONDS:g})."}},
        "additionalProperties": False},
    hints=ToolAnnotationHints(title="Wait for news", read_only=True))


def seat_tools(context: SessionContext) -> list[SeatTool]:
    """Every tool of the seat ``context`` describes: its task actions (internal ones left out:
    the env applies them), its collaboration acts, and the looks."""
    tools = [action_tool(spec) for spec in context.action_specs if not spec.internal]
    tools += [act_tool(spec) for spec in context.collaboration_specs
              if spec.name in ACT_TOOLS and not spec.internal]
    return [*tools, OBSERVE, WAIT_FOR_NEWS]


__all__ = ["ACT_TOOLS", "DEFAULT_WAIT_SECONDS", "DESTRUCTIVE_VERBS", "MAX_WAIT_SECONDS",
           "OBSERVE", "WAIT_FOR_NEWS", "SeatTool", "ToolAnnotationHints", "act_tool",
           "action_tool", "input_schema", "is_destructive", "seat_tools"]
