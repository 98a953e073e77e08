"""The `knowledge-mcp` command line: its argument parser, and `main`, which runs the verb named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from knowledge_mcp import DISTRIBUTION
from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import SOURCE_NAMES, SOURCES
from knowledge_mcp.sources.storage.damage.failures import storage_failure
from knowledge_mcp.sources.storage.damage.integrity import DamagedDatabaseError

from ..config import load_settings
from ..logs import configure_logging
from .doctor import add_parser as doctor_parser
from .doctor import run_doctor
from .hosts import add_parser as setup_parser
from .hosts import run_setup_command
from .measure_args import add_parser as bench_parser
from .measure_args import bench_options
from .migrate import add_parser as migrate_parser

T = TypeVar("T")


def _run(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`anyio.run`, loaded by the commands that use it (`import` runs on asyncio's own runner)."""
    import anyio

    return anyio.run(func, *args)


def _version() -> str:
    from importlib import metadata  # here: only --version needs it

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


class _Version(argparse.Action):
    """`--version`, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kw: Any) -> None:
        print(f"knowledge-mcp {_version()}")
        parser.exit()


def scope_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--scope",
        action="append",
        choices=("read", "write"),
        help=f"what the {what} may do (repeatable; default read: search and read only; write: also "
        "notes_create/notes_update)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="knowledge-mcp", description="Search and read your own knowledge over MCP."
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", type=Path, help="data directory (default: per-user platform dir)")
        p.add_argument("--config", type=Path, help="config.toml (default: $KNOWLEDGE_MCP_CONFIG, else none)")
        p.add_argument("--user", help="user id whose data this is (default: local)")
        p.add_argument(
            "--database-url",
            help="postgresql://… to keep shared state in PostgreSQL (default: SQLite files in the data dir)",
        )
        p.add_argument(
            "--item-store",
            choices=["sqlite", "postgresql"],
            help="where items live: sqlite files (default) or postgresql (needs --database-url)",
        )

    serve = sub.add_parser("serve", help="serve MCP over stdio, HTTP or WebSocket")
    common(serve)
    serve.add_argument(
        "--transport",
        choices=["stdio", "http", "ws"],
        help="stdio for one local user (Claude Desktop); http serves /mcp and /ws on one port; "
        "ws is an alias of http (default: stdio)",
    )
    serve.add_argument("--host", help="HTTP bind address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default: 8000)")
    serve.add_argument(
        "--no-auth", action="store_true", default=None, help="HTTP/WebSocket without auth (loopback only)"
    )
    serve.add_argument(
        "--watch",
        action="store_true",
        default=None,
        help="re-index the imported files and folders when they change on disk (setting: watch)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        help="HTTP worker processes on the one port (default 1; more need --database-url)",
    )

    imp = sub.add_parser("import", help="import files into a source")
    common(imp)
    imp.add_argument("source", choices=SOURCE_NAMES, help="the source to import into")
    imp.add_argument("paths", nargs="+", type=Path, help="files or folders (folders are walked)")
    imp.add_argument("--prune", action="store_true", help="remove items whose file is gone")
    imp.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    imp.add_argument("--embed", action="store_true", help="then compute the vectors semantic search needs")

    search = sub.add_parser("search", help="search from the terminal")
    common(search)
    search.add_argument("query", help='plain words; "a phrase"; a trailing * for a prefix')
    search.add_argument(
        "--source",
        action="append",
        choices=SOURCE_NAMES,
        help="search only this source (repeatable; default all)",
    )
    search.add_argument("--limit", type=int, default=10, help="how many results in all (default 10)")
    search.add_argument("--json", action="store_true", help="print the results as one JSON object")

    embed = sub.add_parser("embed", help="compute missing vectors for semantic search (resumable)")
    common(embed)
    embed.add_argument(
        "--source", action="append", choices=SOURCE_NAMES, help="only this source (repeatable; default all)"
    )

    keys = sub.add_parser("keys", help="API keys for HTTP: create, list, revoke")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    for name, text in (
        ("create", "create a key for --user (printed once)"),
        ("list", "list keys, never the key"),
    ):
        action = keys_sub.add_parser(name, help=text)
        common(action)
        if name == "create":
            scope_option(action, "key")
    revoke = keys_sub.add_parser("revoke", help="revoke the key with this prefix")
    common(revoke)
    revoke.add_argument("prefix", help="the key's prefix as `keys list` shows it (km_XXXXXXXX)")

    glossary = sub.add_parser("glossary", help="the user's search glossary: add, remove, list")
    glossary_sub = glossary.add_subparsers(dest="glossary_command", required=True)
    add = glossary_sub.add_parser("add", help="add synonyms of a term (a word or a phrase)")
    common(add)
    add.add_argument("term", help='the term, e.g. BP or "blood pressure"')
    add.add_argument("synonyms", nargs="+", help="its synonyms, best first (a search adds the first two)")
    remove = glossary_sub.add_parser("remove", help="remove a term and its synonyms")
    common(remove)
    remove.add_argument("term", help="the term to remove (any case)")
    common(glossary_sub.add_parser("list", help="list the terms and their synonyms"))

    token = sub.add_parser("token", help="mint an HS256 JWT for --user with the configured jwt_secret")
    common(token)
    token.add_argument(
        "--ttl",
        type=int,
        default=3600,
        help="lifetime in seconds, at most max_token_lifetime_s (default 3600)",
    )
    scope_option(token, "token")

    migrate_parser(sub, common)
    repair = sub.add_parser("repair", help="rebuild a damaged source database from its imported files")
    common(repair)
    repair.add_argument("source", choices=SOURCE_NAMES, help="the damaged source")
    repair.add_argument("--json", action="store_true", help="print the report as one JSON object")

    demo = sub.add_parser("demo", help="import the fixtures into a throw-away dir and query the real server")
    demo.add_argument("--keep", action="store_true", help="keep the throw-away data dir")

    ev = sub.add_parser("eval", help="retrieval quality on a BEIR dataset")
    ev.add_argument(
        "--beir", type=Path, required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/"
    )
    ev.add_argument("--split", default="test", help="the qrels split to score (default test)")
    ev.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ev.add_argument("--limit-queries", type=int, help="evaluate only the first N queries")
    ev.add_argument(
        "--split-sources",
        action="store_true",
        help="split the corpus across the five sources; knowledge_search vs one index (merge loss)",
    )
    ev.add_argument(
        "--session", type=int, default=0, help="with --split-sources: N queries as one session per seen mode"
    )
    ev.add_argument(
        "--retrieval",
        choices=["lexical", "dense", "hybrid"],
        default="lexical",
        help="bm25 alone, embeddings alone, or both fused (default lexical)",
    )
    ev.add_argument(
        "--data-dir",
        type=Path,
        help="keep the imported corpus and its vectors here, so a second run does not embed again",
    )
    ev.add_argument(
        "--database-url",
        help="postgresql://…: import into the PostgreSQL store and rank there by its exact BM25 "
        "(lexical only)",
    )
    ev.add_argument(
        "--folds",
        type=int,
        help="with --retrieval hybrid: refit the fusion on K-1 folds of the queries, score the held-out one",
    )

    bench_parser(sub)
    setup_parser(sub)
    doctor_parser(sub, common)
    return parser


def _settings(args: argparse.Namespace) -> Any:
    return load_settings(
        getattr(args, "config", None),
        data_dir=getattr(args, "data_dir", None),
        user=getattr(args, "user", None),
        database_url=getattr(args, "database_url", None),
        item_store=getattr(args, "item_store", None),
        transport=getattr(args, "transport", None),
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        no_auth=getattr(args, "no_auth", None),
        watch=getattr(args, "watch", None),
        workers=getattr(args, "workers", None),
    )


GETTING_STARTED = (
    "knowledge-mcp: your notes, media, chats, characters and prompts, searchable by any MCP host.\n"
    "  1. import:  knowledge-mcp import notes ~/notes   (or: knowledge-mcp demo, to see it on sample data)\n"
    "  2. connect: knowledge-mcp setup claude-desktop   then: knowledge-mcp doctor   (every command: --help)"
)


def main(argv: list[str] | None = None) -> int:
    if not (sys.argv[1:] if argv is None else argv):
        print(GETTING_STARTED)  # not argparse's "the following arguments are required"
        return 0
    args = build_parser().parse_args(argv)
    try:
        return dispatch(args)
    except KnowledgeError as exc:
        print(f"knowledge-mcp: {exc}", file=sys.stderr)
        return 1
    except DamagedDatabaseError as exc:  # found where no command explains it (embed, migrate)
        print(f"knowledge-mcp: {storage_failure(exc, exc.path)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from .demo import run_demo

        configure_logging("WARNING")
        return _run(run_demo, args.keep)
    if args.command == "eval":
        from knowledge_mcp.bench.evaluation import run_eval_command

        configure_logging("WARNING")
        if args.split_sources:
            from knowledge_mcp.bench.split.evaluation import run_split_eval_command

            return run_split_eval_command(
                args.beir,
                args.split,
                args.json,
                args.limit_queries,
                args.session,
                args.retrieval,
                args.data_dir,
            )
        if args.folds is not None:
            from knowledge_mcp.bench.dense.fit_command import run_fit_command

            if args.retrieval != "hybrid" or args.folds < 2:
                raise KnowledgeError(
                    "--folds: cross-validates the hybrid fusion; use --retrieval hybrid, K >= 2"
                )
            return run_fit_command(
                args.beir, args.split, args.folds, args.json, args.limit_queries, args.data_dir
            )
        if args.database_url:
            from knowledge_mcp.bench.postgres.evaluation import run_pg_eval_command

            if args.retrieval != "lexical":
                raise KnowledgeError("--database-url: the PostgreSQL store ranks lexically only so far")
            return run_pg_eval_command(
                args.database_url, args.beir, args.split, args.json, args.limit_queries
            )
        return run_eval_command(
            args.beir, args.split, args.json, args.limit_queries, args.retrieval, args.data_dir
        )
    if args.command == "bench":
        from knowledge_mcp.bench.run import run_bench_command

        configure_logging("WARNING")
        if args.embed_beir:
            from knowledge_mcp.bench.dense.embed_speed import run_embed_speed_command

            return run_embed_speed_command(args.embed_beir, args.embed_windows)
        if args.database_url:
            from knowledge_mcp.bench.postgres.command.options import pg_bench_options
            from knowledge_mcp.bench.postgres.command.report import run_pg_bench_command

            return run_pg_bench_command(pg_bench_options(args, bench_options(args).clients), args.json)
        return run_bench_command(bench_options(args), args.json)
    if args.command == "setup":
        return run_setup_command(args)
    if args.command == "doctor":
        configure_logging("ERROR")
        return _run(run_doctor, args)
    settings = _settings(args)
    serving = args.command == "serve"
    configure_logging(settings.log_level if serving else "WARNING", library_debug=settings.log_library_debug)
    if args.command == "serve":
        from ..transports.serve import run_stdio, serve_http

        if settings.transport == "stdio":
            _run(run_stdio, settings)
        else:  # ws: an alias of http
            serve_http(settings)
        return 0
    if args.command == "import":
        from .commands import import_command, print_summary

        summary = import_command(settings, args.source, args.paths, args.prune)
        print_summary(summary, args.json)
        if args.embed:
            from .embedding import run_embed

            _run(run_embed, settings, [args.source])
        return summary.exit_code
    if args.command == "embed":
        from .embedding import print_embed_reports, run_embed

        print_embed_reports(_run(run_embed, settings, args.source or list(SOURCES)))
        return 0
    if args.command == "keys":
        from .commands import run_keys_command

        scopes = getattr(args, "scope", None) or []
        return _run(
            run_keys_command, settings, args.keys_command, args.user, getattr(args, "prefix", None), scopes
        )
    if args.command == "glossary":
        from .glossary import run_glossary

        term, synonyms = getattr(args, "term", None), getattr(args, "synonyms", [])
        return run_glossary(settings.data_dir, settings.user, args.glossary_command, term, synonyms)
    if args.command == "token":
        from ..auth.tokens import mint_token

        print(mint_token(settings, settings.user, args.ttl, args.scope or []))
        return 0
    if args.command == "migrate":
        from .migrate import check_sources, print_reports, run_migrate

        sources = check_sources(args.source)
        return print_reports(_run(run_migrate, settings, args.to, sources), args.json)
    if args.command == "repair":
        from .damage.repair import print_report, run_repair

        return print_report(_run(run_repair, settings, args.source), args.json)
    if args.command == "search":
        from .commands import print_results, run_search

        if not 1 <= args.limit <= 100:
            raise KnowledgeError("--limit: must be 1..100")
        rows = _run(run_search, settings, args.query, args.source or list(SOURCES), args.limit)
        print_results(rows, args.json)
        return 0
    raise AssertionError(args.command)
