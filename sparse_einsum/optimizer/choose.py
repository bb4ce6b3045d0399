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
from .search import Partial, _axes, _Search, dynamic_programming, greedy, plan_cost


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

    def priced(self, plan: Plan) -> Plan | None:
        """`plan` (a forced one, say) with its estimated costs, or None when a vertex
        exceeds the memory cap."""
        if not all(self.model.fits(v, plan.promoted[v.name]) for v in self.dag.vertices):
            return None
        return self.to_plan(self._cost_items(plan), plan.name)

    def _cost_items(self, plan: Plan) -> Partial:
        return plan_cost(self.dag, self.model, plan.promoted,
                         _Search(self.dag, self.model, self.stored))

    def breakdown(self, plan: Plan) -> dict[str, dict[str, float]]:
        """Per vertex: estimated tuples and cost split into load/join/aggregate/repartition/
        kernel, from the plan's cost items (an input load counts for the first statement
        that reads it that way)."""
        items = dict(self._cost_items(plan).costs)
        result, loaded = {}, set()
        for v in self.dag.vertices:
            promoted = plan.promoted[v.name]
            c = self.model.vertex(v, promoted)
            repart = sum(cost for key, cost in items.items() if key[0] == "r" and key[-1] == v.name)
            load = 0.0
            for operand in v.operands:
                key = ("l", operand.tensor, _axes(operand.labels, promoted))
                if key in items and key not in loaded:
                    loaded.add(key)
                    load += items[key]
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
