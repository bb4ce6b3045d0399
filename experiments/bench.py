"""Benchmark harness: sparse-einsum plans against the pure-relational plan, NumPy/scipy and PyTorch.

    python -m experiments.bench --workload gcn2 --dataset cora [--backend duckdb|postgres]
        [--dsn DSN] [--repeats 3] [--quick] [--d-k 1024] [--hidden 256]
        [--memory-limit 2GB] [--timeout 300] [--qubits 8] [--out experiments/results]
        [--publish]

``--workload`` is one of gcn2, gcn_layer, sparse_attention, dense_attention, chain3,
quantum (or a comma-separated list, or ``all``); ``--dataset`` a graph of
``experiments.datasets`` (karate, cora, citeseer, amazon-photo, amazon-computers,
ogbn-arxiv) or, for ``quantum``, a circuit of ``experiments.circuits`` (qft,
multiplier, quantum_volume; ``--qubits`` sets its size). ``--quick`` means karate
(5 qubits for quantum), one repeat and a 60 s time limit: all workloads together
finish in well under two minutes.

In one process, on the same data, it runs

* the plans of ``candidate_plans`` (sparse_einsum.optimizer.strategies), the list the
  calibration compares too: the optimizer's ``rank:1`` (= optimal), ``rank:2``,
  ``rank:3`` and ``greedy``, the pure-relational plan (every label a key: the classic
  EinSum-to-SQL translation) and the dense plan (nothing a key); a plan that does not
  fit the optimizer's memory cap is reported as "does not fit", one with the
  decomposition of an earlier plan as "same plan as" it,
* outside the database: scipy (sparse matrices where the data is sparse; its result is
  the reference every other method is checked against), NumPy with every matrix dense
  (skipped when a dense matrix would take more than a quarter of the machine's memory)
  and PyTorch CPU (``torch.sparse``) when ``import torch`` works.

Each run of a SQL plan is what a user of the library does: a `Session` on the program
and data, its plan (``session.plan("optimal")``, ``"rank:2"``, ``"greedy"``, ...) and
``session.run``. Per method it reports the median execution time of ``--repeats`` runs
(for SQL plans the plan's statements only: loading the inputs and fetching the result
are excluded, as for the libraries; ``load s`` is the median load time, ``wall s`` the
whole run as the user sees it: Session, statistics, optimisation, loads, execution and
fetching the result), the ratio to the optimal plan, the peak memory, the statistics +
optimisation time (``opt s``), and the largest absolute difference to the scipy result;
a difference above 1e-7 x max|reference| fails the run (exit status 1) after the
table is written. Each SQL run has a time limit (``--timeout``): DuckDB is interrupted
(``interrupt()``) and PostgreSQL cancelled from a timer thread, and the method is
reported as "timeout".

Memory: ``peak RSS`` is the high-water mark of this process's resident set while the
method ran (Linux ``VmHWM``, reset before each method by writing 5 to
``/proc/self/clear_refs``; elsewhere a 20 ms psutil sampler); ``+RSS`` is that peak minus
the resident set when the method started (the inputs are already in memory). For
DuckDB, ``duckdb MB`` is the largest ``sum(memory_usage_bytes)`` of ``duckdb_memory()``
sampled every 20 ms (DuckDB's buffer manager: tables and operator state, not Python
objects) and ``spill MB`` the largest ``temporary_storage_bytes``. PostgreSQL runs in
its own server processes, which are not measured.

Results: ``bench_<workload>_<dataset>_<backend>.csv`` goes to ``--out`` (default
experiments/results); the bar chart of median times (``.png``) and the printed table
with each plan's step times (``.txt``) go to ``<out>/generated/``, which git ignores,
or with ``--publish`` next to the CSV. The Spearman rank correlation between estimated
cost and measured run time (loads included, as the cost model prices them; statistics
and optimisation excluded) over the SQL plans that ran (distinct plans only) is
printed and written to the .txt file.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from sparse_einsum import Session
from sparse_einsum.backends import open_backend
from sparse_einsum.errors import BackendError
from sparse_einsum.optimizer.context import OptimizerContext
from sparse_einsum.optimizer.strategies import candidate_plans
from sparse_einsum.plan import Plan
from sparse_einsum.program.parser import load_program

from . import harness
from .common import FOLDABLE, add_output_arguments, output_dirs
from .workloads import PROGRAMS, dense, workload as graph_workload

WORKLOADS = ("gcn2", "gcn_layer", "sparse_attention", "dense_attention", "chain3", "quantum")
CIRCUIT_NAMES = ("qft", "multiplier", "quantum_volume")
TOLERANCE = 1e-7          # relative to max |reference|

# Hand-written decompositions to compare with the optimizer's: vertex -> promoted labels.
# "paper-table7" is the schema of the paper's Table 7 for sparse attention: projections
# as per-node vectors, T2 = one d_k-vector per edge, T3 = a scalar per edge.
HAND_PLANS: dict[str, dict[str, dict[str, str]]] = {
    "sparse_attention": {"paper-table7": {"T0": "i", "T1": "j", "T2": "ij", "T3": "ij",
                                          "Attn": "ij"}},
}


def program_text(name: str) -> str:
    """The program of a graph workload: experiments/programs/<name>.se."""
    return (PROGRAMS / f"{name}.se").read_text()


# ----------------------------------------------------------------------------- data
@dataclass
class Workload:
    name: str
    dataset: str
    program: str
    data: dict[str, object]
    output: str
    describe: str


def load_workload(name: str, dataset: str, *, hidden: int = 256, d_k: int = 1024,
                  qubits: int = 8) -> Workload:
    if name == "quantum":
        from .quantum import output_name, quantum_workload
        text, data = quantum_workload(dataset, qubits)
        gates = [v for k, v in data.items() if k.startswith("G")]
        nnz = np.mean([np.count_nonzero(g) / g.size for g in gates])
        return Workload(name, f"{dataset}-{qubits}q", text, data, output_name(data),
                        f"{dataset} circuit, {qubits} qubits, {len(gates)} layers, "
                        f"gate tensors (2,{2 ** qubits},2,{2 ** qubits}) of mean density {nnz:.4f}")
    _, data = graph_workload(name, dataset, hidden=hidden, d_k=d_k)
    program = load_program(program_text(name))
    shapes = ", ".join(f"{k}{tuple(np.shape(v)) if not sp.issparse(v) else v.shape}"
                       f"{' sparse nnz=%d' % v.nnz if sp.issparse(v) else ''}"
                       for k, v in data.items())
    return Workload(name, dataset, program_text(name), data, program.outputs[-1], shapes)


# ------------------------------------------------------------------ measurement tools
def _vm_hwm_kb() -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(r"VmHWM:\s+(\d+)\s+kB", f.read())
        return int(m.group(1)) if m else None
    except OSError:
        return None


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_bytes() -> int:
    try:
        import psutil
        return psutil.Process().memory_info().rss
    except ImportError:  # pragma: no cover
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class PeakMemory:
    """Peak resident set of this process (and of DuckDB's buffer manager) during a block."""

    def __init__(self, duck_con=None, interval: float = 0.02):
        self.cursor = duck_con.cursor() if duck_con is not None else None
        self.interval = interval
        self.start_rss = self.peak_rss = 0
        self.duck_peak = self.duck_spill = None

    def _duck(self) -> tuple[int, int]:
        row = self.cursor.execute("SELECT coalesce(sum(memory_usage_bytes), 0), "
                                  "coalesce(sum(temporary_storage_bytes), 0) "
                                  "FROM duckdb_memory()").fetchall()[0]
        return int(row[0]), int(row[1])

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.sampled_rss = max(self.sampled_rss, _rss_bytes())
            if self.cursor is not None:
                try:
                    used, spill = self._duck()
                except Exception:  # noqa: BLE001 - a failed sample is only a missed sample
                    continue
                self.duck_peak = max(self.duck_peak or 0, used)
                self.duck_spill = max(self.duck_spill or 0, spill)

    def __enter__(self) -> "PeakMemory":
        gc.collect()
        self.start_rss = _rss_bytes()
        self.sampled_rss = self.start_rss
        self.exact = _reset_hwm() and _vm_hwm_kb() is not None
        if self.cursor is not None:
            self.duck_peak, self.duck_spill = self._duck()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_rss = _vm_hwm_kb() * 1024 if self.exact else self.sampled_rss
        self.peak_rss = max(self.peak_rss, self.sampled_rss)

    def close(self) -> None:
        if self.cursor is not None:
            self.cursor.close()


class Timeout(Exception):
    pass


class Deadline:
    """Interrupt the backend's running statement after `seconds` (timer thread)."""

    def __init__(self, db, seconds: float | None):
        self.db, self.seconds, self.fired = db, seconds, False

    def _fire(self) -> None:
        self.fired = True
        con = getattr(self.db, "con", None)
        if con is not None and hasattr(con, "interrupt"):
            con.interrupt()
        conn = getattr(self.db, "conn", None)
        if conn is not None:
            try:
                conn.cancel_safe() if hasattr(conn, "cancel_safe") else conn.cancel()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "Deadline":
        self.timer = threading.Timer(self.seconds, self._fire) if self.seconds else None
        if self.timer:
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.timer:
            self.timer.cancel()
        if self.fired and exc is not None:
            raise Timeout(f"interrupted after {self.seconds:.0f} s") from None
        return False


# --------------------------------------------------------------------- results
@dataclass
class Result:
    method: str
    kind: str                        # sql | library
    status: str = "ok"               # ok | timeout | does not fit | error | MISMATCH | skipped
    est_cost: float | None = None
    times: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)      # session.run: loads + execution + fetch
    opts: list[float] = field(default_factory=list)      # Session + statistics + optimisation
    peak_rss: int | None = None
    rss_growth: int | None = None
    duck_peak: int | None = None
    duck_spill: int | None = None
    opt_seconds: float | None = None
    max_abs_diff: float | None = None
    note: str = ""
    plan_key: tuple | None = None
    spec: object = None              # what a user passes to Session.plan: a name or a Plan
    steps: list[tuple[str, float]] = field(default_factory=list)     # of the last run

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def load(self) -> float | None:
        return statistics.median(self.loads) if self.loads else None

    @property
    def wall(self) -> float | None:
        return statistics.median(self.walls) if self.walls else None

    @property
    def run(self) -> float | None:
        return statistics.median(self.runs) if self.runs else None


