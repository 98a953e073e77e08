"""The bundled MiniLM model: unit vectors, overlapping windows for long texts, meaning over
words, and a model file that must match its hash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.search.dense.embedder import Embedder, ModelUnavailableError, embedder
from knowledge_mcp.sources.search.dense.runtime import minilm

LONG = " ".join(f"Paragraph {n} of the field notes describes the river at dawn." for n in range(80))


@pytest.fixture(scope="module")
def model() -> Embedder:
    loaded = embedder()
    assert loaded is not None, "the semantic extra is installed with make install"
    return loaded


def test_every_vector_has_unit_length_and_the_model_width(model: Embedder) -> None:
    vectors = model.embed_windows(["a short note", LONG])
    for v in vectors:
        assert v.shape[1] == model.dim == 384
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_a_text_longer_than_the_window_gets_several_overlapping_windows(model: Embedder) -> None:
    short, long = model.embed_windows(["a short note", LONG])
    pieces = len(LONG.split()) * 1.2  # about a word piece per word, more for punctuation
    assert len(short) == 1
    assert len(long) >= int(pieces // minilm.MAX_PIECES) + 1


def test_texts_keep_their_order_whatever_their_lengths(model: Embedder) -> None:
    texts = [LONG, "boiler pressure", "sourdough starter", LONG[:300]]
    together = model.embed_windows(texts)
    alone = [model.embed_windows([t])[0] for t in texts]
    for a, b in zip(together, alone, strict=True):
        assert np.allclose(a, b, atol=1e-4)


def test_an_answer_in_other_words_is_closer_than_an_unrelated_note(model: Embedder) -> None:
    query = model.embed_query("which novels did I enjoy last summer?")
    answer, decoy = model.embed_windows(
        [
            "July reading. Loved Piranesi, gave up on the Pynchon after eighty pages.",
            "Boiler service. Pressure was down to 0.6 bar; the engineer replaced the thermocouple.",
        ]
    )
    assert float(answer[0] @ query) > float(decoy[0] @ query)


def test_a_model_file_that_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(ModelUnavailableError, match="sha256"):
        minilm._verified(fake, "0" * 64)
    assert minilm._verified(minilm.TOKENIZER, minilm.TOKENIZER_SHA256) == minilm.TOKENIZER
