"""The cost model of section 7.2: join, aggregation, repartition, plus kernel FLOPs.

Costs are in seconds when the constants come from `sparse-einsum calibrate`.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from math import prod
from pathlib import Path

from .program.dag import Dag, Vertex
from .stats.propagate import OperandStats, operand_stats
from .stats.tensor_stats import TensorStats, distinct_after


# tuples one kernel call receives at most (DuckDB hands UDFs vectors of 2048 rows)
KERNEL_BATCH = 2048
# a distributed engine (c_shuffle > 0, Spark): per tuple moved, the bytes of its row header
# and length on top of keys and value, and the size below which a join side is broadcast
# (Spark's spark.sql.autoBroadcastJoinThreshold) instead of shuffled
SHUFFLE_ROW_BYTES = 24.0
BROADCAST_BYTES = 10.0 * 2 ** 20


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
    c_shuffle: float = 0.0       # per byte exchanged between tasks (0: the engine does not)
    parallelism: float = 1.0     # tasks running at once: joins, aggregates, kernels and
    #                              shuffles spread over them; loads and broadcasts do not

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


# from `sparse-einsum calibrate` on a 2-core machine of the kind CI runs on; the load
# constants are the median of five DuckDB runs of the current calibration
DEFAULT_PARAMS = {
    # c_group measured by timing one stack into 2708 row arrays against one array (DuckDB)
    "duckdb": CostParams(c_xfer=3.2e-9, c_kernel=3.1e-11, c_fixed=8.7e-8, c_add=1.7e-8,
                         c_group=3.5e-5, c_load_tuple=9.4e-8, c_load_byte=3.5e-9),
    "postgres": CostParams(c_xfer=3.1e-9, c_kernel=3.9e-9, c_fixed=8.7e-7, c_add=1.0e-12,
                           c_load_tuple=6.2e-7, c_load_byte=2.4e-8),
    # first estimates from timings of local[2] on this machine, NOT yet fitted: run
    # `calibrate --backend spark --spark local-cluster[2,1,2048]` and replace them
    "spark": CostParams(c_xfer=2.0e-8, c_kernel=1.0e-10, c_fixed=2.0e-6, c_add=1.0e-8,
                        c_group=1.0e-5, c_load_tuple=2.0e-6, c_load_byte=2.0e-8,
                        c_shuffle=2.0e-8, parallelism=2.0),
}


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(os.environ.get("SPARSE_EINSUM_CONFIG", Path(base) / "sparse-einsum" / "calibration.json"))


def load_params(backend: str) -> CostParams:
    """Calibrated constants for `backend` from the user's config file, else the defaults."""
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
class Exchange:
    """Data a distributed engine moves for a statement: a side shuffled by the key the
    statement joins or groups on, or broadcast to every executor."""
    what: str                  # operand tensor, or "partial <agg>" of the output
    key: tuple[str, ...]       # the partitioning key; () for a broadcast
    bytes: float

    def describe(self) -> str:
        how = f"by {','.join(self.key)}" if self.key else "broadcast"
        return f"{self.what} {how} ({self.bytes / 2 ** 20:.3g} MiB)"


@dataclass(frozen=True)
class VertexCost:
    join: float
    aggregate: float
    kernel: float
    join_tuples: float
    out_tuples: float
    shuffle: float = 0.0
    exchanges: tuple[Exchange, ...] = ()

    @property
    def total(self) -> float:
        return self.join + self.aggregate + self.kernel + self.shuffle


def _tuple_bytes(labels: tuple[str, ...], shape: tuple[int, ...], promoted) -> float:
    """Bytes of one tuple: keys and value."""
    keys = sum(1 for l in labels if l in promoted)
    return 8.0 * (keys + prod(s for s, l in zip(shape, labels) if l not in promoted))


def _shuffle_row_bytes(labels: tuple[str, ...], shape: tuple[int, ...], promoted) -> float:
    """Bytes of one tuple in a shuffle: header, keys, value (an array has a header too)."""
    array = 16.0 if any(l not in promoted for l in labels) else 0.0
    return SHUFFLE_ROW_BYTES + _tuple_bytes(labels, shape, promoted) + array


def _payload_bytes(labels: tuple[str, ...], shape: tuple[int, ...], promoted) -> float:
    """Bytes of the array a tuple carries; 0 for a scalar value.

    Measured on DuckDB and PostgreSQL: keys and scalar values move at the per-tuple
    cost C_fixed; arrays cost C_xfer per byte on top (they pass through kernels)."""
    demoted = [s for s, l in zip(shape, labels) if l not in promoted]
    return 8.0 * prod(demoted) if demoted else 0.0