def max_abs_diff(out, ref) -> float:
    """Largest |out - ref| (either side dense or scipy sparse) without densifying a sparse ref."""
    if sp.issparse(ref) and sp.issparse(out):
        d = (sp.csr_matrix(out) - sp.csr_matrix(ref))
        return float(abs(d).max()) if d.nnz else 0.0
    if sp.issparse(ref):
        out = np.asarray(out)
        coo = ref.tocoo()
        on = float(np.abs(out[coo.row, coo.col] - coo.data).max()) if coo.nnz else 0.0
        saved = out[coo.row, coo.col].copy()
        out[coo.row, coo.col] = 0.0
        off = float(np.abs(out).max()) if out.size else 0.0
        out[coo.row, coo.col] = saved
        return max(on, off)
    if sp.issparse(out):
        return max_abs_diff(ref, out)
    return float(np.abs(np.asarray(out) - np.asarray(ref)).max())


def _scale(ref) -> float:
    data = ref.data if sp.issparse(ref) else np.asarray(ref)
    return max(1.0, float(np.abs(data).max()) if data.size else 0.0)


# ------------------------------------------------------------- library baselines
def _available_memory() -> int:
    try:
        import psutil
        return int(psutil.virtual_memory().total)
    except ImportError:  # pragma: no cover
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def library_methods(w: Workload) -> dict[str, tuple[Callable[[], object], Callable[[object], object], int]]:
    """name -> (prepare, compute, bytes of its largest dense matrix); prepare is the 'load'."""
    d = w.data
    methods: dict[str, tuple] = {}
    if w.name == "quantum":
        n_layers = sum(1 for k in d if k.startswith("G"))

        def complex_u(g):
            return g[0, :, 0, :] + 1j * g[1, :, 0, :]

        def run_chain(mats, psi):
            for m in mats:
                psi = m @ psi
            return psi

        from .circuits import complex_state, real_state
        psi0 = complex_state(d["S0"])
        size = 16 * d["S0"].shape[1] ** 2
        methods["scipy"] = (lambda: [sp.csr_matrix(complex_u(d[f"G{k}"])) for k in range(1, n_layers + 1)],
                            lambda mats: real_state(run_chain(mats, psi0)), 0)
        methods["numpy-dense"] = (lambda: [complex_u(d[f"G{k}"]) for k in range(1, n_layers + 1)],
                                  lambda mats: real_state(run_chain(mats, psi0)), size)
        return methods

    if w.name == "gcn_layer":
        A, H, W = d["A"], d["H"], d["W"]

        def gcn_layer(A, H, W):
            return np.maximum(A @ (H @ W), 0.0)
        methods["scipy"] = (lambda: (sp.csr_matrix(A), H, W), lambda t: gcn_layer(*t), 0)
        methods["numpy-dense"] = (lambda: (dense(A), dense(H), W), lambda t: gcn_layer(*t),
                                  8 * A.shape[0] * A.shape[1])
    elif w.name == "gcn2":
        A, dv, X, W1, W2 = d["A"], d["d"], d["X"], d["W1"], d["W2"]

        def gcn2_sparse(A, dv, X, W1, W2):
            D = sp.diags(dv)
            N = (D @ A @ D).tocsr()
            H = np.maximum(N @ (X @ W1), 0.0)
            return N @ (H @ W2)

        def gcn2_dense(A, dv, X, W1, W2):
            N = dv[:, None] * A * dv[None, :]
            H = np.maximum(N @ (X @ W1), 0.0)
            return N @ (H @ W2)
        methods["scipy"] = (lambda: (sp.csr_matrix(A), dv, X, W1, W2), lambda t: gcn2_sparse(*t), 0)
        methods["numpy-dense"] = (lambda: (dense(A), dv, dense(X), W1, W2),
                                  lambda t: gcn2_dense(*t), 2 * 8 * A.shape[0] * A.shape[1])
    elif w.name == "sparse_attention":
        X, WQ, WK, A, s = d["X"], d["WQ"], d["WK"], d["A"], float(d["s"])

        def sddmm(X, WQ, WK, A):
            q, k = np.asarray(X @ WQ), np.asarray(X @ WK)
            coo = A.tocoo()
            vals = np.empty(coo.nnz)
            step = max(1, (1 << 24) // max(1, q.shape[1]))
            for lo in range(0, coo.nnz, step):
                hi = min(coo.nnz, lo + step)
                vals[lo:hi] = np.einsum("ek,ek->e", q[coo.row[lo:hi]], k[coo.col[lo:hi]])
            return sp.csr_matrix((vals * coo.data * s, (coo.row, coo.col)), shape=A.shape)

        def masked_dense(X, WQ, WK, A):
            return (X @ WQ) @ (X @ WK).T * A * s
        methods["scipy"] = (lambda: (X, WQ, WK, sp.coo_matrix(A)), lambda t: sddmm(*t), 0)
        methods["numpy-dense"] = (lambda: (dense(X), WQ, WK, dense(A)), lambda t: masked_dense(*t),
                                  2 * 8 * A.shape[0] * A.shape[1])
    elif w.name == "dense_attention":
        X, WQ, WK, s = d["X"], d["WQ"], d["WK"], float(d["s"])
        n = X.shape[0]
        methods["scipy"] = (lambda: (X, WQ, WK),
                            lambda t: np.asarray(t[0] @ t[1]) @ np.asarray(t[0] @ t[2]).T * s, 8 * n * n)
        methods["numpy-dense"] = (lambda: (dense(X), WQ, WK),
                                  lambda t: (t[0] @ t[1]) @ (t[0] @ t[2]).T * s, 8 * n * n)
    elif w.name == "chain3":
        A, B, C = d["A"], d["B"], d["C"]
        methods["scipy"] = (lambda: (sp.csr_matrix(A), B, C), lambda t: t[0] @ (t[1] @ t[2]), 0)
        methods["numpy-dense"] = (lambda: (dense(A), dense(B), C),
                                  lambda t: t[0] @ (t[1] @ t[2]), 8 * A.shape[0] * A.shape[1])
    else:
        raise ValueError(w.name)
    return methods


def torch_methods(w: Workload) -> dict[str, tuple]:
    """PyTorch CPU (torch.sparse, default threads) versions, when torch imports."""
    try:
        import warnings

        import torch
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    except ImportError:
        return {}
    d = w.data

    def csr(m):
        m = sp.csr_matrix(m)
        m.sort_indices()
        return torch.sparse_csr_tensor(torch.from_numpy(m.indptr.astype(np.int64)),
                                       torch.from_numpy(m.indices.astype(np.int64)),
                                       torch.from_numpy(m.data.astype(np.float64)), size=m.shape)

    def t(x):
        return csr(x) if sp.issparse(x) else torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))

    def mm(a, b):
        return torch.sparse.mm(a, b) if a.layout != torch.strided else a @ b

    def to_numpy(x):
        if x.layout == torch.sparse_csr:
            return sp.csr_matrix((x.values().numpy(), x.col_indices().numpy(),
                                  x.crow_indices().numpy()), shape=tuple(x.shape))
        return x.numpy()

    if w.name == "quantum":
        n_layers = sum(1 for k in d if k.startswith("G"))
        n = d["S0"].shape[1]

        def prep():
            return [csr(d[f"G{k}"].reshape(2 * n, 2 * n)) for k in range(1, n_layers + 1)]

        def run(mats):
            s = torch.from_numpy(d["S0"].reshape(2 * n, 1).copy())
            for m in mats:
                s = torch.sparse.mm(m, s)
            return s.numpy().reshape(2, n)
        return {"torch": (prep, run, 0)}
    if w.name == "gcn_layer":
        return {"torch": (lambda: (t(d["A"]), t(d["H"]), t(d["W"])),
                          lambda a: to_numpy(torch.relu(mm(a[0], mm(a[1], a[2])))), 0)}
    if w.name == "gcn2":
        def prep():
            a = sp.csr_matrix(d["A"])
            a.sort_indices()
            return (csr(a), torch.from_numpy(d["d"]), t(d["X"]), t(d["W1"]), t(d["W2"]))

        def run(a):
            A, dv, X, W1, W2 = a
            rows = torch.repeat_interleave(torch.arange(A.shape[0]), A.crow_indices().diff())
            vals = dv[rows] * A.values() * dv[A.col_indices()]
            N = torch.sparse_csr_tensor(A.crow_indices(), A.col_indices(), vals, size=A.shape)
            H = torch.relu(torch.sparse.mm(N, mm(X, W1)))
            return to_numpy(torch.sparse.mm(N, H @ W2))
        return {"torch": (prep, run, 0)}
    if w.name == "sparse_attention":
        s = float(d["s"])

        def run(a):
            X, WQ, WK, A = a
            q, k = mm(X, WQ), mm(X, WK)
            out = torch.sparse.sampled_addmm(A, q, k.T, beta=0.0, alpha=s)
            vals = out.values() * A.values()
            return to_numpy(torch.sparse_csr_tensor(out.crow_indices(), out.col_indices(), vals,
                                                    size=out.shape))
        return {"torch": (lambda: (t(d["X"]), t(d["WQ"]), t(d["WK"]), t(d["A"])), run, 0)}
    if w.name == "dense_attention":
        s = float(d["s"])
        n = d["X"].shape[0]
        return {"torch": (lambda: (t(d["X"]), t(d["WQ"]), t(d["WK"])),
                          lambda a: to_numpy(mm(a[0], a[1]) @ mm(a[0], a[2]).T * s), 8 * n * n)}
    if w.name == "chain3":
        return {"torch": (lambda: (t(d["A"]), t(d["B"]), t(d["C"])),
                          lambda a: to_numpy(mm(a[0], mm(a[1], a[2]))), 0)}
    return {}


