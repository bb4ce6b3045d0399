"""Compile a planned DAG into steps: input loads and one SQL statement per vertex
(plus repartitions), following sections 5 and 6 of the paper.

Dialect differences (kernel calls, list aggregates, ranges) live in `Dialect`
subclasses; this module only arranges joins, domains and groupings.
"""
from __future__ import annotations

import uuid
from math import prod

from ..kernels.build import stack_spec, take_spec, vertex_kernel
from ..kernels.spec import GatherSpec, KernelSpec
from ..plan import Plan
from ..program.dag import Dag, Vertex
from .relations import KernelUse, RelInfo, Step


class Dialect:
    """SQL that differs between engines. Subclasses fill in the kernel calls."""
    name = "generic"
    param = "?"           # bound-parameter marker of the driver

    def q(self, ident: str) -> str:
        return '"' + ident.replace('"', '""') + '"'

    temporary = False     # intermediates as TEMP tables (compiled jobs)

    def num(self, c: float) -> str:
        return f"CAST('{float(c)!r}' AS DOUBLE PRECISION)"

    def create(self, table: str, select: str) -> str:
        kind = "TEMP TABLE" if self.temporary else "TABLE"
        return f"CREATE {kind} {self.q(table)} AS {select}"

    def range_from(self, n: int, column: str) -> str:
        raise NotImplementedError

    def zero(self, size: int | None) -> str:
        raise NotImplementedError

    def scalar_unary(self, code: str, x: str) -> str:
        name, _, c = code.partition(":")
        c = self.num(float(c)) if c else ""
        return {
            "id": "{x}", "neg": "(-{x})", "relu": "greatest({x}, 0.0)", "exp": "exp({x})",
            "log": "ln({x})", "sqrt": "sqrt({x})", "sigmoid": "(1.0 / (1.0 + exp(-{x})))",
            "tanh": "tanh({x})", "abs": "abs({x})", "mulc": "({x} * {c})", "addc": "({x} + {c})",
            "subc": "({x} - {c})", "rsubc": "({c} - {x})", "divc": "({x} / {c})",
            "rdivc": "({c} / {x})", "maxc": "greatest({x}, {c})", "minc": "least({x}, {c})",
            "powc": "power({x}, {c})",
        }[name].format(x=x, c=c)

    def idiv(self, a: str, b: int) -> str:
        """Integer division."""
        return f"({a} // {int(b)})"

    def scalar_binary(self, op: str, a: str, b: str) -> str:
        return f"({a} {dict(mul='*', add='+', sub='-', div='/')[op]} {b})"

    # kernels: return SQL expressions; may record KernelUse in `step`
    def kernel(self, step: "StepBuilder", spec: KernelSpec, args: list[str],
               lists: list[bool], constant: tuple[int, RelInfo] | None = None) -> str:
        raise NotImplementedError

    def aggregate(self, step: "StepBuilder", agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        """Aggregate list values element-wise; where count < expected, combine with 0."""
        raise NotImplementedError

    def explode(self, step: "StepBuilder", spec: GatherSpec, table: str, kept: list[str]) -> str:
        """SELECT of one row per piece of each value of `table` (alias r): the `kept`
        columns, ``p`` (the piece's position, row-major over spec.new_dims) and ``val``
        (the piece: a scalar, or a sub-tensor that is NULL when all zero)."""
        raise NotImplementedError

    def stack(self, step: "StepBuilder", spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        """Aggregate expression scattering sub-tensors into a zero tensor."""
        raise NotImplementedError

    def broadcast_constants(self) -> bool:
        """Bind single-tuple operands into the kernel instead of joining them."""
        return False


class StepBuilder:
    """Collects the kernels one step needs and names them uniquely."""

    def __init__(self, prefix: str, counter: list[int]):
        self.prefix, self.counter, self.kernels = prefix, counter, []

    def use(self, kind: str, spec, lists: tuple[bool, ...], returns_list: bool, **kw) -> str:
        self.counter[0] += 1
        name = f"{self.prefix}_f{self.counter[0]}"
        self.kernels.append(KernelUse(name, kind, spec, lists, returns_list, **kw))
        return name


class Compiler:
    """Turns (dag, plan) into steps for one dialect. Table names are unique per run."""

    def __init__(self, dag: Dag, plan: Plan, dialect: Dialect, prefix: str | None = None,
                 stored_inputs: dict[str, RelInfo] | None = None):
        self.dag, self.plan, self.d = dag, plan, dialect
        self.prefix = prefix or f"se_{uuid.uuid4().hex[:10]}"
        self.steps: list[Step] = []
        self.relations: dict[tuple[str, tuple[int, ...]], RelInfo] = {}
        self.stored = stored_inputs or {}
        self._tables = 0
        self._kernels = [0]

    # -- relations ----------------------------------------------------------
    def _new_rel(self, tensor: str, axes: tuple[int, ...]) -> RelInfo:
        self._tables += 1
        labels = self.dag.labels_of(tensor)
        return RelInfo(table=f"{self.prefix}_t{self._tables}", tensor=tensor,
                       shape=self.dag.shapes[tensor], axes=tuple(sorted(axes)),
                       columns=tuple(labels[a] for a in sorted(axes)))

    def relation(self, tensor: str, axes: tuple[int, ...]) -> RelInfo:
        """The relation of `tensor` decomposed by `axes`, loading or repartitioning as needed."""
        key = (tensor, tuple(sorted(axes)))
        if key in self.relations:
            return self.relations[key]
        if tensor in self.dag.inputs and tensor not in self.stored:
            rel = self._new_rel(tensor, key[1])
            self.steps.append(Step("load", rel, label=f"load {tensor}"))
        else:
            have = self.stored[tensor].axes if tensor in self.stored else \
                self.plan.output_axes(self.dag.vertex(tensor))
            rel = self._repartition(self.relation(tensor, have), key[1])
        self.relations[key] = rel
        return rel

    def compile(self) -> list[Step]:
        for tensor, rel in self.stored.items():
            self.relations[(tensor, rel.axes)] = rel
        for v in self.dag.vertices:
            inputs = [self.relation(o.tensor, self.plan.operand_axes(v, o)) for o in v.operands]
            out = self._new_rel(v.name, self.plan.output_axes(v))
            builder = StepBuilder(self.prefix, self._kernels)
            sql = self._vertex_sql(v, inputs, out, builder)
            self.steps.append(Step("sql", out, sql, builder.kernels, self.plan.uclc(v), v.name))
            self.relations[(v.name, out.axes)] = out
        return self.steps

    def outputs(self) -> dict[str, RelInfo]:
        result = {}
        for name in self.dag.outputs:
            if name in self.dag.inputs:
                result[name] = self.relation(name, ())
            else:
                result[name] = self.relation(name, self.plan.output_axes(self.dag.vertex(name)))
        return result

    # -- one vertex ---------------------------------------------------------
    def _vertex_sql(self, v: Vertex, inputs: list[RelInfo], out: RelInfo, b: StepBuilder) -> str:
        d, q = self.d, self.d.q
        up = self.plan.labels(v)
        sizes = self.dag.label_sizes(v)
        aliases = [f"u{k}" for k in range(len(inputs))]
        constant = self._constant_operand(v, inputs)
        joined = [k for k in range(len(inputs)) if k != constant]

        # where each promoted label comes from, and the equalities it imposes
        source: dict[str, str] = {}
        conds: dict[int, list[str]] = {k: [] for k in joined}
        for k in joined:
            for axis, label in enumerate(v.operands[k].labels):
                if label not in up:
                    continue
                col = f"{aliases[k]}.{q(inputs[k].column(axis))}"
                if label in source:
                    conds[k].append(f"{col} = {source[label]}")
                else:
                    source[label] = col
        promoted = [l for l in v.all_labels if l in up]

        if v.annihilates:
            first = joined[0]
            frm = f"{q(inputs[first].table)} AS {aliases[first]}"
            where = list(conds[first])
            for k in joined[1:]:
                on = " AND ".join(conds[k]) if conds[k] else "TRUE"
                frm += f" JOIN {q(inputs[k].table)} AS {aliases[k]} ON {on}"
            values = [f"{aliases[k]}.val" for k in joined]
            full_domain = False
        else:
            frm, where, values, source = self._domain(v, inputs, aliases, promoted, sizes)
            full_domain = True

        spec = vertex_kernel(v, sizes, up)
        lists = [not inputs[k].is_scalar for k in joined]
        if not any(lists) and not spec.out_dims and not spec.dims:
            value = (d.scalar_binary(v.op, *values) if v.is_binary
                     else d.scalar_unary(v.op, values[0]))
        else:
            value = d.kernel(b, spec, values, lists,
                             None if constant is None else (constant, inputs[constant]))
        keys = [f"{source[l]} AS {q(l)}" for l in v.labels if l in up]
        key_names = [q(l) for l in v.labels if l in up]
        where_sql = f" WHERE {' AND '.join(where)}" if where else ""
        inner = f"SELECT {', '.join(keys + [value + ' AS val'])} FROM {frm}{where_sql}"
        agg_promoted = [l for l in v.agg_labels if l in up]
        if not agg_promoted:
            return d.create(out.table, inner)
        expected = 1 if (full_domain or v.agg == "sum") else prod(sizes[l] for l in agg_promoted)
        group = f" GROUP BY {', '.join(key_names)}" if key_names else ""
        if out.is_scalar:
            agg_value = f"{v.agg}(val)"
            if expected > 1:
                zero_op = "maxc:0.0" if v.agg == "max" else "minc:0.0"
                agg_value = (f"CASE WHEN count(*) < {expected} THEN "
                             f"{d.scalar_unary(zero_op, agg_value)} ELSE {agg_value} END")
        else:
            agg_value = d.aggregate(b, v.agg, "val", out.sub_size,
                                    "count(*)" if expected > 1 else None, expected)
        cols = ", ".join(key_names + [f"{agg_value} AS val"])
        return d.create(out.table, f"SELECT {cols} FROM ({inner}) AS j{group} HAVING count(*) > 0")

    def _constant_operand(self, v: Vertex, inputs: list[RelInfo]) -> int | None:
        """The operand of a product that is one array tuple joined to keyed tuples: it is
        bound into the kernel once instead of being passed with every row."""
        if not (self.d.broadcast_constants() and v.is_binary and v.op == "mul"):
            return None
        for k in (1, 0):
            if not inputs[k].axes and not inputs[k].is_scalar and inputs[1 - k].axes:
                return k
        return None

    def _domain(self, v: Vertex, inputs: list[RelInfo], aliases: list[str],
                promoted: list[str], sizes: dict[str, int]):
        """FROM clause over every key where a non-annihilating op can be non-zero."""
        d, q = self.d, self.d.q
        col = {l: f"k{n}" for n, l in enumerate(promoted)}

        def ranges(labels: list[str]) -> list[str]:
            return [d.range_from(sizes[l], col[l]) for l in labels]

        def keys_of(k: int) -> tuple[list[str], list[str]]:
            operand, rel = v.operands[k], inputs[k]
            seen: dict[str, str] = {}
            where = []
            for axis, label in enumerate(operand.labels):
                if label in col:
                    c = f"{q(rel.column(axis))}"
                    if label in seen:
                        where.append(f"{c} = {seen[label]}")
                    else:
                        seen[label] = c
            return [f"{c} AS {col[l]}" for l, c in seen.items()], where

        own = [[l for l in promoted if l in v.operands[k].labels] for k in range(len(inputs))]
        if not v.is_binary or v.op == "div":
            domain_labels = promoted if v.is_binary else own[0]
            parts = ranges(domain_labels)
            domain = ("(SELECT " + ", ".join(col[l] for l in domain_labels) + " FROM "
                      + " CROSS JOIN ".join(parts) + ")") if parts else "(SELECT 1 AS one)"
        else:
            selects = []
            for k in range(2):
                key_cols, where = keys_of(k)
                other = [l for l in promoted if l not in own[k]]
                cols = [col[l] for l in promoted]
                inner_cols = ", ".join(key_cols) if key_cols else "1 AS one"
                sub = f"(SELECT {inner_cols} FROM {q(inputs[k].table)}"
                sub += (f" WHERE {' AND '.join(where)})" if where else ")") + f" AS s{k}"
                frm = " CROSS JOIN ".join([sub] + ranges(other))
                selects.append(f"SELECT {', '.join(cols) if cols else '1 AS one'} FROM {frm}")
            domain = f"({' UNION '.join(selects)})"
        frm = f"{domain} AS dom"
        values = []
        for k, rel in enumerate(inputs):
            conds = [f"{aliases[k]}.{q(rel.column(axis))} = dom.{col[label]}"
                     for axis, label in enumerate(v.operands[k].labels) if label in col]
            frm += f" LEFT JOIN {q(rel.table)} AS {aliases[k]} ON {' AND '.join(conds) or 'TRUE'}"
            values.append(f"coalesce({aliases[k]}.val, {d.zero(None if rel.is_scalar else rel.sub_size)})")
        source = {l: f"dom.{col[l]}" for l in promoted}
        return frm, [], values, source

    # -- repartition --------------------------------------------------------
    def _repartition(self, rel: RelInfo, target: tuple[int, ...]) -> RelInfo:
        """Decompose on the union of promoted axes, then stack back (section 6)."""
        union = tuple(sorted(set(rel.axes) | set(target)))
        if union != rel.axes:
            rel = self._decompose(rel, union)
            self.relations[(rel.tensor, rel.axes)] = rel
        if union != tuple(target):
            rel = self._stack(rel, tuple(target))
        return rel

    def _decompose(self, rel: RelInfo, union: tuple[int, ...]) -> RelInfo:
        """Split each value along the newly promoted axes; drop all-zero pieces."""
        d, q = self.d, self.d.q
        new = tuple(a for a in union if a not in rel.axes)
        out = self._new_rel(rel.tensor, union)
        spec = take_spec(rel.shape, rel.axes, new)
        b = StepBuilder(self.prefix, self._kernels)
        kept = [f"r.{q(rel.column(a))} AS {q(out.column(a))}" for a in rel.axes]
        pieces = d.explode(b, spec, q(rel.table), kept)       # columns: kept, p, val
        steps = [prod(spec.new_dims[k + 1:]) for k in range(len(new))]
        keys = [q(out.column(a)) if a in rel.axes else
                f"{d.idiv('p', s)} % {rel.shape[a]} AS {q(out.column(a))}"
                for a, s in zip(union, [steps[new.index(a)] if a in new else 0 for a in union])]
        sql = d.create(out.table, f"SELECT {', '.join(keys + ['val'])} FROM ({pieces}) AS t "
                                  "WHERE val IS NOT NULL" + ("" if spec.sub_dims else " AND val <> 0"))
        self.steps.append(Step("sql", out, sql, b.kernels,
                               f"decompose {rel.tensor} by {self._axes_label(rel.tensor, union)}"))
        return out

    def _stack(self, rel: RelInfo, target: tuple[int, ...]) -> RelInfo:
        d, q = self.d, self.d.q
        moved = tuple(a for a in rel.axes if a not in target)
        out = self._new_rel(rel.tensor, target)
        spec = stack_spec(rel.shape, rel.axes, moved)
        b = StepBuilder(self.prefix, self._kernels)
        steps = [prod(spec.new_dims[k + 1:]) for k in range(len(moved))]
        position = " + ".join(f"{q(rel.column(a))} * {s}" for a, s in zip(moved, steps))
        value = d.stack(b, spec, "val", f"({position})", not rel.is_scalar)
        keys = [q(out.column(a)) for a in target]
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
        sql = d.create(out.table, f"SELECT {', '.join(keys + [value + ' AS val'])} "
                                  f"FROM {q(rel.table)}{group} HAVING count(*) > 0")
        self.steps.append(Step("sql", out, sql, b.kernels,
                               f"stack {rel.tensor} to {self._axes_label(rel.tensor, target)}"))
        return out

    def _axes_label(self, tensor: str, axes: tuple[int, ...]) -> str:
        labels = self.dag.labels_of(tensor)
        return f"{tensor}[{','.join(l.upper() if a in axes else l for a, l in enumerate(labels))}]"
