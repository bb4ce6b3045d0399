"""Training in the database (sparse_einsum.train) against PyTorch: a 2-layer GCN with
softmax cross-entropy and Adam, SGD with MSE; one transaction per iteration, resuming
from the tables, seeded dropout."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import train, training
from sparse_einsum.errors import DataError, ProgramError
from sparse_einsum.training import Trainer
from sparse_einsum.training_store import training_store

torch = pytest.importorskip("torch")

GCN = """
input A[i,j]
input X[j,f]
input W1[f,h]
input W2[h,c]
AX[i,f] = A[i,j] * X[j,f]
Z1[i,h] = AX[i,f] * W1[f,h]
H[i,h]  = relu(Z1[i,h])
Z[i,c]  = A[i,j] * H[j,h] * W2[h,c]
"""
GCN_DROPOUT = GCN.replace("input W2[h,c]", "input W2[h,c]\ninput D[i:40,h:6]").replace(
    "Z[i,c]  = A[i,j] * H[j,h] * W2[h,c]", "Z[i,c]  = A[i,j] * H[j,h] * D[j,h] * W2[h,c]")


def gcn_data(n=40, f=8, h=6, c=3, seed=0):
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, 0.08, random_state=seed, format="csr") + sp.identity(n)
    degree = np.asarray(a.sum(1)).ravel() ** -0.5
    a = sp.csr_matrix(sp.diags(degree) @ a @ sp.diags(degree))
    return dict(A=a, X=rng.normal(size=(n, f)), W1=rng.normal(size=(f, h)) * 0.4,
                W2=rng.normal(size=(h, c)) * 0.4, y=rng.integers(0, c, n),
                mask=rng.random(n) < 0.6)


def torch_gcn(data, epochs, lr):
    a, x = torch.tensor(data["A"].toarray()), torch.tensor(data["X"])
    w1 = torch.tensor(data["W1"], requires_grad=True)
    w2 = torch.tensor(data["W2"], requires_grad=True)
    mask, y = torch.tensor(data["mask"]), torch.tensor(data["y"])
    opt = torch.optim.Adam([w1, w2], lr=lr)
    losses, accuracy = [], []
    for _ in range(epochs):
        opt.zero_grad()
        z = a @ torch.relu(a @ x @ w1) @ w2
        loss = torch.nn.functional.cross_entropy(z[mask], y[mask])
        loss.backward()
        opt.step()
        losses.append(loss.item())
        accuracy.append((z[mask].argmax(1) == y[mask]).double().mean().item())
    return losses, accuracy, [w1.detach().numpy(), w2.detach().numpy()]


def drop_tables(backend, prefix):
    """The tables and views a training with tables `prefix` made (views first)."""
    store = training_store(backend)
    for name in ["W1_m", "W1_v", "W2_m", "W2_v", "adam_step_size", "adam_sqrt_bias2",
                 "W1", "W2", "step", "D", "state"]:
        kind = store.kind(f"{prefix}_{name}")
        if kind:
            store.drop(f"{prefix}_{name}", kind)


def test_gcn_adam_matches_torch(backend):
    data = gcn_data()
    expected, accuracy, weights = torch_gcn(data, epochs=5, lr=0.1)
    try:
        result = train(GCN, data, loss="softmax_cross_entropy(Z, y, mask)",
                       params=["W1", "W2"], optimizer="adam", lr=0.1, epochs=5,
                       backend=backend, tables="t_gcn")
    finally:
        drop_tables(backend, "t_gcn")
    np.testing.assert_allclose(result.losses, expected, rtol=1e-9)
    np.testing.assert_allclose(result.metrics["accuracy"], accuracy, rtol=1e-12)
    np.testing.assert_allclose(result.params["W1"], weights[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(result.params["W2"], weights[1], rtol=1e-8, atol=1e-12)


def test_weight_gradient_reads_the_forward_product(backend):
    """With few features (A X first), dW1 = X^T A^T dZ1 is one product with the softmax's
    finite gradient, ordered (A X)^T dZ1, and A X is the forward pass's own intermediate:
    computed once, read by both passes; the training equals PyTorch's."""
    data = gcn_data(f=4, h=16)
    options = dict(loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"], lr=0.1)
    with Trainer(GCN, data, backend=backend, tables="t_reuse", **options) as trainer:
        dag = trainer.session.dag
        products = [v for v in dag.vertices if {o.tensor for o in v.operands} == {"A", "X"}]
        assert len(products) == 1
        readers = {v.name for v in dag.consumers(products[0].name)}
        assert len(readers) == 2 and any(r.startswith("dW1") for r in readers), readers
    expected, _, weights = torch_gcn(data, epochs=3, lr=0.1)
    try:
        result = train(GCN, data, optimizer="adam", epochs=3, backend=backend,
                       tables="t_reuse", **options)
    finally:
        drop_tables(backend, "t_reuse")
    np.testing.assert_allclose(result.losses, expected, rtol=1e-9)
    np.testing.assert_allclose(result.params["W1"], weights[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(result.params["W2"], weights[1], rtol=1e-8, atol=1e-12)


def test_parameters_stored_one_entry_per_row(backend, monkeypatch):
    """Parameters past STORE_TILE_BYTES live one entry per row, their state beside them:
    the next tables join the update and its state on the keys; the training is PyTorch's."""
    monkeypatch.setattr(training, "STORE_TILE_BYTES", 0)
    data = gcn_data()
    expected, _, weights = torch_gcn(data, epochs=3, lr=0.1)
    try:
        with Trainer(GCN, data, loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"],
                     lr=0.1, backend=backend, tables="t_rows") as trainer:
            assert trainer.job.in_place()["W1_m"] == (1, 1)
            assert list(backend.table_columns("t_rows_W1")) == ["f_0", "h_1", "val", "m", "v"]
            losses = [trainer.iterate()["loss"] for _ in range(3)]
            params = trainer.parameters()
    finally:
        drop_tables(backend, "t_rows")
    _assert_trained_as_torch(losses, params, expected, weights)


def test_training_plans_where_the_search_merges_nothing(duck, monkeypatch):
    """The DP's top-k lists can hold no consistent merge (a GCN iteration at Cora's size
    with may-be-infinite gradients found no plan on native DuckDB): greedy's plan is always
    a candidate, and it trains as PyTorch does."""
    from sparse_einsum.optimizer.search import SearchSpace
    monkeypatch.setattr(SearchSpace, "run_dp", lambda self, k, fixed: [])
    data = gcn_data()
    expected, _, weights = torch_gcn(data, epochs=2, lr=0.1)
    try:
        result = train(GCN, data, loss="softmax_cross_entropy(Z, y, mask)",
                       params=["W1", "W2"], lr=0.1, epochs=2, backend=duck, tables="t_merge")
    finally:
        drop_tables(duck, "t_merge")
    np.testing.assert_allclose(result.losses, expected, rtol=1e-9)
    np.testing.assert_allclose(result.params["W1"], weights[0], rtol=1e-8, atol=1e-12)


def test_an_iteration_issues_the_statements_it_needs(backend, monkeypatch):
    """An iteration runs the statements compiled once: one per parameter for its update
    and its optimizer state together (joined side by side; on DuckDB the whole iteration
    is one statement), the intermediates' drops, and one transaction replacing the tables
    inside the engine; only the loss and the metrics are fetched, nothing is loaded and
    A X is not computed again (the first iteration did, and kept them), and the plan is
    not chosen again."""
    data = gcn_data()
    options = dict(loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"], lr=0.1)
    try:
        with Trainer(GCN, data, backend=backend, tables="t_count", **options) as trainer:
            trainer.iterate()
            compiled, job, store = trainer.compiled, trainer.job, trainer.store
            ends = {rel.table for rel in compiled.combined.values()}
            updates = [s for s in compiled.steps if s.target.table in ends]
            if not backend.dialect.capabilities.nested_calls:
                assert [s.target.table for s in updates] == ["t_count_W1_next", "t_count_W2_next"]
            # the parameter and its state go side by side by joins, not scalar subqueries
            # (DuckDB copies a subquery's array payload again)
            assert not [s for s in updates if "(SELECT val FROM" in s.sql]
            assert not {s.vertex for s in compiled.steps} & set(job.new.values())
            calls = []
            for method in ["execute", "run", "run_and_fetch", "fetch", "load", "query", "drop"]:
                monkeypatch.setattr(backend, method, _counted(calls, method,
                                                              getattr(backend, method)))
            monkeypatch.setattr(trainer.session, "plans", None)     # no planning
            monkeypatch.setattr(trainer.session, "compile", None)   # no compiling
            trainer.iterate()
            calls, loaded = list(calls), dict(trainer._loaded)    # not the closing drops
        sql = [s for s in compiled.steps if s.kind == "sql"]
        fetched = {a.target.tensor for m, a in calls if m == "run_and_fetch"}
        if backend.dialect.capabilities.nested_calls:
            # the forward pass after A X, the loss, the metrics, the gradients and the
            # updates are one statement (`sql.shared`), whose table holds the loss, the
            # metrics and the parameters' updates and state, and becomes the state table
            shared = compiled.outputs["loss"].table
            assert compiled.outputs["accuracy"].table == shared and not fetched
            assert ends == {shared} and [s.target.table for s in updates] == [shared]
            assert [a.table for m, a in calls if m == "fetch"] == [shared, shared]
            assert len([s for s in sql if s.target.table not in loaded]) == 1
            assert set(compiled.combined_columns["t_count_W1_next"]) == {"val", "m", "v"}
        else:
            assert fetched == {"loss", "accuracy"}
        assert {rel.tensor for rel in loaded.values()} == {"A", "X", "ce_Y", "ce_w", "AX"}
        assert not [a for m, a in calls if m == "load"]
        sql = [s for s in sql if s.target.table not in loaded]
        assert [a for m, a in calls if m == "run"] == [s for s in sql
                                                       if s.target.tensor not in fetched]
        statements = [a for m, a in calls if m == "execute" and a not in {s.sql for s in sql}]
        drops = [a for m, a in calls if m == "drop"]
        replacing = [a for a in statements if not a.startswith("DROP TABLE IF")
                     and a not in ["BEGIN TRANSACTION", "COMMIT"]]
        assert replacing == [a for a in store.finish_sql(job, compiled)
                             if not a.startswith("DROP TABLE IF")]
        # in DuckDB's memory the iteration's table is renamed the state table (the next
        # tables each renamed without the extension), not copied (PostgreSQL copies)
        assert len(replacing) == (1 + 1 if backend.dialect.capabilities.nested_calls else
                                  1 * 2 + 1 if backend.dialect.engine == "duckdb" else 3 * 2 + 1)
        # each table a statement makes is dropped once, but the fetched and the next ones
        assert len(drops) == len(sql) - len(fetched) - len(updates)
        assert not [a for m, a in calls if m == "query"]
    finally:
        drop_tables(backend, "t_count")


def test_an_update_is_nested_calls_over_one_scan(duck):
    """On DuckDB a parameter's update, its new moments and its gradient are one statement
    (here the whole iteration's): nested kernel calls over one positional scan of the
    tables it reads (`sql.nested`), each read once, no common table expression and no
    join copying arrays; the training is PyTorch's."""
    data = gcn_data()
    options = dict(loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"], lr=0.1)
    expected, _, weights = torch_gcn(data, epochs=3, lr=0.1)
    try:
        with Trainer(GCN, data, backend=duck, tables="t_nested", **options) as trainer:
            for param in ("W1", "W2"):
                table = trainer.compiled.combined[trainer.job.next_table(param)].table
                step = next(s for s in trainer.compiled.steps if s.target.table == table)
                assert {p.vertex for p in step.pipelined} >= {
                    f"{param}_new", f"{param}_m_new", f"{param}_v_new"}
                assert all(p.formula for p in (step, *step.pipelined))
                scan = step.sql.split(" FROM ")[-1].split(" POSITIONAL JOIN ")
                read = [part.split(" AS ")[0] for part in scan]
                assert len(read) == len(set(read)) == len(step.reads)
                assert f'"{trainer.table(param)}"' in read
                assert " WITH " not in step.sql and " ON " not in step.sql
            losses = [trainer.iterate()["loss"] for _ in range(3)]
            params = trainer.parameters()
    finally:
        drop_tables(duck, "t_nested")
    _assert_trained_as_torch(losses, params, expected, weights)


def _assert_trained_as_torch(losses, params, expected, weights):
    np.testing.assert_allclose(losses, expected, rtol=1e-9)
    np.testing.assert_allclose(params["W1"], weights[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(params["W2"], weights[1], rtol=1e-8, atol=1e-12)


def _counted(calls, method, call):
    def counted(first, *args, **kwargs):
        calls.append((method, first))
        return call(first, *args, **kwargs)
    return counted


def test_sgd_mse_matches_torch():
    rng = np.random.default_rng(3)
    x, w, target = rng.normal(size=(12, 4)), rng.normal(size=(4, 2)), rng.normal(size=(12, 2))
    program = "input X[i,k]\ninput W[k,o]\nXW[i,o] = X[i,k] * W[k,o]\nP[i,o] = tanh(XW[i,o])"
    result = train(program, dict(X=x, W=w, T=target), loss="mse(P, T)", params=["W"],
                   optimizer="sgd", lr=0.5, epochs=4)
    tw = torch.tensor(w, requires_grad=True)
    opt = torch.optim.SGD([tw], lr=0.5)
    for epoch in range(4):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(torch.tanh(torch.tensor(x) @ tw), torch.tensor(target))
        loss.backward()
        opt.step()
        assert result.losses[epoch] == pytest.approx(loss.item(), rel=1e-12)
    np.testing.assert_allclose(result.params["W"], tw.detach().numpy(), rtol=1e-12)


def test_failed_iteration_leaves_the_previous_parameters(backend, monkeypatch):
    data = gcn_data()
    try:
        with Trainer(GCN, data, loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"],
                     lr=0.1, backend=backend, tables="t_fail") as trainer:
            trainer.iterate()
            first = trainer.parameters()
            finish = trainer.store.finish        # fails after replacing the tables

            def failing(job, compiled):
                finish(job, compiled)
                backend.execute("SELECT * FROM no_such_table")
            monkeypatch.setattr(trainer.store, "finish", failing)
            with pytest.raises(Exception, match="no_such_table"):
                trainer.iterate()
            assert trainer.step_count() == 1
            now = trainer.parameters()
            np.testing.assert_array_equal(now["W1"], first["W1"])
            np.testing.assert_array_equal(now["W2"], first["W2"])
    finally:
        drop_tables(backend, "t_fail")


def test_resume_from_a_duckdb_file(tmp_path, monkeypatch):
    data = gcn_data()
    expected, _, _ = torch_gcn(data, epochs=4, lr=0.1)
    database = str(tmp_path / "train.duckdb")
    options = dict(loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"], lr=0.1,
                   epochs=2, database=database)
    first = train(GCN, data, **options)
    second = train(GCN, data, resume=True, **options)
    np.testing.assert_allclose(first.losses + second.losses, expected, rtol=1e-9)
    monkeypatch.setattr(training, "STORE_TILE_BYTES", 0)      # tables of another layout
    with pytest.raises(DataError, match="cannot resume from table se_train_W1: its columns"):
        train(GCN, data, resume=True, **options)


def test_dropout_is_repeatable_with_a_seed():
    data = gcn_data()
    options = dict(loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"], lr=0.1,
                   epochs=2, dropout={"D": 0.5})
    one = train(GCN_DROPOUT, data, seed=7, **options).losses
    assert train(GCN_DROPOUT, data, seed=7, **options).losses == one
    assert train(GCN_DROPOUT, data, seed=8, **options).losses != one


@pytest.mark.parametrize("options,error,message", [
    (dict(loss="softmax_cross_entropy(Z, y, mask, y)"), ProgramError, "takes"),
    (dict(loss="hinge(Z, y)"), ProgramError, "unknown loss"),
    (dict(loss="softmax_cross_entropy(Z, y, nope)", mask=None), DataError, "no data named 'nope'"),
    (dict(params=["AX"]), ProgramError, "not an input"),
    (dict(optimizer="lbfgs"), ProgramError, "unknown optimizer"),
    (dict(momentum=0.9), DataError, "unknown option 'momentum'"),
    (dict(loss="softmax_cross_entropy(Z, y, y)"), DataError, "data given for 'mask'"),
])
def test_bad_training_requests(options, error, message):
    args = dict(loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"], epochs=1)
    data = gcn_data()
    if options.pop("mask", True) is None:
        del data["mask"]
    with pytest.raises(error, match=message):
        train(GCN, data, **{**args, **options})


def test_a_parameter_cannot_take_the_name_of_a_training_table():
    """``<tables>_step`` and ``<tables>_state`` hold the step count and the state of
    updates that end in a shared statement: a parameter of either name is refused."""
    rng = np.random.default_rng(0)
    data = dict(X=rng.normal(size=(4, 3)), state=rng.normal(size=(3, 2)),
                T=rng.normal(size=(4, 2)))
    program = "input X[i,k]\ninput state[k,o]\nP[i,o] = X[i,k] * state[k,o]"
    with pytest.raises(ProgramError, match="cannot be named state: training keeps"):
        train(program, data, loss="mse(P, T)", params=["state"], epochs=1)


def write_gcn(directory):
    import scipy.sparse as sparse
    data = gcn_data()
    (directory / "data").mkdir()
    (directory / "gcn.se").write_text(GCN)
    sparse.save_npz(directory / "data" / "A.npz", data["A"])
    for name in ["X", "W1", "W2", "y", "mask"]:
        np.save(directory / "data" / f"{name}.npy", data[name])
    return data


TRAIN_ARGS = ["--loss", "softmax_cross_entropy(Z, y, mask)", "--params", "W1,W2", "--lr", "0.1"]


def test_cli_train_and_a_compiled_iteration_in_the_duckdb_shell(tmp_path, duckdb_cli, capsys):
    from sparse_einsum.cli import main
    data = write_gcn(tmp_path)
    expected, _, weights = torch_gcn(data, epochs=2, lr=0.1)
    program, data_dir = str(tmp_path / "gcn.se"), str(tmp_path / "data")
    out = tmp_path / "params.npz"
    assert main(["train", program, "--data", data_dir, *TRAIN_ARGS, "--epochs", "2", "-q",
                 "--out", str(out)]) == 0
    assert f"loss {expected[0]:.6g} -> {expected[1]:.6g}" in capsys.readouterr().out
    np.testing.assert_allclose(np.load(out)["W1"], weights[0], rtol=1e-8)
    database, job = str(tmp_path / "train.duckdb"), str(tmp_path / "iteration.sql")
    assert main(["train", program, "--data", data_dir, *TRAIN_ARGS, "--epochs", "0", "-q",
                 "--database", database]) == 0
    assert main(["compile", program, "--train", "--data", data_dir, *TRAIN_ARGS,
                 "--dialect", "duckdb", "--database", database, "-o", job]) == 0
    for epoch in range(2):
        run = subprocess.run([duckdb_cli, "-unsigned", database, "-f", job], capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stderr
        shell = subprocess.run([duckdb_cli, "-unsigned", database, "-csv", "-noheader", "-c",
                                "SELECT val FROM loss"], capture_output=True, text=True)
        assert float(shell.stdout) == pytest.approx(expected[epoch], rel=1e-9)


def test_cli_explain_shows_the_backward_statements(tmp_path, capsys):
    from sparse_einsum.cli import main
    write_gcn(tmp_path)
    assert main(["explain", str(tmp_path / "gcn.se"), "--data", str(tmp_path / "data"),
                 "--loss", "softmax_cross_entropy(Z, y, mask)", "--params", "W1,W2",
                 "--top", "1"]) == 0
    text = capsys.readouterr().out
    assert "backward statements" in text and "dW1_Z1[f,h] = (dZ1_H[i,h] * AX[i,f])" in text
    assert any(line.startswith("d dW1_Z1") for line in text.splitlines())