# --------------------------------------------------------------------- the harness
def _plan_key(plan) -> tuple:
    return tuple(sorted(plan.choices.items()))


def _too_big(ctx: OptimizerContext, plan: Plan) -> str:
    """Why `plan` does not fit the memory cap."""
    vertex = next((v.name for v in ctx.dag.vertices
                   if not ctx.model.fits(v, plan.choices[v.name])), "a vertex")
    return f"a tuple of {vertex} exceeds the memory cap of {ctx.model.cap / 2 ** 20:.0f} MiB"


# the table's rows for the plans of candidate_plans, in its order: rank:1 is "optimal"
RANKED = ("rank:1", "rank:2", "rank:3")
DISPLAY = {"rank:1": "optimal"}


def optimizer_candidates(w: Workload, db, log) -> tuple[list, list[Result], dict, object]:
    """The SQL plans to run (`candidate_plans` and the hand-written ones), their Result
    rows (est. cost, what to pass to Session.plan), the optimisation timings and the DAG."""
    t0 = time.perf_counter()
    with Session(w.program, w.data, backend=db) as session:
        t1 = time.perf_counter()
        session.stats()
        t2 = time.perf_counter()
        ctx = session.optimizer()
        t3 = time.perf_counter()
        found = candidate_plans(ctx, top=len(RANKED))
        t4 = time.perf_counter()
        folded = {alias: p.name for p in found for alias in p.aliases}
        hand = {}
        for name, labels in HAND_PLANS.get(w.name, {}).items():
            if set(labels) != {v.name for v in ctx.dag.vertices}:
                log(f"  ({name} skipped: the program's vertices are not {sorted(labels)})")
                continue
            hand[name] = ctx.price(Plan.promoting(ctx.dag, labels, name))
        too_big = {p.name: _too_big(ctx, p) for p in [*found, *hand.values()] if not p.fits}
        dag = session.dag
    timing = {"session": t1 - t0, "statistics": t2 - t1, "build": t3 - t2,
              "candidate_plans": t4 - t3}
    log(f"  optimisation: Session (parse, bind, lower) {timing['session']:.3f} s, statistics "
        f"{timing['statistics']:.3f} s, propagation + cost model {timing['build']:.3f} s, "
        f"candidate plans (DP top {len(RANKED)}, greedy, relational, dense) "
        f"{timing['candidate_plans']:.3f} s")
    by_name = {p.name: p for p in found}
    # rank:1..3 (skipped when the program has fewer plans), then greedy, relational and
    # dense, each once: a strategy candidate_plans folded into an earlier plan shares its row
    others = [n for n in FOLDABLE if n in by_name or n in folded]
    others += [n for n in by_name if n not in RANKED and n not in FOLDABLE]
    plans, rows = [], []

    def add(name: str, plan: Plan | None, spec: object) -> None:
        row = Result(DISPLAY.get(name, name), "sql", spec=spec)
        if plan is None:
            row.status, row.note = "skipped", "the program has fewer plans"
        elif not plan.fits:
            row.status, row.note, row.opt_seconds = "does not fit", too_big[plan.name], 0.0
            plan = None
        else:
            row.est_cost, row.plan_key = plan.cost, _plan_key(plan)
        plans.append(plan)
        rows.append(row)

    for name in (*RANKED, *others):
        if name in folded:
            add(name, by_name[folded[name]], name)
        else:
            add(name, by_name.get(name), "optimal" if name == "rank:1" else name)
    for name, plan in hand.items():
        add(name, plan, plan)
    for row in rows:      # equal plans share one measurement
        if row.plan_key is None:
            continue
        first = next(r for r in rows if r.plan_key == row.plan_key)
        if first is not row:
            row.note = f"same plan as {first.method}"
    return plans, rows, timing, dag


