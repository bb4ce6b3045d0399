"""The cost model of section 7.2: join, aggregation, repartition, plus kernel FLOPs.

Costs are in seconds when the constants come from `sparse-einsum calibrate`.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from math import ceil, prod
from pathlib import Path

from .capabilities import Capabilities
from .plan import Choice, factor_reader, recomputed, scalar_factor
from .program.dag import Dag, Vertex
from .program.ops import AGGREGATES, SPARSE_DRIVEN
from .shuffles import Exchange, row_bytes, vertex_exchanges
from .stats.propagate import OperandStats, join_skew, operand_stats
from .stats.tensor_stats import TensorStats, distinct_after
from .tiling import (
    Tiling, key_range, keyed_axes, middle_tiling, pads, payload_axes, payload_size,
    stacks_scalars, tile_distinct,
)


# tuples one kernel call receives at most where the dialect does not say
# (`Capabilities.kernel_rows`: DuckDB hands UDFs vectors of 2048 rows)
KERNEL_BATCH = Capabilities().kernel_rows
STACKED_TUPLES = 16     # tuples of one group in a batch that make summing them one product


def arrays_hold(v: Vertex) -> bool:
    """Whether the vertex's values may be kept in arrays: not where a min or max over
    absent tuples must fold in a default other than 0 that changes it (the array
    aggregates fold in 0)."""
    return not (v.default and AGGREGATES[v.agg].clip(v.default))


@dataclass(frozen=True)
class CostParams:
    """Per-backend constants: seconds per byte moved, per flop, per tuple, per element added."""
    c_xfer: float
    c_kernel: float
    c_fixed: float
    c_add: float
    c_group: float = 0.0     # per group when a repartition stacks pieces into arrays
    c_load_tuple: float = 0.0    # loading an array input from Python: per tuple
    c_load_byte: float = 0.0     # ... and per byte of array payload
    c_sparse: float = 0.0        # per flop of a sparse x dense product (0: densified)
    c_nnz: float = 0.0           # per non-zero a sparse x dense product visits: its index
    #                              and a fetch of the other operand's row, whatever its width
    c_gemm: float = 0.0          # per flop of a kernel that is a matrix product (0: c_kernel)
    c_gemm_rows: float = 0.0     # ... of keyed rows against a one-tuple operand: where the
    #                              engine runs a chunk of rows as one product, that product;
    #                              where it calls the kernel per row (`kernel_rows` 1), each
    #                              row's matrix-vector product (0: c_gemm)
    c_shuffle: float = 0.0       # per byte exchanged between tasks (0: the engine does not)
    c_statement: float = 0.0     # per statement and per input load: scheduling its jobs
    parallelism: float = 1.0     # tasks running at once: joins, aggregates, kernels and
    #                              shuffles spread over them (a statement over fewer tuples
    #                              than tasks over as many tasks as tuples); loads and
    #                              broadcasts do not

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


# per dialect (each way of running kernels): `sparse-einsum calibrate [--backend B]` on a
# 2-core machine; how each value was obtained: experiments/results/calibration.md
DEFAULT_PARAMS = {
    "duckdb": CostParams(c_xfer=3.2e-9, c_kernel=3.1e-11, c_fixed=8.7e-8, c_add=1.7e-8,
                         c_group=3.5e-5, c_load_tuple=9.4e-8, c_load_byte=3.5e-9,
                         c_sparse=2.0e-9),
    "duckdb-native": CostParams(c_xfer=3.6e-10, c_kernel=1.9e-10, c_fixed=3.7e-8, c_add=2.6e-8,
                                c_group=3.5e-5, c_load_tuple=1.2e-8, c_load_byte=2.7e-10,
                                c_sparse=3.4e-10, c_nnz=1.5e-8, c_gemm=3.8e-11),
    "postgres": CostParams(c_xfer=3.1e-9, c_kernel=8.5e-10, c_fixed=8.7e-7, c_add=1.0e-12,
                           c_load_tuple=6.2e-7, c_load_byte=2.4e-8, c_sparse=3.7e-9,
                           c_gemm=4.5e-10, c_gemm_rows=2.8e-11),
    "spark": CostParams(c_xfer=2.0e-8, c_kernel=6.2e-11, c_fixed=2.0e-6, c_add=6.8e-7,
                        c_group=5.7e-4, c_load_tuple=2.2e-5, c_load_byte=5.3e-8,
                        c_sparse=1.8e-9, c_gemm=5.7e-11, c_shuffle=2.0e-8, c_statement=0.97,
                        parallelism=2.0),
    # the JVM kernels, calibrated on local[2]; the timings do not identify c_add, c_group
    # and c_shuffle, which keep their earlier values
    "spark-native": CostParams(c_xfer=2.3e-10, c_kernel=1.6e-9, c_fixed=5.9e-8, c_add=5.0e-9,
                               c_group=5.7e-4, c_load_tuple=3.7e-7, c_load_byte=7.0e-9,
                               c_sparse=9.0e-10, c_nnz=2.8e-7, c_gemm=2.0e-10,
                               c_gemm_rows=2.6e-10, c_shuffle=2.0e-8, c_statement=0.12,
                               parallelism=2.0),
}


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(os.environ.get("SPARSE_EINSUM_CONFIG", Path(base) / "sparse-einsum" / "calibration.json"))


def load_params(backend: str) -> CostParams:
    """Calibrated constants for `backend` (a dialect: each way of running kernels has its
    own) from the user's config file, else the defaults."""
    path = config_path()
    if path.exists():
        try:
            stored = json.loads(path.read_text()).get(backend)
            if stored:
                default = DEFAULT_PARAMS.get(backend, DEFAULT_PARAMS["duckdb"]).to_dict()
                return CostParams(**{k: float(stored.get(k, default[k]))
                                     for k in CostParams.__dataclass_fields__})
        except (ValueError, KeyError, TypeError):
            pass
    return DEFAULT_PARAMS.get(backend, DEFAULT_PARAMS["duckdb"])


