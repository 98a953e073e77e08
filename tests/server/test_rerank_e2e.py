"""rerank: true through a real MCP client over stdio: the client's own model reorders the hits
through sampling, the configured cross-encoder is preferred to it, and a client model that
raises, answers garbage or is too slow — or a client that cannot sample — never fails the
call: the fused order and a provider_hint."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import FIXTURES, ROOT, import_into, score_types, serve_args
from tests.sources.search.rerank.tiny_model import build, piece_weights

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

QUERY = "the"  # 32 fixture notes match: more than the sampling pool of 20
Sampler = Callable[[Any, types.CreateMessageRequestParams], Awaitable[Any]]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def notes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("rerank") / "data"
    assert (await import_into(data_dir, "notes", FIXTURES / "notes")).added > 20
    return data_dir


def stdio(data_dir: Path, sampler: Sampler | None = None, mode: str = "legacy", **env: str) -> Client:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(data_dir), env={**base, **env}, cwd=str(ROOT)
    )
    return Client(params, sampling_callback=sampler, mode=mode)


def answer(text: str) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=text), model="t"
    )


def prompt_of(params: types.CreateMessageRequestParams) -> str:
    content = params.messages[0].content
    assert isinstance(content, types.TextContent)
    return content.text


class Reverser:
    """A client model that ranks the passages last first, and remembers what it was asked."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def __call__(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        prompt = prompt_of(params)
        self.prompts.append(prompt)
        count = int(re.findall(r"Rank all (\d+) passages", prompt)[0])
        return answer(", ".join(str(n) for n in range(count, 0, -1)))


async def search(client: Client, tool: str = "notes_search", **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, {"query": QUERY, "limit": 5, "mode": "lexical", **args})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def uris(page: dict[str, Any]) -> list[str]:
    return [r["uri"] for r in page["results"]]


async def test_the_clients_model_reorders_the_hits_through_sampling(notes_dir: Path) -> None:
    model = Reverser()
    async with stdio(notes_dir, model) as client:
        pool = await search(client, limit=20)
        reranked = await search(client, rerank=True)
        everywhere = await search(client, "knowledge_search", rerank=True, seen="show")
    assert model.prompts[0].startswith("Query: the\n") and "\n[20] " in model.prompts[0]
    assert uris(reranked) == list(reversed(uris(pool)))[:5]
    assert score_types(reranked) == ["rerank"] * 5
    assert "provider_hint" not in reranked or "rerank" not in reranked["provider_hint"]
    assert uris(everywhere) == uris(reranked) and len(model.prompts) == 2


async def raises(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    raise RuntimeError("the client's model is down")


async def garbage(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return answer("They all look relevant to me!")


async def declines(context: Any, params: types.CreateMessageRequestParams) -> types.ErrorData:
    return types.ErrorData(code=-1, message="the user declined")


async def sleeps(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    await anyio.sleep(3)
    return answer("1")


@pytest.mark.parametrize(
    ("sampler", "hint"),
    [
        (raises, "not reranked: client sampling failed ("),
        (declines, "not reranked: client sampling failed ("),
        (garbage, "not reranked: client sampling failed (the client's model named no passage)"),
        (sleeps, "not reranked: client sampling took over 0.5 s"),
    ],
    ids=["raises", "declines", "answers garbage", "sleeps past the budget"],
)
async def test_a_client_model_that_fails_never_fails_the_call(
    notes_dir: Path, sampler: Sampler, hint: str
) -> None:
    async with stdio(notes_dir, sampler, KNOWLEDGE_MCP_RERANK_TIMEOUT_S="0.5") as client:
        fused = await search(client)
        answered = await search(client, rerank=True)
        after = await search(client, rerank=True, limit=2)
    assert uris(answered) == uris(fused) and uris(after) == uris(fused)[:2]
    assert answered["degraded"] is True and hint in answered["provider_hint"]


@pytest.mark.parametrize(
    ("sampler", "mode", "hint"),
    [
        (
            None,
            "legacy",
            "not reranked: no rerank_model is configured and the client does not offer sampling",
        ),
        (Reverser(), "auto", "sampling cannot reach the client over protocol 2026-07-28"),
    ],
    ids=["no sampling capability", "a stateless protocol"],
)
async def test_a_client_that_cannot_sample_gets_the_fused_order_and_a_hint(
    notes_dir: Path, sampler: Sampler | None, mode: str, hint: str
) -> None:
    async with stdio(notes_dir, sampler, mode) as client:
        fused = await search(client)
        answered = await search(client, rerank=True)
    assert uris(answered) == uris(fused)
    assert hint in answered["provider_hint"]


async def test_a_configured_cross_encoder_is_preferred_to_sampling(notes_dir: Path, tmp_path: Path) -> None:
    model = build(tmp_path / "model", piece_weights(planted={"irrigation": 4.0}))
    sampler = Reverser()
    async with stdio(notes_dir, sampler, KNOWLEDGE_MCP_RERANK_MODEL=str(model)) as client:
        fused = await search(client)
        reranked = await search(client, rerank=True)
    assert fused["results"][0]["title"] != "Garden Irrigation Controller"
    assert reranked["results"][0]["title"] == "Garden Irrigation Controller"
    assert sampler.prompts == []


async def test_a_configured_model_that_does_not_load_is_named_and_the_call_answers(
    notes_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not onnx")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    async with stdio(notes_dir, KNOWLEDGE_MCP_RERANK_MODEL=str(broken)) as client:
        fused = await search(client)
        answered = await search(client, rerank=True)
    assert uris(answered) == uris(fused)
    assert "not reranked: model.onnx does not load as an ONNX model" in answered["provider_hint"]