def session_run(w: Workload, db, spec: object, run: bool = True):
    """What a user does: a Session on the workload, its plan `spec`, and (with `run`) the
    run, its result sparse where it is estimated sparse (format="auto", as the libraries
    compared return a sparse attention matrix); returns (plan, Execution or None, seconds
    to the plan, seconds of the run, seconds of it all)."""
    start = time.perf_counter()
    with Session(w.program, w.data, backend=db) as session:
        session.optimizer()
        plan = session.plan(spec)
        planned = time.perf_counter()
        execution = session.run(plan, format="auto") if run else None
        ran = time.perf_counter()
    return plan, execution, planned - start, ran - planned, time.perf_counter() - start


def plan_seconds(w: Workload, db, spec: object, repeats: int) -> float:
    """Median seconds of Session + statistics + optimisation for plan `spec` (not run)."""
    return statistics.median(session_run(w, db, spec, run=False)[2] for _ in range(repeats))


def run_sql(w: Workload, expected: Plan, row: Result, db, repeats: int, timeout: float | None,
            reference, log) -> object:
    out = None
    duck = getattr(db, "con", None) if db.name == "duckdb" else None
    mem = PeakMemory(duck)
    try:
        with mem:
            for n in range(repeats):
                try:
                    with Deadline(db, timeout):
                        plan, run, opt, ran, wall = session_run(w, db, row.spec)
                except Timeout as exc:
                    row.status, row.note = "timeout", f"> {timeout:.0f} s ({exc})"
                    break
                if plan.choices != expected.choices:
                    row.note = f"Session.plan({row.spec!r}) chose another plan than candidate_plans"
                row.times.append(run.seconds(loads=False))
                row.loads.append(run.seconds() - run.seconds(loads=False))
                row.runs.append(ran)
                row.opts.append(opt)
                row.walls.append(wall)
                out = run.outputs[w.output]
                row.steps = [(s.label, s.seconds) for s in run.steps]
                del run
                log(f"    {row.method} run {n + 1}: {row.times[-1]:.3f} s "
                    f"(load {row.loads[-1]:.3f} s, statistics + optimisation {opt:.3f} s, "
                    f"wall {wall:.3f} s)")
    except Exception as exc:  # noqa: BLE001 - a failing plan is a result to report
        row.status, row.note = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        log(f"    {row.method}: ERROR {row.note}")
    finally:
        mem.close()
    row.peak_rss, row.rss_growth = mem.peak_rss, mem.peak_rss - mem.start_rss
    row.duck_peak, row.duck_spill = mem.duck_peak, mem.duck_spill
    if row.opts:
        row.opt_seconds = statistics.median(row.opts)
    if out is not None:
        _check(row, out, reference)
    return out


