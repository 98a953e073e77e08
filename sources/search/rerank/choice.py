"""Which reranker answers a caller's `rerank: true`.

A configured local cross-encoder (`rerank_model`) is preferred: it is fast, private and the
same for every client; if it does not load, the search says why and keeps the fused order
rather than sending the passages to a model the user did not choose. Without one, the client's
own model through sampling, when the client declared the capability and its connection can
carry a request back. Otherwise the search keeps the fused order and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .backend import Reranking
from .cross_encoder import local_cross_encoder
from .sampling import SamplingReranker

NO_RERANKER = "no rerank_model is configured and the client does not offer sampling"


def client_samples(session: Any) -> bool:
    """Whether the client declared sampling and this request's channel can send it one."""
    capabilities = getattr(session, "client_capabilities", None)
    return (
        capabilities is not None
        and capabilities.sampling is not None
        and bool(getattr(session, "can_send_request", False))
    )


def reranking(session: Any, model: Path | None, tokenizer: Path | None, timeout_s: float) -> Reranking:
    """The reranker for a call served over `session`, given the `rerank_model` settings."""
    if model is not None:
        local = local_cross_encoder(model, tokenizer)
        if isinstance(local, str):
            return Reranking(None, local, timeout_s)
        return Reranking(local, None, timeout_s)
    if client_samples(session):
        return Reranking(SamplingReranker(session), None, timeout_s)
    return Reranking(None, NO_RERANKER, timeout_s)
