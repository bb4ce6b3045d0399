"""The one table of operations: every scalar operation of the language, as data.

Per operation: its NumPy function, its UCLC rendering, its scalar SQL (with per-dialect
overrides; None where the engine cannot evaluate it as NumPy does, so a kernel must),
and its C expression for the native kernels. Every stage reads this table; nothing else
lists operations.

An operation code in the DAG is a name (``relu``, ``mul``) or, for an operation with a
constant, ``name:c`` (``mulc:2.5``).
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
from scipy.special import expit

BINARY, UNARY, CONSTANT = "binary", "unary", "constant"
# How an operation treats zeros, which decides how missing tuples (zeros) are joined:
ANNIHILATES = "annihilates"   # binary: a zero operand gives zero (inner join)
FULL = "full"                 # every index of the domain (outer join, zeros filled in)


@dataclass(frozen=True)
class Op:
    """One scalar operation. Templates use {a} {b} (binary), {x} (unary) and {c}."""
    name: str
    kind: str                                # binary | unary | constant
    numpy: Callable
    uclc: str
    sql: str
    sql_by_dialect: Mapping[str, str | None] = field(default_factory=dict)
    c: str = ""                              # C expression of x, y and c
    symbol: str = ""                         # binary: the program's operator
    with_constant: tuple[str, str] = ("", "")  # binary: const ops for (x OP c, c OP x)
    bound: Callable[[float, float, float], float] = lambda a, b, c: INF   # of |f| from |x|, |y|, |c|
    keeps_finite: bool = False               # finite arguments give a finite result

    def sql_template(self, dialect: str) -> str | None:
        return self.sql_by_dialect.get(dialect, self.sql)


_POSTGRES_KERNEL = {"postgres": None}    # PostgreSQL raises where IEEE gives inf or nan
_DIVISION_KERNEL = {"postgres": None, "spark": None}    # Spark: an error or NULL on x / 0
INF = float("inf")
_SAME = dict(bound=lambda a, b, c: a, keeps_finite=True)
_UNIT = dict(bound=lambda a, b, c: 1.0, keeps_finite=True)


def _table(*ops: Op) -> dict[str, Op]:
    return {op.name: op for op in ops}


OPS: dict[str, Op] = _table(
    # binary operators, in the order of the C kernels' operation codes
    Op("mul", BINARY, np.multiply, "{a} * {b}", "({a} * {b})", c="x * y", symbol="*",
       with_constant=("mulc", "mulc"), bound=lambda a, b, c: a * b, keeps_finite=True),
    Op("add", BINARY, np.add, "{a} + {b}", "({a} + {b})", c="x + y", symbol="+",
       with_constant=("addc", "addc"), bound=lambda a, b, c: a + b, keeps_finite=True),
    Op("sub", BINARY, np.subtract, "{a} - {b}", "({a} - {b})", c="x - y", symbol="-",
       with_constant=("subc", "rsubc"), bound=lambda a, b, c: a + b, keeps_finite=True),
    Op("div", BINARY, np.divide, "{a} / {b}", "({a} / {b})", _DIVISION_KERNEL, c="x / y",
       symbol="/", with_constant=("divc", "rdivc")),
    # unary functions (id is internal: a statement that only renames or aggregates)
    Op("id", UNARY, lambda x: x, "{x}", "{x}", c="x", **_SAME),
    Op("neg", UNARY, np.negative, "neg({x})", "(-{x})", c="-x", **_SAME),
    Op("relu", UNARY, lambda x: np.maximum(x, 0), "relu({x})", "greatest({x}, 0)",
       c="(x < 0.0 ? 0.0 : x)", **_SAME),
    Op("exp", UNARY, np.exp, "exp({x})", "exp({x})", _POSTGRES_KERNEL, c="exp(x)"),
    Op("log", UNARY, np.log, "log({x})", "ln({x})",
       {"postgres": None, "spark": None,     # Spark: NULL for x <= 0
        "duckdb-builtin": "(CASE WHEN {x} > 0 THEN ln({x}) WHEN {x} = 0 "
        "THEN CAST('-inf' AS DOUBLE) ELSE CAST('nan' AS DOUBLE) END)"}, c="log(x)"),
    Op("sqrt", UNARY, np.sqrt, "sqrt({x})", "sqrt({x})",
       {"postgres": None, "duckdb-builtin": "(CASE WHEN {x} >= 0 THEN sqrt({x}) "
        "ELSE CAST('nan' AS DOUBLE) END)"}, c="sqrt(x)"),
    Op("sigmoid", UNARY, expit, "sigmoid({x})", "(1.0 / (1.0 + exp(-{x})))", _POSTGRES_KERNEL,
       c="1.0 / (1.0 + exp(-x))", **_UNIT),
    Op("tanh", UNARY, np.tanh, "tanh({x})", "tanh({x})", _POSTGRES_KERNEL, c="tanh(x)", **_UNIT),
    Op("abs", UNARY, np.abs, "abs({x})", "abs({x})", c="fabs(x)", **_SAME),
    # relu's derivative: 1 where x > 0, else 0 (NaN too, as PyTorch's relu gradient)
    Op("step", UNARY, lambda x: np.greater(x, 0).astype(np.float64), "step({x})",
       "CAST((CASE WHEN {x} > 0 AND NOT isnan({x}) THEN 1 ELSE 0 END) AS DOUBLE PRECISION)",
       {"postgres": "CAST((CASE WHEN {x} > 0 AND {x} <> 'NaN'::float8 THEN 1 ELSE 0 END) "
        "AS DOUBLE PRECISION)",
        "spark": "CAST((CASE WHEN {x} > 0 AND NOT isnan({x}) THEN 1 ELSE 0 END) AS DOUBLE)"},
       c="(x > 0.0 ? 1.0 : 0.0)", **_UNIT),
    # unary operations with a constant c (from `x * 2`, `1 - x`, aggregates' zeros)
    Op("mulc", CONSTANT, lambda x, c: x * c, "{x} * {c}", "({x} * {c})", c="x * c",
       bound=lambda a, b, c: a * c, keeps_finite=True),
    Op("addc", CONSTANT, lambda x, c: x + c, "{x} + {c}", "({x} + {c})", c="x + c",
       bound=lambda a, b, c: a + c, keeps_finite=True),
    Op("subc", CONSTANT, lambda x, c: x - c, "{x} - {c}", "({x} - {c})", c="x - c",
       bound=lambda a, b, c: a + c, keeps_finite=True),
    Op("rsubc", CONSTANT, lambda x, c: c - x, "{c} - {x}", "({c} - {x})", c="c - x",
       bound=lambda a, b, c: a + c, keeps_finite=True),
    Op("divc", CONSTANT, lambda x, c: x / c, "{x} / {c}", "({x} / {c})", _DIVISION_KERNEL,
       c="x / c"),
    Op("rdivc", CONSTANT, lambda x, c: c / x, "{c} / {x}", "({c} / {x})", _DIVISION_KERNEL,
       c="c / x"),
    Op("maxc", CONSTANT, np.maximum, "max({x}, {c})", "greatest({x}, {c})",
       c="((x > c || isnan(x)) ? x : c)", bound=lambda a, b, c: max(a, c), keeps_finite=True),
    Op("minc", CONSTANT, np.minimum, "min({x}, {c})", "least({x}, {c})",
       {"duckdb": "CASE WHEN isnan({x}) THEN {x} ELSE least({x}, {c}) END",
        "duckdb-builtin": "CASE WHEN isnan({x}) THEN {x} ELSE least({x}, {c}) END",
        "spark": "CASE WHEN isnan({x}) THEN {x} ELSE least({x}, {c}) END",
        "postgres": "CASE WHEN {x} = 'NaN'::float8 THEN {x} ELSE least({x}, {c}) END"},
       c="((x < c || isnan(x)) ? x : c)", bound=lambda a, b, c: max(a, c), keeps_finite=True),
    Op("powc", CONSTANT, np.power, "{x} ** {c}", "power({x}, {c})", _POSTGRES_KERNEL,
       c="pow(x, c)"),
)

FUNCTIONS = tuple(name for name, op in OPS.items() if op.kind == UNARY and name != "id")
"""Unary functions a program may call."""
BY_SYMBOL = {op.symbol: op for op in OPS.values() if op.kind == BINARY}


@dataclass(frozen=True)
class Aggregate:
    name: str
    numpy: Callable                  # reduce over axes
    pairwise: Callable               # ufunc combining two partial results
    clip_zero: str                   # the constant op folding in a missing zero
    identity: float                  # the value that changes no aggregate

    def clip(self, missing: float) -> str | None:
        """The constant op folding a missing term of value `missing` into a min or max
        (None where it changes nothing: the aggregate's identity)."""
        if missing == self.identity or self.name == "sum":
            return None
        return with_constant(self.clip_zero.partition(":")[0], missing)


AGGREGATES: dict[str, Aggregate] = {
    "sum": Aggregate("sum", np.sum, np.add, "", 0.0),
    "max": Aggregate("max", np.max, np.maximum, "maxc:0.0", -INF),
    "min": Aggregate("min", np.min, np.minimum, "minc:0.0", INF),
}

# (op, agg) -> the default of an operand whose absent entries make terms that are the
# aggregate's identity (0 in a sum of products, inf in a min of sums): a kernel over one
# packed operand of that default runs over its stored entries only (NumPy; the C core's
# and the JVM kernels' tables are generated from it: `c_header`, `java_ops`)
SPARSE_DRIVEN = {("mul", "sum"): 0.0, ("add", "min"): INF, ("add", "max"): -INF}


def split_code(code: str) -> tuple[Op, float | None]:
    """``mulc:2.5`` -> (the mulc Op, 2.5); ``relu`` -> (the relu Op, None)."""
    name, _, const = code.partition(":")
    return OPS[name], (float(const) if const else None)


def with_constant(name: str, c: float) -> str:
    return f"{name}:{float(c)!r}"


def numpy_function(code: str) -> Callable:
    """The NumPy function of a unary or constant operation code (one argument)."""
    op, c = split_code(code)
    if op.kind == CONSTANT:
        return lambda x: op.numpy(x, c)
    return op.numpy


def value_bound(code: str, a: float, b: float = 0.0) -> float:
    """A bound on |f| given bounds on the arguments' absolute values."""
    op, c = split_code(code)
    return op.bound(a, b, abs(c) if c is not None else 0.0)


def keeps_finite(code: str) -> bool:
    """Finite arguments give a finite result (NaN and inf cannot appear)."""
    op, c = split_code(code)
    return op.keeps_finite and (c is None or bool(np.isfinite(c)))


def preserves_zero(code: str) -> bool:
    """f(0) == 0: zeros stay zeros, so missing tuples stay missing."""
    op, _ = split_code(code)
    if op.kind == BINARY:
        return op.name == "mul"
    with np.errstate(all="ignore"):
        return bool(numpy_function(code)(np.zeros(1))[0] == 0.0)


# finite values an operand may hold, to test whether an absent operand decides a result
_PROBES = np.array([-3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.0, 7.0])


def element_default(code: str, defaults: tuple[float, ...]) -> float:
    """The value of an operation where every operand is absent (holds its default)."""
    with np.errstate(all="ignore"):
        return float(numpy_function(code)(defaults[0]) if len(defaults) == 1
                     else split_code(code)[0].numpy(*defaults))


def absorbs(code: str, defaults: tuple[float, ...], k: int) -> bool:
    """Operand `k` absent (its default) gives `element_default` whatever finite values the
    other operand holds (0 for a product, inf for a sum with default inf): tuples where
    operand `k` is absent need not be formed. Unary operations always absorb."""
    result = element_default(code, defaults)
    if len(defaults) == 1:
        return True
    args = [_PROBES, _PROBES]
    args[k] = np.full(len(_PROBES), defaults[k])
    with np.errstate(all="ignore"):
        found = split_code(code)[0].numpy(*args)
    return bool(np.all(found == result))


def render_uclc(code: str, *args: str) -> str:
    op, c = split_code(code)
    if op.kind == BINARY:
        return op.uclc.format(a=args[0], b=args[1])
    return op.uclc.format(x=args[0], c=c)


def render_sql(code: str, dialect: str, number: Callable[[float], str], *args: str) -> str | None:
    """Scalar SQL of an operation on `args`, or None where `dialect` needs a kernel."""
    op, c = split_code(code)
    template = op.sql_template(dialect)
    if template is None:
        return None
    if op.kind == BINARY:
        return template.format(a=args[0], b=args[1])
    return template.format(x=args[0], c=number(c) if c is not None else "")


def c_header() -> str:
    """``se_ops.h``: the operations as an X-macro for the C kernels (binary ones first)."""
    lines = ["/* Generated from sparse_einsum/program/ops.py by "
             "`python -m sparse_einsum.program.ops`: do not edit. */",
             "#ifndef SE_OPS_H", "#define SE_OPS_H", "",
             "/* name, expression of x (input a), y (input b) and c (constant) */",
             "#define SE_OPS(X) \\"]
    body = [f"\tX({op.name}, {op.c})" for op in OPS.values()]
    lines += [line + " \\" for line in body[:-1]] + [body[-1], ""]
    kinds = [op.kind for op in OPS.values()]
    lines += [f"#define SE_N_BINARY {kinds.count(BINARY)}",
              f"#define SE_FIRST_CONST OP_{next(o.name for o in OPS.values() if o.kind == CONSTANT)}",
              "", "/* op, aggregate and packed operand's default of the kernels that run over its",
              " * stored entries (SPARSE_DRIVEN) */", "#define SE_SPARSE_DRIVEN(X) \\"]
    body = [f"\tX({op}, SE_AGG_{agg.upper()}, {_c_number(fill)})"
            for (op, agg), fill in SPARSE_DRIVEN.items()]
    lines += [line + " \\" for line in body[:-1]] + [body[-1], "", "#endif", ""]
    return "\n".join(lines)


def _c_number(x: float) -> str:
    return {INF: "INFINITY", -INF: "-INFINITY"}.get(x, repr(float(x)))


_JAVA_CALLS = {"exp": "Math.exp", "log": "Math.log", "sqrt": "Math.sqrt", "tanh": "Math.tanh",
               "fabs": "Math.abs", "isnan": "Double.isNaN", "pow": "Math.pow"}


def java_ops() -> str:
    """``Ops.java``: the operations for the Spark JVM kernels (the C expressions, with the
    C library calls as java.lang.Math's), numbered as in se_ops.h."""
    def java(expr: str) -> str:
        return re.sub(r"\b(\w+)\(", lambda m: _JAVA_CALLS.get(m.group(1), m.group(1)) + "(", expr)
    ops = list(OPS.values())
    kinds = [op.kind for op in ops]
    lines = ["// Generated from sparse_einsum/program/ops.py by "
             "`python -m sparse_einsum.program.ops`: do not edit.",
             "package sparseeinsum.spark;", "",
             "/** The operations of the kernel specs (binary ones first), as in se_ops.h. */",
             "final class Ops {",
             f"    static final String[] NAMES = {{{', '.join(chr(34) + o.name + chr(34) for o in ops)}}};",
             f"    static final int N_BINARY = {kinds.count(BINARY)};",
             f"    static final int FIRST_CONST = {kinds.index(CONSTANT)};", "",
             "    private Ops() {", "    }", "",
             "    /** Operation `op` of x (input a), y (input b) and c (the constant). */",
             "    static double apply(int op, double x, double y, double c) {",
             "        switch (op) {"]
    lines += [f"            case {k}: return {java(op.c)};" for k, op in enumerate(ops)]
    lines += ["            default: throw new IllegalArgumentException(\"operation \" + op);",
              "        }", "    }", "",
              "    /** out[o + i] = operation `op` of a[oa + i * ia], b[ob + i * ib] and c, for i < n:",
              "     *  a loop per operation, without a switch per element (b unread by unary ones). */",
              "    static void row(int op, double[] a, int oa, int ia, double[] b, int ob, int ib, double c,",
              "                    double[] out, int o, int n) {",
              "        switch (op) {"]
    for k, op in enumerate(ops):
        lines += [f"            case {k}:",
                  "                for (int i = 0; i < n; i++) {",
                  "                    double x = a[oa + i * ia];"]
        if op.kind == BINARY:
            lines += ["                    double y = b[ob + i * ib];"]
        lines += [f"                    out[o + i] = {java(op.c)};", "                }",
                  "                return;"]
    lines += ["            default: throw new IllegalArgumentException(\"operation \" + op);",
              "        }", "    }", "",
              "    /** Whether a kernel over one packed operand of default `fill` runs over its",
              "     *  stored entries (SPARSE_DRIVEN; aggregates numbered sum, max, min). */",
              "    static boolean sparseDriven(int op, int agg, double fill) {"]
    java_fill = {INF: "Double.POSITIVE_INFINITY", -INF: "Double.NEGATIVE_INFINITY"}
    cases = [f"op == {[o.name for o in ops].index(op)} && agg == {list(AGGREGATES).index(agg)} "
             f"&& fill == {java_fill.get(fill, repr(float(fill)))}"
             for (op, agg), fill in SPARSE_DRIVEN.items()]
    lines += ["        return " + "\n            || ".join(cases) + ";", "    }", "}", ""]
    return "\n".join(lines)


if __name__ == "__main__":     # regenerate se_ops.h and the Spark kernels' Ops.java
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "udf_kernels"
    for target, text in ((root / "common" / "se_ops.h", c_header()),
                         (root / "spark" / "src" / "sparseeinsum" / "spark" / "Ops.java",
                          java_ops())):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"wrote {target}")
