"""What `explain` shows: ranked plans with schemas, estimates and (optionally) actuals."""
from __future__ import annotations

from .executor import Execution
from .memory import format_size
from .plan import Plan, StatementCost
from .program.dag import Dag
from .stats.tensor_stats import TensorStats


def explanation(dag: Dag, plans: list[Plan], *, backend: str, kernels: str,
                timings: dict[str, float], fused: list[tuple[str, str]],
                constants: dict[str, float], input_stats: dict[str, TensorStats],
                memory_cap: tuple[float, str], tiles: dict,
                runs: list[Execution] | None = None,
                sql: list[list[str]] | None = None,
                pipelined: list[dict[str, str]] | None = None,
                factored: list[frozenset[str]] | None = None) -> dict:
    """A JSON-ready description of ranked plans (with their measured runs and their SQL
    statements when given; `pipelined`: per plan, each vertex streamed into a later
    statement instead of stored -> that statement: its tuples are not counted;
    `factored`: per plan, the products passed through with their scalar factor; `tiles`:
    whether tiles were searched, and if not the best plan's cost without them)."""
    result = {
        "backend": backend,
        "kernels": kernels,
        **timings,
        "cost_constants": constants,
        "memory_cap": {"bytes": memory_cap[0], "source": memory_cap[1]},
        "tiles": tiles,
        "inputs": {n: {"shape": list(s.shape), "nnz": s.nnz, "distinct": list(s.distinct)}
                   for n, s in input_stats.items()},
        "fused": [{"statement": a, "into": b} for a, b in fused],
        "plans": [_describe(dag, plan, rank) for rank, plan in enumerate(plans, 1)],
    }
    for entry, run in zip(result["plans"], runs or []):
        _analyze(entry, run)
    for entry, statements in zip(result["plans"], sql or []):
        entry["sql"] = statements
    for entry, streamed in zip(result["plans"], pipelined or []):
        for statement in entry["statements"]:
            if statement["name"] in streamed:
                statement["pipelined_into"] = streamed[statement["name"]]
    for entry, names in zip(result["plans"], factored or []):
        for statement in entry["statements"]:
            if statement["name"] in names:
                statement["scalar_factor"] = True
    return result


def _describe(dag: Dag, plan: Plan, rank: int) -> dict:
    statements = []
    for v in dag.vertices:
        costs = plan.statement_costs.get(v.name, StatementCost())
        statements.append({
            "name": v.name,
            "uclc": plan.uclc(dag, v),
            "schemas": [plan.schema(dag, v, o) for o in v.operands] + [plan.schema(dag, v)],
            "est_tuples": costs.est_tuples,
            "cost": costs.total,
            "cost_breakdown": {k: getattr(costs, k) for k in
                               ("load", "join", "aggregate", "repartition", "kernel", "shuffle",
                                "statement")},
            "shuffles": list(costs.exchanges),
        })
    return {"rank": rank, "name": plan.name, "cost": plan.cost, "statements": statements,
            "repartitions": [f"{t}: {list(a)} -> {list(b)}" for t, a, b in plan.repartitions(dag)]}


def _analyze(entry: dict, run: Execution) -> None:
    by_vertex = {s["name"]: s for s in entry["statements"]}
    pending = 0.0
    for step in run.steps:
        if step.vertex is None:
            pending += step.seconds          # loads and repartitions count for the next statement
            continue
        s = by_vertex[step.vertex]
        s["actual_tuples"], s["seconds"] = step.tuples, step.seconds + pending
        s["est_over_actual"], s["q_error"] = q_error(s["est_tuples"], step.tuples)
        pending = 0.0
    entry["seconds"] = run.seconds()
    errors = [s["q_error"] for s in entry["statements"] if "q_error" in s]
    entry["max_q_error"] = max(errors, default=1.0)


def q_error(estimate: float, actual: int) -> tuple[float, float]:
    """(estimate / actual, the q-error max(estimate / actual, actual / estimate)), both
    counted from one tuple (an empty relation estimated empty is exact)."""
    ratio = max(estimate, 1.0) / max(actual, 1)
    return ratio, max(ratio, 1.0 / ratio)