def save_params(backend: str, params: CostParams, path: Path | None = None) -> Path:
    """Store `params` for `backend` in `path` (default: the user's config file)."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = json.loads(path.read_text()) if path.exists() else {}
    stored[backend] = params.to_dict()
    path.write_text(json.dumps(stored, indent=2))
    return path


@dataclass(frozen=True)
class VertexCost:
    join: float
    aggregate: float
    kernel: float
    join_tuples: float
    out_tuples: float
    shuffle: float = 0.0                     # data moved between tasks (c_shuffle > 0)
    exchanges: tuple[Exchange, ...] = ()
    statement: float = 0.0                   # scheduling the statement (c_statement)

    @property
    def total(self) -> float:
        return self.join + self.aggregate + self.kernel + self.shuffle + self.statement


def _payload_bytes(tiling: Tiling) -> float:
    """Bytes of the array a tuple carries; 0 for a scalar value.

    Measured on DuckDB and PostgreSQL: keys and scalar values move at the per-tuple
    cost C_fixed; arrays cost C_xfer per byte on top (they pass through kernels)."""
    return 8.0 * payload_size(tiling) if payload_axes(tiling) else 0.0


@lru_cache(maxsize=None)
def _layout(tiling: Tiling, shape: tuple[int, ...]) -> tuple[bool, float, int, bool, bool]:
    """(has a payload, its dense bytes, its size, padded, keyed) of a tensor's tiling."""
    return (bool(payload_axes(tiling)), _payload_bytes(tiling), payload_size(tiling),
            pads(tiling, shape), bool(keyed_axes(tiling, shape)))


class _Tiled:
    """What the choices of a vertex with the same tile sizes share, whichever operands
    they read sparse: computed once per vertex and tile sizes, the layout first, the
    estimated tuples and what follows from them when first asked (`join` None before)."""
    __slots__ = ("tilings", "payload", "dense", "largest", "pads", "keyed", "keyed_out", "cells",
                 "t_in", "join", "aggregated", "out", "state", "summable", "product", "stacked",
                 "scales")


