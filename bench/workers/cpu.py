"""Where the CPU goes during a load run: process trees' CPU seconds from /proc (Linux).

A load run's calls/s is bounded by the cores the server workers, the load clients (this
process, counted without its children) and PostgreSQL's backends share with everything else
on the machine. `snapshot` reads each party's CPU seconds so far (a process tree: its live
descendants' times plus what it has collected from reaped ones) and the machine's busy
seconds; `spent` turns two snapshots into seconds per party, "others" being the machine's
busy time nobody here spent.
Where /proc is not readable every figure is None and the bench goes on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def stat_fields(text: str) -> list[str]:
    """The fields of a /proc/<pid>/stat line after the command name (which may hold spaces
    and parentheses): index 0 is the state, 1 the parent pid, 11..14 utime stime cutime cstime."""
    return text[text.rindex(")") + 2 :].split()


def own_and_reaped_ticks(fields: list[str]) -> int:
    """utime + stime + cutime + cstime: the process's CPU and that of its waited-for children."""
    return sum(int(v) for v in fields[11:15])


def busy_ticks(cpu_line: str) -> int:
    """The busy ticks of /proc/stat's `cpu` line: everything but idle and iowait."""
    values = [int(v) for v in cpu_line.split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values[:8]) - idle


def _stats() -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = stat_fields((entry / "stat").read_text())
            except (OSError, ValueError):
                continue  # ended while read
    return out


def tree_ticks(root: int, stats: dict[int, list[str]]) -> int | None:
    """CPU ticks of `root` and all its live descendants (each with its reaped children)."""
    if root not in stats:
        return None
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += own_and_reaped_ticks(stats[pid])
        todo += children.get(pid, [])
    return total


@dataclass(frozen=True)
class Snapshot:
    ticks: dict[str, int | None]
    machine: int | None


def snapshot(trees: dict[str, int | None], alone: dict[str, int]) -> Snapshot:
    """CPU ticks so far of each named process tree (None: unknown pid), of each process of
    `alone` without its children (the bench process, whose child is the server), and of the
    machine."""
    try:
        stats = _stats()
        machine: int | None = busy_ticks((PROC / "stat").read_text().splitlines()[0])
    except OSError:
        return Snapshot({name: None for name in [*trees, *alone]}, None)
    ticks = {name: tree_ticks(pid, stats) if pid else None for name, pid in trees.items()}
    for name, pid in alone.items():
        ticks[name] = sum(int(v) for v in stats[pid][11:13]) if pid in stats else None
    return Snapshot(ticks, machine)


def spent(before: Snapshot, after: Snapshot) -> dict[str, float | None]:
    """CPU seconds per party between two snapshots, and "others": the rest of the machine's."""
    out: dict[str, float | None] = {}
    for name, start in before.ticks.items():
        end = after.ticks.get(name)
        out[name] = None if start is None or end is None else round((end - start) / TICKS, 2)
    if before.machine is None or after.machine is None:
        out["others"] = None
        return out
    ours = sum(v for v in out.values() if v is not None)
    machine = round((after.machine - before.machine) / TICKS, 2)
    out["machine"] = machine
    out["others"] = round(max(machine - ours, 0.0), 2)
    return out


def parent_of(pid: int) -> int | None:
    """A process's parent pid (a PostgreSQL backend's is the postmaster), None if unreadable."""
    try:
        return int(stat_fields((PROC / str(pid) / "stat").read_text())[1])
    except (OSError, ValueError, IndexError):
        return None


def load_average() -> str | None:
    """/proc/loadavg's three averages, as `uptime` prints them."""
    try:
        return " ".join((PROC / "loadavg").read_text().split()[:3])
    except OSError:
        return None
