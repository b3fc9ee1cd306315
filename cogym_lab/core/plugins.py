"""The entry points installed packages declare, read once and kept until the installation changes.

``importlib.metadata.entry_points()`` reads the metadata of every installed distribution from
disk each time: some 10 ms here, which a batch paid several times for every session it built.
The answer is kept, keyed on ``sys.path`` and the modification times of its folders: installing
or removing a package changes its folder, and prepending a folder changes ``sys.path``, so
either reads the metadata again.
"""

from __future__ import annotations

import os
import sys
import threading
from importlib.metadata import EntryPoint, entry_points

__all__ = ["installed_entry_points"]

_lock = threading.Lock()
_cache: dict[str, tuple[tuple[object, ...], tuple[EntryPoint, ...]]] = {}


def _installation_state() -> tuple[object, ...]:
    """What changes when a package is installed or removed, or a folder put on ``sys.path``."""
    state: list[object] = []
    for folder in sys.path:
        try:
            state.append((folder, os.stat(folder or ".").st_mtime_ns))
        except OSError:
            state.append((folder, None))
    return tuple(state)


def installed_entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The entry points in ``group`` (as ``entry_points(group=group)``), from the cache while
    nothing was installed or removed since they were read."""
    state = _installation_state()
    with _lock:
        cached = _cache.get(group)
        if cached is not None and cached[0] == state:
            return cached[1]
    points = tuple(entry_points(group=group))
    with _lock:
        _cache[group] = (state, points)
    return points