def format_explanation(result: dict) -> str:
    """Human-readable text of `explain_program`'s result."""
    lines = [f"backend {result['backend']}: statistics {result['statistics_seconds']:.3f} s, "
             f"optimisation {result['optimize_seconds']:.3f} s; memory cap "
             f"{format_size(result['memory_cap']['bytes'])} per tuple and kernel call "
             f"({result['memory_cap']['source']})",
             f"kernels: {result['kernels']}"]
    tiles = result["tiles"]
    if not tiles["searched"]:
        lines.append(f"tiles not searched: the best plan without them is estimated at "
                     f"{tiles['untiled_cost']:.4g} s, not above tiles_above={tiles['above']:.4g} s")
    if result["fused"]:
        lines.append("products ordered together: " + ", ".join(
            f"{f['statement']} into {f['into']}" for f in result["fused"]))
    if result.get("backward"):
        lines += ["", "backward statements (marked d below):"]
        lines += [f"  {text}" for text in result["backward"]]
    for plan in result["plans"]:
        title = f"plan {plan['rank']} ({plan['name']}): estimated cost {plan['cost']:.4g}"
        if "seconds" in plan:
            title += (f", measured {plan['seconds']:.3f} s, largest q-error of the tuple "
                      f"counts {plan['max_q_error']:.3g}")
        lines += ["", title]
        header = f"  {'statement':<44} {'est.tuples':>11} {'load':>9} {'join':>9} {'agg':>9} " \
                 f"{'repart':>9} {'kernel':>9} {'shuffle':>9} {'total':>9}"
        if "seconds" in plan:
            header += f" {'tuples':>11} {'est/act':>8} {'seconds':>8}"
        lines.append(header)
        for s in plan["statements"]:
            c = s["cost_breakdown"]
            mark = "d" if s.get("pass") == "backward" else " "
            row = (f"{mark} {s['uclc']:<44} {s['est_tuples']:>11.4g} {c['load']:>9.3g} {c['join']:>9.3g} "
                   f"{c['aggregate']:>9.3g} {c['repartition']:>9.3g} {c['kernel']:>9.3g} "
                   f"{c['shuffle']:>9.3g} {s['cost']:>9.3g}")
            if "actual_tuples" in s:
                row += (f" {s['actual_tuples']:>11} {s['est_over_actual']:>8.3g}"
                        f" {s['seconds']:>8.3f}")
            elif "seconds" in plan:         # pipelined: counted in the statement it streams into
                row += f" {'-':>11} {'-':>8} {'-':>8}"
            lines.append(row)
        shuffles = [f"    {s['uclc']}: {'; '.join(s['shuffles'])}"
                    for s in plan["statements"] if s["shuffles"]]
        if shuffles:
            lines.append("  shuffles (the key a statement joins on partitions it):")
            lines += shuffles
        lines.append("  schemas:")
        seen = []
        for s in plan["statements"]:
            for schema in s["schemas"]:
                if schema not in seen:
                    seen.append(schema)
                    lines.append(f"    {schema}")
        if plan["repartitions"]:
            lines.append("  repartitions: " + "; ".join(plan["repartitions"]))
        streamed = [f"{s['name']} into {s['pipelined_into']}" for s in plan["statements"]
                    if "pipelined_into" in s]
        if streamed:
            lines.append("  pipelined (computed inside a later statement, streamed into it or "
                         "sharing it; no table of their own): "
                         + ", ".join(streamed))
        scaled = [s["name"] for s in plan["statements"] if s.get("scalar_factor")]
        if scaled:
            lines.append("  scalar factors (payload passed through with the scalar beside it, "
                         "the reader scales its kernel's result): " + ", ".join(scaled))
        if "sql" in plan:
            lines.append("  sql:")
            lines += ["    " + line for statement in plan["sql"]
                      for line in (statement + ";").splitlines()]
    return "\n".join(lines)
