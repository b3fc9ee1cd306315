"""Print cogym_lab's import graph between its parts, with any cycle and any upward import.

    python scripts/import_graph.py            # the graph, then the problems (exit 1 if any)
    python scripts/import_graph.py --modules  # module-level cycles too

A *part* is a subpackage (``cogym_lab/core``) or a top-level module (``cogym_lab/api.py``).
Imports inside ``if TYPE_CHECKING:`` blocks are left out: they never run. The layer order below
is the architecture: a part may import only parts listed before it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cogym_lab"

#: Lowest first. A part may import only the parts before it.
LAYERS: list[str] = [
    "_version", "errors", "core", "datasets", "kernels", "bus", "lm", "prompts", "envs", "nodes",
    "records",
    "agents", "users", "members", "teams", "provenance", "sessions", "testing", "runtime",
    "widgets", "mcp_seat", "server", "notebook", "api", "magics", "eval", "studies",
    "jupyter_ai_persona",
    "cli", "__init__", "__main__",
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _runtime_imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Imported cogym_lab modules, leaving out ``if TYPE_CHECKING:`` blocks."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cogym_lab"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.startswith("cogym_lab"):
                # `from cogym_lab import datasets` imports the submodule (and, as Python must,
                # runs the package's __init__ first: a package's own __init__ counts only when
                # a name is taken from it)
                found.update(f"{target}.{a.name}" for a in node.names)
                found.add(target + "#names")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def module_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _runtime_imports(tree, module, path.name == "__init__.py")
        names = {name for name in imported if not name.endswith("#names")}
        for marker in imported - names:  # `from PACKAGE import x`: x may be a name, not a module
            package = marker.removesuffix("#names")
            if any(name.rpartition(".")[0] == package and name not in paths for name in names):
                names.add(package)
        graph[module] = {name for name in names if name in paths and name != module}
    return graph


def part_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = defaultdict(set)
    for module, imported in modules.items():
        parts[_part(module)]
        for name in imported:
            if _part(name) != _part(module):
                parts[_part(module)].add(_part(name))
    return dict(parts)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                strong(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()  # raised for the walk only: the process keeps its own
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in sorted(graph):
            if node not in index:
                strong(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def upward(parts: dict[str, set[str]]) -> list[tuple[str, str]]:
    rank = {name: n for n, name in enumerate(LAYERS)}
    return sorted((a, b) for a, targets in parts.items() for b in targets
                  if rank.get(b, len(LAYERS)) > rank.get(a, len(LAYERS)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modules", action="store_true", help="also list module-level cycles")
    args = parser.parse_args(argv)
    modules = module_graph()
    parts = part_graph(modules)
    print("import graph between parts (lowest layer first):")
    for part in sorted(parts, key=lambda p: (LAYERS.index(p) if p in LAYERS else 99, p)):
        print(f"  {part:10} -> {', '.join(sorted(parts[part])) or '-'}")
    problems = 0
    for component in cycles(parts):
        print("part cycle:", " <-> ".join(component))
        problems += 1
    for source, target in upward(parts):
        print(f"upward import: {source} -> {target}")
        problems += 1
    unknown = sorted(set(parts) - set(LAYERS))
    for part in unknown:
        print(f"part without a layer: {part}")
        problems += 1
    if args.modules:
        for component in cycles(modules):
            print("module cycle:", " <-> ".join(component))
            problems += 1
    print(f"{problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
