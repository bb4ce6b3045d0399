"""Plan search over the DAG, each algorithm a plain function of a `SearchSpace`:
`dynamic_programming` (Algorithm 1 with top-k lists and shared tensors optimised
jointly), `greedy` (locally cheapest, no alternatives kept) and `brute_force`
(every combination; the tests' oracle).

A partial plan is the set of choices made so far (vertex -> `Choice`) and
the cost items they cause; cost items are keyed so that a vertex shared by two
consumers is counted once. Each consumer pays its own repartitions (the executor
may reuse one, so that is an upper bound), which keeps the DP exact.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from functools import cached_property
from math import inf, prod
from typing import Iterable, Iterator, Union

from ..cost import CostModel
from ..plan import Choice
from ..program.dag import Dag, Vertex
from ..tiling import Tiling, tile_sizes

# shared tensors are optimised jointly (one DP per combination of their decompositions)
# while at most this many combinations could beat greedy's plan; beyond, one DP with wide
# top-k lists (each DP takes 0.01-0.3 s, the wide one 0.2-0.6 s)
JOINT_LIMIT = 16
# ... for the best plan alone, whose DPs keep one plan per list over the options that can
# beat greedy's (about 1 ms each at Cora size, where the wide DP takes 0.1-0.3 s)
JOINT_LIMIT_BEST = 128
# ... and bounds are computed for at most this many combinations (more: the wide DP)
JOINT_CAP = 4096
# ... and an input read by several vertices jointly when one of its loads costs more than
# this share of the best plan found without (cheaper loads: the DP's merges count them once)
JOINT_LOAD_SHARE = 0.02
# a vertex with up to this many labels tries every subset of them as its promoted labels
ALL_SUBSETS = 8
# a vertex tries every combination of tile sizes while there are at most this many
ALL_TILINGS = 512
# beyond this many shared vertices (each merge compares them) the DP gives greedy's plan
SHARED_LIMIT = 48


class _Hashed:
    """A frozen dataclass hashed once (cost items are looked up in many dicts)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(tuple(self.__dict__.values())))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True)
class LoadItem(_Hashed):
    """Loading an array input in one decomposition (once, whoever reads it)."""
    tensor: str
    tiling: Tiling
    sparse: bool = False
    __hash__ = _Hashed.__hash__


@dataclass(frozen=True)
class VertexItem(_Hashed):
    """Join, aggregate and kernel of one vertex."""
    vertex: str
    __hash__ = _Hashed.__hash__


@dataclass(frozen=True)
class RepartitionItem(_Hashed):
    """Moving a tensor from the decomposition it has to the one a consumer needs."""
    tensor: str
    have: Tiling
    need: Tiling
    consumer: str
    sparse: bool = False
    __hash__ = _Hashed.__hash__


CostItem = Union[LoadItem, VertexItem, RepartitionItem]


Decision = tuple[str, Choice]        # (vertex, its choice)


