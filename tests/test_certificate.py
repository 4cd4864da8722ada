"""Tests for specproof.certify.certificate."""

from fractions import Fraction

import numpy as np
import pytest

from specproof.certify.certificate import STATEMENT, build_bundle, build_certificate, dumps, write
from specproof.checker import check
from specproof.errors import InvalidDistribution
from specproof.laws import exact
from specproof.laws.rational import from_floats


def test_rows_and_totals_are_the_exact_law():
    p, q = ["1/2", "1/4", "1/4", 0], ["1/4", "1/4", 0, "1/2"]
    cert = build_certificate(p, q, name="x", labels=["a", "b", "c", "d"])
    assert cert["schema"] == "specproof.certificate/1"
    assert cert["statement"] == STATEMENT
    assert cert["vocab_size"] == 4
    assert [r["token"] for r in cert["rows"]] == [0, 1, 2, 3]
    assert [r["label"] for r in cert["rows"]] == ["a", "b", "c", "d"]
    assert [r["accept"] for r in cert["rows"]] == ["1/4", "1/4", "0/1", "0/1"]
    assert [r["residual"] for r in cert["rows"]] == ["1/4", "0/1", "1/4", "0/1"]
    dist, alpha = exact.emitted_distribution(p, q)
    assert [Fraction(r["emitted"]) for r in cert["rows"]] == list(dist)
    assert cert["totals"] == {"alpha": "1/2", "tv": "1/2", "normalizer": "1/2", "rejection": "1/2"}
    assert cert["claims"] == {"dist_equals_p": True, "alpha_equals_one_minus_tv": True}
    assert cert["provenance"] == {"float_policy": {"p": None, "q": None}}


def test_regeneration_is_byte_identical(tmp_path):
    a = dumps(build_certificate(["1/3", "2/3"], ["1/2", "1/2"], name="x", provenance={"b": 1, "a": [2]}))
    b = dumps(build_certificate(["1/3", "2/3"], ["1/2", "1/2"], name="x", provenance={"a": [2], "b": 1}))
    assert a == b and a.endswith("\n")
    path = write(build_bundle([], name="b", statement="s"), tmp_path / "sub" / "b.json")
    assert path.read_text(encoding="utf-8") == dumps(build_bundle([], name="b", statement="s"))


def test_float_policy_is_recorded():
    p = from_floats(np.array([0.1, 0.2, 0.7]))
    cert = build_certificate(p, ["1/3", "1/3", "1/3"], name="x")
    policy = cert["provenance"]["float_policy"]
    assert policy["q"] is None
    assert policy["p"]["name"] == "dyadic-renormalize"
    assert policy["p"]["float_sum"] == f"{p.policy.float_sum.numerator}/{p.policy.float_sum.denominator}"
    assert check(cert).valid


def test_p_equal_q_certificate():
    cert = build_certificate(["1/5", "4/5"], ["1/5", "4/5"], name="eq")
    assert cert["totals"]["normalizer"] == "0/1" and cert["totals"]["alpha"] == "1/1"
    assert [r["emitted"] for r in cert["rows"]] == ["1/5", "4/5"]
    assert check(cert).valid


def test_bad_inputs():
    with pytest.raises(InvalidDistribution, match="labels has 1 entries, not V=2"):
        build_certificate([1, 0], [0, 1], name="x", labels=["a"])
    with pytest.raises(InvalidDistribution, match="p sums to 1/2"):
        build_certificate(["1/2", 0], [0, 1], name="x")


def test_a_certificate_of_rows_past_pythons_decimal_digit_limit_is_written_and_checked():
    # 1/3^10000 has 4,772 digits, its residual's and emitted denominators more than Python's 4,300-digit limit on decimal text:
    # such numbers are written in hexadecimal, which the checker reads
    import json

    p = [Fraction(1, 3**10000), 1 - Fraction(1, 3**10000)]
    q = [Fraction(1, 3**8000), 1 - Fraction(1, 3**8000)]
    doc = json.loads(json.dumps(build_certificate(p, q, name="long")))
    assert any("0x" in row["emitted"] for row in doc["rows"]) or "0x" in doc["totals"]["tv"]
    verdict = check(doc)
    assert verdict.valid, verdict
