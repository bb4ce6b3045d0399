"""Plan search over the DAG, each algorithm a plain function of a `SearchSpace`:
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
from functools import cached_property
from math import prod
from typing import Iterable, Iterator, Union

from ..cost import CostModel
from ..plan import promoted_axes
from ..program.dag import Dag, Vertex

# shared tensors are optimised jointly while this many output decompositions combine
JOINT_LIMIT = 4096
# beyond this many shared vertices (each merge compares them) the DP gives greedy's plan
SHARED_LIMIT = 48


@dataclass(frozen=True)
class LoadItem:
    """Loading an array input in one decomposition (once, whoever reads it)."""
    tensor: str
    axes: tuple[int, ...]


@dataclass(frozen=True)
class VertexItem:
    """Join, aggregate and kernel of one vertex."""
    vertex: str


@dataclass(frozen=True)
class RepartitionItem:
    """Moving a tensor from the decomposition it has to the one a consumer needs."""
    tensor: str
    have: tuple[int, ...]
    need: tuple[int, ...]
    consumer: str


CostItem = Union[LoadItem, VertexItem, RepartitionItem]


Choice = tuple[str, frozenset[str]]


class Partial:
    """The choices made so far (vertex -> promoted labels) and the cost items they cause,
    each counted once.

    What two branches of a merge may both hold (loads of inputs, and the choices and items
    of "shared" vertices: those with a fan-out at or after them) is kept in the dicts
    `checked` and `counted`, to check consistency and count once. Everything else is kept
    only in `parts`, a persistent tree (own entries and the partials merged), never
    copied: a merge costs the shared part's size, not the plan's, so the DP is linear on
    tree-shaped programs of any length.
    """
    __slots__ = ("total", "checked", "counted", "parts", "signature")

    def __init__(self, total: float, checked: dict[str, frozenset[str]],
                 counted: dict[CostItem, float], parts: tuple, signature: int):
        self.total = total
        self.checked, self.counted = checked, counted   # never mutated after construction
        self.parts = parts            # Partials and (item, cost, choice or None) entries
        self.signature = signature    # sum of the choices' hashes: identifies the choice set

    @staticmethod
    def make(choices: dict[str, frozenset[str]], costs: dict[CostItem, float]) -> "Partial":
        return Partial(sum(costs.values()), dict(choices), dict(costs), (),
                       sum(map(_choice_hash, choices.items())))

    def merge(self, other: "Partial") -> "Partial | None":
        """Both partials together; None when they disagree on a shared vertex."""
        small, large = sorted((self, other), key=lambda p: len(p.checked) + len(p.counted))
        signature = small.signature + large.signature
        for name, promoted in small.checked.items():
            have = large.checked.get(name)
            if have is not None:
                if have != promoted:
                    return None
                signature -= _choice_hash((name, promoted))
        total = small.total + large.total - sum(
            cost for item, cost in small.counted.items() if item in large.counted)
        checked = {**large.checked, **small.checked} if small.checked else large.checked
        counted = {**large.counted, **small.counted} if small.counted else large.counted
        return Partial(total, checked, counted, (small, large), signature)

    def plus(self, item: CostItem, cost: float, choice: Choice | None = None,
             shared: bool = True) -> "Partial":
        """With one more cost item (and the choice causing it); `shared` items and choices
        are kept in the dicts, the others in `parts` only."""
        signature = self.signature + (_choice_hash(choice) if choice else 0)
        if not shared:
            return Partial(self.total + cost, self.checked, self.counted,
                           ((item, cost, choice), self), signature)
        checked = {**self.checked, choice[0]: choice[1]} if choice else self.checked
        total = self.total + cost - self.counted.get(item, 0.0)
        return Partial(total, checked, {**self.counted, item: cost}, (self,), signature)

    def _collect(self) -> tuple[dict[str, frozenset[str]], dict[CostItem, float]]:
        choices, costs = {}, {}
        stack, seen = [self], set()
        while stack:
            p = stack.pop()
            if id(p) in seen:
                continue
            seen.add(id(p))
            choices.update(p.checked)
            costs.update(p.counted)
            for part in p.parts:
                if isinstance(part, Partial):
                    stack.append(part)
                else:
                    item, cost, choice = part
                    costs[item] = cost
                    if choice:
                        choices[choice[0]] = choice[1]
        return choices, costs

    @property
    def choices(self) -> tuple[Choice, ...]:
        """Every choice, sorted by vertex name."""
        return tuple(sorted(self._collect()[0].items()))

    @property
    def costs(self) -> tuple[tuple[CostItem, float], ...]:
        """Every cost item once, in a fixed order."""
        return tuple(sorted(self._collect()[1].items(), key=repr))

    @property
    def rank_key(self) -> float:
        """The total to 12 digits: plans whose costs differ only by rounding tie (and keep
        the order they were found in)."""
        return float(f"{self.total:.12g}")


def _choice_hash(choice: Choice) -> int:
    return hash(choice)


EMPTY = Partial(0.0, {}, {}, (), 0)


def subsets(labels: tuple[str, ...]) -> Iterator[frozenset[str]]:
    for r in range(len(labels) + 1):
        for combo in itertools.combinations(labels, r):
            yield frozenset(combo)


def _best(candidates: Iterable[Partial | None], k: int) -> list[Partial]:
    unique: dict[int, Partial] = {}
    for c in candidates:
        if c is not None and (c.signature not in unique or c.total < unique[c.signature].total):
            unique[c.signature] = c
    return heapq.nsmallest(k, unique.values(), key=lambda c: c.rank_key)


def _merge_lists(a: list[Partial], b: list[Partial], k: int) -> list[Partial]:
    return _best((x.merge(y) for x in a for y in b), k)


class SearchSpace:
    """The decompositions each vertex may take (within the memory cap) and their costs."""

    def __init__(self, dag: Dag, model: CostModel, stored: dict[str, tuple[int, ...]]):
        self.dag, self.model, self.stored = dag, model, stored
        self._moves: dict[tuple[str, tuple[int, ...], tuple[int, ...]], float] = {}

    @cached_property
    def options(self) -> dict[str, list[frozenset[str]]]:
        return {v.name: [p for p in subsets(v.all_labels) if self.model.fits(v, p)]
                for v in self.dag.vertices}

    @cached_property
    def local(self) -> dict[tuple[str, frozenset[str]], float]:
        return {(v.name, p): self.model.vertex(v, p).total
                for v in self.dag.vertices for p in self.options[v.name]}

    @cached_property
    def shared(self) -> set[str]:
        """Vertices that two branches of a merge may both hold: a vertex read twice (or by
        two vertices), and every vertex feeding one."""
        shared: set[str] = set()
        for v in reversed(self.dag.vertices):
            users = list(self.dag.graph.successors(v.name))
            uses = sum(o.tensor == v.name for u in users for o in self.dag.vertex(u).operands)
            if uses > 1 or any(u in shared for u in users):
                shared.add(v.name)
        return shared

    def combinations(self) -> int:
        return prod(len(o) for o in self.options.values())

    def vertex_cost(self, v: Vertex, promoted: frozenset[str]) -> float:
        found = self.local.get((v.name, promoted))
        return self.model.vertex(v, promoted).total if found is None else found

    def repartition(self, tensor: str, have: tuple[int, ...] | None, need: tuple[int, ...]
                    ) -> float:
        """Moving `tensor` from axes `have` to `need` (have None: loading the input), cached."""
        key = (tensor, have, need)
        if key not in self._moves:
            self._moves[key] = (self.model.load(tensor, need) if have is None else
                                self.model.repartition(tensor, have, need))
        return self._moves[key]

    def input_items(self, tensor: str, need: tuple[int, ...], consumer: str
                    ) -> dict[CostItem, float]:
        """An array input is loaded once per decomposition; a stored table may need a
        repartition."""
        if tensor not in self.stored:
            return {LoadItem(tensor, need): self.repartition(tensor, None, need)}
        have = self.stored[tensor]
        if have == need:
            return {}
        return {RepartitionItem(tensor, have, need, consumer): self.repartition(tensor, have, need)}

    def operand_items(self, v: Vertex, choice: dict[str, frozenset[str]]
                      ) -> dict[CostItem, float]:
        """Loads and repartitions the operands of `v` need under complete `choice`."""
        items: dict[CostItem, float] = {}
        for operand in v.operands:
            need = promoted_axes(operand.labels, choice[v.name])
            if operand.tensor in self.dag.inputs:
                items.update(self.input_items(operand.tensor, need, v.name))
            else:
                have = promoted_axes(self.dag.labels_of(operand.tensor), choice[operand.tensor])
                if have != need:
                    items[RepartitionItem(operand.tensor, have, need, v.name)] = \
                        self.repartition(operand.tensor, have, need)
        return items

    def items(self, choice: dict[str, frozenset[str]]) -> dict[CostItem, float]:
        """The cost items of a complete choice, each repartition and vertex once."""
        items: dict[CostItem, float] = {}
        for v in self.dag.vertices:
            items[VertexItem(v.name)] = self.vertex_cost(v, choice[v.name])
            items.update(self.operand_items(v, choice))
        return items

    def cost(self, choice: dict[str, frozenset[str]]) -> Partial:
        """Total cost of a complete choice."""
        return Partial.make(choice, self.items(choice))

    def run_dp(self, k: int, fixed: dict[str, tuple[int, ...]]) -> list[Partial]:
        table: dict[str, dict[tuple[int, ...], list[Partial]]] = {}
        for v in self.dag.vertices:
            entries: dict[tuple[int, ...], list[Partial]] = {}
            for promoted in self.options[v.name]:
                out = promoted_axes(v.labels, promoted)
                if v.name in fixed and fixed[v.name] != out:
                    continue
                combos = [EMPTY]
                for operand in v.operands:
                    need = promoted_axes(operand.labels, promoted)
                    if operand.tensor in self.dag.inputs:
                        cands = [Partial.make({}, self.input_items(operand.tensor, need, v.name))]
                    else:
                        cands = []
                        for have, lst in table[operand.tensor].items():
                            for part in lst:
                                if have == need:
                                    cands.append(part)
                                else:
                                    item = RepartitionItem(operand.tensor, have, need, v.name)
                                    cands.append(part.plus(item, self.repartition(
                                        operand.tensor, have, need), None, v.name in self.shared))
                        cands = _best(cands, k)
                    combos = _merge_lists(combos, cands, k)
                own = [c.plus(VertexItem(v.name), self.local[(v.name, promoted)],
                              (v.name, promoted), v.name in self.shared) for c in combos]
                entries[out] = _best(entries.get(out, []) + own, k)
            table[v.name] = entries
        result = [EMPTY]
        for v in self.dag.sinks():
            result = _merge_lists(result, [p for lst in table[v.name].values() for p in lst], k)
        return result


def dynamic_programming(space: SearchSpace, k: int = 3) -> list[Partial]:
    """Top-k plans. Tensors consumed more than once have their decomposition enumerated
    jointly (exact for the cost model) while that stays below JOINT_LIMIT combinations;
    beyond, the DP runs with wide top-k lists and keeps consistent merges only. With more
    than SHARED_LIMIT shared vertices (long programs reusing their results) the DP's
    merges would grow with the program: greedy's plan, found in linear time, is returned."""
    dag = space.dag
    if len(space.shared) > SHARED_LIMIT:
        found = greedy(space)
        return [found] if found is not None else []
    shared = [v for v in dag.vertices if dag.graph.out_degree(v.name) > 1]
    outs = [sorted({promoted_axes(v.labels, p) for p in space.options[v.name]}) for v in shared]
    if not shared:
        return space.run_dp(k, {})
    if prod(len(o) for o in outs) <= JOINT_LIMIT:
        found = []
        for assignment in itertools.product(*outs):
            found += space.run_dp(k, {v.name: a for v, a in zip(shared, assignment)})
        return _best(found, k)
    return space.run_dp(max(k, 16), {})[:k]


