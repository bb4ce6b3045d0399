"""Compile a planned DAG into steps: input loads and one SQL statement per vertex
(plus repartitions), following sections 5 and 6 of the paper.

Dialect differences (kernel calls, list aggregates, ranges) live in the `Dialect`
classes; this module only arranges joins, domains and groupings.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from math import prod

from ..kernels.build import stack_spec, take_spec, vertex_kernel
from ..plan import Plan
from ..program.dag import Dag, Vertex
from .dialect import Dialect
from .steps import Step, StepBuilder, TableRelation


@dataclass
class CompiledPlan:
    """The steps of a plan and the relation each output ends up in."""
    steps: list[Step]
    outputs: dict[str, TableRelation]


def compile_plan(dag: Dag, plan: Plan, dialect: Dialect, *, prefix: str | None = None,
                 stored: dict[str, TableRelation] | None = None, temporary: bool = False,
                 relational_outputs: bool = False) -> CompiledPlan:
    """Steps for `plan` in `dialect`; inputs in `stored` are read from their tables, the
    others loaded. With `relational_outputs`, every output ends fully promoted (one key
    column per label, as compiled jobs write them)."""
    compiler = Compiler(dag, plan, dialect, prefix, stored, temporary)
    compiler.compile()
    if relational_outputs:
        outputs = {n: compiler.relation(n, tuple(range(len(dag.shapes[n])))) for n in dag.outputs}
    else:
        outputs = compiler.outputs()
    return CompiledPlan(compiler.steps, outputs)


class Compiler:
    """Turns (dag, plan) into steps for one dialect. Table names are unique per run;
    `temporary` makes every intermediate a TEMP table (compiled jobs)."""

    def __init__(self, dag: Dag, plan: Plan, dialect: Dialect, prefix: str | None = None,
                 stored_inputs: dict[str, TableRelation] | None = None, temporary: bool = False):
        self.dag, self.plan, self.d = dag, plan, dialect
        self.temporary = temporary
        self.prefix = prefix or f"se_{uuid.uuid4().hex[:10]}"
        self.steps: list[Step] = []
        self.relations: dict[tuple[str, tuple[int, ...]], TableRelation] = {}
        self.stored = stored_inputs or {}
        self._tables = 0
        self._kernels = [0]

    # -- relations ----------------------------------------------------------
    def _new_rel(self, tensor: str, axes: tuple[int, ...]) -> TableRelation:
        self._tables += 1
        labels = self.dag.labels_of(tensor)
        return TableRelation(table=f"{self.prefix}_t{self._tables}", tensor=tensor,
                       shape=self.dag.shapes[tensor], axes=tuple(sorted(axes)),
                       columns=tuple(labels[a] for a in sorted(axes)))

    def relation(self, tensor: str, axes: tuple[int, ...]) -> TableRelation:
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

    def _create(self, table: str, select: str) -> str:
        return self.d.create(table, select, self.temporary)

    def outputs(self) -> dict[str, TableRelation]:
        result = {}
        for name in self.dag.outputs:
            if name in self.dag.inputs:
                result[name] = self.relation(name, ())
            else:
                result[name] = self.relation(name, self.plan.output_axes(self.dag.vertex(name)))
        return result

    # -- one vertex ---------------------------------------------------------
    def _vertex_sql(self, v: Vertex, inputs: list[TableRelation], out: TableRelation, b: StepBuilder) -> str:
        d, q = self.d, self.d.q
        up = self.plan.promoted_labels(v)
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
        agg_promoted = [l for l in v.agg_labels if l in up]
        # a sum of scalar * vector products the engine adds up without forming them
        fused = (d.weighted_sum(spec, values, lists)
                 if agg_promoted and v.agg == "sum" and not out.is_scalar and constant is None
                 else None)
        if fused:
            columns = fused[0]
        elif not any(lists) and not spec.out_dims and not spec.dims:
            columns = {"val": d.scalar_binary(v.op, *values) if v.is_binary
                       else d.scalar_unary(v.op, values[0])}
        else:
            columns = {"val": d.kernel(b, spec, values, lists,
                                       None if constant is None else (constant, inputs[constant]))}
        keys = [f"{source[l]} AS {q(l)}" for l in v.labels if l in up]
        key_names = [q(l) for l in v.labels if l in up]
        where_sql = f" WHERE {' AND '.join(where)}" if where else ""
        selected = keys + [f"{expr} AS {name}" for name, expr in columns.items()]
        inner = f"SELECT {', '.join(selected)} FROM {frm}{where_sql}"
        if not agg_promoted:
            return self._create(out.table, inner)
        expected = 1 if (full_domain or v.agg == "sum") else prod(sizes[l] for l in agg_promoted)
        group = f" GROUP BY {', '.join(key_names)}" if key_names else ""
        if fused:
            agg_value = fused[1]
        elif out.is_scalar:
            agg_value = f"{v.agg}(val)"
            if expected > 1:
                zero_op = "maxc:0.0" if v.agg == "max" else "minc:0.0"
                agg_value = (f"CASE WHEN count(*) < {expected} THEN "
                             f"{d.scalar_unary(zero_op, agg_value)} ELSE {agg_value} END")
        else:
            agg_value = d.aggregate(b, v.agg, "val", out.sub_size,
                                    "count(*)" if expected > 1 else None, expected)
        cols = ", ".join(key_names + [f"{agg_value} AS val"])
        return self._create(out.table, f"SELECT {cols} FROM ({inner}) AS j{group} HAVING count(*) > 0")

    def _constant_operand(self, v: Vertex, inputs: list[TableRelation]) -> int | None:
        """The operand of a product that is one array tuple joined to keyed tuples: it is
        bound into the kernel once instead of being passed with every row."""
        if not (self.d.broadcast_constants and v.is_binary and v.op == "mul"):
            return None
        for k in (1, 0):
            if not inputs[k].axes and not inputs[k].is_scalar and inputs[1 - k].axes:
                return k
        return None

    def _domain(self, v: Vertex, inputs: list[TableRelation], aliases: list[str],
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
    def _repartition(self, rel: TableRelation, target: tuple[int, ...]) -> TableRelation:
        """Decompose on the union of promoted axes, then stack back (section 6)."""
        union = tuple(sorted(set(rel.axes) | set(target)))
        if union != rel.axes:
            rel = self._decompose(rel, union)
            self.relations[(rel.tensor, rel.axes)] = rel
        if union != tuple(target):
            rel = self._stack(rel, tuple(target))
        return rel

    def _decompose(self, rel: TableRelation, union: tuple[int, ...]) -> TableRelation:
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
        sql = self._create(out.table, f"SELECT {', '.join(keys + ['val'])} FROM ({pieces}) AS t "
                                  "WHERE val IS NOT NULL" + ("" if spec.sub_dims else " AND val <> 0"))
        self.steps.append(Step("sql", out, sql, b.kernels,
                               f"decompose {rel.tensor} by {self._axes_label(rel.tensor, union)}"))
        return out

    def _stack(self, rel: TableRelation, target: tuple[int, ...]) -> TableRelation:
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
        sql = self._create(out.table, f"SELECT {', '.join(keys + [value + ' AS val'])} "
                                  f"FROM {q(rel.table)}{group} HAVING count(*) > 0")
        self.steps.append(Step("sql", out, sql, b.kernels,
                               f"stack {rel.tensor} to {self._axes_label(rel.tensor, target)}"))
        return out

    def _axes_label(self, tensor: str, axes: tuple[int, ...]) -> str:
        labels = self.dag.labels_of(tensor)
        return f"{tensor}[{','.join(l.upper() if a in axes else l for a, l in enumerate(labels))}]"
