"""The text policy: every text is valid Unicode before any state sees it.

Text reaches cogym_lab from LM replies, REST and WebSocket bodies, the panel and datasets. JSON
lets any of them carry a lone UTF-16 surrogate (``"\\ud83d"``), which Python keeps in a ``str``
but which no UTF-8 file, Redis stream or CRDT document can hold. So at every boundary:

* a surrogate pair written as two escapes (``"\\ud83d\\ude00"``) becomes the one character it
  encodes (``"😀"``);
* a lone surrogate becomes U+FFFD REPLACEMENT CHARACTER;
* everything else is kept as it is: NUL, U+2028 and U+2029, markup and any length are valid
  Unicode (the log reader splits on ``\\n`` alone, and views escape markup).

:func:`clean_text` cleans one string, :func:`clean` any JSON-like value (keys included).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: surrogate pairs joined, lone surrogates replaced by U+FFFD."""
    if _SURROGATE.search(text) is None:  # the common case costs one scan
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean(value: Any) -> Any:
    """``value`` with every string in it (dict keys too) cleaned by :func:`clean_text`; dicts,
    lists and tuples are copied, other values returned as they are."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(item) for item in value]
    if isinstance(value, tuple):
        return tuple(clean(item) for item in value)
    return value


def is_clean(text: str) -> bool:
    """Whether ``text`` holds no surrogate (it can be written as UTF-8)."""
    return _SURROGATE.search(text) is None


__all__ = ["REPLACEMENT", "clean", "clean_text", "is_clean", "string_leaves"]


def string_leaves(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (dict keys and values, items of lists, tuples and sets),
    depth first: what a search for a text in a view or a prompt must look through."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from string_leaves(key)
            yield from string_leaves(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from string_leaves(item)
