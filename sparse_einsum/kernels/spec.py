"""Kernel specifications: the dense part of one statement, as plain data.

A kernel runs on one tuple (or a batch of tuples) and computes, over the demoted
labels, ``out[o] = AGG_r OP(a[idx_a(o, r)], b[idx_b(o, r)])``. The loop space is
``dims``; its first ``n_out`` dimensions index the output (row-major), the rest are
reduced with AGG. Every input is a flat row-major array; ``strides[k][t]`` is the
step in input k's flat index for loop dimension t (0 when the input does not
have that label; repeated labels add their strides, which takes a diagonal).

The same text form (``KernelSpec.text``) drives the NumPy kernels registered in
DuckDB and the C kernels of the PostgreSQL extension:

    OP;AGG;N_OUT;D0,D1,...;[~]SA0,SA1,...[;[~]SB0,SB1,...]

OP is a binary operator (mul, add, sub, div) for two inputs, or a unary function
for one input: id, neg, relu, exp, log, sqrt, sigmoid, tanh, abs, or one with a
constant ``name:c``: mulc (x*c), addc (x+c), subc (x-c), rsubc (c-x), divc (x/c),
rdivc (c/x), maxc (max(x,c)), minc (min(x,c)), powc (x**c). A stride list marked
``~`` is an input given as a packed sparse payload (`sparse_einsum.blocks`: the flat
offsets of its non-zeros in the dense payload the strides describe, then their values);
only the C kernels read the mark. A packed input whose absent entries are not 0 (the
default of its tensor: inf in a min-plus product) gives it before its strides,
``~FILL:S0,S1,...``.

A fused spec evaluates a chain of element-wise operations over whole arrays of N
elements in one pass (`FusedSpec`; DuckDB's ``se_fused``):

    fused;N;L0,L1,...;TOKEN,TOKEN,...

L_k is the length of input k (N, or 1 for a scalar taken for every element). The
tokens are postfix: ``$k`` pushes input k; ``OP[:C]@R`` applies an operation to the
values on top of the stack and says when its result is present, as the statement it
stands for would have a tuple: R is ``j`` (every operand present), ``f`` (always) or
``u`` followed by the operand positions any of which decides (``u01``). An absent input
(NULL) or result is all zeros.

A gather spec moves sub-tensors for repartitioning (``take`` cuts the sub-tensor
at position POS out of a value; ``stack`` scatters sub-tensors into a bigger one):

    SIZE;DN0,DN1,...;SN0,SN1,...;DS0,DS1,...;SS0,SS1,...[;FILL]

element e of the sub-tensor (row-major over DS) of position POS (row-major over DN)
sits at ``sum(unravel(POS, DN) * SN) + sum(unravel(e, DS) * SS)`` in the big
tensor of SIZE elements. FILL (0 when omitted) is the tensor's default: the value a
stack leaves where no sub-tensor lands, and the value of every element of a piece that
`take` leaves out.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod


def _ints(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def _fill(value: float) -> str:
    """A default as the specs spell it: a number, inf or -inf (C's strtod reads them)."""
    return repr(float(value))


@dataclass(frozen=True)
class KernelSpec:
    op: str                                  # binary op, unary function, or "fn:const"
    agg: str                                 # sum | max | min
    dims: tuple[int, ...]                    # loop space: output dims then reduced dims
    n_out: int                               # how many leading dims index the output
    strides: tuple[tuple[int, ...], ...]     # per input, one stride per loop dim
    in_sizes: tuple[int, ...]                # flat size of each input
    packed: tuple[bool, ...] = ()            # per input: a packed sparse payload
    fills: tuple[float, ...] = ()            # per input: the default of a packed one

    @property
    def out_dims(self) -> tuple[int, ...]:
        return self.dims[: self.n_out]

    @property
    def out_size(self) -> int:
        return prod(self.out_dims)

    @property
    def arity(self) -> int:
        return len(self.strides)

    @property
    def text(self) -> str:
        parts = [self.op, self.agg, str(self.n_out), _ints(self.dims)]
        packed = self.packed or (False,) * self.arity
        fills = self.fills or (0.0,) * self.arity
        parts += [("~" + (f"{_fill(f)}:" if f else "") if p else "") + _ints(s)
                  for s, p, f in zip(self.strides, packed, fills)]
        return ";".join(parts)


def is_matrix_product(spec: KernelSpec) -> bool:
    """Whether the kernel multiplies two dense arrays and sums over a dimension both read:
    a matrix (or vector) product, which the C kernels run with BLAS."""
    reduced = zip(spec.dims[spec.n_out:], *(s[spec.n_out:] for s in spec.strides))
    return (spec.op == "mul" and spec.agg == "sum" and spec.arity == 2 and spec.n_out > 0
            and not any(spec.packed) and any(d > 1 and a and b for d, a, b in reduced))


@dataclass(frozen=True)
class FusedSpec:
    n: int                         # elements of every array of the chain
    leaf_sizes: tuple[int, ...]    # per input: n, or 1 for a scalar
    tokens: tuple[str, ...]        # postfix: $k, or OP[:C]@RULE (see the module docstring)

    @property
    def text(self) -> str:
        return ";".join(["fused", str(self.n), _ints(self.leaf_sizes), ",".join(self.tokens)])


@dataclass(frozen=True)
class GatherSpec:
    size: int                      # elements of the big tensor
    new_dims: tuple[int, ...]      # dims addressed by the position
    new_strides: tuple[int, ...]
    sub_dims: tuple[int, ...]      # dims of the sub-tensor
    sub_strides: tuple[int, ...]
    fill: float = 0.0              # the big tensor's default (see the module docstring)

    @property
    def sub_size(self) -> int:
        return prod(self.sub_dims)

    @property
    def positions(self) -> int:
        return prod(self.new_dims)

    @property
    def text(self) -> str:
        fill = [_fill(self.fill)] if self.fill else []
        return ";".join([str(self.size), _ints(self.new_dims), _ints(self.new_strides),
                         _ints(self.sub_dims), _ints(self.sub_strides)] + fill)
