"""A probe inside the app's server process, for bench/replica_memory.py: loaded by Python at startup when
this folder is on PYTHONPATH (the bench puts it there), active only in the `streamlit` process and only
when REPLICA_PROBE_DIR names a folder. A thread waits for a file `ask` there naming a reading, then writes
`<name>.json`: the process's resident memory, its live objects after a full collection, Python's
allocator (its arenas, the bytes in use in them) and glibc's heap (in use, free). An `ask` whose name
starts with `trim` first calls glibc's malloc_trim(0), to see what the allocators could give back.
Reads and writes nothing else; the app itself never imports it."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path


class MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (glibc 2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def resident_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def python_allocator() -> dict[str, float]:
    """Python's small-object allocator, from sys._debugmallocstats (written to file descriptor 2)."""
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()

    def number(label: str) -> int:
        found = re.search(rf"# {label}\s*=\s*([\d,]+)", text)
        return int(found.group(1).replace(",", "")) if found else 0

    return {"arenas_mib": number("arenas allocated current"),  # 1 MiB arenas in Python 3.10 and later
            "in_blocks_mib": number("bytes in allocated blocks") / 2**20}


def reading(libc) -> dict[str, float]:
    gc.collect()
    heap = libc.mallinfo2()
    return {"rss_mib": resident_mib(), "objects": len(gc.get_objects()), **python_allocator(),
            "heap_mib": (heap.arena + heap.hblkhd) / 2**20, "heap_used_mib": heap.uordblks / 2**20,
            "heap_free_mib": heap.fordblks / 2**20}


def serve(folder: Path) -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    ask = folder / "ask"
    while True:
        time.sleep(0.1)
        try:
            name = ask.read_text().strip()
        except OSError:
            continue
        ask.unlink()
        if name.startswith("trim"):
            gc.collect()
            libc.malloc_trim(0)
        part = folder / f"{name}.part"
        part.write_text(json.dumps(reading(libc)))
        part.rename(folder / f"{name}.json")


def start() -> None:
    folder = os.environ.get("REPLICA_PROBE_DIR")
    if folder and b"streamlit" in Path("/proc/self/cmdline").read_bytes():
        threading.Thread(target=serve, args=(Path(folder),), name="replica-probe", daemon=True).start()


start()
