"""A tiny cross-encoder-shaped ONNX model, built offline and randomly initialised, for tests.

Inputs `input_ids`, `attention_mask`, `token_type_ids` (int64, [batch, seq]); output `logits`
([batch, 1]): the sum over the unmasked pieces of a per-piece weight (random, plus any weights
a test plants) and a small per-segment term. `expected_scores` computes the same in numpy, so a
test knows the order the model must give.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer

from knowledge_mcp.sources.search.dense.runtime.minilm import TOKENIZER

SEGMENT_WEIGHT = 0.01


def piece_weights(seed: int = 7, planted: Mapping[str, float] | None = None) -> np.ndarray:
    """Random small weights per vocabulary piece; `planted` words (single pieces) get theirs."""
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    weights = np.random.default_rng(seed).normal(0.0, 0.01, tokenizer.get_vocab_size()).astype(np.float32)
    for word, weight in (planted or {}).items():
        piece = tokenizer.token_to_id(word)
        assert piece is not None, word
        weights[piece] = weight
    return weights


def build(
    folder: Path,
    weights: np.ndarray,
    *,
    inputs: Sequence[str] = ("input_ids", "attention_mask", "token_type_ids"),
    output_width: int = 1,
) -> Path:
    """Write `model.onnx` and the vendored `tokenizer.json` into `folder`; the model's path."""
    folder.mkdir(parents=True, exist_ok=True)
    nodes = [
        helper.make_node("Gather", ["W", "input_ids"], ["per_piece"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["segment"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["segment", "S"], ["segment_term"]),
        helper.make_node("Add", ["per_piece", "segment_term"], ["term"]),
        helper.make_node("Mul", ["term", "mask"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axes"], ["summed"], keepdims=1),
        helper.make_node("Tile", ["summed", "repeats"], ["logits"]),
    ]
    initializers = [
        numpy_helper.from_array(weights.astype(np.float32), "W"),
        numpy_helper.from_array(np.array(SEGMENT_WEIGHT, np.float32), "S"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
        numpy_helper.from_array(np.array([1, output_width], np.int64), "repeats"),
    ]
    declared = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"]) for name in inputs]
    if "token_type_ids" not in inputs:  # the graph still reads it: a constant of zeros
        nodes[2] = helper.make_node("Mul", ["attention_mask", "zero"], ["segment_i"])
        nodes.insert(3, helper.make_node("Cast", ["segment_i"], ["segment"], to=TensorProto.FLOAT))
        initializers.append(numpy_helper.from_array(np.array(0, np.int64), "zero"))
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", output_width])
    graph = helper.make_graph(nodes, "tiny_cross_encoder", declared, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    return path


def expected_scores(weights: np.ndarray, query: str, passages: Sequence[str]) -> list[float]:
    """The model's logit for each (query, passage), computed without it."""
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=512, strategy="only_second")
    out = []
    for encoding in tokenizer.encode_batch([(query, p) for p in passages]):
        ids, types = np.array(encoding.ids), np.array(encoding.type_ids)
        out.append(float(weights[ids].sum() + SEGMENT_WEIGHT * types.sum()))
    return out
