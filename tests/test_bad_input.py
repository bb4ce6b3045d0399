"""Bad input gives one clear line (exit code 2 on the command line), never a raw exception;
expressions of any depth or length work like short ones."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum import DataError, PlanError, ProgramError, Session
from sparse_einsum import session as session_module
from sparse_einsum.calibrate import calibrate
from sparse_einsum.cli import main
from sparse_einsum.program.lower import lower
from sparse_einsum.program.model import strip_locations
from sparse_einsum.program.parser import parse_program
from sparse_einsum.program.validate import infer_bounds
from sparse_einsum.reference import evaluate
from sparse_einsum.sql.duckdb import DuckDBDialect

REPO = Path(__file__).resolve().parents[1]
A = np.arange(1.0, 5.0)
NESTED = "input A[i]\nY[i] = " + "(" * 400 + "A[i]" + " + 1)" * 400          # 400 deep
LONG_SUM = "input A[i]\nY[i] = " + " + ".join(f"{k} * A[i]" for k in range(1, 1001))
NEGATIONS = "input A[i]\nY[i] = " + "-" * 1001 + "A[i] * exp(" * 300 + "A[i]" + ")" * 300


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sparse-einsum: error: "), err
    return err[0]


@pytest.fixture
def gcn(tmp_path) -> tuple[Path, Path]:
    assert main(["example", "gcn", str(tmp_path)]) == 0
    return tmp_path / "gcn.se", tmp_path / "gcn_data"


# -- expressions of any depth and length -------------------------------------------------
@pytest.mark.parametrize("text", [NESTED, LONG_SUM, NEGATIONS], ids=["nested", "sum", "chain"])
def test_every_pass_over_a_deep_expression(text):
    program = parse_program(text)
    assert program == parse_program(text) and strip_locations(program) == strip_locations(
        parse_program(text.replace(" + ", "+")))
    assert str(program.statements[0]).startswith("Y[i] = ")
    assert hash(program.statements[0].expr) == hash(parse_program(text).statements[0].expr)
    with np.errstate(all="ignore"):
        expected = evaluate(program, {"A": A})["Y"]
    dag = lower(program, infer_bounds(program, {"A": A.shape}))
    assert len(dag.vertices) >= 300
    with Session(program, {"A": A}, backend=None, dialect=DuckDBDialect()) as session:
        steps = session.compile("optimal").statements()
    assert len(steps) > len(dag.vertices) // 2
    if text is LONG_SUM:
        assert expected == pytest.approx(A * 500500)


def test_a_deep_expression_runs():
    out = se.run(NESTED, {"A": A})["Y"]
    np.testing.assert_allclose(out, A + 400)


# -- program files -------------------------------------------------------------------------
@pytest.mark.parametrize("content, message", [
    ("input A[i]\nY[i] = A[i]\n".encode("utf-16"), "it is UTF-16 encoded; save it as UTF-8"),
    (b"input A[i]\nY[i] = A[i] \xff\xfe\x00\x01", ":2: cannot read program: byte 0xff is not UTF-8"),
    (b"input A[i]\x00\x01\x02", ":1: cannot read program: it holds a NUL character"),
])
def test_binary_and_utf16_program_files(gcn, tmp_path, capsys, content, message):
    bad = tmp_path / "bad.se"
    bad.write_bytes(content)
    assert main(["run", str(bad), "--data", str(gcn[1])]) == 2
    line = one_error_line(capsys)
    assert str(bad) in line and message in line


def test_a_utf8_program_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.se"
    path.write_bytes("\ufeffinput A[i]\nY[i] = A[i] * 2\n".encode("utf-8"))
    np.testing.assert_allclose(se.run(path, {"A": A})["Y"], 2 * A)


def test_program_paths_and_program_text(tmp_path, monkeypatch):
    """An existing file is read whatever its suffix; a one-line string that cannot be a
    program (no '[') or ends in .se is a path, and a missing one is an error naming it."""
    (tmp_path / "prog.txt").write_text("input A[i]\nY[i] = A[i] + 1\n")
    monkeypatch.chdir(tmp_path)
    np.testing.assert_allclose(se.run("prog.txt", {"A": A})["Y"], A + 1)
    for missing in ("nope.txt", "dir/prog", "nope.se"):
        with pytest.raises(ProgramError, match=f"^{missing}: cannot read program: does not exist$"):
            se.run(missing, {})
    with pytest.raises(ProgramError, match="^expected at least one statement"):   # text: a '['
        se.run("input A[i]", {"A": A})


# -- options -----------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, message", [
    (["--memory-limit", "abc"], "memory limit 'abc' is not a size such as 2GB, 512MiB or 50%"),
    (["--database", "/no/such/dir/x.duckdb"],
     "cannot open DuckDB database /no/such/dir/x.duckdb: directory /no/such/dir does not exist"),
])
def test_bad_database_options(gcn, capsys, extra, message):
    assert main(["run", str(gcn[0]), "--data", str(gcn[1])] + extra) == 2
    assert message in one_error_line(capsys)


@pytest.mark.parametrize("scale", ["inf", "nan", "-1", "0"])
def test_calibrate_scale_must_be_finite_and_positive(capsys, scale):
    assert main(["calibrate", "--scale", scale]) == 2
    assert "--scale must be a positive finite number" in one_error_line(capsys)
    with pytest.raises(se.SparseEinsumError, match="scale must be a positive finite number"):
        calibrate(scale=float(scale))


def test_a_missing_data_file(gcn, capsys):
    (gcn[1] / "W2.npy").unlink()
    assert main(["run", str(gcn[0]), "--data", str(gcn[1])]) == 2
    assert "no data for input tensor W2: expected W2.npy" in one_error_line(capsys)


def test_example_into_a_file(tmp_path, capsys):
    target = tmp_path / "afile"
    target.write_text("x")
    assert main(["example", "gcn", str(target)]) == 2
    assert f"{target} exists and is not a directory" in one_error_line(capsys)
    assert target.read_text() == "x"


def test_explain_top_is_bounded(gcn, capsys):
    assert main(["explain", str(gcn[0]), "--data", str(gcn[1]), "--top", "100000"]) == 2
    assert "at most 100 plans are ranked, not 100000" in one_error_line(capsys)
    for top in (0, -1, 100000, 2.5, True):
        with pytest.raises(PlanError, match="top must be an integer from 1 to 100"):
            se.explain("input A[i,j]\nY[i] = A[i,j]", {"A": np.ones((2, 2))}, top=top)


# -- resources ---------------------------------------------------------------------------------
def test_outputs_that_cannot_fit_are_refused_before_any_work(duck):
    duck.execute("CREATE OR REPLACE TABLE big_bound (i BIGINT, v DOUBLE)")
    duck.execute("INSERT INTO big_bound VALUES (0, 1.0), (5, 2.0)")
    steps: list[str] = []
    program = "input E[i:10000000000] from big_bound(i, v)\nY[i] = E[i] * 2"
    with pytest.raises(DataError, match=r"output Y has shape \(10000000000,\): 74.5 GiB as a "
                                        r"dense float64 array, more than the .* available"):
        with Session(program, backend=duck) as session:
            session.run(progress=steps.append)
    assert steps == []
    duck.execute("DROP TABLE big_bound")


def test_sparse_outputs_whose_row_pointer_cannot_fit_are_refused(duck):
    """A sparse matrix output comes back as CSR, which holds one int64 per row; a sparse
    vector (COO) holds its non-zeros only, whatever its declared bound."""
    edges = pd.DataFrame({"src": [0, 5, 9_999_999_999], "dst": [1, 0, 1], "w": [1.0, 2.0, 4.0]})
    program = "input E[i:10000000000,j:2]\nY[i,j] = E[i,j] * 2\nR[i] = E[i,j]\noutput {}"
    with pytest.raises(DataError, match=r"^output Y has shape \(10000000000, 2\): 74.5 GiB for "
                                        r"the row pointer of a CSR matrix, more than the .* "
                                        r"available; check the declared bounds and the keys of "
                                        r"the inputs$"):
        se.run(program.format("Y"), {"E": edges}, format="sparse", backend=duck)
    row_sums = se.run(program.format("R"), {"E": edges}, format="sparse", backend=duck)["R"]
    assert row_sums.shape == (10_000_000_000,)
    assert dict(zip(row_sums.coords[0].tolist(), row_sums.data.tolist())) == {
        0: 1.0, 5: 2.0, 9_999_999_999: 4.0}


def test_memory_cap_follows_the_engine_memory_limit(tmp_path):
    """A plan that fits the engine: half of DuckDB's memory_limit per tuple and kernel call.
    Under a 40MB limit the plan chosen without it runs out of memory; the tied one runs
    (UDF kernels)."""
    rng = np.random.default_rng(0)
    a = sp.random(200, 200, density=0.02, format="csr", random_state=1)
    h = rng.random((200, 20000))
    # S reads Y, so Y is stored (an output nothing reads would stream out of the engine)
    program = "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\nS[i] = Y[i,f]\noutput Y, S"
    limits = {"memory_limit": "40MB", "temp_directory": str(tmp_path), "native": False}
    with Session(program, {"A": a, "H": h}, native=False) as free:
        wide = free.plan("optimal")
    with Session(program, {"A": a, "H": h}, memory_cap=256e6, **limits) as untied:
        assert untied.plan("optimal").choices == wide.choices
        with pytest.raises(duckdb.OutOfMemoryException):
            untied.run(wide)
    with Session(program, {"A": a, "H": h}, **limits) as tight:
        ctx = tight.optimizer()
        assert ctx.model.cap == pytest.approx(40e6 / 2, rel=0.01)
        assert ctx.cap_source == "1/2 of DuckDB's memory_limit 38.1 MiB"
        plan = tight.plan("optimal")
        assert plan.choices != wide.choices
        assert all(ctx.model.fits(v, plan.choices[v.name]) for v in ctx.dag.vertices)
        np.testing.assert_allclose(tight.run(plan).outputs["Y"], a @ h)


def test_scalar_tuples_fit_any_memory_cap():
    """Every label promoted carries no array, so a plan fits however small the cap."""
    h = np.arange(12.0).reshape(4, 3)
    with Session("input H[j,f]\nY[f] = max(H[j,f])", {"H": h}, memory_cap=1.0) as s:
        for plan in ("optimal", "greedy"):
            chosen = s.plan(plan)
            assert all(b == 1 for choice in chosen.choices.values() for _, b in choice.tiles)
            np.testing.assert_array_equal(s.run(chosen).outputs["Y"], h.max(axis=0))


@pytest.mark.parametrize("value", ["0.5", -1.0, float("nan"), True, None])
def test_tiles_above_is_a_number_of_seconds(value):
    with pytest.raises(PlanError, match=r"^tiles_above is a number of seconds, at least 0, not "):
        Session("input H[j,f]\nY[f] = max(H[j,f])", {"H": np.ones((2, 2))}, backend=None,
                dialect=DuckDBDialect(), tiles_above=value)


# -- the Python API -------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda: se.einsum(123, A), DataError, "the subscripts must be a string such as 'ij,jk->ik', not int"),
    (lambda: se.einsum("i->i", A, plan=None), PlanError, "a plan is a string such as 'optimal', not NoneType"),
    (lambda: se.run("input A[i]\nY[i] = A[i]", {"A": A}, plan=None), PlanError, "not NoneType"),
    (lambda: se.run("input A[i]\nY[i] = A[i]", [A]), DataError, "data must be a dict"),
    (lambda: se.run("input A[i]\nY[i] = A[i]", {"A": ["a", "b"]}), DataError,
     "input A: expected numbers but the data has dtype <U1"),
    (lambda: se.einsum("i->i", ["a", "b"]), DataError,
     "einsum 'i->i': operand 0: expected numbers but the data has dtype <U1"),
    (lambda: se.einsum("i->i", "ab"), DataError, "operand 0: data must be an array, not a str"),
    (lambda: se.run("input A[i]\ninput B[i]\nY[i] = A[i] * B[i]", {"A": A}), DataError,
     "^no data for input 'B' (data was given for 'A')$"),
    (lambda: se.run("input B[i]\nY[i] = B[i]", {}), DataError,
     "^no data for input 'B' (data was given for no input)$"),
])
def test_api_arguments(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_api_takes_lists_and_sparse_vectors():
    np.testing.assert_allclose(se.einsum("ij->i", [[1, 2], [3, 4]]), [3.0, 7.0])
    vector = sp.coo_array(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(se.einsum("i,i->i", vector, A[:3]), [1.0, 0.0, 6.0])
    np.testing.assert_allclose(se.run("input V[i]\nY[i] = V[i] * 2", {"V": vector})["Y"],
                               [2.0, 0.0, 4.0])


def test_long_programs_report_progress(tmp_path, monkeypatch):
    """A program file over 1 MB says what it parses; the stages of a long program (from
    LONG_PROGRAM statements) say when they start and how long they took."""
    path = tmp_path / "long.se"
    path.write_text("input A[i:4] from edges(i, v)\nT[i] = A[i] * 2\n" + "#" * (1 << 20) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "sparse_einsum", "compile", str(path), "--dialect", "duckdb",
         "-o", str(tmp_path / "job.sql")], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr
    assert f"parsing {path} (1.0 MB) ..." in result.stderr
    assert "parsed 1 statements: " in result.stderr
    monkeypatch.setattr(session_module, "LONG_PROGRAM", 2)
    lines: list[str] = []
    with Session("input A[i]\nB[i] = A[i] * 2\nC[i] = exp(B[i])", {"A": A},
                 progress=lines.append) as session:
        session.run()
    stages = [line.split(" ...")[0] for line in lines if line.endswith(" ...")]
    assert stages == ["lowering 2 statements", "statistics and costs of 2 vertices",
                      "planning (optimal)", "compiling 2 vertices"]
    assert all(any(line.startswith(f"{stage}: ") for line in lines) for stage in stages)


def test_readme_python_snippets_run_as_written(tmp_path, monkeypatch):
    """The README's Python blocks, in order, in one namespace (as a reader pastes them)."""
    text = (REPO / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["Y"].shape == (1000, 64) and set(namespace["out"]) == {"Y"}
