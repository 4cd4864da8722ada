"""Tests for specproof.laws.numeric: the float path, measured against the exact law.

The reference is always :func:`specproof.laws.exact.emitted_law` of the same floats made exact by
:func:`specproof.laws.rational.from_floats` (exact dyadic values, then exact renormalization), and
errors are measured exactly: ``abs(Fraction(float_value) - exact_value)``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from strategies import normalize_fractions, weight_pairs

from specproof.errors import BackendUnavailable, InvalidDistribution, InvalidOption, ResidualUndefined, SpecProofError
from specproof.laws import exact, numeric
from specproof.laws.rational import from_floats

#: The bound every float result must meet against the exact law (dist and alpha).
BOUND = Fraction(1, 10**12)


# ---------------------------------------------------------------- helpers


def exact_law(p, q, atol: float = numeric.DEFAULT_ATOL) -> exact.EmittedLaw:
    """The exact law of one row pair, the floats taken at their exact dyadic values."""
    return exact.emitted_law(
        from_floats(np.asarray(p), atol=atol, name="p"), from_floats(np.asarray(q), atol=atol, name="q")
    )


def max_error(values, exact_values) -> Fraction:
    """``max_x abs(Fraction(values[x]) - exact_values[x])``, computed exactly."""
    floats = np.asarray(values, dtype=np.float64).ravel().tolist()
    exact_values = list(exact_values)
    assert len(floats) == len(exact_values)
    return max(abs(Fraction(v) - e) for v, e in zip(floats, exact_values))


def assert_no_bad_entries(dist) -> None:
    dist = np.asarray(dist)
    assert dist.dtype == np.float64
    assert not np.isnan(dist).any(), "NaN in dist"
    assert np.isfinite(dist).all(), "inf in dist"
    assert (dist >= 0).all(), f"negative entry in dist: {dist.min()!r}"


def assert_matches_exact_law(p, q, dist, alpha, atol: float = numeric.DEFAULT_ATOL) -> None:
    """Check every row of a (possibly batched) result against the exact law of that row."""
    p, q = np.asarray(p), np.asarray(q)
    v = p.shape[-1]
    assert dist.shape == p.shape
    assert np.shape(alpha) == p.shape[:-1]
    assert_no_bad_entries(dist)
    assert np.asarray(alpha).dtype == np.float64
    p2, q2, d2 = p.reshape(-1, v), q.reshape(-1, v), dist.reshape(-1, v)
    a2 = np.asarray(alpha).reshape(-1)
    for i in range(p2.shape[0]):
        law = exact_law(p2[i], q2[i], atol)
        dist_err = max_error(d2[i], law.dist())
        alpha_err = abs(Fraction(float(a2[i])) - law.alpha)
        assert dist_err < BOUND, f"row {i}: dist off from the exact law by {float(dist_err):.3g}"
        assert alpha_err < BOUND, f"row {i}: alpha off from the exact law by {float(alpha_err):.3g}"
        # p(x) == 0 exactly: the token is drafted but always rejected, never resampled.
        zero = p2[i] == 0
        assert (d2[i][zero] == 0.0).all(), f"row {i}: nonzero mass where p == 0"


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- 1-D cases


def _identical():
    p = np.random.default_rng(1).dirichlet(np.ones(20))
    return p, p.copy()


def _last_bit(seed: int):
    """q differs from p only in the last bit of two entries: residual mass ~1e-17."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(30))
    p = p / p.sum()
    q = p.copy()
    i, j = rng.choice(30, size=2, replace=False)
    q[i] = np.nextafter(q[i], 1)
    q[j] = np.nextafter(q[j], 0)
    return p, q


def _q_zero_where_p_positive():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
    q[[0, 5, 7]] = 0.0
    return p, q / q.sum()


def _p_zero_where_q_positive():
    rng = np.random.default_rng(4)
    p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
    p[[1, 2, 9]] = 0.0
    return p / p.sum(), q


def _zeros_both_ways():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(16)), rng.dirichlet(np.ones(16))
    p[[0, 3, 4]] = 0.0
    q[[1, 3, 8, 9]] = 0.0
    return p / p.sum(), q / q.sum()


def _disjoint():
    rng = np.random.default_rng(6)
    p, q = np.zeros(10), np.zeros(10)
    p[:4] = rng.dirichlet(np.ones(4))
    q[4:] = rng.dirichlet(np.ones(6))
    return p, q


def _one_hot_vs_uniform():
    p = np.zeros(7)
    p[3] = 1.0
    return p, np.full(7, 1 / 7)


def _sparse_random():
    rng = np.random.default_rng(7)
    return rng.dirichlet(np.full(64, 0.05)), rng.dirichlet(np.full(64, 0.05))


