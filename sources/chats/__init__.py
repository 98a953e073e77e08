"""The chats source: ChatGPT and Claude exports, SillyTavern chats and a plain JSON format.

The plain format is documented in `parsing.py`.
"""

from ..source import SourceEntry
from .models import render_get
from .source import ChatsSource, source

__all__ = ["ChatsSource", "entry", "source"]

entry = SourceEntry(
    source=source,
    mime_type="text/plain",
    label="Chat conversation",
    uri_variable="conversation_id",
    render_get=render_get,
)
