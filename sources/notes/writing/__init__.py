"""Writing notes: notes_create / notes_update, with an advisory duplicate check (DESIGN §12)."""

from .models import WRITING_CALL, WritePermit, WriteResult, WritingCall
from .writer import NoteWriter

__all__ = ["WRITING_CALL", "NoteWriter", "WritePermit", "WriteResult", "WritingCall"]