class Partial:
    """The choices made so far (vertex -> Choice) and the cost items they cause,
    each counted once.

    What two branches of a merge may both hold (loads of inputs, and the choices and items
    of "shared" vertices: those with a fan-out at or after them) is kept in the dicts
    `checked` and `counted`, to check consistency and count once. Everything else is kept
    only in `parts`, a persistent tree (own entries and the partials merged), never
    copied: a merge costs the shared part's size, not the plan's, so the DP is linear on
    tree-shaped programs of any length.
    """
    __slots__ = ("total", "checked", "counted", "parts", "signature", "_rank")

    def __init__(self, total: float, checked: dict[str, Choice],
                 counted: dict[CostItem, float], parts: tuple, signature: int):
        self.total = total
        self._rank: float | None = None      # `rank_key`, when first asked
        self.checked, self.counted = checked, counted   # never mutated after construction
        self.parts = parts            # Partials and (item, cost, choice or None) entries
        self.signature = signature    # sum of the choices' hashes: identifies the choice set

    def rank_key(self) -> float:
        """The total to 12 digits: plans whose costs differ only by rounding tie (and keep
        the order they were found in)."""
        if self._rank is None:
            self._rank = float(f"{self.total:.12g}")
        return self._rank

    @staticmethod
    def make(choices: dict[str, Choice], costs: dict[CostItem, float]) -> "Partial":
        return Partial(sum(costs.values()), dict(choices), dict(costs), (),
                       sum(map(_choice_hash, choices.items())))

    def merge(self, other: "Partial") -> "Partial | None":
        """Both partials together; None when they disagree on a shared vertex."""
        small, large = (self, other) if len(self.checked) + len(self.counted) <= \
            len(other.checked) + len(other.counted) else (other, self)
        signature = small.signature + large.signature
        for name, choice in small.checked.items():
            have = large.checked.get(name)
            if have is not None:
                if have != choice:
                    return None
                signature -= _choice_hash((name, choice))
        total = small.total + large.total - sum(
            cost for item, cost in small.counted.items() if item in large.counted)
        checked = {**large.checked, **small.checked} if small.checked else large.checked
        counted = {**large.counted, **small.counted} if small.counted else large.counted
        return Partial(total, checked, counted, (small, large), signature)

    def plus(self, item: CostItem, cost: float, choice: Decision | None = None,
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

    def _collect(self) -> tuple[dict[str, Choice], dict[CostItem, float]]:
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
    def choices(self) -> tuple[Decision, ...]:
        """Every choice, sorted by vertex name."""
        return tuple(sorted(self._collect()[0].items()))

    @property
    def costs(self) -> dict[CostItem, float]:
        """Every cost item once."""
        return self._collect()[1]


def _choice_hash(choice: Decision) -> int:
    return hash(choice)


EMPTY = Partial(0.0, {}, {}, (), 0)


def subsets(labels: tuple[str, ...]) -> Iterator[frozenset[str]]:
    for r in range(len(labels) + 1):
        for combo in itertools.combinations(labels, r):
            yield frozenset(combo)


def candidates(v: Vertex, sizes: dict[str, int], tiled: bool = True) -> list[Choice]:
    """The choices a vertex may take: every combination of tile sizes per label (promoted,
    demoted, or one of `tile_sizes`; without `tiled`, promoted or demoted only) while
    there are at most ALL_TILINGS; beyond, every promotion of its labels (see
    `promotions`) and each of those with one label tiled."""
    options = {l: sorted({1, sizes[l], *(tile_sizes(sizes[l]) if tiled else ())})
               for l in v.all_labels}
    if prod(len(o) for o in options.values()) <= ALL_TILINGS:
        return [Choice.of(dict(zip(options, combo)))
                for combo in itertools.product(*options.values())]
    found = [Choice.promoting(v, sizes, p) for p in promotions(v, sizes)]
    tiled = [Choice.of({**dict(c.tiles), l: b}) for c in found for l in options
             for b in tile_sizes(sizes[l])]
    return list(dict.fromkeys(found + tiled))


def promotions(v: Vertex, sizes: dict[str, int]) -> list[frozenset[str]]:
    """The promoted-label sets a vertex may take: every subset of a few labels; beyond
    ALL_SUBSETS labels, the unions of label classes (labels with the same role: in the
    output or not, in which operands) and the k largest labels for every k, so that the
    search stays bounded for any expression."""
    labels = v.all_labels
    if len(labels) <= ALL_SUBSETS:
        return list(subsets(labels))
    roles: dict[tuple, list[str]] = {}
    for l in labels:
        roles.setdefault((l in v.labels, tuple(l in o.labels for o in v.operands)), []).append(l)
    found = {frozenset(l for group in chosen for l in group)
             for chosen in itertools.chain.from_iterable(
                 itertools.combinations(roles.values(), r) for r in range(len(roles) + 1))}
    by_size = sorted(labels, key=lambda l: -sizes[l])
    found.update(frozenset(by_size[:k]) for k in range(len(labels) + 1))
    return sorted(found, key=lambda p: (len(p), sorted(p)))


def _best(candidates: Iterable[Partial | None], k: int) -> list[Partial]:
    unique: dict[int, Partial] = {}
    for c in candidates:
        if c is not None and (c.signature not in unique or c.total < unique[c.signature].total):
            unique[c.signature] = c
    return heapq.nsmallest(k, unique.values(), key=Partial.rank_key)


def _merge_lists(a: list[Partial], b: list[Partial], k: int) -> list[Partial]:
    return _best((x.merge(y) for x in a for y in b), k)


class SearchSpace:
    """The decompositions each vertex may take (within the memory cap; without `tiled`,
    labels promoted or demoted only: the paper's space) and their costs."""

    def __init__(self, dag: Dag, model: CostModel, stored: dict[str, Tiling],
                 tiled: bool = True):
        self.dag, self.model, self.stored, self.tiled = dag, model, stored, tiled
        self._moves: dict[tuple[str, Tiling | None, Tiling, bool], float] = {}
        self._items: dict[tuple, dict[CostItem, float]] = {}     # move_items, cached
        self._loads: dict[tuple, dict[CostItem, float]] = {}     # input_items, cached
        self.prepaid: frozenset[LoadItem] = frozenset()   # loads counted outside the DP
        self.pruned: dict[str, list[Choice]] | None = None   # the options run_dp tries
        self._options: dict[str, list[Choice]] = {}     # vertex_options, per vertex
        self._floors: dict[str, dict[Choice, float]] = {}     # vertex_floor, per vertex
        self._found: dict[int, list[Partial]] = {}     # dynamic_programming's, per k

    @cached_property
    def options(self) -> dict[str, list[Choice]]:
        """Per vertex, the choices within the memory cap (`vertex_options`)."""
        return {v.name: self.vertex_options(v) for v in self.dag.vertices}

    def vertex_options(self, v: Vertex) -> list[Choice]:
        """The choices of `v` within the memory cap: tilings, each also with the operands
        whose payloads would be under a quarter full read sparse (made once)."""
        found = self._options.get(v.name)
        if found is None:
            found = self._options[v.name] = []
            for c in candidates(v, self.dag.label_sizes(v), self.tiled):
                thin = [k for k, o in enumerate(v.operands)
                        if self.model.sparse_worthwhile(o.tensor, c.tiling(o.labels))]
                for r in range(len(thin) + 1):
                    for sparse in itertools.combinations(thin, r):
                        option = c.reading(frozenset(sparse))
                        if self.model.fits(v, option):
                            found.append(option)
        return found

    @cached_property
    def local(self) -> dict[tuple[str, Choice], float]:
        return {(v.name, c): self.model.vertex(v, c).total
                for v in self.dag.vertices for c in self.options[v.name]}

    @cached_property
    def floor(self) -> dict[tuple[str, Choice], float]:
        """Per option, the least it adds to any plan (`vertex_floor`)."""
        return {(v.name, c): cost for v in self.dag.vertices
                for c, cost in self.vertex_floor(v).items()}

    def vertex_floor(self, v: Vertex) -> dict[Choice, float]:
        """Per option of `v`, the least it adds to any plan: its vertex's cost and the loads
        and repartitions of inputs that only this vertex pays (an input it alone reads,
        or a table, which each reader repartitions for itself); made once."""
        found = self._floors.get(v.name)
        if found is None:
            found = self._floors[v.name] = {}
            own = [(n, o.tensor, o.labels) for n, o in enumerate(v.operands)
                   if o.tensor in self._alone]
            for c in self.vertex_options(v):
                items: dict[CostItem, float] = {}
                for n, tensor, labels in own:
                    items.update(self.input_items(tensor, c.tiling(labels), v.name,
                                                  n in c.sparse))
                found[c] = self.model.vertex(v, c).total + sum(items.values())
        return found

    @cached_property
    def _alone(self) -> set[str]:
        """The inputs that only one vertex pays for: read by one, or tables."""
        return {t for t in self.dag.inputs
                if t in self.stored or self.dag.graph.out_degree(t) == 1}

    @cached_property
    def least(self) -> dict[str, float]:
        """Per vertex, the least `floor` of its options: their sum bounds every plan."""
        return {v.name: self._least(v) for v in self.dag.vertices}

    def _least(self, v: Vertex) -> float:
        return min(self.vertex_floor(v).values(), default=0.0)

    def above(self, bound: float) -> bool:
        """Whether every plan costs more than `bound` (beyond rounding): the sum of the
        vertices' least floors passes it, costed vertex by vertex until it does."""
        limit = bound * (1.0 + 1e-9)
        return any(total > limit for total in
                   itertools.accumulate(self._least(v) for v in self.dag.vertices))

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

    def vertex_cost(self, v: Vertex, choice: Choice) -> float:
        found = self.local.get((v.name, choice))
        return self.model.vertex(v, choice).total if found is None else found

    def repartition(self, tensor: str, have: Tiling | None, need: Tiling,
                    sparse: bool = False) -> float:
        """Moving `tensor` from tiling `have` to `need`, packed sparse or not (have None:
        loading the input), cached."""
        key = (tensor, have, need, sparse)
        if key not in self._moves:
            self._moves[key] = (self.model.load(tensor, need, sparse) if have is None else
                                self.model.repartition(tensor, have, need, sparse))
        return self._moves[key]

    def input_items(self, tensor: str, need: Tiling, consumer: str, sparse: bool = False
                    ) -> dict[CostItem, float]:
        """An array input is loaded once per decomposition; a stored table may need a
        repartition."""
        if tensor not in self.stored:
            key = (tensor, need, sparse)
            found = self._loads.get(key)
            if found is None:
                found = self._loads[key] = {
                    LoadItem(tensor, need, sparse): self.repartition(tensor, None, need, sparse)}
            return {} if self.prepaid and not self.prepaid.isdisjoint(found) else found
        return self.move_items(tensor, self.stored[tensor], need, consumer, sparse)

    def move_items(self, tensor: str, have: Tiling, need: Tiling, consumer: str,
                   sparse: bool) -> dict[CostItem, float]:
        """The repartition from a tensor's tiling to the one (and format) a consumer needs."""
        key = (tensor, have, need, consumer, sparse)
        found = self._items.get(key)
        if found is None:
            found = self._items[key] = {} if have == need and not sparse else {
                RepartitionItem(*key): self.repartition(tensor, have, need, sparse)}
        return found

    def operand_items(self, v: Vertex, choice: dict[str, Choice]) -> dict[CostItem, float]:
        """Loads and repartitions the operands of `v` need under complete `choice`."""
        items: dict[CostItem, float] = {}
        for k, operand in enumerate(v.operands):
            need, sparse = choice[v.name].tiling(operand.labels), k in choice[v.name].sparse
            if operand.tensor in self.dag.inputs:
                items.update(self.input_items(operand.tensor, need, v.name, sparse))
            else:
                have = choice[operand.tensor].tiling(self.dag.labels_of(operand.tensor))
                items.update(self.move_items(operand.tensor, have, need, v.name, sparse))
        return items

    def items(self, choice: dict[str, Choice]) -> dict[CostItem, float]:
        """The cost items of a complete choice, each repartition and vertex once."""
        items: dict[CostItem, float] = {}
        for v in self.dag.vertices:
            items[VertexItem(v.name)] = self.vertex_cost(v, choice[v.name])
            items.update(self.operand_items(v, choice))
        return items

    def cost(self, choice: dict[str, Choice]) -> Partial:
        """Total cost of a complete choice."""
        return Partial.make(choice, self.items(choice))

    def _operand_plans(self, v: Vertex, n: int, need: Tiling, sparse: bool,
                       table: dict[str, dict[Tiling, list[Partial]]], k: int) -> list[Partial]:
        """The k best plans giving `v` its operand `n` in tiling `need` (packed or not)."""
        operand = v.operands[n]
        if operand.tensor in self.dag.inputs:
            return [Partial.make({}, self.input_items(operand.tensor, need, v.name, sparse))]
        cands, shared = [], v.name in self.shared
        for have, lst in table[operand.tensor].items():
            moves = self.move_items(operand.tensor, have, need, v.name, sparse).items()
            for part in lst:
                for item, cost in moves:
                    part = part.plus(item, cost, None, shared)
                cands.append(part)
        return _best(cands, k)

    def run_dp(self, k: int, fixed: dict[str, Tiling]) -> list[Partial]:
        table: dict[str, dict[Tiling, list[Partial]]] = {}
        for v in self.dag.vertices:
            entries: dict[Tiling, list[Partial]] = {}
            reads: dict[tuple, list[Partial]] = {}    # an operand's best plans per way of reading it
            for choice in (self.pruned or self.options)[v.name]:
                out = choice.tiling(v.labels)
                if v.name in fixed and fixed[v.name] != out:
                    continue
                combos = [EMPTY]
                for n, operand in enumerate(v.operands):
                    key = (n, choice.tiling(operand.labels), n in choice.sparse)
                    if key not in reads:
                        reads[key] = self._operand_plans(v, *key, table, k)
                    combos = _merge_lists(combos, reads[key], k)
                own = [c.plus(VertexItem(v.name), self.local[(v.name, choice)],
                              (v.name, choice), v.name in self.shared) for c in combos]
                entries[out] = _best(entries.get(out, []) + own, k)
            table[v.name] = entries
        result = [EMPTY]
        for v in self.dag.sinks():
            result = _merge_lists(result, [p for lst in table[v.name].values() for p in lst], k)
        return result


def dynamic_programming(space: SearchSpace, k: int = 3, below: float = inf) -> list[Partial]:
    """Top-k plans. Tensors consumed more than once are enumerated jointly (exact for the
    cost model): a shared vertex's output tiling, and for an array input read more than
    once whose loads are not negligible (JOINT_LOAD_SHARE), the decomposition loaded for
    several readers (paid once, outside the DP); one DP per combination whose lower bound
    is below the k-th plan found, while at most JOINT_LIMIT combinations (JOINT_LIMIT_BEST
    for the best plan alone) have a bound below greedy's plan. Beyond, the DP runs with
    wide top-k lists and keeps consistent merges only.
    Top-k lists can hold no consistent merge at all (many shared vertices, as in a program
    with its backward pass), so greedy's plan, consistent by construction, is always a
    candidate. With more than SHARED_LIMIT shared vertices (long
    programs reusing their results) the DP's merges would grow with the program: greedy's
    plan, found in linear time, is returned. With `below`, none when no plan can cost less
    (every plan costs at least the sum of the vertices' `least` floors; a bound within
    rounding of `below` is searched). Searched once per space and k."""
    if below < inf and space.above(below):
        return []
    found = space._found.get(k)
    if found is None:
        found = space._found[k] = _plans(space, k)
    return list(found)


def _plans(space: SearchSpace, k: int) -> list[Partial]:
    if len(space.shared) > SHARED_LIMIT:
        return [greedy(space)]
    consistent = greedy(space)
    try:
        if k == 1:
            space.pruned = _within(space, consistent.total)
        return _search(space, k, consistent)
    finally:
        space.pruned = None


def _within(space: SearchSpace, total: float) -> dict[str, list[Choice]]:
    """Per vertex, the options that can be part of a plan costing at most `total`: its
    `floor` plus every other vertex's least floor is not above it. With one plan per list
    the DP finds the same best plan without the others (a list whose best plan has one
    of them only leads to plans above `total`, and greedy's plan costs `total`)."""
    floor, least = space.floor, space.least
    everything = sum(least.values())
    return {v: [c for c in options
                if floor[(v, c)] + (everything - least[v]) <= total * (1.0 + 1e-9)]
            for v, options in space.options.items()}


def _search(space: SearchSpace, k: int, consistent: Partial) -> list[Partial]:
    dag = space.dag
    shared = [v for v in dag.vertices if len(dag.consumers(v.name)) > 1]
    outs = [sorted({c.tiling(v.labels) for c in space.options[v.name]}) for v in shared]
    loads = []
    for t in dag.inputs:
        if t in space.stored or len(dag.consumers(t)) < 2:
            continue
        items = {LoadItem(t, c.tiling(o.labels), n in c.sparse) for v in dag.consumers(t)
                 for c in space.options[v.name] for n, o in enumerate(v.operands) if o.tensor == t}
        # a load that every plan could pay twice at little cost is left to the DP's merges
        if max(space.repartition(i.tensor, None, i.tiling, i.sparse) for i in items) \
                > JOINT_LOAD_SHARE * consistent.total:
            loads.append([None] + sorted(items, key=repr))
    combinations = prod(len(o) for o in outs + loads)
    if combinations == 1:
        return _best(space.run_dp(k, {}) + [consistent], k)
    runs = _joint_runs(space, shared, outs, loads) if combinations <= JOINT_CAP else None
    limit = JOINT_LIMIT_BEST if k == 1 else JOINT_LIMIT
    if runs is None or sum(bound <= consistent.total for bound, *_ in runs) > limit:
        space.pruned = None         # wide lists: their merges may need any option
        return _best(space.run_dp(max(k, 16), {}) + [consistent], k)
    # the runs with every combination fixed cover every plan the free DP finds; a run
    # whose bound exceeds the k-th plan found so far cannot add to the top k
    found = [consistent]
    for bound, fixed, prepaid, paid in runs:
        best = _best(found, k)
        if len(best) == k and bound > best[-1].total:
            continue
        space.prepaid = prepaid
        found += [Partial.make(dict(p.choices), {**p.costs, **paid})
                  for p in space.run_dp(k, dict(zip((v.name for v in shared), fixed)))]
    space.prepaid = frozenset()
    return _best(found, k)


def _joint_runs(space: SearchSpace, shared: list[Vertex], outs: list[list[Tiling]],
                loads: list[list]) -> list[tuple[float, tuple, frozenset, dict]]:
    """The DP runs of joint enumeration, lowest bound first: (bound, the shared vertices'
    output tilings, the loads paid outside the DP, their costs). A plan with the shared
    vertices' tilings fixed costs at least their least `floor` under them plus every
    other vertex's least floor plus the loads paid (costs are not negative, each vertex
    and what only it pays is paid once)."""
    floor = space.floor
    least = [{out: min(floor[(v.name, c)] for c in space.options[v.name]
                       if c.tiling(v.labels) == out) for out in tilings}
             for v, tilings in zip(shared, outs)]
    names = {v.name for v in shared}
    others = sum(space.least[v.name] for v in space.dag.vertices if v.name not in names)
    payments = []
    for prepaid in itertools.product(*loads):
        items = frozenset(p for p in prepaid if p is not None)
        payments.append((items, {item: space.repartition(item.tensor, None, item.tiling,
                                                         item.sparse) for item in items}))
    runs = [(others + sum(least[n][out] for n, out in enumerate(fixed)) + sum(paid.values()),
             fixed, items, paid)
            for fixed in itertools.product(*outs) for items, paid in payments]
    return sorted(runs, key=lambda run: run[0])


def greedy(space: SearchSpace) -> Partial:
    """Along the DAG, the locally cheapest decomposition given the producers already fixed
    (the cost a choice adds: its vertex and the operand items not paid already)."""
    choice: dict[str, Choice] = {}
    items: dict[CostItem, float] = {}
    for v in space.dag.vertices:
        best, own = None, VertexItem(v.name)
        for option in space.options[v.name]:
            choice[v.name] = option
            extra = {own: space.local[(v.name, option)], **space.operand_items(v, choice)}
            added = sum(cost for item, cost in extra.items() if item not in items)
            if best is None or added < best[0]:
                best = (added, option, extra)
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
