"""Kernel and gather specifications for the vertices and repartitions of a plan."""
from __future__ import annotations

from math import prod

from ..program.dag import Vertex
from .spec import GatherSpec, KernelSpec


def row_major_strides(dims: list[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= d
    return strides[::-1]


def vertex_kernel(vertex: Vertex, sizes: dict[str, int], promoted: frozenset[str],
                  op: str | None = None) -> KernelSpec:
    """The dense part of a vertex: loops over its demoted labels."""
    out_loop = [l for l in vertex.labels if l not in promoted]
    agg_loop = [l for l in vertex.agg_labels if l not in promoted]
    loop = out_loop + agg_loop
    strides, in_sizes = [], []
    for operand in vertex.operands:
        demoted = [l for l in operand.labels if l not in promoted]
        axis_strides = row_major_strides([sizes[l] for l in demoted])
        strides.append(tuple(sum(s for l2, s in zip(demoted, axis_strides) if l2 == l)
                             for l in loop))
        in_sizes.append(prod(sizes[l] for l in demoted))
    return KernelSpec(op=op or vertex.op, agg=vertex.agg, dims=tuple(sizes[l] for l in loop),
                      n_out=len(out_loop), strides=tuple(strides), in_sizes=tuple(in_sizes))


def take_spec(shape: tuple[int, ...], have: tuple[int, ...], new: tuple[int, ...]) -> GatherSpec:
    """Cut sub-tensors out of values over the demoted axes of `have` along axes `new`."""
    demoted = [a for a in range(len(shape)) if a not in have]
    strides = dict(zip(demoted, row_major_strides([shape[a] for a in demoted])))
    rest = [a for a in demoted if a not in new]
    return GatherSpec(size=prod(shape[a] for a in demoted),
                      new_dims=tuple(shape[a] for a in new), new_strides=tuple(strides[a] for a in new),
                      sub_dims=tuple(shape[a] for a in rest), sub_strides=tuple(strides[a] for a in rest))


def stack_spec(shape: tuple[int, ...], have: tuple[int, ...], moved: tuple[int, ...]) -> GatherSpec:
    """Stack sub-tensors (over the demoted axes of `have`) along axes `moved` that become demoted."""
    target = [a for a in range(len(shape)) if a not in have or a in moved]
    strides = dict(zip(target, row_major_strides([shape[a] for a in target])))
    rest = [a for a in range(len(shape)) if a not in have]
    return GatherSpec(size=prod(shape[a] for a in target),
                      new_dims=tuple(shape[a] for a in moved), new_strides=tuple(strides[a] for a in moved),
                      sub_dims=tuple(shape[a] for a in rest), sub_strides=tuple(strides[a] for a in rest))
