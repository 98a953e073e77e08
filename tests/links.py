"""A hostile neighbour for link tests: a thread that swaps a symbolic link between targets."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from types import TracebackType

CANARY = "quokka-canary-7731"


def vault_and_outside(folder: Path) -> tuple[Path, Path]:
    """A vault with one note, and an outside file holding `CANARY` (of another size)."""
    vault = folder / "vault"
    vault.mkdir()
    (vault / "inside.md").write_text("# Inside\n\nA note about herons.\n", encoding="utf-8")
    outside = folder / "outside.md"
    outside.write_text(f"# Outside\n\nThe private code is {CANARY}, for no index.\n", encoding="utf-8")
    return vault, outside


class LinkFlipper:
    """Points `link` at each of `targets` in turn, every `period` seconds, until stopped; each
    swap is atomic (a new link renamed over the old one), as an attacker would do it."""

    def __init__(self, link: Path, targets: list[Path], period: float = 0.003) -> None:
        self.link = link
        self.targets = targets
        self.period = period
        self.flips = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        spare = self.link.with_name(f".{self.link.name}.next")
        while not self._stop.is_set():
            target = self.targets[self.flips % len(self.targets)]
            spare.unlink(missing_ok=True)
            os.symlink(target, spare)
            os.replace(spare, self.link)
            self.flips += 1
            time.sleep(self.period)

    async def next_flip(self, seen: int) -> int:
        """Wait until the link has flipped since `seen` flips (so each poll meets a new state)."""
        while self.flips == seen:
            await asyncio.sleep(0.001)
        return self.flips

    def __enter__(self) -> LinkFlipper:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
