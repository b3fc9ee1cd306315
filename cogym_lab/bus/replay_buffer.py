"""A publisher's copy of what it last published to one channel, bounded by count and by bytes.

A Redis bus re-adds these messages after the server restarted without persistence (see
:mod:`cogym_lab.bus.redis`). A count alone does not bound memory: a step channel carrying a
person's whole-text edits of a 100 KB document held 1,024 of them, some 100 MB per session.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator


class ReplayBuffer:
    """The newest messages of one channel as ``(mid, data)`` pairs, oldest first.

    It keeps at most ``count`` messages and, beyond the newest one (always kept, however large,
    so the last message is never without its copy), at most ``max_bytes`` bytes of ``data``.
    """

    __slots__ = ("_entries", "count", "max_bytes", "size")

    def __init__(self, count: int, max_bytes: int) -> None:
        self.count = count
        self.max_bytes = max_bytes
        self.size = 0  # bytes of data held
        self._entries: deque[tuple[str, bytes]] = deque()

    def append(self, mid: str, data: bytes) -> None:
        if self.count <= 0:  # re-publishing is off
            return
        self._entries.append((mid, data))
        self.size += len(data)
        while len(self._entries) > 1 and (len(self._entries) > self.count
                                          or self.size > self.max_bytes):
            self.size -= len(self._entries.popleft()[1])

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        return iter(list(self._entries))  # a copy: re-publishing awaits between entries

    def __len__(self) -> int:
        return len(self._entries)
