"""Out of core: a GCN on an ogbn-arxiv-sized graph under a memory limit, SQL vs NumPy/scipy/PyTorch.

    python -m experiments.out_of_core [--workload gcn2|gcn_layer|gcn2-train] [--dataset ogbn-arxiv]
        [--hidden 256] [--memory-limit 2GB] [--temp-directory DIR]
        [--methods sql,scipy,torch,numpy-dense] [--timeout 3600] [--out experiments/results]
        [--publish]

Every method runs in its own child process on the same generated data (the
synthetic graph of ``experiments.datasets`` sized like ogbn-arxiv: 169,343 nodes,
1.17 M directed edges, 128 dense features; hidden size 256 by default) so that
each one's peak memory is its own (``ru_maxrss`` of the child, from ``wait4``):

* ``sql``: the optimizer's plan on DuckDB with ``memory_limit`` = the limit and a
  ``temp_directory`` to spill to. The program's normalised adjacency N stays a
  relation of (i, j, val) tuples; features and hidden states are per-node vectors
  (the plan is printed). It runs as a user runs it: a `Session` on the data, its
  optimal plan, ``session.run``. Reported: execution time (loads excluded), load time,
  statistics + optimisation time and wall time (the whole Session: statistics,
  optimisation, loads, execution, fetching the result), the process's peak RSS,
  DuckDB's own peak (largest ``sum(memory_usage_bytes)`` of ``duckdb_memory()``,
  sampled every 20 ms) and its largest temporary (spilled) storage.
* ``scipy``: N as a scipy CSR matrix, features and hidden states as dense NumPy arrays.
* ``torch``: the same with ``torch.sparse`` CSR (only when ``import torch`` works).
* ``numpy-dense``: plain NumPy with N as a dense n x n array (169,343^2 doubles = 229 GB):
  the dense-intermediate formulation, which cannot fit.

``--workload gcn2-train`` times one training iteration (forward, backward, Adam) of
``experiments.train_gcn``'s GCN instead (methods ``sql`` and ``torch``): ``sql`` is a
`Trainer` on DuckDB (parameters in tables, one iteration after the setup), ``torch`` the
same model in PyTorch; the loss of the iteration is reported and compared.

The library methods run under ``resource.setrlimit(RLIMIT_AS, ...)`` set to the
address space the child has after generating the inputs and importing everything,
plus the limit: each side gets the same working budget on top of the inputs (the
SQL side's budget is DuckDB's ``memory_limit``; its process is not capped, so
its peak RSS is reported to show what it used). A ``MemoryError`` (or PyTorch's
allocation failure) is reported as OOM. The SQL result is compared with the scipy
result whenever both finish.

Writes ``out_of_core_<workload>_<dataset>_h<hidden>.csv`` to ``--out`` and the printed
report (with the SQL plan and its step times) as ``.txt`` to ``<out>/generated/``, which
git ignores, or with ``--publish`` next to the CSV.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from . import harness
from .common import ROOT, add_output_arguments, output_dirs

DESCRIPTIONS = {
    "sql": "sparse-einsum optimal plan on DuckDB (memory_limit, spilling to temp_directory)",
    "scipy": "scipy CSR N (sparse) x dense NumPy features/hidden states",
    "torch": "torch.sparse CSR N x dense torch features/hidden states",
    "numpy-dense": "NumPy with N as a dense n x n array (the dense-intermediate formulation)",
}
TRAIN = "gcn2-train"
TRAIN_DESCRIPTIONS = {
    "sql": "one training iteration (forward, backward, Adam), sparse-einsum Trainer on DuckDB",
    "torch": "one training iteration of the same GCN in PyTorch (torch.sparse CSR A)",
}


def descriptions(workload: str) -> dict[str, str]:
    return TRAIN_DESCRIPTIONS if workload == TRAIN else DESCRIPTIONS


def parse_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)i?B?\s*", text, re.I)
    if not m:
        raise ValueError(f"cannot read a memory size from {text!r} (e.g. 2GB, 512MB)")
    return int(float(m.group(1)) * 1024 ** "BKMGT".index((m.group(2) or "B").upper()))


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"{field}:\s+(\d+)\s+kB", f.read()).group(1))


# ------------------------------------------------------------------------ child
def run_capped(report: dict, budget: int, prep, compute):
    """`compute(prep())` with the address space capped at what the process has now plus
    `budget`; the times or the OOM go into `report`. Returns compute's result (None on OOM)."""
    import gc
    gc.collect()
    vm = _status_kb("VmSize") * 1024
    cap = vm + budget
    report["setup_rss_mb"] = _status_kb("VmRSS") / 1024
    report["address_cap_mb"] = cap / 2 ** 20
    report["address_at_setup_mb"] = vm / 2 ** 20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))      # the soft limit only
    stage = "prepare"
    try:
        start = time.perf_counter()
        prepared = prep()
        loaded = time.perf_counter()
        stage = "compute"
        out = compute(prepared)
        done = time.perf_counter()
        report.update(status="ok", load_s=loaded - start, exec_s=done - loaded,
                      wall_s=done - start)
        return out
    except MemoryError as exc:
        report.update(status="OOM", note=f"MemoryError in {stage}: {str(exc)[:160]}")
    except RuntimeError as exc:
        if "alloc" not in str(exc).lower() and "memory" not in str(exc).lower():
            raise
        report.update(status="OOM", note=f"allocation failed in {stage}: {str(exc)[:160]}")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return None


