"""A session folder's way from a worker to the run folder.

A worker runs each session in a scratch folder of its own, then sends back the folder's content
as ``{relative path: bytes}`` (:func:`pack_folder`). The driver writes it into
``OUT/.incoming/<name>-<attempt>/`` and renames that folder to ``OUT/<name>`` in one step
(:func:`place_session`): a run folder holds a session whole, or not at all, whenever the driver
is killed. Where the workers see the run folder themselves (a shared file system), they write
the incoming folder there directly and the driver only renames it.

``.incoming`` is a hidden folder, so the report never reads it as sessions; what a killed driver
left there is removed when the next invocation starts (:func:`clear_incoming`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from cogym_lab.eval.batch.sessions import clear_partial

INCOMING_DIR = ".incoming"
Files = dict[str, bytes]


def attempt_name(name: str) -> str:
    """The incoming folder of one attempt at session ``name``: ``003-1f2e3d4c``."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def pack_folder(directory: Path) -> Files:
    """Every file under ``directory``, by its path relative to it (``/``-separated)."""
    files: Files = {}
    if not directory.is_dir():
        return files
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[path.relative_to(directory).as_posix()] = path.read_bytes()
    return files


def _checked(relative: str) -> PurePosixPath:
    path = PurePosixPath(relative)
    if path.is_absolute() or not path.parts or ".." in path.parts:
        raise ValueError(f"a session's file must lie inside its folder, not at {relative!r}")
    return path


def write_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (from :func:`pack_folder`) under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for relative, data in files.items():
        target = folder.joinpath(*_checked(relative).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def incoming_folder(run_dir: Path, attempt: str) -> Path:
    """Where attempt ``attempt`` is written before it takes its place."""
    return run_dir / INCOMING_DIR / _checked(attempt).name


def place_session(run_dir: Path, name: str, incoming: Path) -> Path:
    """Make ``incoming`` the run's session ``name``, replacing whatever an earlier, unfinished
    attempt left there; the session's folder."""
    target = run_dir / _checked(name).name
    clear_partial(target)
    os.replace(incoming, target)
    return target


def receive_session(run_dir: Path, name: str, files: Mapping[str, bytes]) -> Path:
    """Write a session's shipped ``files`` as the run's session ``name``, atomically."""
    incoming = incoming_folder(run_dir, attempt_name(name))
    try:
        write_files(incoming, files)
    except BaseException:
        shutil.rmtree(incoming, ignore_errors=True)
        raise
    return place_session(run_dir, name, incoming)


def discard_incoming(run_dir: Path, attempt: str) -> None:
    """Remove an attempt that will not be used (its session was written already)."""
    shutil.rmtree(incoming_folder(run_dir, attempt), ignore_errors=True)


def clear_incoming(run_dir: Path) -> None:
    """Remove what attempts of an earlier invocation left half-written."""
    shutil.rmtree(run_dir / INCOMING_DIR, ignore_errors=True)


__all__ = ["INCOMING_DIR", "Files", "attempt_name", "clear_incoming", "discard_incoming",
           "incoming_folder", "pack_folder", "place_session", "receive_session", "write_files"]
