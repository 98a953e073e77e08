"""Plain front matter read without the YAML parser comes out exactly as the parser reads it, and
anything less plain is left to the parser."""

from __future__ import annotations

import random

import pytest
import yaml

from knowledge_mcp.sources.text.frontmatter import SAFE_LOADER, _simple_mapping, split_front_matter

# Blocks the plain reading takes: the mapping is the parser's.
PLAIN = [
    'title: "Obesity and the risk of myocardial infarction: a cohort study"',
    "title: Weeknight dal",
    "title: Bob's notes, part 2 (draft)",
    'title: ""',
    'title: "  spaced  "',
    "title: café au lait",
    'title: "# not a comment: and not a key"',
    "title: plain   \nauthor: Dana",
    "title: a\ntitle: b",
    "my-key: x\n_private: y",
    "title: 2024 review",
    "title: 1.5 cups of rice",
]

# Blocks left to the parser (a number, a date, a boolean, null, escapes, lists, comments…).
NOT_PLAIN = [
    "title: 2024",
    "title: 1.5",
    "created: 2024-01-02",
    "draft: yes",
    "draft: off",
    "title: null",
    "title: ~",
    "true: x",
    'title: "tab\\there"',
    "title: 'single'",
    "tags: [a, b]",
    "tags:\n  - a",
    "title: a # comment",
    "title: key: value",
    "title:",
    "title: -dash",
    "title: *alias",
    "title: Über",
    "# only a comment",
    "",
    "title: x\n",
    "title:\tx",
    "title: a\u2028b",
    "title: a\x85b",
    "title: a\x7fb",
    "title: a\ufeffb",
]


def parsed(block: str) -> object:
    return yaml.load(block, Loader=SAFE_LOADER)


@pytest.mark.parametrize("block", PLAIN)
def test_plain_front_matter_is_read_as_the_yaml_parser_reads_it(block: str) -> None:
    assert _simple_mapping(block) is not None
    assert _simple_mapping(block) == parsed(block) == yaml.load(block, Loader=yaml.SafeLoader)
    assert split_front_matter(f"---\n{block}\n---\nBody")[0] == parsed(block)


@pytest.mark.parametrize("block", NOT_PLAIN)
def test_front_matter_that_is_not_plain_is_left_to_the_yaml_parser(block: str) -> None:
    assert _simple_mapping(block) is None


PIECES = ["a", "Z", "7", "12", "1.5", "1e3", "0x1f", "2024-01-02", "10:30", " ", "  ", "-", "?", ":", "#"]
PIECES += [" #"]
PIECES += ["'", '"', "\\", "[", "]", "{", "}", ",", "&a", "*a", "!x", "|", ">", "%", "@", "`", "~", "\t"]
PIECES += ["é", "Ü", "日本", "😀", "\xa0", "\u2028", "\x85", "\x7f", "\x01", "yes", "No", "null", "=", "<<"]
KEYS = ["title", "tags", "yes", "off", "true", "null", "y", "a-b", "_x", "k1", "<<", "=", "date", "x" * 70]


def generated_blocks(count: int, seed: int) -> list[str]:
    """Front matter of 1 to 3 `key: value` lines from risky pieces (quoted or not)."""
    rng = random.Random(seed)

    def value() -> str:
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4)))
        return rng.choice([f'"{text}"', f"'{text}'", text, text])

    def line() -> str:
        return f"{rng.choice(KEYS)}:{rng.choice([' ', '  ', '', chr(9)])}{value()}{rng.choice(['', ' '])}"

    return ["\n".join(line() for _ in range(rng.randint(1, 3))) for _ in range(count)]


def test_generated_front_matter_read_plainly_always_equals_the_parsers_reading() -> None:
    taken = 0
    for block in generated_blocks(20_000, seed=28):
        mapping = _simple_mapping(block)
        if mapping is None:
            continue
        taken += 1
        assert mapping == parsed(block), block
    assert taken > 100  # the plain reading was exercised, not only refused
