"""`sparse-einsum explain`: the top-k plans with schemas, estimates and (optionally) actuals."""
from __future__ import annotations

import time
from pathlib import Path

from .api import make_backend, prepare
from .executor import execute
from .optimizer.choose import Optimizer
from .plan import Plan
from .program.dag import Dag
from .program.model import Program


def explain_program(program: Program | str | Path, data: dict[str, object], *, top: int = 3,
                    analyze: bool = False, backend: object = "duckdb",
                    **backend_options) -> dict:
    """A JSON-ready description of the `top` best plans (and their measured runs if `analyze`)."""
    db = make_backend(backend, **backend_options)
    prepared = None
    try:
        start = time.perf_counter()
        prepared = prepare(program, data, db)
        dag, stats = prepared.dag, prepared.input_stats
        stats_seconds = time.perf_counter() - start
        opt = Optimizer.build(dag, stats, backend=db.name,
                              stored={n: r.axes for n, r in prepared.stored.items()})
        plans = opt.top(top)
        optimize_seconds = time.perf_counter() - start - stats_seconds
        result = {
            "backend": db.name,
            "statistics_seconds": stats_seconds,
            "optimize_seconds": optimize_seconds,
            "cost_constants": opt.model.p.to_dict(),
            "inputs": {n: {"shape": list(s.shape), "nnz": s.nnz, "distinct": list(s.distinct)}
                       for n, s in stats.items()},
            "plans": [_describe(dag, plan, rank) for rank, plan in enumerate(plans, 1)],
        }
        if analyze:
            for entry, plan in zip(result["plans"], plans):
                _analyze(entry, dag, plan, data, db, prepared.stored)
    finally:
        if prepared is not None:
            prepared.release(db)
        if db is not backend:
            db.close()
    return result


def _describe(dag: Dag, plan: Plan, rank: int) -> dict:
    statements = []
    for v in dag.vertices:
        costs = plan.statement_costs.get(v.name, {})
        statements.append({
            "name": v.name,
            "uclc": plan.uclc(v),
            "schemas": [plan.schema(dag, v, o) for o in v.operands] + [plan.schema(dag, v)],
            "est_tuples": costs.get("est_tuples"),
            "cost": costs.get("total"),
            "cost_breakdown": {k: costs.get(k) for k in ("load", "join", "aggregate", "repartition", "kernel")},
        })
    return {"rank": rank, "name": plan.name, "cost": plan.cost, "statements": statements,
            "repartitions": [f"{t}: {list(a)} -> {list(b)}" for t, a, b in plan.repartitions(dag)]}


def _analyze(entry: dict, dag: Dag, plan: Plan, data: dict, db, stored) -> None:
    run = execute(dag, plan, data, db, count_tuples=True, stored_inputs=stored)
    by_vertex = {s["name"]: s for s in entry["statements"]}
    pending = 0.0
    for step in run.steps:
        if step.vertex is None:
            pending += step.seconds          # loads and repartitions count for the next statement
            continue
        s = by_vertex[step.vertex]
        s["actual_tuples"], s["seconds"] = step.tuples, step.seconds + pending
        pending = 0.0
    entry["seconds"] = sum(step.seconds for step in run.steps)


def format_explanation(result: dict) -> str:
    """Human-readable text of `explain_program`'s result."""
    lines = [f"backend {result['backend']}: statistics {result['statistics_seconds']:.3f} s, "
             f"optimisation {result['optimize_seconds']:.3f} s"]
    for plan in result["plans"]:
        title = f"plan {plan['rank']} ({plan['name']}): estimated cost {plan['cost']:.4g}"
        if "seconds" in plan:
            title += f", measured {plan['seconds']:.3f} s"
        lines += ["", title]
        header = f"  {'statement':<44} {'est.tuples':>11} {'load':>9} {'join':>9} {'agg':>9} " \
                 f"{'repart':>9} {'kernel':>9} {'total':>9}"
        if "seconds" in plan:
            header += f" {'tuples':>11} {'seconds':>8}"
        lines.append(header)
        for s in plan["statements"]:
            c = s["cost_breakdown"]
            row = (f"  {s['uclc']:<44} {s['est_tuples']:>11.4g} {c['load']:>9.3g} {c['join']:>9.3g} "
                   f"{c['aggregate']:>9.3g} {c['repartition']:>9.3g} {c['kernel']:>9.3g} "
                   f"{s['cost']:>9.3g}")
            if "seconds" in plan:
                row += f" {s.get('actual_tuples', 0):>11} {s.get('seconds', 0.0):>8.3f}"
            lines.append(row)
        lines.append("  schemas:")
        seen = []
        for s in plan["statements"]:
            for schema in s["schemas"]:
                if schema not in seen:
                    seen.append(schema)
                    lines.append(f"    {schema}")
        if plan["repartitions"]:
            lines.append("  repartitions: " + "; ".join(plan["repartitions"]))
    return "\n".join(lines)
