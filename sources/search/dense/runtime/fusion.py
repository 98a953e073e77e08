"""The exported MiniLM graph's attention and GELU as onnxruntime's fused kernels (`fuse`), in memory.

The export spells each layer's self-attention out in about thirty nodes: three projections, the
heads split by Reshape and Transpose, the query and key each scaled, a [batch, heads, len, len]
score tensor, the padding mask added, Softmax, the values weighted, the heads merged. Each
becomes one `com.microsoft.Attention` node: one [hidden, 3 × hidden] projection, the padding
mask read from `attention_mask` (a masked key weighs exactly 0 either way), the scores never
written out as separate tensors. The GELU, spelt `x · 0.5 · (1 + erf(x / √2))`, becomes
`com.microsoft.Gelu` (which onnxruntime then fuses with its bias add).

onnxruntime's own transformer optimizer (`onnxruntime.transformers.optimizer`) does not match this
export's attention (it knows the TorchScript export's), and needs `sympy` and `torch` at its
higher levels; the rewrite here matches the export's shape exactly and leaves any layer it does
not recognise as it is. The weights keep their int8 form (the three projections' int8 matrices
and per-column scales side by side), so the graph handed to onnxruntime is no larger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import helper, numpy_helper

from .graph_view import GraphView

MASK = "attention_mask"
MASK_INT32 = "attention_mask_int32"
LAYOUT = ("Reshape", "Transpose")
HEADS_FIRST = [0, 2, 1, 3]


@dataclass(frozen=True)
class _Attention:
    x: str
    projections: tuple[Any, Any, Any]
    """The query, key and value `Add(MatMul(x, W), b)` nodes."""
    scale: float
    head_size: int
    output: Any
    """The Reshape that merges the heads; the fused node takes over its output."""


def fuse(model: Any) -> int:
    """Fuse `model`'s attention layers and GELUs in place; how many were fused."""
    view = GraphView(model.graph)
    layers = [a for s in view.nodes("Softmax") if (a := _match_attention(view, s)) is not None]
    gelus = [g for m in view.nodes("Mul") if (g := _match_gelu(view, m)) is not None]
    if not layers and not gelus:
        return 0
    fused: dict[int, Any] = {}
    prologue: list[Any] = []
    if layers and MASK in view.inputs:
        prologue.append(helper.make_node("Cast", [MASK], [MASK_INT32], to=6))  # int32
        for n, layer in enumerate(layers):
            weights, nodes = _packed_weights(view, layer, f"fused_attention_{n}")
            prologue.extend(nodes)
            fused[id(layer.output)] = _attention_node(view, layer, weights, n)
    for x, last in gelus:
        fused[id(last)] = helper.make_node("Gelu", [x], list(last.output), domain="com.microsoft")
    nodes = prologue + [fused.get(id(node), node) for node in model.graph.node]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    GraphView(model.graph).drop_unused()
    return len(fused)


def _match_attention(view: GraphView, softmax: Any) -> _Attention | None:
    """The self-attention around `softmax`, when it has the export's shape."""
    add = view.producer(softmax.input[0], "Add")
    scores = view.producer(add.input[0], "MatMul") if add else None
    if scores is None:
        return None
    scaled = [view.producer(name, "Mul") for name in scores.input]
    scales = [view.scalar(m.input[1]) if m else None for m in scaled]
    weighted = view.only_reader(softmax.output[0], "MatMul")
    merged = view.only_reader(weighted.output[0], "Transpose") if weighted else None
    output = view.only_reader(merged.output[0], "Reshape") if merged else None
    if None in scaled or None in scales or weighted is None or merged is None or output is None:
        return None
    if view.perm(merged) != HEADS_FIRST or weighted.input[0] != softmax.output[0]:
        return None
    q, k = (view.through(m.input[0], LAYOUT) for m in scaled)  # type: ignore[union-attr]
    v = view.through(weighted.input[1], LAYOUT)
    projections = tuple(_projection(view, node) for node in (q, k, v))
    if None in projections or len({p[0] for p in projections}) != 1:  # type: ignore[index]
        return None
    head_size = _head_size(view, scaled[0].input[0])  # type: ignore[union-attr]
    if head_size is None:
        return None
    scale = float(scales[0] * scales[1])  # type: ignore[operator]
    return _Attention(projections[0][0], tuple(p[1] for p in projections), scale, head_size, output)  # type: ignore


