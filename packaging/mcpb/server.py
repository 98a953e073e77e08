"""The Claude Desktop extension's entry point: import the chosen notes folder, then serve over stdio.

The host starts it as manifest.json says (`uv run --directory <bundle> src/server.py`), with
the user's choices in the environment: KNOWLEDGE_MCP_NOTES_DIR and KNOWLEDGE_MCP_DATA_DIR
(both ordinary settings of the server). An option the user left empty arrives as an empty
string, or from some hosts as the unreplaced `${user_config...}` placeholder: both mean "not
set", so the server's own default applies.
"""

from __future__ import annotations

import os
import subprocess
import sys

from knowledge_mcp.server.cli import main

CHOICES = ("KNOWLEDGE_MCP_NOTES_DIR", "KNOWLEDGE_MCP_DATA_DIR")


def forget_unset_choices() -> None:
    for name in CHOICES:
        value = os.environ.get(name, "").strip()
        if not value or value.startswith("${"):
            os.environ.pop(name, None)


def import_notes() -> None:
    """Import the notes folder (unchanged files are skipped by content hash, so a restart is
    quick). Its summary goes to stderr: stdout is the protocol. A failed import leaves the
    server serving what it has."""
    folder = os.environ.get("KNOWLEDGE_MCP_NOTES_DIR")
    if folder and os.path.isdir(folder):
        command = [sys.executable, "-m", "knowledge_mcp", "import", "notes", folder]
        subprocess.run(command, stdout=sys.stderr, stdin=subprocess.DEVNULL, check=False)


if __name__ == "__main__":
    forget_unset_choices()
    import_notes()
    sys.exit(main(["serve", "--transport", "stdio", "--watch"]))
