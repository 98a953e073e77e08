"""The MiniLM graph as it is run (`run_graph`): the exported file with the work it need not do
removed, in memory (nothing is written next to the model or anywhere else).

The exported attention ends each layer's softmax with a guard, `Where(IsNaN(p), 0, p)`, for a
row whose keys are all masked; a window always has at least one real piece, so no row ever is,
and the guard is the identity on every input the embedder gives it. Over the [batch, 12, len,
len] attention tensor it cost about a fifth of a run (`docs/performance.md`, "Embedding
speed"); without it the vectors are the same to float rounding. Without the `onnx` package the
file is run as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_graph(path: Path) -> bytes | str:
    """The model at `path` without its NaN guards (serialized), or the path itself when the
    `onnx` package is missing or the graph has no such guard."""
    try:
        import onnx
    except ImportError:
        return str(path)
    model = onnx.load(str(path))
    if not _drop_nan_guards(model.graph):
        return str(path)
    serialized: bytes = model.SerializeToString()
    return serialized


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
