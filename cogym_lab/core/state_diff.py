"""Where two states, as plain data, first differ: for replay checks and the env checker.

A state is what :meth:`Coordinator.snapshot` or a view dump gives: dicts, lists, strings,
numbers. :func:`first_difference` walks both in order and names the first place they part, as a
path a person can follow (``views.agent.components[0 "checklist"].content[2].text``), with the
value on each side. :func:`differences` names every such place, for a reader who wants the
whole change an event made (the trajectory viewer).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOWN = 160  # characters of a value shown in a message


class _Missing:
    """Marks a key or an item that one side does not have."""

    def __repr__(self) -> str:
        return "(missing)"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Difference:
    """The first place two states part: its path and the value on each side."""

    path: str
    expected: Any
    actual: Any

    def describe(self, expected: str = "expected", actual: str = "actual") -> str:
        """One line: ``at <path>: <expected> <value> vs <actual> <value>``."""
        return (f"at {self.path or '(the whole state)'}: {expected} {show(self.expected)} vs "
                f"{actual} {show(self.actual)}")


def first_difference(expected: Any, actual: Any, path: str = "") -> Difference | None:
    """The first place where ``actual`` differs from ``expected``, or ``None`` if they are equal.

    Dicts are walked in ``expected``'s key order (then the keys only ``actual`` has), lists item
    by item. Values are equal as JSON would tell them: ``True`` is not ``1``, NaN equals NaN.
    """
    return next(differences(expected, actual, path), None)


def differences(expected: Any, actual: Any, path: str = "") -> Iterator[Difference]:
    """Every place where ``actual`` differs from ``expected``, in the order
    :func:`first_difference` walks them (it is this walk's first). A value one side lacks is
    one difference, not one per item inside it. Lazy: stop reading to stop walking."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        keys = [*expected, *(key for key in actual if key not in expected)]
        for key in keys:
            yield from differences(expected.get(key, MISSING), actual.get(key, MISSING),
                                   _key_path(path, key))
        return
    if _is_sequence(expected) and _is_sequence(actual):
        for index in range(max(len(expected), len(actual))):
            left = expected[index] if index < len(expected) else MISSING
            right = actual[index] if index < len(actual) else MISSING
            yield from differences(left, right, _index_path(path, index, left, right))
        return
    if not _same(expected, actual):
        yield Difference(path, expected, actual)


def show(value: Any) -> str:
    """``value`` for a message: as JSON, cut to a readable length."""
    if value is MISSING:
        return "(missing)"
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except ValueError:  # a cycle: say what it is rather than fail to say anything
        text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):  # JSON tells true from 1
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str) and _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False, default=repr)}]"


def _index_path(path: str, index: int, left: Any, right: Any) -> str:
    """``path[index]``, with the item's name when it has one (a component's), so that a reader
    need not count components."""
    named = left if isinstance(left, Mapping) else right
    name = named.get("name") if isinstance(named, Mapping) else None
    label = f' "{name}"' if isinstance(name, str) else ""
    return f"{path}[{index}{label}]"
