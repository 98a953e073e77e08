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
    is made only when the one before it is refused; without the `onnx` package only the path."""
    try:
        import onnx
    except ImportError:
        yield str(path)
        return
    from .fusion import fuse

    model = onnx.load(str(path))
    guards = _drop_nan_guards(model.graph)
    if fuse(model):
        yield model.SerializeToString()
        model = onnx.load(str(path))
        guards = _drop_nan_guards(model.graph)
    if guards:
        yield model.SerializeToString()
    del model
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