def _check(row: Result, out, reference) -> None:
    row.max_abs_diff = max_abs_diff(out, reference)
    if not row.max_abs_diff <= TOLERANCE * _scale(reference):
        row.status = "MISMATCH"
        row.note = (row.note + "; " if row.note else "") + \
            f"max abs diff {row.max_abs_diff:.3g} to the scipy result"


def run_library(name: str, prep, compute, row: Result, repeats: int, reference, log):
    out = None
    mem = PeakMemory()
    try:
        with mem:
            for n in range(repeats):
                start = time.perf_counter()
                prepared = prep()
                loaded = time.perf_counter()
                out = compute(prepared)
                done = time.perf_counter()
                del prepared
                row.loads.append(loaded - start)
                row.times.append(done - loaded)
                row.walls.append(done - start)
                log(f"    {name} run {n + 1}: {row.times[-1]:.3f} s (load {row.loads[-1]:.3f} s)")
    except MemoryError as exc:
        row.status, row.note = "OOM", f"MemoryError {exc}"
    except Exception as exc:  # noqa: BLE001
        row.status, row.note = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        log(f"    {name}: ERROR {row.note}")
    row.peak_rss, row.rss_growth = mem.peak_rss, mem.peak_rss - mem.start_rss
    if out is not None and reference is not None:
        _check(row, out, reference)
    return out


