"""What every plan strategy works from: the DAG, its statistics, the cost model and where
the inputs live; and turning search results into costed Plans."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..capabilities import Capabilities
from ..cost import CostModel, CostParams
from ..memory import physical_memory
from ..plan import Plan, StatementCost
from ..program.dag import Dag
from ..stats.propagate import propagate
from ..stats.tensor_stats import TensorStats
from ..tiling import Tiling
from .search import LoadItem, Partial, RepartitionItem, SearchSpace, dynamic_programming


DEFAULT_CAP_SOURCE = "1/32 of physical memory, at most 256 MiB"
# tiles are searched when the best plan without them is estimated above this many seconds:
# a tiled plan saves at most what the plan without tiles costs, and searching tiles takes
# tens of milliseconds at Cora size
TILES_ABOVE = 0.25


def default_memory_cap() -> float:
    """Bytes one tuple or kernel call may hold: 1/32 of physical memory, at most 256 MiB."""
    return float(min(physical_memory() // 32, 256 << 20))


@dataclass
class OptimizerContext:
    """One DAG with its statistics and cost model; strategies ask it for plans."""
    dag: Dag
    stats: dict[str, TensorStats]                 # every tensor: inputs exact, the rest estimated
    model: CostModel
    stored: dict[str, Tiling] = field(default_factory=dict)   # table inputs: their tiling
    label_names: dict[str, str] = field(default_factory=dict)  # letter -> label, pinned plans
    cap_source: str = DEFAULT_CAP_SOURCE          # where the memory cap comes from, for messages
    tiles_above: float = TILES_ABOVE              # seconds (TILES_ABOVE; 0: tiles always searched)

    @classmethod
    def build(cls, dag: Dag, input_stats: dict[str, TensorStats], params: CostParams, *,
              memory_cap: float | None = None, caps: Capabilities = Capabilities(),
              scalars_only: bool = False, state_cap: float | None = None,
              stored: dict[str, Tiling] | None = None,
              label_names: dict[str, str] | None = None,
              cap_source: str | None = None,
              tiles_above: float = TILES_ABOVE) -> "OptimizerContext":
        """`caps`: the engine's capabilities; with `unspillable_states`, groups x state size
        must stay within `state_cap` (default: the memory cap; all groups' states are alive
        at once, unlike tuples)."""
        stats = propagate(dag, input_stats)
        cap = memory_cap or default_memory_cap()
        model = CostModel(dag, stats, params, cap, caps, scalars_only=scalars_only,
                          max_state_bytes=(state_cap or cap) if caps.unspillable_states else None)
        source = cap_source or ("given" if memory_cap else DEFAULT_CAP_SOURCE)
        return cls(dag, stats, model, dict(stored or {}), dict(label_names or {}), source,
                   tiles_above)

    @cached_property
    def space(self) -> SearchSpace:
        """The decompositions the strategies search: without tiles where `untiled_cost`
        says so (the strategies reuse that search), else with them."""
        if self.untiled_cost is not None:
            return self._untiled
        return SearchSpace(self.dag, self.model, self.stored)

    @cached_property
    def untiled_cost(self) -> float | None:
        """The best plan's estimated cost without tiles when it is at most `tiles_above`
        seconds, so that tiles are not searched; None when they are."""
        if self.tiles_above <= 0:
            return None
        found = dynamic_programming(self._untiled, 1)
        return found[0].total if found and found[0].total <= self.tiles_above else None

    @cached_property
    def _untiled(self) -> SearchSpace:
        return SearchSpace(self.dag, self.model, self.stored, tiled=False)

    # -- plans from search results --------------------------------------------
    def to_plan(self, partial: Partial, name: str) -> Plan:
        plan = Plan(dict(partial.choices), name=name, cost=partial.total)
        plan.statement_costs = self.breakdown(plan)
        return plan

    def price(self, plan: Plan) -> Plan:
        """`plan` (a forced one, say) with its estimated costs; `fits` tells whether every
        tuple and kernel call stays within the memory cap."""
        priced = self.to_plan(self.space.cost(plan.choices), plan.name)
        priced.fits = all(self.model.fits(v, plan.choices[v.name]) for v in self.dag.vertices)
        return priced

    def breakdown(self, plan: Plan) -> dict[str, StatementCost]:
        """Per vertex: estimated tuples and cost split into load/join/aggregate/repartition/
        kernel, from the plan's cost items (an input load counts for the first statement
        that reads it that way)."""
        items = self.space.items(plan.choices)
        repartitions: dict[str, float] = {}
        for item, cost in items.items():
            if isinstance(item, RepartitionItem):
                repartitions[item.consumer] = repartitions.get(item.consumer, 0.0) + cost
        result, loaded = {}, set()
        for v in self.dag.vertices:
            choice = plan.choices[v.name]
            c = self.model.vertex(v, choice)
            repartition = repartitions.get(v.name, 0.0)
            load = 0.0
            for k, operand in enumerate(v.operands):
                item = LoadItem(operand.tensor, choice.tiling(operand.labels), k in choice.sparse)
                if item in items and item not in loaded:
                    loaded.add(item)
                    load += items[item]
            result[v.name] = StatementCost(load, c.join, c.aggregate, c.kernel, repartition,
                                           c.out_tuples, c.join_tuples, c.shuffle,
                                           tuple(e.describe() for e in c.exchanges),
                                           c.statement)
        return result
