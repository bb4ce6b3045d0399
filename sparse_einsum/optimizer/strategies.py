"""The registry of plan strategies, as opt_einsum registers its path functions.

A strategy is a function ``(context, argument, top) -> list[Plan]``: the optimizer
context, the text after ``name:`` in the plan (or None), and how many plans are asked
for; it returns costed Plans, best first. A plan string is parsed once, by `PlanSpec`.
The CLI's help and the differential tests are generated from this registry, so a new
strategy is one `register` call.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from ..cost import arrays_hold
from ..errors import PlanError
from ..plan import Choice, Plan
from ..program.dag import Dag
from .context import OptimizerContext
from .search import brute_force, dynamic_programming, greedy

StrategyFn = Callable[[OptimizerContext, "str | None", int], list[Plan]]
BRUTE_LIMIT = 5_000        # combinations the brute-force strategy enumerates at most
MAX_TOP = 100              # most plans one call ranks (the DP's work grows with its square)
LETTER = r"[^\W\d_]"       # a label letter of a pinned plan: any Unicode letter


@dataclass(frozen=True)
class Strategy:
    name: str
    fn: StrategyFn
    usage: str                                             # how a plan names it
    help: str
    examples: Callable[[OptimizerContext], list[str]]      # plans the differential tests run


STRATEGIES: dict[str, Strategy] = {}


def register(name: str, usage: str, help: str,
             examples: Callable[[OptimizerContext], list[str]] | tuple[str, ...] = ()):
    """Decorator adding a strategy to the registry."""
    def add(fn: StrategyFn) -> StrategyFn:
        found = examples if callable(examples) else (lambda ctx, fixed=tuple(examples): list(fixed))
        STRATEGIES[name] = Strategy(name, fn, usage, help, found)
        return fn
    return add


@dataclass(frozen=True)
class PlanSpec:
    """A parsed plan string: the strategy's name and its argument."""
    strategy: str
    argument: str | None = None

    _PINNED = re.compile(rf"^({LETTER}(/[0-9]+)?)*(,({LETTER}(/[0-9]+)?)*)*"
                         rf"(->({LETTER}(/[0-9]+)?)*)?$")

    @classmethod
    def parse(cls, text: str) -> "PlanSpec":
        if not isinstance(text, str):
            raise PlanError(f"a plan is a string such as 'optimal', not {type(text).__name__}")
        compact = text.replace(" ", "")
        if cls._PINNED.match(compact) and ("->" in compact or "," in compact
                                           or compact != compact.lower()):
            return cls("pinned", compact)
        name, colon, argument = compact.partition(":")
        if name not in STRATEGIES or name == "pinned":
            raise PlanError(f"unknown plan {text!r}: use {usages()}")
        return cls(name, argument if colon else None)

    def __str__(self) -> str:
        if self.strategy == "pinned":
            return str(self.argument)
        return self.strategy + (f":{self.argument}" if self.argument is not None else "")


def usages() -> str:
    return ", ".join(s.usage for s in STRATEGIES.values())


def plans(ctx: OptimizerContext, spec: str | PlanSpec, top: int = 1) -> list[Plan]:
    """Up to `top` costed plans of the strategy `spec` names, best first."""
    if not isinstance(top, int) or isinstance(top, bool) or not 1 <= top <= MAX_TOP:
        raise PlanError(f"top must be an integer from 1 to {MAX_TOP}, not {top!r}")
    parsed = spec if isinstance(spec, PlanSpec) else PlanSpec.parse(spec)
    return STRATEGIES[parsed.strategy].fn(ctx, parsed.argument, top)


def candidate_plans(ctx: OptimizerContext, top: int = 3) -> list[Plan]:
    """The plans calibration and the benchmarks compare: the `top` best, greedy, the
    relational and the dense plan; each decomposition once, under its first name, with
    the names of the others that chose it in `aliases`."""
    found: list[Plan] = []
    for spec, k in (("rank:1", top), ("greedy", 1), ("relational", 1), ("dense", 1)):
        for plan in plans(ctx, spec, k):
            same = next((p for p in found if p.choices == plan.choices), None)
            if same is None:
                found.append(plan)
            else:
                same.aliases += (plan.name,)
    return found


