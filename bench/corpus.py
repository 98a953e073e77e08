"""The synthetic corpus and query set of `knowledge-mcp bench` (DESIGN §11).

Deterministic for a seed: a Zipfian vocabulary (real function and content words at the head,
pronounceable stems in the long tail), notes 80–2,000 words, media documents longer and emails
short, chats of 4–40 messages, characters and prompts as field dicts. Items are shaped as the
sources' own parsers shape them (explicit `ChunkSpan`s for messages and fields).

A million-chunk corpus is about 170 million words, so two things matter: words are drawn in
bulk (random bytes indexing a 2^20-slot table laid out by the Zipf weights, not one
`random.choices` bisect per word), and the corpus is a stream (`CorpusStream`) the bench
imports as it is generated, keeping only counts, a running fingerprint and a small sample of
items for phrase queries — not a gigabyte of text.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from knowledge_mcp.sources.characters.cards import PROMPT_FIELDS, TEXT_FIELDS
from knowledge_mcp.sources.prompts.parsing import FIELDS as PROMPT_FILE_FIELDS
from knowledge_mcp.sources.prompts.parsing import HEADINGS as PROMPT_HEADINGS
from knowledge_mcp.sources.search.query import STOP_WORDS
from knowledge_mcp.sources.storage.items import ChunkSpan, ParsedItem
from knowledge_mcp.sources.storage.records.chunking import chunk_text
from knowledge_mcp.sources.text import dates
from knowledge_mcp.sources.text.fields import Section, assemble

VOCABULARY_SIZE = 4000
ZIPF_S = 1.07
TABLE_BITS = 20  # word-sampling table slots: 2^20, so the rarest word still has ~20 slots
PHRASE_SAMPLE = 500  # items kept (reservoir) to cut phrase queries from
# The share of chunks each source gets.
SHARES = {"notes": 0.32, "media": 0.26, "chats": 0.28, "characters": 0.07, "prompts": 0.07}

HEAD = """the of and to a in is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no will more
can who what up said out some time about into them only could other new people like year these
then over after two first also way work system data model query search index memory file note
document project research garden recipe bread server network design test code review budget
travel meeting report history music story energy solar water market health language science""".split()  # noqa: SIM905
_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr sl st tr ch sh th".split()  # noqa: SIM905
_VOWELS = "a e i o u ai ea ie oa ou".split()  # noqa: SIM905
_CODAS = ["n", "r", "s", "t", "l", "m", "nd", "rt", "st", "ck", "ng", "x", ""]
_SUFFIXES = ["", "", "", "ing", "er", "ion", "ity", "al", "ment", "ous", "ly", "ed"]


def vocabulary(size: int = VOCABULARY_SIZE) -> list[str]:
    """The vocabulary by rank: HEAD first, then pronounceable stems (fixed, seed-independent)."""
    words = list(dict.fromkeys(HEAD))
    seen = set(words)
    pick = random.Random(0)  # the vocabulary is the same for every seed
    while len(words) < size:
        parts = [pick.choice(p) for p in (_ONSETS, _VOWELS, _CODAS, _VOWELS[:5], _CODAS, _SUFFIXES)]
        word = "".join(parts[: pick.choice((3, 4, 5, 6))])
        if len(word) >= 4 and word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass
class BenchItem:
    source: str
    item: ParsedItem

    @cached_property
    def chunk_count(self) -> int:
        return len(self.item.chunks) if self.item.chunks is not None else len(chunk_text(self.item.content))


@dataclass
class Corpus:
    """A generated corpus: items (only when kept), per-source counts, queries, fingerprint."""

    seed: int
    items: list[BenchItem] = field(default_factory=list)
    queries: list[tuple[str, str]] = field(default_factory=list)
    """(kind, query): common, rare, mix, phrase, prefix."""
    item_counts: dict[str, int] = field(default_factory=dict)
    chunk_counts: dict[str, int] = field(default_factory=dict)
    digest: str = ""

    def chunks(self, source: str | None = None) -> int:
        return sum(n for name, n in self.chunk_counts.items() if source is None or name == source)

    def fingerprint(self) -> str:
        return self.digest


def zipf_table(words: list[str], bits: int = TABLE_BITS) -> list[str]:
    """2^bits slots, each word holding slots in proportion to its Zipf weight (largest remainder)."""
    slots = 1 << bits
    weights = [1 / (r + 1) ** ZIPF_S for r in range(len(words))]
    total = sum(weights)
    exact = [w / total * slots for w in weights]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(words)), key=lambda r: counts[r] - exact[r])
    for r in by_remainder[: slots - sum(counts)]:
        counts[r] += 1
    return [w for w, c in zip(words, counts, strict=True) for _ in range(c)]


_MASKS = [bytes(i & ((1 << b) - 1) for i in range(256)) for b in range(9)]  # keep the low b bits


def random_indices(rng: random.Random, n: int, bits: int) -> array[int]:
    """n uniform integers below 2^bits (8 <= bits <= 24) from random bytes, without a Python loop."""
    if bits <= 16:
        raw = bytearray(rng.randbytes(2 * n))
        raw[1::2] = raw[1::2].translate(_MASKS[bits - 8])
        return array("H", bytes(raw))
    raw3 = rng.randbytes(3 * n)
    wide = bytearray(4 * n)
    wide[0::4] = raw3[0::3]
    wide[1::4] = raw3[1::3]
    wide[2::4] = raw3[2::3].translate(_MASKS[bits - 16])
    return array("I", bytes(wide))


def pool_bits(size: int) -> int:
    """Sentence pool of 2^bits: about one pool sentence per 8 corpus sentences, 2^12..2^20."""
    return max(12, min(20, (size * 12 // 8).bit_length()))


class Writer:
    """Zipfian text from one `random.Random`, drawn in bulk.

    Words come from a 2^20-slot Zipf table indexed by random bytes. Body text is sentences
    drawn from a pool of Zipfian sentences (2^`pool_bits`, generated first): a million-chunk
    corpus is ~12 million sentences, and choosing sentences rather than words is what makes it
    minutes rather than an hour. Each pool sentence recurs ~8 times in the corpus, at random
    places; term and document frequencies stay Zipfian.
    """

    def __init__(self, rng: random.Random, pool_size_bits: int = 12) -> None:
        self.rng = rng
        self.words = vocabulary()
        self.table = zipf_table(self.words)
        self.pool_bits = pool_size_bits
        self.pool = [self.sentence() for _ in range(1 << pool_size_bits)]

    def words_n(self, n: int) -> list[str]:
        return list(map(self.table.__getitem__, random_indices(self.rng, n, TABLE_BITS)))

    def sentence(self) -> str:
        """6–22 words; about one in six ends its paragraph."""
        length, brk = self.rng.randbytes(2)
        return " ".join(self.words_n(6 + length % 17)).capitalize() + ("." if brk >= 46 else ".\n\n")

    def text(self, n_words: int) -> str:
        """About `n_words` words (sentences average 14), at least one sentence."""
        picks = random_indices(self.rng, max(1, round(n_words / 14)), self.pool_bits)
        return " ".join(map(self.pool.__getitem__, picks)).replace("\n\n ", "\n\n").strip()

    def title(self) -> str:
        return " ".join(self.words_n(self.rng.randint(2, 6))).capitalize()

    def stamp(self) -> str:
        base = dt.datetime(2019, 1, 1, tzinfo=dt.UTC)
        return dates.iso(base + dt.timedelta(seconds=self.rng.randrange(6 * 365 * 86400)))


def note(w: Writer, i: int) -> ParsedItem:
    n = min(2000, max(80, int(w.rng.lognormvariate(5.8, 0.8))))
    stamp = w.stamp()
    return ParsedItem("", w.title(), w.text(n), stamp, stamp, tags=w.words_n(w.rng.randint(0, 3)))


def media(w: Writer, i: int) -> ParsedItem:
    stamp = w.stamp()
    if w.rng.random() < 0.4:
        subject = w.title()
        body = w.text(min(400, max(20, int(w.rng.lognormvariate(4.3, 0.7)))))
        meta: dict[str, Any] = {
            "media_type": "email",
            "from": f"{w.words_n(1)[0]}@example.org",
            "to": [f"{w.words_n(1)[0]}@example.org"],
            "cc": [],
            "date": stamp,
            "subject": subject,
            "message_id": f"<bench-{i}@example.org>",
            "thread_id": f"bench-thread-{i % 97}",
            "attachments": [],
            "summary": body[:200],
            "file_name": f"mail-{i}.eml",
        }
        return ParsedItem(f"m{i}", subject, body, stamp, stamp, meta=meta)
    body = w.text(min(12000, max(400, int(w.rng.lognormvariate(7.3, 0.7)))))
    kind = w.rng.choice(["markdown", "txt", "html", "pdf"])
    meta = {"media_type": kind, "doc_type": kind, "summary": body[:200], "headings": [], "file_name": f"d{i}"}
    return ParsedItem("", w.title(), body, stamp, stamp, meta=meta)


def chat(w: Writer, i: int) -> ParsedItem:
    blocks: list[str] = []
    spans: list[ChunkSpan] = []
    offset = 0
    for index in range(w.rng.randint(4, 40)):
        role = "user" if index % 2 == 0 else "assistant"
        text = w.text(min(600, max(3, int(w.rng.lognormvariate(3.5, 0.9)))))
        prefix = f"{role}: "
        start = offset + len(prefix)
        blocks.append(prefix + text)
        meta = {
            "message_id": str(index),
            "message_index": index,
            "role": role,
            "sender": role,
            "timestamp": None,
        }
        spans.append(ChunkSpan(start, start + len(text), field="message", meta=meta))
        offset = start + len(text) + 2
    stamp = w.stamp()
    meta_item = {"message_count": len(spans), "file_name": f"chat-{i}.json"}
    return ParsedItem(f"c{i}", w.title(), "\n\n".join(blocks), stamp, stamp, meta=meta_item, chunks=spans)


def character(w: Writer, i: int) -> ParsedItem:
    sections = [Section(key, heading, w.text(w.rng.randint(15, 300))) for key, heading in TEXT_FIELDS]
    sections += [Section(key, heading, w.text(w.rng.randint(0, 80))) for key, heading in PROMPT_FIELDS]
    tags = w.words_n(w.rng.randint(1, 4))
    sections.append(Section("tags", "Tags", ", ".join(tags)))
    content, spans = assemble(sections)
    stamp = w.stamp()
    meta = {"spec": "chara_card_v2", "creator": None, "character_version": None, "nickname": None}
    name = w.title()
    return ParsedItem(
        "", name, content, stamp, stamp, tags=list(dict.fromkeys(tags)), meta=meta, chunks=spans
    )


def prompt(w: Writer, i: int) -> ParsedItem:
    lengths = {"details": (5, 60), "system_prompt": (20, 400), "user_prompt": (5, 150)}
    keywords = list(dict.fromkeys(w.words_n(w.rng.randint(1, 5))))
    name = w.title()
    values = {f: w.text(w.rng.randint(*lengths[f])) for f in lengths}
    values.update(name=name, author="", keywords=", ".join(keywords))
    content, spans = assemble(Section(f, PROMPT_HEADINGS[f], values[f]) for f in PROMPT_FILE_FIELDS)
    stamp = w.stamp()
    meta = {"author": None, "format": "yaml", "file_name": f"p{i}.yaml"}
    return ParsedItem(f"p{i}", name, content, stamp, stamp, tags=keywords, meta=meta, chunks=spans)


MAKERS = {"notes": note, "media": media, "chats": chat, "characters": character, "prompts": prompt}


def queries(w: Writer, sample: list[BenchItem], count: int) -> list[tuple[str, str]]:
    vocab, rng = w.words, w.rng
    content = [v for v in vocab[:300] if v not in STOP_WORDS]
    per = max(1, count // 5)
    out = [("common", rng.choice(content)) for _ in range(per)]
    out += [("rare", rng.choice(vocab[1500:])) for _ in range(per)]
    out += [("mix", " ".join(rng.choice(vocab[:2000]) for _ in range(rng.randint(2, 4)))) for _ in range(per)]
    for _ in range(per):
        words = rng.choice(sample).item.content.split()
        at = rng.randrange(max(1, len(words) - 3))
        phrase = " ".join(words[at : at + rng.randint(2, 3)]).strip(".,:").lower()
        out.append(("phrase", f'"{phrase}"'))
    out += [("prefix", rng.choice(vocab[50:1500])[:4] + "*") for _ in range(count - len(out))]
    return out


def default_query_count(size: int) -> int:
    """200 queries (p99 is then the 2nd-worst), fewer (at least 50) under 1,000 chunks."""
    return min(200, max(50, size // 5))


class CorpusStream:
    """About `size` chunks across all five sources, the same for the same seed, as a stream.

    Iterate `items()` once (source by source, in `SHARES` order); afterwards `corpus` holds the
    counts, the fingerprint and the queries. Phrase queries are cut from a reservoir sample of
    items drawn with its own generator, so keeping the sample does not change the corpus.
    """

    def __init__(self, size: int, seed: int, query_count: int | None = None, keep: bool = False) -> None:
        self.size = size
        self.keep = keep
        self.query_count = query_count if query_count is not None else default_query_count(size)
        self.writer = Writer(random.Random(seed), pool_bits(size))
        self.corpus = Corpus(seed)

    def items(self) -> Iterator[BenchItem]:
        corpus, h = self.corpus, hashlib.sha256()
        pick, sample, seen = random.Random(f"sample-{corpus.seed}"), list[BenchItem](), 0
        for name, share in SHARES.items():
            budget, made, i = max(1, round(self.size * share)), 0, 0
            while made < budget:
                b = BenchItem(name, MAKERS[name](self.writer, i))
                h.update(f"{b.source}\x00{b.item.key}\x00{b.item.content_hash()}\x00".encode())
                seen += 1
                if len(sample) < PHRASE_SAMPLE:
                    sample.append(b)
                elif (at := pick.randrange(seen)) < PHRASE_SAMPLE:
                    sample[at] = b
                if self.keep:
                    corpus.items.append(b)
                made += b.chunk_count
                i += 1
                yield b
            corpus.item_counts[name], corpus.chunk_counts[name] = i, made
        corpus.queries = queries(self.writer, sample, self.query_count)
        for kind, query in corpus.queries:
            h.update(f"{kind}\x00{query}\x00".encode())
        corpus.digest = h.hexdigest()[:16]


def generate(size: int, seed: int, query_count: int | None = None) -> Corpus:
    """The whole corpus in memory (tests, small sizes); the bench streams `CorpusStream`."""
    stream = CorpusStream(size, seed, query_count, keep=True)
    for _ in stream.items():
        pass
    return stream.corpus