def _subnormal_residual():
    """The residual's mass is the smallest subnormal, 2**-1074."""
    return np.array([1.0, 5e-324]), np.array([1.0, 0.0])


def _v1():
    return np.array([1.0]), np.array([1.0])


def _v1_off_within_atol():
    # Both rows are off from 1 by less than DEFAULT_ATOL: accepted, divided by their sums.
    return np.array([1.0 - 5e-5]), np.array([1.0 + 5e-5])


CASES = {
    "identical": _identical,
    "last-bit-seed10": lambda: _last_bit(10),
    "last-bit-seed11": lambda: _last_bit(11),
    "last-bit-seed12": lambda: _last_bit(12),
    "q-zero-where-p-positive": _q_zero_where_p_positive,
    "p-zero-where-q-positive": _p_zero_where_q_positive,
    "zeros-both-ways": _zeros_both_ways,
    "disjoint-supports": _disjoint,
    "one-hot-vs-uniform": _one_hot_vs_uniform,
    "sparse-random": _sparse_random,
    "subnormal-residual": _subnormal_residual,
    "V=1": _v1,
    "V=1-off-within-atol": _v1_off_within_atol,
}


@pytest.mark.parametrize("name", list(CASES))
def test_1d_matches_exact_law(name):
    p, q = CASES[name]()
    dist, alpha = numeric.emitted_distribution(p, q)
    assert dist.shape == p.shape
    assert isinstance(alpha, np.float64) and np.ndim(alpha) == 0
    assert_matches_exact_law(p, q, dist, alpha)


def test_identical_draft_accepts_always():
    p, q = _identical()
    dist, alpha = numeric.emitted_distribution(p, q)
    assert alpha == 1.0
    assert exact_law(p, q).normalizer == 0


def test_last_bit_case_has_a_tiny_residual_and_the_float_path_measures_it():
    for seed in (10, 11, 12):
        p, q = _last_bit(seed)
        assert (p != q).sum() == 2
        law = exact_law(p, q)
        residual_mass = Fraction(law.normalizer, law.denominator)
        assert 0 < residual_mass < Fraction(1, 10**15)  # the case is what its name says
        # the float path on it: TV (the residual mass) and alpha within the bound of the exact law
        assert abs(Fraction(float(numeric.tv_distance(p, q))) - residual_mass) <= BOUND
        assert abs(Fraction(float(numeric.acceptance_probability(p, q))) - (1 - residual_mass)) <= BOUND


def test_p_zero_gets_exactly_zero():
    p, q = _p_zero_where_q_positive()
    assert ((p == 0) & (q > 0)).sum() == 3
    dist, _ = numeric.emitted_distribution(p, q)
    assert (dist[p == 0] == 0.0).all()


def test_disjoint_supports_never_accept():
    p, q = _disjoint()
    dist, alpha = numeric.emitted_distribution(p, q)
    assert alpha == 0.0
    assert (dist[4:] == 0.0).all()


def test_v1():
    dist, alpha = numeric.emitted_distribution([1.0], [1.0])
    assert dist.tolist() == [1.0]
    assert alpha == 1.0 and isinstance(alpha, np.float64)


# ---------------------------------------------------------------- large V, batches, dtypes


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_llama3_vocabulary_size(dtype):
    """V = 128,256 (Llama 3): one pair of softmax rows of random logits, every entry checked."""
    rng = np.random.default_rng(128256)
    logits = rng.standard_normal(128256) * 3.0
    p = softmax(logits).astype(dtype)
    q = softmax(logits + rng.standard_normal(128256)).astype(dtype)
    dist, alpha = numeric.emitted_distribution(p, q)
    assert dist.dtype == np.float64 and isinstance(alpha, np.float64)
    assert_matches_exact_law(p, q, dist, alpha)


def _batch(seed: int, b: int, v: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(v), size=b)
    q = rng.dirichlet(np.full(v, 0.3), size=b)
    return p, q


def test_batch_rows_match_exact_law():
    p, q = _batch(20, 8, 50)
    q[[0, 3, 6]] = p[[0, 3, 6]]  # identical draft on some rows
    p[1, :10] = 0.0  # p = 0 where q > 0
    p[1] /= p[1].sum()
    q[2, 10:20] = 0.0  # q = 0 where p > 0
    q[2] /= q[2].sum()
    dist, alpha = numeric.emitted_distribution(p, q)
    assert dist.shape == (8, 50) and alpha.shape == (8,)
    assert (alpha[[0, 3, 6]] == 1.0).all()
    assert_matches_exact_law(p, q, dist, alpha)


