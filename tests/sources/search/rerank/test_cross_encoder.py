"""The local cross-encoder backend, on a tiny randomly initialised ONNX model built offline
(`tiny_model.py`): it loads, scores pairs as the model computes them, reorders a real search,
and a file that does not load or run is a clear sentence and the fused order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.search.rerank.backend import RerankError, Reranking
from knowledge_mcp.sources.search.rerank.choice import NO_RERANKER, reranking
from knowledge_mcp.sources.search.rerank.cross_encoder import CrossEncoder, local_cross_encoder
from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.sources.search.rerank.tiny_model import build, expected_scores, piece_weights

pytestmark = pytest.mark.anyio

PASSAGES = ["A zebra crossed the field.", "Bread, flour and water.", "Nothing to see " * 200]


def test_the_model_scores_each_pair_as_its_weights_say(tmp_path: Path) -> None:
    weights = piece_weights(planted={"zebra": 3.0})
    encoder = CrossEncoder.load(build(tmp_path, weights))
    scores = encoder.scores("zebra bread", PASSAGES)
    assert scores == pytest.approx(expected_scores(weights, "zebra bread", PASSAGES), abs=1e-4)
    assert scores[0] > scores[1]
    assert encoder.name == "cross-encoder model.onnx"


def test_a_model_without_token_type_ids_is_fed_without_them(tmp_path: Path) -> None:
    weights = piece_weights(planted={"bread": 3.0})
    path = build(tmp_path, weights, inputs=("input_ids", "attention_mask"))
    scores = CrossEncoder.load(path).scores("bread", PASSAGES[:2])
    assert scores[1] > scores[0]


def test_a_separate_tokenizer_path_is_used(tmp_path: Path) -> None:
    path = build(tmp_path / "model", piece_weights())
    tokenizer = (tmp_path / "model" / "tokenizer.json").rename(tmp_path / "pieces.json")
    with pytest.raises(RerankError, match=r"rerank_tokenizer .*tokenizer\.json is not a file"):
        CrossEncoder.load(path)
    assert CrossEncoder.load(path, tokenizer).scores("bread", ["bread"])


def test_a_missing_model_file_is_named() -> None:
    with pytest.raises(RerankError, match=r"rerank_model .*absent\.onnx is not a file"):
        CrossEncoder.load(Path("/nowhere/absent.onnx"))


def test_a_file_that_is_not_onnx_does_not_load(tmp_path: Path) -> None:
    path = build(tmp_path, piece_weights())
    path.write_bytes(b"not a model at all")
    with pytest.raises(RerankError, match=r"model.onnx does not load as an ONNX model \("):
        CrossEncoder.load(path)


def test_a_tokenizer_that_is_not_a_tokenizer_does_not_load(tmp_path: Path) -> None:
    path = build(tmp_path, piece_weights())
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(RerankError, match=r"tokenizer\.json does not load as a tokenizers tokenizer\.json"):
        CrossEncoder.load(path)


def test_a_model_with_other_inputs_names_them(tmp_path: Path) -> None:
    import onnx

    path = build(tmp_path, piece_weights())
    model = onnx.load(str(path))
    for node in model.graph.node:
        node.input[:] = ["ids" if name == "input_ids" else name for name in node.input]
    model.graph.input[0].name = "ids"
    onnx.save(model, str(path))
    with pytest.raises(RerankError, match="takes attention_mask, ids, token_type_ids, not input_ids"):
        CrossEncoder.load(path)


async def search(db: Database, rerank: Reranking | None, query: str = "the") -> Any:
    request = SearchRequest(query, limit=5, mode="lexical")
    request.rerank = rerank
    return await notes.search(SqliteStore(db, "notes"), request, Defaults())


async def test_the_configured_model_reorders_a_search_by_its_scores(
    notes_db: Database, tmp_path: Path
) -> None:
    path = build(tmp_path, piece_weights(planted={"irrigation": 4.0}))
    fused = await search(notes_db, None)
    assert fused.results[0].title != "Garden Irrigation Controller"
    choice = reranking(None, path, None, 10.0)
    answer = await search(notes_db, choice)
    assert answer.results[0].title == "Garden Irrigation Controller"
    assert answer.results[0].score == fused.results[0].score
    assert answer.provider_hint is None


async def test_a_configured_model_that_does_not_load_leaves_the_fused_order(
    notes_db: Database, tmp_path: Path
) -> None:
    choice = reranking(None, tmp_path / "missing.onnx", None, 10.0)
    assert choice.backend is None and choice.why_not is not None
    fused = await search(notes_db, None)
    answer = await search(notes_db, choice)
    assert [r.uri for r in answer.results] == [r.uri for r in fused.results]
    assert answer.degraded is True
    assert answer.provider_hint == f"not reranked: rerank_model {tmp_path / 'missing.onnx'} is not a file"


async def test_a_model_whose_output_is_not_one_logit_per_pair_leaves_the_fused_order(
    notes_db: Database, tmp_path: Path
) -> None:
    local = local_cross_encoder(build(tmp_path, piece_weights(), output_width=3))
    assert isinstance(local, CrossEncoder)
    fused = await search(notes_db, None)
    answer = await search(notes_db, Reranking(local))
    assert [r.uri for r in answer.results] == [r.uri for r in fused.results]
    assert answer.provider_hint is not None and "gives logits of shape [" in answer.provider_hint


def test_without_a_model_or_sampling_there_is_no_reranker() -> None:
    assert reranking(None, None, None, 1.0) == Reranking(None, NO_RERANKER, 1.0)
