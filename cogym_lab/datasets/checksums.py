"""SHA-256 checksums of a downloaded file, and of a folder unpacked from an archive.

A folder's checksum is the SHA-256 of its manifest: one line ``<sha256 of the file>  <path>``
a file, paths relative to the folder with ``/`` separators, sorted. It is what the shell gives
for the folder with::

    find . -type f | sed 's#^\\./##' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum

so a person can check a copy by hand. A folder is checked right after it is unpacked: later,
other items may be placed inside it (DiscoveryBench's answer key is), which changes its manifest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

__all__ = ["file_digest", "file_sha256", "folder_sha256", "short"]

_BLOCK = 1 << 20


def file_digest(path: Path) -> hashlib._Hash:
    """A SHA-256 fed with a file's bytes, which more bytes may follow (a resumed download)."""
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(_BLOCK):
            digest.update(block)
    return digest


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as 64 hex digits."""
    return file_digest(path).hexdigest()


def folder_sha256(folder: Path, file_hash: Callable[[Path], str] = file_sha256) -> str:
    """The SHA-256 of ``folder``'s manifest (see the module's docstring); ``file_hash`` gives
    each file's (a cached one, say)."""
    files = sorted((path.relative_to(folder).as_posix(), path)
                   for path in folder.rglob("*") if path.is_file())
    manifest = "".join(f"{file_hash(path)}  {name}\n" for name, path in files)
    return hashlib.sha256(manifest.encode("utf-8")).hexdigest()


def short(checksum: str) -> str:
    """The first 12 hex digits: enough to tell two checksums apart in a message."""
    return checksum[:12]