def benchmark(w: Workload, db, *, repeats: int, timeout: float | None, log) -> tuple[list[Result], dict]:
    log(f"\n== {w.name} on {w.dataset} ({db.name}) ==\n  data: {w.describe}")
    # the reference first, so that every other method is checked as it finishes
    libs = library_methods(w)
    results: list[Result] = []
    scipy_row = Result("scipy", "library", opt_seconds=0.0)
    prep, compute, _ = libs.pop("scipy")
    reference = run_library("scipy", prep, compute, scipy_row, repeats, None, log)
    if reference is None:
        raise RuntimeError(f"the scipy reference failed: {scipy_row.note}")
    scipy_row.max_abs_diff = 0.0
    plans, sql_rows, timing, dag = optimizer_candidates(w, db, log)
    done: dict[tuple, Result] = {}
    for plan, row in zip(plans, sql_rows):
        if plan is None:
            log(f"    {row.method}: {row.status} ({row.note})")
            continue
        if row.plan_key in done:      # same decomposition as a plan already measured
            first = done[row.plan_key]
            for attr in ("status", "times", "loads", "walls", "runs", "peak_rss", "rss_growth",
                         "duck_peak", "duck_spill", "max_abs_diff"):
                setattr(row, attr, getattr(first, attr))
            row.opt_seconds = plan_seconds(w, db, row.spec, repeats)    # its own optimisation
            continue
        log(f"  {row.method}: estimated cost {row.est_cost:.4g}")
        for line in plan.describe(dag).splitlines():
            log(f"      {line}")
        run_sql(w, plan, row, db, repeats, timeout, reference, log)
        done[row.plan_key] = row
    results.extend(sql_rows)
    results.append(scipy_row)
    limit = _available_memory() // 4
    extra = dict(libs)
    extra.update(torch_methods(w))
    for name, (prep, compute, dense_bytes) in extra.items():
        row = Result(name, "library", opt_seconds=0.0)
        if dense_bytes > limit:
            row.status = "does not fit"
            row.note = f"a dense matrix needs {dense_bytes / 2 ** 30:.1f} GiB"
            log(f"    {name}: does not fit ({row.note})")
        else:
            run_library(name, prep, compute, row, repeats, reference, log)
        results.append(row)
    return results, timing


