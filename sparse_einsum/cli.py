"""The ``sparse-einsum`` command line: run, explain, compile and train EinSum programs.

Exit codes: 0 success; 2 bad input (a program, data, plan or option the user gave: one line
``sparse-einsum: error: ...`` on stderr); 1 an unexpected failure of the database or the
library (one line ``sparse-einsum: failed: Type: message``; ``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zipfile
from pathlib import Path
from typing import Callable, NoReturn, Sequence

import numpy as np

from .errors import DataError, SparseEinsumError

PROG = "sparse-einsum"
LONG_FILE = 1 << 20     # program files from which parsing reports its progress


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        hint = f" (see '{self.prog} --help')"
        self.exit(2, f"{PROG}: error: {message}{hint}\n")


def _lines(message: object) -> list[str]:
    return [line.strip() for line in str(message).strip().splitlines() if line.strip()]


def _one_line(message: object) -> str:
    """The first line of a message, noting how many lines were left off."""
    lines = _lines(message)
    if not lines:
        return ""
    more = f" (+{len(lines) - 1} more lines; --debug shows them)" if len(lines) > 1 else ""
    return lines[0] + more


# -- data ---------------------------------------------------------------------
def _load_dense(path: Path) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: cannot read as a NumPy .npy array: {_one_line(exc)}") from None
    if not isinstance(array, np.ndarray):
        raise DataError(f"{path}: expected one array saved with np.save")
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
            or array.dtype == np.bool_):
        raise DataError(f"{path}: expected a real numeric array but its dtype is {array.dtype}")
    return array.astype(np.float64, copy=False)


def _load_sparse(path: Path):
    import scipy.sparse as sp
    try:
        matrix = sp.load_npz(path)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        raise DataError(f"{path} is not a scipy sparse matrix (write .npz data with "
                        "scipy.sparse.save_npz, dense data as .npy with np.save)") from None
    if matrix.ndim != 2:
        raise DataError(f"{path}: holds a {matrix.ndim}-dimensional sparse array; sparse data "
                        "must be a matrix (save other tensors as dense .npy)")
    if not (np.issubdtype(matrix.dtype, np.integer) or np.issubdtype(matrix.dtype, np.floating)
            or matrix.dtype == np.bool_):
        raise DataError(f"{path}: expected a real numeric matrix but its dtype is {matrix.dtype}")
    return matrix.astype(np.float64)


def load_data(program, directory: str | Path, *, skip: Sequence[str] = (),
              extra: Sequence[str] = ()) -> dict[str, object]:
    """The data of every declared input not bound to a table (but those in `skip`), and of
    the names in `extra`, from NAME.npy or NAME.npz in `directory`; files for other names
    are ignored."""
    directory = Path(directory)
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise DataError(f"data directory {directory} {what}")
    data: dict[str, object] = {}
    names = [n for n, decl in program.inputs.items() if decl.source is None and n not in skip]
    for name in dict.fromkeys(names + list(extra)):
        npy, npz = directory / f"{name}.npy", directory / f"{name}.npz"
        if npy.is_file() and npz.is_file():
            raise DataError(f"input tensor {name} has two data files, {npy} and {npz}: keep one")
        if npy.is_file():
            data[name] = _load_dense(npy)
        elif npz.is_file():
            data[name] = _load_sparse(npz)
        else:
            what = "input tensor" if name in program.inputs else "the loss's data"
            raise DataError(f"no data for {what} {name}: expected {npy.name} (dense, "
                            f"np.save) or {npz.name} (scipy.sparse.save_npz) in {directory}")
    return data


def _program(path: str, args: argparse.Namespace | None = None):
    from .program.parser import load_program
    size = Path(path).stat().st_size if Path(path).is_file() else 0
    report = _progress(args) if args is not None and size >= LONG_FILE else None
    start = time.perf_counter()
    if report:
        report(f"parsing {path} ({size / 1e6:.1f} MB) ...")
    program = load_program(Path(path))
    if report:
        report(f"parsed {len(program.statements)} statements: "
               f"{time.perf_counter() - start:.1f} s")
    return program


def _backend_options(args: argparse.Namespace) -> dict[str, str]:
    """Keyword arguments for the backend from its options (see BACKENDS); an option of
    another backend is a usage error."""
    from .backends import BACKENDS
    given = {}
    for name, row in BACKENDS.items():
        for option in row.options:
            value = getattr(args, option.keyword, None)
            if value is None:
                continue
            if name != args.backend:
                args.parser.error(f"{option.flag} does not apply to --backend {args.backend}")
            given[option.keyword] = value
    return given


# -- subcommands --------------------------------------------------------------
def _progress(args: argparse.Namespace) -> Callable[[str], None] | None:
    if getattr(args, "quiet", False):
        return None
    return lambda line: print(line, file=sys.stderr, flush=True)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def summarize(outputs: dict[str, np.ndarray], plan_name: str) -> list[str]:
    """Lines describing each output: shape, non-zeros, min and max."""
    rows = [("output", "shape", "non-zeros", "min", "max")]
    for name, value in outputs.items():
        value = np.asarray(value)
        lo, hi = (_fmt(value.min()), _fmt(value.max())) if value.size else ("-", "-")
        rows.append((name, str(value.shape), str(int(np.count_nonzero(value))), lo, hi))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = [f"plan: {plan_name or '(unnamed)'}"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    return lines


def cmd_run(args: argparse.Namespace) -> int:
    from .session import Session
    options = _backend_options(args)
    program = _program(args.program, args)
    data = load_data(program, args.data)
    start = time.perf_counter()
    with Session(program, data, backend=args.backend, progress=_progress(args),
                 **options) as session:
        execution = session.run(args.plan)
    seconds = time.perf_counter() - start
    for line in summarize(execution.outputs, execution.plan.name):
        print(line)
    if args.out:
        try:
            np.savez(args.out, **execution.outputs)
        except OSError as exc:
            raise SparseEinsumError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    if not args.quiet:
        wrote = f", outputs written to {args.out}" if args.out else ""
        print(f"done in {seconds:.3f} s{wrote}", file=sys.stderr)
    return 0


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def cmd_explain(args: argparse.Namespace) -> int:
    from .api import explain
    from .explanation import format_explanation
    options = _backend_options(args)
    program = _program(args.program, args)
    extra = {"sql": True} if args.sql else {}
    if args.loss or args.params:
        from .training import explain_gradients
        if not (args.loss and args.params):
            args.parser.error("the gradients need both --loss and --params")
        data, params, _ = _training_args(args, program)
        result = explain_gradients(program, data, loss=args.loss, wrt=params, top=args.top,
                                   analyze=args.analyze, backend=args.backend, **extra,
                                   **options)
    else:
        data = load_data(program, args.data)
        result = explain(program, data, top=args.top, analyze=args.analyze,
                         backend=args.backend, **extra, **options)
    if args.json:
        print(json.dumps(result, indent=2, default=_json_default))
    else:
        print(format_explanation(result))
    return 0


def _training_args(args: argparse.Namespace, program) -> tuple[dict, list[str], dict]:
    """Data (the program's inputs and the loss's data), parameters and dropout rates of the
    training options."""
    from .program.losses import parse_loss
    params = [p.strip() for p in args.params.split(",") if p.strip()]
    dropout = {}
    for item in args.dropout or []:
        name, _, rate = item.partition("=")
        try:
            dropout[name.strip()] = float(rate)
        except ValueError:
            args.parser.error(f"--dropout {item!r}: expected MASK=RATE, e.g. D1=0.5")
    call = parse_loss(args.loss)
    extra = call[1][1:] if call else []
    data = load_data(program, args.data, skip=list(dropout), extra=extra)
    return data, params, dropout


def _optimizer_options(args: argparse.Namespace) -> dict[str, float]:
    return {k: getattr(args, k) for k in ("lr", "beta1", "beta2", "eps")
            if getattr(args, k, None) is not None}


def cmd_train(args: argparse.Namespace) -> int:
    from .training import train
    program = _program(args.program, args)
    data, params, dropout = _training_args(args, program)
    result = train(program, data, loss=args.loss, params=params, optimizer=args.optimizer,
                   epochs=args.epochs, plan=args.plan, backend=args.backend, tables=args.tables,
                   resume=args.resume, dropout=dropout, seed=args.seed,
                   progress=_progress(args) or False, **_optimizer_options(args),
                   **_backend_options(args))
    if result.losses:
        extra = "".join(f", {m} {values[-1]:.6g}" for m, values in result.metrics.items())
        print(f"trained {', '.join(params)} for {len(result.losses)} epochs: loss "
              f"{result.losses[0]:.6g} -> {result.losses[-1]:.6g}{extra}, "
              f"{sum(result.seconds) / len(result.seconds):.3f} s per epoch")
    else:
        print(f"parameters {', '.join(params)} stored in tables {args.tables}_*")
    if args.out:
        try:
            np.savez(args.out, **result.params)
        except OSError as exc:
            raise SparseEinsumError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from .backends.jobs import JOB_OPTIONS, JOBS
    from .compile_job import compile_job
    program = _program(args.program, args)
    data = load_data(program, args.data) if args.data and not args.train else None
    options = {"plan": args.plan} if args.plan else {}
    for option in JOB_OPTIONS:
        if getattr(args, option) is not None and option not in JOBS[args.dialect].options:
            args.parser.error(f"--{option} does not apply to --dialect {args.dialect}")
    options.update({option: getattr(args, option) for option in JOB_OPTIONS
                    if getattr(args, option)})
    if args.train:
        from .training import compile_training_job
        if not (args.loss and args.params and args.data):
            args.parser.error("--train needs --loss, --params and --data")
        data, params, dropout = _training_args(args, program)
        if dropout:
            args.parser.error("--dropout does not apply to compiled jobs")
        text = compile_training_job(program, data, dialect=args.dialect, loss=args.loss,
                                    params=params, optimizer=args.optimizer, tables=args.tables,
                                    **_optimizer_options(args), **options)
    else:
        text = compile_job(program, dialect=args.dialect, data=data, **options)
    if args.output == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            raise SparseEinsumError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"wrote {args.output} ({args.dialect}, {len(text.splitlines())} lines)",
              file=sys.stderr)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate import calibrate
    options = _backend_options(args)
    if not math.isfinite(args.scale) or args.scale <= 0:
        args.parser.error(f"--scale must be a positive finite number, not {args.scale}")
    result = calibrate(backend=args.backend, path=args.output, scale=args.scale, **options)
    for path in result["paths"]:
        print(f"{path['dialect']}: kernels {path['kernels']}")
        print(f"  {'plan timed':<28} {'measured s':>10} {'predicted s':>11}")
        for row in path["fit"]:
            print(f"  {row['plan']:<28} {row['measured_s']:>10.4f} {row['predicted_s']:>11.4f}")
        for key, value in path["constants"].items():
            print(f"  {key:<13} {value:.3g}" + ("  (kept: not identified by the timings)"
                                               if key in path["kept"] else ""))
        print(f"constants for {path['dialect']} written to {path['stored_in']}", file=sys.stderr)
    return 0


def cmd_install_kernels(args: argparse.Namespace) -> int:
    from .backends.pg_kernels import install_kernels
    result = install_kernels(args.dsn)
    print(f"sparse_einsum_kernels installed: version {result}" if isinstance(result, str)
          else result)
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from .backends import open_backend
    if (args.dsn is None) == (args.database is None):
        args.parser.error("give one database: --dsn (PostgreSQL) or --database (a DuckDB file)")
    if args.database is not None and not Path(args.database).is_file():
        raise DataError(f"DuckDB database {args.database} does not exist")
    backend, _ = (open_backend("postgres", dsn=args.dsn) if args.dsn else
                  open_backend("duckdb", database=args.database))
    with backend:
        found = backend.cleanup(dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for item in found:
        print(f"{verb} {item}")
    print(f"{verb} {len(found)} leftover{'s' if len(found) != 1 else ''} of killed runs",
          file=sys.stderr)
def cmd_build_extension(args: argparse.Namespace) -> int:
    if args.spark:
        from .backends import spark_jar
        print(spark_jar.build(force=args.force))
        return 0
    from .backends import duckdb_extension
    duckdb_extension.fetch_headers()
    print(duckdb_extension.build(force=args.force))
    return 0


def cmd_example(args: argparse.Namespace) -> int:
    from .examples import write_example
    program, data_dir = write_example(args.name, args.dir)
    files = ", ".join(sorted(p.name for p in data_dir.iterdir()))
    print(f"wrote {program} and {data_dir}/ ({files})")
    print(f"run it with: {PROG} run {program} --data {data_dir}")
    return 0


# -- parser ---------------------------------------------------------------------
def _add_backend(sub: argparse.ArgumentParser, duckdb_options: bool = True,
                 help: str = "database to run on (default: duckdb, in memory)") -> None:
    from .backends import BACKENDS
    group = sub.add_argument_group("database")
    group.add_argument("--backend", choices=tuple(BACKENDS), default="duckdb", help=help)
    for name, row in BACKENDS.items():
        if duckdb_options or name != "duckdb":
            for option in row.options:
                group.add_argument(option.flag, dest=option.keyword, metavar=option.metavar,
                                   help=option.help)


def _add_training(sub: argparse.ArgumentParser, required: bool) -> None:
    from .program.losses import LOSSES
    from .program.updates import OPTIMIZERS
    group = sub.add_argument_group("training")
    group.add_argument("--loss", metavar="L", required=required,
                       help="a scalar tensor of the program, or "
                            + " or ".join(f"{n}(...)" for n in LOSSES)
                            + ": softmax_cross_entropy(LOGITS, LABELS, MASK), mse(PRED, TARGET) "
                              "with LABELS, MASK, TARGET data files")
    group.add_argument("--params", metavar="W1,W2", required=required,
                       help="the inputs to train")
    group.add_argument("--optimizer", choices=tuple(OPTIMIZERS), default="adam")
    group.add_argument("--lr", type=float, help="learning rate")
    group.add_argument("--beta1", type=float, help="Adam's beta1 (default 0.9)")
    group.add_argument("--beta2", type=float, help="Adam's beta2 (default 0.999)")
    group.add_argument("--eps", type=float, help="Adam's eps (default 1e-8)")
    group.add_argument("--tables", metavar="PREFIX", default="se_train",
                       help="parameter and optimizer tables are PREFIX_NAME (default se_train)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer but found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer but found {text!r}")
    return value


def _top(text: str) -> int:
    from .optimizer.strategies import MAX_TOP
    value = _positive_int(text)
    if value > MAX_TOP:
        raise argparse.ArgumentTypeError(f"at most {MAX_TOP} plans are ranked, not {value}")
    return value


def plan_help() -> str:
    """The --plan help, from the strategy registry."""
    from .optimizer.strategies import STRATEGIES
    return "plan: " + "; ".join(f"{s.usage}: {s.help}" for s in STRATEGIES.values())


def build_parser() -> argparse.ArgumentParser:
    from .api import DEFAULT_PLAN
    from .backends.jobs import JOBS
    from .examples import EXAMPLES
    from .optimizer.strategies import MAX_TOP

    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=PROG, formatter_class=fmt,
        description="Compile EinSum programs to tensor-relational SQL and run them on "
                    "DuckDB, PostgreSQL or Spark.",
        epilog=f"examples:\n  {PROG} example gcn examples\n"
               f"  {PROG} run examples/gcn.se --data examples/gcn_data\n"
               f"  {PROG} explain examples/gcn.se --data examples/gcn_data\n\n"
               f"'{PROG} COMMAND --help' describes each command.")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="on an error show the traceback and the full message")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, summary: str, example: str, handler) -> argparse.ArgumentParser:
        sub = subs.add_parser(name, help=summary, description=summary + ".",
                              epilog=f"example:\n  {example}", formatter_class=fmt)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="on an error show the traceback and the full message")
        sub.set_defaults(handler=handler, parser=sub)
        return sub

    sub = command("run", "Run a program on data from a directory and summarise its outputs",
                  f"{PROG} run examples/gcn.se --data examples/gcn_data --out logits.npz",
                  cmd_run)
    sub.add_argument("program", metavar="PROGRAM.se", help="the EinSum program")
    sub.add_argument("--data", metavar="DIR", required=True,
                     help="directory with NAME.npy (dense) or NAME.npz (scipy.sparse) per input")
    sub.add_argument("--plan", metavar="P", default=DEFAULT_PLAN, help=plan_help())
    sub.add_argument("--out", metavar="FILE.npz", help="write all outputs with np.savez")
    sub.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    _add_backend(sub)

    sub = command("explain", "Show the best plans of a program with their estimated costs",
                  f"{PROG} explain examples/gcn.se --data examples/gcn_data --top 5 --analyze",
                  cmd_explain)
    sub.add_argument("program", metavar="PROGRAM.se", help="the EinSum program")
    sub.add_argument("--data", metavar="DIR", required=True,
                     help="directory with NAME.npy (dense) or NAME.npz (scipy.sparse) per input")
    sub.add_argument("--top", metavar="K", type=_top, default=3,
                     help=f"how many plans to show (default: 3, at most {MAX_TOP})")
    sub.add_argument("--json", action="store_true", help="print the result as JSON")
    sub.add_argument("--analyze", action="store_true",
                     help="also run each plan and report actual times and tuples, and each "
                          "statement's q-error (estimated / actual tuples)")
    sub.add_argument("--sql", action="store_true",
                     help="also show each plan's SQL statements (pretty-printed)")
    sub.add_argument("--loss", metavar="L", help="with --params: explain the program with the "
                     "gradients of loss L (see 'train --help'), backward statements marked")
    sub.add_argument("--params", metavar="W1,W2", help="the tensors to differentiate by")
    sub.set_defaults(dropout=None)
    _add_backend(sub)

    sub = command("train", "Train parameters of a program in the database (gradients, "
                  "optimizer updates; one transaction per epoch)",
                  f"{PROG} train gcn.se --data gcn_data --loss 'softmax_cross_entropy(Z, y, "
                  "train_mask)' --params W1,W2 --epochs 50 --optimizer adam --lr 0.1 "
                  "--out params.npz", cmd_train)
    sub.add_argument("program", metavar="PROGRAM.se", help="the EinSum program")
    sub.add_argument("--data", metavar="DIR", required=True,
                     help="directory with NAME.npy (dense) or NAME.npz (scipy.sparse) per input "
                          "and per data name the loss uses; parameters' initial values too")
    _add_training(sub, required=True)
    sub.add_argument("--epochs", type=int, default=1, help="iterations to run (default 1; 0 "
                     "only stores the initial parameters in their tables)")
    sub.add_argument("--plan", metavar="P", default=DEFAULT_PLAN, help=plan_help())
    sub.add_argument("--dropout", metavar="MASK=RATE", action="append",
                     help="an input of the program redrawn each epoch as a dropout mask "
                          "(kept entries 1/(1-RATE), the rest 0); repeatable")
    sub.add_argument("--seed", type=int, default=0, help="seed of the dropout masks")
    sub.add_argument("--resume", action="store_true",
                     help="continue from the parameter and optimizer tables of an earlier run")
    sub.add_argument("--out", metavar="FILE.npz", help="write the trained parameters")
    sub.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    _add_backend(sub)

    sub = command("compile", "Compile a program to one SQL job for PostgreSQL, DuckDB or Spark",
                  f"{PROG} compile examples/gcn.se --dialect postgres --data examples/gcn_data "
                  "-o gcn.sql", cmd_compile)
    sub.add_argument("program", metavar="PROGRAM.se", help="the EinSum program")
    sub.add_argument("--dialect", choices=tuple(JOBS), required=True,
                     help="SQL dialect to write: duckdb jobs load the sparse_einsum DuckDB "
                          "extension (run them with duckdb -unsigned); duckdb-builtin jobs "
                          "need none but hold at most 4096 values per tuple; spark jobs run "
                          "with spark-sql and the kernel jar")
    sub.add_argument("-o", "--output", metavar="FILE", required=True,
                     help="SQL file to write ('-' for stdout)")
    sub.add_argument("--data", metavar="DIR",
                     help="data of the inputs without a table binding, as for 'run' "
                          "(embedded in the job as INSERTs)")
    sub.add_argument("--plan", metavar="P", help=plan_help())
    sub.add_argument("--train", action="store_true",
                     help="compile one training iteration (forward, backward, update of the "
                          "parameter tables, which 'train --epochs 0' creates) as the job")
    _add_training(sub, required=False)
    sub.set_defaults(dropout=None)
    stats = sub.add_mutually_exclusive_group()
    stats.add_argument("--dsn", help="PostgreSQL database to read shapes and statistics of the "
                                     "input tables from (--dialect postgres)")
    stats.add_argument("--database", metavar="FILE.duckdb",
                       help="DuckDB file to read shapes and statistics of the input tables from "
                            "(--dialect duckdb); without either, bounds must be declared")
    sub.add_argument("--extension", metavar="PATH",
                     help="where the job loads its kernels from: the DuckDB extension, or the "
                          "Spark kernel jar (default: the one built on this machine, see "
                          "build-extension)")

    sub = command("calibrate", "Measure the cost model's constants on a database (each way it "
                               "runs kernels: DuckDB with and without its extension)",
                  f"{PROG} calibrate --backend duckdb --output constants.json", cmd_calibrate)
    _add_backend(sub, duckdb_options=False, help="database to measure (default: duckdb)")
    sub.add_argument("--output", metavar="FILE", help="where to save the constants "
                     "(default: the per-user config file the optimizer reads)")
    sub.add_argument("--scale", type=float, default=1.0,
                     help="size of the timed workloads (default 1; smaller is quicker, noisier)")

    sub = command("install-kernels",
                  "Build and install the PostgreSQL kernel extension into a database",
                  f"{PROG} install-kernels --dsn postgresql://postgres@localhost/postgres",
                  cmd_install_kernels)
    sub.add_argument("--dsn", required=True, help="PostgreSQL connection string")

    sub = command("cleanup", "Remove what killed runs of older versions left in a database: "
                  "tables named se_<10 hex digits>_..., and DuckDB spill files of dead processes",
                  f"{PROG} cleanup --database data.duckdb --dry-run", cmd_cleanup)
    sub.add_argument("--dsn", help="PostgreSQL connection string")
    sub.add_argument("--database", metavar="FILE.duckdb", help="DuckDB database file")
    sub.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    sub = command("build-extension",
                  "Build the sparse_einsum DuckDB extension from the package's sources into the "
                  "user's cache (fetching DuckDB's C headers from PyPI if they are not cached) "
                  "and print its path; a checkout uses it, a wheel carries its own",
                  f"{PROG} build-extension", cmd_build_extension)
    sub.add_argument("--force", action="store_true", help="rebuild even if a build is cached")
    sub.add_argument("--spark", action="store_true",
                     help="build the Spark kernel jar instead (javac against pyspark's jars)")

    listing = "; ".join(f"{e.name}: {e.description}" for e in EXAMPLES.values())
    sub = command("example", "Write an example program and its data (NAME.se, NAME_data/) to DIR",
                  f"{PROG} example gcn examples && "
                  f"{PROG} run examples/gcn.se --data examples/gcn_data", cmd_example)
    sub.add_argument("name", metavar="NAME", choices=tuple(EXAMPLES), help=listing)
    sub.add_argument("dir", metavar="DIR", help="directory to write into (created if needed)")
    return parser


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 failure, 2 bad input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return _exit_code(exc)
    try:
        return int(args.handler(args) or 0)
    except SystemExit as exc:            # a usage error found by a handler
        return _exit_code(exc)
    except SparseEinsumError as exc:
        if args.debug:
            raise
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        message = (_lines(exc) or [""])[0]
        print(f"{PROG}: failed: {type(exc).__name__}" + (f": {message}" if message else ""),
              file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
