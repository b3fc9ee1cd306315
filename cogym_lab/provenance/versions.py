"""Versions of the code and prompts that decide a score: short hashes, computed once per process.

A *version* is the first 12 hex digits of a SHA-256 over named sources, each fed as its name and
its bytes. A source is a module (``cogym_lab.envs.todo.env``: its ``.py`` file; a task defined in
a script: the script's file) or a prompt file of a package
(``cogym_lab.users:prompts/answer.md``). The same sources give the same version on
any machine; a changed byte in any of them gives another.

* A task's **grader** is the task package's ``grader`` module (the env's own module when the task
  has none) and every module of the task's package it imports, directly or not, plus the
  prompts its LM judge reads (:attr:`~cogym_lab.core.env.CoEnv.judge_prompts`).
* The evaluation suite's **judges** (``cogym-lab eval report --judge``) are
  :mod:`cogym_lab.eval.judging`'s code with each judge's prompts (:data:`REPORT_JUDGES`).
* The **simulated user's prompts** are every file in ``cogym_lab/users/prompts/``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import sys
from importlib.resources import files
from pathlib import Path

from cogym_lab.envs.registry import task_class

__all__ = ["REPORT_JUDGES", "USER_PROMPTS", "grader_sources", "grader_version",
           "judge_versions", "prompt_folder_sources", "source_version", "user_prompt_version"]

VERSION_DIGITS = 12
_JUDGING = "cogym_lab.eval.judging"
_JUDGE_CODE = (f"{_JUDGING}.judges", f"{_JUDGING}.labels", f"{_JUDGING}:prompts/judge_system.md",
               f"{_JUDGING}:prompts/retry.md")
#: The evaluation suite's LM judges, each with the sources its verdicts depend on.
REPORT_JUDGES: dict[str, tuple[str, ...]] = {
    "messages": (*_JUDGE_CODE, f"{_JUDGING}:prompts/messages.md"),
    "pairwise": (*_JUDGE_CODE, f"{_JUDGING}:prompts/pairwise.md"),
    "progress": (*_JUDGE_CODE, f"{_JUDGING}:prompts/progress.md"),
    "failures": (*_JUDGE_CODE, f"{_JUDGING}.failures", f"{_JUDGING}:prompts/failures.md"),
    "failure_taxonomy": (*_JUDGE_CODE, f"{_JUDGING}.failure_taxonomy",
                         f"{_JUDGING}:prompts/failure_taxonomy.md"),
    "user_audit": (*_JUDGE_CODE, f"{_JUDGING}:prompts/user_audit.md"),
    "simulator_validation": (*_JUDGE_CODE, f"{_JUDGING}:prompts/simulator_validation.md"),
}
#: The package whose prompts the simulated user reads.
USER_PROMPTS = "cogym_lab.users"


def _source_bytes(source: str) -> bytes:
    """The bytes of one source (see the module's docstring); ``b""`` for one that is gone, so a
    removed prompt changes the version instead of failing the session."""
    package, colon, resource = source.partition(":")
    if colon:
        path = files(package).joinpath(resource)
        return path.read_bytes() if path.is_file() else b""
    origin = _source_file(source)
    return origin.read_bytes() if origin is not None else b""


def _source_file(module: str) -> Path | None:
    """The file ``module`` was (or would be) loaded from, or ``None``. A script's own module
    (``__main__``, where a task class may be defined) has no spec to find: its file is read
    from the running module instead."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # ValueError: a module without a spec, e.g. __main__
        loaded = getattr(sys.modules.get(module), "__file__", None)
        return Path(loaded) if isinstance(loaded, str) and Path(loaded).is_file() else None
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        return None
    return Path(spec.origin)


@functools.cache
def source_version(sources: tuple[str, ...]) -> str:
    """The version of ``sources``: deterministic, order included, cached for the process."""
    digest = hashlib.sha256()
    for source in sources:
        data = _source_bytes(source)
        digest.update(f"{source}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:VERSION_DIGITS]


def prompt_folder_sources(package: str) -> tuple[str, ...]:
    """Every prompt file of ``package`` (``prompts/*.md``), by name, as sources."""
    folder = files(package).joinpath("prompts")
    if not folder.is_dir():
        return ()
    return tuple(f"{package}:prompts/{entry.name}" for entry in
                 sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".md"))


@functools.cache
def user_prompt_version() -> str:
    """The version of the simulated user's prompts."""
    return source_version(prompt_folder_sources(USER_PROMPTS))


def _imported_modules(module: str, package: str) -> list[str]:
    """The modules of ``package`` that ``module``'s source imports (at any depth of its code)."""
    origin = _source_file(module)
    if origin is None or origin.suffix != ".py":
        return []
    tree = ast.parse(origin.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if (name == package or name.startswith(package + ".")) and _module_exists(name):
                found.append(name)
    return found


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a class imported from a module is not one
        return name in sys.modules and _source_file(name) is not None


@functools.cache
def grader_sources(task: str) -> tuple[str, ...]:
    """The sources of ``task``'s grader (see the module's docstring), sorted; empty for a task
    this installation does not have."""
    factory = task_class(task)
    if factory is None:
        return ()
    module = factory.__module__
    package = module.rpartition(".")[0] or module
    root = f"{package}.grader" if _module_exists(f"{package}.grader") else module
    seen: set[str] = set()
    pending = [root]
    while pending:  # the task package's modules the grader reaches
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending.extend(m for m in _imported_modules(name, package) if m not in seen)
    prompts = {f"{package}:prompts/{name}" for name in getattr(factory, "judge_prompts", ())}
    return tuple(sorted(seen | prompts))


def grader_version(task: str) -> str | None:
    """The version of ``task``'s grader; ``None`` for a task this installation lacks."""
    sources = grader_sources(task)
    return source_version(sources) if sources else None


def judge_versions() -> dict[str, str]:
    """The version of each of the evaluation suite's LM judges, by name."""
    return {name: source_version(sources) for name, sources in REPORT_JUDGES.items()}
