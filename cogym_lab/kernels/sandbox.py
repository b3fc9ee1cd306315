"""What a task's private kernel is told about the machine: nothing that leads to hidden data.

The task data holds what the agent must not read (e.g. gold answers, or what only the simulated
user may know). A kernel inherits its parent's environment and starts in a folder of the
parent's choosing, so without care a cell could follow ``COGYM_DATA``, ``~/.cache`` or
``$TMPDIR`` to those files. A :class:`KernelSandbox` gives the kernel instead

* a private root folder (mode 0700) holding a fresh, empty ``home/`` (``HOME``) and ``tmp/``
  (``TMPDIR``, ``TEMP``, ``TMP``), so ``~``, ``~/.cache`` and ``tempfile`` lead nowhere;
* an environment built from :data:`KEPT_VARIABLES` only (locale, ``PATH``, Python's and the
  numeric libraries' settings): ``COGYM_*``, ``XDG_*``, API keys and everything else stay
  behind. A kept value, or one entry of a kept path list, is dropped when it names a hidden
  location: the data directory in use, the folder ``COGYM_DATA`` names, the project's data
  cache, or any folder the caller adds; "names" means it contains the location's text, or
  resolves to it, into it, or to a folder that holds it.

The working directory is the caller's to keep clean: a task copies the instance's data files
alone into ``<root>/work`` (e.g. the tabular task does), so the kernel's folder, its parent, its
home and its temp folder hold nothing else. This does not hide the whole file system, nor other
processes' environments: on Linux the executor also confines the kernel
(:mod:`cogym_lab.kernels.confine`: no other process visible, the hidden folders covered), and
``docs/tabular-scoring.md`` says what the tabular task's kernel can still reach.
"""

from __future__ import annotations

import os
import shutil
import site
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cogym_lab.datasets import DATA_ENV_VAR, cache_root, data_dir

__all__ = ["KEPT_PREFIXES", "KEPT_VARIABLES", "KernelSandbox", "hidden_locations",
           "kernel_environment"]

#: The parent's variables a kernel may inherit (others are dropped whatever their value).
KEPT_VARIABLES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONNOUSERSITE",
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "VIRTUAL_ENV", "CONDA_PREFIX",
    "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT",  # Windows cannot start Python without them
})
KEPT_PREFIXES = ("LC_",)
#: Kept variables that list folders: filtered entry by entry rather than dropped whole.
PATH_LISTS = frozenset({"PATH", "PYTHONPATH", "LD_LIBRARY_PATH"})


def hidden_locations(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """The folders a kernel must not be pointed at: the data directory in use, the one
    ``COGYM_DATA`` names, cogym_lab's cache, and ``extra``; each as given and resolved."""
    candidates = [data_dir(), cache_root(), *map(Path, extra)]
    if os.environ.get(DATA_ENV_VAR, "").strip():
        candidates.append(Path(os.environ[DATA_ENV_VAR].strip()).expanduser())
    found: dict[Path, None] = {}
    for path in candidates:
        absolute = Path(os.path.abspath(path))
        found[absolute] = None
        found[absolute.resolve()] = None
    return list(found)


def _names_a_location(value: str, hidden: list[Path]) -> bool:
    """Whether ``value`` leads to a hidden folder (see the module docstring)."""
    if any(str(location) in value for location in hidden):
        return True
    if not value.strip() or not os.path.isabs(value.strip()):
        return False
    target = Path(value.strip()).resolve()
    return any(target.is_relative_to(location) or location.is_relative_to(target)
               for location in hidden)


def kernel_environment(base: Mapping[str, str], hidden: list[Path]) -> dict[str, str]:
    """The kept part of ``base`` (see :data:`KEPT_VARIABLES`), with values that name a hidden
    folder removed. Home and temp folders are the caller's to add."""
    kept: dict[str, str] = {}
    for name, value in base.items():
        if name not in KEPT_VARIABLES and not name.startswith(KEPT_PREFIXES):
            continue
        if name in PATH_LISTS:
            entries = [entry for entry in value.split(os.pathsep)
                       if entry and not _names_a_location(entry, hidden)]
            if entries:
                kept[name] = os.pathsep.join(entries)
        elif not _names_a_location(value, hidden):
            kept[name] = value
    return kept


@dataclass
class KernelSandbox:
    """A private home and temp folder for one kernel, and the environment that points at them."""

    root: Path
    home: Path
    tmp: Path
    owns_root: bool  # made by create(): removed whole by remove()

    @classmethod
    def create(cls, root: str | os.PathLike[str] | None = None) -> KernelSandbox:
        """Make ``home/`` and ``tmp/`` (mode 0700) in ``root``, or in a fresh private temporary
        folder when ``root`` is None."""
        owns_root = root is None
        folder = Path(tempfile.mkdtemp(prefix="cogym-kernel-")) if root is None else Path(root)
        folder.mkdir(parents=True, exist_ok=True)
        home, tmp = folder / "home", folder / "tmp"
        for private in (home, tmp):
            private.mkdir(mode=0o700, exist_ok=True)
        return cls(root=folder.resolve(), home=home.resolve(), tmp=tmp.resolve(),
                   owns_root=owns_root)

    def environment(self, base: Mapping[str, str] | None = None,
                    hidden: Iterable[str | os.PathLike[str]] = ()) -> dict[str, str]:
        """The kernel's environment: the kept part of ``base`` (``os.environ`` by default)
        without hidden folders (:func:`hidden_locations` plus ``hidden``), and this sandbox's
        home and temp folders."""
        locations = hidden_locations(hidden)
        env = kernel_environment(os.environ if base is None else base, locations)
        env.update({"HOME": str(self.home), "TMPDIR": str(self.tmp), "TEMP": str(self.tmp),
                    "TMP": str(self.tmp)})
        if os.name == "nt":  # Windows finds the home folder here, not in HOME
            env["USERPROFILE"] = str(self.home)
        user_base = site.getuserbase()
        # Packages installed with ``pip install --user`` live under the real home: keep them
        # importable, unless that folder is itself a hidden one.
        if site.ENABLE_USER_SITE and Path(user_base).is_dir() \
                and not _names_a_location(user_base, locations):
            env["PYTHONUSERBASE"] = user_base
        return env

    def remove(self) -> None:
        """Delete what create() made. Never raises."""
        for folder in ([self.root] if self.owns_root else [self.home, self.tmp]):
            shutil.rmtree(folder, ignore_errors=True)
