"""explain: ranked plans with UCLC, schemas, estimates; --analyze adds actuals."""
from __future__ import annotations

import json

import numpy as np

from sparse_einsum import explain
from sparse_einsum.explanation import format_explanation
from sparse_einsum.examples import GCN_PROGRAM, gcn_data


def test_explain_reports_ranked_plans_with_estimates_and_actuals(duck):
    result = explain(GCN_PROGRAM, gcn_data(), top=3, analyze=True, backend=duck)
    json.dumps(result)                      # JSON-ready
    plans = result["plans"]
    assert [p["rank"] for p in plans] == [1, 2, 3]
    assert [p["cost"] for p in plans] == sorted(p["cost"] for p in plans)
    for plan in plans:
        total = sum(s["cost"] for s in plan["statements"])
        assert np.isclose(total, plan["cost"], rtol=1e-9)
        for s in plan["statements"]:
            assert s["uclc"].startswith(s["name"] + "[")
            if "pipelined_into" in s:       # computed inside the statement reading it
                assert "actual_tuples" not in s
                continue
            assert {"name", "uclc", "est_tuples", "cost", "schemas", "actual_tuples",
                    "seconds"} <= set(s)
            assert s["actual_tuples"] >= 0 and s["seconds"] >= 0
            ratio = max(s["est_tuples"], 1.0) / max(s["actual_tuples"], 1)
            assert s["est_over_actual"] == ratio
            assert s["q_error"] == max(ratio, 1 / ratio) >= 1.0
        assert plan["max_q_error"] == max(s["q_error"] for s in plan["statements"]
                                          if "q_error" in s)
    text = format_explanation(result)
    assert "plan 1 (rank:1)" in text and "schemas:" in text
    assert "largest q-error of the tuple counts" in text and "est/act" in text
