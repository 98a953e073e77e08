"""Which reranker answers a caller's `rerank: true`.

A configured local cross-encoder (`rerank_model`) is preferred: it is fast, private and the
same for every client; if it does not load, the search says why and keeps the fused order
rather than sending the passages to a model the user did not choose. Without one, the client's
own model through sampling, when the client declared the capability and its connection can
carry a request back (protocol 2025-11-25; the stateless 2026-07-28 revision answers sampling
only through multi-round-trip results, which this server does not use for reranking yet).
Otherwise the search keeps the fused order and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .backend import Reranking
from .cross_encoder import local_cross_encoder
from .sampling import SamplingReranker

NO_RERANKER = "no rerank_model is configured and the client does not offer sampling"


def sampling_refused(session: Any) -> str | None:
    """Why the client's model cannot rerank this call through sampling, or None when it can: the
    client must declare sampling, and the connection must carry a request to it (the 2025-11-25
    protocol does; the stateless 2026-07-28 revision refuses server-initiated requests)."""
    capabilities = getattr(session, "client_capabilities", None)
    if capabilities is None or capabilities.sampling is None:
        return NO_RERANKER
    if not getattr(session, "can_send_request", False):
        version = getattr(session, "protocol_version", "this protocol")
        return f"no rerank_model is configured and sampling cannot reach the client over protocol {version}"
    return None


def reranking(session: Any, model: Path | None, tokenizer: Path | None, timeout_s: float) -> Reranking:
    """The reranker for a call served over `session`, given the `rerank_model` settings."""
    if model is not None:
        local = local_cross_encoder(model, tokenizer)
        if isinstance(local, str):
            return Reranking(None, local, timeout_s)
        return Reranking(local, None, timeout_s)
    refused = sampling_refused(session)
    if refused is not None:
        return Reranking(None, refused, timeout_s)
    return Reranking(SamplingReranker(session), None, timeout_s)