def test_3d_batch_shapes_and_values():
    rng = np.random.default_rng(21)
    p = rng.dirichlet(np.ones(17), size=(2, 3))
    q = rng.dirichlet(np.full(17, 0.5), size=(2, 3))
    q[1, 2] = p[1, 2]
    dist, alpha = numeric.emitted_distribution(p, q)
    assert dist.shape == (2, 3, 17)
    assert alpha.shape == (2, 3)
    assert alpha[1, 2] == 1.0
    assert_matches_exact_law(p, q, dist, alpha)
    assert numeric.acceptance_probability(p, q).shape == (2, 3)
    assert numeric.tv_distance(p, q).shape == (2, 3)


def test_float32_inputs():
    rng = np.random.default_rng(22)
    p = rng.dirichlet(np.ones(40), size=4).astype(np.float32)
    q = rng.dirichlet(np.full(40, 0.3), size=4).astype(np.float32)
    q[1] = p[1]
    q[2, :5] = 0.0
    q[2] /= q[2].sum()  # float32 rows are off from 1 by ~1e-7: accepted and divided by their sum
    assert np.abs(q.sum(axis=1, dtype=np.float64) - 1).max() > 0
    dist, alpha = numeric.emitted_distribution(p, q)
    assert dist.dtype == np.float64 and alpha.dtype == np.float64
    assert_matches_exact_law(p, q, dist, alpha)
    d1, a1 = numeric.emitted_distribution(p[0], q[0])
    assert isinstance(a1, np.float64)
    assert_matches_exact_law(p[0], q[0], d1, a1)


def test_rows_off_within_atol_are_renormalized_by_every_function():
    # Sums 1 + 6e-5 and 1 - 6e-5: accepted (DEFAULT_ATOL = 1e-3) and divided by their sums, so
    # every result must be that of from_floats(p), from_floats(q), not of the raw floats.
    p = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]) * (1 + 6e-5)
    q = np.array([[0.2, 0.2, 0.6], [0.7, 0.3, 0.0]]) * (1 - 6e-5)
    dist, alpha = numeric.emitted_distribution(p, q)
    assert_matches_exact_law(p, q, dist, alpha)
    tv = numeric.tv_distance(p, q)
    res = numeric.residual(p, q)
    alpha2 = numeric.acceptance_probability(p, q)
    for i in range(2):
        pe, qe = from_floats(p[i]), from_floats(q[i])
        assert abs(Fraction(float(tv[i])) - exact.tv_distance(pe, qe)) < BOUND
        assert abs(Fraction(float(alpha2[i])) - exact.acceptance_probability(pe, qe)) < BOUND
        assert max_error(res[i], exact.residual(pe, qe)) < BOUND


def test_atol_keyword_accepts_and_renormalizes():
    p = np.array([0.51, 0.5])  # sums to 1.01: refused by default, accepted with atol=0.02
    q = np.array([0.25, 0.75])
    with pytest.raises(InvalidDistribution):
        numeric.emitted_distribution(p, q)
    dist, alpha = numeric.emitted_distribution(p, q, atol=0.02)
    assert_matches_exact_law(p, q, dist, alpha, atol=0.02)


# ---------------------------------------------------------------- blocked and threaded paths


class _CountingExecutor(ThreadPoolExecutor):
    created = 0

    def __init__(self, *args, **kwargs):
        type(self).created += 1
        super().__init__(*args, **kwargs)


