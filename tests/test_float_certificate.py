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
from specproof.certify.certificate import build_outcome_certificate, dumps
from specproof.errors import ResidualUndefined
from specproof.laws.floats import FORMATS
from specproof.rules import libm
from specproof.rules.audit import position_law
from specproof.rules.faithful import FAMILY
from specproof.rules.policy import named_rule

PAIRS = [
    (["1/2", "1/4", "1/4"], ["3/8", "3/8", "1/4"]),
    (["1/3", "1/3", "1/3"], ["1/2", "1/4", "1/4"]),
    (["1/7", "0", "6/7"], ["1/5", "2/5", "2/5"]),
]


def _cert(rule, p, q):
    return json.loads(dumps(build_outcome_certificate(position_law(p, q, rule).tree, name="f", statement="s")))


def _law(verdict):
    return [F(x.num, x.den) for x in verdict.facts[0]["law"]]


@pytest.mark.parametrize(
    "member",
    [m for m in FAMILY if not m.rule.arithmetic.is_exact],
    ids=[m.name for m in FAMILY if not m.rule.arithmetic.is_exact],
)
def test_every_float_member_is_certified_with_the_audits_law(member):
    library = member.rule.arithmetic.library
    if library is not None and not libm.available(library):
        pytest.skip(f"{member.name} names {library}'s own log, exp or sum; {library} is not installed (models extra)")
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
    bounds = [
        b
        for n in doc["nodes"]
        for br in n["branches"]
        for ev in [br["event"]]
        if "coin" in ev
        for b in (ev["coin"]["lower"], ev["coin"]["upper"])
        if b is not None
    ]
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


def _library_sum_cert():
    """A V = 16 float32 position of the torch-sum member: its residual's sum is torch's own, stated in the recipe."""
    torch = pytest.importorskip("torch")
    import numpy as np

    # softmax rows on which torch's own sum of the residual was not the left-to-right one here (not asserted: the
    # order is the build's and the CPU's)
    p, q = torch.tensor(np.random.default_rng(0).normal(size=(2, 16)) * 2).softmax(-1).to(torch.float32)
    rule = next(
        m.rule
        for m in FAMILY
        if m.rule.arithmetic.library == "torch"
        and m.rule.arithmetic.dtype == "float32"
        and m.rule.arithmetic.test == "ratio"
        and m.rule.comparison == "<="
        and m.rule.coin.name == "float32"
    )
    return rule, p, q


def test_a_librarys_own_residual_sum_is_certified_in_the_order_that_gives_it():
    """torch's own sum of the residual weights: the certificate names the order that gives it (PyTorch's CPU
    cascade sum at this CPU's vector width, as a tree) and the checker derives the sum itself; nothing is
    stated."""
    rule, p, q = _library_sum_cert()
    want = position_law(p, q, rule)
    doc = _cert(rule, p, q)
    recipe = doc["rows"]["residual"]["recipe"]
    from specproof.rules import libm

    weights = [
        max(FORMATS["float32"].sub(a, b), F(0)) for a, b in zip(want.tree.rows["target"], want.tree.rows["draft"])
    ]
    s = libm.sum_value("torch", "float32", weights)
    if s == FORMATS["float32"].sum(weights):  # this machine's torch summed these rows left to right
        assert recipe == ["float-normalized", "residual-weights", "float32"]
    else:
        assert recipe[:3] == ["float-divided", "residual-weights", "float32"] and recipe[3][:2] == ["tree", "float32"]
        assert libm.evaluate_order(recipe[3][2], weights, "float32", "float32") == s
    verdict = checker.check(doc)
    assert verdict.valid and _law(verdict) == list(want.law) and verdict.facts[0]["stated"] == []