def _progress(message: str) -> None:
    print(f"  [sql] {message}", file=sys.stderr, flush=True)


def sql_report(report: dict, args, plan_and_run) -> object:
    """`plan_and_run(db, planned)` on DuckDB under the memory limit: it calls
    `planned(description)` once its plan is chosen and returns (Execution, result). The
    times, steps and memory go into `report`; returns the result."""
    from sparse_einsum.backends import open_backend

    from .bench import PeakMemory
    db, _ = open_backend("duckdb", memory_limit=args.memory_limit,
                         temp_directory=args.temp_directory)
    with db:
        report["setup_rss_mb"] = _status_kb("VmRSS") / 1024
        with PeakMemory(db.con) as mem:
            start = time.perf_counter()

            def planned(description: str) -> None:
                report.update(opt_s=time.perf_counter() - start, plan=description)

            run, result = plan_and_run(db, planned)
            report["wall_s"] = time.perf_counter() - start
        report["exec_s"] = run.seconds(loads=False)
        report["load_s"] = run.seconds() - run.seconds(loads=False)
        report["steps"] = [f"{s.seconds:8.2f} s  {s.label}" for s in run.steps]
        report["duckdb_peak_mb"] = (mem.duck_peak or 0) / 2 ** 20
        report["duckdb_spill_mb"] = (mem.duck_spill or 0) / 2 ** 20
        report["peak_rss_during_mb"] = mem.peak_rss / 2 ** 20
        report["status"] = "ok"
    return result


def train_child(args) -> dict:
    """One training iteration of the GCN by one method (after its setup)."""
    from .train_gcn import GCN, LOSS, TorchGCN, setup

    t0 = time.perf_counter()
    data = setup(args.dataset, args.hidden)
    n, f = data["X"].shape
    report = {"method": args.child, "computes": TRAIN_DESCRIPTIONS[args.child],
              "generate_s": time.perf_counter() - t0,
              "data": f"{n} nodes, {data['A'].nnz} non-zeros of A, {f} features"}
    if args.child == "sql":
        from sparse_einsum.training import Trainer

        def iteration(db, planned):
            with Trainer(GCN, data, loss=LOSS, params=["W1", "W2"], lr=0.1, backend=db,
                         progress=_progress) as trainer:
                planned(trainer.plan.describe(trainer.session.dag))
                result = trainer.iterate()
            return trainer.last_run, result["loss"]

        report["loss"] = sql_report(report, args, iteration)
    else:
        if importlib.util.find_spec("torch") is None:
            return {**report, "status": "unavailable", "note": "torch is not installed"}
        out = run_capped(report, parse_bytes(args.memory_limit),
                         lambda: TorchGCN(data, 0.1), lambda model: model.iterate())
        if out is not None:
            report["loss"] = out[0]
    return report


