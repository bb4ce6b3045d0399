"""Run compiled steps on a backend: load inputs, run each statement, fetch the outputs,
and drop every table the run made."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .backends.base import Backend
from .blocks import Blocks, compose, compose_sparse, decompose
from .plan import Plan
from .sql.compiler import CompiledPlan
from .sql.steps import TableRelation, invariant as invariant_tables


@dataclass
class StepReport:
    label: str
    vertex: str | None
    seconds: float
    tuples: int | None = None


@dataclass
class Execution:
    outputs: dict[str, object]          # NumPy arrays, or scipy.sparse arrays where asked
    steps: list[StepReport] = field(default_factory=list)
    plan: Plan | None = None

    def seconds(self, loads: bool = True) -> float:
        """Time in the steps (with or without the input loads)."""
        return sum(s.seconds for s in self.steps if loads or not s.label.startswith("load "))


def execute(compiled: CompiledPlan, arrays: dict[str, object], backend: Backend, *,
            count_tuples: bool = False, progress: Callable[[str], None] | None = None,
            sparse: frozenset[str] = frozenset(),
            resident: dict[str, TableRelation] | None = None) -> Execution:
    """Run `compiled`; `arrays` holds the in-memory inputs its load steps decompose; the
    outputs named in `sparse` come back as scipy.sparse arrays, the others dense. The
    tables of `compiled.combined` stay in the engine, for the caller to drop. With
    `resident` (kept by the caller across runs of `compiled` on the same `arrays`, whose
    tables read in place change between runs), each input is loaded once, and each
    statement that reads only loaded inputs (and such statements) runs once: their tables
    stay, recorded there, for the caller to drop."""
    backend.prepare_run(compiled.steps)
    with backend.scope():
        return _execute(compiled, arrays, backend, count_tuples, progress, sparse, resident)


def _execute(compiled: CompiledPlan, arrays: dict[str, object], backend: Backend,
             count_tuples: bool, progress: Callable[[str], None] | None,
             sparse: frozenset[str], resident: dict[str, TableRelation] | None
             ) -> Execution:
    reports: list[StepReport] = []
    created = []
    loaded = {} if resident is None else resident     # tables that outlive the run
    fresh = set()
    reads = _reads(compiled)
    done_after = _last_reads(compiled, reads)
    # outputs that no later step reads are fetched from their statement's query, unstored
    fetched: dict[str, Blocks] = {}
    direct = set() if count_tuples else _read_by_none(compiled, reads)
    # fetched unstored, or left for the caller
    undropped = direct | {rel.table for rel in compiled.combined.values()}
    invariant = set() if resident is None else invariant_tables(
        compiled.steps, compiled.read_in_place,
        undropped | {rel.table for rel in compiled.outputs.values()})
    try:
        for n, step in enumerate(compiled.steps, 1):
            if progress:
                progress(f"[{n}/{len(compiled.steps)}] {step.label}")
            if step.target.table in loaded:
                continue                               # made by an earlier run
            start = time.perf_counter()
            if step.target.table in invariant:
                loaded[step.target.table] = step.target
                fresh.add(step.target.table)
            elif step.kind == "load" or step.target.table not in undropped:
                created.append(step.target)
            if step.kind == "load":
                tensor = step.target.tensor
                backend.load(step.target, decompose(arrays[tensor], step.target.tiling,
                                                    step.target.sparse,
                                                    compiled.defaults.get(tensor, 0.0)))
            elif step.target.table in direct:
                fetched[step.target.table] = backend.run_and_fetch(step)
            else:
                backend.run(step)
            seconds = time.perf_counter() - start
            tuples = backend.row_count(step.target) if count_tuples else None
            reports.append(StepReport(step.label, step.vertex, seconds, tuples))
            for rel in done_after.get(n - 1, ()):    # intermediates no later step reads
                if rel.table not in loaded:
                    backend.drop(rel)
                    created.remove(rel)
        results = {name: (compose_sparse if name in sparse and rel.shape else compose)(
                       fetched[rel.table] if rel.table in fetched else backend.fetch(rel),
                       rel.shape, rel.tiling, compiled.defaults.get(name, 0.0))
                   for name, rel in compiled.outputs.items()}
    except BaseException:
        for table in fresh:               # a failed run's loads are not kept
            created.append(loaded.pop(table))
        raise
    finally:
        for rel in created:
            backend.drop(rel)
    return Execution(results, reports)


def _reads(compiled: CompiledPlan) -> list[frozenset[str]]:
    """Per step, the tables it reads (as the compiler recorded them)."""
    return [step.reads for step in compiled.steps]


def _read_by_none(compiled: CompiledPlan, reads: list[frozenset[str]]) -> set[str]:
    """The tables of outputs (each alone in its table) that the run computes and no later
    step reads."""
    read = set().union(*reads)
    return {rel.table for rel in compiled.outputs.values() if rel.value == "val"} - read - {
        step.target.table for step in compiled.steps if step.kind == "load"}


def _last_reads(compiled: CompiledPlan, reads: list[frozenset[str]]
                ) -> dict[int, list[TableRelation]]:
    """Step index -> the tables made by the run that no later step reads; outputs are
    kept. Dropping them early bounds the memory of a run by the live intermediates (a
    training iteration makes dozens)."""
    kept = {rel.table for rel in [*compiled.outputs.values(), *compiled.combined.values()]}
    last: dict[str, tuple[int, TableRelation]] = {}
    for k, (step, read) in enumerate(zip(compiled.steps, reads)):
        for table in read & last.keys():
            last[table] = (k, last[table][1])
        if step.target.table not in kept:
            last[step.target.table] = (k, step.target)
    done: dict[int, list[TableRelation]] = {}
    for k, rel in last.values():
        done.setdefault(k, []).append(rel)
    return done
