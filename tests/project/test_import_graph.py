"""The architecture holds: no import cycle between parts or modules, and no part imports one
above it in ``scripts/import_graph.py``'s layer order. The script prints the graph for a person
(`python scripts/import_graph.py --modules`); this test runs the same checks."""

from __future__ import annotations

import importlib.util
import re
import sys

from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "import_graph.py"


def _script():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)
    spec.loader.exec_module(module)
    return module


def test_no_cycle_and_no_upward_import_in_the_package() -> None:
    graph = _script()
    modules = graph.module_graph()
    parts = graph.part_graph(modules)
    assert graph.cycles(parts) == []
    assert graph.cycles(modules) == []
    assert graph.upward(parts) == []
    assert sorted(set(parts) - set(graph.LAYERS)) == [], "give every part a layer"


def test_the_checks_see_a_cycle_and_an_upward_import() -> None:
    graph = _script()
    assert graph.cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert graph.upward({"core": {"cli"}, "cli": {"core"}}) == [("core", "cli")]


def test_the_script_prints_the_graph_and_exits_zero(capsys) -> None:
    assert _script().main(["--modules"]) == 0
    printed = capsys.readouterr().out
    assert "sessions   -> " in printed and printed.rstrip().endswith("0 problem(s)")


def test_the_error_base_is_below_every_part_that_raises() -> None:
    """Every part derives its exceptions from cogym_lab.errors, so it sits below them all."""
    graph = _script()
    assert graph.LAYERS[:3] == ["_version", "errors", "core"]
    assert graph.part_graph(graph.module_graph()).get("errors", set()) == set()


def test_the_readme_layout_lists_the_parts_in_layer_order() -> None:
    """The README's Layout table says "each part imports only parts above it": its rows of the
    package follow the script's layer order, and every layer of the package has a row."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `cogym_lab/([a-z_]+)(?:/|\.py)`", layout, flags=re.M)
    layers = [part for part in _script().LAYERS if not part.startswith("_")]
    assert rows == layers, "order the README's Layout rows as scripts/import_graph.py's LAYERS"