# ------------------------------------------------------------------------ report
def spearman(rows: list[Result]) -> tuple[float, int]:
    """Rank correlation of estimated cost and run time (loads, execution and fetching the
    result, as the cost model prices them) over distinct SQL plans that ran."""
    pts = [(r.est_cost, r.run) for r in rows
           if r.kind == "sql" and r.status == "ok" and r.est_cost is not None
           and not r.note.startswith("same plan")]
    if len(pts) < 3:
        return float("nan"), len(pts)
    from scipy.stats import spearmanr
    return float(spearmanr([p[0] for p in pts], [p[1] for p in pts]).statistic), len(pts)


def _mb(x: int | None) -> str:
    return "" if x is None else f"{x / 2 ** 20:.0f}"


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "" if x is None else format(x, fmt)


COLUMNS = ("method", "status", "est. cost", "median s", "x optimal", "load s", "wall s",
           "peak RSS MB", "+RSS MB", "duckdb MB", "spill MB", "opt s", "max diff", "note")


def table_rows(rows: list[Result]) -> list[list[str]]:
    opt = next((r for r in rows if r.method == "optimal" and r.median), None)
    out = []
    for r in rows:
        ratio = r.median / opt.median if (opt and r.median is not None and r.status != "timeout"
                                          and opt.median > 0) else None
        out.append([r.method, r.status, _num(r.est_cost, ".4g"), _num(r.median),
                    _num(ratio, ".3g"), _num(r.load), _num(r.wall), _mb(r.peak_rss),
                    _mb(r.rss_growth), _mb(r.duck_peak), _mb(r.duck_spill),
                    _num(r.opt_seconds), _num(r.max_abs_diff, ".1e"), r.note])
    return out


def format_table(rows: list[Result]) -> str:
    body = table_rows(rows)
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(COLUMNS[:-1])]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(COLUMNS[:-1], widths)) + " | note |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|------|"]
    for b in body:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(b[:-1], widths)) + f" | {b[-1]} |")
    return "\n".join(lines)


def write_csv(path: Path, w: Workload, backend: str, rows: list[Result],
              provenance: harness.Provenance) -> None:
    columns = ("status", "est_cost", "median_s", "ratio_to_optimal", "load_s", "wall_s")
    memory = ("peak_rss_mb", "rss_growth_mb", "duckdb_peak_mb", "duckdb_spill_mb", "opt_s",
              "max_abs_diff")
    harness.write_csv(path, [
        {"workload": w.name, "dataset": w.dataset, "backend": backend, "method": r.method,
         **dict(zip(columns, b[1:7])), "runs_s": " ".join(f"{t:.4f}" for t in r.times),
         **dict(zip(memory, b[7:13])), "note": r.note}
        for r, b in zip(rows, table_rows(rows))], provenance)


