"""What the text rendering of a search says about scores: two decimals against significant digits.

    python -m experiments.score_text --data-dir DIR [--user eval] [--queries N] [--limit 100]

Searches a data dir of notes (SciFact imported with vectors, as `knowledge-mcp eval --data-dir`
leaves it) with the first N train queries of `--beir` (default 300), hybrid, top `--limit`, in process (the
raw scores), and renders each page the old way (`[0.12]`) and as the tools now do
(`sources/wire.render_search`). Prints JSON: result lines, lines reading `[0.00]`, pages with two
distinct scores rendered alike, and cl100k tokens per result line (the hit's first line, and
its score in brackets alone) for both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowledge_mcp.bench.evaluation import load_beir
from knowledge_mcp.sources.models import ResultItem
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from knowledge_mcp.sources.text.tokens import cl100k_tokens
from knowledge_mcp.sources.wire import render_search, score_digits

SCIFACT = Path("/work/shared/data/scifact")
SCORE = re.compile(r"^\d+\. (\[[^\]]*\])")


def old_lines(lines: list[str], results: Sequence[ResultItem]) -> list[str]:
    """The same first lines with the score as it was rendered before: two decimals."""
    return [
        SCORE.sub(f"{r.rank}. [{r.score:.2f}]", line, count=1) for line, r in zip(lines, results, strict=True)
    ]


def first_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if SCORE.match(line)]


def tally(pages: list[tuple[list[str], list[float]]]) -> dict[str, Any]:
    lines = [line for page, _ in pages for line in page]
    brackets = [m.group(1) for line in lines if (m := SCORE.match(line))]
    alike = 0
    for page, scores in pages:
        said = [m.group(1) for line in page if (m := SCORE.match(line))]
        alike += len(set(said)) < len(set(scores))
    return {
        "lines": len(lines),
        "zero_lines": brackets.count("[0.00]") + brackets.count("[0.0]"),
        "pages_with_distinct_scores_alike": alike,
        "tokens_per_line": round(sum(map(cl100k_tokens, lines)) / max(1, len(lines)), 3),
        "score_tokens_per_line": round(sum(map(cl100k_tokens, brackets)) / max(1, len(brackets)), 3),
    }


async def measure(data_dir: Path, user: str, beir: Path, queries: int, limit: int) -> dict[str, Any]:
    _, by_id, _, qids = load_beir(beir, "train", queries)
    texts = [by_id[qid] for qid in qids]
    db = await open_database(database_path(data_dir, user, "notes"), notes.migrations)
    old: list[tuple[list[str], list[float]]] = []
    new: list[tuple[list[str], list[float]]] = []
    kinds: set[str] = set()
    digits: dict[int, int] = {}
    try:
        for text in texts:
            request = SearchRequest(text, limit=limit, mode="hybrid")
            response = await notes.search(SqliteStore(db, "notes"), request, Defaults())
            scores = [r.score for r in response.results]
            kinds |= {r.score_type for r in response.results}
            lines = first_lines(render_search(response))
            old.append((old_lines(lines, response.results), scores))
            new.append((lines, scores))
            digits[score_digits(scores)] = digits.get(score_digits(scores), 0) + 1
    finally:
        await db.close()
    return {
        "queries": len(texts),
        "limit": limit,
        "score_types": sorted(kinds),
        "before": tally(old),
        "after": {**tally(new), "pages_by_digits": digits},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user", default="eval")
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--limit", type=int, default=100)
    a = parser.parse_args()
    print(json.dumps(asyncio.run(measure(a.data_dir, a.user, a.beir, a.queries, a.limit)), indent=1))


if __name__ == "__main__":
    main()
