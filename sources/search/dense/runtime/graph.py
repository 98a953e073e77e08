"""The MiniLM graph as it is run (`run_graphs`): the exported file with the work it need not do
removed and its attention and GELU fused (`fusion`), in memory (nothing is written next to the
model or anywhere else; it is rebuilt from the bundled file each time the model loads, in a
fraction of a second, so no CPU- or version-specific file is kept).

The exported attention ends each layer's softmax with a guard, `Where(IsNaN(p), 0, p)`, for a
row whose keys are all masked; a window always has at least one real piece, so no row ever is,
and the guard is the identity on every input the embedder gives it. Over the [batch, 12, len,
len] attention tensor it cost about a fifth of a run (`docs/performance.md`, "Embedding
speed"); without it the vectors are the same to float rounding. Without the `onnx` package the
file is run as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any


def run_graphs(path: Path) -> Iterator[bytes | str]:
    """The model at `path` as it is best run, then the fallbacks: fused and without its NaN
    guards (serialized), without the guards only, and the path itself (the file as it is). Each
    is made only when the one before it is refused; without the `onnx` package only the path.
    Every form keeps its embedding tables as integers (`_gather_rows_first`)."""
    try:
        import onnx
    except ImportError:
        yield str(path)
        return
    from .fusion import fuse

    def lean() -> tuple[Any, int]:
        """The file without its NaN guards, its tables as integers; how many nodes changed."""
        model = onnx.load(str(path))
        return model, _drop_nan_guards(model.graph) + _gather_rows_first(model.graph)

    model, changed = lean()
    if fuse(model):
        serialized = model.SerializeToString()
        del model  # one copy of the graph while onnxruntime builds from the bytes
        yield serialized
        del serialized
        model, changed = lean()
    if changed:
        serialized = model.SerializeToString()
        del model
        yield serialized
        del serialized
    yield str(path)


def run_graph(path: Path) -> bytes | str:
    """The model at `path` as it is best run (the first of `run_graphs`)."""
    return next(run_graphs(path))


def _drop_nan_guards(graph: Any) -> int:
    """Remove each `Where(IsNaN(x), c, x)`, its consumers reading `x`; how many were removed."""
    made_by = {out: node for node in graph.node for out in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    renamed: dict[str, str] = {}
    dropped: set[int] = set()
    for node in graph.node:
        test = made_by.get(node.input[0]) if node.op_type == "Where" and len(node.input) == 3 else None
        if (
            test is not None
            and test.op_type == "IsNaN"
            and test.input[0] == node.input[2]
            and readers[node.input[0]] == 1
        ):
            renamed[node.output[0]] = node.input[2]
            dropped.update((id(node), id(test)))
    if not renamed:
        return 0
    kept = [node for node in graph.node if id(node) not in dropped]
    if any(out.name in renamed for out in graph.output):
        return 0  # a guard's result is the graph's output: leave the graph whole
    for node in kept:
        for n, name in enumerate(node.input):
            node.input[n] = renamed.get(name, name)
    del graph.node[:]
    graph.node.extend(kept)
    return len(renamed)


def _gather_rows_first(graph: Any) -> int:
    """Each `Gather(Cast(q) · s, ids)` of a table of integers `q` with one scale per row `s`
    becomes `Cast(Gather(q, ids)) · Gather(s, ids)`: every row read is scaled exactly as before,
    but the table stays integers in memory (onnxruntime folds a constant `Cast · scale` into
    float32: the word table is 47 MB so, 12 MB as int8). How many gathers were rewritten."""
    from onnx import helper

    from .graph_view import GraphView

    view = GraphView(graph)
    rewritten: dict[int, list[Any]] = {}
    for gather in view.nodes("Gather"):
        mul = view.producer(gather.input[0], "Mul")
        cast = view.producer(mul.input[0], "Cast") if mul is not None else None
        if mul is None or cast is None or any(a.name == "axis" and a.i != 0 for a in gather.attribute):
            continue
        table, scales = view.initializers.get(cast.input[0]), view.initializers.get(mul.input[1])
        if table is None or scales is None or len(table.dims) != 2 or list(scales.dims) != [table.dims[0], 1]:
            continue  # shapes read from the initializers: no copy of a table to look at it
        if len(view.readers[gather.input[0]]) != 1:
            continue
        ids, out = gather.input[1], gather.output[0]
        rewritten[id(gather)] = [
            helper.make_node("Gather", [cast.input[0], ids], [f"{out}_integers"], axis=0),
            helper.make_node("Cast", [f"{out}_integers"], [f"{out}_floats"], to=1),  # float32
            helper.make_node("Gather", [mul.input[1], ids], [f"{out}_scales"], axis=0),
            helper.make_node("Mul", [f"{out}_floats", f"{out}_scales"], [out]),
        ]
    if not rewritten:
        return 0
    nodes = [new for node in graph.node for new in rewritten.get(id(node), [node])]
    del graph.node[:]
    graph.node.extend(nodes)
    GraphView(graph).drop_unused()
    return len(rewritten)
