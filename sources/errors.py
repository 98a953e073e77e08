"""The one error family of knowledge-mcp.

Every error a caller (a person or a model) can fix carries a message that names the field and
what is allowed. The server turns these into MCP tool errors; the CLI prints them.
"""

from __future__ import annotations


class KnowledgeError(Exception):
    """Base class: a failure the caller can understand and act on."""


class InvalidArgumentError(KnowledgeError):
    """An argument is out of range or of an unknown kind."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class NotFoundError(KnowledgeError):
    """No item with that id exists for this user."""

    def __init__(self, field: str, value: str, hint: str = "") -> None:
        msg = f"{field}: no item with id {value!r}"
        super().__init__(f"{msg}; {hint}" if hint else msg)
        self.field = field


class SourceUnavailableError(KnowledgeError):
    """A source cannot answer right now (missing database, time limit, I/O error)."""


class SessionWriteError(KnowledgeError):
    """The session store could not save a change (a full disk, a read-only or broken sessions.db).

    A search or get still answers, with this as a warning; a tool whose purpose is the change
    (session_cite, session_set_defaults) answers it as its error."""

    def __init__(self, cause: str) -> None:
        super().__init__(
            f"the session could not be saved ({cause}); free disk space or check the data dir's "
            "sessions.db, then retry"
        )


class SchemaVersionError(KnowledgeError):
    """The database was written by a newer knowledge-mcp than this one."""


class ImportFileError(KnowledgeError):
    """One file could not be imported; the import goes on with the rest."""


class WriteNotAllowedError(KnowledgeError):
    """The caller may not change the knowledge base (a read-only credential or server)."""
