"""The reliability probes in their tiny size: the real server over stdio, HTTP and WebSocket,
fuzzed, sent malformed messages, killed during imports, many sessions, forged credentials."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

PROBES = (
    "kill9_imports",
    "kill9_writes",
    "malformed",
    "fuzz",
    "prompts_and_resources",
    "concurrent_sessions",
    "credentials",
)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    command = [sys.executable, "-m", "experiments.probes", "--json", "--tiny", "--corpus="]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout))


def test_the_report_has_every_probe_and_the_command_that_made_it(report: dict[str, Any]) -> None:
    assert set(PROBES) <= set(report)
    assert report["command"].startswith("python -m experiments.probes --json --tiny")
    assert set(report["malformed"]) == {"stdio", "http", "websocket"}
    assert report["fuzz"]["tools"] >= 11 and report["fuzz"]["calls"] >= report["fuzz"]["tools"]


def test_no_probe_brought_the_server_down(report: dict[str, Any]) -> None:
    assert report["crashes"] == 0 and report["fuzz"]["crashes"] == 0
    assert report["server_alive_at_end"] and report["concurrent_sessions"]["server_alive"]
    for transport, counts in report["malformed"].items():
        assert counts["crash"] == 0 and counts["serving_after"], transport


def test_the_server_logs_hold_no_traceback_and_no_note_text(report: dict[str, Any]) -> None:
    logs = report["server_logs"]
    assert logs["tracebacks"] == 0 and logs["note_text_in_logs"] == 0


def test_every_malformed_message_gets_its_json_rpc_answer(report: dict[str, Any]) -> None:
    for transport, counts in report["malformed"].items():
        assert counts["improper"] == {} and counts["code_0"] == 0, transport
        assert counts["answered_properly"] == counts["messages"], transport


def test_fuzzed_calls_are_all_answered_without_a_traceback_or_code_0(report: dict[str, Any]) -> None:
    fuzz = report["fuzz"]
    assert fuzz["unanswered"] == 0 and fuzz["rpc_errors_code_0"] == 0
    assert fuzz["leaks"] == 0, fuzz["findings"]


def test_hostile_prompt_arguments_and_resource_uris_are_answered_and_read_nothing_outside(
    report: dict[str, Any],
) -> None:
    surfaces = report["prompts_and_resources"]
    assert surfaces["prompts"] > 0 and surfaces["resource_templates"] > 0 and surfaces["calls"] > 0
    for bad in ("code_0", "unanswered", "leaks", "outside_files_read"):
        assert surfaces.get(bad, 0) == 0, (bad, surfaces["findings"])


def test_no_tool_takes_true_for_an_integer(report: dict[str, Any]) -> None:
    checked = report["fuzz"]["booleans_for_integers"]
    assert checked["conclusive"] > 0 and checked["accepted"] == []


def test_imports_killed_midway_then_rerun_lose_and_double_nothing(report: dict[str, Any]) -> None:
    kills = report["kill9_imports"]
    assert kills["items_after"] == kills["items_clean"] > 0
    assert kills["lost"] == kills["duplicated"] == kills["extra"] == 0
    assert kills["chunks_after"] == kills["chunks_clean"] == kills["index_rows_after"]
    assert kills["integrity_checks"] >= 1 and kills["integrity_not_ok"] == {}


def test_a_server_killed_while_writing_keeps_every_note_it_acknowledged(report: dict[str, Any]) -> None:
    writes = report["kill9_writes"]
    assert writes["acknowledged"] > 0 and writes["serving_after"]
    assert writes["acknowledged_not_in_database"] == writes["acknowledged_without_file"] == 0
    assert writes["integrity_not_ok"] == {}
    assert writes["files_not_in_database_after_reimport"] == 0
    assert writes["items_after_reimport"] == writes["files"]


def test_every_session_searches_and_reads(report: dict[str, Any]) -> None:
    sessions = report["concurrent_sessions"]
    assert sessions["succeeded"] == sessions["sessions"] and sessions["failed"] == 0


def test_no_forged_stale_or_narrowed_credential_is_accepted_and_every_control_is(
    report: dict[str, Any],
) -> None:
    credentials = report["credentials"]
    assert credentials["accepted_when_should_be_refused"] == 0, credentials["accepted"]
    assert credentials["controls_refused"] == [] and credentials["attacks"] == 16
