"""Tests for the float path's numba backend (specproof.laws.numeric_numba, ``backend="numba"``).

It must give the NumPy path's law within the stated bound (both are measured against the exact
law of the same floats), refuse exactly what the NumPy path refuses with the same messages, and
sum each row with the error bound its module states. Skipped when numba is not installed
(``pip install 'specproof[fast]'``), unless SPECPROOF_REQUIRE_NUMBA=1 (set by .ci/run, which
installs the extra): then they fail. The kernel compiles once (about 10 s) and is cached on disk.
"""

from __future__ import annotations

import os
import re
from fractions import Fraction

import numpy as np
import pytest
from test_numeric import BAD, BOUND, CASES, _batch, _CountingExecutor, assert_matches_exact_law, max_error, softmax

from specproof.errors import InvalidDistribution
from specproof.laws import numeric

try:
    import numba  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    if os.environ.get("SPECPROOF_REQUIRE_NUMBA") == "1":
        raise
    pytest.skip("numba is not installed (pip install 'specproof[fast]')", allow_module_level=True)

from specproof.laws import numeric_numba  # noqa: E402

U = Fraction(1, 2**53)


def both(p, q, **kw):
    """(dist, alpha) of the NumPy path and of the numba backend."""
    return numeric.emitted_distribution(p, q, **kw), numeric.emitted_distribution(p, q, backend="numba", **kw)


def assert_same_law(p, q, **kw):
    """numba's dist and alpha within the stated bound of NumPy's, and of the exact law."""
    (d0, a0), (d1, a1) = both(p, q, **kw)
    assert d1.shape == d0.shape and np.shape(a1) == np.shape(a0)
    assert d1.dtype == np.float64
    assert np.abs(d1 - d0).max() <= numeric.ERROR_BOUND
    assert np.abs(np.asarray(a1) - np.asarray(a0)).max() <= numeric.ERROR_BOUND
    assert_matches_exact_law(p, q, d1, a1, **kw)
    return d1, a1


@pytest.mark.parametrize("name", list(CASES))
def test_edge_cases_match_numpy_and_exact_law(name):
    p, q = CASES[name]()
    assert_same_law(p, q)


# lengths around the kernel's chunks (16, 128, 1024, 8192 entries) and the last, padded one
LENGTHS = [
    1,
    2,
    3,
    7,
    8,
    9,
    15,
    16,
    17,
    100,
    127,
    128,
    129,
    1000,
    1023,
    1024,
    1025,
    8191,
    8192,
    8193,
    3 * 8192 + 5,
    50_000,
]


@pytest.mark.parametrize("v", LENGTHS)
def test_random_rows_match_numpy_and_exact_law(v):
    rng = np.random.default_rng(v)
    p = softmax(rng.standard_normal((3, v)) * 3.0)
    q = softmax(rng.standard_normal((3, v)) * 3.0)
    if v >= 4:
        q[1, ::3] = 0.0  # zeros in q, renormalized: tokens the draft never proposes
        q[1] /= q[1].sum()
        p[2, 1::2] = 0.0
        p[2] /= p[2].sum()
    assert_same_law(p, q)


@pytest.mark.parametrize("v", [1, 5, 16, 1000, 9000])
def test_p_equal_q_accepts_always(v):
    p = softmax(np.random.default_rng(v).standard_normal((2, v)))
    dist, alpha = assert_same_law(p, p.copy())
    assert np.asarray(alpha).tolist() == [1.0, 1.0]
    assert numeric.tv_distance(p, p, backend="numba").tolist() == [0.0, 0.0]
    assert numeric.acceptance_probability(p, p, backend="numba").tolist() == [1.0, 1.0]


