#!/usr/bin/env python3
"""Where a running process's resident memory is:  scripts/mem-breakdown.py PID

Reads /proc/PID/status and /proc/PID/smaps (Linux) and prints the thread count and the
resident set split into: the binary and libraries (file-backed), the main heap (`[heap]`,
glibc's main arena), glibc's other malloc arenas (anonymous mappings inside a 64 MiB
aligned reservation, one per arena: each thread that ever allocated may have been given
one), thread stacks, and the remaining anonymous memory (SQLite's and others' own mmaps,
large allocations malloc served with mmap). Used for docs/benchmarks.md: a resident set
much larger than the live heap is retained by arenas or held by stacks, not by data.
"""
import re
import sys

ARENA = 64 * 1024 * 1024  # HEAP_MAX_SIZE of glibc on 64-bit


def main(pid: str) -> None:
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(re.search(rf"^{name}:\s+(\d+)", status, re.M).group(1))
    threads = field("Threads")
    regions = []
    cur = None
    for line in open(f"/proc/{pid}/smaps"):
        head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
        if head:
            cur = {
                "start": int(head.group(1), 16),
                "end": int(head.group(2), 16),
                "perms": head.group(3),
                "name": head.group(4).strip(),
                "rss": 0,
            }
            regions.append(cur)
        elif line.startswith("Rss:") and cur is not None:
            cur["rss"] = int(line.split()[1])
    # Arena heaps: anonymous, start on a 64 MiB boundary; the rest of their reservation
    # follows as ---p. Stacks: anonymous rw-p just above a ---p guard page.
    totals = {"file": 0, "heap": 0, "arenas": 0, "stacks": 0, "other anonymous": 0}
    arenas = 0
    arena_end = -1
    prev = None
    for r in regions:
        kib = r["rss"]
        name = r["name"]
        if name == "[heap]":
            totals["heap"] += kib
        elif name.startswith("/") or name.startswith("[v"):
            totals["file"] += kib
        elif name == "[stack]":
            totals["stacks"] += kib
        elif r["start"] % ARENA == 0 and r["perms"].startswith("rw") and not name:
            arenas += 1
            arena_end = r["start"] + ARENA
            totals["arenas"] += kib
        elif r["start"] < arena_end and not name:
            totals["arenas"] += kib
        elif (
            prev is not None
            and prev["perms"] == "---p"
            and prev["end"] == r["start"]
            and prev["end"] - prev["start"] == 4096
            and not name
        ):
            totals["stacks"] += kib
        else:
            totals["other anonymous"] += kib
        prev = r
    rss = field("VmRSS")
    print(f"pid {pid}: VmRSS {rss / 1024:.1f} MiB, {threads} threads, {arenas} malloc arenas besides the main heap")
    for what, kib in totals.items():
        print(f"  {what:<16} {kib / 1024:7.1f} MiB")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: mem-breakdown.py PID")
    main(sys.argv[1])
