"""Quantum-circuit workloads for the layer-by-layer simulation experiment (paper §9.2).

A circuit is transpiled to 1- and 2-qubit gates, split into ASAP layers and turned
into one ``2^n x 2^n`` unitary per layer, so that the simulation is the chain
``psi' = U_L ... U_2 U_1 psi`` (paper eq. 8).

Complex numbers are carried as real/imaginary pairs so that every tensor is real:
the state is ``S[c, i]`` (``c = 0`` real part, ``c = 1`` imaginary part) and a layer
is ``G[c, i, d, j]`` with ``S'[c, i] = sum_{d, j} G[c, i, d, j] * S[d, j]``, i.e. the
EinSum ``S'[c,i] = sum(G[c,i,d,j] * S[d,j])``. With ``U = Ur + i Ui``::

    G[0, :, 0, :] = Ur    G[0, :, 1, :] = -Ui
    G[1, :, 0, :] = Ui    G[1, :, 1, :] =  Ur

Qubit order is qiskit's (little-endian): basis index ``i = sum_q bit_q * 2^q``.
Sizes grow as ``4^n`` per layer; keep ``n <= 10``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from qiskit import QuantumCircuit, transpile
from qiskit.circuit.library import MultiplierGate, QFTGate, quantum_volume
from qiskit.converters import circuit_to_dag, dag_to_circuit
from qiskit.quantum_info import Operator, Statevector

CIRCUITS: tuple[str, ...] = ("qft", "multiplier", "quantum_volume")
BASIS_GATES: tuple[str, ...] = ("u", "cx")
MAX_QUBITS = 10


def _multiplier_sizes(n_qubits: int) -> tuple[int, int]:
    """(state qubits k, result qubits r) with 2k + r = n and k <= r <= 2k."""
    for k in range(-(-n_qubits // 4), n_qubits // 3 + 1):
        r = n_qubits - 2 * k
        if k <= r <= 2 * k:
            return k, r
    raise ValueError(f"no multiplier has exactly {n_qubits} qubits (need 3, 4 or >= 6)")


def circuit(name: str, n_qubits: int, seed: int = 0, prepare: bool = True) -> QuantumCircuit:
    """Build benchmark circuit ``name`` ("qft", "multiplier", "quantum_volume") on ``n_qubits``.

    With ``prepare`` the circuit starts with X gates writing a seeded, non-zero
    computational-basis input (the multiplier's operands, the QFT's input), so that
    simulating from ``|0...0>`` is not trivial. Quantum volume needs no preparation.
    """
    if not 1 <= n_qubits <= MAX_QUBITS:
        raise ValueError(f"n_qubits must be in 1..{MAX_QUBITS}, got {n_qubits}")
    rng = np.random.default_rng(seed)
    if name == "quantum_volume":
        qc = quantum_volume(n_qubits, seed=seed)
        qc.name = f"quantum_volume_n{n_qubits}"
        return qc
    qc = QuantumCircuit(n_qubits, name=f"{name}_n{n_qubits}")
    if name == "qft":
        inputs = list(range(n_qubits))
        gate = QFTGate(n_qubits)
    elif name == "multiplier":
        k, r = _multiplier_sizes(n_qubits)
        inputs = list(range(2 * k))  # operands a (qubits 0..k-1) and b (k..2k-1)
        gate = MultiplierGate(k, r)
    else:
        raise ValueError(f"unknown circuit {name!r}; choose from {CIRCUITS}")
    if prepare:
        bits = rng.integers(0, 2, size=len(inputs))
        if name == "multiplier":  # both operands non-zero
            k = len(inputs) // 2
            bits[0] = bits[k] = 1
        elif not bits.any():
            bits[0] = 1
        for q, b in zip(inputs, bits):
            if b:
                qc.x(q)
    qc.append(gate, range(n_qubits))
    return qc


def transpile_basis(circ: QuantumCircuit, seed: int = 0) -> QuantumCircuit:
    """Decompose into the 1-/2-qubit basis ``BASIS_GATES`` (no routing, qubits unchanged)."""
    return transpile(circ, basis_gates=list(BASIS_GATES), optimization_level=1,
                     seed_transpiler=seed)


def layer_circuits(circ: QuantumCircuit) -> list[QuantumCircuit]:
    """Transpile and split into ASAP layers of qubit-disjoint gates (``DAGCircuit.layers``).

    Layers without a unitary gate (barriers only) are dropped. Each layer has global
    phase 0 except the first, which carries the transpiled circuit's global phase.
    """
    t = transpile_basis(circ)
    layers: list[QuantumCircuit] = []
    for layer in circuit_to_dag(t).layers():
        sub = dag_to_circuit(layer["graph"])
        if any(inst.operation.name not in ("barrier",) for inst in sub.data):
            sub.global_phase = 0.0
            layers.append(sub)
    if not layers:
        layers.append(QuantumCircuit(circ.num_qubits))
    layers[0].global_phase = t.global_phase
    return layers


def iter_layer_unitaries(circ: QuantumCircuit) -> Iterator[np.ndarray]:
    """Lazily yield the layer unitaries (use for n near 10: a 10-qubit multiplier has
    ~370 layers of 16 MiB each)."""
    for layer in layer_circuits(circ):
        yield Operator(layer).data


def layer_unitaries(circ: QuantumCircuit) -> list[np.ndarray]:
    """One dense ``2^n x 2^n`` complex unitary per layer; ``U_L @ ... @ U_1 == Operator(circ)``."""
    return list(iter_layer_unitaries(circ))


def as_real_pairs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split a complex array into its (real, imaginary) float64 parts."""
    x = np.asarray(x)
    return np.ascontiguousarray(x.real, dtype=np.float64), np.ascontiguousarray(x.imag, dtype=np.float64)


