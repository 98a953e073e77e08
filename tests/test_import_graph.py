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


# Circles other parts of issue 27 are breaking while this test lands. THIS LIST MUST BE EMPTY:
# each entry goes when its branch is merged; a circle not on it (or larger than it) fails now.
KNOWN_CIRCLES = [
    # C1: the key stores and the PostgreSQL import
    _circle("server.auth.keys", "server.shared.keys"),
    _circle("server.cli.embedding", "server.cli.pg_import"),
    # B: the embedder and its model
    _circle("sources.search.dense.embedder", "sources.search.dense.minilm"),
    # A/B: the PostgreSQL copies of the stages, which the store seam deletes
    _circle("sources.search.lexical.term_stats", "sources.storage.postgres.serving.stats"),
    _circle("sources.search.dense.pg.retriever", "sources.search.lexical.postgres"),
]


def _named(circle: frozenset[str]) -> str:
    return " ↔ ".join(sorted(m.removeprefix("knowledge_mcp.") for m in circle))


def test_no_product_module_imports_itself_through_a_circle() -> None:
    found = circles(import_graph(ROOT, PRODUCT))
    new = [c for c in found if not any(c <= known for known in KNOWN_CIRCLES)]
    assert not new, "import circles (cut one edge of each): " + "; ".join(_named(c) for c in new)


def test_every_known_circle_is_still_there() -> None:
    """A circle broken by a merge leaves KNOWN_CIRCLES too, so the list only shrinks."""
    found = circles(import_graph(ROOT, PRODUCT))
    gone = [known for known in KNOWN_CIRCLES if not any(c & known for c in found)]
    assert not gone, "no longer circles, take them off KNOWN_CIRCLES: " + "; ".join(map(_named, gone))


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
