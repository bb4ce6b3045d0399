"""The calibration's fit (sparse_einsum.calibrate), on timings made up from known constants."""
from __future__ import annotations

import numpy as np
import pytest

from sparse_einsum.calibrate import FITTED, _fit, _Timed
from sparse_einsum.cost import DEFAULT_PARAMS

SHIPPED = DEFAULT_PARAMS["duckdb-native"]


def _timed(true: dict[str, float], features: np.ndarray, noise: float = 0.0) -> list[_Timed]:
    rng = np.random.default_rng(1)
    kernel = rng.uniform(0.0, 0.01, size=len(features))
    seconds = (kernel + features @ [true[f] for f in FITTED]) * np.exp(
        rng.normal(scale=noise, size=len(features)))
    return [_Timed("w", f"plan {k}", {}, list(row), float(kernel[k]), float(s))
            for k, (row, s) in enumerate(zip(features, seconds))]


def test_the_fit_recovers_constants_that_the_timings_identify():
    true = {"c_xfer": 2e-11, "c_fixed": 5e-9, "c_add": 1e-9, "c_group": 2e-6}
    features = np.random.default_rng(0).uniform(0, 1, size=(30, 4)) * [1e8, 1e6, 1e7, 1e3]
    found, kept = _fit(_timed(true, features), FITTED, SHIPPED)
    assert kept == []
    for name, value in true.items():
        assert found[name] == pytest.approx(value, rel=1e-3)


def test_a_constant_the_timings_cannot_tell_from_its_shipped_value_keeps_it():
    """c_group prices nothing in these plans (and c_add next to nothing, under noise):
    both keep the shipped value instead of a fit to noise; the others are fitted."""
    true = {"c_xfer": 4e-11, "c_fixed": 8e-9, "c_add": 4e-9, "c_group": 2e-5}
    features = np.random.default_rng(0).uniform(0, 1, size=(30, 4)) * [1e9, 1e7, 1e2, 0]
    found, kept = _fit(_timed(true, features, noise=0.05), FITTED, SHIPPED)
    assert kept == ["c_add", "c_group"]
    assert found["c_add"] == SHIPPED.c_add and found["c_group"] == SHIPPED.c_group
    assert found["c_xfer"] == pytest.approx(4e-11, rel=0.1)
    assert found["c_fixed"] == pytest.approx(8e-9, rel=0.1)
