"""The sentence-embedding model installed, if any (`embedder()`).

The default backend is all-MiniLM-L6-v2 (int8 ONNX, `minilm.py`), brought by the `semantic`
extra. Without it `embedder()` returns None and `unavailable()` says why, so every search
stays lexical and says so; nothing imports onnxruntime or tokenizers before then (`minilm.py`
loads them when the model is loaded).
"""

from __future__ import annotations

import functools

from ...storage.vector_store import Vectors as Vectors
from .minilm import MiniLMEmbedder
from .model import Embedder as Embedder
from .model import ModelUnavailableError as ModelUnavailableError


@functools.cache
def _load() -> Embedder | str:
    try:
        return MiniLMEmbedder.load()
    except (ImportError, ModelUnavailableError, OSError) as exc:
        return f"semantic search is off: {exc}; install knowledge-mcp[semantic]"


def embedder() -> Embedder | None:
    """The installed embedding model, loaded once per process; None without one."""
    loaded = _load()
    return None if isinstance(loaded, str) else loaded


def unavailable() -> str | None:
    """Why there is no embedding model (a hint for responses), or None when there is one."""
    loaded = _load()
    return loaded if isinstance(loaded, str) else None


def reset() -> None:
    """Forget the loaded model (tests that take it away and give it back)."""
    _load.cache_clear()
