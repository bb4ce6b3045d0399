"""The sparse-einsum command line, called in-process through `main`."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import examples
from sparse_einsum.cli import main
from sparse_einsum.cost import CostParams, load_params

REPO_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SUBCOMMANDS = ["run", "explain", "compile", "calibrate", "install-kernels", "cleanup", "example"]


@pytest.fixture
def gcn(tmp_path) -> tuple[Path, Path]:
    """gcn.se and gcn_data/ written by `sparse-einsum example gcn DIR`."""
    assert main(["example", "gcn", str(tmp_path)]) == 0
    return tmp_path / "gcn.se", tmp_path / "gcn_data"


def numpy_gcn(data_dir: Path) -> dict[str, np.ndarray]:
    a = sp.load_npz(data_dir / "A.npz").toarray()
    x, w1, w2 = (np.load(data_dir / f"{n}.npy") for n in ("X", "W1", "W2"))
    h = np.maximum(a @ x @ w1, 0)
    z = a @ h @ w2
    return {"Z": z, "M": z.max(axis=1)}


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sparse-einsum: error: "), err
    return lines[0]


# -- running ------------------------------------------------------------------
@pytest.mark.parametrize("plan", ["relational", "dense", "random:3", None])
def test_run_gcn_matches_numpy(gcn, tmp_path, capsys, plan):
    program, data = gcn
    out = tmp_path / "out.npz"
    chosen = ["--plan", plan] if plan else []        # None: the default plan (optimal)
    assert main(["run", str(program), "--data", str(data), *chosen, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"plan: {plan}" if plan else "plan: ")
    assert "Z" in captured.out and "(34, 2)" in captured.out and "(34,)" in captured.out
    assert "] Z[" in captured.err                          # a progress line
    got = np.load(out)
    want = numpy_gcn(data)
    assert sorted(got.files) == ["M", "Z"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-12)


def test_run_quiet_prints_no_progress(gcn, capsys):
    program, data = gcn
    assert main(["run", str(program), "--data", str(data), "--plan", "dense", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines()[0] == "plan: dense"


def test_run_softmax(tmp_path, capsys):
    assert main(["example", "softmax", str(tmp_path)]) == 0
    out = tmp_path / "e.npz"
    assert main(["run", str(tmp_path / "softmax.se"), "--data", str(tmp_path / "softmax_data"),
                 "--plan", "relational", "--out", str(out), "-q"]) == 0
    c = np.load(tmp_path / "softmax_data" / "C.npy")
    np.testing.assert_allclose(np.load(out)["E"], np.exp(c) / np.exp(c).sum(), rtol=1e-9)


def test_python_dash_m_entry_point(monkeypatch):
    import runpy
    monkeypatch.setattr(sys, "argv", ["sparse-einsum", "example", "--help"])
    with pytest.raises(SystemExit) as exc:
        runpy.run_module("sparse_einsum", run_name="__main__")
    assert exc.value.code == 0


def test_files_for_undeclared_tensors_are_ignored(gcn, capsys):
    program, data = gcn
    np.save(data / "Unused.npy", np.ones(3))
    (data / "notes.txt").write_text("not a tensor")
    assert main(["run", str(program), "--data", str(data), "--plan", "dense", "-q"]) == 0


def test_backend_options_are_passed(gcn, monkeypatch, capsys):
    seen = {}

    def fake_session(program, data, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop here\nsecond line")
    monkeypatch.setattr("sparse_einsum.session.Session", fake_session)
    program, data = gcn
    code = main(["run", str(program), "--data", str(data), "--plan", "dense",
                 "--database", "x.duckdb", "--memory-limit", "2GB"])
    assert code == 1
    assert capsys.readouterr().err.strip() == "sparse-einsum: failed: RuntimeError: stop here"
    assert seen["database"] == "x.duckdb" and seen["memory_limit"] == "2GB"
    assert seen["backend"] == "duckdb" and "dsn" not in seen

    seen.clear()
    main(["run", str(program), "--data", str(data), "--backend", "postgres", "--dsn", "host=x"])
    assert seen["dsn"] == "host=x" and "database" not in seen and "memory_limit" not in seen


def test_debug_reraises_unexpected_errors(gcn, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr("sparse_einsum.session.Session", boom)
    program, data = gcn
    with pytest.raises(RuntimeError, match="boom"):
        main(["--debug", "run", str(program), "--data", str(data)])
    with pytest.raises(RuntimeError, match="boom"):
        main(["run", str(program), "--data", str(data), "--debug"])


def test_option_of_the_other_backend_is_a_usage_error(gcn, capsys):
    program, data = gcn
    assert main(["run", str(program), "--data", str(data), "--dsn", "host=x"]) == 2
    assert "--dsn does not apply to --backend duckdb" in error_line(capsys)
    assert main(["run", str(program), "--data", str(data), "--backend", "postgres",
                 "--memory-limit", "1GB"]) == 2
    assert "--memory-limit does not apply to --backend postgres" in error_line(capsys)
    assert main(["explain", str(program), "--data", str(data), "--spark", "local[2]"]) == 2
    assert "--spark does not apply to --backend duckdb" in error_line(capsys)
    assert main(["calibrate", "--backend", "spark", "--dsn", "host=x"]) == 2
    assert "--dsn does not apply to --backend spark" in error_line(capsys)


def test_backend_choices_come_from_the_registry():
    from sparse_einsum.backends import BACKENDS
    from sparse_einsum.cli import build_parser
    for command in ("run", "explain", "calibrate"):
        args = build_parser().parse_args([command, "--backend", "spark"] + (
            ["P.se", "--data", "D"] if command != "calibrate" else []))
        assert args.backend == "spark" and "spark" in BACKENDS


# -- errors -------------------------------------------------------------------
def test_syntax_error_names_file_line_and_column(gcn, tmp_path, capsys):
    _, data = gcn
    bad = tmp_path / "bad.se"
    bad.write_text("input A[i,j]\nB[i] = A[i,j] *\n")
    assert main(["run", str(bad), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert f"{bad}:2:16: " in line and "end of line" in line


def test_undefined_tensor(gcn, tmp_path, capsys):
    _, data = gcn
    bad = tmp_path / "undef.se"
    bad.write_text("input A[i,j]\nB[i] = A[i,j] * Q[j]\n")
    assert main(["run", str(bad), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert f"{bad}:2:17: " in line and "undefined tensor 'Q'" in line


def test_missing_program_file(gcn, tmp_path, capsys):
    _, data = gcn
    assert main(["run", str(tmp_path / "nope.se"), "--data", str(data)]) == 2
    assert "nope.se" in error_line(capsys)


def test_missing_data_file_names_tensor_and_files(gcn, capsys):
    program, data = gcn
    (data / "W2.npy").unlink()
    assert main(["run", str(program), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert "input tensor W2" in line and "W2.npy" in line and "W2.npz" in line


def test_missing_data_directory(gcn, tmp_path, capsys):
    program, _ = gcn
    assert main(["run", str(program), "--data", str(tmp_path / "absent"), "--plan", "dense"]) == 2
    assert "absent" in error_line(capsys)


def test_npz_that_is_not_sparse(gcn, capsys):
    program, data = gcn
    (data / "A.npz").unlink()
    np.savez(data / "A.npz", a=np.eye(34))
    assert main(["run", str(program), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert str(data / "A.npz") in line and "not a scipy sparse matrix" in line


def test_two_files_for_one_tensor(gcn, capsys):
    program, data = gcn
    np.save(data / "A.npy", np.eye(34))
    assert main(["run", str(program), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert "A.npy" in line and "A.npz" in line


def test_wrong_rank_data(gcn, capsys):
    program, data = gcn
    np.save(data / "W2.npy", np.ones(8))
    assert main(["run", str(program), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert "'W2'" in line and "rank 2" in line and "rank 1" in line


def test_shape_disagrees_with_declared_bound(gcn, capsys):
    program, data = gcn
    np.save(data / "X.npy", np.ones((34, 15)))    # declared X[j, f:16]
    assert main(["run", str(program), "--data", str(data), "--plan", "dense"]) == 2
    line = error_line(capsys)
    assert "'X'" in line and "'f'" in line and "16" in line and "15" in line


@pytest.mark.parametrize("plan", ["bogus", "random:x"])
def test_bad_plan(gcn, capsys, plan):
    program, data = gcn
    assert main(["run", str(program), "--data", str(data), "--plan", plan]) == 2
    assert repr(plan) in error_line(capsys)


def test_unknown_subcommand(capsys):
    assert main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in error_line(capsys)


@pytest.mark.parametrize("argv", [[], ["run", "x.se"], ["explain", "x.se", "--data", "d",
                                                        "--top", "0"],
                                  ["compile", "x.se", "-o", "-"], ["example", "nope", "d"]])
def test_usage_errors(capsys, argv):
    assert main(argv) == 2
    error_line(capsys)


@pytest.mark.parametrize("command", [[]] + [[c] for c in SUBCOMMANDS])
def test_help(capsys, command):
    assert main(command + ["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: sparse-einsum")
    assert "example" in out


def test_console_script_help():
    exe = shutil.which("sparse-einsum")
    if exe is None:
        pytest.skip("the sparse-einsum console script is not installed")
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: sparse-einsum" in result.stdout
    for command in SUBCOMMANDS:
        assert command in result.stdout


# -- other subcommands, with their library functions replaced by fakes ----------
def fake_module(monkeypatch, name: str, **functions) -> list:
    calls: list = []
    module = types.ModuleType(name)
    for fn_name, result in functions.items():
        def fn(*args, _result=result, _name=fn_name, **kwargs):
            calls.append((_name, args, kwargs))
            return _result(*args, **kwargs) if callable(_result) else _result
        setattr(module, fn_name, fn)
    monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_explain_arguments(gcn, monkeypatch, capsys):
    calls: list = []

    def fake_explain(*args, **kwargs):
        calls.append(("explain", args, kwargs))
        return {"plans": [{"name": "dense", "cost": np.float64(2.5)}]}
    monkeypatch.setattr("sparse_einsum.api.explain", fake_explain)
    monkeypatch.setattr("sparse_einsum.explanation.format_explanation", lambda result: "FORMATTED")
    program, data = gcn
    assert main(["explain", str(program), "--data", str(data), "--top", "5", "--analyze"]) == 0
    assert capsys.readouterr().out.strip() == "FORMATTED"
    name, args, kwargs = calls[0]
    assert name == "explain" and set(args[1]) == {"A", "X", "W1", "W2"}
    assert kwargs == {"top": 5, "analyze": True, "backend": "duckdb"}

    assert main(["explain", str(program), "--data", str(data), "--json",
                 "--backend", "postgres", "--dsn", "host=x"]) == 0
    assert '"cost": 2.5' in capsys.readouterr().out
    assert calls[-1][2] == {"top": 3, "analyze": False, "backend": "postgres", "dsn": "host=x"}


def test_compile_arguments(gcn, monkeypatch, tmp_path, capsys):
    calls = fake_module(monkeypatch, "sparse_einsum.compile_job", compile_job="SELECT 1;\n")
    program, data = gcn
    out = tmp_path / "job.sql"
    assert main(["compile", str(program), "--dialect", "postgres", "-o", str(out),
                 "--data", str(data), "--plan", "dense"]) == 0
    assert out.read_text() == "SELECT 1;\n"
    _, args, kwargs = calls[0]
    assert kwargs["dialect"] == "postgres" and kwargs["plan"] == "dense"
    assert set(kwargs["data"]) == {"A", "X", "W1", "W2"}

    assert main(["compile", str(program), "--dialect", "duckdb", "-o", "-"]) == 0
    assert capsys.readouterr().out == "SELECT 1;\n"
    assert calls[-1][2] == {"dialect": "duckdb", "data": None}
    assert main(["compile", str(program), "--dialect", "sqlite", "-o", "-"]) == 2


def test_calibrate_measures_and_stores_constants(tmp_path, monkeypatch, capsys):
    """A real (small) calibration on DuckDB, of both kernel paths; the optimizer then reads
    each path's stored constants."""
    out = tmp_path / "calibration.json"
    assert main(["calibrate", "--scale", "0.05", "--output", str(out)]) == 0
    printed = capsys.readouterr()
    assert "c_load_byte" in printed.out and str(out) in printed.err
    assert "duckdb-native: kernels native C" in printed.out
    monkeypatch.setenv("SPARSE_EINSUM_CONFIG", str(out))
    for dialect in ("duckdb-native", "duckdb"):
        stored = json.loads(out.read_text())[dialect]
        assert set(stored) == set(CostParams.__dataclass_fields__)
        # one machine, statements that schedule no jobs
        assert stored["c_shuffle"] == stored["c_statement"] == 0.0
        assert stored["parallelism"] == 1.0
        # c_gemm_rows: single rows against one matrix, timed apart from blocks (c_gemm)
        assert all(value > 0 for key, value in stored.items()
                   if key not in ("c_shuffle", "c_statement"))
        assert load_params(dialect) == CostParams(**stored)
    assert main(["calibrate", "--scale", "0"]) == 2
    assert main(["calibrate", "--dsn", "host=x"]) == 2


