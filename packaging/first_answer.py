"""Time from starting an installed server to its first answer, as a host sees it.

Starts COMMAND... as a stdio MCP server (e.g. `uvx --from dist/<wheel> knowledge-mcp serve`),
and prints the seconds until `initialize` returned and until the first `knowledge_search`
answered. Run it with an empty UV_CACHE_DIR for a cold start (everything downloaded), again
for a warm one:

    python packaging/first_answer.py uvx --from dist/<wheel> knowledge-mcp serve --data-dir D
"""

from __future__ import annotations

import os
import sys
import time

import anyio
from mcp import Client, StdioServerParameters


async def first_answer(command: list[str]) -> None:
    start = time.perf_counter()
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(params) as client:
        ready = time.perf_counter() - start
        result = await client.call_tool("knowledge_search", {"query": "sourdough"})
        answered = time.perf_counter() - start
    print(f"initialized after {ready:.1f} s; first knowledge_search answered after {answered:.1f} s")
    if result.is_error:
        print("the search answered with an error", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    anyio.run(first_answer, sys.argv[1:])