def greedy(space: SearchSpace) -> Partial | None:
    """Along the DAG, the locally cheapest decomposition given the producers already fixed
    (the cost a choice adds: its vertex and the operand items not paid already); None when
    a vertex has no decomposition within the memory cap."""
    choice: dict[str, frozenset[str]] = {}
    items: dict[CostItem, float] = {}
    for v in space.dag.vertices:
        best = None
        for promoted in space.options[v.name]:
            choice[v.name] = promoted
            extra = {VertexItem(v.name): space.local[(v.name, promoted)],
                     **space.operand_items(v, choice)}
            added = sum(cost for item, cost in extra.items() if item not in items)
            if best is None or added < best[0]:
                best = (added, promoted, extra)
        if best is None:
            return None
        choice[v.name] = best[1]
        items.update(best[2])
    return Partial.make(choice, items)


def brute_force(space: SearchSpace, k: int = 1) -> list[Partial]:
    """The k cheapest plans over every combination of decompositions (small DAGs only)."""
    names = [v.name for v in space.dag.vertices]
    choices = (dict(zip(names, combo))
               for combo in itertools.product(*(space.options[n] for n in names)))
    best = heapq.nsmallest(k, choices, key=lambda c: sum(space.items(c).values()))
    return [space.cost(c) for c in best]