def write_chart(path: Path, title: str, rows: list[Result], timeout: float | None = None) -> None:
    """Horizontal bars of median time (log scale); a timeout is a hatched bar at the limit."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    ordered = rows[::-1]
    values, hatches, texts = [], [], []
    for r in ordered:
        if r.median is not None and r.status in ("ok", "MISMATCH"):
            values.append(r.median)
            hatches.append("")
            texts.append(f"{r.median:.3g} s" + (" MISMATCH" if r.status == "MISMATCH" else ""))
        elif r.status == "timeout" and timeout:
            values.append(timeout)
            hatches.append("//")
            texts.append(f"timeout (> {timeout:.0f} s)")
        else:
            values.append(0.0)
            hatches.append("")
            texts.append(r.status)
    positive = [v for v in values if v > 0]
    lo = min(positive) / 3 if positive else 1e-3
    colors = ["tab:blue" if r.kind == "sql" else "tab:orange" for r in ordered]
    bars = ax.barh([r.method for r in ordered], values, color=colors)
    for bar, hatch in zip(bars, hatches):
        if hatch:
            bar.set_hatch(hatch)
            bar.set_facecolor("white")
            bar.set_edgecolor("tab:blue")
    ax.set_xscale("log")
    ax.set_xlim(left=lo, right=max(positive) * 6 if positive else 1)
    for y, (v, text) in enumerate(zip(values, texts)):
        ax.text(v if v > 0 else lo, y, " " + text, va="center", fontsize=8)
    ax.set_xlabel("median execution time (s, log scale; input loading excluded); "
                  "blue: SQL plans, orange: libraries", fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def connect(name: str, dsn: str | None, memory_limit: str | None, temp_directory: str | None):
    """The backend every method runs on: DuckDB, or PostgreSQL at `dsn` (default: a
    throwaway local server), installing the kernels there when they are missing."""
    if name == "duckdb":
        return open_backend("duckdb", memory_limit=memory_limit, temp_directory=temp_directory)[0]
    if name != "postgres":
        raise SystemExit(f"unknown backend {name!r}")
    if not dsn:
        from sparse_einsum.backends.pg_cluster import shared_dsn
        dsn = shared_dsn()
        if dsn is None:
            raise SystemExit("no PostgreSQL: pass --dsn or install postgresql (initdb)")
    try:
        return open_backend("postgres", dsn=dsn)[0]
    except BackendError as exc:
        if "not installed" not in str(exc):
            raise
        from sparse_einsum.backends.pg_kernels import install_kernels
        install_kernels(dsn)
        return open_backend("postgres", dsn=dsn)[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="gcn2",
                    help=f"one of {', '.join(WORKLOADS)}, a comma-separated list, or all")
    ap.add_argument("--dataset", help="graph data set, or circuit for quantum "
                    "(default: cora / qft; karate / qft with --quick)")
    ap.add_argument("--backend", default="duckdb", choices=("duckdb", "postgres"))
    ap.add_argument("--dsn", help="PostgreSQL DSN (default: a throwaway local server)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="karate (5 qubits for quantum), 1 repeat, 60 s time limit")
    ap.add_argument("--d-k", type=int, default=1024, help="attention key width")
    ap.add_argument("--hidden", type=int, default=256, help="GCN hidden size")
    ap.add_argument("--qubits", type=int, default=None, help="circuit size (default 8; 5 quick)")
    ap.add_argument("--memory-limit", help="DuckDB memory_limit, e.g. 2GB")
    ap.add_argument("--temp-directory", help="DuckDB temp_directory for spilling")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per SQL plan run (default 300; 60 with --quick)")
    add_output_arguments(ap)
    args = ap.parse_args(argv)

    names = WORKLOADS if args.workload == "all" else tuple(args.workload.split(","))
    for n in names:
        if n not in WORKLOADS:
            ap.error(f"unknown workload {n!r}; choose from {', '.join(WORKLOADS)}")
    repeats = 1 if args.quick else args.repeats
    timeout = args.timeout or (60.0 if args.quick else 300.0)
    tables_dir, generated_dir = output_dirs(args.out, args.publish)
    provenance = harness.Provenance("bench", argv)
    header = provenance.header()
    print(header, flush=True)

    def log(msg: str) -> None:
        print(msg, flush=True)

    db = connect(args.backend, args.dsn, args.memory_limit, args.temp_directory)
    failures = []
    try:
        if db.name == "duckdb":
            settings = db.con.execute("SELECT current_setting('memory_limit'), "
                                      "current_setting('threads')").fetchall()[0]
            header += f"\nduckdb: memory_limit {settings[0]}, threads {settings[1]}"
            log(header.splitlines()[-1])
        for name in names:
            dataset = args.dataset or (("qft" if name == "quantum" else "karate") if args.quick
                                       else ("qft" if name == "quantum" else "cora"))
            if name == "quantum" and dataset not in CIRCUIT_NAMES:
                ap.error(f"quantum needs a circuit as --dataset: {', '.join(CIRCUIT_NAMES)}")
            qubits = args.qubits or (5 if args.quick else 8)
            load_before = os.getloadavg()[0]
            t0 = time.perf_counter()
            w = load_workload(name, dataset, hidden=args.hidden, d_k=args.d_k, qubits=qubits)
            log(f"\ngenerated {name} data on {w.dataset} in {time.perf_counter() - t0:.1f} s")
            rows, timing = benchmark(w, db, repeats=repeats, timeout=timeout, log=log)
            rho, n = spearman(rows)
            table = format_table(rows)
            summary = (f"Spearman rank correlation (estimated cost vs median run time, loads "
                       f"included) over {n} "
                       f"distinct SQL plans: {rho:.2f}\noptimisation: " +
                       ", ".join(f"{k} {v:.3f} s" for k, v in timing.items()) +
                       f"\n1-minute load average of the machine: {load_before:.2f} before, "
                       f"{os.getloadavg()[0]:.2f} after ({os.cpu_count()} cores)")
            title = f"{w.name} on {w.dataset}, {db.name}, median of {repeats}"
            text = f"{header}\n\n{title}\ndata: {w.describe}\n\n{table}\n\n{summary}\n"
            text += "\nSQL plans and the step times of their last run:\n" + "\n".join(
                f"\n{r.method} ({r.status}, estimated cost {_num(r.est_cost, '.4g')}):\n" +
                "\n".join(f"  {sec:9.3f} s  {label}" for label, sec in r.steps)
                for r in rows if r.kind == "sql" and r.steps and not r.note.startswith("same plan"))
            log("\n" + title + "\n" + table + "\n" + summary)
            stem = f"bench_{w.name}_{w.dataset}_{db.name}"
            write_csv(tables_dir / f"{stem}.csv", w, db.name, rows, provenance)
            (generated_dir / f"{stem}.txt").write_text(text)
            write_chart(generated_dir / f"{stem}.png", title, rows, timeout)
            log(f"wrote {tables_dir / stem}.csv, {generated_dir / stem}.txt, .png")
            failures += [f"{w.name}/{w.dataset} {r.method}: {r.note}" for r in rows
                         if r.status in ("MISMATCH", "error")]
    finally:
        db.close()
    if failures:
        print("\nFAILED: results disagree or a method failed:\n  " + "\n  ".join(failures),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
