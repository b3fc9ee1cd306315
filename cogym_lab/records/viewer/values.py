"""The trajectory viewer's table of values: every distinct component, state or chat value a
session went through, stored once, most of them as a small patch on the one before.

A kitchen game changes its one component on every tick, and a whole copy per tick would make a
game of thousands of ticks weigh megabytes. So each value is either whole (``{"v": value}``) or
a patch on an earlier entry (``{"b": base, "p": patch}``), and a chain of patches is cut by a
whole value every :data:`MAX_CHAIN` links so that any value decodes in a few steps.

A patch is one of (the browser module applies the same three forms, ``applyPatch``):

* ``["=", value]``: the value itself;
* ``["o", {key: patch}, [removed keys]]``: an object with those keys changed, added (at the
  end) or removed, the others as in the base;
* ``["a", length, {index: patch}]``: an array cut or grown to ``length``, those items changed
  or added, the others as in the base.

A patch is kept only when applying it gives back exactly the value (same JSON text, so ``true``
is not ``1`` and key order holds); otherwise the value is stored whole.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from cogym_lab.core.text import clean_text

#: Patches in a row before a value is stored whole again: the most links a decode follows.
MAX_CHAIN = 24

#: A patch is kept only when its JSON is at most this share of the whole value's.
PATCH_SHARE = 0.5


def dumps(value: Any) -> str:
    """The JSON text the payload holds for ``value``: compact, keys in their order, non-ASCII
    as it is. Not-a-number and infinities, which JSON has no form for, become strings."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def make_patch(old: Any, new: Any) -> list[Any]:
    """A patch that turns ``old`` into ``new`` (see the module's docstring). Unchanged parts are
    found with Python's ``==``, which takes ``1`` for ``True``; :meth:`ValueTable.add` checks the
    result and stores the value whole when that made the patch wrong."""
    if isinstance(old, dict) and isinstance(new, dict):
        order = [key for key in old if key in new] + [key for key in new if key not in old]
        if order != list(new):  # a reordered object: only a whole value keeps the order
            return ["=", new]
        changed = {key: (make_patch(old[key], value) if key in old else ["=", value])
                   for key, value in new.items() if key not in old or old[key] != value}
        return ["o", changed, [key for key in old if key not in new]]
    if isinstance(old, list) and isinstance(new, list):
        changed_items = {str(index): (make_patch(old[index], value) if index < len(old)
                                      else ["=", value])
                         for index, value in enumerate(new)
                         if index >= len(old) or old[index] != value}
        return ["a", len(new), changed_items]
    return ["=", new]


def apply_patch(base: Any, patch: list[Any]) -> Any:
    """``base`` with ``patch`` applied; ``base`` is not changed (unchanged parts are shared)."""
    kind = patch[0]
    if kind == "=":
        return patch[1]
    if kind == "o":
        changed, removed = patch[1], set(patch[2])
        result = {key: value for key, value in base.items() if key not in removed}
        for key, part in changed.items():
            result[key] = apply_patch(result[key], part) if key in result else part[1]
        return result
    if kind == "a":
        length, changed_items = patch[1], patch[2]
        items = list(base[:length])
        for index_text, part in sorted(changed_items.items(), key=lambda kv: int(kv[0])):
            index = int(index_text)
            if index < len(items):
                items[index] = apply_patch(items[index], part)
            else:
                items.append(part[1])
        return items
    raise ValueError(f"unknown patch kind {kind!r}")


class ValueTable:
    """Values stored once each: :meth:`add` gives a value's number, reusing it for a value seen
    before; :meth:`get` gives the value back. ``entries`` is what the payload carries."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._numbers: dict[bytes, int] = {}
        self._chain: list[int] = []  # links from each entry to a whole value
        self._decoded: dict[int, Any] = {}  # the latest entries, as values (bases of patches)

    def add(self, value: Any, base: int | None = None) -> int:
        """The number of ``value`` in the table, added if new: as a patch on entry ``base``
        (the value it was before) when that is small, else whole."""
        text = clean_text(dumps(value))  # a lone surrogate reads as U+FFFD, as in the browser
        digest = _digest(text)
        number = self._numbers.get(digest)
        if number is not None:
            return number
        value = json.loads(text)  # exactly what the browser will read
        entry: dict[str, Any] = {"v": value}
        chain = 0
        if base is not None and self._chain[base] < MAX_CHAIN:
            entry, chain = self._patched(value, text, base) or (entry, 0)
        number = len(self.entries)
        self.entries.append(entry)
        self._chain.append(chain)
        self._numbers[digest] = number
        self._decoded[number] = value
        return number

    def _patched(self, value: Any, text: str, base: int) -> tuple[dict[str, Any], int] | None:
        old = self.get(base)
        patch = make_patch(old, value)
        patch_text = dumps(patch)
        if len(patch_text) > PATCH_SHARE * len(text) or dumps(apply_patch(old, patch)) != text:
            return None
        return {"b": base, "p": patch}, self._chain[base] + 1

    def get(self, number: int) -> Any:
        """Entry ``number`` as a value."""
        if number in self._decoded:
            return self._decoded[number]
        entry = self.entries[number]
        value = entry["v"] if "v" in entry else apply_patch(self.get(entry["b"]), entry["p"])
        self._decoded[number] = value
        return value

    def forget_decoded(self, keep: set[int]) -> None:
        """Drop the decoded copies of every entry but ``keep`` (the bases still in use), so a
        long game holds one decoded value per component, not one per tick."""
        self._decoded = {number: value for number, value in self._decoded.items()
                         if number in keep}


def decode_entries(entries: list[dict[str, Any]]) -> list[Any]:
    """Every entry of a payload's table as a value (for tests and small sessions)."""
    values: list[Any] = []
    for entry in entries:
        values.append(entry["v"] if "v" in entry else apply_patch(values[entry["b"]],
                                                                   entry["p"]))
    return values