@pytest.mark.parametrize(
    "library, dtype",
    [
        ("torch", "float32"),
        ("torch", "float16"),
        ("torch", "bfloat16"),
        ("torch", "float64"),
        ("numpy", "float32"),
        ("numpy", "float64"),
    ],
)
def test_the_modelled_orders_give_the_librarys_own_sums(library, dtype):
    """NumPy's pairwise sum and PyTorch's CPU cascade sum, as trees, give the library's own sum on this machine
    (rows of 1 to 300 entries and a few long ones); the checker's evaluation of the tree is the same number."""
    pytest.importorskip(library)
    import numpy as np

    from specproof.rules import libm

    rng = np.random.default_rng(7)
    fmt = FORMATS[dtype]
    acc = "float32" if fmt.precision < 24 else dtype
    for n in [*range(1, 70), 100, 128, 129, 255, 256, 257, 300, 1000, 4099]:
        row = [fmt.round(F(float(x))) for x in rng.random(n) ** 4 / n]
        total = libm.sum_value(library, dtype, row)
        order = libm.sum_order(library, dtype, row, total)
        if order is None:  # only where the left-to-right sum is the library's can no order be needed
            assert total == fmt.round(FORMATS[acc].sum(row)), (n, library, dtype)
            continue
        den = 1 << 1100
        got = checker._ordered_sum(
            checker.Row([int(x * den) for x in row], den),
            order[1][2],
            checker.FLOAT_FORMATS[acc],
            checker.FLOAT_FORMATS[dtype],
            "s",
        )
        assert F(got.num, got.den) == total, (n, library, dtype)


def test_hostile_stated_sums_are_rejected():
    rule, p, q = _library_sum_cert()
    doc = _cert(rule, p, q)
    from specproof.rules import libm

    recipe = doc["rows"]["residual"]["recipe"]
    weights = doc["rows"]["residual-weights"]["recipe"]
    assert weights[0] == "float-positive-part"
    exact = sum(position_law(p, q, rule).tree.rows["residual-weights"], F(0))
    s = (
        libm.evaluate_order(recipe[3][2], position_law(p, q, rule).tree.rows["residual-weights"], "float32", "float32")
        if len(recipe) == 4
        else None
    )
    s = s if s is not None else FORMATS["float32"].round(exact)
    doc["rows"]["residual"]["recipe"] = [
        "float-divided",
        "residual-weights",
        "float32",
        f"{s.numerator}/{s.denominator}",
    ]
    verdict = checker.check(doc)  # the sum stated as a number: bounded, and reported as stated
    assert verdict.valid and len(verdict.facts[0]["stated"]) == 1

    def stated(value, reason, text):
        bad = copy.deepcopy(doc)
        bad["rows"]["residual"]["recipe"][3] = value
        assert text in _rejected(bad, reason).detail

    stated("1/3", checker.Reason.MALFORMED, "is not a finite float of the format")
    stated(f"{2 * s.numerator}/{s.denominator}", checker.Reason.TOTAL, "farther from the row's sum than any order")
    k = sum(1 for w in position_law(p, q, rule).tree.rows["residual-weights"] if w) - 1
    far = FORMATS["float32"].round(exact * (1 + F(k + 2, 2**24)))  # just past k u
    stated(f"{far.numerator}/{far.denominator}", checker.Reason.TOTAL, "farther from the row's sum")
    stated("0/1", checker.Reason.TOTAL, "the row's mass is not 0")
    stated("-1/2", checker.Reason.NEGATIVE, "negative")
    bad = copy.deepcopy(doc)
    bad["rows"]["residual"]["recipe"][3] = "1/" + "9" * 5000  # past the bits a constant may hold
    assert not checker.check(bad).valid
    stated(3, checker.Reason.MALFORMED, 'not ["left-to-right", accumulator]')
    # a sum within the bound, but not the one the law was computed with: the residual draws no longer match
    near = s + F(1, 2**23) * (1 if s < 1 else 2)
    if FORMATS["float32"].round(near) == near:
        bad = copy.deepcopy(doc)
        bad["rows"]["residual"]["recipe"][3] = f"{near.numerator}/{near.denominator}"
        assert not checker.check(bad).valid
    bad = copy.deepcopy(doc)
    bad["rows"]["residual"]["recipe"] = ["float-divided", "residual-weights", "float32"]
    _rejected(bad, checker.Reason.MALFORMED)
    bad["rows"]["residual"]["recipe"] = ["float-divided", "residual-weights", "float8", "1/2"]
    _rejected(bad, checker.Reason.MALFORMED)


