"""Action specs: what a member may do, with typed params; JSON for agents, text for prompts."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cogym_lab.errors import CogymError

ParamType = Literal["string", "integer", "number", "boolean", "array", "object", "any"]

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}

_PLACEHOLDERS: dict[str, str] = {
    "string": '"..."',
    "integer": "0",
    "number": "0.0",
    "boolean": "true",
    "array": "[...]",
    "object": "{...}",
    "any": "...",
}


class ActionError(CogymError, ValueError):
    """An action that cannot be taken. The message says what was expected."""


class ParamSpec(BaseModel):
    """One named, typed parameter of an action."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    type: ParamType = "string"
    description: str = ""
    required: bool = True
    default: Any = None

    def coerce(self, value: Any, action: str) -> Any:
        """Return ``value`` as this param's type, converting obvious LM slips (``"3"`` → 3)."""
        if self.type == "any" or (value is None and not self.required):
            return value
        accepted = _PYTHON_TYPES[self.type]
        # bool is an int in Python; never let True pass as an integer or a number.
        if isinstance(value, accepted) and not (isinstance(value, bool) and self.type != "boolean"):
            return float(value) if self.type == "number" and isinstance(value, int) else value
        converted = _convert(value, self.type)
        if converted is _FAILED:
            raise ActionError(
                f"{action}: param '{self.name}' must be {self.type}, got {json.dumps(value)[:80]}."
            )
        return converted


_FAILED = object()


def _convert(value: Any, type_: str) -> Any:
    if value is None:  # null is never a value of a required param
        return _FAILED
    if type_ == "string":
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not isinstance(value, str):
        return _FAILED
    text = value.strip()
    try:
        if type_ == "integer":
            return int(text)
        if type_ == "number":
            return float(text)
        if type_ == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if type_ in ("array", "object"):
            parsed = json.loads(text)
            return parsed if isinstance(parsed, _PYTHON_TYPES[type_]) else _FAILED
    except ValueError:
        return _FAILED
    return _FAILED


class ItemPick(BaseModel):
    """An action that takes an item of a component by its id (a paper from search results):
    the panel puts a button named ``label`` on each item of ``component`` that has an ``id``,
    which sends the action with that id as its first param."""

    model_config = ConfigDict(frozen=True)

    component: str
    label: str


class ActionSpec(BaseModel):
    """An action's name, params, description, and whether its effect is private to the actor."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    description: str
    params: tuple[ParamSpec, ...] = ()
    private: bool = False
    internal: bool = False  # applied only as the result of deferred work, never sent by a member
    # The component whose whole text this action's ``text`` param replaces (an editor). Such an
    # action sent on a stale copy is merged with the concurrent edits instead of erasing them.
    replaces: str | None = None
    picks: ItemPick | None = None  # offered on each item of a component (see ItemPick)
    # The component this action fills with its results (a search): the panel shows a search
    # box for the action with that component, where Enter runs it.
    searches: str | None = None

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def signature(self) -> str:
        """The expected form, e.g. ``ADD_ITEM(text="...")``."""
        args = ", ".join(f"{p.name}={_PLACEHOLDERS[p.type]}" for p in self.params)
        return f"{self.name}({args})"

    def to_text(self) -> str:
        """A readable line for prompts: the form, what it does, and each param."""
        lines = [f"{self.signature()}: {self.description}" + (" (private)" if self.private else "")]
        for p in self.params:
            optional = "" if p.required else f", optional, default {json.dumps(p.default)}"
            lines.append(f"    - {p.name} ({p.type}{optional}): {p.description}".rstrip(": "))
        return "\n".join(lines)

    def to_json_schema(self) -> dict[str, Any]:
        """A function-calling style schema: ``{name, description, parameters}``."""
        properties = {
            p.name: {"description": p.description}
            | ({} if p.type == "any" else {"type": p.type})
            for p in self.params
        }
        required = [p.name for p in self.params if p.required]
        return {
            "name": self.name,
            "description": self.description,
            "private": self.private,
            "parameters": {"type": "object", "properties": properties, "required": required},
        }

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check ``args`` against the params: no unknown names, none missing, right types."""
        unknown = [name for name in args if self.param(name) is None]
        if unknown:
            raise ActionError(
                f"{self.name} has no param {', '.join(map(repr, unknown))}. "
                f"Expected form: {self.signature()}"
            )
        bound: dict[str, Any] = {}
        for p in self.params:
            if p.name in args:
                try:
                    bound[p.name] = p.coerce(args[p.name], self.name)
                except ActionError as error:
                    raise ActionError(f"{error} Expected form: {self.signature()}") from None
            elif p.required:
                raise ActionError(
                    f"{self.name} is missing param '{p.name}'. Expected form: {self.signature()}"
                )
            else:
                bound[p.name] = p.default
        return bound


class Action(BaseModel):
    """A concrete action: a name and its arguments. The structured form UIs may send."""

    model_config = ConfigDict(frozen=True)

    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    def __str__(self) -> str:
        return format_action(self)


def format_action(action: Action, spec: ActionSpec | None = None) -> str:
    """The canonical string ``NAME(param=value, ...)``: values as JSON literals, params in spec
    order when a spec is given. It lives beside :class:`Action` (``Action.__str__`` needs it);
    :mod:`cogym_lab.core.grammar`, which reads this form back, re-exports it."""
    names = [p.name for p in spec.params if p.name in action.args] if spec else []
    names += [name for name in action.args if name not in names]
    if spec:  # leave out optional params left at their default: shorter, and parses the same
        names = [n for n in names if not ((p := spec.param(n)) and not p.required
                                          and _same_json(action.args[n], p.default))]
    args = ", ".join(f"{n}={json.dumps(action.args[n], ensure_ascii=False)}" for n in names)
    return f"{action.name}({args})"


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text: unlike ``==``, tells False from 0 and 0 from 0.0."""
    try:
        return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)
    except (TypeError, ValueError):
        return a is b


def describe_actions(specs: list[ActionSpec]) -> str:
    """All specs as prompt text, one block per action."""
    return "\n".join(spec.to_text() for spec in specs)
