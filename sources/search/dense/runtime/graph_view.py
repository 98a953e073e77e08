"""A read-mostly view of an ONNX graph for matching patterns (`GraphView`): who makes and who
reads each value, the constants, and dropping what no output needs."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper, numpy_helper


class GraphView:
    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.made_by = {out: node for node in graph.node for out in node.output}
        self.readers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
        self.initializers = {init.name: init for init in graph.initializer}
        self.inputs = {value.name for value in graph.input}

    def nodes(self, op: str) -> list[Any]:
        return [node for node in self.graph.node if node.op_type == op]

    def producer(self, name: str, op: str) -> Any:
        """The `op` node that makes `name`, or None (made by another op, or an input)."""
        node = self.made_by.get(name)
        return node if node is not None and node.op_type == op else None

    def only_reader(self, name: str, op: str) -> Any:
        """The one node reading `name` when it is an `op`, or None."""
        readers = self.readers.get(name, [])
        if len(readers) != 1 or readers[0].op_type != op:
            return None
        return readers[0]

    def through(self, name: str, ops: tuple[str, ...]) -> Any:
        """The first node making `name` that is not one of `ops`, walking back their first inputs."""
        node = self.made_by.get(name)
        while node is not None and node.op_type in ops:
            node = self.made_by.get(node.input[0])
        return node

    def sources(self, name: str) -> set[str]:
        """The graph inputs whose values `name` is computed from (not counting those whose shape
        alone is read)."""
        found: set[str] = set()
        seen: set[str] = set()
        todo = [name]
        while todo:
            value = todo.pop()
            if value in seen:
                continue
            seen.add(value)
            if value in self.inputs:
                found.add(value)
            elif (node := self.made_by.get(value)) is not None and node.op_type != "Shape":
                todo.extend(node.input)
        return found

    def constant(self, name: str) -> np.ndarray | None:
        """The value of an initializer or a `Constant` node, or None."""
        if name in self.initializers:
            return np.asarray(numpy_helper.to_array(self.initializers[name]))
        node = self.producer(name, "Constant")
        if node is None or not node.attribute or node.attribute[0].name != "value":
            return None
        return np.asarray(numpy_helper.to_array(node.attribute[0].t))

    def scalar(self, name: str) -> float | None:
        value = self.constant(name)
        return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None

    def weight(self, name: str) -> tuple[np.ndarray, np.ndarray | None] | None:
        """A constant matrix as (values, None), or as (integers, per-column scales) when it is
        made by `Cast(integers) · scales`; None when it is not constant."""
        value = self.constant(name)
        if value is not None:
            return (value, None) if value.ndim == 2 else None
        mul = self.producer(name, "Mul")
        cast = self.producer(mul.input[0], "Cast") if mul is not None else None
        if mul is None or cast is None:
            return None
        integers, scales = self.constant(cast.input[0]), self.constant(mul.input[1])
        if integers is None or scales is None or integers.ndim != 2 or scales.shape != (1, integers.shape[1]):
            return None
        return integers, scales

    def weight_width(self, name: str) -> int:
        weight = self.weight(name)
        return int(weight[0].shape[1]) if weight is not None else 0

    def other_than_constant(self, node: Any, value: float, op: str) -> Any:
        """For a binary `node` one of whose inputs is the scalar `value`: the `op` node making
        the other input, or None."""
        if len(node.input) != 2:
            return None
        for constant, other in (tuple(node.input), tuple(reversed(node.input))):
            found = self.scalar(constant)
            if found is not None and abs(found - value) < 1e-6:
                return self.producer(other, op)
        return None

    @staticmethod
    def perm(transpose: Any) -> list[int]:
        for attribute in transpose.attribute:
            if attribute.name == "perm":
                return list(helper.get_attribute_value(attribute))
        return []

    def add_initializer(self, tensor: Any) -> None:
        self.graph.initializer.append(tensor)
        self.initializers[tensor.name] = tensor

    def drop_unused(self) -> None:
        """Remove the nodes and initializers no graph output depends on."""
        needed = {value.name for value in self.graph.output}
        kept: list[Any] = []
        for node in reversed(self.graph.node):
            if any(out in needed for out in node.output):
                kept.append(node)
                needed.update(node.input)
        kept.reverse()
        del self.graph.node[:]
        self.graph.node.extend(kept)
        used = [init for init in self.graph.initializer if init.name in needed]
        del self.graph.initializer[:]
        self.graph.initializer.extend(used)
