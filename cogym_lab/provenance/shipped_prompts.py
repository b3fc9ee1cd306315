"""Whether the prompts in use are the ones this version of cogym_lab ships.

``shipped_prompts.json`` (beside this module) holds the SHA-256 of every prompt file of the
package (each ``prompts/*.md``, by its path inside the package) as released. A prompt edited in
an installed or cloned copy, added or removed, shows up in :func:`prompt_differences`, and makes
a session's and a run's prompts ``custom``. Whoever changes a prompt in the repository writes
the file again::

    python -m cogym_lab.provenance.shipped_prompts
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from cogym_lab.datasets.checksums import file_sha256

__all__ = ["MANIFEST", "current_prompts", "prompt_differences", "shipped_prompts",
           "write_manifest"]

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).with_name("shipped_prompts.json")


def current_prompts(root: Path = PACKAGE_ROOT) -> dict[str, str]:
    """The SHA-256 of every prompt file under ``root`` now, by its path relative to it."""
    return {path.relative_to(root).as_posix(): file_sha256(path)
            for path in sorted(root.rglob("prompts/*.md")) if path.is_file()}


def shipped_prompts() -> dict[str, str]:
    """The prompts as shipped (``shipped_prompts.json``); empty when the file is missing."""
    try:
        data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(name): str(checksum) for name, checksum in data.items()}


@functools.cache
def prompt_differences() -> tuple[str, ...]:
    """How the prompts in use differ from the shipped ones, one sentence each (none: the
    shipped prompts). Computed once per process."""
    shipped, now = shipped_prompts(), current_prompts()
    if not shipped:
        return ("the list of shipped prompts (shipped_prompts.json) is missing",)
    differences = [f"{name} differs from the shipped prompt" for name in sorted(now)
                   if name in shipped and now[name] != shipped[name]]
    differences += [f"{name} is not a shipped prompt" for name in sorted(set(now) - set(shipped))]
    differences += [f"{name} is missing" for name in sorted(set(shipped) - set(now))]
    return tuple(differences)


def write_manifest(path: Path = MANIFEST) -> Path:
    """Write the prompts as they are now as the shipped ones."""
    path.write_text(json.dumps(current_prompts(), indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write_manifest()}")
