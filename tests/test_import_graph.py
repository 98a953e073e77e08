"""No import circle in the product packages (DESIGN §1, STYLE "State set once": an import inside a
function that exists to dodge a circle is a circle).

The graph is read from the source of `server/`, `sources/`, `aggregator/` and the shipped `bench/`
(`tests/import_graph.py`): module-level imports and imports inside functions alike. Only imports
under `if TYPE_CHECKING:` are left out — they never run, so they close no circle at run time.
"""

from __future__ import annotations

from pathlib import Path

from .import_graph import circles, import_graph

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("server", "sources", "aggregator", "bench")


def _circle(*modules: str) -> frozenset[str]:
    return frozenset(f"knowledge_mcp.{m}" for m in modules)


def _named(circle: frozenset[str]) -> str:
    return " ↔ ".join(sorted(m.removeprefix("knowledge_mcp.") for m in circle))


def test_no_product_module_imports_itself_through_a_circle() -> None:
    found = circles(import_graph(ROOT, PRODUCT))
    assert not found, "import circles (cut one edge of each): " + "; ".join(_named(c) for c in found)


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_an_import_inside_a_function_closes_a_circle(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "b.py": "def late():\n    from .a import thing\n    return thing\n",
        },
    )
    assert circles(import_graph(tmp_path, ["pkg"])) == [
        frozenset({"knowledge_mcp.pkg.a", "knowledge_mcp.pkg.b"})
    ]


def test_an_import_under_type_checking_closes_no_circle(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from knowledge_mcp.pkg.b import B\n",
            "b.py": "import typing\nif typing.TYPE_CHECKING:\n    from .a import A\nB = 1\n",
        },
    )
    assert circles(import_graph(tmp_path, ["pkg"])) == []
    assert import_graph(tmp_path, ["pkg"])["knowledge_mcp.pkg.a"] == {"knowledge_mcp.pkg.b"}


def test_importing_a_submodule_from_its_package_is_no_edge_to_the_package(tmp_path: Path) -> None:
    """`from . import sibling` in `pkg/a.py` loads `pkg.sibling`; `pkg/__init__.py` re-exporting
    `a` is no circle."""
    _package(
        tmp_path,
        {"__init__.py": "from .a import A\n", "a.py": "from . import sibling\nA = 1\n", "sibling.py": ""},
    )
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["knowledge_mcp.pkg.a"] == {"knowledge_mcp.pkg.sibling"}
    assert circles(graph) == []
