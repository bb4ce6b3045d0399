"""Plans reused across calls: a program planned once runs again on new data without
statistics or planning while the data stays close to what the plan was chosen for.

`PLANS` is a bounded (LRU) cache of `Planned` entries keyed by everything planning
depends on but the data: the program, the inputs' shapes and dtypes, the outputs'
dtypes, the dialect, the cost constants and the model's limits. An entry keeps what the
first session made (the lowered DAG, its cost model, the plans and their compiled SQL)
and the `Summary` of each input it was chosen under. A later session reuses it when
every input's summary is `close` to the stored one: non-zeros and non-empty indices per
axis within FACTOR either way, NaN/inf present in the same inputs, and for integer
programs no larger values (which could need exact BIGINT arithmetic). A summary takes
a few vectorised passes over each input (O(size) of a dense array, O(nnz) of a sparse
one; no sorting, no tiles, no degrees): a fraction of the exact statistics, and far
less than the planning it replaces.

`STATS` keeps the exact statistics of each input object while it lives (by identity,
LRU-bounded) and gives them again while its summary is unchanged, so that an array
passed to many calls is counted once.
"""
from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .optimizer.context import OptimizerContext
from .plan import Plan
from .program.dag import Dag
from .sql.compiler import CompiledPlan
from .stats.tensor_stats import TensorStats, exact_stats

CACHE_SIZE = 64        # plans kept, least recently used dropped first
STATS_SIZE = 256       # input objects whose statistics are kept
FACTOR = 2.0           # statistics within this factor either way reuse the plan


@dataclass(frozen=True)
class Summary:
    """What reuse compares of an input: non-zeros, non-empty indices per axis, whether
    every value is finite, and (integers only) the largest |value|."""
    nnz: int
    distinct: tuple[int, ...]
    finite: bool
    max_abs: float


def summary(x: object, default: float = 0.0) -> Summary:
    """The summary of a NumPy array or a scipy.sparse matrix (its values' finiteness and
    bound over the entries other than `default`)."""
    if sp.issparse(x):
        if x.format not in ("csr", "csc"):
            x = x.tocsr()
        major = np.count_nonzero(np.diff(x.indptr))
        minor = np.count_nonzero(np.bincount(x.indices, minlength=x.shape[x.format == "csr"]))
        distinct = (major, minor) if x.format == "csr" else (minor, major)
        values = x.data
        nnz = np.count_nonzero(values)
    else:
        values = np.asarray(x)
        nnz = np.count_nonzero(values)
        if nnz == values.size:
            distinct = values.shape
        else:
            nonzero = values != 0
            distinct = tuple(np.count_nonzero(nonzero.any(
                axis=tuple(a for a in range(values.ndim) if a != axis)))
                for axis in range(values.ndim))
    if default != 0:
        values = values[values != default]
        nnz = np.count_nonzero(values)
    return Summary(int(nnz), tuple(int(n) for n in distinct), all_finite(values),
                   max_abs(values))


def all_finite(values: np.ndarray) -> bool:
    """No NaN or inf: a finite sum says so without a temporary array (a sum that
    overflows is checked element by element)."""
    if values.dtype.kind not in "fc" or values.size == 0:
        return True
    return math.isfinite(abs(values.sum())) or bool(np.isfinite(values).all())


def max_abs(values: np.ndarray) -> float:
    """The largest |value| of integers (0 for other values: compared for integers only)."""
    if values.dtype.kind not in "biu" or values.size == 0:
        return 0.0
    return float(max(-float(values.min()), float(values.max())))


def close(old: Summary, new: Summary, integral: bool) -> bool:
    """Whether a plan chosen for data summarised by `old` is reused for `new`."""
    def near(a: float, b: float) -> bool:
        a, b = max(a, 1.0), max(b, 1.0)
        return a <= FACTOR * b and b <= FACTOR * a
    return (old.finite == new.finite and near(old.nnz, new.nnz)
            and all(near(a, b) for a, b in zip(old.distinct, new.distinct))
            and (not integral or new.max_abs <= old.max_abs))


@dataclass
class Planned:
    """What a session made for a program that later sessions reuse."""
    dag: Dag
    fused: list[tuple[str, str]]
    summaries: dict[str, Summary]               # of the inputs it was planned for
    integral: bool
    context: OptimizerContext | None = None
    exact_integers: bool | None = None
    plans: dict[str, Plan] = field(default_factory=dict)     # by plan string
    compiled: dict[int, CompiledPlan] = field(default_factory=dict)   # by id of the plan
    lock: threading.Lock = field(default_factory=threading.Lock)     # planning on `context`
    running: threading.Lock = field(default_factory=threading.Lock)  # a run of `compiled`

    def fits(self, summaries: dict[str, Summary]) -> bool:
        return summaries.keys() == self.summaries.keys() and all(
            close(self.summaries[name], s, self.integral) for name, s in summaries.items())


class PlanCache:
    """Planned entries by key, at most `size`, least recently used dropped first;
    `hits` and `misses` count the lookups."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size, self.hits, self.misses = size, 0, 0
        self._entries: OrderedDict[tuple, Planned] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, key: tuple, summaries: dict[str, Summary]) -> Planned | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.fits(summaries):
                self._entries.move_to_end(key)
                self.hits += 1
                return entry
            self.misses += 1
            return None

    def put(self, key: tuple, entry: Planned) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


PLANS = PlanCache()


class StatsCache:
    """Exact statistics of input objects, by identity while they live, at most `size`."""

    def __init__(self, size: int = STATS_SIZE):
        self.size = size
        self._entries: OrderedDict[object, tuple[weakref.ref, Summary, TensorStats]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, x: object, default: float = 0.0, now: Summary | None = None) -> TensorStats:
        """The statistics of `x` (its entries other than `default`): kept ones while its
        summary (`now`, when the caller has it) is the one they were computed with (its
        values may have changed in place), else computed and kept."""
        now = summary(x, default) if now is None else now
        key = id(x) if default == 0 else (id(x), default)
        with self._lock:
            found = self._entries.get(key)
            if found is not None and found[0]() is x and found[1] == now:
                self._entries.move_to_end(key)
                return found[2]
        stats = exact_stats(x, default)
        try:
            ref = weakref.ref(x, lambda _, key=key: self._forget(key))
        except TypeError:             # an object without weak references: not kept
            return stats
        with self._lock:
            self._entries[key] = (ref, now, stats)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return stats

    def _forget(self, key: object) -> None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None and found[0]() is None:
                del self._entries[key]


STATS = StatsCache()
