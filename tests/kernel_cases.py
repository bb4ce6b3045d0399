"""Kernel specs and a NumPy reading of their text, for the C kernels of both engines
(tests/test_pg_kernels.py, tests/test_duckdb_extension.py)."""
from __future__ import annotations

from math import prod

import numpy as np
import scipy.sparse as sp

from sparse_einsum.kernels.spec import KernelSpec
from sparse_einsum.program.ops import BINARY, split_code

# ---------------------------------------------------------------- NumPy reference of the spec text

_UNARY = {"id": lambda x: x, "neg": np.negative, "relu": lambda x: np.maximum(x, 0.0),
          "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
          "tanh": np.tanh, "abs": np.abs}
_CONST = {"mulc": lambda x, c: x * c, "addc": lambda x, c: x + c, "subc": lambda x, c: x - c,
          "rsubc": lambda x, c: c - x, "divc": lambda x, c: x / c, "rdivc": lambda x, c: c / x,
          "maxc": np.maximum, "minc": np.minimum, "powc": np.power}
_BINARY = {"mul": np.multiply, "add": np.add, "sub": np.subtract, "div": np.divide}


def _ints(s: str) -> tuple[int, ...]:
    return tuple(int(v) for v in s.split(",")) if s else ()


def ref_kernel(spec: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Evaluate a KernelSpec text element by element."""
    op, agg, n_out, dims, *strides = spec.split(";")
    dims, n_out = _ints(dims), int(n_out)
    strides = [np.array(_ints(s), dtype=np.int64) for s in strides]
    name, _, c = op.partition(":")
    if name in _BINARY:
        f = _BINARY[name]
    elif name in _CONST:
        f = lambda x, _y: _CONST[name](x, float(c))  # noqa: E731
    else:
        f = lambda x, _y: _UNARY[name](x)  # noqa: E731
    init = {"sum": 0.0, "max": -np.inf, "min": np.inf}[agg]
    out = []
    with np.errstate(all="ignore"):
        for o in np.ndindex(*dims[:n_out]):
            vals = []
            for r in np.ndindex(*dims[n_out:]):
                i = np.array(o + r, dtype=np.int64)
                x = np.float64(a[i @ strides[0]]) if len(i) else np.float64(a[0])
                y = (np.float64(b[i @ strides[1]]) if len(i) else np.float64(b[0])) if b is not None else None
                vals.append(f(x, y))
            if not vals:
                out.append(init)
            elif agg == "sum":
                out.append(np.sum(vals))
            else:
                out.append(np.max(vals) if agg == "max" else np.min(vals))
    return np.array(out, dtype=np.float64)


def random_spec(rng: np.random.Generator, op: str, agg: str) -> tuple[str, list[int]]:
    """A random einsum-like spec: each input takes some loop dims (repeats allowed) as axes."""
    nd = int(rng.integers(1, 5))
    dims = tuple(int(d) for d in rng.integers(1, 5, nd))
    n_out = int(rng.integers(0, nd + 1))
    strides, sizes = [], []
    for _ in range(2 if op in _BINARY else 1):
        axes = list(rng.choice(nd, int(rng.integers(0, nd + 2)), replace=True))
        shape = [dims[t] for t in axes]
        st = [0] * nd
        for k, t in enumerate(axes):
            st[t] += prod(shape[k + 1:])
        strides.append(tuple(st))
        sizes.append(prod(shape))
    spec = KernelSpec(op, agg, dims, n_out, tuple(strides), tuple(sizes))
    return spec.text, sizes


RNG = np.random.default_rng(7)
M34, V4, M45 = RNG.normal(size=12), RNG.normal(size=4), RNG.normal(size=20)
M64, V64 = RNG.normal(size=64 * 64), RNG.normal(size=64)

HANDWRITTEN = [
    ("mul;sum;1;3,4;4,1;0,1", M34, V4),                 # matrix-vector
    ("mul;sum;2;3,5,4;4,0,1;0,1,5", M34, M45),          # matrix-matrix
    ("mul;sum;1;64,64;64,1;0,1", M64, V64),             # long inner run
    ("mul;sum;0;64;1;1", V64, V64),                     # dot product
    ("mul;sum;2;3,4;1,0;0,1", M34[:3], V4),             # outer product
    ("add;sum;2;3,4;4,1;0,1", M34, V4),                 # broadcast add
    ("sub;sum;2;4,3;1,4;0,0", M34, [2.0]),              # transposed minus a scalar
    ("div;sum;1;6;1;1", [0.0, 1.0, -1.0, 2.0, 0.0, np.nan], [0.0, 0.0, 0.0, 4.0, 3.0, 1.0]),
    ("mul;max;1;3,4;4,1;0,1", M34, V4),
    ("sub;min;1;4,3;1,4;0,1", M34, M34[:3]),
    ("mul;sum;1;2,0;1,1;1,1", V4, V4),                  # empty reduction -> 0
    ("mul;max;0;0;1;1", V4, V4),                        # empty reduction -> -inf
]
UNARY = [
    ("id;sum;2;4,3;1,4", M34),                          # transpose
    ("id;sum;1;4;5", RNG.normal(size=16)),              # diagonal
    ("id;sum;0;4;5", RNG.normal(size=16)),              # trace
    ("id;sum;0;;", [3.5]),                              # scalar
    ("exp;max;1;3,4;4,1", M34),
    ("tanh;min;0;3,4;4,1", M34),
]



def contraction(subscripts: str, sizes: dict[str, int]) -> str:
    """The KernelSpec text of a two-input einsum such as "mk,kn->mn" (row-major inputs)."""
    inputs, out = subscripts.split("->")
    terms = inputs.split(",")
    loop = list(out) + sorted({l for t in terms for l in t} - set(out))
    strides = []
    for term in terms:
        row = [prod(sizes[l] for l in term[k + 1:]) for k in range(len(term))]
        strides.append(tuple(sum(r for l2, r in zip(term, row) if l2 == l) for l in loop))
    return KernelSpec("mul", "sum", tuple(sizes[l] for l in loop), len(out), tuple(strides),
                      tuple(prod(sizes[l] for l in t) for t in terms)).text


# matrix products in every layout the BLAS and shared-matrix paths tell apart
SIZES = {"m": 5, "n": 6, "k": 7, "b": 3, "p": 2, "q": 4, "u": 1}
PRODUCT_SUBSCRIPTS = ["k,kn->n", "k,nk->n", "mk,k->m", "km,k->m", "mk,kn->mn", "mk,kn->nm",
                      "km,nk->mn", "bmk,bkn->bmn", "bmk,bkn->mbn", "k,k->", "pq,pqn->n",
                      "mu,un->mn", "uk,kn->un", "mk,nk->mn"]


def product_case(subscripts: str, seed: int) -> tuple[str, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    spec = contraction(subscripts, SIZES)
    terms = subscripts.split("->")[0].split(",")
    return spec, *(rng.normal(size=prod(SIZES[l] for l in t)) for t in terms)


PRODUCTS = [product_case(s, n) for n, s in enumerate(PRODUCT_SUBSCRIPTS)]
# zeros of a vector meeting inf in a matrix give NaN, as in NumPy (no skipping of zeros)
_, _ZV, _ZM = product_case("k,kn->n", 99)
PRODUCTS.append((contraction("k,kn->n", SIZES), np.where(np.arange(7) % 2 == 0, 0.0, _ZV),
                 np.where(np.arange(42) == 2, np.inf, _ZM)))


# ---------------------------------------------------------------- packed sparse inputs

def packed(x, fill: float = 0.0) -> np.ndarray:
    """A dense payload packed sparse: the flat offsets of its entries other than `fill`
    (non-zeros), then their values."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    at = np.flatnonzero(x != fill)
    return np.concatenate([at.astype(np.float64), x[at]])


def mark(spec: str, which: tuple[int, ...], fill: float = 0.0) -> str:
    """The spec text with the stride lists of the inputs in `which` marked packed (~), of
    absent entries `fill`."""
    fields = spec.split(";")
    for k in which:
        fields[4 + k] = "~" + (f"{fill!r}:" if fill else "") + fields[4 + k]
    return ";".join(fields)


def _thin(x, rng: np.random.Generator, keep: float) -> np.ndarray:
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    return np.where(rng.random(x.shape) < keep, x, 0.0)


def _sparse_cases() -> list[tuple[str, list[np.ndarray], np.ndarray]]:
    """(spec text with packed inputs, the inputs as sent, NumPy's result) for every binary
    case with either input packed (product-sums run over the non-zeros, the rest densify),
    both packed, all-zero (empty) payloads, inf and NaN in the dense input, and unary ones."""
    rng = np.random.default_rng(11)
    cases = []
    for n, (spec, a, b) in enumerate(HANDWRITTEN + PRODUCTS):
        dense = [_thin(a, rng, 0.4), _thin(b, rng, 0.4)]
        if n % 5 == 0:
            dense[n % 2] = np.zeros_like(dense[n % 2])          # an empty payload
        if n % 3 == 0:                                          # 0 * inf and NaN in the dense one
            other = dense[1 - n % 2]
            other[rng.integers(0, other.size)] = [np.inf, np.nan][n % 2]
        want = ref_kernel(spec, *dense)
        for which in ((0,), (1,), (0, 1)):
            if all(np.size(dense[k]) > 1 for k in which):
                sent = [packed(x) if k in which else x for k, x in enumerate(dense)]
                cases.append((mark(spec, which), sent, want))
    for seed in range(40):       # diagonals, broadcasts, any reduction
        r = np.random.default_rng(seed)
        spec, sizes = random_spec(r, ["mul", "mul", "add", "div"][seed % 4], ["sum", "sum", "max"][seed % 3])
        dense = [_thin(r.normal(size=max(s, 1)), r, 0.5) for s in sizes]
        which = (seed % 2,) if seed % 5 else (0, 1)
        sent = [packed(x) if k in which else x for k, x in enumerate(dense)]
        cases.append((mark(spec, which), sent, ref_kernel(spec, *dense)))
    for spec, a in UNARY[:3]:
        a = _thin(a, rng, 0.5)
        cases.append((mark(spec, (0,)), [packed(a)], ref_kernel(spec, a)))
    return cases + _semiring_cases()


def _semiring_cases() -> list[tuple[str, list[np.ndarray], np.ndarray]]:
    """Packed inputs whose absent entries are not 0: min and max of sums over absent inf and
    -inf (run over the stored entries), the dense input holding the same infinity (still
    run so), the opposite one or NaN (densified: inf + -inf is NaN), and kernels that
    densify with the fill (a min of sums over absent 0s, a unary one)."""
    rng = np.random.default_rng(12)
    cases = []
    for n, (spec, a, b) in enumerate(PRODUCTS):
        for agg, fill in (("min", np.inf), ("max", -np.inf), ("min", 0.0)):
            ring = spec.replace("mul;sum", f"add;{agg}")
            dense = [np.where(rng.random(np.shape(x)) < 0.4, np.round(np.asarray(x) * 4), fill)
                     for x in (a, b)]
            other = dense[1 - n % 2]
            other[rng.integers(0, other.size)] = [fill, -fill, np.nan][n % 3] if fill else np.inf
            for which in ((n % 2,), (0, 1)):
                sent = [packed(x, fill) if k in which else x for k, x in enumerate(dense)]
                cases.append((mark(ring, which, fill), sent, ref_kernel(ring, *dense)))
    a = np.where(rng.random(12) < 0.5, rng.normal(size=12), np.inf)
    cases.append((mark("neg;sum;1;12;1", (0,), np.inf), [packed(a, np.inf)], -a))
    return cases


SPARSE = _sparse_cases()


def _big_cases() -> list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """(id, spec, a, b, NumPy's result) of products big enough for the kernels to split
    over threads: dense ones cut into blocks of rows (more rows) or of columns (more
    columns), with b as given or transposed; a packed matrix x dense cut into ranges of
    rows ("if": rows write disjoint parts of the result), or not ("f": every row sums into
    one; "fi": rows interleave)."""
    rng = np.random.default_rng(6)
    cases = []
    for m, k, n in [(600, 500, 40), (40, 500, 600)]:
        a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
        for transposed in (False, True):
            strides = f"0,{k},1" if transposed else f"0,1,{n}"
            cases.append((f"gemm-{m}x{k}x{n}{'-bt' if transposed else ''}",
                          f"mul;sum;2;{m},{n},{k};{k},0,1;{strides}", a.ravel(),
                          (b.T if transposed else b).ravel(), (a @ b).ravel()))
    n, f, nnz = 3000, 64, 120_000
    coo = sp.coo_array((rng.normal(size=nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                       shape=(n, n)).tocsr().tocoo()
    h = rng.normal(size=(n, f))
    payload = np.concatenate([(coo.row.astype(np.int64) * n + coo.col).astype(np.float64), coo.data])
    product = coo.tocsr() @ h
    for out, spec, want in [("if", f"mul;sum;2;{n},{f},{n};~{n},0,1;0,1,{f}", product.ravel()),
                            ("f", f"mul;sum;1;{f},{n},{n};~0,{n},1;1,0,{f}", product.sum(axis=0)),
                            ("fi", f"mul;sum;2;{f},{n},{n};~0,{n},1;1,0,{f}", product.T.ravel())]:
        cases.append((f"packed-{out}", spec, payload, h.ravel(), want))
    # the dense matrix transposed: read along the result's rows with a stride, which the
    # kernel copies into rows of its own first (and "fi" writes a transposed result, which
    # it computes in rows of its own and copies back)
    for out, spec, want in [("if", f"mul;sum;2;{n},{f},{n};~{n},0,1;0,{n},1", product.ravel()),
                            ("f", f"mul;sum;1;{f},{n},{n};~0,{n},1;{n},0,1", product.sum(axis=0)),
                            ("fi", f"mul;sum;2;{f},{n},{n};~0,{n},1;{n},0,1", product.T.ravel())]:
        cases.append((f"packed-{out}-ht", spec, payload, h.T.ravel(), want))
    # min of sums over the stored entries of a packed matrix (absent: inf), rows in ranges
    best = np.full((n, f), np.inf)
    np.minimum.at(best, coo.row, coo.data[:, None] + h[coo.col])
    cases.append(("packed-if-min-plus", f"add;min;2;{n},{f},{n};~inf:{n},0,1;0,1,{f}", payload,
                  h.ravel(), best.ravel()))
    return cases


BIG = _big_cases()


def bad_offset(payload: np.ndarray, size: int) -> np.ndarray:
    """A packed payload with an offset outside `size` near its end (in a late range)."""
    bad = payload.copy()
    bad[len(payload) // 2 - 5] = float(size)
    return bad


def fused_reference(text: str, leaves: list) -> np.ndarray | None:
    """A NumPy reading of a fused spec: each operation over its operands (an absent one
    zeros), its result absent by its rule."""
    _, n, _, tokens = text.split(";")
    stack = []
    for token in tokens.split(","):
        if token.startswith("$"):
            value = leaves[int(token[1:])]
            stack.append((value is not None, np.zeros(int(n)) if value is None
                          else np.broadcast_to(np.asarray(value, float), int(n))))
            continue
        code, rule = token.split("@")
        op, c = split_code(code)
        args = [stack.pop() for _ in range(2 if op.kind == BINARY else 1)][::-1]
        present = (True if rule == "f" else all(p for p, _ in args) if rule == "j"
                   else any(args[int(k)][0] for k in rule[1:]))
        with np.errstate(all="ignore"):
            value = op.numpy(*(v for _, v in args), *(() if c is None else (c,)))
        stack.append((present, value if present else np.zeros(int(n))))
    present, value = stack.pop()
    return value if present else None


FUSED = [   # (spec, leaves): leaves None where absent, a float for a scalar
    ("fused;5;5,5;$0,mulc:0.9@j,$1,mulc:0.1@j,add@u01", [np.arange(5.0), np.ones(5)]),
    ("fused;5;5,5;$0,mulc:0.9@j,$1,mulc:0.1@j,add@u01", [None, np.ones(5)]),
    ("fused;5;5,5;$0,mulc:0.9@j,$1,mulc:0.1@j,add@u01", [None, None]),
    ("fused;5;5,5,1,1;$0,$1,sqrt@j,$2,div@f,addc:1e-08@f,div@f,$3,mul@u0",
     [np.arange(5.0) - 2, np.arange(5.0), 0.5, 0.01]),
    ("fused;5;5,5,1,1;$0,$1,sqrt@j,$2,div@f,addc:1e-08@f,div@f,$3,mul@u0",
     [None, None, 0.5, None]),
    ("fused;5;5,5;$0,$1,mul@j,relu@f", [np.array([1.0, -2, np.inf, 0, 3]), None]),
    ("fused;5;5,5;$0,$1,mul@u0,exp@f", [np.array([1.0, -2, np.inf, 0, 3]), None]),
    ("fused;5;5,5;$0,$1,sub@u1,neg@j,powc:2.0@j", [None, np.array([1.0, np.nan, -3, 4, 5])]),
    ("fused;300;300,300;$0,$0,mul@j,$1,div@j,step@f,minc:0.5@f",
     [np.linspace(-1, 1, 300), np.linspace(1, 2, 300)]),     # more than one chunk of 128
]
