"""The optimizer's entry point: statistics -> cost model -> search -> ranked Plans."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..cost import CostModel, CostParams, load_params
from ..errors import PlanError
from ..plan import Plan
from ..program.dag import Dag
from ..stats.propagate import propagate
from ..stats.tensor_stats import TensorStats, exact_stats
from .search import Partial, _axes, dynamic_programming, greedy


def default_memory_cap() -> float:
    """Bytes one tuple or kernel call may hold: 1/32 of physical memory, at most 256 MiB."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        physical = 8 << 30
    return float(min(physical // 32, 256 << 20))


@dataclass
class Optimizer:
    """Everything the search needs for one DAG; built once, asked for several plans."""
    dag: Dag
    stats: dict[str, TensorStats]
    model: CostModel
    stored: dict[str, tuple[int, ...]]

    @classmethod
    def build(cls, dag: Dag, input_stats: dict[str, TensorStats], *, backend: str = "duckdb",
              params: CostParams | None = None, max_tuple_bytes: float | None = None,
              stored: dict[str, tuple[int, ...]] | None = None) -> "Optimizer":
        stats = propagate(dag, input_stats)
        model = CostModel(dag, stats, params or load_params(backend),
                          max_tuple_bytes or default_memory_cap())
        return cls(dag, stats, model, stored or {})

    def top(self, k: int) -> list[Plan]:
        found = dynamic_programming(self.dag, self.model, k, self.stored)
        if not found:
            raise PlanError("no plan fits the memory cap of "
                            f"{self.model.cap:.0f} bytes per tuple")
        return [self.to_plan(p, f"rank:{n}") for n, p in enumerate(found, 1)]

    def greedy(self) -> Plan:
        return self.to_plan(greedy(self.dag, self.model, self.stored), "greedy")

    def to_plan(self, partial: Partial, name: str) -> Plan:
        plan = Plan(dict(partial.choices), name=name, cost=partial.total)
        plan.statement_costs = self.breakdown(plan)
        return plan

    def breakdown(self, plan: Plan) -> dict[str, dict[str, float]]:
        """Per vertex: estimated tuples and cost split into load/join/aggregate/repartition/
        kernel (an input is loaded for the first statement that reads it that way)."""
        result, loaded = {}, set()
        for v in self.dag.vertices:
            promoted = plan.promoted[v.name]
            c = self.model.vertex(v, promoted)
            load = repart = 0.0
            for operand in v.operands:
                need = _axes(operand.labels, promoted)
                if operand.tensor in self.dag.inputs and operand.tensor not in self.stored:
                    if (operand.tensor, need) not in loaded:
                        loaded.add((operand.tensor, need))
                        load += self.model.load(operand.tensor, need)
                    continue
                have = self.stored.get(operand.tensor) if operand.tensor in self.dag.inputs else \
                    _axes(self.dag.labels_of(operand.tensor), plan.promoted[operand.tensor])
                if have != need:
                    repart += self.model.repartition(operand.tensor, have, need)
            result[v.name] = {"load": load, "join": c.join, "aggregate": c.aggregate,
                              "kernel": c.kernel, "repartition": repart,
                              "total": c.total + repart + load,
                              "est_tuples": c.out_tuples, "est_join_tuples": c.join_tuples}
        return result


def input_statistics(dag: Dag, data: dict[str, object]) -> dict[str, TensorStats]:
    return {name: exact_stats(data[name]) for name in dag.inputs if name in data}


def optimizer_plan(dag: Dag, spec: str, data: dict[str, object], *, backend: str = "duckdb",
                   params: CostParams | None = None, max_tuple_bytes: float | None = None,
                   input_stats: dict[str, TensorStats] | None = None,
                   stored: dict[str, tuple[int, ...]] | None = None) -> Plan:
    """`optimal`, `greedy` or `rank:N`."""
    stats = input_stats or input_statistics(dag, data)
    opt = Optimizer.build(dag, stats, backend=backend, params=params,
                          max_tuple_bytes=max_tuple_bytes, stored=stored)
    if spec == "greedy":
        return opt.greedy()
    if spec == "optimal":
        plan = opt.top(1)[0]
        plan.name = "optimal"
        return plan
    try:
        rank = int(spec.split(":", 1)[1])
        assert rank >= 1
    except (IndexError, ValueError, AssertionError):
        raise PlanError(f"plan {spec!r}: rank:N needs a positive integer N") from None
    plans = opt.top(rank)
    if len(plans) < rank:
        raise PlanError(f"plan {spec!r}: the program has only {len(plans)} distinct plans")
    return plans[rank - 1]
