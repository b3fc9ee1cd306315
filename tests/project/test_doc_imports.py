"""Every import of cogym_lab the docs show works: in their Python blocks and in their prose.

A doc that promises ``from cogym_lab import ActionError`` must not fail on the reader's first
line; this runs each such import on its own, so it is caught even in a block that does not run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
#: An import in a code span of the prose: `from cogym_lab.core.actions import ItemPick`.
#: A notebook line that is not Python: a magic (``%load_ext cogym_lab``) or a shell command.
NOTEBOOK_ONLY = re.compile(r"^(\s*)[%!].*$", re.MULTILINE)
PROSE_IMPORT = re.compile(r"`((?:from cogym_lab[\w.]* import [\w, ]+)|(?:import cogym_lab[\w.]*))`")


def imports_of(doc: Path) -> list[str]:
    """Each cogym_lab import statement ``doc`` shows, as source, in order."""
    text = doc.read_text(encoding="utf-8")
    found = []
    for block in PYTHON_BLOCK.findall(text):
        for node in ast.walk(ast.parse(NOTEBOOK_ONLY.sub(r"\1pass", block))):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            if any(module.split(".")[0] == "cogym_lab" for module in modules):
                found.append(ast.unparse(node))
    found += PROSE_IMPORT.findall(text)
    return found


CASES = [(doc.relative_to(ROOT).as_posix(), statement)
         for doc in DOCS for statement in dict.fromkeys(imports_of(doc))]


def test_the_docs_show_imports_to_check():
    shown = {doc for doc, _ in CASES}
    assert {"README.md", "docs/extending.md"} <= shown


@pytest.mark.parametrize(("doc", "statement"), CASES, ids=[f"{d}: {s}" for d, s in CASES])
def test_each_import_a_doc_shows_works(doc: str, statement: str) -> None:
    exec(compile(statement, doc, "exec"), {})  # our own docs


def test_the_extending_guide_takes_the_author_api_from_the_package_itself():
    """The guide's first block imports what a task is made of from ``cogym_lab``, as it says."""
    first = imports_of(ROOT / "docs" / "extending.md")[0]
    assert first.startswith("from cogym_lab import ")
    assert "ActionError" in first