@pytest.mark.parametrize("v", [2, 17, 2000, 8200])
def test_disjoint_supports_never_accept(v):
    rng = np.random.default_rng(v)
    p, q = np.zeros((1, v)), np.zeros((1, v))
    p[0, : v // 2] = rng.random(v // 2)
    q[0, v // 2 :] = rng.random(v - v // 2)
    p /= p.sum(axis=1, keepdims=True)
    q /= q.sum(axis=1, keepdims=True)
    dist, alpha = assert_same_law(p, q)
    assert alpha.tolist() == [0.0]
    assert numeric.tv_distance(p, q, backend="numba").tolist() == [1.0]
    assert (dist[0, v // 2 :] == 0.0).all()


@pytest.mark.parametrize("v", [3, 300, 10_000])
def test_one_hot_rows(v):
    p, q = np.zeros((3, v)), np.zeros((3, v))
    p[0, 1], q[0, 1] = 1.0, 1.0  # the same token: always accepted
    p[1, 0], q[1, v - 1] = 1.0, 1.0  # different tokens: never accepted, the target's token emitted
    p[2, 2] = 1.0  # one-hot target, uniform draft
    q[2] = 1.0 / v
    dist, alpha = assert_same_law(p, q)
    assert dist[:2].tolist() == p[:2].tolist()
    assert alpha[:2].tolist() == [1.0, 0.0]


def test_subnormal_entries():
    v = 1000
    rng = np.random.default_rng(2)
    p = softmax(rng.standard_normal((3, v)))
    q = p.copy()
    q[0, :10] = 5e-324  # subnormal draft entries where the target has ordinary ones
    q[0] /= q[0].sum()
    p[1, 5] = 0.0
    p[1] /= p[1].sum()
    p[1, 5] = 5e-324  # a subnormal target entry the draft does not have: emitted by the residual
    q[1] = softmax(rng.standard_normal(v))
    q[1, 5] = 0.0
    q[1] /= q[1].sum()
    p[2, ::2] = np.float64(2.0**-1060)
    p[2] /= p[2].sum()
    dist, _ = assert_same_law(p, q)
    assert dist[1, 5] == 5e-324


def test_overflowing_rejection_over_z_normalizes_the_residual_first():
    # Z subnormal while the rejection mass carries rounding (1e-15): (sum p - alpha) / Z overflows,
    # so the residual is divided by Z first (the NumPy path's _emit does the same).
    assert 1e-15 / 5e-324 == np.inf
    inv, c, zd = numeric_numba.coefficients(1.0, 1.0 - 1e-15, 5e-324)
    assert (inv, zd) == (1.0, 5e-324) and c == 1.0 - (1.0 - 1e-15)
    p, q, out = np.array([0.5, 0.5, 5e-324]), np.array([0.5, 0.5, 0.0]), np.empty(3)
    numeric_numba.write_row(p, q, 1.0, inv, c, zd, out)
    assert out.tolist() == [0.5, 0.5, c]
    # ordinary rows: c = (sum p - alpha) / Z / sum p, zd = 1; p == q (Z == 0): c = 0
    assert numeric_numba.coefficients(2.0, 1.0, 0.5) == (0.5, 1.0, 1.0)
    assert numeric_numba.coefficients(1.0, 1.0, 0.0) == (1.0, 0.0, 1.0)


def test_batches_of_any_shape_and_dtype():
    p, q = _batch(41, 12, 300)
    assert_same_law(p.reshape(3, 4, 300), q.reshape(3, 4, 300))
    assert_same_law(p.astype(np.float32), q.astype(np.float32))
    # non-contiguous rows (every other entry, renormalized)
    pw, qw = p[:, ::2], q[:, ::2]
    pw, qw = pw / pw.sum(axis=1, keepdims=True), qw / qw.sum(axis=1, keepdims=True)
    assert_same_law(pw, qw)
    (d0, a0), (d1, a1) = both(p[0], q[0])  # 1-D: alpha a NumPy scalar, as on the NumPy path
    assert d1.shape == (300,) and isinstance(a1, np.float64)


def test_threaded_batch_equals_rows_alone(monkeypatch):
    b, v = 4, 300_001
    assert b * v >= numeric._THREADED_ELEMENTS
    rng = np.random.default_rng(30)
    p = softmax(rng.standard_normal((b, v)) * 2.0)
    q = softmax(rng.standard_normal((b, v)) * 2.0)
    q[2] = p[2]
    monkeypatch.setattr(_CountingExecutor, "created", 0)
    monkeypatch.setattr(numeric, "ThreadPoolExecutor", _CountingExecutor)
    dist, alpha = numeric.emitted_distribution(p, q, backend="numba")
    assert _CountingExecutor.created == 1, "the batch did not take the threaded path"
    for i in range(b):
        d1, a1 = numeric.emitted_distribution(p[i].copy(), q[i].copy(), backend="numba")
        assert np.array_equal(dist[i], d1) and alpha[i] == a1
    assert alpha[2] == 1.0
    d0, a0 = numeric.emitted_distribution(p, q)
    assert np.abs(dist - d0).max() <= numeric.ERROR_BOUND
    assert np.abs(alpha - a0).max() <= numeric.ERROR_BOUND


# ---------------------------------------------------------------- the same refusals


def _refusal(p, q, **kw) -> BaseException:
    with pytest.raises(InvalidDistribution) as info:
        numeric.emitted_distribution(p, q, **kw)
    return info.value


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_refused_as_on_the_numpy_path(name):
    p, q, match = BAD[name]
    expected = _refusal(p, q)
    with pytest.raises(type(expected), match="^" + re.escape(str(expected)) + "$"):
        numeric.emitted_distribution(p, q, backend="numba")
    with pytest.raises(InvalidDistribution, match=match):
        numeric.acceptance_probability(p, q, backend="numba")


def test_first_bad_index_is_named_as_on_the_numpy_path():
    p = np.full((2, 3, 4), 0.25)
    q = np.full((2, 3, 4), 0.25)
    q[1, 2, 3] = -0.25
    q[1, 2, 0] = 0.75  # the row still sums to 1: only the sign check finds it
    p[1, 1, 1] = np.inf
    for _ in range(2):
        expected = str(_refusal(p, q))
        with pytest.raises(InvalidDistribution, match="^" + re.escape(expected) + "$"):
            numeric.emitted_distribution(p, q, backend="numba")
        p[1, 1, 1] = 0.25


def test_first_bad_index_on_the_threaded_path():
    b, v = 4, 300_001
    p = np.full((b, v), 1.0 / v)
    q = p.copy()
    q[3, 123_456] = np.nan  # in the second thread's half
    q[1, 7] = -np.inf  # in the first half: the first bad row is the one reported
    with pytest.raises(InvalidDistribution, match=r"^q\[1, 7\] is -inf"):
        numeric.emitted_distribution(p, q, backend="numba")
    q[1, 7] = 1.0 / v
    with pytest.raises(InvalidDistribution, match=r"^q\[3, 123456\] is nan"):
        numeric.emitted_distribution(p, q, backend="numba")


def test_atol_edges_are_decided_as_on_the_numpy_path():
    # exactly at atol (1.25 off by 1/4, exact in binary): accepted; just inside: refused
    for atol in (0.25, Fraction(1, 4)):
        dist, alpha = numeric.emitted_distribution([0.75, 0.5], [0.5, 0.5], atol=atol, backend="numba")
        assert max_error(dist, [Fraction(3, 5), Fraction(2, 5)]) <= BOUND
        assert abs(Fraction(float(alpha)) - Fraction(9, 10)) <= BOUND
    with pytest.raises(InvalidDistribution, match="more than atol"):
        numeric.emitted_distribution([0.75, 0.5], [0.5, 0.5], atol=0.2499, backend="numba")
    # atol = 0: exactly normalized rows only
    dist, alpha = numeric.emitted_distribution([0.5, 0.5], [0.25, 0.75], atol=0, backend="numba")
    assert dist.tolist() == [0.5, 0.5] and float(alpha) == 0.75
    with pytest.raises(InvalidDistribution, match="more than atol"):
        numeric.emitted_distribution([0.5, 0.5 + 2.0**-52], [0.25, 0.75], atol=0, backend="numba")


def test_rows_inside_the_margin_are_computed_by_the_kernel(monkeypatch):
    # A row well inside atol never reaches the NumPy path; one at the edge does.
    calls = []
    real = numeric._law_numba
    monkeypatch.setattr(numeric, "_law_numba", lambda *a: calls.append(real(*a)) or calls[-1])
    numeric.emitted_distribution([0.5, 0.5], [0.25, 0.75], backend="numba")
    assert calls[-1] is not None
    numeric.emitted_distribution([0.75, 0.5], [0.5, 0.5], atol=0.25, backend="numba")
    assert calls[-1] is None


# ---------------------------------------------------------------- the summation bound


def _height_numpy(n: int) -> int:
    """Height of NumPy's pairwise sum of n entries (numpy/_core/src/umath/loops_utils.h.src):
    fewer than 8 entries added in a row; up to 128 by eight accumulators, their tree of three
    levels, then the n % 8 left over one by one; more split at n/2 rounded down to a multiple of 8."""
    if n < 8:
        return max(n - 1, 0)
    if n <= 128:
        return n // 8 - 1 + 3 + n % 8
    half = n // 2
    half -= half % 8
    return 1 + max(_height_numpy(half), _height_numpy(n - half))


@pytest.mark.parametrize("n", list(range(1, 300)) + [1000, 1023, 1025, 8192, 8193, 128_256, 262_145, 10**6])
def test_tree_height_is_at_most_numpys(n):
    assert numeric_numba.tree_height(n) == (n - 1).bit_length()
    assert numeric_numba.tree_height(n) <= _height_numpy(n)


def test_height_at_the_benchmark_size():
    assert (numeric_numba.tree_height(128_256), _height_numpy(128_256)) == (17, 28)


def _rows_for_the_bound():
    rng = np.random.default_rng(7)
    for v in LENGTHS + [131_072, 128_256]:
        yield v, rng.random(v)
        big = np.full(v, 2.0**-53)  # sequential summation loses every tiny entry after a 1.0
        big[0] = 1.0
        yield v, big
        yield v, np.exp(rng.standard_normal(v) * 20.0)  # entries spread over many binades


@pytest.mark.parametrize("v, x", list(_rows_for_the_bound()), ids=lambda a: str(a) if isinstance(a, int) else "")
def test_row_sum_within_the_stated_bound(v, x):
    exact = sum(map(Fraction, x.tolist()), Fraction(0))
    h = numeric_numba.tree_height(v)
    gamma = h * U / (1 - h * U)
    got = Fraction(numeric_numba.kernel_row_sum(x))
    assert abs(got - exact) <= gamma * exact
    if v >= 16 and x[0] == 1.0:  # 1.0 then v - 1 entries of 2^-53: added one by one, each is lost
        sequential = 0.0
        for e in x.tolist():
            sequential += e
        assert sequential == 1.0 and abs(Fraction(sequential) - exact) > gamma * exact


# ---------------------------------------------------------------- against the exact law, by the crosscheck


def test_crosscheck_of_the_numba_backend(capsys):
    import json

    from specproof.certify.crosscheck import crosscheck
    from specproof.cli import main

    report = crosscheck(100, seed=3, backend="numba")
    assert report.passed and report.dist.error <= BOUND and report.alpha.error <= BOUND
    assert main(["crosscheck", "--pairs", "20", "--seed", "1", "--backend", "numba", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "numba" and out["passed"] is True and out["pairs"] == 20


@pytest.mark.slow
def test_crosscheck_of_the_numba_backend_on_the_real_pairs():
    from specproof.certify.crosscheck import crosscheck_real

    report = crosscheck_real(backend="numba")
    assert report.passed and report.dist.error <= BOUND and report.alpha.error <= BOUND
