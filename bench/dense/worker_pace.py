"""The background worker's run as `knowledge-mcp bench --embed-beir` times it: texts a call and a
pause as the worker chooses them before each batch (`indexing.Pacing.step`), with or without
searches beside it.

Two states, both timed: idle (no request: `background.IDLE_BATCH` texts a call, no pause), and
busy, where a search thread embeds a query on the searches' model every `SEARCH_EVERY_S` and
notes the request as the server does (`BackgroundIndexer.notice`), so the worker goes back to
`background.BATCH` texts and `background.PAUSE_S`. Each query's latency is kept: what a search
pays beside the worker's batches. The worker before (`OLD_TEXTS` texts a call, `OLD_PAUSE_S`
after each, whatever the requests) is run the same way.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from knowledge_mcp.sources.search import background
from knowledge_mcp.sources.search.dense.indexing import Pacing
from knowledge_mcp.sources.search.dense.runtime import minilm

SEARCH_EVERY_S = 0.5
OLD_TEXTS = 8
"""Texts a call of the worker before session 14 (busy or not)."""
OLD_PAUSE_S = 0.05
"""Its pause after each call."""
QUERIES = ("which drugs lower blood pressure in older adults", "gene expression in stem cells")


@dataclass
class Requests:
    """The requests a bench run serves: when one last came, and each query's latency (ms)."""

    served: float = -float("inf")
    latencies_ms: list[float] = field(default_factory=list)

    def busy(self) -> bool:
        return time.monotonic() - self.served < background.IDLE_S


def queries(beir: Path) -> list[str]:
    """The corpus's queries (SciFact: claims), else a few of the bench's own."""
    import json

    path = beir / "queries.jsonl"
    if not path.is_file():
        return list(QUERIES)
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in itertools.islice(f, 200)]


@contextmanager
def searching(model: minilm.MiniLMEmbedder, texts: list[str], requests: Requests) -> Iterator[None]:
    """A search every `SEARCH_EVERY_S` on its own thread while the block runs: the request is
    noted, then its query embedded on the searches' model (beside the worker's batch)."""
    done = threading.Event()
    requests.served = time.monotonic()  # requests every half second: one has just come

    def search() -> None:
        for text in itertools.cycle(texts):
            if done.wait(SEARCH_EVERY_S):
                return
            requests.served = time.monotonic()
            start = time.perf_counter()
            model.embed_query(text)
            requests.latencies_ms.append((time.perf_counter() - start) * 1000)

    thread = threading.Thread(target=search, name="bench-search", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def worker_pacing(requests: Requests) -> Pacing:
    """The worker's pacing now, its requests those of the bench run."""
    return Pacing(pause_s=background.PAUSE_S, busy=requests.busy, idle_batch=background.IDLE_BATCH)


OLD_PACING = Pacing(pause_s=OLD_PAUSE_S)
"""The worker before: always `OLD_TEXTS` a call and the pause."""


def paced_windows(model: minilm.MiniLMEmbedder, texts: list[str], pacing: Pacing, batch: int) -> np.ndarray:
    """The texts' window vectors as the worker makes them: before each call `pacing` gives the
    texts a call (from `batch`) and the pause after it."""
    vectors: list[np.ndarray] = []
    start = 0
    while start < len(texts):
        size, pause_s = pacing.step(batch)
        vectors.extend(model.embed_windows(texts[start : start + size]))
        start += size
        if pause_s:
            time.sleep(pause_s)
    return np.concatenate(vectors)


def worker_run(
    model: minilm.MiniLMEmbedder,
    searches: minilm.MiniLMEmbedder,
    query_texts: list[str],
    *,
    old: bool,
    busy: bool,
) -> tuple[Callable[[list[str]], np.ndarray], Requests]:
    """A run of the worker on `model`, paced as before (`old`) or now, idle or `busy` with
    searches on `searches`."""
    requests = Requests()
    pacing, batch = (OLD_PACING, OLD_TEXTS) if old else (worker_pacing(requests), background.BATCH)

    def run(texts: list[str]) -> np.ndarray:
        if not busy:
            return paced_windows(model, texts, pacing, batch)
        with searching(searches, query_texts, requests):
            return paced_windows(model, texts, pacing, batch)

    return run, requests
