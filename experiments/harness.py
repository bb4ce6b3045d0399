"""The benchmark harness every script uses: methods timed side by side (warm-up, then
round-robin rounds, medians and their noise) and CSV rows that carry their provenance
(command, commit, machine, versions, load average at the start and at the end)."""
from __future__ import annotations

import csv
import datetime
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable, Mapping

from .common import code_version, command_line

VERSIONED = ("sparse-einsum", "duckdb", "numpy", "scipy", "pyspark", "psycopg", "torch")


@dataclass
class Timings:
    """Seconds per run of each method, in the order the methods were given."""
    samples: dict[str, list[float]] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def noise(self, name: str) -> float:
        """A robust standard deviation of one run: 1.4826 times the median absolute
        deviation."""
        middle = self.median(name)
        return 1.4826 * statistics.median(abs(s - middle) for s in self.samples[name])

    def ratio(self, name: str, baseline: str) -> float:
        return self.median(name) / self.median(baseline)

    def lines(self, baseline: str | None = None) -> list[str]:
        """One line per method: median, noise, and the ratio to `baseline`."""
        out, width = [], max(map(len, self.samples), default=0)
        for name in self.samples:
            line = f"  {name:<{width}} {self.median(name):9.4f} s  ±{self.noise(name):.4f}"
            if baseline is not None:
                line += f"  {self.ratio(name, baseline):6.2f}x {baseline}"
            out.append(line)
        return out

    def rows(self, baseline: str | None = None, **fields: object) -> list[dict[str, object]]:
        """One CSV row per method: `fields`, then its runs, median, noise and ratio."""
        return [{**fields, "method": name, "runs": len(seconds),
                 "median_s": f"{self.median(name):.6f}", "noise_s": f"{self.noise(name):.6f}",
                 "ratio": f"{self.ratio(name, baseline):.3f}" if baseline else "",
                 "baseline": baseline or ""}
                for name, seconds in self.samples.items()]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds `fn` took, its result)."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def busy_cores(fn: Callable[[], object]) -> tuple[float, object]:
    """(the machine's cores busy on average while `fn` ran, its result): all processes'
    CPU time (Linux's /proc/stat), so a Spark run's executors and driver count; NaN
    elsewhere."""
    before = _cpu_ticks()
    result = fn()
    after = _cpu_ticks()
    if before is None or after is None or after[1] == before[1]:
        return float("nan"), result
    return os.cpu_count() * (after[0] - before[0]) / (after[1] - before[1]), result


def _cpu_ticks() -> tuple[int, int] | None:
    """The machine's busy and total CPU ticks so far, or None without /proc/stat."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = ticks[3] + ticks[4]              # idle and waiting for I/O
    return sum(ticks) - idle, sum(ticks)


def side_by_side(methods: Mapping[str, Callable[[], object]], repeats: int, *, warmup: int = 1,
                 check: Callable[[str, object], None] | None = None) -> Timings:
    """Run every method `warmup` times, then `repeats` rounds in which each runs once in
    turn, so that drifting load falls on all of them alike; `check(name, result)` sees
    the result of every timed run (outside the timed part)."""
    for _ in range(warmup):
        for fn in methods.values():
            fn()
    timings = Timings({name: [] for name in methods})
    for _ in range(repeats):
        for name, fn in methods.items():
            seconds, result = timed(fn)
            timings.samples[name].append(seconds)
            if check:
                check(name, result)
    return timings


def machine() -> str:
    """The CPU model, its cores and the memory, as one text."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return f"{model}, {os.cpu_count()} cores, {memory:.0f} GiB"


def versions() -> str:
    """The versions of the installed packages a result depends on."""
    found = []
    for package in VERSIONED:
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return f"python {sys.version.split()[0]}; " + "; ".join(found)


class Provenance:
    """Where a run's numbers come from; made when the run starts, read when rows are
    written (the load average is taken at both times)."""

    def __init__(self, module: str, argv: list[str] | None = None) -> None:
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.fixed = {"command": command_line(module, argv), "code": code_version(),
                      "machine": machine(), "versions": versions(),
                      "started_utc": self.started.strftime("%Y-%m-%d %H:%M:%S"),
                      "load_start": f"{os.getloadavg()[0]:.2f}"}

    def columns(self) -> dict[str, str]:
        return {**self.fixed, "load_end": f"{os.getloadavg()[0]:.2f}"}

    def header(self) -> str:
        """The provenance as lines for a printed log."""
        return "\n".join(f"{key}: {value}" for key, value in self.columns().items())


def write_csv(path: str | Path, rows: list[Mapping[str, object]], provenance: Provenance) -> None:
    """`rows` (dicts; their keys in order of appearance are the columns) as a CSV table,
    each row followed by the run's provenance columns."""
    extra = provenance.columns()
    columns = [*dict.fromkeys(key for row in rows for key in row), *extra]
    with open(path, "w", newline="") as f:
        out = csv.DictWriter(f, columns)
        out.writeheader()
        for row in rows:
            out.writerow({**row, **extra})