def _rows_alone(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row processed on its own, from a fresh copy (its own allocation and alignment)."""
    v = p.shape[-1]
    outs = [numeric.emitted_distribution(a.copy(), b.copy()) for a, b in zip(p.reshape(-1, v), q.reshape(-1, v))]
    dist = np.stack([d for d, _ in outs]).reshape(p.shape)
    alpha = np.array([a for _, a in outs]).reshape(p.shape[:-1])
    return dist, alpha


def test_threaded_large_batch_equals_rows_alone(monkeypatch):
    # V = 300,001: rows of the batch are not 64-byte aligned, unlike fresh single-row arrays.
    b, v = 4, 300_001
    assert b * v >= numeric._THREADED_ELEMENTS
    rng = np.random.default_rng(30)
    p = softmax(rng.standard_normal((b, v)) * 2.0)
    q = softmax(rng.standard_normal((b, v)) * 2.0)
    q[2] = p[2]
    q[3, ::7] = 0.0
    q[3] /= q[3].sum()
    monkeypatch.setattr(_CountingExecutor, "created", 0)
    monkeypatch.setattr(numeric, "ThreadPoolExecutor", _CountingExecutor)
    dist, alpha = numeric.emitted_distribution(p, q)
    assert _CountingExecutor.created == 1, "the batch did not take the threaded path"
    dist1, alpha1 = _rows_alone(p, q)
    assert _CountingExecutor.created == 1, "a single row took the threaded path"
    assert np.array_equal(dist, dist1)
    assert np.array_equal(alpha, alpha1)
    assert alpha[2] == 1.0
    assert_no_bad_entries(dist)
    assert np.abs(dist - p).max() < 1e-12


def test_blocked_and_threaded_small_batch_equals_rows_alone(monkeypatch):
    # Force the blocked, two-thread path on a small input: blocks of 2 rows, halves of 5 and 4.
    p, q = _batch(31, 9, 50)
    q[4] = p[4]
    monkeypatch.setattr(numeric, "_BLOCK_ELEMENTS", 100)
    monkeypatch.setattr(numeric, "_THREADED_ELEMENTS", 1)
    monkeypatch.setattr(_CountingExecutor, "created", 0)
    monkeypatch.setattr(numeric, "ThreadPoolExecutor", _CountingExecutor)
    dist, alpha = numeric.emitted_distribution(p, q)
    assert _CountingExecutor.created == 1
    monkeypatch.setattr(numeric, "_THREADED_ELEMENTS", 1 << 60)
    dist1, alpha1 = _rows_alone(p, q)
    assert np.array_equal(dist, dist1)
    assert np.array_equal(alpha, alpha1)
    assert_matches_exact_law(p, q, dist, alpha)


def test_small_batch_equals_rows_alone():
    p, q = _batch(32, 8, 50)
    dist, alpha = numeric.emitted_distribution(p, q)
    dist1, alpha1 = _rows_alone(p, q)
    assert np.array_equal(dist, dist1)
    assert np.array_equal(alpha, alpha1)


# ---------------------------------------------------------------- bad inputs


def _good(v: int = 3) -> np.ndarray:
    return np.full(v, 1.0 / v)


def _with(x: np.ndarray, index, value) -> np.ndarray:
    x = np.array(x, dtype=np.float64)
    x[index] = value
    return x


BAD = {
    "nan-in-p": (_with(_good(), 2, np.nan), _good(), r"^p\[2\] is nan, not a finite number"),
    "nan-in-q": (_good(), _with(_good(), 1, np.nan), r"^q\[1\] is nan, not a finite number"),
    "+inf": (_with(_good(), 0, np.inf), _good(), r"^p\[0\] is inf, not a finite number"),
    "-inf": (_good(), _with(_good(), 2, -np.inf), r"^q\[2\] is -inf, not a finite number"),
    "negative-p": (np.array([0.6, -0.1, 0.5]), _good(), r"^p\[1\] is .*-0\.1.*, which is negative"),
    "negative-q": (_good(), np.array([0.7, 0.5, -0.2]), r"^q\[2\] is .*-0\.2.*, which is negative"),
    "length-mismatch": (_good(3), _good(4), r"p has shape \(3,\) but q has shape \(4,\)"),
    "shape-mismatch": (np.full((2, 3), 1 / 3), np.full((3, 2), 0.5), r"p has shape \(2, 3\) but q has shape \(3, 2\)"),
    "empty": (np.zeros(0), np.zeros(0), r"shape \(0,\): V must be >= 1"),
    "empty-rows": (np.zeros((2, 0)), np.zeros((2, 0)), r"shape \(2, 0\): V must be >= 1"),
    "sum-1.01": (
        np.array([0.51, 0.5]),
        np.array([0.5, 0.5]),
        r"^p sums to 1\.01, off from 1 by more than atol=0\.001; refusing to renormalize",
    ),
    "q-sums-0.98": (_good(2), np.array([0.49, 0.49]), r"^q sums to 0\.98.*refusing to renormalize"),
    "all-zero-q": (_good(2), np.zeros(2), r"^q sums to 0\.0"),
    "scalar": (np.float64(1.0), np.float64(1.0), r"p is a scalar, not a vector"),
    "string-dtype": (np.array(["0.5", "0.5"]), _good(2), r"p has dtype <U3, not a real number dtype"),
    "bool-dtype": (np.array([True, False]), np.array([True, False]), r"p has dtype bool, not a real number dtype"),
    "object-dtype": (np.array([Fraction(1, 2), Fraction(1, 2)], dtype=object), _good(2), r"p has dtype object"),
    "complex-dtype": (np.array([0.5, 0.5], dtype=complex), _good(2), r"p has dtype complex128"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_refused(name):
    p, q, match = BAD[name]
    with pytest.raises(InvalidDistribution, match=match):
        numeric.emitted_distribution(p, q)


@pytest.mark.parametrize("name", ["nan-in-p", "-inf", "negative-q", "length-mismatch", "sum-1.01", "string-dtype"])
@pytest.mark.parametrize("func", [numeric.acceptance_probability, numeric.tv_distance, numeric.residual])
def test_bad_input_is_refused_by_every_function(func, name):
    p, q, match = BAD[name]
    with pytest.raises(InvalidDistribution, match=match):
        func(p, q)


def test_errors_are_value_errors():
    assert issubclass(InvalidDistribution, SpecProofError)
    assert issubclass(InvalidDistribution, ValueError)
    assert issubclass(ResidualUndefined, ValueError)
    with pytest.raises(ValueError):
        numeric.emitted_distribution([0.5, np.nan], [0.5, 0.5])


def test_message_names_the_batch_index():
    p = np.full((3, 5), 0.2)
    p[1, 2] = np.nan
    with pytest.raises(InvalidDistribution, match=r"^p\[1, 2\] is nan, not a finite number"):
        numeric.emitted_distribution(p, np.full((3, 5), 0.2))


def test_message_names_the_first_bad_index_of_a_3d_batch():
    p = np.full((2, 3, 4), 0.25)
    q = np.full((2, 3, 4), 0.25)
    q[1, 2, 3] = -0.25
    q[1, 2, 0] = 0.75
    p[1, 1, 1] = np.inf
    with pytest.raises(InvalidDistribution, match=r"^p\[1, 1, 1\] is inf"):
        numeric.emitted_distribution(p, q)
    p[1, 1, 1] = 0.25
    with pytest.raises(InvalidDistribution, match=r"^q\[1, 2, 3\] is .*-0\.25.*negative"):
        numeric.emitted_distribution(p, q)


def test_message_names_the_row_that_is_off():
    p, q = _batch(40, 4, 6)
    q[2] *= 1.01
    with pytest.raises(InvalidDistribution, match=r"^q\[2\] sums to 1\.01.*refusing to renormalize"):
        numeric.emitted_distribution(p, q)


def test_message_names_the_index_on_the_threaded_path():
    b, v = 4, 300_001
    p = np.full((b, v), 1.0 / v)
    q = p.copy()
    q[3, 123_456] = np.nan  # in the second thread's half
    q[1, 7] = -np.inf  # in the first half: the first bad row is the one reported
    with pytest.raises(InvalidDistribution, match=r"^q\[1, 7\] is -inf"):
        numeric.emitted_distribution(p, q)
    q[1, 7] = 1.0 / v
    with pytest.raises(InvalidDistribution, match=r"^q\[3, 123456\] is nan"):
        numeric.emitted_distribution(p, q)


# ---------------------------------------------------------------- alpha, TV, residual by hand

# p = [1/2, 1/2, 0], q = [1/4, 1/4, 1/2]:
#   min(p, q) = [1/4, 1/4, 0]    -> alpha = 1/2
#   (p - q)+  = [1/4, 1/4, 0]    -> TV = 1/2, residual = [1/2, 1/2, 0]
# p = [1/2, 3/8, 1/8], q = [1/8, 1/2, 3/8]:
#   min(p, q) = [1/8, 3/8, 1/8]  -> alpha = 5/8
#   (p - q)+  = [3/8, 0, 0]      -> TV = 3/8, residual = [1, 0, 0]
# All these values are dyadic, so the float path must produce them exactly.
HAND_P = np.array([[0.5, 0.5, 0.0], [0.5, 0.375, 0.125]])
HAND_Q = np.array([[0.25, 0.25, 0.5], [0.125, 0.5, 0.375]])
HAND_ALPHA = [0.5, 0.625]
HAND_TV = [0.5, 0.375]
HAND_RESIDUAL = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]


@pytest.mark.parametrize("row", [0, 1])
def test_hand_example_1d(row):
    p, q = HAND_P[row], HAND_Q[row]
    alpha = numeric.acceptance_probability(p, q)
    tv = numeric.tv_distance(p, q)
    assert isinstance(alpha, np.float64) and isinstance(tv, np.float64)
    assert alpha == HAND_ALPHA[row]
    assert tv == HAND_TV[row]
    assert numeric.residual(p, q).tolist() == HAND_RESIDUAL[row]
    dist, alpha2 = numeric.emitted_distribution(p, q)
    assert dist.tolist() == p.tolist()
    assert alpha2 == HAND_ALPHA[row]


def test_hand_example_batched():
    assert numeric.acceptance_probability(HAND_P, HAND_Q).tolist() == HAND_ALPHA
    assert numeric.tv_distance(HAND_P, HAND_Q).tolist() == HAND_TV
    assert numeric.residual(HAND_P, HAND_Q).tolist() == HAND_RESIDUAL
    # the same values from lists, and agreeing with the exact module
    for row in range(2):
        p, q = HAND_P[row].tolist(), HAND_Q[row].tolist()
        pe, qe = from_floats(np.array(p)), from_floats(np.array(q))
        assert Fraction(HAND_ALPHA[row]) == exact.acceptance_probability(pe, qe)
        assert Fraction(HAND_TV[row]) == exact.tv_distance(pe, qe)
        assert tuple(map(Fraction, HAND_RESIDUAL[row])) == exact.residual(pe, qe)


def test_residual_undefined_when_p_equals_q():
    with pytest.raises(ResidualUndefined, match=r"p == q"):
        numeric.residual([0.5, 0.5], [0.5, 0.5])
    p = HAND_P.copy()
    q = HAND_Q.copy()
    q[1] = p[1]
    with pytest.raises(ResidualUndefined, match=r"row \(1,\).*p == q"):
        numeric.residual(p, q)
    # emitted_distribution, alpha and TV are still defined there
    dist, alpha = numeric.emitted_distribution(p, q)
    assert alpha.tolist() == [0.5, 1.0]
    assert numeric.tv_distance(p, q).tolist() == [0.5, 0.0]
    assert dist.tolist() == p.tolist()


def test_residual_matches_exact_on_random_rows():
    p, q = _batch(50, 5, 30)
    res = numeric.residual(p, q)
    tv = numeric.tv_distance(p, q)
    alpha = numeric.acceptance_probability(p, q)
    assert res.shape == (5, 30) and tv.shape == (5,)
    for i in range(5):
        pe, qe = from_floats(p[i]), from_floats(q[i])
        assert max_error(res[i], exact.residual(pe, qe)) < BOUND
        assert abs(Fraction(float(tv[i])) - exact.tv_distance(pe, qe)) < BOUND
        assert abs(Fraction(float(alpha[i])) - exact.acceptance_probability(pe, qe)) < BOUND


def _near_identical(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """q = p except two entries moved by one ulp, at a random V in [2, 40)."""
    rng = np.random.default_rng(seed)
    v = int(rng.integers(2, 40))
    p = rng.dirichlet(np.ones(v))
    q = p.copy()
    i, j = rng.choice(v, size=2, replace=False)
    q[i] = np.nextafter(q[i], 1)
    q[j] = np.nextafter(q[j], 0)
    return p, q


@pytest.mark.parametrize("seed", [2, 6, 61])
def test_near_identical_rows_dist_alpha_tv_within_bound(seed):
    # The absolute bound holds for dist, alpha and TV even where the residual itself is
    # ill-conditioned (residual mass ~1e-17, below the rounding of the row sums).
    p, q = _near_identical(seed)
    dist, alpha = numeric.emitted_distribution(p, q)
    assert_matches_exact_law(p, q, dist, alpha)
    law = exact_law(p, q)
    assert abs(Fraction(float(numeric.tv_distance(p, q))) - law.tv) < BOUND


@pytest.mark.parametrize("seed", [2, 61])
def test_residual_near_identical_rows(seed):
    # Z ~ 1e-17: the residual is ill-conditioned; the documented contract is a row summing
    # to 1 and an absolute error of about 1e-16 / Z per entry.
    p, q = _near_identical(seed)
    res = numeric.residual(p, q)
    assert abs(res.sum() - 1) < 1e-12, f"residual sums to {res.sum()!r}, not 1"
    z = float(exact_law(p, q).normalizer) / exact_law(p, q).denominator
    assert 0 < z < 1e-15
    assert max_error(res, exact.residual(from_floats(p), from_floats(q))) < 4e-16 / z


def test_residual_rows_equal_after_rounding_are_refused_with_the_reason():
    p, q = _near_identical(6)
    assert (p != q).sum() == 2
    assert exact_law(p, q).normalizer > 0  # exactly, the rows differ
    with pytest.raises(ResidualUndefined, match="mass 0 in float64.*specproof.laws.exact.residual"):
        numeric.residual(p, q)


# ---------------------------------------------------------------- property test


@settings(max_examples=300, deadline=None)
@given(weight_pairs())
@example([(1, 1)])  # V = 1
@example([(1, 1), (2, 2), (0, 0), (5, 5)])  # p == q
@example([(3, 0), (0, 5), (0, 1)])  # disjoint supports
@example([(20, 0), (0, 20), (1, 1)])  # q = 0 where p > 0 and the reverse
def test_property_matches_exact_law(pairs):
    wp = [a for a, _ in pairs]
    wq = [b for _, b in pairs]
    p = np.array(wp, dtype=np.float64) / sum(wp)
    q = np.array(wq, dtype=np.float64) / sum(wq)
    dist, alpha = numeric.emitted_distribution(p, q)
    assert_no_bad_entries(dist)
    law = exact_law(p, q)
    assert max_error(dist, law.dist()) < BOUND
    assert abs(Fraction(float(alpha)) - law.alpha) < BOUND
    # alpha = 1 - TV, TV computed exactly from the integer weights
    pf, qf = normalize_fractions(wp), normalize_fractions(wq)
    tv = sum((max(a - b, Fraction(0)) for a, b in zip(pf, qf)), Fraction(0))
    assert abs(Fraction(float(alpha)) - (1 - tv)) < BOUND
    assert abs(Fraction(float(numeric.tv_distance(p, q))) - tv) < BOUND
    assert max_error(dist, pf) < BOUND
    assert (dist[p == 0] == 0.0).all()


def test_emit_normalizes_first_when_reject_over_z_overflows():
    # Z subnormal while the rejection mass carries rounding (1e-15): reject / Z overflows, so
    # _emit must normalize the residual first. Valid rows almost never reach this branch, so
    # it is driven directly (1e-16 / 5e-324 did not overflow: the branch was never taken)
    assert 1e-15 / 5e-324 == np.inf
    m = np.array([[0.5, 0.5, 0.0]])
    res = np.array([[0.0, 0.0, 5e-324]])
    out = np.empty((1, 3))
    numeric._emit(m, res, np.array([1e-15]), np.array([5e-324]), np.array([1.0]), out)
    assert np.isfinite(out).all()
    assert out.tolist() == [[0.5, 0.5, 1e-15]]
    # p == q rows (Z == 0) get the accept mass alone, scaled by 1/sum(p)
    m = np.array([[0.25, 0.75]])
    numeric._emit(m, np.zeros((1, 2)), np.array([0.0]), np.array([0.0]), np.array([2.0]), out[:, :2])
    assert out[0, :2].tolist() == [0.5, 1.5]


@pytest.mark.parametrize(
    "p, message",
    [
        ([[0.5, 0.5], [1.0]], "not a rectangular array"),
        (np.ma.array([0.5, 0.5, 7.0], mask=[0, 0, 1]), "masked array"),
    ],
)
def test_ragged_and_masked_inputs_are_refused(p, message):
    with pytest.raises(InvalidDistribution, match=message):
        numeric.emitted_distribution(p, p)


@pytest.mark.parametrize("atol", [None, "x", 1j, np.array([1e-4, 1e-4]), True, -1.0, 1.0])
def test_atol_must_be_a_real_number_in_0_1(atol):
    with pytest.raises(InvalidDistribution, match="atol"):
        numeric.emitted_distribution([0.5, 0.5], [0.5, 0.5], atol=atol)


# ------------------------------------------- thresholds and tolerances at their boundary


def _exact_joint_stop0(t, d, tokens):
    """Exact P(stop after 0 drafts, emit y) of the float rows (made exact by from_floats)."""
    from specproof.laws.chain import given_block_law as exact_given_block_law

    law = exact_given_block_law([from_floats(r) for r in t], [from_floats(r) for r in d], list(tokens))
    return [law.accepted_length_law[0] * e for e in law.emitted[0]]


def test_given_block_law_recompute_keeps_the_bound_on_the_reviewed_rows():
    # Found by a mutation run: with RECOMPUTE_ABOVE raised to 1e-9 this row is not recomputed
    # and the joint law at stop 0 is off by 1.05e-11 (> 1e-12); recomputed it is off by 2.3e-17.
    t = np.array([[0, 0.2331, 0.7669], [0.5, 0.25, 0.25]])
    d = np.array([[3.3e-06, 0.233097523797, 0.766899176203]])
    accepted, emitted = numeric.given_block_law(t, d, np.array([0]))
    exact_joint = _exact_joint_stop0(t, d, [0])
    # p(0) = 0: the drafted token 0 is always rejected (an independent fact of the rows)
    assert accepted.tolist() == [1.0, 0.0]
    assert max_error(accepted[0] * emitted[0], exact_joint) <= BOUND
    assert float(exact_joint[1]) == pytest.approx(0.7503645454519088, abs=1e-15)
    assert float(exact_joint[2]) == pytest.approx(0.2496354545480912, abs=1e-15)


def _estimate_case(z):
    """p = (0, 1/2, 1/2), q = (z, (1 - z)/2, (1 - z)/2), drafted token 0: rejected for sure
    (stop = 1), residual mass z, so the error estimate is (2 + log2 3) 2**-52 / z."""
    t = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    d = np.array([[z, (1 - z) / 2, (1 - z) / 2]])
    return t, d


@pytest.mark.parametrize("factor, recomputed", [(1.1, True), (0.9, False)])
def test_given_block_law_recomputes_just_above_the_threshold_only(factor, recomputed):
    # The estimate stop * (2 + log2 V) 2**-52 / z is set to 1.1x and 0.9x of RECOMPUTE_ABOVE
    # (6.25e-14 = 1e-12 / 16, the value the module documents) by the choice of z.
    threshold = 1e-12 / 16
    assert numeric.RECOMPUTE_ABOVE == threshold
    z = (2 + np.log2(3)) * 2.0**-52 / (factor * threshold)
    t, d = _estimate_case(z)
    accepted, emitted = numeric.given_block_law(t, d, np.array([0]))
    assert numeric.recomputed_positions(t, d, accepted).tolist() == [recomputed]
    assert max_error(accepted[0] * emitted[0], _exact_joint_stop0(t, d, [0])) <= BOUND
    if recomputed:  # the exact residual of the float rows, rounded once
        p_exact, q_exact = from_floats(t[0]).fractions(), from_floats(d[0]).fractions()
        res = [max(a - b, 0) for a, b in zip(p_exact, q_exact)]
        assert emitted[0].tolist() == [float(r / sum(res)) for r in res]


def test_atol_boundary_is_inclusive():
    # [0.75, 0.5] sums to 1.25, off by exactly atol = 1/4 (all values exact in binary): accepted
    for atol in (0.25, Fraction(1, 4)):
        dist, alpha = numeric.emitted_distribution([0.75, 0.5], [0.5, 0.5], atol=atol)
        # p renormalized: (3/5, 2/5); q = (1/2, 1/2): alpha = 1/2 + 2/5 = 9/10
        assert max_error(dist, [Fraction(3, 5), Fraction(2, 5)]) <= BOUND
        assert abs(Fraction(float(alpha)) - Fraction(9, 10)) <= BOUND
    with pytest.raises(InvalidDistribution, match="more than atol"):
        numeric.emitted_distribution([0.75, 0.5], [0.5, 0.5], atol=0.2499)


def test_atol_zero_accepts_exactly_normalized_rows_only():
    dist, alpha = numeric.emitted_distribution([0.5, 0.5], [0.25, 0.75], atol=0)
    assert max_error(dist, [Fraction(1, 2), Fraction(1, 2)]) <= BOUND
    assert abs(Fraction(float(alpha)) - Fraction(3, 4)) <= BOUND
    with pytest.raises(InvalidDistribution, match="more than atol"):
        numeric.emitted_distribution([0.5, 0.5 + 2.0**-53 * 2], [0.25, 0.75], atol=0)


# ---------------------------------------------------------------- backends


@pytest.mark.parametrize("backend", ["cuda", "NumPy", "", None, 1])
@pytest.mark.parametrize("func", [numeric.emitted_distribution, numeric.acceptance_probability, numeric.tv_distance])
def test_unknown_backend_is_refused(func, backend):
    with pytest.raises(InvalidOption, match=r"^backend is .*; it must be one of 'numpy', 'numba'$"):
        func([0.5, 0.5], [0.25, 0.75], backend=backend)


def test_numba_backend_without_numba_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "specproof.laws.numeric_numba", None)  # its import now raises ImportError
    with pytest.raises(BackendUnavailable, match=r"needs numba.*pip install 'specproof\[fast\]'"):
        numeric.emitted_distribution([0.5, 0.5], [0.25, 0.75], backend="numba")
    assert issubclass(BackendUnavailable, InvalidOption) and issubclass(BackendUnavailable, ValueError)
    # the default backend does not need it
    assert numeric.emitted_distribution([0.5, 0.5], [0.25, 0.75])[0].tolist() == [0.5, 0.5]


def test_crosscheck_backend_applies_to_pairs_only(capsys):
    from specproof.cli import main

    assert main(["crosscheck", "--blocks", "2", "--backend", "numba"]) == 2
    assert "--backend applies to random pairs and --real only" in capsys.readouterr().err
    assert main(["crosscheck", "--pairs", "5", "--backend", "numpy", "--json"]) == 0
    assert '"backend": "numpy"' in capsys.readouterr().out


def test_torch_tensors_that_require_grad_or_hold_bfloat16_are_read_as_their_values():
    # a new user's trial: a softmax output (requires grad) and a bfloat16 row gave torch's own errors
    torch = pytest.importorskip("torch")
    logits = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    p = torch.softmax(logits, -1)
    q = torch.tensor([0.25, 0.5, 0.25], dtype=torch.bfloat16)
    dist, alpha = numeric.emitted_distribution(p, q)
    want = numeric.emitted_distribution(p.detach().numpy(), np.array([0.25, 0.5, 0.25]))
    assert dist.tolist() == want[0].tolist() and alpha == want[1]
    # bfloat16 is widened exactly: its rows are the float32 values they hold (0.1 is 0.10009765625, 0.9 is
    # 0.8984375: a sum 1.5e-3 off from 1, renormalized under atol=0.01)
    p16 = torch.tensor([0.1, 0.9], dtype=torch.bfloat16)
    assert p16.float().tolist() == [0.10009765625, 0.8984375]
    dist, alpha = numeric.emitted_distribution(p16, [0.5, 0.5], atol=0.01)
    want = numeric.emitted_distribution(np.array([0.10009765625, 0.8984375], dtype=np.float32), [0.5, 0.5], atol=0.01)
    assert dist.tolist() == want[0].tolist() and alpha == want[1]
    with pytest.raises(InvalidDistribution, match="p has dtype complex64, not a real number dtype"):
        numeric.emitted_distribution(torch.tensor([1 + 0j, 0j]), [1.0, 0.0])
