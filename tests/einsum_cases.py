"""The einsum corpus of the differential tests: expressions, inputs and densities."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

EXPRESSIONS = [
    # scalars and element-wise
    ",->", ",i->i", "i,->i", "ij,->ij", "i,i->i", "ij,ij->ij", "ijk,ijk->ijk", "ij,ji->ij",
    # transposes
    "ij->ji", "ijk->kji", "ijk->jik", "ijkl->ljki", "ji",
    # collapses
    "i->", "ij->i", "ij->j", "ij->", "ijk->i", "ijk->ik", "ijk->",
    # outer products
    "i,j->ij", "i,j->ji", "ij,k->ijk", "i,jk->kji", "ij,kl->ijkl", "i,j",
    # inner products
    "i,i->", "ij,ij->", "ijk,ijk->", "ij,ij",
    # GEMM-like
    "ij,jk->ik", "ij,kj->ik", "ji,jk->ik", "ij,jk->ki", "ij,j->i", "i,ij->j", "bij,bjk->bik",
    "bij,bjk->bk", "ijk,kl->ijl", "ijk,jkl->il", "ij,jk", "ijk,ikj",
    # diagonals
    "ii->i", "ii->", "ii", "iij->ij", "iij->j", "iji->ij", "ii,i->i", "ij,ii->j", "iij,jk->ik",
    # 3 to 6 operands
    "ij,jk,kl->il", "ij,jk,kl->", "i,ij,j->", "ij,jk,kl,lm->im", "ab,bc,cd,de,ef->af",
    "ab,bc,cd,de,ef,fa->", "ij,ik,il->jkl", "ijk,jl,kl->i", "a,b,c->abc", "ij,jk,ki->",
    "ij,j,j->i", "ijk,jkl,lm,m->i", "ab,ac,ad->bcd", "i,i,i,i->i",
]

DENSITIES = [0.0, 0.02, 0.3, 1.0]
_SIZES = dict(zip("abcdefijklm", [3, 4, 2, 3, 4, 2, 4, 5, 3, 4, 3]))
_SIZES["b"] = 3


def _terms(expression: str) -> list[str]:
    return expression.split("->")[0].split(",")


def operands(expression: str, density: float, seed: int, sparse_matrices: bool = False):
    """Random operands with about `density` non-zeros (mixed signs); 2-D ones optionally scipy."""
    rng = np.random.default_rng(seed)
    result = []
    for term in _terms(expression):
        shape = tuple(_SIZES[c] for c in term)
        values = rng.uniform(-2.0, 2.0, size=shape)
        mask = rng.random(shape) < density
        x = np.where(mask, values, 0.0)
        if sparse_matrices and x.ndim == 2:
            x = sp.csr_matrix(x)
        result.append(x if shape else float(x))
    return result


def reference(expression: str, ops) -> np.ndarray:
    dense = [o.toarray() if sp.issparse(o) else np.asarray(o, dtype=float) for o in ops]
    return np.einsum(expression, *dense)
