"""What a distributed engine (Spark) moves between tasks for one statement.

The key columns a statement joins on partition it: each side of the join is shuffled
by them, unless it is small enough to be broadcast to every task (as Spark does below
spark.sql.autoBroadcastJoinThreshold); an aggregate over key columns shuffles its
partial results by the output's key columns, unless the join key already clusters them.
The cost model prices these moves per byte (`CostParams.c_shuffle`) and `explain`
lists them.
"""
from __future__ import annotations

from dataclasses import dataclass

from .program.dag import Vertex

ROW_HEADER_BYTES = 24.0          # per tuple moved: row header and length
ARRAY_HEADER_BYTES = 16.0        # per array payload moved
BROADCAST_BYTES = 10.0 * 2 ** 20     # Spark's default autoBroadcastJoinThreshold


@dataclass(frozen=True)
class Exchange:
    """Data moved for a statement: shuffled by `key` (key columns), or broadcast."""
    what: str                  # operand tensor, or the partial aggregates of the output
    key: tuple[str, ...]       # the partitioning key; () for a broadcast
    bytes: float

    def describe(self) -> str:
        how = f"by {','.join(self.key)}" if self.key else "broadcast"
        return f"{self.what} {how} ({self.bytes / 2 ** 20:.3g} MiB)"


def row_bytes(keys: int, payload_bytes: float) -> float:
    """Bytes of one tuple in a shuffle: header, key columns, value (a scalar when
    `payload_bytes` is 0, else an array of that many bytes)."""
    value = payload_bytes + ARRAY_HEADER_BYTES if payload_bytes else 8.0
    return ROW_HEADER_BYTES + 8.0 * keys + value


def vertex_exchanges(v: Vertex, tiles: dict[str, int], sizes: dict[str, int],
                     side_bytes: list[float], join: float, out: float, out_row_bytes: float,
                     parallelism: float) -> tuple[Exchange, ...]:
    """The shuffles and broadcasts of `v` under the tile sizes `tiles`: `side_bytes` are
    the operands' relations in bytes, `join` and `out` the estimated joined and output
    tuples."""
    def columns(labels: tuple[str, ...]) -> tuple[str, ...]:
        """The key columns of labels: ``i`` promoted, ``i_tile`` tiled."""
        return tuple(dict.fromkeys(l if tiles[l] == 1 else f"{l}_tile" for l in labels
                                   if tiles[l] < sizes[l]))

    keys = [columns(o.labels) for o in v.operands]
    moves: list[Exchange] = []
    clustered: tuple[str, ...] = ()
    if len(v.operands) == 2:
        shared = tuple(k for k in keys[0] if k in keys[1])
        key = shared if v.annihilates else tuple(dict.fromkeys(keys[0] + keys[1]))
        small = int(side_bytes[1] < side_bytes[0])
        if not key or side_bytes[small] <= BROADCAST_BYTES:
            moves.append(Exchange(v.operands[small].tensor, (), side_bytes[small]))
        else:
            moves += [Exchange(o.tensor, key, b) for o, b in zip(v.operands, side_bytes)]
            clustered = key
    group = columns(v.labels)
    if columns(v.agg_labels) and not (clustered and set(clustered) <= set(group)):
        partial = min(join, out * max(parallelism, 1.0))     # after map-side aggregation
        moves.append(Exchange(f"partial {v.agg}s of {v.name}", group or ("()",),
                              partial * out_row_bytes))
    return tuple(moves)
