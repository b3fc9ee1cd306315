"""Generic modules know no task by name: a task declares what it needs, and the host asks it.

Everything in ``cogym_lab/`` outside ``envs/`` is searched for the shipped tasks' names and class
names, as identifiers (``cogym_lab.envs.todo``, ``TodoEnv``) and inside string literals. Comments
and docstrings are not searched: they may use a task as an example ("e.g. the todo task").
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from cogym_lab.envs.registry import available_envs, task_class
from tests.support.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "cogym_lab"
TASKS_HOME = PACKAGE / "envs"
TEXT_SUFFIXES = {".md", ".toml", ".json", ".js", ".css", ".html", ".txt", ".yaml", ".yml"}
#: Generated files that list every shipped file by path (tasks' prompt files included): a
#: record of the package, written by a command, not knowledge of a task.
GENERATED = {PACKAGE / "provenance" / "shipped_prompts.json"}
#: The ready study designs: the papers' studies as data, naming the tasks those studies used (as
#: a design a researcher writes does); `cogym-lab study check` validates them against the
#: registry, and no code reads a task's name from them.
STUDY_DESIGNS = PACKAGE / "studies" / "designs"

def _shipped_tasks() -> dict[str, str]:
    """Each task that ships in ``cogym_lab.envs``, by name, with its class's name."""
    shipped = {}
    for name in available_envs():
        factory = task_class(name)
        module = getattr(factory, "__module__", "")
        if factory is not None and module.startswith("cogym_lab.envs."):
            shipped[name] = getattr(factory, "__name__", name)
    return shipped


SHIPPED = _shipped_tasks()
IDENTIFIERS = frozenset(SHIPPED) | frozenset(SHIPPED.values())
WORDS = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(IDENTIFIERS))) + r")\b")


def _generic_files() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and not path.is_relative_to(TASKS_HOME) and path not in GENERATED \
                and not path.is_relative_to(STUDY_DESIGNS) \
                and "__pycache__" not in path.parts \
                and (path.suffix == ".py" or path.suffix in TEXT_SUFFIXES):
            yield path


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            found.add(id(node.body[0].value))
    return found


def _names_of(node: ast.AST) -> list[str]:
    """The identifiers ``node`` introduces or uses (a dotted module path split at its dots)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.alias):
        return [*node.name.split("."), *([node.asname] if node.asname else [])]
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    return []


def python_hits(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each task name used as an identifier or in a string literal."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        hits += [(line, name) for name in _names_of(node) if name in IDENTIFIERS]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            hits += [(line, match) for match in WORDS.findall(node.value)]
    return sorted(set(hits))


def text_hits(text: str) -> list[tuple[int, str]]:
    return [(number, match) for number, line in enumerate(text.splitlines(), 1)
            for match in WORDS.findall(line)]


@functools.cache
def task_name_hits() -> dict[str, list[tuple[int, str]]]:
    """Every hit outside ``envs/``, by path relative to the package."""
    hits = {}
    for path in _generic_files():
        text = path.read_text(encoding="utf-8")
        found = python_hits(text) if path.suffix == ".py" else text_hits(text)
        if found:
            hits[path.relative_to(PACKAGE).as_posix()] = found
    return hits


def test_the_shipped_tasks_are_found() -> None:
    assert {"todo", "travel_planning", "related_work", "tabular_analysis"} <= set(SHIPPED)
    assert SHIPPED["todo"] == "TodoEnv"


def test_the_search_sees_identifiers_and_strings_but_not_docstrings_or_comments() -> None:
    source = '''"""A module docstring may say e.g. the todo task."""
from cogym_lab.envs.todo import members
import cogym_lab.envs.related_work as rw
x = TodoEnv  # a comment may name travel_planning
y = "tabular_analysis" if x else f"{x} travel_planning"


def f(related_work=1):
    """So may a function's docstring: e.g. related_work."""
'''
    assert python_hits(source) == [(2, "todo"), (3, "related_work"), (4, "TodoEnv"),
                                   (5, "tabular_analysis"), (5, "travel_planning"),
                                   (8, "related_work")]
    assert text_hits('tasks = ["todo"]\n# TODO: to do, not a task\n') == [(1, "todo")]


def test_no_generic_module_names_a_task() -> None:
    hits = task_name_hits()
    report = "\n".join(f"cogym_lab/{path}:{line}: {name}" for path, found in hits.items()
                       for line, name in found)
    assert not hits, ("Generic modules name tasks; move that knowledge into the task (a class "
                      f"attribute or method the generic code asks for):\n{report}")

