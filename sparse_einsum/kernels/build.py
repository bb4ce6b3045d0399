"""Kernel and gather specifications for the vertices and repartitions of a plan."""
from __future__ import annotations

from math import prod

from ..plan import Choice
from ..program.dag import Vertex
from ..tiling import Tiling, payload_axes
from .spec import GatherSpec, KernelSpec


def row_major_strides(dims: list[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= d
    return strides[::-1]


def vertex_kernel(vertex: Vertex, choice: Choice, op: str | None = None) -> KernelSpec:
    """The payload part of a vertex: loops over the payload lengths of its labels."""
    tiles = dict(choice.tiles)
    out_loop = [l for l in vertex.labels if tiles[l] > 1]
    agg_loop = [l for l in vertex.agg_labels if tiles[l] > 1]
    loop = out_loop + agg_loop
    strides, in_sizes = [], []
    for operand in vertex.operands:
        payload = [l for l in operand.labels if tiles[l] > 1]
        axis_strides = row_major_strides([tiles[l] for l in payload])
        strides.append(tuple(sum(s for l2, s in zip(payload, axis_strides) if l2 == l)
                             for l in loop))
        in_sizes.append(prod(tiles[l] for l in payload))
    return KernelSpec(op=op or vertex.op, agg=vertex.agg, dims=tuple(tiles[l] for l in loop),
                      n_out=len(out_loop), strides=tuple(strides), in_sizes=tuple(in_sizes),
                      fills=vertex.defaults)


def take_spec(tiling: Tiling, middle: Tiling, fill: float = 0.0) -> GatherSpec:
    """Cut payloads of `tiling` into the sub-payloads of `middle` (tile sizes dividing
    those of `tiling`): an axis with a smaller tile gets a position dim, of its tiles,
    and keeps a sub dim of the tile (none when promoted); `fill`: the tensor's default."""
    payload = payload_axes(tiling)
    strides = dict(zip(payload, row_major_strides([tiling[a] for a in payload])))
    new = [a for a in payload if middle[a] < tiling[a]]
    rest = [a for a in payload if middle[a] > 1]
    return GatherSpec(size=prod(tiling[a] for a in payload),
                      new_dims=tuple(tiling[a] // middle[a] for a in new),
                      new_strides=tuple(strides[a] * middle[a] for a in new),
                      sub_dims=tuple(middle[a] for a in rest),
                      sub_strides=tuple(strides[a] for a in rest), fill=fill)


def stack_spec(have: Tiling, target: Tiling, moved: tuple[int, ...], fill: float = 0.0
               ) -> GatherSpec:
    """Stack payloads of `have` along axes `moved` (promoted in `have`) into payloads of
    `target`, where they have tile sizes above 1; `fill`: the tensor's default."""
    payload = payload_axes(target)
    strides = dict(zip(payload, row_major_strides([target[a] for a in payload])))
    rest = payload_axes(have)
    return GatherSpec(size=prod(target[a] for a in payload),
                      new_dims=tuple(target[a] for a in moved),
                      new_strides=tuple(strides[a] for a in moved),
                      sub_dims=tuple(have[a] for a in rest),
                      sub_strides=tuple(strides[a] for a in rest), fill=fill)
