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

from ..plan import Plan
from ..program.dag import Dag, Vertex

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
                    and [c.name for c in dag.consumers(o.tensor)] == [v.name]
                    and sum(p.tensor == o.tensor for p in v.operands) == 1
                    and count + tokens[o.tensor] <= MAX_TOKENS
                    and len(reads | inputs[o.tensor]) < MAX_INPUTS):      # room for one more
                inside.add(o.tensor)
                count, reads = count + tokens[o.tensor], reads | inputs[o.tensor]
            else:
                count, reads = count + 1, reads | {o.tensor}
        tokens[v.name], inputs[v.name] = count, reads
    return inside