def _projection(view: GraphView, node: Any) -> tuple[str, Any] | None:
    """(x, the `Add(MatMul(x, W), b)` node) when `node` is one, W and b constants."""
    if node is None or node.op_type != "Add":
        return None
    matmul = view.producer(node.input[0], "MatMul")
    if matmul is None or view.constant(node.input[1]) is None or view.weight(matmul.input[1]) is None:
        return None
    return matmul.input[0], node


def _head_size(view: GraphView, query: str) -> int | None:
    """The per-head width the query is split into: the last entry of its Reshape's shape."""
    transpose = view.producer(query, "Transpose")
    reshape = view.producer(transpose.input[0], "Reshape") if transpose else None
    if transpose is None or reshape is None or view.perm(transpose) != HEADS_FIRST:
        return None
    shape = view.constant(reshape.input[1])
    if shape is None and (concat := view.producer(reshape.input[1], "Concat")) is not None:
        shape = view.constant(concat.input[-1])
    last = int(shape.reshape(-1)[-1]) if shape is not None and shape.size else 0
    return last if last > 0 else None


def _packed_weights(view: GraphView, layer: _Attention, name: str) -> tuple[tuple[str, str], list[Any]]:
    """The [hidden, 3 × hidden] weight and [3 × hidden] bias names, and the nodes making the weight."""
    matmuls = [view.producer(p.input[0], "MatMul") for p in layer.projections]
    parts = [view.weight(m.input[1]) for m in matmuls]  # type: ignore[union-attr]
    bias = np.concatenate([view.constant(p.input[1]) for p in layer.projections]).astype(np.float32)  # type: ignore[misc]
    view.add_initializer(numpy_helper.from_array(bias, f"{name}_bias"))
    if all(s is not None and s.ndim == 2 for _, s in parts) and len({q.dtype for q, _ in parts}) == 1:  # type: ignore[union-attr]
        q = np.concatenate([q for q, _ in parts], axis=1)  # type: ignore[misc]
        s = np.concatenate([s for _, s in parts], axis=1)  # type: ignore[misc]
        view.add_initializer(numpy_helper.from_array(q, f"{name}_q"))
        view.add_initializer(numpy_helper.from_array(s.astype(np.float32), f"{name}_scale"))
        nodes = [
            helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=1),
            helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [f"{name}_weight"]),
        ]
        return (f"{name}_weight", f"{name}_bias"), nodes
    dense = [q if s is None else (q.astype(np.float32) * s) for q, s in parts]  # type: ignore[union-attr]
    view.add_initializer(
        numpy_helper.from_array(np.concatenate(dense, axis=1).astype(np.float32), f"{name}_weight")
    )
    return (f"{name}_weight", f"{name}_bias"), []


def _attention_node(view: GraphView, layer: _Attention, weights: tuple[str, str], n: int) -> Any:
    hidden = view.weight_width(view.producer(layer.projections[0].input[0], "MatMul").input[1])  # type: ignore[union-attr]
    return helper.make_node(
        "Attention",
        [layer.x, weights[0], weights[1], MASK_INT32],
        list(layer.output.output),
        name=f"fused_attention_{n}",
        domain="com.microsoft",
        num_heads=hidden // layer.head_size,
        scale=layer.scale,
    )


def _match_gelu(view: GraphView, last: Any) -> tuple[str, Any] | None:
    """(x, the last Mul) when `last` ends `x · (0.5 · (erf(x / √2) + 1))` in any operand order."""
    if len(last.input) != 2:
        return None
    for x, half_name in (tuple(last.input), tuple(reversed(last.input))):
        half = view.producer(half_name, "Mul")
        if half is None:
            continue
        one_add = view.other_than_constant(half, 0.5, "Add")
        erf = view.other_than_constant(one_add, 1.0, "Erf") if one_add else None
        div = view.producer(erf.input[0], "Div") if erf else None
        if div is not None and div.input[0] == x and _close(view.scalar(div.input[1]), 2**0.5):
            return x, last
    return None


def _close(value: float | None, expected: float) -> bool:
    return value is not None and abs(value - expected) < 1e-6
