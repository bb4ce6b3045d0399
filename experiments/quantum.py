"""Quantum circuit simulation as an EinSum program (paper §9.2, eq. 8).

A circuit from ``experiments.circuits`` (QFT, multiplier, quantum volume) is transpiled to
1- and 2-qubit gates and split into ASAP layers; each layer becomes one real gate
tensor ``G<k>[c,i,d,j]`` (complex numbers as real/imaginary pairs, ``c``/``d`` = 0
real, 1 imaginary) and the simulation is one statement per layer. For three
layers the program is::

    # Layer-by-layer simulation of a 3-layer circuit: S<k> = G<k> S<k-1>.
    input S0[d,j]             # initial state |0...0> as (real, imag) x 2^n
    input G1[c,i,d,j]         # layer unitaries, real/imag block form
    input G2[c,i,d,j]
    input G3[c,i,d,j]
    S1[c,i] = G1[c,i,d,j] * S0[d,j]
    S2[c,i] = G2[c,i,d,j] * S1[d,j]
    S3[c,i] = G3[c,i,d,j] * S2[d,j]
    output S3

A layer's unitary is a tensor product of 1- and 2-qubit gates, so ``G<k>`` is
mostly zeros (a layer of ``m`` CX gates and ``u`` gates has at most
``2^(#u + 1) * 2^n`` of its ``4^n`` entries non-zero); the gates are passed as dense
NumPy arrays and the optimizer's statistics see that sparsity, so the optimizer
decides whether ``i``/``j`` become relational keys.

    from experiments.quantum import quantum_workload, quantum_reference
    program_text, data = quantum_workload("qft", 5)
    expected = quantum_reference("qft", 5)       # (2, 32) real/imag, from qiskit

    python -m experiments.quantum qft 5 [--plan optimal] [--repeats 3] [--out FILE.csv]
                                 [--backend duckdb|postgres|spark ...] [--dsn DSN]
    # side by side with dense NumPy on each backend (DuckDB unless given; one open
    # backend each, Spark on local[2]), every result checked against qiskit
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from .circuits import (CIRCUITS, circuit, complex_state, initial_state, iter_layer_unitaries,
                       real_gate, real_state, reference_statevector)


def circuit_program(n_layers: int) -> str:
    """The .se program text simulating ``n_layers`` layers: inputs S0, G1..G<n>, output S<n>."""
    if n_layers < 1:
        raise ValueError(f"a circuit program needs at least one layer, got {n_layers}")
    lines = [f"# Layer-by-layer simulation of a {n_layers}-layer circuit: S<k> = G<k> S<k-1>.",
             "input S0[d,j]             # initial state (real, imag) x 2^n"]
    lines += [f"input G{k}[c,i,d,j]" for k in range(1, n_layers + 1)]
    lines += [f"S{k}[c,i] = G{k}[c,i,d,j] * S{k - 1}[d,j]" for k in range(1, n_layers + 1)]
    lines.append(f"output S{n_layers}")
    return "\n".join(lines) + "\n"


def output_name(data: dict[str, object]) -> str:
    """The output tensor of a quantum workload's program (``S<number of layers>``)."""
    return f"S{sum(1 for k in data if k.startswith('G'))}"


def quantum_workload(name: str, n_qubits: int, seed: int = 0) -> tuple[str, dict[str, np.ndarray]]:
    """Program text and data (``S0``, ``G1``..``G<L>`` as dense float64 arrays) for a circuit."""
    circ = circuit(name, n_qubits, seed=seed)
    data: dict[str, np.ndarray] = {"S0": initial_state(n_qubits)}
    for k, u in enumerate(iter_layer_unitaries(circ), 1):
        g = real_gate(u)
        g[np.abs(g) < 1e-15] = 0.0      # exact zeros where the tensor product has none
        data[f"G{k}"] = g
    return circuit_program(len(data) - 1), data


def quantum_reference(name: str, n_qubits: int, seed: int = 0) -> np.ndarray:
    """Qiskit's final state of the same circuit from |0...0>, as a real (2, 2^n) tensor."""
    return real_state(reference_statevector(circuit(name, n_qubits, seed=seed)))


def numpy_simulate(data: dict[str, np.ndarray]) -> np.ndarray:
    """The same layer chain evaluated with dense complex NumPy matrix-vector products."""
    psi = complex_state(data["S0"])
    for k in range(1, len(data)):
        g = data[f"G{k}"]
        psi = (g[0, :, 0, :] + 1j * g[1, :, 0, :]) @ psi
    return real_state(psi)


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("circuit", choices=CIRCUITS)
    ap.add_argument("n_qubits", type=int)
    ap.add_argument("--plan", default="optimal")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="write the medians to this CSV file")
    ap.add_argument("--backend", action="append", choices=("duckdb", "postgres", "spark"),
                    help="engine to run on (repeat for several; default duckdb)")
    ap.add_argument("--dsn", help="PostgreSQL connection string (default $SE_TEST_PG_DSN)")
    args = ap.parse_args(argv)
    from sparse_einsum.api import run
    from sparse_einsum.backends import open_backend

    from . import harness
    from .common import Report
    report, provenance = Report(), harness.Provenance("quantum", argv)
    report(provenance.header())
    text, data = quantum_workload(args.circuit, args.n_qubits)
    gates = [v for k, v in data.items() if k.startswith("G")]
    density = np.mean([np.count_nonzero(g) / g.size for g in gates])
    report(f"{args.circuit} on {args.n_qubits} qubits: {len(gates)} layers, "
           f"mean gate density {density:.4f}")
    expected, errors = quantum_reference(args.circuit, args.n_qubits), []
    dsn = {"postgres": {"dsn": args.dsn or os.environ.get("SE_TEST_PG_DSN")}}
    backends = {name: open_backend(name, **dsn.get(name, {}))[0]
                for name in args.backend or ["duckdb"]}
    methods = {"numpy dense": lambda: numpy_simulate(data)}
    for name, backend in backends.items():
        methods[f"se.run on {name}, plan {args.plan}"] = (
            lambda b=backend: run(text, data, plan=args.plan, backend=b)[output_name(data)])
    try:
        timings = harness.side_by_side(
            methods, args.repeats,
            check=lambda name, out: errors.append(np.abs(out - expected).max()))
    finally:
        for backend in backends.values():
            backend.close()
    report.timings(f"{args.circuit}, {args.n_qubits} qubits", timings, "numpy dense",
                   circuit=args.circuit, qubits=args.n_qubits)
    report(f"max |result - qiskit| = {max(errors):.2e}")
    if args.out:
        harness.write_csv(args.out, report.rows, provenance)
    return 0 if max(errors) < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(_main())
