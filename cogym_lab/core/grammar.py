"""The action-string grammar ``NAME(param=value, ...)``.

The canonical form writes every value as a JSON literal, so parsing is exact whatever a value
holds (commas, parentheses, quotes, newlines, ``other=`` text). LM output gets a lenient parser
on top: single quotes, a bare value for a single-param action, prose or a ``Thought:`` around it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

# format_action writes the canonical form this module reads; it lives beside Action, and is
# re-exported here so that the grammar's two halves are imported from one place.
from cogym_lab.core.actions import Action, ActionError, ActionSpec, format_action
from cogym_lab.core.text import clean

_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_PARAM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")
_SPACE = re.compile(r"\s*")
_ACTION_MARKER = re.compile(r"(?im)^\W*action\W*:")
_FENCE = re.compile(r"```[a-zA-Z]*")
_ANY_CALL = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\s*\(")
_DECODER = json.JSONDecoder()

RawAction = str | Mapping[str, Any] | Action

__all__ = ["RawAction", "expected_forms", "format_action", "parse_action", "parse_canonical"]


def parse_canonical(text: str) -> Action:
    """Parse the canonical form exactly. Raises :class:`ActionError` on anything else."""
    match = _NAME.match(text)
    if not match:
        raise ActionError(f"Not an action string: {text[:80]!r}. Expected NAME(param=value, ...)")
    args, end = _parse_json_args(text, match.end())
    if text[end:].strip():
        raise ActionError(f"Unexpected text after the action: {text[end:][:40]!r}")
    return Action(name=match.group(1), args=args)


def _skip_space(text: str, i: int) -> int:
    """The index of the first non-space character of ``text`` from ``i`` on."""
    space = _SPACE.match(text, i)
    assert space is not None  # ``\s*`` matches anywhere, if only the empty string
    return space.end()


def _parse_json_args(text: str, i: int) -> tuple[dict[str, Any], int]:
    args: dict[str, Any] = {}
    i = _skip_space(text, i)
    if text.startswith(")", i):
        return args, i + 1
    while True:
        param = _PARAM.match(text, i)
        if not param:
            raise ActionError(f"Expected param=value at {text[i:i + 40]!r}")
        name = param.group(1)
        if name in args:
            raise ActionError(f"Param '{name}' is given twice")
        try:
            args[name], i = _DECODER.raw_decode(text, param.end())
        except json.JSONDecodeError as error:
            raise ActionError(f"Value of '{name}' is not a JSON literal: {error.msg}") from None
        i = _skip_space(text, i)
        if text.startswith(")", i):
            return args, i + 1
        if not text.startswith(",", i):
            raise ActionError(f"Expected ',' or ')' after '{name}' at {text[i:i + 40]!r}")
        i += 1


def parse_action(raw: RawAction, specs: Mapping[str, ActionSpec]) -> tuple[Action, ActionSpec]:
    """Turn a string, a ``{name, args}`` mapping or an :class:`Action` into a checked action.

    Canonical strings are parsed exactly; anything else gets the lenient LM parser. The result's
    args are bound to the spec (defaults filled, types coerced) and follow the text policy
    (``cogym_lab.core.text``): parsing decodes JSON escapes, and ``"\\ud83d"`` decodes to a
    lone surrogate, so the values are cleaned here, where they are made. Raises
    :class:`ActionError` with the expected form on failure, and never any other exception.
    """
    try:
        return _parse_and_bind(raw, specs)
    except ActionError:
        raise
    except (ValueError, TypeError, RecursionError) as error:  # deep nesting, huge ints, bad keys
        raise ActionError(f"Could not read the action ({type(error).__name__}). "
                          f"{expected_forms(specs)}") from None


def _parse_and_bind(raw: RawAction, specs: Mapping[str, ActionSpec]) -> tuple[Action, ActionSpec]:
    if isinstance(raw, Action):
        action = raw
    elif isinstance(raw, Mapping):
        action = _from_mapping(raw)
    elif isinstance(raw, str):
        action = _parse_text(raw, specs)
    else:
        raise ActionError(f"An action must be a string or {{name, args}}, not {type(raw).__name__}")
    spec = specs.get(action.name)
    if spec is None:
        raise ActionError(f"Unknown action {action.name!r}. {expected_forms(specs)}")
    _check_depth(action.args)
    return Action(name=action.name, args=clean(spec.bind(dict(action.args)))), spec


#: How deep an action's args may nest. Checked, not left to Python's recursion limit, which
#: another part of the process may have raised.
MAX_ARG_DEPTH = 64


def _check_depth(value: Any) -> None:
    """Refuse args nested deeper than :data:`MAX_ARG_DEPTH` (walked without recursion)."""
    level = [value]
    for _ in range(MAX_ARG_DEPTH + 1):
        level = [child for item in level if isinstance(item, (dict, list, tuple))
                 for child in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return
    raise ActionError(f"The action's args nest more than {MAX_ARG_DEPTH} levels deep.")


def expected_forms(specs: Mapping[str, ActionSpec]) -> str:
    return "Expected one of: " + "; ".join(spec.signature() for spec in specs.values())


def _from_mapping(raw: Mapping[str, Any]) -> Action:
    name, args = raw.get("name"), raw.get("args", raw.get("arguments", {}))
    if isinstance(args, str):  # OpenAI tool calls carry arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            raise ActionError("Structured action 'args' is not valid JSON") from None
    if not isinstance(name, str) or not isinstance(args, Mapping):
        raise ActionError('A structured action must look like {"name": "NAME", "args": {...}}')
    return Action(name=name, args=dict(args))


def _parse_text(text: str, specs: Mapping[str, ActionSpec]) -> Action:
    try:
        return parse_canonical(text)
    except ActionError:
        pass
    candidate = _narrow(text)
    if candidate.startswith("{"):
        try:
            return _from_mapping(json.loads(candidate))
        except (ValueError, ActionError):
            pass
    try:
        return parse_canonical(candidate)
    except ActionError:
        pass
    known = [re.escape(name) for name in sorted(specs, key=len, reverse=True)]
    match = re.search(r"\b(" + "|".join(known) + r")\s*\(", candidate) if known else None
    if match is None:
        other = _ANY_CALL.search(candidate)
        if other:
            raise ActionError(f"Unknown action {other.group(1)!r}. {expected_forms(specs)}")
        raise ActionError(f"No action found in {text.strip()[:80]!r}. {expected_forms(specs)}")
    spec = specs[match.group(1)]
    return Action(name=spec.name, args=_lenient_args(candidate, match.end(), spec))


def _narrow(text: str) -> str:
    """Keep the part after the last ``Action:`` marker, without code fences or backticks."""
    markers = list(_ACTION_MARKER.finditer(text))
    if markers:
        text = text[markers[-1].end():]
    return _FENCE.sub("", text).strip().strip("`").strip()


def _lenient_args(text: str, start: int, spec: ActionSpec) -> dict[str, Any]:
    try:
        args, _ = _parse_loose_args(text, start, spec)
        return args
    except ActionError:
        if len(spec.params) != 1:
            raise
    # A single-param action: everything up to the last ')' is the value.
    end = text.rfind(")")
    inner = text[start:end if end >= start else len(text)].strip()
    name = spec.params[0].name
    inner = re.sub(rf"^{re.escape(name)}\s*=\s*", "", inner)
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        inner = inner[1:-1]
    return {name: inner}


def _parse_loose_args(text: str, i: int, spec: ActionSpec) -> tuple[dict[str, Any], int]:
    args: dict[str, Any] = {}
    position = 0
    i = _skip_space(text, i)
    if text.startswith(")", i):
        return args, i + 1
    while True:
        param = _PARAM.match(text, i)
        if param:
            name, i = param.group(1), param.end()
        elif position < len(spec.params):
            name = spec.params[position].name
        else:
            raise ActionError(f"Too many values for {spec.signature()}")
        position += 1
        args[name], i = _loose_value(text, i, spec)
        i = _skip_space(text, i)
        if text.startswith(")", i):
            return args, i + 1
        if not text.startswith(",", i):
            raise ActionError(f"Expected ',' or ')' at {text[i:i + 40]!r}. "
                              f"Form: {spec.signature()}")
        i = _skip_space(text, i + 1)


def _loose_value(text: str, i: int, spec: ActionSpec) -> tuple[Any, int]:
    if text.startswith("'", i):
        return _python_string(text, i)
    try:
        return _DECODER.raw_decode(text, i)
    except json.JSONDecodeError:
        pass
    # A bare word (or a Python literal such as True/None) up to the next ',' or ')'.
    end = i
    while end < len(text) and text[end] not in ",)":
        end += 1
    word = text[i:end].strip()
    if not word:
        raise ActionError(f"Missing value at {text[i:i + 40]!r}. Form: {spec.signature()}")
    try:
        return ast.literal_eval(word), end
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return word, end


def _python_string(text: str, i: int) -> tuple[str, int]:
    """A single-quoted string with backslash escapes, as an LM writes Python."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "'":
            literal = text[i:j + 1]
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                value = literal[1:-1]
            return (value if isinstance(value, str) else literal[1:-1]), j + 1
        j += 1
    raise ActionError("Unterminated quoted value")
