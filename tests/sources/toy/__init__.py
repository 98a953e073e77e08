"""A toy source: all that adding a source takes. A built-in source is a package like this one
under `sources/` and a line in `registry.BUILT_IN`; this one is registered the same way by
`tests/sources/test_toy_source.py` (`registry.register_source("tests.sources.toy")`).

A `.toy` file is one item: its first line is the title, the rest the body.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from knowledge_mcp.sources.models import ResultItem
from knowledge_mcp.sources.source import ChunkedSource, SourceEntry
from knowledge_mcp.sources.storage import schema
from knowledge_mcp.sources.storage.db import Migration
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.text import dates


class ToyResult(ResultItem):
    lines: int | None = Field(default=None, description="Lines in the toy's body.")


class ToySource(ChunkedSource[ToyResult]):
    name = "toy"
    id_field = "toy_id"
    result_model = ToyResult
    migrations = (
        Migration(1, "toy items, chunks and FTS index", schema.chunked_tables_v1("toy")),
        Migration(2, "covering index for ranking pages", schema.page_index_v2("toy")),
        Migration(3, "size and modification time of imported files", schema.file_stat_v3("toy")),
        Migration(4, "vectors of the chunks for semantic search", schema.dense_vectors_v4("toy")),
        Migration(5, "the files and folders imported", schema.import_folders_v5("toy")),
    )
    extensions = frozenset({".toy"})

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        title, _, body = raw.decode("utf-8").partition("\n")
        when = dates.file_mtime(path)
        lines = len(body.splitlines())
        return [ParsedItem("", title.strip(), body, when, when, meta={"lines": lines})]

    def fields(self, item: Any, chunk: Any) -> dict[str, Any]:
        return {"lines": json.loads(item["meta"])["lines"]}


source = ToySource()
entry = SourceEntry(source=source, mime_type="text/x-toy", label="Toy", uri_variable="toy_id", tools=False)
