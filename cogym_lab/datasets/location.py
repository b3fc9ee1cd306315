"""Which folder is the data directory (:func:`data_dir`), and cogym_lab's cache folder."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CHOOSE_ANOTHER_DIR", "DATA_ENV_VAR", "cache_root", "data_dir", "data_dir_origin",
           "reading_from"]

DATA_ENV_VAR = "COGYM_DATA"
#: How a missing-data message ends when it is read at a command line: the ways to choose
#: another data directory there. Messages for a notebook end differently (``missing_message``).
CHOOSE_ANOTHER_DIR = (f"Choose another data directory with --data-dir or the {DATA_ENV_VAR} "
                      "environment variable.")


def cache_root() -> Path:
    """cogym_lab's user cache folder: ``$XDG_CACHE_HOME/cogym_lab``, else
    ``~/.cache/cogym_lab``. The data directory defaults to its ``datasets/``; indexes live
    beside it."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "cogym_lab"


def _cache_dir() -> Path:
    return cache_root() / "datasets"


#: The data directory of the session being built here, if its spec names one (see
#: :func:`reading_from`). A context variable, so that two sessions built by one server (one
#: event loop, several requests) never see each other's folder.
_SESSION_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "cogym_session_data_dir", default=None)


@contextlib.contextmanager
def reading_from(folder: str | Path | None) -> Iterator[None]:
    """Within the block, :func:`data_dir` without an argument is ``folder`` (unless it is
    ``None``): for code that builds one session's env, whose loaders look the data directory up
    themselves (a task's list of instances)."""
    if folder is None or not str(folder).strip():
        yield
        return
    token = _SESSION_DIR.set(Path(folder).expanduser())
    try:
        yield
    finally:
        _SESSION_DIR.reset(token)


def data_dir_origin(explicit: str | Path | None = None) -> str:
    """Which rule :func:`data_dir` follows: ``"argument"``, ``"session"`` (inside
    :func:`reading_from`), ``"COGYM_DATA"`` or ``"cache"``."""
    if explicit is not None and str(explicit).strip():
        return "argument"
    if _SESSION_DIR.get() is not None:
        return "session"
    if os.environ.get(DATA_ENV_VAR, "").strip():
        return DATA_ENV_VAR
    return "cache"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data directory: ``explicit``, else the session's (:func:`reading_from`), else
    ``$COGYM_DATA``, else the user cache directory.

    The path is returned absolute; it need not exist."""
    origin = data_dir_origin(explicit)
    session_dir = _SESSION_DIR.get()
    if origin == "argument":
        path = Path(explicit).expanduser()  # type: ignore[arg-type]
    elif origin == "session" and session_dir is not None:
        path = session_dir
    elif origin == DATA_ENV_VAR:
        path = Path(os.environ[DATA_ENV_VAR].strip()).expanduser()
    else:
        path = _cache_dir()
    return path.resolve()




