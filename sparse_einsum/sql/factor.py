"""Scalar factors: a product that only scales a payload by a scalar is not computed.

A vertex P = F * Z with no sum, where F's tuples are scalars (every label of F promoted)
and Z's carry payloads, read by exactly one product R that sums (a linear kernel) into
scalar tuples, is compiled as the join of F and Z passing Z's payload through with F's
value beside it (column FACTOR); R multiplies its kernel's result by that value. SDDMM,
``OUT[i,j] = M[i,j] * sum_k X[i,k] Y[j,k]``, then never forms the mask's rows of Y
scaled by M (mask x k new array elements): it dots the rows of X and Y and scales the
dot. Only where every tensor involved is finite: with inf or NaN, s * (a . b) and
a . (s b) differ (inf * (1 - 1) against inf - inf), and NumPy computes the latter.
"""
from __future__ import annotations

from ..plan import Plan, factor_reader, scalar_factor
from ..program.dag import Dag, Vertex
from ..tiling import payload_axes

FACTOR = "fac"      # the column of a factored product holding the scalar factor


def scalar_factors(dag: Dag, plan: Plan, nonfinite: frozenset[str]) -> dict[str, int]:
    """Vertex -> position of its scalar operand, for the products compiled as a factor
    beside a payload (see the module's docstring)."""
    found = {}
    for p in dag.vertices:
        reader = factor_reader(dag, p)
        factor = None if reader is None else _factor(dag, plan, p, reader, nonfinite)
        if factor is not None:
            found[p.name] = factor
    return found


def _factor(dag: Dag, plan: Plan, p: Vertex, reader: Vertex, nonfinite: frozenset[str]
            ) -> int | None:
    (use,) = (k for k, o in enumerate(reader.operands) if o.tensor == p.name)
    tensors = {o.tensor for o in p.operands + reader.operands} - {p.name}
    if (tensors & nonfinite or plan.choices[p.name].sparse
            or use in plan.choices[reader.name].sparse):
        return None
    if plan.operand_tiling(reader, reader.operands[use]) != plan.output_tiling(p) \
            or payload_axes(plan.output_tiling(reader)):
        return None                 # read repartitioned, or into payloads
    return scalar_factor(dag, p, plan.choices[p.name])
