"""The budget search of `fitting.py`: the largest cut that fits, in few probes; trimmed metas."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knowledge_mcp.sources.fitting import largest_fit, trim_meta
from knowledge_mcp.sources.media.models import MediaResult


def linear(envelope: int, per_char: float) -> Callable[[int], int]:
    return lambda cut: envelope + int(cut * per_char)


def stepped(envelope: int, word: int) -> Callable[[int], int]:
    """Sizes that only change every `word` characters (cuts at word boundaries)."""
    return lambda cut: envelope + cut // word


# (size, budget, upper, guess, best cut)
FIT_CASES = [
    (linear(100, 0.25), 300, 10_000, 800, 800),  # the chars/4 guess is right
    (linear(100, 1.0), 300, 10_000, 800, 200),  # CJK-like: a token per character
    (linear(100, 0.5), 300, 10_000, 1200, 400),
    (linear(100, 0.1), 300, 10_000, 800, 2000),  # long tokens: the guess was too small
    (linear(100, 0.25), 300, 500, 800, 500),  # the whole item fits
    (linear(290, 1.0), 300, 10_000, 800, 10),
    (stepped(50, 7), 1000, 100_000, 4000, 6656),
]


@pytest.mark.parametrize(("size", "budget", "upper", "guess", "best"), FIT_CASES)
def test_largest_fit_finds_the_fullest_cut_within_one_percent_in_few_probes(
    size: Callable[[int], int], budget: int, upper: int, guess: int, best: int
) -> None:
    probes: list[int] = []

    def measured(cut: int) -> int:
        probes.append(cut)
        return size(cut)

    cut = largest_fit(measured, budget, upper, guess, (0, size(0)))
    assert size(cut) <= budget
    assert cut == upper or size(cut) >= budget - max(1, budget // 100) or cut >= best - 1
    assert cut <= best
    assert len(probes) <= 12


def test_largest_fit_returns_zero_when_only_the_envelope_fits() -> None:
    assert largest_fit(linear(300, 1.0), 300, 1000, 800, (0, 300)) == 0


def email() -> MediaResult:
    return MediaResult.model_validate(
        {
            "id": "m1",
            "source": "media",
            "uri": "media://m1",
            "title": "A" * 200,
            "snippet": "Hi Dana, thanks for dining with us",
            "score": 1.0,
            "rank": 1,
            "created_at": "2025-06-30T19:42:05-04:00",
            "last_modified": "2025-06-30T19:42:05-04:00",
            "tags": ["receipts"],
            "media_type": "email",
            "from": "Corner Bistro <receipts@example.org>",
            "to": ["Dana <dana@example.org>"],
            "loc": {"media_id": "m1", "chunk_index": 0},
        }
    )


# (level, fields kept, fields dropped)
TRIM_CASES = [
    (0, {"snippet", "from_", "to", "tags", "loc", "media_type"}, set()),
    (1, {"from_", "to", "tags", "loc"}, {"snippet"}),
    (2, {"id", "uri", "title", "created_at"}, {"snippet", "from_", "to", "tags", "loc", "media_type"}),
]


@pytest.mark.parametrize(("level", "kept", "dropped"), TRIM_CASES)
def test_trimmed_meta_keeps_what_every_result_has(level: int, kept: set[str], dropped: set[str]) -> None:
    meta = trim_meta(email(), level)
    assert all(getattr(meta, name) for name in kept)
    assert not any(getattr(meta, name) for name in dropped)
    assert (len(meta.title) <= 80) is (level == 2)
