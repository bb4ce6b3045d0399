"""Chains of element-wise operations over one-tuple arrays, computed in one kernel call.

An optimizer's update of a parameter is a dozen element-wise operations over whole
arrays (Adam's: 13 for a parameter and its two moments), each a kernel call that reads
and writes an array of the parameter's size. Where the dialect chains them
(`Capabilities.fused_chains`), a vertex computing a whole array element by element from
whole arrays of its shape and scalars, read by one such vertex only, is computed inside
its reader's call: the reader's statement evaluates the chain in one pass over its
inputs (`FusedSpec`). Each operation keeps its own statement's rule for when its result
has a tuple (`Compiler._domain_kind`), so absent operands give what the statements give.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..kernels.spec import FusedSpec
from ..plan import Plan
from ..program.dag import Dag, Vertex
from .dialect import Dialect
from .nested import Formula, Read, formula
from .steps import TableRelation

MAX_INPUTS = 32           # the C kernel's limits (SE_MAXDIMS inputs, SE_FUSED_MAX tokens)
MAX_TOKENS = 64


def elementwise(dag: Dag, plan: Plan, v: Vertex, factored: set[str]) -> bool:
    """Whether `v` computes one whole dense array element by element from whole arrays of
    its labels (in its order) and scalars, one tuple each, all of default 0."""
    return (v.agg == "sum" and not v.agg_labels and bool(v.labels) and not v.defaults
            and not plan.keyed(dag, v) and not plan.choices[v.name].sparse
            and v.name not in factored
            and all((o.labels == v.labels or not o.labels) and o.tensor not in factored
                    for o in v.operands))


def chained(dag: Dag, plan: Plan, factored: set[str]) -> set[str]:
    """The vertices computed inside their one reader's chain (`factored`: the vertices a
    scalar factor passes through, which keep their statements)."""
    fits = {v.name for v in dag.vertices if elementwise(dag, plan, v, factored)}
    inside: set[str] = set()
    tokens: dict[str, int] = {}               # of the chain ending at each vertex
    inputs: dict[str, frozenset[str]] = {}
    for v in dag.vertices:                    # producers first
        if v.name not in fits:
            continue
        count, reads = 1, frozenset()
        for o in v.operands:
            if (o.tensor in fits and o.tensor not in dag.outputs
                    and dag.graph.out_degree(o.tensor) == 1       # v alone reads it,
                    and sum(p.tensor == o.tensor for p in v.operands) == 1      # once
                    and count + tokens[o.tensor] <= MAX_TOKENS
                    and len(reads | inputs[o.tensor]) < MAX_INPUTS):      # room for one more
                inside.add(o.tensor)
                count, reads = count + tokens[o.tensor], reads | inputs[o.tensor]
            else:
                count, reads = count + 1, reads | {o.tensor}
        tokens[v.name], inputs[v.name] = count, reads
    return inside


# when a chain's result has a tuple: any one of the clauses holds, each a set of inputs
# that all have theirs (None: always)
Presence = frozenset[frozenset[int]] | None


@dataclass(frozen=True)
class Chain:
    """A chain of element-wise vertices computed in one kernel call."""
    inputs: list[TableRelation]
    tokens: tuple[str, ...]                  # the fused spec's, over `inputs` in order
    present: Presence
    vertices: tuple[str, ...]                # the vertices inside it, before its last


def presence(kind: str, deciding: list[Presence]) -> Presence:
    """The presence of an element-wise vertex's result from its deciding operands': all
    of them (a ``join``), any one (a ``union``) or none needed (``full``)."""
    if kind == "full" or (kind == "union" and None in deciding):
        return None
    if kind == "union":
        return frozenset().union(*deciding)
    clauses = [frozenset()]
    for p in deciding:
        if p is not None:
            clauses = [c | d for c in clauses for d in p]
    return frozenset(clauses) if clauses != [frozenset()] else None


def chain_query(chain: Chain, n: int, d: Dialect) -> str:
    """The SELECT of a chain whose arrays hold `n` elements: one kernel call over its
    one-tuple inputs. Where the engine computes a scalar subquery once
    (`Capabilities.constants_once`: Spark, whose joins of one-tuple relations are a
    broadcast job each) the inputs are scalar subqueries, else joins (`_joined_inputs`)."""
    spec = _spec(chain, n)
    if not d.capabilities.constants_once:
        values = [f"u{k}.val" for k in range(len(chain.inputs))]
        return f"SELECT {d.fused(spec, values)} AS val FROM {_joined_inputs(chain, d)}"
    values = [d.constant(rel) for rel in chain.inputs]
    where = _condition(chain.present, values)
    return (f"SELECT {d.fused(spec, values)} AS val FROM (SELECT 1 AS one) AS dom"
            + (f" WHERE {where}" if where else ""))


def chain_formula(chain: Chain, n: int, d: Dialect) -> Formula:
    """A chain over inputs holding one tuple each (`sql.nested`): its result is present."""
    spec = _spec(chain, n)
    return formula(lambda values: {"val": d.fused(spec, values)},
                   [Read(rel.table) for rel in chain.inputs])


def _spec(chain: Chain, n: int) -> FusedSpec:
    return FusedSpec(n, tuple(1 if rel.is_scalar else n for rel in chain.inputs), chain.tokens)


def _condition(present: Presence, values: list[str]) -> str:
    """SQL of `present` over the inputs' values ("" when always)."""
    if not present:
        return ""
    return " OR ".join("(" + " AND ".join(f"{values[k]} IS NOT NULL" for k in sorted(c)) + ")"
                       for c in sorted(present, key=sorted))


def _joined_inputs(chain: Chain, d: Dialect) -> str:
    """The FROM clause of a chain's one-tuple inputs, joined so that a tuple exists where
    its presence says: the inputs of its one clause inner joined, or those any of which
    will do full joined, the others left joined (a condition on the inputs' values
    instead would be pushed into the joins below, computing those values twice)."""
    q, rels = d.q, chain.inputs
    clauses = sorted(sorted(c) for c in chain.present) if chain.present else []
    if len(clauses) == 1:
        needed, mode = clauses[0], "JOIN"
    elif clauses and all(len(c) == 1 for c in clauses) and d.full_join_on_true:
        needed, mode = [c[0] for c in clauses], "FULL JOIN"
    else:
        needed, mode = [], ""
    frm = f"{q(rels[needed[0]].table)} AS u{needed[0]}" if needed else "(SELECT 1 AS one) AS dom"
    frm += "".join(f" {mode} {q(rels[k].table)} AS u{k} ON TRUE" for k in needed[1:])
    frm += "".join(f" LEFT JOIN {q(rel.table)} AS u{k} ON TRUE"
                   for k, rel in enumerate(rels) if k not in needed)
    if clauses and not needed:
        frm += " WHERE " + _condition(chain.present, [f"u{k}.val" for k in range(len(rels))])
    return frm
