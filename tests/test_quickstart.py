"""Every command in the README's quick start is run by the test suite (or is the suite itself)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")

RUN_BY = {
    "make demo": "tests/server/cli/test_demo.py::test_make_demo_runs_every_step_without_a_traceback",
    "make test": ".ci/run",
}
"""Each quick-start command and where it runs: a test (file::function), or CI's script."""


def quick_start_commands() -> list[str]:
    heading = re.search(r"^##+ Quick start.*$", README, re.MULTILINE | re.IGNORECASE)
    assert heading, "the README has a quick start section"
    rest = README[heading.end() :]
    following = re.search(r"^##+ ", rest, re.MULTILINE)
    section = rest[: following.start() if following else None]
    blocks = re.findall(r"^```(?:sh|bash|shell|console)\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    lines = [
        line.split(" #")[0].strip().removeprefix("$ ") for block in blocks for line in block.splitlines()
    ]
    return [line for line in lines if line and not line.startswith("#")]


def test_every_quick_start_command_is_run_by_a_test_or_by_ci() -> None:
    commands = quick_start_commands()
    assert commands, "the quick start shows its commands in a fenced shell block"
    unknown = [c for c in commands if c not in RUN_BY]
    assert not unknown, f"quick-start commands no test runs (add a test and list it in RUN_BY): {unknown}"
    for command in commands:
        where = RUN_BY[command]
        path, _, function = where.partition("::")
        text = (ROOT / path).read_text(encoding="utf-8")
        assert (f"def {function}(" in text) if function else (command in text), where
