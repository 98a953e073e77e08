"""Per-user fixture files for the isolation matrix: every source, a unique marker word per user
and source, written fresh into a temp dir (so the matrix never depends on the shared fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

SOURCES = ("notes", "media", "chats", "characters", "prompts")

MARKERS = {
    "alice": {
        "notes": "zanzibarite",
        "media": "lumenfrost",
        "chats": "pelicanbrass",
        "characters": "cobaltwhisker",
        "prompts": "orchidlathe",
    },
    "bob": {
        "notes": "quokkaberry",
        "media": "zephyrquill",
        "chats": "marzipanoid",
        "characters": "thundercrumb",
        "prompts": "velvetsprocket",
    },
}


def write_user_files(root: Path, user: str) -> dict[str, Path]:
    """One folder per source holding `user`'s items; each item carries its source's marker."""
    m = MARKERS[user]
    folders = {source: root / user / source for source in SOURCES}
    for folder in folders.values():
        folder.mkdir(parents=True)
    (folders["notes"] / f"{user}-journal.md").write_text(
        f"# {user} journal {m['notes']}\n\n{user.title()} wrote about {m['notes']} all day.\n",
        encoding="utf-8",
    )
    if user == "bob":  # bob has an email and a transcript, so his media types differ from alice's
        (folders["media"] / "bob-report.eml").write_text(
            "From: Bob <bob@example.com>\nTo: Team <team@example.com>\n"
            f"Subject: {m['media']} report\nDate: Mon, 03 Mar 2025 10:00:00 +0000\n"
            "Content-Type: text/plain; charset=utf-8\n\n"
            f"The {m['media']} report is ready for review.\n",
            encoding="utf-8",
        )
        (folders["media"] / "bob-talk.vtt").write_text(
            f"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nBob talks about {m['media']} transcripts.\n",
            encoding="utf-8",
        )
    else:
        (folders["media"] / "alice-guide.txt").write_text(
            f"ALICE GUIDE {m['media']}\n\nHow alice tends her {m['media']} garden.\n", encoding="utf-8"
        )
    at = "2025-03-08T19:15:00Z"
    chat = {
        "title": f"{user} chat {m['chats']}",
        "created_at": "2025-03-08T19:14:02Z",
        "messages": [
            {"role": "user", "content": f"Tell me about {m['chats']}.", "timestamp": at},
            {"role": "assistant", "content": f"{m['chats']} is {user}'s secret.", "timestamp": at},
        ],
    }
    (folders["chats"] / f"{user}-chat.json").write_text(json.dumps(chat), encoding="utf-8")
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": f"{user.title()} {m['characters']} Knight",
            "description": f"A knight sworn to {user}, famous for {m['characters']}.",
            "personality": "loyal",
            "scenario": "a castle",
            "first_mes": f"Hail, I guard {m['characters']}.",
            "mes_example": "",
        },
    }
    (folders["characters"] / f"{user}-knight.json").write_text(json.dumps(card), encoding="utf-8")
    (folders["prompts"] / f"{user}-helper.md").write_text(
        f"---\nname: {user.title()} {m['prompts']} Helper\nauthor: {user}\n"
        f"keywords: [{m['prompts']}]\n---\n\n"
        f"Helps {user} with {m['prompts']}.\n\n## System prompt\n\nYou explain {m['prompts']} to {user}.\n",
        encoding="utf-8",
    )
    return folders
