"""Compile a planned DAG into steps: input loads and one SQL statement per vertex
(plus repartitions), following sections 5 and 6 of the paper.

Dialect differences (kernel calls, list aggregates, ranges) live in the `Dialect`
classes; this module only arranges joins, domains and groupings.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from math import prod

from ..kernels.build import stack_spec, take_spec, vertex_kernel
from ..kernels.spec import KernelSpec
from ..plan import Plan, recomputed
from ..tiling import Tiling, key_range, middle_tiling, payload_axes, render, stacks_scalars
from ..program.dag import Dag, Vertex
from ..program.ops import AGGREGATES, absorbs
from .chains import Chain, Presence, chain_formula, chain_query, chained, presence
from .dialect import Dialect, OrZero
from .factor import FACTOR, scalar_factors
from .nested import Formula, Read, formula, nested_query
from .pipeline import kernel_constants, pipeline
from .shared import share
from .steps import Step, StepBuilder, TableRelation, invariant


@dataclass
class CompiledPlan:
    """The steps of a plan and the relation each output ends up in."""
    steps: list[Step]
    outputs: dict[str, TableRelation]
    factored: frozenset[str] = frozenset()     # vertices passed through with a scalar factor
    # the tensors whose absent entries are not 0, and their value (`Dag.defaults`)
    defaults: dict[str, float] = field(default_factory=dict)
    # tables holding several outputs side by side (`Combined`), left in the engine by a run:
    # the relation each ends in, and per column the column of that relation's table that
    # holds it (another name where it is a shared statement's table: `compile_plan`)
    combined: dict[str, TableRelation] = field(default_factory=dict)
    combined_columns: dict[str, dict[str, str]] = field(default_factory=dict)
    read_in_place: frozenset[str] = frozenset()     # the tables of the stored inputs

    def statements(self) -> list[Step]:
        """Every SQL statement as compiled, those pipelined into a step (computed inside its
        statement) before it."""
        return [s for step in self.steps if step.kind == "sql" for s in (*step.pipelined, step)]


def _grouped(group: str) -> str:
    """The GROUP BY clause of an aggregate; without one, the aggregate of no rows gives
    no row (as a GROUP BY does), not one of NULL."""
    return group or " HAVING count(*) > 0"


@dataclass(frozen=True)
class Combined:
    """A table holding outputs of one shape side by side, tiled by `tiling`: their key
    columns, then one value column per output (`columns`: column -> output); a key where
    an output has no tuple holds its zero (`combined_query`). Written by one statement (the
    outputs' own statements are streamed into it), e.g. a parameter with its optimizer
    state."""
    tiling: Tiling
    columns: dict[str, str]


def compile_plan(dag: Dag, plan: Plan, dialect: Dialect, *, prefix: str | None = None,
                 stored: dict[str, TableRelation] | None = None, temporary: bool = False,
                 relational_outputs: bool = False, nonfinite: frozenset[str] = frozenset(),
                 combined: dict[str, Combined] | None = None, combined_shared: bool = False,
                 resident: bool = False, whole: frozenset[str] = frozenset()) -> CompiledPlan:
    """Steps for `plan` in `dialect`; inputs in `stored` are read from their tables (those
    of `whole` hold exactly one tuple), the others loaded. With `relational_outputs`, every
    output ends fully promoted (one key column per label, as compiled jobs write them).
    Products with a tensor in `nonfinite` (one that may hold NaN or inf) also see the zeros
    of the other operand, as NumPy does: 0 * NaN is NaN. The outputs in `combined` (table
    name -> `Combined`) end in those tables, which a run leaves in the engine, instead of
    being fetched; with `combined_shared`, in columns of a shared statement's table instead
    where their statement joins one (`CompiledPlan.combined_columns` says which). With
    `resident`, the caller keeps the tables of `steps.invariant` across runs (`execute`'s
    `resident`): those statements share none. Intermediates read by one statement are
    streamed into it (`pipeline`)."""
    compiler = Compiler(dag, plan, dialect, prefix, stored, temporary, nonfinite, whole)
    compiler.compile()
    together = {table: compiler.combine(table, spec) for table, spec in (combined or {}).items()}
    inside = {tensor for spec in (combined or {}).values() for tensor in spec.columns.values()}
    if relational_outputs:
        outputs = {n: compiler.relation(n, (1,) * len(dag.shapes[n])) for n in dag.outputs
                   if n not in inside}
    else:
        outputs = {n: rel for n, rel in compiler.outputs().items() if n not in inside}
    read_in_place = frozenset(rel.table for rel in (stored or {}).values())
    fetched = {rel.table for rel in outputs.values()}
    steps = pipeline(compiler.steps, read_in_place | set(together) | fetched, dialect,
                     temporary, frozenset(together))
    columns = {table: {c: c for c in spec.columns} for table, spec in (combined or {}).items()}
    if dialect.capabilities.nested_calls:
        # what may move into a shared statement's table, and what stays as it is: tables
        # read in place or bound as kernel constants, and those the caller keeps
        movable = fetched | set(together) if combined_shared else fetched
        kept = read_in_place | kernel_constants(steps) | (set(together) - movable)
        if resident:
            kept |= invariant(steps, read_in_place, fetched | set(together))
        steps, moved = share(steps, kept, movable, dialect, temporary)
        for name, rel in outputs.items():
            if (rel.table, rel.value) in moved:      # a column of a shared statement's table
                table, value = moved[rel.table, rel.value]
                outputs[name] = replace(rel, table=table, value=value)
        for name, rel in together.items():
            for column in columns[name]:
                if (name, column) in moved:
                    table, columns[name][column] = moved[name, column]
                    together[name] = replace(rel, table=table, tensor=table)
    return CompiledPlan(steps, outputs, frozenset(compiler.factors), dag.defaults(), together,
                        columns, read_in_place)


class Compiler:
    """Turns (dag, plan) into steps for one dialect. Table names are unique per run;
    `temporary` makes every intermediate a TEMP table (compiled jobs)."""

    def __init__(self, dag: Dag, plan: Plan, dialect: Dialect, prefix: str | None = None,
                 stored_inputs: dict[str, TableRelation] | None = None, temporary: bool = False,
                 nonfinite: frozenset[str] = frozenset(), whole: frozenset[str] = frozenset()):
        self.dag, self.plan, self.d = dag, plan, dialect
        self.temporary, self.nonfinite = temporary, nonfinite
        self.prefix = prefix or f"se_{uuid.uuid4().hex[:10]}"
        self.steps: list[Step] = []
        self.relations: dict[tuple[str, Tiling, bool], TableRelation] = {}
        self.stored = stored_inputs or {}
        self._tables = 0
        self._kernels = [0]
        # products passed through with a scalar factor beside them (`sql.factor`)
        self.factors = scalar_factors(dag, plan, nonfinite)
        # element-wise vertices computed inside their reader's kernel call (`sql.chains`)
        self.chained = chained(dag, plan, set(self.factors)) \
            if dialect.capabilities.fused_chains else set()
        # the tables holding exactly one tuple: one-tuple loads (`blocks.decompose` keeps
        # it), those of `whole`, and what steps compute from such (`sql.nested`)
        self.whole = set(whole)

    # -- relations ----------------------------------------------------------
    def _new_rel(self, tensor: str, tiling: Tiling, sparse: bool = False) -> TableRelation:
        self._tables += 1
        return TableRelation(table=f"{self.prefix}_t{self._tables}", tensor=tensor,
                             shape=self.dag.shapes[tensor], tiling=tiling,
                             labels=self.dag.labels_of(tensor), sparse=sparse)

    def _broadcast(self, rel: TableRelation) -> TableRelation:
        """`rel`, read as a kernel's constant, a broadcast where the dialect makes it one
        and a statement of this plan computes it (that step is then stored, never
        streamed); inputs are made broadcasts when loaded."""
        if rel.broadcast or not self.d.broadcasts(rel):
            return rel           # other engines, and arrays under the size
        producer = next((n for n, s in enumerate(self.steps)
                         if s.kind == "sql" and s.target.table == rel.table), None)
        if producer is None:
            return rel
        shared = replace(rel, broadcast=True)
        self.steps[producer] = replace(self.steps[producer], target=shared)
        self.relations = {key: shared if r.table == rel.table else r
                          for key, r in self.relations.items()}
        return shared

    def relation(self, tensor: str, tiling: Tiling, sparse: bool = False) -> TableRelation:
        """The relation of `tensor` tiled by `tiling` with dense or sparse payloads,
        loading, repartitioning or converting as needed."""
        key = (tensor, tiling, sparse)
        if key in self.relations:
            return self.relations[key]
        if tensor in self.dag.inputs and tensor not in self.stored:
            rel = self._new_rel(tensor, tiling, sparse)
            rel = replace(rel, broadcast=True) if self.d.broadcasts(rel) else rel
            self.steps.append(Step("load", rel, label=f"load {tensor}"))
            if not rel.keyed and prod(rel.shape):
                self.whole.add(rel.table)
        else:
            have = self.stored[tensor].tiling if tensor in self.stored else \
                self.plan.output_tiling(self.dag.vertex(tensor))
            if sparse and self.d.capabilities.packed_stacks and stacks_scalars(have, tiling):
                rel = self._stack(self.relation(tensor, middle_tiling(have, tiling)), tiling,
                                  packed=True)
            elif sparse:
                rel = self._sparsify(self.relation(tensor, tiling))
            else:
                rel = self._repartition(self.relation(tensor, have), tiling)
        self.relations[key] = rel
        return rel

    def compile(self) -> list[Step]:
        for tensor, rel in self.stored.items():
            self.relations[(tensor, rel.tiling, rel.sparse)] = rel
        for v in self.dag.vertices:
            if v.name in self.chained:
                continue
            chain = self._chain(v) if any(o.tensor in self.chained for o in v.operands) \
                else None
            inputs = chain.inputs if chain else [
                self.relation(o.tensor, self.plan.operand_tiling(v, o),
                              self.plan.operand_sparse(v, k)) for k, o in enumerate(v.operands)]
            out = self._new_rel(v.name, self.plan.output_tiling(v))
            builder = StepBuilder(self.prefix, self._kernels)
            size = prod(self.dag.shapes[v.name])
            if self._nests(out, inputs):
                query = chain_formula(chain, size, self.d) if chain \
                    else self._vertex_formula(v, inputs, builder)
            elif chain:
                query = chain_query(chain, size, self.d)
            else:
                query = self._vertex_query(v, inputs, out, builder)
            self._add(out, query, builder, inputs, self.plan.uclc(self.dag, v), v.name,
                      chain.vertices if chain else ())
            self.relations[(v.name, out.tiling, False)] = out
        return self.steps

    def _chain(self, v: Vertex) -> Chain:
        """The chain of element-wise vertices ending at `v` (`sql.chains`): its inputs, the
        fused spec's tokens, and when its result has a tuple (`chains.presence`)."""
        inputs: dict[str, TableRelation] = {}
        tokens: list[str] = []
        inside: list[str] = []

        def visit(u: Vertex) -> Presence:
            present: list[Presence] = []
            for o in u.operands:
                if o.tensor in self.chained:
                    inside.append(o.tensor)
                    present.append(visit(self.dag.vertex(o.tensor)))
                    continue
                if o.tensor not in inputs:
                    inputs[o.tensor] = self.relation(o.tensor, self.plan.operand_tiling(u, o))
                k = list(inputs).index(o.tensor)
                tokens.append(f"${k}")
                present.append(frozenset({frozenset({k})}))
            kind, spread = self._domain_kind(u)
            rule = {"full": "f", "join": "j"}.get(kind) or "u" + "".join(map(str, spread))
            tokens.append(f"{u.op}@{rule}")
            return presence(kind, [present[k] for k in spread] if spread else present)

        present = visit(v)
        return Chain(list(inputs.values()), tuple(tokens), present, tuple(inside))

    def _sparsify(self, rel: TableRelation) -> TableRelation:
        """The relation with its payloads packed sparse."""
        q = self.d.q
        out = self._new_rel(rel.tensor, rel.tiling, sparse=True)
        b = StepBuilder(self.prefix, self._kernels)
        keys = [q(c) for c in rel.columns]
        self._add(out, f"SELECT {', '.join(keys + [self.d.sparsify(b, 'val') + ' AS val'])} "
                       f"FROM {q(rel.table)}", b, [rel],
                  f"sparsify {self._tiling_label(rel.tensor, rel.tiling)}")
        return out

    def _nests(self, out: TableRelation, inputs: list[TableRelation]) -> bool:
        """Whether a step writing `out` from `inputs` is a `Formula` (`sql.nested`): every
        relation it reads holds exactly one tuple, and so will `out`."""
        return (self.d.capabilities.nested_calls and not out.keyed and bool(inputs)
                and all(rel.table in self.whole for rel in inputs))

    def _vertex_formula(self, v: Vertex, inputs: list[TableRelation], b: StepBuilder
                        ) -> Formula:
        """A vertex's columns over whole one-tuple operands (`_nests`): its value strategy
        over their values, each operand present, so without a domain."""
        spec = vertex_kernel(v, self.plan.choices[v.name])
        lists = [not rel.is_scalar for rel in inputs]
        reads = [Read(rel.table) for rel in inputs] + [
            Read(inputs[k].table, FACTOR) for k, o in enumerate(v.operands)
            if o.tensor in self.factors]

        def columns(values: list[str]) -> dict[str, str]:
            x = VertexValues(v, inputs, b, spec, values[:len(inputs)], lists, None, None)
            cols = dict(next(c for _, strategy in VALUE_STRATEGIES if (c := strategy(self, x))))
            for factor in values[len(inputs):]:
                cols["val"] = f"{cols['val']} * {factor}"
            return cols
        return formula(columns, reads)

    def _add(self, out: TableRelation, query: str | Formula, b: StepBuilder,
             reads: list[TableRelation], label: str, vertex: str | None = None,
             chained: tuple[str, ...] = (), gather: tuple[str, str] | None = None) -> None:
        """The step storing the rows of `query` (a SELECT, or a `Formula` over whole
        relations), which reads the relations `reads` (in its text or as kernel
        constants), in `out`'s table."""
        nested = query if isinstance(query, Formula) else None
        if nested:
            query = nested_query(nested, {}, self.d)
            self.whole.add(out.table)
        one_tuple = not (b.generates_rows or out.keyed or any(rel.keyed for rel in reads))
        self.steps.append(Step("sql", out, self.d.create(out.table, query, self.temporary),
                               b.kernels, label, vertex, query, chained=chained,
                               reads=frozenset(rel.table for rel in reads),
                               generates_rows=b.generates_rows, one_tuple=one_tuple,
                               recomputed=vertex is not None and not b.generates_rows
                               and recomputed(self.dag, self.dag.vertex(vertex), one_tuple) > 0,
                               gather=gather, formula=nested))

    def combine(self, table: str, spec: Combined) -> TableRelation:
        """The step writing `spec`'s outputs side by side into `table` (see `Combined`)."""
        rels = {column: self.relation(tensor, spec.tiling)
                for column, tensor in spec.columns.items()}
        out = replace(next(iter(rels.values())), table=table, tensor=table)
        reads = list(rels.values())
        query = (formula(lambda values: dict(zip(rels, values)), [Read(r.table) for r in reads])
                 if self._nests(out, reads) else combined_query(rels, self.d))
        self._add(out, query, StepBuilder(self.prefix, self._kernels), reads,
                  f"{table} = {', '.join(spec.columns.values())}")
        return out

    def outputs(self) -> dict[str, TableRelation]:
        result = {}
        for name in self.dag.outputs:
            if name in self.dag.inputs:
                result[name] = self.relation(name, self.dag.shapes[name])
            else:
                result[name] = self.relation(name, self.plan.output_tiling(self.dag.vertex(name)))
        return result

    # -- one vertex ---------------------------------------------------------
    def _vertex_query(self, v: Vertex, inputs: list[TableRelation], out: TableRelation,
                      b: StepBuilder) -> str:
        """The vertex's SELECT: its domain (the FROM and WHERE over its operands), the value
        of each tuple from the first value strategy that applies (`VALUE_STRATEGIES`), then
        the aggregate over its demoted-away labels, if any."""
        d, q = self.d, self.d.q
        if self._one_tuple_operand(v, inputs) == 0:
            # the kernels take the one-tuple operand second (rows against one matrix are
            # then one BLAS product); x * y is y * x, bit for bit
            v, inputs = replace(v, operands=v.operands[::-1], defaults=v.defaults[::-1]), \
                inputs[::-1]
        choice, sizes = self.plan.choices[v.name], self.dag.label_sizes(v)
        up = self.plan.keyed(self.dag, v)
        ranges = {l: key_range(choice.tile(l), sizes[l]) for l in up}
        dom = self._vertex_domain(v, b, inputs, up, ranges)
        if dom.constant is not None:
            inputs = list(inputs)
            inputs[dom.constant] = self._broadcast(inputs[dom.constant])
        spec = vertex_kernel(v, choice)
        lists = [not inputs[k].is_scalar for k in dom.joined]
        agg_promoted = [l for l in v.agg_labels if l in up]
        factored = [f"u{k}" for k, o in enumerate(v.operands) if o.tensor in self.factors]
        # a sum of products the engine adds up without forming them (a scalar factor
        # beside an operand scales the scalar * vector form's vector only)
        fused = (d.weighted_sum(spec, dom.values, lists)
                 if agg_promoted and v.agg == "sum" and not out.is_scalar
                 and dom.constant is None and dom.kind == "join" and not v.defaults
                 and not any(rel.sparse for rel in inputs) else None)
        if fused and factored and not fused.scales_val:
            fused = None
        x = VertexValues(v, inputs, b, spec, dom.values, lists, dom.constant, fused)
        columns = next(c for _, strategy in VALUE_STRATEGIES if (c := strategy(self, x)))
        for alias in factored:
            columns["val"] = f"{columns['val']} * {alias}.{q(FACTOR)}"
        key_names = [q(out.column(a)) for a, l in enumerate(v.labels) if l in up]
        keys = [f"{dom.source[l]} AS {name}"
                for l, name in zip([l for l in v.labels if l in up], key_names)]
        where_sql = f" WHERE {' AND '.join(dom.where)}" if dom.where else ""
        selected = keys + [f"{expr} AS {name}" for name, expr in columns.items()]
        inner = f"SELECT {', '.join(selected)} FROM {dom.frm}{where_sql}"
        if not agg_promoted:
            return inner
        # a min or max over tuples that may be absent folds in their value (the vertex's
        # default) unless that changes nothing (inf for min)
        clip_op = AGGREGATES[v.agg].clip(v.default)
        expected = 1 if (dom.kind == "full" or clip_op is None) else prod(
            ranges[l] for l in agg_promoted)
        group = f" GROUP BY {', '.join(key_names)}" if key_names else ""
        if fused:
            agg_value = fused[1]
        elif out.is_scalar:
            agg_value = d.scalar_aggregate(v.agg, "val")
            if expected > 1:
                clip = d.scalar_unary(clip_op, agg_value)
                agg_value = f"CASE WHEN count(*) < {expected} THEN {clip} ELSE {agg_value} END"
        else:
            agg_value = d.aggregate(b, v.agg, "val", out.sub_size,
                                    "count(*)" if expected > 1 else None, expected)
        cols = ", ".join(key_names + [f"{agg_value} AS val"])
        return f"SELECT {cols} FROM ({inner}) AS j{_grouped(group)}"

    def _vertex_domain(self, v: Vertex, b: StepBuilder, inputs: list[TableRelation], up,
                       ranges) -> Domain:
        """The tuples a vertex is evaluated over (`_domain_kind`): its operands joined on
        their shared promoted labels (the operand bound once left out), or a domain of
        keys (`_domain`)."""
        q = self.d.q
        aliases = [f"u{k}" for k in range(len(inputs))]
        kind, spread = self._domain_kind(v)
        constant = self._constant_operand(v, inputs) if kind == "join" else None
        joined = [k for k in range(len(inputs)) if k != constant]
        if kind != "join":
            promoted = [l for l in v.all_labels if l in up]
            return Domain(kind, joined, constant, *self._domain(v, b, inputs, aliases,
                                                                promoted, ranges, spread))
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
        first = joined[0]
        frm = f"{q(inputs[first].table)} AS {aliases[first]}"
        for k in joined[1:]:
            on = " AND ".join(conds[k]) if conds[k] else "TRUE"
            frm += f" JOIN {q(inputs[k].table)} AS {aliases[k]} ON {on}"
        return Domain(kind, joined, constant, frm, list(conds[first]),
                      [f"{aliases[k]}.val" for k in joined], source)

    def _domain_kind(self, v: Vertex) -> tuple[str, list[int]]:
        """Where a vertex is evaluated: ``join`` (the operands' common tuples: a zero
        operand gives zero, or an absent one the result's default), ``union`` (every key
        of the operands listed, crossed with the other labels' ranges: where the result
        can differ from its default) or ``full`` (every key)."""
        if v.annihilates:
            wild = [k for k, o in enumerate(v.operands) if o.tensor in self.nonfinite]
            return ("union", wild) if wild and v.is_binary else ("join", [])
        if v.defaults:       # only where an operand that decides the result is present
            if v.agg == "sum" and v.agg_labels and v.default != 0:
                return "full", []          # a sum of infinite defaults: every term counts
            absorbing = [k for k in range(len(v.operands)) if absorbs(v.op, v.defaults, k)]
            return "union", absorbing or [0, 1]
        if not v.is_binary or v.op == "div":
            return "full", []
        return "union", [0, 1]

    def _constant_operand(self, v: Vertex, inputs: list[TableRelation]) -> int | None:
        """The one-tuple operand of a product, where the engine binds it into the kernel
        once instead of passing it with every row."""
        return self._one_tuple_operand(v, inputs) if self.d.capabilities.constants_once else None

    @staticmethod
    def _one_tuple_operand(v: Vertex, inputs: list[TableRelation]) -> int | None:
        """The operand of a product that is one array tuple joined to keyed tuples."""
        if not (v.is_binary and v.op == "mul"):
            return None
        for k in (1, 0):
            if not inputs[k].keyed and not inputs[k].is_scalar and inputs[1 - k].keyed:
                return k
        return None

    def _domain(self, v: Vertex, b: StepBuilder, inputs: list[TableRelation], aliases: list[str],
                promoted: list[str], ranges: dict[str, int], spread: list[int]):
        """FROM clause over the keys of a ``union`` domain (of the operands in `spread`) or
        of a ``full`` one (`spread` empty), the operands LEFT JOINed with zeros filled in."""
        d, q = self.d, self.d.q
        col = {l: f"k{n}" for n, l in enumerate(promoted)}

        def spans(labels: list[str]) -> list[str]:
            b.generates_rows |= bool(labels)
            return [d.range_from(ranges[l], col[l]) for l in labels]

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
        if not promoted and spread and (len(spread) == 1 or d.full_join_on_true):
            return self._keyless_domain(v, inputs, aliases, spread)
        if not spread:
            domain_labels = promoted if v.is_binary else own[0]
            parts = spans(domain_labels)
            domain = ("(SELECT " + ", ".join(col[l] for l in domain_labels) + " FROM "
                      + " CROSS JOIN ".join(parts) + ")") if parts else "(SELECT 1 AS one)"
        else:
            selects = []
            for k in spread:
                key_cols, where = keys_of(k)
                other = [l for l in promoted if l not in own[k]]
                cols = [col[l] for l in promoted]
                inner_cols = ", ".join(key_cols) if key_cols else "1 AS one"
                sub = f"(SELECT {inner_cols} FROM {q(inputs[k].table)}"
                sub += (f" WHERE {' AND '.join(where)})" if where else ")") + f" AS s{k}"
                frm = " CROSS JOIN ".join([sub] + spans(other))
                selects.append(f"SELECT {', '.join(cols) if cols else '1 AS one'} FROM {frm}")
            domain = f"({' UNION '.join(selects)})"
        frm = f"{domain} AS dom"
        values = []
        for k, rel in enumerate(inputs):
            conds = [f"{aliases[k]}.{q(rel.column(axis))} = dom.{col[label]}"
                     for axis, label in enumerate(v.operands[k].labels) if label in col]
            frm += f" LEFT JOIN {q(rel.table)} AS {aliases[k]} ON {' AND '.join(conds) or 'TRUE'}"
            values.append(self._or_default(v, k, rel, aliases[k]))
        source = {l: f"dom.{col[l]}" for l in promoted}
        return frm, [], values, source

    def _keyless_domain(self, v: Vertex, inputs: list[TableRelation], aliases: list[str],
                        spread: list[int]):
        """`_domain` of one-tuple operands: the tuple of the operands in `spread` (FULL
        JOINed: either one's), the others LEFT JOINed, without a domain of keys."""
        q = self.d.q
        frm = f"{q(inputs[spread[0]].table)} AS {aliases[spread[0]]}"
        for k in spread[1:]:
            frm += f" FULL JOIN {q(inputs[k].table)} AS {aliases[k]} ON TRUE"
        frm += "".join(f" LEFT JOIN {q(rel.table)} AS {aliases[k]} ON TRUE"
                       for k, rel in enumerate(inputs) if k not in spread)
        values = [self._or_default(v, k, rel, aliases[k]) for k, rel in enumerate(inputs)]
        return frm, [], values, {}

    def _or_default(self, v: Vertex, k: int, rel: TableRelation, alias: str) -> str:
        """The value of operand k read from an outer join: its default where it is absent
        (NULL arrays stay NULL where the kernels read them as zeros)."""
        d, default = self.d, v.defaults[k] if v.defaults else 0.0
        if not (default or rel.is_scalar or not d.null_arrays_are_zeros):
            return f"{alias}.val"
        return OrZero(f"{alias}.val", d.zero(None if rel.is_scalar else rel.sub_size,
                                             rel.sparse, default),
                      d.zero(None, default=default) if default else None)

    # -- repartition --------------------------------------------------------
    def _repartition(self, rel: TableRelation, target: Tiling) -> TableRelation:
        """Explode the axes whose tile size changes into one key per index, then stack
        them into the target's tiles (section 6, at any tile size)."""
        middle = middle_tiling(rel.tiling, target)
        if middle != rel.tiling:
            rel = self._explode(rel, middle)
            self.relations[(rel.tensor, rel.tiling, False)] = rel
        if middle != target:
            rel = self._stack(rel, target)
        return rel

    def _explode(self, rel: TableRelation, middle: Tiling) -> TableRelation:
        """Split each payload along the axes that get keys (or smaller tiles); drop +0.0
        values and all-zero pieces (values and pieces of the tensor's default), and the
        padding of edge tiles."""
        d, q = self.d, self.d.q
        new = tuple(a for a in payload_axes(rel.tiling) if middle[a] < rel.tiling[a])
        out = self._new_rel(rel.tensor, middle)
        default = self.dag.default(rel.tensor)
        spec = take_spec(rel.tiling, middle, default)
        b = StepBuilder(self.prefix, self._kernels)
        b.generates_rows = True                     # a row per piece of each payload
        kept = [f"r.{q(rel.column(a))} AS {q(out.column(a))}" for a in rel.keyed if a not in new]
        kept += [f"r.{q(rel.column(a))} AS {q('t_' + out.column(a))}" for a in rel.keyed if a in new]
        pieces = d.explode(b, spec, q(rel.table), kept)       # columns: kept, p, val
        stored = f"val <> {d.num(default)}" if default else d.nonzero("val")
        keys, where = [], ["val IS NOT NULL"] + ([] if spec.sub_dims else [stored])
        for a in out.keyed:
            if a not in new:
                keys.append(q(out.column(a)))
                continue
            k, cuts = new.index(a), spec.new_dims[new.index(a)]
            offset = f"{d.idiv('p', prod(spec.new_dims[k + 1:]))} % {cuts}"
            if a in rel.keyed:                       # a tile: its key, times its cuts
                offset = f"{q('t_' + out.column(a))} * {cuts} + {offset}"
            keys.append(f"{offset} AS {q(out.column(a))}")
            if rel.shape[a] % rel.tiling[a]:         # the padding of edge tiles (-0.0 too)
                where.append(f"{offset} < {key_range(middle[a], rel.shape[a])}")
        self._add(out, f"SELECT {', '.join(keys + ['val'])} FROM ({pieces}) AS t "
                       f"WHERE {' AND '.join(where)}", b, [rel],
                  f"explode {self._tiling_label(rel.tensor, middle)}")
        return out

    def _stack(self, rel: TableRelation, target: Tiling, packed: bool = False) -> TableRelation:
        """Group the promoted axes that get a payload in `target` into its tiles (`packed`:
        scalars straight into packed sparse payloads)."""
        d, q = self.d, self.d.q
        moved = tuple(a for a in rel.keyed if rel.tiling[a] == 1 and target[a] > 1)
        out = self._new_rel(rel.tensor, target, sparse=packed)
        spec = stack_spec(rel.tiling, target, moved, self.dag.default(rel.tensor))
        b = StepBuilder(self.prefix, self._kernels)
        steps = [prod(spec.new_dims[k + 1:]) for k in range(len(moved))]
        offsets = [f"{q(rel.column(a))} % {target[a]}" if a in out.keyed else q(rel.column(a))
                   for a in moved]
        position = " + ".join(f"({o}) * {s}" for o, s in zip(offsets, steps))
        value = (d.stack_packed(f"({position})", "val") if packed else
                 d.stack(b, spec, "val", f"({position})", not rel.is_scalar))
        keys = [f"{d.idiv(q(rel.column(a)), target[a])} AS {q(out.column(a))}" if a in moved
                else f"{q(rel.column(a))} AS {q(out.column(a))}" for a in out.keyed]
        group = f" GROUP BY {', '.join(str(n + 1) for n in range(len(keys)))}" if keys else ""
        gather = None if keys or packed else (
            spec.text, f"SELECT ({position}) AS pos, val FROM {q(rel.table)}")
        # packed into one tuple where statements nest: always its tuple (empty: all zero)
        whole = packed and not keys and self.d.capabilities.nested_calls
        if whole:
            value = f"coalesce({value}, {d.zero(out.sub_size, sparse=True)})"
        self._add(out, f"SELECT {', '.join(keys + [value + ' AS val'])} "
                       f"FROM {q(rel.table)}{'' if whole else _grouped(group)}", b, [rel],
                  f"stack {'~' if packed else ''}{self._tiling_label(rel.tensor, target)}",
                  gather=gather)
        if whole:
            self.whole.add(out.table)
        return out

    def _tiling_label(self, tensor: str, tiling: Tiling) -> str:
        labels, shape = self.dag.labels_of(tensor), self.dag.shapes[tensor]
        return f"{tensor}[{','.join(render(l, b, n) for l, b, n in zip(labels, tiling, shape))}]"


@dataclass
class Domain:
    """The tuples a vertex is evaluated over: its `kind` (join, union or full), the
    operands joined (`joined`, without the `constant` one bound once), the FROM and WHERE,
    the operands' value expressions and the key expression of each promoted label."""
    kind: str
    joined: list[int]
    constant: int | None
    frm: str
    where: list[str]
    values: list[str]
    source: dict[str, str]


@dataclass
class VertexValues:
    """What a vertex's value strategies choose from: the vertex (its one-tuple operand
    second), its input relations, the kernel, the joined operands' value expressions and
    whether each is a list, the operand bound once and the dialect's fused weighted sum."""
    v: Vertex
    inputs: list[TableRelation]
    b: StepBuilder
    spec: KernelSpec
    values: list[str]
    lists: list[bool]
    constant: int | None
    fused: tuple | None


def _factor_value(c: Compiler, x: VertexValues) -> dict[str, str] | None:
    """A vertex passed through with a scalar factor: the other operand and the factor."""
    if x.v.name in c.factors:
        f = c.factors[x.v.name]
        return {"val": x.values[1 - f], FACTOR: x.values[f]}
    return None


def _fused_value(c: Compiler, x: VertexValues) -> dict[str, str] | None:
    """The dialect's weighted sum: the products are summed by the aggregate itself."""
    return x.fused[0] if x.fused else None


def _scalar_value(c: Compiler, x: VertexValues) -> dict[str, str] | None:
    """Scalars in, a scalar out: the operation in SQL."""
    v, values = x.v, x.values
    if any(x.lists) or x.spec.out_dims or x.spec.dims:
        return None
    return {"val": c.d.scalar_binary(v.op, *values) if v.is_binary
            else c.d.scalar_unary(v.op, values[0])}


def _shared_matrix_value(c: Compiler, x: VertexValues) -> dict[str, str] | None:
    """Rows against one matrix (a one-tuple operand, dense): the dialect's shared form."""
    if (x.constant is None and c._one_tuple_operand(x.v, x.inputs) == 1
            and not any(rel.sparse for rel in x.inputs)
            and (shared := c.d.shared_matrix_kernel(x.spec, x.values))):
        return {"val": shared}
    return None


def _kernel_value(c: Compiler, x: VertexValues) -> dict[str, str]:
    """The kernel over each tuple's values (the constant operand bound once)."""
    constant = None if x.constant is None else (x.constant, x.inputs[x.constant])
    return {"val": c.d.kernel(x.b, x.spec, x.values, x.lists, constant,
                              tuple(rel.sparse for rel in x.inputs))}


# How a vertex's tuple gets its value columns: the first strategy that gives columns
# (the last always does)
VALUE_STRATEGIES = (
    ("factor", _factor_value),
    ("fused", _fused_value),
    ("scalar", _scalar_value),
    ("shared matrix", _shared_matrix_value),
    ("kernel", _kernel_value),
)


def combined_query(rels: dict[str, TableRelation], d: Dialect) -> str:
    """The rows of relations of one shape and tiling side by side: their key columns, then
    each one's values in its column (zero where it has no tuple; NULL for arrays of
    engines whose kernels read NULL as zeros)."""
    q = d.q
    first = next(iter(rels.values()))
    zero = d.zero(None if first.is_scalar else first.sub_size)
    fill = first.is_scalar or not d.null_arrays_are_zeros

    def value(x: str) -> str:
        return f"coalesce({x}, {zero})" if fill else x

    aliases = [f"c{k}" for k in range(len(rels))]
    values = [f"{value(f'{a}.val')} AS {q(c)}" for a, c in zip(aliases, rels)]
    if not first.keyed:          # one tuple at most each: joined to one row, not subqueries
        joins = "".join(f" LEFT JOIN {q(rel.table)} AS {a} ON TRUE"
                        for a, rel in zip(aliases, rels.values()))
        return f"SELECT {', '.join(values)} FROM (SELECT 1 AS one) AS dom{joins}"
    keys = ", ".join(q(c) for c in first.columns)
    frm = " FULL JOIN ".join(f"{q(rel.table)} AS {a}" + (f" USING ({keys})" if k else "")
                             for k, (a, rel) in enumerate(zip(aliases, rels.values())))
    return f"SELECT {', '.join([keys] + values)} FROM {frm}"