def child(args) -> dict:
    """Run one method; returns a JSON-able report (the parent adds ru_maxrss)."""
    import numpy as np

    if args.workload == TRAIN:
        return train_child(args)

    from .bench import library_methods, load_workload, torch_methods

    t0 = time.perf_counter()
    w = load_workload(args.workload, args.dataset, hidden=args.hidden)
    report = {"method": args.child, "computes": DESCRIPTIONS[args.child],
              "generate_s": time.perf_counter() - t0, "data": w.describe}
    if args.child == "sql":
        from sparse_einsum import Session

        def forward(db, planned):
            with Session(w.program, w.data, backend=db) as session:
                plan = session.plan("optimal")
                planned(plan.describe(session.dag))
                run = session.run(plan, progress=_progress)
            return run, run.outputs[w.output]

        out = sql_report(report, args, forward)
    else:
        methods = dict(library_methods(w))
        methods.update(torch_methods(w))
        if args.child not in methods:
            return {**report, "status": "unavailable", "note": f"{args.child} is not installed"}
        prep, compute, _ = methods[args.child]
        out = run_capped(report, parse_bytes(args.memory_limit), prep, compute)
    if out is not None:
        import scipy.sparse as sp
        out = out.toarray() if sp.issparse(out) else np.asarray(out)
        np.save(args.result_file, out)
        report["result_file"] = args.result_file
    return report


