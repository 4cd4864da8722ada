"""Tests for specproof.certify.crosscheck."""

from fractions import Fraction

import numpy as np
import pytest

from specproof.certify import crosscheck as cc
from specproof.errors import CrosscheckFailed, InvalidDistribution
from specproof.laws import numeric


def test_every_kind_yields_valid_exact_pairs():
    rng = np.random.default_rng(1)
    for kind in cc.KINDS:
        for _ in range(30):
            pair = cc.random_pair(rng, kind)
            assert len(pair.p) == len(pair.q) >= 1
            assert sum(pair.p) == 1 and sum(pair.q) == 1
            assert all(type(x) is Fraction and x >= 0 for x in pair.p + pair.q)
            if kind == "equal" or kind == "V=1":
                assert pair.p == pair.q
            if kind == "disjoint":
                assert all(a == 0 or b == 0 for a, b in zip(pair.p, pair.q))
            if kind == "one-hot-p":
                assert sorted(pair.p)[-1] == 1
            if kind == "tiny-difference":
                diff = sum(abs(a - b) for a, b in zip(pair.p, pair.q))
                assert 0 < diff <= Fraction(2, 2**40)


def test_unknown_kind():
    with pytest.raises(InvalidDistribution, match="unknown pair kind"):
        cc.random_pair(np.random.default_rng(0), "nope")


def test_pairs_are_reproducible_and_cycle_through_kinds():
    a = list(cc.pairs(20, seed=5))
    b = list(cc.pairs(20, seed=5))
    assert a == b
    assert [x.kind for x in a[: len(cc.KINDS)]] == list(cc.KINDS)
    assert list(cc.pairs(20, seed=6)) != a


def test_crosscheck_reports_worst_errors_within_bound():
    report = cc.crosscheck(900, seed=0)
    assert report.pairs == 900
    assert report.passed
    assert 0 < report.dist.error < 1e-15
    assert report.alpha.error < 1e-15
    assert report.dist.pair is not None and report.dist.token is not None
    assert "within bound" in report.summary()


def test_crosscheck_fails_when_the_float_path_is_wrong(monkeypatch):
    real = numeric.emitted_distribution

    def skewed(p, q, **kw):  # a float path whose alpha is off by 1e-9
        dist, alpha = real(p, q, **kw)
        return dist, alpha + 1e-9

    monkeypatch.setattr(numeric, "emitted_distribution", skewed)
    report = cc.crosscheck(30, seed=0)
    assert not report.passed
    assert abs(report.alpha.error - Fraction(1, 10**9)) < Fraction(1, 10**15)
    assert "BOUND EXCEEDED" in report.summary()
    with pytest.raises(CrosscheckFailed, match="worst"):
        cc.require(report)


def test_progress_callback_and_bad_n():
    seen = []
    cc.crosscheck(5, seed=0, progress=seen.append)
    assert seen == [1, 2, 3, 4, 5]
    with pytest.raises(InvalidDistribution, match=">= 1"):
        cc.crosscheck(0)


@pytest.mark.slow  # CI's main-job step also runs the command itself
def test_crosscheck_ten_thousand_pairs():
    # the acceptance run: `specproof crosscheck --pairs 10000 --seed 0`
    report = cc.crosscheck(10_000, seed=0)
    assert report.passed, report.summary()


@pytest.mark.parametrize(
    "kwargs", [{"bound": None}, {"bound": "x"}, {"bound": float("nan")}, {"bound": -1.0}, {"seed": -1}, {"seed": 1.5}]
)
def test_bad_arguments(kwargs):
    with pytest.raises(InvalidDistribution):
        cc.crosscheck(3, **kwargs)


def test_numpy_integers_and_fraction_bounds_are_fine():
    report = cc.crosscheck(np.int64(3), seed=np.int64(2), bound=Fraction(1, 10**12))
    assert report.passed and "bound 1e-12" in report.summary()


# ---------------------------------------------------------------- drafted blocks


def test_block_crosscheck_within_bound_and_reproducible():
    report = cc.crosscheck_blocks(400, seed=0)
    assert report.blocks == 400 and report.passed
    assert 0 < report.joint.error < 1e-15 and 0 < report.accepted.error < 1e-15
    again = cc.crosscheck_blocks(400, seed=0)
    assert (again.joint.error, again.accepted.error) == (report.joint.error, report.accepted.error)
    batches = list(cc.blocks(20, seed=3))
    assert [len(b) for b in batches] == [8, 8, 4]
    for batch in batches:  # one (gamma, V) per batch; tokens drafted from q's support
        assert len({(len(b.tokens), len(b.target[0])) for b in batch}) == 1
        for b in batch:
            assert len(b.target) == len(b.tokens) + 1 and all(q[x] > 0 for q, x in zip(b.draft, b.tokens))
            assert all(sum(row) == 1 for row in b.target + b.draft)


def test_block_crosscheck_recomputes_ill_conditioned_rows_exactly():
    # odd blocks draft the token most likely rejected; at a tiny-new-token position that is a
    # token with p(x) = 0 < q(x) <= 2^-20 where p and q otherwise agree: float64 cannot resolve
    # the residual that replaces it, so the float path computes that row exactly
    report = cc.crosscheck_blocks(160, seed=0)
    assert report.passed and report.recomputed > 0
    assert report.joint.error < 1e-15
    # against the exact rows before rounding, such a row can be off entirely: reported, not bounded
    assert report.before_rounding.error > 0.5
    text = report.summary().splitlines()
    verdict = next(i for i, line in enumerate(text) if "verdict: within bound" in line)
    # the unbounded figure comes after the verdict, says it is not part of it, and carries its value
    assert "not part of the verdict, not bounded" in text[verdict + 1]
    assert f"{float(report.before_rounding.error):.3e}" in text[verdict + 1]
    assert not any(f"{float(report.before_rounding.error):.3e}" in line for line in text[:verdict])
    assert any("recomputed exactly" in line for line in text)


def test_block_crosscheck_fails_when_the_float_path_is_wrong(monkeypatch):
    real = cc.numeric.given_block_law

    def off(*args, **kwargs):
        accepted, emitted = real(*args, **kwargs)
        return accepted, emitted[..., ::-1]  # the emitted rows reversed: residual at the wrong tokens

    monkeypatch.setattr(cc.numeric, "given_block_law", off)
    report = cc.crosscheck_blocks(40, seed=0)
    assert not report.passed and report.joint.error > 0.01
    assert "BOUND EXCEEDED" in report.summary()


def test_wide_rows_are_cut_in_the_summary_and_whole_in_json():
    from fractions import Fraction

    from specproof.certify.crosscheck import _cut_row

    row = [Fraction(k, 997) for k in range(1, 41)]
    text = _cut_row(row)
    assert text.startswith("[1/997, 2/997, 3/997,") and len(text) < 160
    shown = text[1 : text.index(", ...")].split(", ")
    assert [Fraction(x) for x in shown] == row[: len(shown)]  # the values shown are exact
    assert text.endswith(f", ... {40 - len(shown)} more of V = 40: --json has them all]")
    assert _cut_row(row[:3]) == "[1/997, 2/997, 3/997]"  # short rows whole