def test_a_stated_sum_of_a_row_of_mass_zero_must_be_zero():
    fmt = checker.FLOAT_FORMATS["float32"]
    zero, one = checker._Named(checker.Row([0, 0, 0], 1)), checker._Named(checker.Row([1, 0, 0], 2))
    assert checker._some_float_sum(zero, fmt, "0/1", "w") == checker.Ratio(0, 1)
    with pytest.raises(checker.Rejection, match="the row's mass is 0"):
        checker._some_float_sum(zero, fmt, "1/2", "w")
    assert checker._some_float_sum(one, fmt, "1/2", "w") == checker.Ratio(1, 2)  # n = 1: the entry itself, exactly
    with pytest.raises(checker.Rejection, match="farther"):
        checker._some_float_sum(one, fmt, "8388609/16777216", "w")  # one ulp off a sum of one non-zero entry
    two = checker._Named(checker.Row([1, 0, 1], 4))  # 1/4 + 1/4: one addition, exact in every order
    assert checker._some_float_sum(two, fmt, "1/2", "w") == checker.Ratio(1, 2)
    with pytest.raises(checker.Rejection, match="farther from the row's sum than any order of its 1 additions rounds"):
        checker._some_float_sum(two, fmt, "8388609/16777216", "w")  # one ulp up: more than u S
    # 1 + 2^-24 + 2^-24 in float32: left to right 1 (each addition a tie to even), the two small ones first
    # 1 + 2^-23; both within 2 u S of the exact sum S = 1 + 2^-23 (so is 1 + 2^-22, which no order gives: the bound
    # does not pin the sum), 1 + 3 2^-23 is not
    three = checker._Named(checker.Row([1 << 24, 1, 1], 1 << 24))
    for ok in ("1/1", "8388609/8388608", "4194305/4194304"):
        checker._some_float_sum(three, fmt, ok, "w")
    with pytest.raises(checker.Rejection, match="farther"):
        checker._some_float_sum(three, fmt, "8388611/8388608", "w")
    with pytest.raises(checker.Rejection, match="less than the row's largest entry"):
        checker._some_float_sum(three, fmt, "16777215/16777216", "w")


def test_a_stated_sum_below_the_largest_entry_is_rejected_where_the_bound_allows_it():
    # bfloat16 (u = 2^-8) with 300 non-zero entries: (k + 1) u > 1, so the relative bound alone allows any s > 0;
    # a tiny s would make fl(a_i / s) overflow. No order of summation gives less than the largest entry.
    fmt = checker.FLOAT_FORMATS["bfloat16"]
    row = checker._Named(checker.Row([1] * 299 + [64], 1024))
    with pytest.raises(checker.Rejection, match="less than the row's largest entry"):
        checker._some_float_sum(row, fmt, f"1/{2**133}", "w")
    assert checker._some_float_sum(row, fmt, "1/16", "w") == checker.Ratio(1, 16)


def test_a_tiny_stated_sum_of_a_long_bfloat16_row_is_a_rejection_not_a_crash():
    # the adversarial review's document: an extra row fl(p_i / 2^-133) in bfloat16 at V = 129 (it raised AttributeError)
    v = 129
    p = [F(9, 10)] + [F(1, 10 * (v - 1))] * (v - 1)
    doc = _cert(named_rule("standard"), p, [F(1, v)] * v)
    doc["rows"]["evil"] = {"recipe": ["float-divided", "p", "bfloat16", f"1/{2**133}"]}
    assert "less than the row's largest entry" in _rejected(doc, checker.Reason.TOTAL).detail


def test_a_wide_float_document_checks_quickly_in_work_not_time():
    # 256 tokens of float64 products: each threshold costs at most 54 roundings of bounded numbers
    v = 256
    p = [F(1, v)] * v
    q = [F(2 * (i % 2) + 1, 2 * v) for i in range(v)]
    rule = next(
        m.rule
        for m in FAMILY
        if m.rule.arithmetic.dtype == "float64"
        and m.rule.arithmetic.test == "product"
        and m.rule.coin.name == "float64"
    )
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