class CostModel:
    """Costs of vertices and repartitions for one DAG, its statistics and constants."""

    def __init__(self, dag: Dag, stats: dict[str, TensorStats], params: CostParams,
                 max_tuple_bytes: float = float("inf"), max_payload_values: int | None = None):
        self.dag, self.stats, self.p, self.cap = dag, stats, params, max_tuple_bytes
        self.max_values = max_payload_values
        self._ops = {v.name: [operand_stats(stats[o.tensor], o) for o in v.operands]
                     for v in dag.vertices}
        self._sizes = {v.name: dag.label_sizes(v) for v in dag.vertices}

    # -- feasibility ----------------------------------------------------------
    def fits(self, v: Vertex, promoted: frozenset[str]) -> bool:
        """No tuple and no kernel call (a batch of up to KERNEL_BATCH joined tuples, with
        one-tuple operands bound once) above the memory cap, and no payload longer than
        the SQL dialect's arrays hold."""
        shapes = self.dag.shapes
        if self.max_values is not None:
            tensors = [(o.tensor, o.labels) for o in v.operands] + [(v.name, v.labels)]
            if any(prod(n for n, l in zip(shapes[t], labels) if l not in promoted)
                   > self.max_values for t, labels in tensors):
                return False
        tuple_in = [_tuple_bytes(o.labels, shapes[o.tensor], promoted) for o in v.operands]
        tuple_out = _tuple_bytes(v.labels, shapes[v.name], promoted)
        if max(tuple_in + [tuple_out]) > self.cap:
            return False
        sizes = self._sizes[v.name]
        if all(l in promoted for l in v.all_labels):
            return True                       # no kernel: plain SQL on scalars
        ops = self._ops[v.name]
        rows = min(self._join_tuples(v, ops, [o.tuples(promoted) for o in ops], promoted, sizes),
                   KERNEL_BATCH)
        payload_in = [_payload_bytes(o.labels, shapes[o.tensor], promoted) for o in v.operands]
        keyed = [any(l in promoted for l in o.labels) for o in v.operands]
        per_row = sum(b for b, k in zip(payload_in, keyed) if k)
        per_row += _payload_bytes(v.labels, shapes[v.name], promoted)
        if not (v.annihilates and v.op == "mul"):
            per_row += 8.0 * prod(sizes[l] for l in v.all_labels if l not in promoted)
        once = sum(b for b, k in zip(payload_in, keyed) if not k)
        return rows * per_row + once <= self.cap

    # -- one vertex -----------------------------------------------------------
    def vertex(self, v: Vertex, promoted: frozenset[str]) -> VertexCost:
        p, sizes, ops = self.p, self._sizes[v.name], self._ops[v.name]
        bytes_in = [_payload_bytes(o.labels, self.dag.shapes[o.tensor], promoted)
                    for o in v.operands]
        bytes_out = _payload_bytes(v.labels, self.dag.shapes[v.name], promoted)
        t_in = [o.tuples(promoted) for o in ops]
        join = self._join_tuples(v, ops, t_in, promoted, sizes)
        # a one-tuple operand joined to a keyed one is bound into the kernel once
        per_tuple = list(bytes_in)
        once = 0.0
        if v.is_binary and v.op == "mul":
            keyed = [any(l in promoted for l in o.labels) for o in v.operands]
            for k in (0, 1):
                if not keyed[k] and keyed[1 - k]:
                    once += bytes_in[k] * p.c_xfer
                    per_tuple[k] = 0.0
        c_join = join * (sum(per_tuple) * p.c_xfer + p.c_fixed) + once
        loop = prod(sizes[l] for l in v.all_labels if l not in promoted)
        c_kernel = join * loop * (2 if v.is_binary else 1) * p.c_kernel
        grouping = [l for l in v.labels if l in promoted]
        if any(l in promoted for l in v.agg_labels):
            groups = prod(max(self._group_distinct(v, ops, l, sizes), 1.0) for l in grouping)
            out = distinct_after(groups, join) if grouping else min(join, 1.0)
            sub_out = prod(sizes[l] for l in v.labels if l not in promoted)
            c_agg = max(join - out, 0.0) * (bytes_out * p.c_xfer + sub_out * p.c_add + p.c_fixed)
        else:
            out, c_agg = join, 0.0
        # writing the output relation (beyond section 7.2: measured to matter for big outputs)
        c_agg += out * (bytes_out * p.c_xfer + p.c_fixed)
        exchanges = self.exchanges(v, promoted, join, out) if p.c_shuffle > 0 else ()
        spread = 1.0 / max(p.parallelism, 1.0)
        shuffle = p.c_shuffle * sum(e.bytes * (spread if e.key else 1.0) for e in exchanges)
        return VertexCost(c_join * spread, c_agg * spread, c_kernel * spread, join, out,
                          shuffle, exchanges)

    def exchanges(self, v: Vertex, promoted: frozenset[str], join: float, out: float
                  ) -> tuple[Exchange, ...]:
        """What a distributed engine moves for `v`: the promoted labels the operands share
        are the partitioning key of the join (each side is shuffled by it; a side below
        BROADCAST_BYTES, or either side of a join without a key, is broadcast instead);
        an aggregation over promoted labels shuffles its partial results by the output's
        keys unless the join key already clusters them."""
        shapes = self.dag.shapes
        keys = [tuple(l for l in o.labels if l in promoted) for o in v.operands]
        sides = [t * _shuffle_row_bytes(o.labels, shapes[o.tensor], promoted)
                 for o, t in zip(v.operands, (s.tuples(promoted) for s in self._ops[v.name]))]
        moves: list[Exchange] = []
        clustered: tuple[str, ...] = ()
        if len(v.operands) == 2:
            shared = tuple(l for l in keys[0] if l in keys[1])
            key = shared if v.annihilates else tuple(dict.fromkeys(keys[0] + keys[1]))
            small = int(sides[1] < sides[0])
            if not key or sides[small] <= BROADCAST_BYTES:
                moves.append(Exchange(v.operands[small].tensor, (), sides[small]))
            else:
                moves += [Exchange(o.tensor, key, b) for o, b in zip(v.operands, sides)]
                clustered = key
        group = tuple(l for l in v.labels if l in promoted)
        if any(l in promoted for l in v.agg_labels) and not (clustered and
                                                           set(clustered) <= set(group)):
            partial = min(join, out * max(self.p.parallelism, 1.0))
            moves.append(Exchange(f"partial {v.agg}s of {v.name}", group or ("()",),
                                  partial * _shuffle_row_bytes(v.labels, shapes[v.name],
                                                               promoted)))
        return tuple(moves)

    def _join_tuples(self, v: Vertex, ops: list[OperandStats], t_in: list[float],
                     promoted, sizes: dict[str, int]) -> float:
        if not v.annihilates:
            keys = [l for l in v.all_labels if l in promoted]
            if v.is_binary and v.op != "div":
                total = float(prod(sizes[l] for l in keys))
                spread = sum(t * prod(sizes[l] for l in keys if l not in o.distinct)
                             for t, o in zip(t_in, ops))
                return distinct_after(total, spread) if keys else 1.0
            own = keys if v.is_binary else [l for l in keys if l in ops[0].distinct]
            return float(prod(sizes[l] for l in own))
        if len(ops) == 1:
            return t_in[0]
        shared = [l for l in ops[0].distinct if l in ops[1].distinct and l in promoted]
        denominator = prod(max(ops[0].distinct[l], ops[1].distinct[l], 1.0) for l in shared)
        return t_in[0] * t_in[1] / denominator

    @staticmethod
    def _group_distinct(v: Vertex, ops: list[OperandStats], label: str, sizes) -> float:
        if not v.annihilates:
            return float(sizes[label])
        seen = [o.distinct[label] for o in ops if label in o.distinct]
        return min(seen)

    # -- loading an array input ---------------------------------------------
    def load(self, tensor: str, axes: tuple[int, ...]) -> float:
        """Decomposing an in-memory input by `axes` and loading it into the engine."""
        shape = self.dag.shapes[tensor]
        demoted = [shape[a] for a in range(len(shape)) if a not in axes]
        size = 8.0 * prod(demoted) if demoted else 0.0
        return self.stats[tensor].tuples(axes) * (self.p.c_load_tuple + size * self.p.c_load_byte)

    # -- repartition ----------------------------------------------------------
    def repartition(self, tensor: str, have: tuple[int, ...], need: tuple[int, ...]) -> float:
        """C_repart: decompose to the union of promoted axes, then stack back."""
        if tuple(have) == tuple(need):
            return 0.0
        stats, shape = self.stats[tensor], self.dag.shapes[tensor]
        union = tuple(sorted(set(have) | set(need)))
        middle = stats.tuples(union)
        demoted = [shape[a] for a in range(len(shape)) if a not in union]
        size = 8.0 * prod(demoted) if demoted else 0.0
        moved = max(2 * middle - stats.tuples(have) - stats.tuples(need), 0.0)
        cost = moved * (size * self.p.c_xfer + self.p.c_fixed)
        if union != tuple(need) and len(need) < len(shape):     # stacked into arrays
            cost += stats.tuples(need) * self.p.c_group
        if union != tuple(need):      # the pieces are shuffled by the target's keys
            labels = tuple(f"l{a}" for a in range(len(shape)))
            cost += self.p.c_shuffle * middle * _shuffle_row_bytes(
                labels, shape, {labels[a] for a in union})
        return cost / max(self.p.parallelism, 1.0)
