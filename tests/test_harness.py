"""The benchmark harness (experiments/harness.py): round-robin order, statistics and the
provenance every CSV row carries."""
from __future__ import annotations

import csv

from experiments import harness


def test_side_by_side_warms_up_then_runs_the_methods_in_turn():
    calls, checked = [], []
    methods = {name: (lambda name=name: calls.append(name) or name) for name in "ab"}
    timings = harness.side_by_side(methods, 3, check=lambda name, out: checked.append(out))
    assert calls == ["a", "b"] * 4
    assert checked == ["a", "b"] * 3
    assert {name: len(s) for name, s in timings.samples.items()} == {"a": 3, "b": 3}


def test_timings_statistics_and_rows():
    timings = harness.Timings({"base": [1.0, 2.0, 3.0], "x": [2.0, 4.0, 9.0]})
    assert timings.median("x") == 4.0
    assert timings.ratio("x", "base") == 2.0
    assert timings.noise("base") == 1.4826
    rows = timings.rows("base", case="c")
    assert [(r["case"], r["method"], r["ratio"]) for r in rows] == [("c", "base", "1.000"),
                                                                    ("c", "x", "2.000")]


def test_csv_rows_carry_their_provenance(tmp_path):
    provenance = harness.Provenance("bench_x", ["--repeats", "3"])
    path = tmp_path / "out.csv"
    harness.write_csv(path, [{"method": "a", "median_s": 1}, {"method": "b", "extra": 2}],
                      provenance)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert [r["method"] for r in rows] == ["a", "b"] and rows[1]["extra"] == "2"
    for row in rows:
        assert row["command"] == "python -m experiments.bench_x --repeats 3"
        assert row["code"].startswith(("commit ", "unknown"))
        assert "cores" in row["machine"] and "numpy" in row["versions"]
        assert float(row["load_start"]) >= 0 and float(row["load_end"]) >= 0