@pytest.mark.parametrize(
    "name, row, total",
    [
        ("float16", [F(1), F(1, 2**11), F(1, 2**11)], F(1025, 1024)),  # in float16 each addition would round back to 1
        ("bfloat16", [F(1), F(1, 2**8), F(1, 2**8)], F(129, 128)),
        ("float32", [F(1), F(1, 2**24), F(1, 2**24)], F(1)),  # ties to even, twice: the float32 accumulator itself
        ("float64", [F(1), F(1, 2**30), F(1, 2**30)], 1 + F(1, 2**29)),  # in float32 it would be 1
    ],
)
def test_a_half_format_row_is_summed_in_a_float32_accumulator(name, row, total):
    """float-normalized divides by the row's float sum: float16 and bfloat16 accumulate in float32
    (rounded once at the end), float32 and float64 in their own format, as the audit does."""
    from specproof.laws.floats import FLOAT32

    den = 2**60
    got = checker._float_sum(checker.Row([int(x * den) for x in row], den), checker.FLOAT_FORMATS[name])
    assert F(got.num, got.den) == total
    fmt = FORMATS[name]
    assert total == (fmt.round(FLOAT32.sum(row)) if fmt.precision < 24 else fmt.sum(row))


def test_zero_entries_do_not_widen_a_float_row():
    """A float row's denominator is the finest spacing of its non-zero entries (what the rows'
    budget charges): zeros add nothing, so ten rows of 40,000 zeros beside two halves fit the budget
    (over 2^1074 not even one would)."""
    fmt = checker.FLOAT_FORMATS["float64"]
    assert checker._rounded_row([0, 1, 1, 0], 2, fmt).den == checker._rounded_row([1, 1], 2, fmt).den == 2**53
    size = 40_000
    rows = {
        "p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"] + ["0/1"] * (size - 2)},
        **{f"f{i}": {"recipe": ["float-rounded", "p", "float64"]} for i in range(10)},
    }
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": size,
        "reference": "p",
        "rows": rows,
        "nodes": [
            {
                "label": "d",
                "reach": "1/1",
                "branches": [
                    {"event": {"draw": {"row": "f9", "token": t}}, "probability": "1/2", "child": {"leaf": [t, True]}}
                    for t in (0, 1)
                ],
            }
        ],
        "law": ["1/2", "1/2"] + ["0/1"] * (size - 2),
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }
    verdict = checker.check(doc)
    assert verdict.valid, verdict


def test_a_float_product_threshold_reads_both_its_rows():
    """The rows a threshold reads are named in the facts (what binding compares): fl(u * b[x]) < a[x]
    reads a and b."""
    rows = {"a": checker._named(checker.Row([1, 3], 4)), "b": checker._named(checker.Row([1, 1], 2))}
    read = set()
    bound = {"source": ["float-product", "a", "b", 0, "float32", "float32", "<"], "strict": True}
    value, strict = checker._threshold(bound, rows, 2, "t", read, "float32", True)
    assert read == {"a", "b"} and strict and value == checker.Ratio(2**23, 2**24)  # u * 1/2 < 1/4: u < 1/2


def test_an_audit_certificate_names_the_library_whose_results_it_holds(tmp_path):
    from specproof.cli import main

    _, p, q = _library_sum_cert()
    for name, row in (("p", p), ("q", q)):
        (tmp_path / f"{name}.json").write_text(json.dumps([float(x) for x in row.tolist()]))
    for policy in ("le-float32-coin", "standard"):
        assert main(
            [
                "audit",
                "--target",
                str(tmp_path / "p.json"),
                "--draft",
                str(tmp_path / "q.json"),
                "--policy",
                policy,
                "--certificate",
                str(tmp_path / f"{policy}.json"),
            ]
        ) in (0, 1)
    doc = json.loads((tmp_path / "le-float32-coin.json").read_text())
    assert doc["provenance"]["library"].startswith("torch ") and "torch's own sum" in doc["statement"]
    assert checker.check(doc).valid
    assert "library" not in json.loads((tmp_path / "standard.json").read_text())["provenance"]


def test_a_half_formats_stated_sum_is_allowed_one_more_rounding():
    # bfloat16 1/2 + 3/1024 (u = 2^-8): every order gives fl(515/1024) = 1/2, 1.49 u S from the exact sum, past the
    # k u = u S of one addition in the format itself; a half format's wider accumulator, rounded once more, is
    # allowed (k + 1) u, and no more: 65/128, 2.49 u S away, is refused
    fmt = checker.FLOAT_FORMATS["bfloat16"]
    row = checker._Named(checker.Row([512, 3], 1024))
    for ok in ("129/256", "1/2"):
        checker._some_float_sum(row, fmt, ok, "w")
    with pytest.raises(checker.Rejection, match="farther"):
        checker._some_float_sum(row, fmt, "65/128", "w")
