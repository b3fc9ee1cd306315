"""Work on a prompt's text done once per text, not once per call.

Every LM call cleans its messages (valid Unicode, :func:`cogym_lab.core.text.clean`) and the call
log cleans and redacts the whole record. An agent's prompt is mostly the history it sent last
time plus a message or two, so doing that over every string on every call makes each call cost
as much as the whole conversation so far. Strings are immutable: what was worked out for one
string object holds for as long as that object lives. :class:`StringMemo` remembers results by
the string's identity (holding the string, so its identity cannot be reused while remembered),
for strings long enough to be worth it, within a bound on the characters it keeps.

:func:`clean_messages` is :func:`~cogym_lab.core.text.clean` with that memory: the same output
for the same input, an ASCII string (which holds no surrogate) passed through without a scan.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cogym_lab.core.text import clean_text

#: Strings shorter than this are worked on again each time: a scan costs less than remembering.
MIN_REMEMBERED = 256
#: Characters a memo keeps (originals counted once): a few tens of MB at most.
MAX_CHARS = 8_000_000

K = TypeVar("K")
V = TypeVar("V")


class SizedCache(Generic[K, V]):
    """Values by key, at most ``max_chars`` characters in all (each value's size given when it
    is kept), the oldest dropped first; with ``refresh``, a value found counts as new again.

    Safe across threads: call logs are written from worker threads too.
    """

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self._max_chars = max_chars
        self._chars = 0
        self.lock = threading.Lock()
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def get(self, key: K, *, refresh: bool = False) -> V | None:
        """The value kept under ``key``, or ``None``; the caller holds :attr:`lock` to refresh."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if refresh:
            self._entries.move_to_end(key)
        return entry[0]

    def keep(self, key: K, value: V, size: int) -> None:
        with self.lock:
            if key not in self._entries:
                self._entries[key] = (value, size)
                self._chars += size
            while self._chars > self._max_chars and self._entries:
                _, (_value, dropped) = self._entries.popitem(last=False)
                self._chars -= dropped

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self.lock:
            self._entries.clear()
            self._chars = 0


class StringMemo:
    """Results of a function of one string, remembered by the string's identity."""

    def __init__(self, work: Callable[[str], str], *, max_chars: int = MAX_CHARS) -> None:
        self._work = work
        # Keyed by id(): the original is kept beside its result, so its id is not reused.
        self._kept: SizedCache[int, tuple[str, str]] = SizedCache(max_chars)

    def __call__(self, text: str) -> str:
        if len(text) < MIN_REMEMBERED:
            return self._work(text)
        entry = self._kept.get(id(text))
        if entry is not None and entry[0] is text:
            return entry[1]
        result = self._work(text)
        self._kept.keep(id(text), (text, result), len(text))
        return result

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()


def _clean_one(text: str) -> str:
    # An ASCII string holds no surrogate; isascii() reads a flag, it does not scan.
    return text if text.isascii() else clean_text(text)


_cleaned = StringMemo(_clean_one)


def clean_string(text: str) -> str:
    """:func:`~cogym_lab.core.text.clean_text` of ``text``, worked out once per string."""
    return text if text.isascii() else _cleaned(text)


def clean_messages(value: Any) -> Any:
    """:func:`~cogym_lab.core.text.clean` of ``value`` (messages, or a whole log record):
    equal output, containers copied, each long string's scan done once in its life."""
    if isinstance(value, str):
        return value if value.isascii() else _cleaned(value)
    if isinstance(value, dict):
        return {clean_messages(k): clean_messages(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_messages(item) for item in value]
    if isinstance(value, tuple):
        return tuple(clean_messages(item) for item in value)
    return value


__all__ = ["MAX_CHARS", "MIN_REMEMBERED", "StringMemo", "clean_messages", "clean_string"]
