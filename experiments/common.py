"""What the benchmark scripts share: where results go and the code version."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]          # the repository, which holds the package
RESULTS = Path(__file__).resolve().parent / "results"
GENERATED = "generated"      # subdirectory of the results for charts and logs (ignored by git)

# The strategies `candidate_plans` adds after the ranked plans; it keeps each
# decomposition once, naming the others in `Plan.aliases`.
FOLDABLE = ("greedy", "relational", "dense")


class Report:
    """Prints each line and keeps it for the log file; keeps the CSV rows of the timings
    it reports (`harness.Timings`)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.rows: list[dict[str, object]] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def timings(self, title: str, timings, baseline: str | None = None, **fields) -> None:
        """Print `timings` under `title` and keep their rows (`fields` added to each)."""
        runs = len(next(iter(timings.samples.values()), []))
        self(f"\n{title} (median of {runs})")
        for line in timings.lines(baseline):
            self(line)
        self.rows += timings.rows(baseline, case=title, **fields)


def add_output_arguments(ap: argparse.ArgumentParser) -> None:
    """--out (where the CSV tables go) and --publish (charts and logs next to them)."""
    ap.add_argument("--out", default=str(RESULTS),
                    help="directory of the CSV tables (default experiments/results)")
    ap.add_argument("--publish", action="store_true",
                    help="write charts (.png) and logs (.txt) next to the CSV tables instead "
                         f"of to OUT/{GENERATED}/, which git ignores")


def output_dirs(out: str | Path, publish: bool) -> tuple[Path, Path]:
    """(directory of the CSV tables, directory of the charts and logs), both created."""
    tables = Path(out)
    generated = tables if publish else tables / GENERATED
    generated.mkdir(parents=True, exist_ok=True)
    return tables, generated


def command_line(module: str, argv: list[str] | None) -> str:
    """The command that ran a script, for the record: ``python -m experiments.bench ...``
    (`argv`: the arguments `main` was given, None for the command line's)."""
    return " ".join([f"python -m experiments.{module}", *(sys.argv[1:] if argv is None else argv)])


def code_version() -> str:
    """The commit of the checkout (and whether files differ from it), for the record."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               text=True, capture_output=True).stdout.strip()
        return f"commit {head}" + (" with uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
