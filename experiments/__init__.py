"""Benchmarks, workloads and data generators of sparse-einsum (not installed with the library).

Run the scripts as modules from the repository root::

    python -m experiments.bench --workload gcn2 --quick
    python -m experiments.bench_optimizer
    python -m experiments.bench_spmm
    python -m experiments.bench_native
    python -m experiments.bench_pg_kernels
    python -m experiments.out_of_core
    python -m experiments.datasets --list
    python -m experiments.quantum qft 5

and import its modules as ``experiments.workloads``, ``experiments.datasets``,
``experiments.circuits`` and so on. Tables (CSV) go to ``experiments/results``; charts
and logs to ``experiments/results/generated`` (ignored by git) unless ``--publish``.
"""