def test_install_kernels_arguments(monkeypatch, capsys):
    calls = fake_module(monkeypatch, "sparse_einsum.backends.pg_kernels", install_kernels="1.0")
    assert main(["install-kernels", "--dsn", "host=x"]) == 0
    assert "1.0" in capsys.readouterr().out
    assert calls[0][1] == ("host=x",)
    assert main(["install-kernels"]) == 2


def test_library_errors_from_subcommands_are_one_line(monkeypatch, capsys):
    from sparse_einsum.errors import BackendError

    def fail(dsn):
        raise BackendError("make install failed in /tmp/x:\nline 1\nline 2")
    fake_module(monkeypatch, "sparse_einsum.backends.pg_kernels", install_kernels=fail)
    assert main(["install-kernels", "--dsn", "host=x"]) == 2
    line = error_line(capsys)
    assert "make install failed in /tmp/x:" in line and "2 more lines" in line


# -- examples -------------------------------------------------------------------
def test_shipped_examples_are_current():
    """examples/ holds what examples/make_examples.py writes (rerun it after a change)."""
    for name, example in examples.EXAMPLES.items():
        assert (REPO_EXAMPLES / f"{name}.se").read_text() == example.program
        built = example.data()
        data_dir = REPO_EXAMPLES / f"{name}_data"
        assert sorted(p.stem for p in data_dir.iterdir()) == sorted(built)
        for tensor, value in built.items():
            if sp.issparse(value):
                stored = sp.load_npz(data_dir / f"{tensor}.npz")
                assert (stored != value).nnz == 0
            else:
                np.testing.assert_array_equal(np.load(data_dir / f"{tensor}.npy"), value)


def test_example_data_is_deterministic(tmp_path):
    examples.write_example("gcn", tmp_path / "a")
    examples.write_example("gcn", tmp_path / "b")
    for path in sorted((tmp_path / "a" / "gcn_data").iterdir()):
        assert path.read_bytes() == (tmp_path / "b" / "gcn_data" / path.name).read_bytes()


def test_gcn_reference_matches_independent_numpy(gcn):
    _, data = gcn
    reference = examples.gcn_reference(examples.gcn_data())
    for name, want in numpy_gcn(data).items():
        np.testing.assert_allclose(reference[name], want, rtol=1e-12)
