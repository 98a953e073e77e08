"""A cross-encoder the user configures (`rerank_model`): an ONNX file and its `tokenizer.json`.

The model reads a (query, passage) pair as one BERT-style input — `input_ids`, `attention_mask`
and, when it declares it, `token_type_ids` — and gives a relevance logit (`[batch, 1]`; of a
two-class head `[batch, 2]`, the second class's). Pairs are cut to `MAX_PIECES` word pieces,
the passage losing its tail; batches group pairs of similar length. The session and its options
are the embedder's (`dense.runtime.minilm.onnx_session`). Loaded once per model path, on first use: a
file that does not load is a clear sentence in the response's `provider_hint` and one warning in
the log, and the search answers in the fused order.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from loguru import logger

from .backend import RerankError

MAX_PIECES = 512
BATCH = 16
POOL = 50
"""The fused ranking's best items a cross-encoder reorders (retrieve ~50, rerank to the page)."""


class CrossEncoder:
    pool = POOL

    def __init__(self, session: Any, tokenizer: Any, name: str) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.name = name
        self.inputs = {i.name for i in session.get_inputs()}
        self.output = session.get_outputs()[0].name

    @classmethod
    def load(cls, model: Path, tokenizer: Path | None = None) -> CrossEncoder:
        """The model at `model` with `tokenizer` (default: `tokenizer.json` beside it)."""
        tokenizer = tokenizer or model.with_name("tokenizer.json")
        for what, path in (("rerank_model", model), ("rerank_tokenizer", tokenizer)):
            if not path.is_file():
                raise RerankError(f"{what} {path} is not a file")
        try:
            from tokenizers import Tokenizer

            from ..dense.runtime.minilm import onnx_session
        except ImportError as exc:
            raise RerankError(
                f"a rerank_model needs knowledge-mcp[semantic] ({exc.name} is missing)"
            ) from exc
        try:
            session = onnx_session(model)
        except Exception as exc:  # onnxruntime raises its own kinds
            raise RerankError(f"{model.name} does not load as an ONNX model ({type(exc).__name__})") from exc
        try:
            pieces = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # tokenizers raises a bare Exception
            raise RerankError(f"{tokenizer.name} does not load as a tokenizers tokenizer.json") from exc
        pieces.no_padding()
        pieces.enable_truncation(max_length=MAX_PIECES, strategy="only_second")
        encoder = cls(session, pieces, f"cross-encoder {model.name}")
        if not {"input_ids", "attention_mask"} <= encoder.inputs:
            raise RerankError(
                f"{model.name} takes {', '.join(sorted(encoder.inputs))}, not input_ids and attention_mask"
            )
        return encoder

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return await anyio.to_thread.run_sync(self.scores, query, list(passages), abandon_on_cancel=True)

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """Each passage's relevance logit for `query`, in order."""
        encodings = self.tokenizer.encode_batch([(query, p) for p in passages])
        out = np.zeros(len(encodings), dtype=np.float64)
        order = sorted(range(len(encodings)), key=lambda n: len(encodings[n].ids))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            out[batch] = self._run([encodings[n] for n in batch])
        return [float(s) for s in out]

    def _run(self, encodings: list[Any]) -> Any:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        types, mask = np.zeros_like(ids), np.zeros_like(ids)
        for n, e in enumerate(encodings):
            ids[n, : len(e.ids)], types[n, : len(e.ids)], mask[n, : len(e.ids)] = e.ids, e.type_ids, 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        logits = np.asarray(
            self.session.run([self.output], {k: v for k, v in feeds.items() if k in self.inputs})[0]
        )
        if logits.ndim != 2 or logits.shape[0] != len(encodings) or logits.shape[1] not in (1, 2):
            raise RerankError(f"{self.name} gives logits of shape {list(logits.shape)}, not [batch, 1]")
        return logits[:, -1]


@functools.cache
def local_cross_encoder(model: Path, tokenizer: Path | None = None) -> CrossEncoder | str:
    """The configured cross-encoder, loaded once per process, or why it does not load (warned
    once in the log)."""
    try:
        return CrossEncoder.load(model, tokenizer)
    except RerankError as exc:
        logger.warning("the rerank model does not load: {}", exc)
        return str(exc)