# ----------------------------------------------------------------------- parent
def run_child(method: str, args, tmp: str) -> dict:
    cmd = [sys.executable, "-m", "experiments.out_of_core", "--child", method,
           "--workload", args.workload,
           "--dataset", args.dataset, "--hidden", str(args.hidden),
           "--memory-limit", args.memory_limit, "--temp-directory", args.temp_directory,
           "--result-file", os.path.join(tmp, f"{method}.npy")]
    start = time.perf_counter()
    errfile = open(os.path.join(tmp, f"{method}.stderr"), "w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errfile, text=True, cwd=ROOT)
    deadline = start + args.timeout
    status = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            return {"method": method, "computes": descriptions(args.workload)[method],
                    "status": "timeout", "note": f"> {args.timeout:.0f} s",
                    "peak_rss_mb": usage.ru_maxrss / 1024}
        time.sleep(0.2)
    elapsed = time.perf_counter() - start
    errfile.seek(0)
    stderr = errfile.read()
    errfile.close()
    if stderr.strip():
        print("   stderr of the child (last lines):\n" + "\n".join(
            "     " + l for l in stderr.strip().splitlines()[-15:]), flush=True)
    output = proc.stdout.read()
    proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = [l for l in output.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        oom = re.search(r"(MemoryError|[Mm]emory allocation[^\n]*failed[^\n]*|Cannot allocate memory)",
                        stderr)
        return {"method": method, "computes": descriptions(args.workload)[method],
                "status": "OOM" if oom else ("killed" if proc.returncode < 0 else "crashed"),
                "note": f"child died ({how}): {oom.group(0)}" if oom else
                        f"child died ({how}); see its stderr above",
                "peak_rss_mb": usage.ru_maxrss / 1024, "process_s": elapsed}
    report = json.loads(lines[-1])
    report["peak_rss_mb"] = usage.ru_maxrss / 1024       # the whole child, generation included
    report["process_s"] = elapsed
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.out_of_core",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="gcn2", choices=("gcn2", "gcn_layer", TRAIN))
    ap.add_argument("--dataset", default="ogbn-arxiv")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--memory-limit", default="2GB")
    ap.add_argument("--temp-directory", default=None,
                    help="DuckDB spill directory (default: a fresh one under /tmp)")
    ap.add_argument("--methods", help="default: sql,scipy,torch,numpy-dense (sql,torch "
                    f"for {TRAIN})")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per method")
    add_output_arguments(ap)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    args.methods = args.methods or ",".join(descriptions(args.workload))
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return 0

    import numpy as np
    own_tmp = args.temp_directory is None
    tmp = tempfile.mkdtemp(prefix="se-ooc-")
    if own_tmp:
        args.temp_directory = os.path.join(tmp, "duckdb_spill")
    args.temp_directory = os.path.abspath(args.temp_directory)   # the children run in ROOT
    provenance = harness.Provenance("out_of_core", argv)
    lines = [provenance.header(),
             f"{args.workload} on {args.dataset}, hidden {args.hidden}; memory limit {args.memory_limit} "
             f"(DuckDB memory_limit; for the libraries RLIMIT_AS = address space after loading "
             f"the inputs + {args.memory_limit}); DuckDB temp_directory {args.temp_directory}"]
    print("\n".join(lines), flush=True)
    reports = []
    for method in args.methods.split(","):
        print(f"\n-- {method}: {descriptions(args.workload)[method]}", flush=True)
        load = os.getloadavg()[0]
        r = run_child(method, args, tmp)
        r["load_avg_before"] = load
        reports.append(r)
        for key in ("status", "note", "loss", "exec_s", "load_s", "opt_s", "wall_s", "peak_rss_mb",
                    "setup_rss_mb", "peak_rss_during_mb", "duckdb_peak_mb", "duckdb_spill_mb",
                    "address_cap_mb"):
            if key in r:
                v = r[key]
                print(f"   {key:<20} {v:.2f}" if isinstance(v, float) else f"   {key:<20} {v}")
        if "plan" in r:
            print("   plan:\n" + "\n".join("     " + l for l in r["plan"].splitlines()))
            print("   steps:\n" + "\n".join("     " + l for l in r["steps"]))
    # agreement with scipy
    ref = next((r for r in reports if r["method"] == "scipy" and r.get("result_file")), None)
    failed = False
    for r in reports:
        if r.get("result_file") and ref is not None:
            diff = float(np.abs(np.load(r["result_file"]) - np.load(ref["result_file"])).max())
            r["max_abs_diff_to_scipy"] = diff
            if diff > 1e-7 * max(1.0, float(np.abs(np.load(ref["result_file"])).max())):
                r["status"] = "MISMATCH"
                failed = True
    losses = [r for r in reports if "loss" in r]
    if len(losses) == 2 and abs(losses[0]["loss"] - losses[1]["loss"]) > 1e-6:
        losses[0]["status"] = "MISMATCH"
        failed = True
    header = ("method", "status", "exec s", "load s", "wall s", "peak RSS MB", "RSS after setup MB",
              "duckdb peak MB", "spilled MB", "max diff to scipy", "loss", "computes / note")
    rows = []
    for r in reports:
        def f(key, fmt=".1f"):
            return format(r[key], fmt) if isinstance(r.get(key), (int, float)) else ""
        rows.append([r["method"], r["status"], f("exec_s"), f("load_s"), f("wall_s"),
                     f("peak_rss_mb", ".0f"), f("setup_rss_mb", ".0f"), f("duckdb_peak_mb", ".0f"),
                     f("duckdb_spill_mb", ".0f"), f("max_abs_diff_to_scipy", ".1e"), f("loss", ".9f"),
                     r["computes"] + (f"; {r['note']}" if r.get("note") else "")])
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(lines + [""] + table)
    sql = next((r for r in reports if r["method"] == "sql" and "plan" in r), None)
    if sql:
        text += "\n\nSQL plan:\n" + sql["plan"] + "\n\nSQL steps:\n" + "\n".join(sql["steps"])
    print("\n" + text, flush=True)
    tables_dir, generated_dir = output_dirs(args.out, args.publish)
    stem = f"out_of_core_{args.workload}_{args.dataset}_h{args.hidden}"
    (generated_dir / f"{stem}.txt").write_text(text + "\n")
    columns = [h.replace(" ", "_").replace("|", "") for h in header]
    harness.write_csv(tables_dir / f"{stem}.csv", [dict(zip(columns, row)) for row in rows],
                      provenance)
    print(f"wrote {generated_dir / stem}.txt, {tables_dir / stem}.csv")
    for r in reports:
        if r.get("result_file") and os.path.exists(r["result_file"]):
            os.remove(r["result_file"])
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
