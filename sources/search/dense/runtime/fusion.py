"""The exported MiniLM graph's attention and GELU as onnxruntime's fused kernels (`fuse`), in memory.

The export spells each layer's self-attention out in about thirty nodes: three projections, the
heads split by Reshape and Transpose, the query and key each scaled, a [batch, heads, len, len]
score tensor, the padding mask added, Softmax, the values weighted, the heads merged. Each
becomes one `com.microsoft.Attention` node: one [hidden, 3 × hidden] projection, the padding
mask read from `attention_mask` (a masked key weighs exactly 0 either way), no Transpose of the
heads out and back, no separate scaling and mask passes over the scores. The GELU, spelt
`x · 0.5 · (1 + erf(x / √2))`, becomes `com.microsoft.FastGelu` (which onnxruntime then fuses
with its bias add): the same curve to within ~1e-3 by its tanh form, cheaper than erf; a
window's vector moves by less than the quality bar (cosine ≥ 0.99999 to the exported file's,
`docs/performance.md`, "Embedding speed").

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
GELU = "FastGelu"
"""The fused GELU: the tanh form, 4–11 % more windows per CPU-second than erf's `Gelu` (s13)."""


@dataclass(frozen=True)
class _Projection:
    """`Add(MatMul(x, weight), bias)`: the weight as (values, None) or (integers, column scales)."""

    x: str
    weight: tuple[np.ndarray, np.ndarray | None]
    bias: np.ndarray


@dataclass(frozen=True)
class _Attention:
    projections: tuple[_Projection, _Projection, _Projection]
    """The query's, the key's and the value's, all of one `x`."""
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
    if layers:
        prologue.append(helper.make_node("Cast", [MASK], [MASK_INT32], to=6))  # int32
    for n, layer in enumerate(layers):
        prologue.extend(_packed(view, layer, f"fused_attention_{n}"))
        fused[id(layer.output)] = _attention_node(layer, f"fused_attention_{n}")
    for x, last in gelus:
        fused[id(last)] = helper.make_node(GELU, [x], list(last.output), domain="com.microsoft")
    nodes = prologue + [fused.get(id(node), node) for node in model.graph.node]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    GraphView(model.graph).drop_unused()
    return len(fused)


def _match_attention(view: GraphView, softmax: Any) -> _Attention | None:
    """The self-attention around `softmax`, when it has the export's shape: scores
    `(q · c) @ (kᵀ · c) + mask`, the mask made from the `attention_mask` input alone."""
    add = view.producer(softmax.input[0], "Add")
    scores = view.producer(add.input[0], "MatMul") if add is not None else None
    if scores is None or view.sources(add.input[1]) != {MASK}:
        return None
    scaled = [view.producer(name, "Mul") for name in scores.input]
    scales = [view.scalar(m.input[1]) for m in scaled if m is not None]
    weighted = view.only_reader(softmax.output[0], "MatMul")
    merged = view.only_reader(weighted.output[0], "Transpose") if weighted is not None else None
    output = view.only_reader(merged.output[0], "Reshape") if merged is not None else None
    if output is None or view.perm(merged) != HEADS_FIRST or weighted.input[0] != softmax.output[0]:
        return None
    if len(scales) != 2 or scales[0] is None or scales[1] is None:
        return None
    q, k = (view.through(m.input[0], LAYOUT) for m in scaled)
    found = [_projection(view, node) for node in (q, k, view.through(weighted.input[1], LAYOUT))]
    projections = [p for p in found if p is not None]
    head_size = _head_size(view, scaled[0].input[0])
    if len(projections) != 3 or len({p.x for p in projections}) != 1 or head_size is None:
        return None
    if len({p.bias.shape for p in projections}) != 1 or projections[0].bias.shape[0] % head_size:
        return None
    query, key, value = projections
    return _Attention((query, key, value), scales[0] * scales[1], head_size, output)


def _projection(view: GraphView, node: Any) -> _Projection | None:
    """`node` as a projection, when it is an `Add(MatMul(x, W), b)` of constant W and b."""
    if node is None or node.op_type != "Add":
        return None
    matmul = view.producer(node.input[0], "MatMul")
    weight = view.weight(matmul.input[1]) if matmul is not None else None
    bias = view.constant(node.input[1])
    if weight is None or bias is None or bias.shape != (weight[0].shape[1],):
        return None
    return _Projection(matmul.input[0], weight, bias)


def _head_size(view: GraphView, query: str) -> int | None:
    """The per-head width the query is split into: the last entry of its Reshape's shape."""
    transpose = view.producer(query, "Transpose")
    reshape = view.producer(transpose.input[0], "Reshape") if transpose is not None else None
    if reshape is None or view.perm(transpose) != HEADS_FIRST:
        return None
    shape = view.constant(reshape.input[1])
    if shape is None and (concat := view.producer(reshape.input[1], "Concat")) is not None:
        shape = view.constant(concat.input[-1])
    last = int(shape.reshape(-1)[-1]) if shape is not None and shape.size else 0
    return last if last > 0 else None


def _packed(view: GraphView, layer: _Attention, name: str) -> list[Any]:
    """Add `name`_weight ([hidden, 3 × hidden]: the query's, key's and value's side by side)
    and `name`_bias; the nodes that make the weight from int8 and scales, when it is kept so."""
    weights = [p.weight for p in layer.projections]
    bias = np.concatenate([p.bias for p in layer.projections]).astype(np.float32)
    view.add_initializer(numpy_helper.from_array(bias, f"{name}_bias"))
    scales = [s for _, s in weights if s is not None]
    if len(scales) == 3 and len({q.dtype for q, _ in weights}) == 1:
        integers = np.concatenate([q for q, _ in weights], axis=1)
        view.add_initializer(numpy_helper.from_array(integers, f"{name}_q"))
        view.add_initializer(numpy_helper.from_array(np.concatenate(scales, axis=1), f"{name}_scale"))
        return [
            helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=1),  # float
            helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [f"{name}_weight"]),
        ]
    values = [q.astype(np.float32) if s is None else q.astype(np.float32) * s for q, s in weights]
    view.add_initializer(numpy_helper.from_array(np.concatenate(values, axis=1), f"{name}_weight"))
    return []


def _attention_node(layer: _Attention, name: str) -> Any:
    hidden = layer.projections[0].bias.shape[0]
    return helper.make_node(
        "Attention",
        [layer.projections[0].x, f"{name}_weight", f"{name}_bias", MASK_INT32],
        list(layer.output.output),
        name=name,
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
