"""Plan search over the DAG, each strategy a plain function with the same inputs:
`dynamic_programming` (Algorithm 1 with top-k lists and shared tensors optimised
jointly), `greedy` (locally cheapest, no alternatives kept) and `brute_force`
(every combination; the tests' oracle).

A partial plan is the set of choices made so far (vertex -> promoted labels) and
the cost items they cause; cost items are keyed so that a vertex shared by two
consumers is counted once. Each consumer pays its own repartitions (the executor
may reuse one, so that is an upper bound), which keeps the DP exact.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from math import prod

from ..cost import CostModel
from ..program.dag import Dag

# shared tensors are optimised jointly while this many output decompositions combine
JOINT_LIMIT = 4096


@dataclass(frozen=True)
class Partial:
    choices: tuple[tuple[str, frozenset[str]], ...]      # sorted by vertex name
    costs: tuple[tuple[tuple, float], ...]               # sorted cost items
    total: float

    @staticmethod
    def make(choices: dict[str, frozenset[str]], costs: dict[tuple, float]) -> "Partial":
        return Partial(tuple(sorted(choices.items())), tuple(sorted(costs.items(), key=repr)),
                       sum(costs.values()))

    def merge(self, other: "Partial") -> "Partial | None":
        choices = dict(self.choices)
        for name, promoted in other.choices:
            if choices.setdefault(name, promoted) != promoted:
                return None
        return Partial.make(choices, {**dict(self.costs), **dict(other.costs)})

    def plus(self, key: tuple, cost: float, choice: tuple[str, frozenset[str]] | None = None
             ) -> "Partial":
        choices = dict(self.choices)
        if choice:
            choices[choice[0]] = choice[1]
        costs = dict(self.costs)
        costs[key] = cost
        return Partial.make(choices, costs)


EMPTY = Partial((), (), 0.0)


def subsets(labels: tuple[str, ...]):
    for r in range(len(labels) + 1):
        for combo in itertools.combinations(labels, r):
            yield frozenset(combo)


def _axes(labels: tuple[str, ...], promoted: frozenset[str]) -> tuple[int, ...]:
    return tuple(a for a, l in enumerate(labels) if l in promoted)


def _best(candidates, k: int) -> list[Partial]:
    unique = {}
    for c in candidates:
        if c is not None and (c.choices not in unique or c.total < unique[c.choices].total):
            unique[c.choices] = c
    return heapq.nsmallest(k, unique.values(), key=lambda c: c.total)


def _merge_lists(a: list[Partial], b: list[Partial], k: int) -> list[Partial]:
    return _best((x.merge(y) for x in a for y in b), k)


class _Search:
    def __init__(self, dag: Dag, model: CostModel, stored: dict[str, tuple[int, ...]]):
        self.dag, self.model, self.stored = dag, model, stored
        self.options = {v.name: [p for p in subsets(v.all_labels) if model.fits(v, p)]
                        for v in dag.vertices}
        self.local = {(v.name, p): model.vertex(v, p).total
                      for v in dag.vertices for p in self.options[v.name]}

    def input_partial(self, tensor: str, need: tuple[int, ...], consumer: str) -> Partial:
        """An array input is loaded once per decomposition; a stored table may need a
        repartition."""
        if tensor not in self.stored:
            return EMPTY.plus(("l", tensor, need), self.model.load(tensor, need))
        if self.stored[tensor] == need:
            return EMPTY
        return EMPTY.plus(("r", tensor, self.stored[tensor], need, consumer),
                          self.model.repartition(tensor, self.stored[tensor], need))

    def run_dp(self, k: int, fixed: dict[str, tuple[int, ...]]) -> list[Partial]:
        table: dict[str, dict[tuple[int, ...], list[Partial]]] = {}
        for v in self.dag.vertices:
            entries: dict[tuple[int, ...], list[Partial]] = {}
            for promoted in self.options[v.name]:
                out = _axes(v.labels, promoted)
                if v.name in fixed and fixed[v.name] != out:
                    continue
                combos = [EMPTY]
                for operand in v.operands:
                    need = _axes(operand.labels, promoted)
                    if operand.tensor in self.dag.inputs:
                        cands = [self.input_partial(operand.tensor, need, v.name)]
                    else:
                        cands = []
                        for have, lst in table[operand.tensor].items():
                            for part in lst:
                                if have == need:
                                    cands.append(part)
                                else:
                                    key = ("r", operand.tensor, have, need, v.name)
                                    cands.append(part.plus(key, self.model.repartition(
                                        operand.tensor, have, need)))
                        cands = _best(cands, k)
                    combos = _merge_lists(combos, cands, k)
                own = [c.plus(("v", v.name), self.local[(v.name, promoted)], (v.name, promoted))
                       for c in combos]
                entries[out] = _best(entries.get(out, []) + own, k)
            table[v.name] = entries
        sinks = [v for v in self.dag.vertices if not self.dag.consumers(v.name)]
        result = [EMPTY]
        for v in sinks:
            result = _merge_lists(result, [p for lst in table[v.name].values() for p in lst], k)
        return result


def dynamic_programming(dag: Dag, model: CostModel, k: int = 3,
                        stored: dict[str, tuple[int, ...]] | None = None) -> list[Partial]:
    """Top-k plans. Tensors consumed more than once have their decomposition enumerated
    jointly (exact for the cost model) while that stays below JOINT_LIMIT combinations;
    beyond, the DP runs with wide top-k lists and keeps consistent merges only."""
    search = _Search(dag, model, stored or {})
    shared = [v for v in dag.vertices if len(dag.consumers(v.name)) > 1]
    outs = [sorted({_axes(v.labels, p) for p in search.options[v.name]}) for v in shared]
    if not shared:
        return search.run_dp(k, {})
    if prod(len(o) for o in outs) <= JOINT_LIMIT:
        found = []
        for assignment in itertools.product(*outs):
            found += search.run_dp(k, {v.name: a for v, a in zip(shared, assignment)})
        return _best(found, k)
    return search.run_dp(max(k, 16), {})[:k]


def greedy(dag: Dag, model: CostModel, stored: dict[str, tuple[int, ...]] | None = None
           ) -> Partial:
    """Along the DAG, the locally cheapest decomposition given the producers already fixed."""
    search = _Search(dag, model, stored or {})
    chosen = EMPTY
    for v in dag.vertices:
        best = None
        for promoted in search.options[v.name]:
            cand = chosen.plus(("v", v.name), search.local[(v.name, promoted)], (v.name, promoted))
            for operand in v.operands:
                need = _axes(operand.labels, promoted)
                if operand.tensor in dag.inputs:
                    cand = cand.merge(search.input_partial(operand.tensor, need, v.name))
                else:
                    have = _axes(dag.labels_of(operand.tensor),
                                 dict(cand.choices)[operand.tensor])
                    if have != need:
                        cand = cand.plus(("r", operand.tensor, have, need, v.name),
                                         model.repartition(operand.tensor, have, need))
            if best is None or cand.total < best.total:
                best = cand
        chosen = best
    return chosen


def brute_force(dag: Dag, model: CostModel, stored: dict[str, tuple[int, ...]] | None = None
                ) -> Partial:
    """The cheapest plan over every combination of decompositions (small DAGs only)."""
    search = _Search(dag, model, stored or {})
    best = None
    for combo in itertools.product(*(search.options[v.name] for v in dag.vertices)):
        choice = dict(zip((v.name for v in dag.vertices), combo))
        plan = plan_cost(dag, model, choice, search)
        if best is None or plan.total < best.total:
            best = plan
    return best


def plan_cost(dag: Dag, model: CostModel, choice: dict[str, frozenset[str]],
              search: _Search | None = None) -> Partial:
    """Total cost of a complete choice, each repartition and vertex counted once."""
    search = search or _Search(dag, model, {})
    costs: dict[tuple, float] = {}
    for v in dag.vertices:
        promoted = choice[v.name]
        costs[("v", v.name)] = model.vertex(v, promoted).total
        for operand in v.operands:
            need = _axes(operand.labels, promoted)
            if operand.tensor in dag.inputs:
                costs.update(dict(search.input_partial(operand.tensor, need, v.name).costs))
            else:
                have = _axes(dag.labels_of(operand.tensor), choice[operand.tensor])
                if have != need:
                    costs[("r", operand.tensor, have, need, v.name)] = model.repartition(
                        operand.tensor, have, need)
    return Partial.make(choice, costs)
