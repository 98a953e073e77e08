"""Writing notes: notes_create / notes_update, with an advisory duplicate check (DESIGN §12)."""

from .models import WritePermit, WriteResult, WritingHost
from .writer import NoteWriter

__all__ = ["NoteWriter", "WritePermit", "WriteResult", "WritingHost"]
