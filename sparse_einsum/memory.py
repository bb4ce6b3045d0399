"""Memory sizes: what the machine has, what is free, and size strings such as ``2GB``."""
from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from typing import Iterator

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000 ** 2, "mb": 1000 ** 2,
          "g": 1000 ** 3, "gb": 1000 ** 3, "t": 1000 ** 4, "tb": 1000 ** 4,
          "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str) -> int | None:
    """Bytes of a size such as ``2GB``, ``512 MiB`` or ``1.5g`` (KB = 1000 bytes, KiB =
    1024, as DuckDB reads them); None when `text` is not such a size."""
    m = _SIZE.match(str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: float) -> str:
    """``7.45 GiB``."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} bytes"


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 8 << 30


def available_memory() -> int:
    """Memory a new allocation can get without swapping: MemAvailable on Linux, else the
    free pages, else the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return physical_memory()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a stage builds many objects: every full
    collection rescans all live objects, which made parsing, lowering, planning and
    compiling a program of 500k statements quadratic. The stages make no reference cycles
    worth collecting early; collection resumes afterwards (nested uses are fine)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
