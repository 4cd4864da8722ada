"""The checker's float primitives: rows rounded to an IEEE format (float-rounded), the residual as float
code forms it (float-positive-part, float-normalized) and the accept thresholds fl(p/q) and
fl(u * q) < p (float-ratio, float-product). The checker's law of every float-ideal member equals the
audit's; hostile documents are rejected with their reason, quickly."""

from __future__ import annotations

import copy
import json
import random
from fractions import Fraction as F

import pytest

from specproof import checker
from specproof.rules.audit import position_law
from specproof.certify.certificate import build_outcome_certificate, dumps
from specproof.errors import ResidualUndefined
from specproof.rules.faithful import FAMILY
from specproof.rules.floats import FORMATS
from specproof.rules.policy import named_rule

PAIRS = [(["1/2", "1/4", "1/4"], ["3/8", "3/8", "1/4"]), (["1/3", "1/3", "1/3"], ["1/2", "1/4", "1/4"]),
         (["1/7", "0", "6/7"], ["1/5", "2/5", "2/5"])]


def _cert(rule, p, q):
    return json.loads(dumps(build_outcome_certificate(position_law(p, q, rule).tree, name="f", statement="s")))


def _law(verdict):
    return [F(x.num, x.den) for x in verdict.facts[0]["law"]]


@pytest.mark.parametrize("member", [m for m in FAMILY if not m.rule.arithmetic.is_exact],
                         ids=[m.name for m in FAMILY if not m.rule.arithmetic.is_exact])
def test_every_float_member_is_certified_with_the_audits_law(member):
    for p, q in PAIRS:
        try:
            want = position_law(p, q, member.rule)
        except ResidualUndefined:
            continue
        verdict = checker.check(_cert(member.rule, p, q))
        assert verdict.valid, (member.name, p, q, verdict)
        assert _law(verdict) == list(want.law)
        tv = verdict.facts[0]["totals"]["tv"]
        assert F(tv.num, tv.den) == want.tv


def test_the_issues_pair_is_certified_lossy_by_the_float32_codes_value():
    verdict = checker.check(_cert(named_rule("le-float32-coin"), *PAIRS[0]))
    tv = verdict.facts[0]["totals"]["tv"]
    assert verdict.valid and F(tv.num, tv.den) == F(1, 2**25)


def test_round_float_equals_the_untrusted_rounding():
    rng = random.Random(0)
    for name, fmt in checker.FLOAT_FORMATS.items():
        for _ in range(2000):
            x = F(rng.randrange(0, 10 ** rng.randint(1, 30)), rng.randrange(1, 10 ** rng.randint(1, 40)))
            got = checker._round_float(checker.Ratio(x.numerator, x.denominator), fmt)
            want = FORMATS[name].round(x)
            assert (float("inf") if got is None else F(got.num, got.den)) == want


def _rows_and_bounds(doc):
    rows = doc["rows"]
    bounds = [b for n in doc["nodes"] for br in n["branches"] for ev in [br["event"]] if "coin" in ev
              for b in (ev["coin"]["lower"], ev["coin"]["upper"]) if b is not None]
    return rows, bounds


def _rejected(doc, reason):
    verdict = checker.check(doc)
    assert not verdict.valid and verdict.reason == reason, verdict
    return verdict


def test_hostile_float_documents_are_rejected():
    doc = _cert(named_rule("le-float32-coin"), *PAIRS[1])
    rows, bounds = _rows_and_bounds(doc)
    assert rows["target"]["recipe"] == ["float-rounded", "p", "float32"]
    assert rows["residual"]["recipe"] == ["float-normalized", "residual-weights", "float32"]
    assert any(b["source"][0] == "float-ratio" for b in bounds)
    # an unknown format, in a row recipe and in a threshold
    bad = copy.deepcopy(doc)
    bad["rows"]["target"]["recipe"][2] = "float8"
    assert "float8" in _rejected(bad, checker.Reason.MALFORMED).detail
    bad = copy.deepcopy(doc)
    next(b for b in _rows_and_bounds(bad)[1] if b["source"][0] == "float-ratio")["source"][4] = 32
    _rejected(bad, checker.Reason.MALFORMED)
    # a threshold rounded in another format than the rows: the branch probabilities no longer match
    bad = copy.deepcopy(doc)
    for b in _rows_and_bounds(bad)[1]:
        if b["source"][0] == "float-ratio":
            b["source"][4] = "bfloat16"
    _rejected(bad, checker.Reason.BRANCH)
    # the exact residual in place of the float one: the residual draws no longer match
    off = _cert(named_rule("le-float32-coin"), ["1/3", "1/3", "1/3"], ["1/11", "1/13", "119/143"])
    off["rows"]["residual-weights"]["recipe"] = ["positive-part", "target", "draft"]
    _rejected(off, checker.Reason.BRANCH)
    # wrong arity, and a product test with a continuous coin or an unknown comparison
    bad = copy.deepcopy(doc)
    bad["rows"]["target"]["recipe"] = ["float-rounded", "p"]
    _rejected(bad, checker.Reason.MALFORMED)
    rule = next(m.rule for m in FAMILY if m.rule.arithmetic.dtype == "float32" and m.rule.arithmetic.test == "product")
    product = _cert(rule, *PAIRS[0])
    assert any(b["source"][0] == "float-product" for b in _rows_and_bounds(product)[1])
    for i, value in ((5, "continuous"), (6, "=="), (4, "float128")):
        bad = copy.deepcopy(product)
        for b in _rows_and_bounds(bad)[1]:
            if b["source"][0] == "float-product":
                b["source"][i] = value
        _rejected(bad, checker.Reason.MALFORMED)


