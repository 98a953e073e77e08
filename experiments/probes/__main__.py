"""`python -m experiments.probes --json [--quick | --tiny] [--seed N]`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio

from .run import CORPUS, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.probes", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="fewer calls and sessions (about a minute)")
    group.add_argument("--tiny", action="store_true", help="a few of each (seconds; the test's size)")
    parser.add_argument("--seed", type=int, default=25, help="seed of the fuzz and the kill moments")
    parser.add_argument(
        "--corpus",
        default=str(CORPUS),
        help="a BEIR corpus.jsonl to make the imported notes from (empty: made-up notes)",
    )
    args = parser.parse_args(argv)
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    report = anyio.run(run, mode, args.seed, Path(args.corpus) if args.corpus else None)
    flags = " --quick" if args.quick else " --tiny" if args.tiny else ""
    report["command"] = f"python -m experiments.probes --json{flags} --seed {args.seed}"
    print(json.dumps(report, indent=None if args.json else 2, ensure_ascii=False))
    return 1 if report["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
