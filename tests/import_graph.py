"""The import graph of the installed packages, read from their source with `ast` (nothing imported).

A module's edges are every `import` and `from … import` in it — at the top, inside functions and
methods, under `try` or `if` — except those under `if TYPE_CHECKING:` (never run, so never a
circle at run time). `from package import name` is an edge to the submodule `package.name` when
there is one, else to `package`; an import of a name that is not one of ours is no edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

NAMESPACE = "knowledge_mcp"

Graph = dict[str, set[str]]


def module_names(root: Path, folders: Iterable[str]) -> dict[str, Path]:
    """`knowledge_mcp.<folder>.<…>` → its file, for every module under the folders."""
    found: dict[str, Path] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            parts = [NAMESPACE, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node`, leaving out the bodies of `if TYPE_CHECKING:` (not their `else`)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            for other in child.orelse:
                yield other
                yield from _statements(other)
            continue
        yield child
        yield from _statements(child)


def _imported(module: str, path: Path) -> Iterator[str]:
    """The dotted names `module` imports (relative imports resolved), maybe not modules of ours."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _statements(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                yield f"{base}.{alias.name}" if alias.name != "*" else base


def import_graph(root: Path, folders: Iterable[str]) -> Graph:
    """Each module of the folders → the modules of the folders it imports."""
    modules = module_names(root, folders)
    graph: Graph = {}
    for module, path in modules.items():
        edges: set[str] = set()
        for name in _imported(module, path):
            while name and name not in modules:  # `pkg.function` → `pkg`; a third party → ""
                name = name.rpartition(".")[0]
            if name and name != module:
                edges.add(name)
        graph[module] = edges
    return graph


def circles(graph: Graph) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def reachable(graph: Graph, starts: Iterable[str]) -> set[str]:
    """Every module imported, directly or not, by the modules `starts`, and those; importing a
    module runs its packages' `__init__` first, so they (and what they import) count too."""
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
            parent = module.rpartition(".")[0]
            if parent in graph:
                todo.append(parent)
    return seen
