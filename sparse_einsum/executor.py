"""Run a planned DAG on a backend: load inputs, run each step, fetch the outputs."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from .plan import Plan
from .program.dag import Dag
from .relation import Relation, compose, decompose
from .sql.compiler import Compiler, Dialect
from .sql.relations import RelInfo, Step


class Backend(Protocol):
    name: str
    dialect: Dialect

    def load(self, rel: RelInfo, relation: Relation) -> None: ...
    def run(self, step: Step) -> None: ...
    def fetch(self, rel: RelInfo) -> Relation: ...
    def row_count(self, rel: RelInfo) -> int: ...
    def drop(self, rel: RelInfo) -> None: ...


@dataclass
class StepReport:
    label: str
    vertex: str | None
    seconds: float
    tuples: int | None = None


@dataclass
class Execution:
    outputs: dict[str, np.ndarray]
    steps: list[StepReport] = field(default_factory=list)


def execute(dag: Dag, plan: Plan, data: dict[str, object], backend: Backend, *,
            count_tuples: bool = False, progress: Callable[[str], None] | None = None,
            stored_inputs: dict[str, RelInfo] | None = None) -> Execution:
    """Compile `plan` for the backend's dialect and run it; intermediates are dropped."""
    compiler = Compiler(dag, plan, backend.dialect, stored_inputs=stored_inputs)
    compiler.compile()
    outputs = compiler.outputs()
    reports: list[StepReport] = []
    created: list[RelInfo] = []
    try:
        for n, step in enumerate(compiler.steps, 1):
            if progress:
                progress(f"[{n}/{len(compiler.steps)}] {step.label}")
            start = time.perf_counter()
            created.append(step.target)
            if step.kind == "load":
                backend.load(step.target, decompose(data[step.target.tensor], step.target.axes))
            else:
                backend.run(step)
            seconds = time.perf_counter() - start
            tuples = backend.row_count(step.target) if count_tuples else None
            reports.append(StepReport(step.label, step.vertex, seconds, tuples))
        results = {name: compose(backend.fetch(rel), rel.shape, rel.axes)
                   for name, rel in outputs.items()}
    finally:
        for rel in created:
            backend.drop(rel)
    return Execution(results, reports)
