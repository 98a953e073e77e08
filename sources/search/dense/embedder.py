"""The sentence-embedding model installed, if any (`embedder()`).

The default backend is all-MiniLM-L6-v2 (int8 ONNX, `minilm.py`), brought by the `semantic`
extra. Without it `embedder()` returns None and `unavailable()` says why, so every search
stays lexical and says so; nothing imports onnxruntime or tokenizers before then (`minilm.py`
loads them when the model is loaded).

The model is loaded once per process. The server loads it on a thread of its own when it starts
serving (`load_in_background`): until it is loaded `loading()` is true and searches answer
lexically and say so (`LOADING_HINT`) instead of waiting; the first search after it is as fast
as any other (the loader also runs the model once). The CLI's `search`, `eval` and `embed` load
it when they first need it (`embedder()`, on the caller's thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from loguru import logger

from ...storage.vector_store import Vectors as Vectors
from .model import Embedder as Embedder
from .model import ModelUnavailableError as ModelUnavailableError
from .runtime.minilm import MiniLMEmbedder

LOADING_HINT = "the embedding model is loading; results are lexical until it is loaded"
WARM_UP = "warm up"
"""A text the background loader embeds once, so the first search does not pay the model's first run."""


class _Model:
    """The process's one model: loaded once under `lock` (a second caller waits for the first's
    load instead of loading a copy), or the sentence saying why there is none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loaded: Embedder | str | None = None
        self.loader: threading.Thread | None = None
        self.ready = threading.Event()
        """Set when the background loader has loaded the model and run it once (or found none)."""
        self.gate: threading.Event | None = None
        """Tests only: the background loader waits for this before it loads (`hold_loading`)."""


_MODEL = _Model()


def _load() -> Embedder | str:
    with _MODEL.lock:
        if _MODEL.loaded is None:
            try:
                _MODEL.loaded = MiniLMEmbedder.load(arena=False)
            except (ImportError, ModelUnavailableError, OSError) as exc:
                _MODEL.loaded = f"semantic search is off: {exc}; install knowledge-mcp[semantic]"
        return _MODEL.loaded


def embedder() -> Embedder | None:
    """The installed embedding model, loaded once per process (here, on the caller's thread,
    unless it is loaded already); None without one."""
    loaded = _load()
    return None if isinstance(loaded, str) else loaded


def unavailable() -> str | None:
    """Why there is no embedding model (a hint for responses), or None when there is one."""
    loaded = _load()
    return loaded if isinstance(loaded, str) else None


def loading() -> bool:
    """Whether the background loader (`load_in_background`) has not loaded the model yet: a
    search then answers lexically rather than wait for it."""
    return _MODEL.loader is not None and not _MODEL.ready.is_set()


def wait_loaded(timeout: float | None = None) -> bool:
    """Block until the background loader is done (tests and benches); False on `timeout`."""
    return _MODEL.loader is None or _MODEL.ready.wait(timeout)


def load_in_background(then: Callable[[], None] | None = None) -> None:
    """Load the model on a daemon thread of its own, once per process (the server calls this
    when it starts serving): `initialize` and lexical searches never wait for it. `then` is
    called when it is loaded (on the loader's thread; at once when it was loaded already)."""
    if _MODEL.loader is not None or _MODEL.loaded is not None:
        if then is not None and not loading():
            then()
        return
    _MODEL.loader = threading.Thread(
        target=_load_and_warm,
        args=(_MODEL.gate, _MODEL.ready, then),
        name="knowledge-model-load",
        daemon=True,
    )
    _MODEL.loader.start()


def _load_and_warm(
    gate: threading.Event | None, ready: threading.Event, then: Callable[[], None] | None
) -> None:
    if gate is not None:
        gate.wait()
    try:
        model = embedder()
        if model is not None:
            model.embed_query(WARM_UP)
            logger.info("embedding model loaded")
    except Exception as error:  # a search loads or embeds again and says what failed
        logger.warning("loading the embedding model failed: {}", type(error).__name__)
    finally:
        ready.set()
    if then is not None:
        then()


def hold_loading() -> threading.Event:
    """Tests only: forget the model and make the next background load wait until the returned
    event is set (a real synchronisation point, so a test sees a search while it loads)."""
    reset()
    _MODEL.gate = threading.Event()
    return _MODEL.gate


def reset() -> None:
    """Forget the loaded model (tests that take it away and give it back)."""
    with _MODEL.lock:
        _MODEL.loaded = None
        _MODEL.loader = None
        _MODEL.ready = threading.Event()
        _MODEL.gate = None
