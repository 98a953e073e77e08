"""Probe 1, fuzz: every tool in `tools/list`, called N times with arguments made from its
`inputSchema` (`values.py`), most of them hostile, over streamable HTTP with a write-scope JWT.

Counted per run: calls made, results, tool errors, JSON-RPC errors (by code; code 0 apart),
unanswered calls (no answer within the call timeout or a broken connection), crashes (the
server process gone), and leaks: an answer's text holding `Traceback`, an exception class name
or a pydantic.dev link. The first few findings are kept with the tool and seed to replay them.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import MCPError

from knowledge_mcp.bench.http import Served, http_client

from .values import arguments, resolve

CALL_TIMEOUT_S = 30.0
LEAK = re.compile(r"Traceback|pydantic\.dev|\b[A-Z][A-Za-z]*(?:Error|Exception)\b|\bunhashable\b")
KEPT_FINDINGS = 10


@dataclass
class FuzzReport:
    tools: int = 0
    calls: int = 0
    results: int = 0
    tool_errors: int = 0
    rpc_errors: Counter[str] = field(default_factory=Counter)
    rpc_reasons: Counter[str] = field(default_factory=Counter)
    unanswered: int = 0
    not_sent: int = 0
    crashes: int = 0
    leaks: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)

    def note(self, kind: str, tool: str, seed: int, detail: str) -> None:
        if len(self.findings) < KEPT_FINDINGS:
            self.findings.append({"kind": kind, "tool": tool, "seed": seed, "detail": detail[:300]})

    def as_dict(self) -> dict[str, Any]:
        return {
            "tools": self.tools,
            "calls": self.calls,
            "results": self.results,
            "tool_errors": self.tool_errors,
            "rpc_errors": dict(self.rpc_errors),
            "rpc_errors_code_0": self.rpc_errors.get("0", 0),
            "rpc_error_reasons": dict(self.rpc_reasons.most_common()),
            "unanswered": self.unanswered,
            "not_sent": self.not_sent,
            "crashes": self.crashes,
            "leaks": self.leaks,
            "findings": self.findings,
        }


def text_of(result: Any) -> str:
    return " ".join(str(getattr(block, "text", "")) for block in result.content)


async def fuzz(server: Served, token: str, per_tool: int, seed: int, seconds: float) -> FuzzReport:
    """`per_tool` calls to each tool (seeded), stopping early when `seconds` run out."""
    report = FuzzReport()
    deadline = time.monotonic() + seconds
    async with http_client(server.url, token) as client:
        tools = (await client.list_tools()).tools
    report.tools = len(tools)
    for index, tool in enumerate(tools):
        calls = [(seed * 1000 + index * per_tool + n) for n in range(per_tool)]
        await _fuzz_tool(server, token, tool.name, dict(tool.input_schema), calls, report, deadline)
        if report.crashes or time.monotonic() > deadline:
            break
    return report


async def _fuzz_tool(
    server: Served,
    token: str,
    name: str,
    schema: dict[str, Any],
    seeds: list[int],
    report: FuzzReport,
    deadline: float,
) -> None:
    async with http_client(server.url, token) as client:
        for call_seed in seeds:
            if time.monotonic() > deadline:
                return
            rng = random.Random(call_seed)
            args = arguments(schema, rng, hostility=0.0 if call_seed % 5 == 0 else 0.4)
            report.calls += 1
            try:
                with anyio.fail_after(CALL_TIMEOUT_S):
                    result = await client.call_tool(name, args)
            except ValueError as exc:  # the client would not serialize them: never sent
                report.not_sent += 1
                report.note("not sent", name, call_seed, str(exc))
                continue
            except MCPError as exc:
                report.rpc_errors[str(exc.error.code)] += 1
                report.rpc_reasons[reason(str(exc.error.message))] += 1
                _check_text(report, name, call_seed, str(exc.error.message))
                kind = "code 0" if exc.error.code == 0 else "rpc error"
                report.note(kind, name, call_seed, f"{exc.error.code} {exc.error.message}")
                continue
            except Exception as exc:  # a timeout or a broken connection: unanswered
                report.unanswered += 1
                report.note("unanswered", name, call_seed, f"{type(exc).__name__}: {exc}")
                if server.process.poll() is not None:
                    report.crashes += 1
                    report.note("crash", name, call_seed, f"exit {server.process.returncode}")
                return  # the session may be broken; the next tool opens a new one
            if result.is_error:
                report.tool_errors += 1
            else:
                report.results += 1
            _check_text(report, name, call_seed, text_of(result))


def reason(message: str) -> str:
    """A JSON-RPC error's message without the field and the figures: its kind."""
    return re.sub(r"\d+", "N", re.sub(r"params\.arguments\S*", "<field>", message))


def _check_text(report: FuzzReport, tool: str, seed: int, text: str) -> None:
    found = LEAK.search(text)
    if found:
        report.leaks += 1
        report.note("leak", tool, seed, f"{found.group(0)}: {text}")


def integer_fields(schema: dict[str, Any]) -> list[str]:
    """Top-level arguments that take an integer and not a boolean."""
    names = []
    for name, sub in schema.get("properties", {}).items():
        options = [resolve(o, schema) for o in sub.get("anyOf", [sub])]
        kinds = {o.get("type") for o in options}
        if "integer" in kinds and "boolean" not in kinds:
            names.append(name)
    return names


async def answers(client: Any, tool: str, args: dict[str, Any]) -> bool:
    """Whether the call answers a result (not a tool or JSON-RPC error)."""
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):
            return not (await client.call_tool(tool, args)).is_error
    except MCPError:
        return False


async def booleans_for_integers(server: Served, token: str, seed: int) -> dict[str, Any]:
    """Each integer argument of each tool given `true` (with well-formed required others): an
    error is right, a result means `true` was taken as 1. Conclusive only where the same call
    with the integer 1 answers a result (else something else failed first)."""
    accepted, conclusive, fields = [], 0, 0
    async with http_client(server.url, token) as client:
        for tool in (await client.list_tools()).tools:
            schema = dict(tool.input_schema)
            required = schema.get("required", [])
            for name in integer_fields(schema):
                fields += 1
                made = arguments(schema, random.Random(seed), 0.0)
                args = {k: v for k, v in made.items() if k in required}
                if not await answers(client, tool.name, {**args, name: 1}):
                    continue
                conclusive += 1
                if await answers(client, tool.name, {**args, name: True}):
                    accepted.append(f"{tool.name}.{name}")
    return {"fields": fields, "conclusive": conclusive, "accepted": accepted}