def test_a_wide_float_document_checks_quickly_in_work_not_time():
    # 256 tokens of float64 products: each threshold costs at most 54 roundings of bounded numbers
    v = 256
    p = [F(1, v)] * v
    q = [F(2 * (i % 2) + 1, 2 * v) for i in range(v)]
    rule = next(m.rule for m in FAMILY if m.rule.arithmetic.dtype == "float64" and m.rule.arithmetic.test == "product"
                and m.rule.coin.name == "float64")
    doc = _cert(rule, p, q)
    calls = []
    original = checker._round_float

    def counting(value, fmt):
        calls.append(1)
        return original(value, fmt)

    checker._round_float = counting
    try:
        assert checker.check(doc).valid
    finally:
        checker._round_float = original
    assert len(calls) <= 3 * v * 60


@pytest.mark.parametrize("name, row, total", [
    ("float16", [F(1), F(1, 2 ** 11), F(1, 2 ** 11)], F(1025, 1024)),  # in float16 each addition would round back to 1
    ("bfloat16", [F(1), F(1, 2 ** 8), F(1, 2 ** 8)], F(129, 128)),
    ("float32", [F(1), F(1, 2 ** 24), F(1, 2 ** 24)], F(1)),  # ties to even, twice: the float32 accumulator itself
    ("float64", [F(1), F(1, 2 ** 30), F(1, 2 ** 30)], 1 + F(1, 2 ** 29)),  # in float32 it would be 1
])
def test_a_half_format_row_is_summed_in_a_float32_accumulator(name, row, total):
    """float-normalized divides by the row's float sum: float16 and bfloat16 accumulate in float32
    (rounded once at the end), float32 and float64 in their own format, as the audit does."""
    from specproof.rules.floats import FLOAT32

    den = 2 ** 60
    got = checker._float_sum(checker.Row([int(x * den) for x in row], den), checker.FLOAT_FORMATS[name])
    assert F(got.num, got.den) == total
    fmt = FORMATS[name]
    assert total == (fmt.round(FLOAT32.sum(row)) if fmt.precision < 24 else fmt.sum(row))


def test_zero_entries_do_not_widen_a_float_row():
    """A float row's denominator is the finest spacing of its non-zero entries (what the rows'
    budget charges): zeros add nothing, so ten rows of 40,000 zeros beside two halves fit the budget
    (over 2^1074 not even one would)."""
    fmt = checker.FLOAT_FORMATS["float64"]
    assert checker._rounded_row([0, 1, 1, 0], 2, fmt).den == checker._rounded_row([1, 1], 2, fmt).den == 2 ** 53
    size = 40_000
    rows = {"p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"] + ["0/1"] * (size - 2)},
            **{f"f{i}": {"recipe": ["float-rounded", "p", "float64"]} for i in range(10)}}
    doc = {"schema": checker.OUTCOME_SCHEMA, "vocab_size": size, "reference": "p", "rows": rows,
           "nodes": [{"label": "d", "reach": "1/1", "branches": [
               {"event": {"draw": {"row": "f9", "token": t}}, "probability": "1/2", "child": {"leaf": [t, True]}}
               for t in (0, 1)]}],
           "law": ["1/2", "1/2"] + ["0/1"] * (size - 2), "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
           "claims": {"lossless": True}}
    verdict = checker.check(doc)
    assert verdict.valid, verdict


def test_a_float_product_threshold_reads_both_its_rows():
    """The rows a threshold reads are named in the facts (what binding compares): fl(u * b[x]) < a[x]
    reads a and b."""
    rows = {"a": checker._named(checker.Row([1, 3], 4)), "b": checker._named(checker.Row([1, 1], 2))}
    read = set()
    bound = {"source": ["float-product", "a", "b", 0, "float32", "float32", "<"], "strict": True}
    value, strict = checker._threshold(bound, rows, 2, "t", read, "float32", True)
    assert read == {"a", "b"} and strict and value == checker.Ratio(2 ** 23, 2 ** 24)  # u * 1/2 < 1/4: u < 1/2
