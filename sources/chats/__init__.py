"""The chats source: ChatGPT and Claude exports, SillyTavern chats and a plain JSON format.

The plain format is documented in `parsing.py`.
"""

from .source import ChatsSource, source

__all__ = ["ChatsSource", "source"]