@dataclass(frozen=True)
class _LabelRoles:
    """A vertex's labels by the role the formulas ask about, whatever its choice."""
    product: tuple[str, ...]       # summed and in both operands: a matrix product if tiled
    unstackable: tuple[str, ...]   # a tiled one keeps a summed product from being stacked
    both: tuple[str, ...]          # in both operands' statistics (the join's shared keys)
    own: tuple[tuple[str, ...], ...]    # per operand of two, its labels not in `both`

    @classmethod
    def of(cls, v: Vertex, ops: list[OperandStats]) -> "_LabelRoles":
        if not v.is_binary:
            return cls((), (), (), ())
        left, right = (set(o.labels) for o in v.operands)
        product = tuple(l for l in v.agg_labels if l in left and l in right) \
            if v.op == "mul" and v.agg == "sum" else ()
        # stacked: each payload label of the result in one operand, each summed one in both
        # (no batch, no one-sided sum)
        unstackable = tuple(l for l in v.all_labels if not (
            (l in left) != (l in right) if l in v.labels else l in left and l in right))
        both = tuple(l for l in ops[0].distinct if l in ops[1].distinct)
        return cls(product, unstackable, both,
                   tuple(tuple(l for l in o.distinct if l not in both) for o in ops))


class CostModel:
    """Costs of vertices and repartitions for one DAG, its statistics and constants."""

    def __init__(self, dag: Dag, stats: dict[str, TensorStats], params: CostParams,
                 max_tuple_bytes: float = float("inf"), caps: Capabilities = Capabilities(), *,
                 scalars_only: bool = False, max_state_bytes: float | None = None):
        self.dag, self.stats, self.p, self.cap = dag, stats, params, max_tuple_bytes
        self.caps, self.scalars_only = caps, scalars_only
        self.state_cap = max_state_bytes   # all groups' unspillable states (None: spillable)
        self._ops = {v.name: [operand_stats(stats[o.tensor], o) for o in v.operands]
                     for v in dag.vertices}
        self._sizes = {v.name: dag.label_sizes(v) for v in dag.vertices}
        self._skew = {v.name: join_skew(v, self._ops[v.name]) for v in dag.vertices}
        self._finite = {v.name: all(stats[o.tensor].finite for o in v.operands)
                        for v in dag.vertices}     # every operand
        self._factorable = {v.name: self._factorable_at(v) for v in dag.vertices}
        # vertex() and fits(), computed once per vertex and choice
        self._costs: dict[tuple[str, Choice], VertexCost] = {}
        self._fits: dict[tuple[str, Choice], bool] = {}
        self._shared: dict[tuple[str, tuple], _Tiled] = {}      # per tile sizes
        self._worthwhile: dict[tuple[str, Tiling], bool] = {}   # sparse_worthwhile()
        self._labels = {v.name: _LabelRoles.of(v, self._ops[v.name]) for v in dag.vertices}
        # vertices whose output streams into its one reader (`sql.pipeline`), never stored
        reads = Counter(o.tensor for v in dag.vertices for o in v.operands)
        self.streamed = frozenset(v.name for v in dag.vertices if caps.pipeline_depth
                                  and reads[v.name] == 1 and v.name not in dag.outputs)
        # readers computing a vertex again each (`plan.recomputed`), keyed or one tuple
        self._recomputed = {v.name: (recomputed(dag, v, False), recomputed(dag, v, True))
                            for v in dag.vertices} if caps.pipeline_depth else {}

    def payload_bytes(self, tensor: str, tiling: Tiling, sparse: bool = False) -> float:
        """Bytes of a tuple's payload: dense, or sparse (16 per non-zero, on average)."""
        if not sparse:
            return _payload_bytes(tiling)
        stats = self.stats[tensor]
        return 16.0 * stats.nnz / max(stats.tuples(tiling), 1.0)

    def sparse_worthwhile(self, tensor: str, tiling: Tiling) -> bool:
        """Sparse payloads are a candidate: the payloads are under a quarter full."""
        found = self._worthwhile.get((tensor, tiling))
        if found is None:
            found = self._worthwhile[(tensor, tiling)] = (
                self.caps.sparse_payloads and bool(payload_axes(tiling))
                and self.payload_bytes(tensor, tiling, True) < _payload_bytes(tiling) / 2)
        return found

    # -- feasibility ----------------------------------------------------------
    def fits(self, v: Vertex, choice: Choice) -> bool:
        """No tuple and no kernel call (a batch of up to `kernel_rows` joined tuples, with
        one-tuple operands bound once, and their results unless `kernel_summed`) above
        the memory cap, no payload longer than the SQL dialect's arrays hold (none at all
        with `scalars_only`, nor with a min or max whose absent tuples hold a default
        other than 0 that changes it),
        padded tiles only where padding stays zero (see `pads_safely`), and, where
        aggregate states cannot spill, no more groups x state size than the cap."""
        found = self._fits.get((v.name, choice))
        if found is None:
            found = self._fits[(v.name, choice)] = self._fit(v, choice)
        return found

    def _fit(self, v: Vertex, choice: Choice) -> bool:
        t, sparse = self._laid_out(v, choice), choice.sparse
        if any(t.payload) and (self.scalars_only or not arrays_hold(v)):
            return False         # scalars only, or values arrays cannot hold (`arrays_hold`)
        if sparse and not (self.caps.sparse_payloads and all(t.payload[k] for k in sparse)):
            return False
        limit = self.caps.max_payload_values
        if limit is not None and t.largest > limit:
            return False
        if t.pads and not self.pads_safely(v):
            return False
        driven = bool(sparse) and self.sparse_driven(v, choice)
        payload_in = self._bytes_in(v, choice, t, sparse if driven else frozenset())
        if max(payload_in + [t.dense[-1]]) > self.cap:
            return False
        if t.cells == 1:
            return True                       # no kernel: plain SQL on scalars
        t = self._per_tiles(v, choice)
        rows = min(t.join, self.caps.kernel_rows)
        per_row = sum(b for b, k in zip(payload_in, t.keyed) if k)
        if not (t.summable and not sparse):     # the kernel's results, formed
            per_row += t.dense[-1]
        if not (v.annihilates and v.op == "mul" or driven):     # the op's results, formed
            per_row += 8.0 * t.cells
        once = sum(b for b, k in zip(payload_in, t.keyed) if not k)
        return rows * per_row + once <= self.cap and (
            self.state_cap is None or t.state <= self.state_cap)

    def _bytes_in(self, v: Vertex, choice: Choice, t: _Tiled, packed: frozenset[int]
                  ) -> list[float]:
        """Payload bytes of each operand's tuples, those in `packed` sparse."""
        if not packed:
            return t.dense[:-1]
        return [self.payload_bytes(o.tensor, t.tilings[k][0], True) if k in packed
                else t.dense[k] for k, o in enumerate(v.operands)]

    def _laid_out(self, v: Vertex, choice: Choice) -> _Tiled:
        """`_per_tiles` with the layout only (tilings, payload sizes), as feasibility
        needs it first."""
        key = (v.name, choice.tiles)
        t = self._shared.get(key)
        if t is not None:
            return t
        t = self._shared[key] = _Tiled()
        tiles, shapes = choice.sizes, self.dag.shapes
        # (tiling, shape) of each operand, then of the output
        t.tilings = tilings = [(choice.tiling(o.labels), shapes[o.tensor]) for o in v.operands]
        tilings.append((choice.tiling(v.labels), shapes[v.name]))
        payload, dense, sizes, padded, keyed = zip(*(_layout(*tl) for tl in tilings))
        t.payload, t.dense = list(payload), list(dense)
        t.keyed, t.keyed_out = list(keyed[:-1]), keyed[-1]
        t.largest, t.pads = max(sizes), any(padded)
        t.cells = prod(tiles[l] for l in v.all_labels)
        t.join = None
        return t

    def _per_tiles(self, v: Vertex, choice: Choice) -> _Tiled:
        """The vertex's costs under the choice's tile sizes that do not depend on which
        operands are read sparse (see `_Tiled`)."""
        t = self._laid_out(v, choice)
        if t.join is not None:
            return t
        tiles, sizes, tilings = choice.sizes, self._sizes[v.name], t.tilings
        ops, roles = self._ops[v.name], self._labels[v.name]
        t.t_in = [o.tuples(tiles) for o in ops]
        t.join = self._join_tuples(v, ops, t.t_in, tiles, sizes)
        t.aggregated = any(tiles[l] < sizes[l] for l in v.agg_labels)
        grouping = [l for l in v.labels if tiles[l] < sizes[l]]
        if t.aggregated:
            groups = prod(max(self._group_distinct(v, ops, l, tiles[l], sizes[l]), 1.0)
                          for l in grouping)
            t.out = distinct_after(groups, t.join) if grouping else min(t.join, 1.0)
        else:
            t.out = t.join
        out_tiling = tilings[-1][0]
        t.state = 0.0 if not t.payload[-1] or all(tiles[l] == sizes[l] for l in v.agg_labels) \
            else t.out * 8.0 * payload_size(out_tiling)
        t.summable = (self.caps.kernel_sums and v.is_binary and v.op == "mul"
                      and v.agg == "sum" and all(t.payload) and t.aggregated
                      and self._finite[v.name])
        t.product = any(tiles[l] > 1 for l in roles.product)
        t.stacked = t.summable and not any(tiles[l] > 1 for l in roles.unstackable)
        t.scales = (self._factorable[v.name]
                    and scalar_factor(self.dag, v, choice) is not None)
        return t

    def _factorable_at(self, v: Vertex) -> bool:
        """Whether `v` has a reader its scalar factor can move into (`sql.factor`), every
        tensor of both finite."""
        reader = factor_reader(self.dag, v)
        return reader is not None and all(self.stats[o.tensor].finite
                                          for o in v.operands + reader.operands
                                          if o.tensor != v.name)

    def sparse_driven(self, v: Vertex, choice: Choice) -> bool:
        """Whether the kernel runs over the packed operand's stored entries
        (`SPARSE_DRIVEN`: a product summed, or a min or max of sums over absent infs), one
        operand packed, the other finite where it is stored and not of the opposite
        infinity (0 x inf and inf + -inf must give NaN, so the kernels densify the packed
        operand otherwise, and its dense size must fit the cap)."""
        if len(choice.sparse) != 1:
            return False
        (s,) = choice.sparse
        defaults = v.defaults or (0.0,) * len(v.operands)
        absent = SPARSE_DRIVEN.get((v.op, v.agg))
        return (absent == defaults[s] and all(
            self.stats[o.tensor].finite and (not absent or defaults[k] != -absent)
            for k, o in enumerate(v.operands) if k != s))

    def kernel_summed(self, v: Vertex, choice: Choice) -> bool:
        """Whether the aggregate sums the kernel's results without forming them (the
        engine's `kernel_sums`, as the compiler uses it): a product of two dense payloads
        over finite values, summed over a key."""
        return self._per_tiles(v, choice).summable and not choice.sparse

    def pads_safely(self, v: Vertex) -> bool:
        """Padding (zeros) stays zero and adds nothing: a zero-preserving operation on
        finite values, summed."""
        return v.annihilates and v.agg == "sum" and self._finite[v.name]

    # -- one vertex -----------------------------------------------------------
    def vertex(self, v: Vertex, choice: Choice) -> VertexCost:
        found = self._costs.get((v.name, choice))
        if found is None:
            found = self._costs[(v.name, choice)] = self._vertex(v, choice)
        return found

    def _vertex(self, v: Vertex, choice: Choice) -> VertexCost:
        p, t, sparse = self.p, self._per_tiles(v, choice), choice.sparse
        tilings = t.tilings
        bytes_in = self._bytes_in(v, choice, t, sparse)
        bytes_out = t.dense[-1]
        t_in, join = t.t_in, t.join
        # a one-tuple operand joined to a keyed one is bound into the kernel once
        per_tuple = list(bytes_in)
        once = 0.0
        # one operand is one tuple joined to every keyed tuple of the other, whose products
        # run at c_gemm_rows: a batch of rows as one product where the engine batches,
        # else each tuple that is one row (a vector, which reads the whole matrix)
        rows = False
        if v.is_binary and v.op == "mul":
            keyed = t.keyed
            # measured on DuckDB: rows of a sparse matrix against one 173 MB array, 8 s
            # for 169k rows (83 batches each reading it) where this term said 0.06 s
            reads = 1.0 if self.caps.constants_once else ceil(join / self.caps.kernel_rows)
            for k in (0, 1):
                if not keyed[k] and keyed[1 - k]:
                    once += reads * bytes_in[k] * p.c_xfer
                    per_tuple[k] = 0.0
                    rows = self.caps.kernel_rows > 1 or all(
                        choice.sizes[l] == 1 for l in v.operands[1 - k].labels if l in v.labels)
        c_join = join * (sum(per_tuple) * p.c_xfer + p.c_fixed) + once
        summed = t.summable and not sparse
        out = t.out
        if t.aggregated:
            sub_out = payload_size(tilings[-1][0])
            # summed unformed: the adds are the kernel's (one product over the tuples)
            c_agg = max(join - out, 0.0) * (p.c_fixed if summed else
                                            bytes_out * p.c_xfer + sub_out * p.c_add + p.c_fixed)
        else:
            c_agg = 0.0
        # tuples summed unformed run as one matrix product per run of tuples of one group
        # within a batch: worth it where the groups are few (measured: 1.3M tuples into
        # 2646 groups of 64 x 256 ran the products one tuple at a time, 19 s)
        stacked = summed and t.stacked and min(join, KERNEL_BATCH) >= STACKED_TUPLES * out
        c_kernel = 0.0 if t.scales and not sparse else \
            join * self._kernel_seconds(v, choice, t, bytes_in, rows, stacked)
        # writing the output relation (beyond section 7.2: measured to matter for big
        # outputs); one that streams into its reader is not stored and runs no statement of
        # its own, but its payloads are still made and moved (pricing them at nothing chose
        # plans that make huge ones)
        copies = self._recomputed.get(v.name, (0, 0))[not (any(t.keyed) or t.keyed_out)]
        streamed = v.name in self.streamed or copies > 0
        c_agg += out * (bytes_out * p.c_xfer + (0.0 if streamed else p.c_fixed))
        if copies:         # no table: each reader makes the tuples again
            c_join, c_agg, c_kernel = c_join * copies, c_agg * copies, c_kernel * copies
        # on a cluster the work spreads over its tasks (at most one a joined tuple), and
        # shuffles and broadcasts move data
        spread = 1.0 / self.tasks(join)
        moves = vertex_exchanges(
            v, choice.sizes, self._sizes[v.name],
            [n * row_bytes(len(keyed_axes(*tl)), b) for n, tl, b in zip(t_in, tilings, bytes_in)],
            join, out, row_bytes(len(keyed_axes(*tilings[-1])), bytes_out), p.parallelism
        ) if p.c_shuffle else ()
        shuffle = p.c_shuffle * sum(e.bytes * (spread if e.key else 1.0) for e in moves)
        return VertexCost(c_join * spread, c_agg * spread, c_kernel * spread, join, out,
                          shuffle, moves, statement=0.0 if streamed else p.c_statement)

    def tasks(self, tuples: float) -> float:
        """Tasks a statement over `tuples` tuples runs in at once: the parallelism, but
        no more than one a tuple (a tuple is never split between tasks)."""
        return max(min(self.p.parallelism, tuples), 1.0)

    def _kernel_seconds(self, v: Vertex, choice: Choice, t: _Tiled, bytes_in: list[float],
                        rows: bool, stacked: bool = False) -> float:
        """Seconds of the kernel on one joined tuple: the dense loop (a matrix product of
        `rows` against one tuple at c_gemm_rows; of tuples `stacked` into one product, at
        c_gemm), or
        for a product with one sparse operand, its non-zeros, each visited once and times
        the other operand's own payload (where the engine has such a kernel; else the
        sparse payload is densified)."""
        per_flop = self.p.c_kernel
        if self.p.c_gemm and stacked:
            per_flop = self.p.c_gemm
        elif self.p.c_gemm and t.product:
            batched = rows and not choice.sparse and self.p.c_gemm_rows
            per_flop = self.p.c_gemm_rows if batched else self.p.c_gemm
        loop = t.cells * (2 if v.is_binary else 1) * per_flop
        if not choice.sparse:
            return loop
        tiles = choice.sizes
        densify = sum(payload_size(t.tilings[k][0]) for k in choice.sparse) * self.p.c_kernel
        if self.sparse_driven(v, choice) and self.p.c_sparse:
            (s,) = choice.sparse
            other = prod(tiles[l] for l in v.all_labels
                         if l not in v.operands[s].labels and tiles[l] > 1)
            return bytes_in[s] / 16.0 * (2 * other * self.p.c_sparse + self.p.c_nnz)
        return loop + densify

    def _join_tuples(self, v: Vertex, ops: list[OperandStats], t_in: list[float],
                     tiles: dict[str, int], sizes: dict[str, int]) -> float:
        keys = [l for l in v.all_labels if tiles[l] < sizes[l]]
        ranges = {l: key_range(tiles[l], sizes[l]) for l in keys}
        if not v.annihilates:
            if v.is_binary and v.op != "div":
                total = float(prod(ranges.values()))
                spread = sum(t * prod(ranges[l] for l in keys if l not in o.distinct)
                             for t, o in zip(t_in, ops))
                return distinct_after(total, spread) if keys else 1.0
            own = keys if v.is_binary else [l for l in keys if l in ops[0].distinct]
            return float(prod(ranges[l] for l in own))
        if len(ops) == 1:
            return t_in[0]
        roles = self._labels[v.name]
        shared = [l for l in roles.both if tiles[l] < sizes[l]]      # keys of both
        u, w = ops
        denominator = prod(max(tile_distinct(u.distinct[l], u.bounds[l], tiles[l]),
                               tile_distinct(w.distinct[l], w.bounds[l], tiles[l]), 1.0)
                           for l in shared)
        join = t_in[0] * t_in[1] / denominator
        if all(tiles[l] == 1 for l in shared) and all(
                any(tiles[l] < sizes[l] for l in own) for own in roles.own):
            join *= self._skew[v.name]    # tuples per shared key follow the degrees
        return join

    @staticmethod
    def _group_distinct(v: Vertex, ops: list[OperandStats], label: str, b: int, n: int
                        ) -> float:
        """Occupied tile indices of an output label: the least of its operands'."""
        if not v.annihilates:
            return float(key_range(b, n))
        return min(tile_distinct(o.distinct[label], o.bounds[label], b)
                   for o in ops if label in o.distinct)

    # -- loading an array input ---------------------------------------------
    def load(self, tensor: str, tiling: Tiling, sparse: bool = False) -> float:
        """Decomposing an in-memory input by `tiling` and loading it into the engine."""
        return self.stats[tensor].tuples(tiling) * (
            self.p.c_load_tuple + self.payload_bytes(tensor, tiling, sparse) * self.p.c_load_byte
        ) + self.p.c_statement

    # -- repartition ----------------------------------------------------------
    def repartition(self, tensor: str, have: Tiling, need: Tiling, sparse: bool = False) -> float:
        """C_repart: split the axes whose tile size changes into scalars, then stack them
        (and pack the payloads sparse; scalars straight into packed payloads where the
        engine can); each of these statements costs C_statement."""
        stats = self.stats[tensor]
        middle = middle_tiling(have, need)
        if sparse and self.dag.default(tensor) and not (self.caps.packed_stacks
                                                        and stacks_scalars(have, need)):
            return float("inf")       # sparsify packs non-zeros: not a tensor of another default
        moved = max(2 * stats.tuples(middle) - stats.tuples(have) - stats.tuples(need), 0.0)
        cost = moved * (_payload_bytes(middle) * self.p.c_xfer + self.p.c_fixed)
        spread = 1.0 / self.tasks(min(stats.tuples(have), stats.tuples(need)))
        explode = (middle != have) * self.p.c_statement
        if sparse and self.caps.packed_stacks and stacks_scalars(have, need):
            # each scalar is sorted into its payload (two list entries), each payload written
            return cost + stats.tuples(middle) * (16.0 * self.p.c_xfer + self.p.c_fixed) + \
                stats.tuples(need) * (self.payload_bytes(tensor, need, True) * self.p.c_xfer
                                      + self.p.c_fixed) + explode + self.p.c_statement
        pack = stats.tuples(need) * (_payload_bytes(need) * self.p.c_xfer + self.p.c_fixed) \
            if sparse else 0.0
        statements = explode + ((middle != need) + sparse) * self.p.c_statement
        if have == need:
            return pack * spread + statements
        if middle != need and payload_axes(need):     # stacked into arrays
            cost += stats.tuples(need) * self.p.c_group
            states = stats.tuples(need) * 8.0 * payload_size(need)
            if self.state_cap is not None and states > self.state_cap:
                return float("inf")       # the stack's states would not fit
        if middle != need:       # stacking shuffles the pieces by the target's keys
            cost += self.p.c_shuffle * stats.tuples(middle) * row_bytes(
                len(keyed_axes(middle, self.dag.shapes[tensor])), _payload_bytes(middle))
        return (cost + pack) * spread + statements