def real_gate(U: np.ndarray) -> np.ndarray:
    """Real 4-D gate tensor ``G[c, i, d, j]`` (shape ``(2, N, 2, N)``) for complex ``U`` (N x N)."""
    ur, ui = as_real_pairs(U)
    n = ur.shape[0]
    if ur.shape != (n, n):
        raise ValueError(f"expected a square matrix, got shape {ur.shape}")
    g = np.empty((2, n, 2, n), dtype=np.float64)
    g[0, :, 0, :] = ur
    g[0, :, 1, :] = -ui
    g[1, :, 0, :] = ui
    g[1, :, 1, :] = ur
    return g


def real_block(U: np.ndarray) -> np.ndarray:
    """The ``2N x 2N`` real block matrix ``[[Ur, -Ui], [Ui, Ur]]`` (``real_gate`` flattened)."""
    n = np.shape(U)[0]
    return real_gate(U).reshape(2 * n, 2 * n)


def real_state(psi: np.ndarray | Statevector) -> np.ndarray:
    """Real state tensor ``S[c, i]`` (shape ``(2, N)``) of a complex state vector."""
    data = psi.data if isinstance(psi, Statevector) else np.asarray(psi)
    return np.stack(as_real_pairs(data.reshape(-1)))


def complex_state(S: np.ndarray) -> np.ndarray:
    """Inverse of ``real_state``: ``S[0] + 1j * S[1]``."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != 2:
        raise ValueError(f"expected shape (2, N), got {S.shape}")
    return S[0] + 1j * S[1]


def initial_state(n_qubits: int) -> np.ndarray:
    """Real state tensor of ``|0...0>``."""
    s = np.zeros((2, 2 ** n_qubits), dtype=np.float64)
    s[0, 0] = 1.0
    return s


def simulate_real(gates: Iterable[np.ndarray], state: np.ndarray) -> np.ndarray:
    """Apply real gate tensors in order: ``S = einsum('cidj,dj->ci', G, S)`` per layer."""
    for g in gates:
        state = np.einsum("cidj,dj->ci", g, state)
    return state


def reference_statevector(circ: QuantumCircuit, initial: np.ndarray | None = None) -> np.ndarray:
    """Qiskit's final state vector (complex, length ``2^n``), from ``|0...0>`` or ``initial``."""
    sv = Statevector.from_label("0" * circ.num_qubits) if initial is None else Statevector(initial)
    return sv.evolve(circ).data
