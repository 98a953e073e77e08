"""Probe 1b, the other surfaces a caller reaches: `prompts/get` with hostile argument values and
`resources/read` with hostile URIs (each resource template filled with traversals, controls,
200-character ids, huge strings; other schemes; `file://`). Counted like the tool fuzz: results,
JSON-RPC errors (code 0 apart), unanswered, leaks (a traceback or exception class in the text),
and reads that returned a file from outside the data (`/etc/passwd`'s first line).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import anyio
from mcp import MCPError

from knowledge_mcp.bench.http import Served, http_client

from .fuzz import CALL_TIMEOUT_S, LEAK

STRINGS = [
    "",
    "x" * 200,
    "y" * 100_000,
    "../../../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%00",
    "\u202e\u200b\u0000\u001b[31m",
    "{{title}}{{content}}" * 500,
    "\ufdfa" * 3000,
    "Bob",
    "notes://../../x",
]
OTHER_URIS = [
    "file:///etc/passwd",
    "knowledge://../../etc/passwd",
    "notes://" + "x" * 5000,
    "://",
    "x" * 70_000,
]
OUTSIDE = "root:x:0:0"


def text_of(contents: Any) -> str:
    return " ".join(str(getattr(c, "text", "")) for c in contents)


async def attempt(counts: Counter[str], findings: list[str], label: str, call: Any) -> None:
    """One call: its outcome counted, its text checked."""
    counts["calls"] += 1
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):
            text = await call()
    except MCPError as exc:
        counts["code 0" if exc.error.code == 0 else "rpc errors"] += 1
        text = str(exc.error.message)
    except Exception as exc:  # a timeout or a broken connection
        counts["unanswered"] += 1
        findings.append(f"{label}: unanswered ({type(exc).__name__})")
        return
    else:
        counts["results"] += 1
    if LEAK.search(text):
        counts["leaks"] += 1
        findings.append(f"{label}: {text[:200]}")
    if OUTSIDE in text:
        counts["outside files read"] += 1
        findings.append(f"{label}: read a file outside the data")


async def probe(server: Served, token: str, per_prompt: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    findings: list[str] = []
    async with http_client(server.url, token) as client:
        prompts = (await client.list_prompts()).prompts
        for prompt in prompts:
            names = [a.name for a in prompt.arguments or []] + ["unknown"]
            for _ in range(per_prompt):
                args = {n: rng.choice(STRINGS) for n in names if rng.random() < 0.8}

                async def get(name: str = prompt.name, args: dict[str, str] = args) -> str:
                    result = await client.get_prompt(name, args)
                    return " ".join(str(getattr(m.content, "text", "")) for m in result.messages)

                await attempt(counts, findings, f"prompt {prompt.name}", get)
        templates = (await client.list_resource_templates()).resource_templates
        uris = [t.uri_template.split("{")[0] + s for t in templates for s in STRINGS] + OTHER_URIS
        for uri in uris:

            async def read(uri: str = uri) -> str:
                return text_of((await client.read_resource(uri)).contents)

            await attempt(counts, findings, f"resource {uri[:60]!r}", read)
    return {
        "prompts": len(prompts),
        "resource_templates": len(templates),
        **{k.replace(" ", "_"): v for k, v in counts.items()},
        "findings": findings[:10],
    }