def _no_argument(name: str, argument: str | None) -> None:
    if argument is not None:
        raise PlanError(f"plan {name!r} takes no argument (found {name}:{argument})")


def _integer(name: str, argument: str | None, positive: bool) -> int:
    try:
        value = int(argument or "")
    except ValueError:
        value = None
    if value is None or (positive and value < 1):
        what = "a positive integer" if positive else "an integer"
        raise PlanError(f"plan {f'{name}:{argument or str()}'!r}: the part after '{name}:' "
                        f"must be {what}")
    return value


def _ranked(ctx: OptimizerContext, first: int, top: int) -> list[Plan]:
    found = dynamic_programming(ctx.space, first + top - 1)
    if len(found) < first:
        raise PlanError(f"plan rank:{first}: the program has only {len(found)} distinct plans")
    return [ctx.to_plan(p, f"rank:{n}") for n, p in enumerate(found, 1)][first - 1:]


# -- the strategies -------------------------------------------------------------------------
@register("optimal", "optimal (default)", "the cost model's best plan", ("optimal",))
def _optimal(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    _no_argument("optimal", argument)
    found = _ranked(ctx, 1, top)
    found[0].name = "optimal"
    return found


@register("rank", "rank:N", "the N-th best plan of the cost model",
          lambda ctx: ["rank:2"] if ctx.space.combinations() > 1 else [])
def _rank(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    return _ranked(ctx, _integer("rank", argument, positive=True), top)


@register("greedy", "greedy", "locally cheapest decomposition vertex by vertex (baseline)",
          ("greedy",))
def _greedy(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    _no_argument("greedy", argument)
    return [ctx.to_plan(greedy(ctx.space), "greedy")]


def _forced(ctx: OptimizerContext, choices: dict[str, Choice], name: str) -> list[Plan]:
    return [ctx.price(Plan(choices, name=name))]


@register("relational", "relational", "every label promoted: the classic einsum-to-SQL "
          "translation", ("relational",))
def _relational(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    _no_argument("relational", argument)
    return [ctx.price(Plan.promoting(ctx.dag, {v.name: v.all_labels for v in ctx.dag.vertices},
                                     "relational"))]


@register("dense", "dense", "nothing promoted: one tuple per tensor, kernels do all the work",
          ("dense",))
def _dense(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    _no_argument("dense", argument)
    return [ctx.price(Plan.promoting(ctx.dag, {v.name: () for v in ctx.dag.vertices}, "dense"))]


def random_choices(ctx: OptimizerContext, seed: int) -> dict[str, Choice]:
    """Each label of each vertex promoted, demoted or tiled (a third each; promoted where
    arrays cannot hold the vertex's values: `arrays_hold`); tiled with any
    size, or with a divisor of the label's size where padded tiles are not allowed; each
    operand with a payload read sparse with probability 1/3 (where the SQL allows it)."""
    rng = random.Random(seed)
    choices = {}
    for v in ctx.dag.vertices:
        sizes = ctx.dag.label_sizes(v)
        tiles = {}
        for l in v.all_labels:
            n = sizes[l]
            sizes_ok = [b for b in range(2, n) if ctx.model.pads_safely(v) or n % b == 0]
            pick = rng.random()
            tiles[l] = 1 if pick < 1 / 3 or not arrays_hold(v) else (
                rng.choice(sizes_ok) if pick < 2 / 3 and sizes_ok else n)
        sparse = [k for k, o in enumerate(v.operands) if ctx.model.caps.sparse_payloads
                  and any(tiles[l] > 1 for l in o.labels) and rng.random() < 1 / 3]
        choices[v.name] = Choice.of(tiles, sparse)
    return choices


@register("random", "random:SEED", "a random valid decomposition, tiles included (testing)",
          ("random:1", "random:2", "random:3"))
def _random(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    seed = _integer("random", argument, positive=False)
    return _forced(ctx, random_choices(ctx, seed), f"random:{seed}")


def _brute_examples(ctx: OptimizerContext) -> list[str]:
    return ["brute"] if ctx.space.combinations() <= BRUTE_LIMIT else []


@register("brute", "brute", f"exhaustive search (programs with at most {BRUTE_LIMIT} "
          "decompositions; the DP's oracle)", _brute_examples)
def _brute(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    _no_argument("brute", argument)
    n = ctx.space.combinations()
    if n > BRUTE_LIMIT:
        raise PlanError(f"plan 'brute' would try {n} combinations, more than {BRUTE_LIMIT}: "
                        "use optimal")
    return [ctx.to_plan(p, "brute") for p in brute_force(ctx.space, top)]


def pinned_choice(dag: Dag, subscripts: str, label_names: dict[str, str]) -> dict[str, Choice]:
    """The choices of UCLC subscripts such as ``Ij,jK->IK`` or ``I/64j,j->I/64``: every
    vertex promotes the labels written upper-case, tiles those written ``X/b`` and
    demotes the others; `label_names` maps a lower-case letter to its label."""
    status: dict[str, int | None] = {}          # letter -> tile size (None: demoted)
    for ch, tile in re.findall(rf"({LETTER})(?:/(\d+))?", subscripts):
        pinned = None if ch.islower() else (int(tile) if tile else 1)
        if status.setdefault(ch.lower(), pinned) != pinned:
            raise PlanError(f"pinned plan {subscripts!r}: label {ch.lower()} has two "
                            "decompositions")
    if any(label_names.get(k) == "" for k in status):
        raise PlanError(f"pinned plan {subscripts!r} is ambiguous: the expression uses a label "
                        "letter in both cases")
    tiles = {label_names.get(k, k): b for k, b in status.items()}
    known = {l for v in dag.vertices for l in v.all_labels}
    if set(tiles) != known:
        raise PlanError(f"pinned plan {subscripts!r} does not match the expression's labels "
                        f"{''.join(sorted(known))}")
    choices = {}
    for v in dag.vertices:
        sizes = dag.label_sizes(v)
        for l in v.all_labels:
            if tiles[l] is not None and not 1 <= tiles[l] <= sizes[l]:
                raise PlanError(f"pinned plan {subscripts!r}: tile size {tiles[l]} of label "
                                f"{l} is not between 1 and its size {sizes[l]}")
        choices[v.name] = Choice.of({l: sizes[l] if tiles[l] is None else tiles[l]
                                     for l in v.all_labels})
    return choices


def _pinned_examples(ctx: OptimizerContext) -> list[str]:
    """UCLC subscripts of a random decomposition (tiles divide their labels), for
    programs whose labels are letters."""
    letters = {label: letter for letter, label in ctx.label_names.items() if label}
    labels = list(dict.fromkeys(l for v in ctx.dag.vertices for l in v.all_labels))
    if (not labels or "" in ctx.label_names.values()
            or not all(len(letters.get(l, l)) == 1 for l in labels)):
        return []
    sizes = {l: n for v in ctx.dag.vertices for l, n in ctx.dag.label_sizes(v).items()}
    rng, parts = random.Random(7), []
    for label in labels:
        letter, n = letters.get(label, label), sizes[label]
        divisors = [b for b in range(2, n) if n % b == 0]
        pick = rng.random()
        parts.append(letter.upper() if pick < 1 / 3 else
                     f"{letter.upper()}/{rng.choice(divisors)}" if pick < 2 / 3 and divisors
                     else letter.lower())
    return [",".join(parts) + ","]


@register("pinned", "UCLC subscripts such as 'Ij,jK->IK' or 'I/1024j,j->I/1024'",
          "a pinned decomposition (upper case: promoted; X/b: tiled by b; lower case: "
          "demoted), the same in every statement", _pinned_examples)
def _pinned(ctx: OptimizerContext, argument: str | None, top: int) -> list[Plan]:
    return _forced(ctx, pinned_choice(ctx.dag, argument or "", ctx.label_names),
                   f"pinned:{argument}")
