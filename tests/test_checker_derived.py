"""Trust round 4 (issue 30): a stated sum or constant never flips a verdict.

A residual's float sum is derived by the checker in the order the certificate names (left to right, or
a tree, in a named accumulator), never accepted within a bound; a sum the document only states, every
``const`` threshold and every given row the tree reads are named as stated values in ``check``'s line,
``--json`` and the transcript, and fail ``--require-lossless``, which passes only for a law equal to p
bound to ``--target`` (or, without ``--target``, the certificate's own p, said so). The reviewer's
cases are rebuilt here from the issue's description; the expected laws are computed independently with
``specproof.laws.floats``, not by the checker.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction as F

import pytest

from specproof import checker
from specproof.cli import main
from specproof.laws.floats import FLOAT32, FORMATS


def _nd(x):
    x = F(x)
    return f"{x.numerator}/{x.denominator}"


def _textbook(p, q, residual_recipe, law, *, extra_rows=None, claims_lossless=None, threshold=None):
    """An outcome certificate of the textbook step on p and q whose residual is ``residual_recipe``
    (on the row ``w`` = (p - q)+ in float arithmetic): draw x from q, accept iff u < p(x)/q(x) (a
    continuous coin; ``threshold(x)`` replaces the ratio source), else draw from the residual.
    Branch probabilities and reaches are left unstated (null); the law is ``law``."""
    v = len(p)
    rows = {
        "p": {"recipe": ["input", "p"], "values": [_nd(x) for x in p]},
        "q": {"recipe": ["input", "q"], "values": [_nd(x) for x in q]},
        "w": {"recipe": ["positive-part", "p", "q"]},
        "r": {"recipe": residual_recipe},
        **(extra_rows or {}),
    }
    nodes = [{"label": "draft", "reach": None, "branches": []}]
    residual = None
    for x in range(v):
        if q[x] == 0:
            continue
        src = threshold(x) if threshold else ["ratio", "p", "q", x]
        node = {
            "label": f"test {x}",
            "reach": None,
            "branches": [
                {
                    "event": {"coin": {"model": "continuous", "lower": None, "upper": {"source": src, "strict": True}}},
                    "probability": None,
                    "child": {"leaf": [x, True]},
                },
                {
                    "event": {
                        "coin": {"model": "continuous", "lower": {"source": src, "strict": False}, "upper": None}
                    },
                    "probability": None,
                    "child": "R",
                },
            ],
        }
        nodes[0]["branches"].append(
            {"event": {"draw": {"row": "q", "token": x}}, "probability": None, "child": len(nodes)}
        )
        nodes.append(node)
    residual = len(nodes)
    nodes.append(
        {
            "label": "residual",
            "reach": None,
            "branches": [
                {"event": {"draw": {"row": "r", "token": t}}, "probability": None, "child": {"leaf": [t, False]}}
                for t in range(v)
            ],
        }
    )
    for node in nodes:
        for b in node["branches"]:
            if b["child"] == "R":
                b["child"] = residual
    alpha = sum((min(a, b) for a, b in zip(p, q)), F(0))
    tv = sum((abs(e - a) for e, a in zip(law, p)), F(0)) / 2
    return {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": v,
        "reference": "p",
        "rows": rows,
        "nodes": nodes,
        "law": [_nd(x) for x in law],
        "totals": {"alpha": _nd(alpha), "out_of_range": "0/1", "tv": _nd(tv)},
        "claims": {"lossless": tv == 0 if claims_lossless is None else claims_lossless},
    }


def _law(p, q, r):
    """min(p, q) + (1 - alpha) r / sum(r): the textbook law with the residual draw from the row r."""
    alpha = sum((min(a, b) for a, b in zip(p, q)), F(0))
    total = sum(r, F(0))
    return [min(a, b) + (1 - alpha) * x / total for a, b, x in zip(p, q, r)]


def _divided(w, s, fmt):
    return [fmt.div(x, s) for x in w]


def _files(tmp_path, doc, p, q):
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc))
    (tmp_path / "p.json").write_text(json.dumps([float(x) for x in p]))
    (tmp_path / "q.json").write_text(json.dumps([float(x) for x in q]))
    return str(path), ["--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json")]


def _json(capsys, argv):
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


# The reviewer's float16 case: the residual weights (1017/4096, 8/4096, 0) sum to 1025/4096 in every order
# and every accumulator (one exact addition); a stated 1/4 (a power of two) divides them exactly, so the
# residual draws are the exact residual's and the law is p: LOSSLESS. The code divides by 1025/4096.
P16 = [F(1, 4) + F(1017, 4096), F(1, 4) + F(8, 4096), F(1, 2) - F(1025, 4096)]
Q16 = [F(1, 4), F(1, 4), F(1, 2)]


def test_float16_weights_summing_to_1025_4096_are_lossy_with_the_derived_sum():
    fmt = FORMATS["float16"]
    w = [max(a - b, F(0)) for a, b in zip(P16, Q16)]
    assert w == [F(1017, 4096), F(8, 4096), 0] and sum(w) == F(1025, 4096) and all(fmt.round(x) == x for x in P16 + Q16)
    truth = _law(P16, Q16, _divided(w, F(1025, 4096), fmt))
    assert truth != P16  # lossy: fl16(1017/1025) : fl16(8/1025) is not 1017 : 8
    for order in (
        ["left-to-right", "float32"],
        ["left-to-right", "float16"],
        ["tree", "float32", [[2, 1], 0]],
        ["tree", "float64", [0, [1, 2]]],
    ):
        doc = _textbook(P16, Q16, ["float-divided", "w", "float16", order], truth)
        verdict = checker.check(doc)
        assert verdict.valid, verdict
        facts = verdict.facts[0]
        assert facts["claims"]["lossless"] is False and facts["stated"] == []
        assert [F(x.num, x.den) for x in facts["law"]] == truth
        # the forged claim: the law p, LOSSLESS, is rejected
        assert not checker.check(_textbook(P16, Q16, ["float-divided", "w", "float16", order], P16))


def test_a_stated_sum_is_named_and_fails_require_lossless(tmp_path, capsys):
    """The stated 1/4 (within the old k u S bound) gives the exact law: valid, but the sum is a stated
    value: named in the text line, --json and the transcript, bound_to_inputs false, the gate fails."""
    doc = _textbook(P16, Q16, ["float-divided", "w", "float16", "1/4"], P16)
    verdict = checker.check(doc)
    assert verdict.valid and verdict.facts[0]["claims"]["lossless"] is True
    assert verdict.facts[0]["stated"] == [
        "certificate.rows.r: the float sum 1/4 of row w, stated (bounded, not derived)"
    ]
    path, bind = _files(tmp_path, doc, P16, Q16)
    assert main(["check", path, *bind, "--require-lossless"]) == 1
    out = capsys.readouterr().out
    assert (
        "stated, not re-derived (the verdict depends on them): 1 value(s): certificate.rows.r: the float sum 1/4" in out
    )
    assert "--require-lossless: failed (exit 1): the verdict depends on 1 stated value(s)" in out
    code, report = _json(capsys, ["check", path, *bind, "--require-lossless", "--json"])
    assert code == 1 and report["valid"] is True and report["lossless"] == [True]
    assert report["bound_to_inputs"] is False and report["required_lossless"] is False
    assert report["stated_values"] == [
        ["certificate.rows.r: the float sum 1/4 of row w, stated (bounded, not derived)"]
    ]
    assert (
        "stated value certificate.rows.r: the float sum 1/4 of row w, stated (bounded, not derived)"
        in report["unbound_rows"]
    )
    assert main(["transcript", path]) == 0
    text = capsys.readouterr().out
    assert "**Stated, not re-derived: the verdict depends on these values" in text
    assert "- certificate.rows.r: the float sum 1/4 of row w, stated (bounded, not derived)" in text


def test_the_same_in_float32_transformers_style():
    """clamp(p - q, min=0) / its sum in float32: weights (8388601 2^-25, 2^-22, 0) sum to 1/4 + 2^-25 exactly; the
    derived sum gives the lossy law (TV below 2^-40); a forged LOSSLESS law is rejected."""
    fmt = FLOAT32
    p = [F(1, 4) + F(8388601, 2**25), F(1, 4) + F(1, 2**22), F(1, 4) - F(1, 2**25)]
    q = [F(1, 4), F(1, 4), F(1, 2)]
    w = [max(a - b, F(0)) for a, b in zip(p, q)]
    s = fmt.sum(w)
    assert s == sum(w) == F(1, 4) + F(1, 2**25) and all(fmt.round(x) == x for x in p)
    truth = _law(p, q, _divided(w, s, fmt))
    assert truth != p
    order = ["tree", "float32", [0, 1, 2]]
    doc = _textbook(p, q, ["float-divided", "w", "float32", order], truth)
    verdict = checker.check(doc)
    assert verdict.valid and verdict.facts[0]["claims"]["lossless"] is False
    tv = verdict.facts[0]["totals"]["tv"]
    assert 0 < F(tv.num, tv.den) < F(1, 2**40)
    assert not checker.check(_textbook(p, q, ["float-divided", "w", "float32", order], p))
    # the old bound (one addition: u S) refuses 1/4 here; the true sum, stated rather than derived, is reported
    assert checker.check(_textbook(p, q, ["float-divided", "w", "float32", "1/4"], p)).reason == checker.Reason.TOTAL
    stated = checker.check(_textbook(p, q, ["float-divided", "w", "float32", _nd(s)], truth))
    assert stated.valid and len(stated.facts[0]["stated"]) == 1


def test_a_bfloat16_row_of_256_entries_is_summed_not_bounded():
    """bfloat16 (u = 2^-8) with 256 non-zero weights: (k + 1) u > 1, so the old bound admitted any stated
    sum from the largest entry up to 2S. Here a row w of 256 bfloat16 weights (p = w / S exactly) is divided
    by its float sum and drawn from: the derived sum gives the law code computes (lossy); a stated power of
    two inside [max w, 2S] divides exactly and gives p (LOSSLESS), and is reported as stated."""
    v = 256
    fmt = FORMATS["bfloat16"]
    w = [F(128 + (37 * i) % 128, 2**16) for i in range(v)]  # 8 significant bits each: bfloat16 values
    assert all(fmt.round(x) == x for x in w) and all(w)
    total = sum(w, F(0))
    p = [x / total for x in w]
    s = fmt.round(FLOAT32.sum(w))  # left to right in a float32 accumulator, rounded once to bfloat16
    r = _divided(w, s, fmt)
    truth = [x / sum(r, F(0)) for x in r]
    assert truth != p

    def doc(order, law):
        tv = sum((abs(a - b) for a, b in zip(law, p)), F(0)) / 2
        return {
            "schema": checker.OUTCOME_SCHEMA,
            "vocab_size": v,
            "reference": "p",
            "rows": {
                "p": {"recipe": ["input", "p"], "values": [_nd(x) for x in p]},
                "w": {"recipe": ["scaled", "p", _nd(total)]},
                "r": {"recipe": ["float-divided", "w", "bfloat16", order]},
            },
            "nodes": [
                {
                    "label": "draw",
                    "reach": "1/1",
                    "branches": [
                        {"event": {"draw": {"row": "r", "token": t}}, "probability": None, "child": {"leaf": [t, True]}}
                        for t in range(v)
                    ],
                }
            ],
            "law": [_nd(x) for x in law],
            "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": _nd(tv)},
            "claims": {"lossless": tv == 0},
        }

    verdict = checker.check(doc(["left-to-right", "float32"], truth))
    assert verdict.valid, verdict
    facts = verdict.facts[0]
    assert facts["stated"] == [] and facts["sums"] == [
        ("r", "w", "bfloat16", "left to right, in a float32 accumulator")
    ]
    assert facts["claims"]["lossless"] is False
    power = F(1, 2)
    assert max(w) <= power <= 2 * total and power != s
    assert not checker.check(doc(["left-to-right", "float32"], p))  # the forged LOSSLESS law
    stated = checker.check(doc("1/2", p))  # the old bound admits 1/2: now it is a stated value
    assert stated.valid and stated.facts[0]["claims"]["lossless"] is True and len(stated.facts[0]["stated"]) == 1


def test_constant_thresholds_are_stated_and_never_pass_the_gate(tmp_path, capsys):
    """The exact ratios p(x)/q(x) written as constants: the law is p, LOSSLESS, but every constant is a stated
    value: bound_to_inputs is false and --require-lossless fails; with the ratio source (re-derived) it passes."""
    p, q = [F(1, 2), F(1, 4), F(1, 4)], [F(3, 8), F(3, 8), F(1, 4)]
    honest = _textbook(p, q, ["normalized", "w"], p)
    assert checker.check(honest).facts[0]["stated"] == []
    path, bind = _files(tmp_path, honest, p, q)
    code, report = _json(capsys, ["check", path, *bind, "--require-lossless", "--json"])
    assert code == 0 and report["required_lossless"] is True and report["bound_to_inputs"] is True
    assert report["required_lossless_against"] == "p bound to --target"
    forged = _textbook(p, q, ["normalized", "w"], p, threshold=lambda x: ["const", _nd(min(F(1), p[x] / q[x]))])
    verdict = checker.check(forged)
    assert verdict.valid and verdict.facts[0]["claims"]["lossless"] is True
    assert verdict.facts[0]["stated"] == [
        "certificate.nodes[1].branches[0].event.upper: the constant 1/1",
        "certificate.nodes[1].branches[1].event.lower: the constant 1/1",
        "certificate.nodes[2].branches[0].event.upper: the constant 2/3",
        "certificate.nodes[2].branches[1].event.lower: the constant 2/3",
        "certificate.nodes[3].branches[0].event.upper: the constant 1/1",
        "certificate.nodes[3].branches[1].event.lower: the constant 1/1",
    ]
    path, bind = _files(tmp_path, forged, p, q)
    code, report = _json(capsys, ["check", path, *bind, "--require-lossless", "--json"])
    assert code == 1 and report["lossless"] == [True] and report["bound_to_inputs"] is False
    assert report["required_lossless"] is False and len(report["stated_values"][0]) == 6
    assert main(["check", path, *bind]) == 0
    out = capsys.readouterr().out
    assert "stated, not re-derived (the verdict depends on them): 6 value(s)" in out


def _numpy_member():
    from specproof.rules.faithful import FAMILY

    return next(m.rule for m in FAMILY if m.rule.arithmetic.python_coin and m.rule.arithmetic.test == "ratio")


def test_numpy_float32_thresholds_are_rederived_and_constants_in_their_place_are_stated():
    """NumPy's fl32(u) < fl32(p/q) (a Python-float coin) is certified with rounded-coin-ratio sources the
    checker counts itself (no constant); the same grid points written as constants give the same law but are
    stated values."""
    from specproof.certify.certificate import build_outcome_certificate, dumps
    from specproof.rules.audit import position_law

    rule = _numpy_member()
    p, q = ["1/2", "1/4", "1/4"], ["3/8", "3/8", "1/4"]
    want = position_law(p, q, rule)
    doc = json.loads(dumps(build_outcome_certificate(want.tree, name="n", statement="s")))
    text = json.dumps(doc)
    assert '"const"' not in text and '"rounded-coin-ratio"' in text
    verdict = checker.check(doc)
    assert verdict.valid and verdict.facts[0]["stated"] == []
    assert [F(x.num, x.den) for x in verdict.facts[0]["law"]] == list(want.law)
    rows = {
        k: checker._named(checker._over_common_denominator([checker.Ratio(x.num, x.den) for x in vals]))
        for k, vals in verdict.facts[0]["rows"].items()
    }
    forged = copy.deepcopy(doc)
    count = 0
    for node in forged["nodes"]:
        for branch in node["branches"]:
            coin = branch["event"].get("coin")
            for end in ("lower", "upper") if coin else ():
                bound = coin[end]
                if bound and bound["source"][0] == "rounded-coin-ratio":
                    t = checker._float_product(bound["source"], rows, 3, "t", set())
                    bound["source"] = ["const", f"{t.num}/{t.den}"]
                    count += 1
    again = checker.check(forged)
    assert count and again.valid and len(again.facts[0]["stated"]) == count
    assert [F(x.num, x.den) for x in again.facts[0]["law"]] == list(want.law)


@pytest.mark.parametrize(
    "test, source, cmp, coin, want",
    [
        # fl32(u) < fl32(2/3): fl32(2/3) = 11184811 / 2^24, so the float64-grid coins below it, and those that round
        # up to it under <=, pass
        ("ratio", ["rounded-coin-ratio", "a", "b", 0, "float32", "float64", "<"], "<", "float64", None),
        ("ratio", ["rounded-coin-ratio", "a", "b", 0, "float32", "float64", "<="], "<=", "float64", None),
        ("product", ["rounded-coin-product", "a", "b", 0, "float32", "float64", "<"], "<", "float64", None),
        (
            "product",
            ["rounded-coin-product", "a", "b", 0, "float16", "float32-(0,1]", "<="],
            "<=",
            "float32-(0,1]",
            None,
        ),
    ],
)
def test_rounded_coin_thresholds_equal_the_untrusted_count(test, source, cmp, coin, want):
    from specproof.laws.outcome import coin_model, rounded_coin_threshold

    a, b = F(1, 4), F(3, 8)
    rows = {"a": checker._named(checker.Row([1, 3], 4)), "b": checker._named(checker.Row([3, 5], 8))}
    got = checker._float_product(source, rows, 2, "t", set())
    assert F(got.num, got.den) == rounded_coin_threshold(a, b, source[4], coin_model(coin), cmp, test)
    n = 1 << (24 if coin.startswith("float32") else 53)
    # brute force on the grid near the threshold: exactly the coins below it pass
    fmt = FORMATS[source[4]]
    k = got.num * (n // got.den)

    def passes(j):
        u = fmt.round(F(j, n))
        left = u if test == "ratio" else fmt.mul(u, b)
        right = fmt.div(a, b) if test == "ratio" else a
        return left < right if cmp == "<" else left <= right

    assert passes(k - 1) and not passes(k)


def test_rounded_coin_ratio_overflow_passes_every_coin_and_a_zero_divisor_is_refused():
    rows = {"a": checker._named(checker.Row([1, 0], 1)), "b": checker._named(checker.Row([1, 2**200 - 1], 2**200))}
    got = checker._float_product(["rounded-coin-ratio", "a", "b", 0, "float16", "float32", "<"], rows, 2, "t", set())
    assert got == checker.Ratio(1 << 24, 1 << 24)  # 1 / 2^-200 overflows float16: every coin of [0, 1) passes
    with pytest.raises(checker.Rejection, match="divides by b"):
        rows = {"a": checker._named(checker.Row([1, 0], 1)), "b": checker._named(checker.Row([0, 1], 1))}
        checker._float_product(["rounded-coin-ratio", "a", "b", 0, "float32", "float64", "<"], rows, 2, "t", set())


@pytest.mark.parametrize(
    "order, reason, text",
    [
        (["tree", "float32", [0, 1]], checker.Reason.TOKENS, "does not add token 2"),
        (["tree", "float32", [0, 1, 2, 1]], checker.Reason.TOKENS, "adds token 1 twice"),
        (["tree", "float32", [0, [], 1, 2]], checker.Reason.MALFORMED, "holds an empty list"),
        (["tree", "float32", []], checker.Reason.MALFORMED, "not a non-empty list"),
        (["tree", "float32", 0], checker.Reason.MALFORMED, "not a non-empty list"),
        (["tree", "float32", [0, 1, 3]], checker.Reason.TOKENS, "not a token id"),
        (["tree", "float32", [0, 1, True]], checker.Reason.TOKENS, "not a token id"),
        (["tree", "float32", [0, 1, "2"]], checker.Reason.TOKENS, "not a token id"),
        (["tree", "float8", [0, 1, 2]], checker.Reason.MALFORMED, "float8"),
        (["tree", "float32"], checker.Reason.MALFORMED, 'not ["left-to-right"'),
        (["left-to-right"], checker.Reason.MALFORMED, 'not ["left-to-right"'),
        (["left-to-right", "float32", [0]], checker.Reason.MALFORMED, 'not ["left-to-right"'),
        (["pairwise", "float32", 8], checker.Reason.MALFORMED, 'not ["left-to-right"'),
        ([], checker.Reason.MALFORMED, 'not ["left-to-right"'),
        (3, checker.Reason.MALFORMED, 'not ["left-to-right"'),
        (None, checker.Reason.MALFORMED, 'not ["left-to-right"'),
        ({"order": "left-to-right"}, checker.Reason.MALFORMED, 'not ["left-to-right"'),
    ],
)
def test_hostile_summation_orders_are_rejected(order, reason, text):
    doc = _textbook(P16, Q16, ["float-divided", "w", "float16", order], P16)
    verdict = checker.check(doc)
    assert not verdict.valid and verdict.reason == reason and text in verdict.detail, verdict


def test_a_deep_or_long_summation_tree_is_rejected_or_checked_in_linear_work():
    """A tree nested 100,000 deep (built in Python: no JSON parser limits it) is walked without recursion;
    as JSON text it is refused by the parser (nested too deeply). 100,000 entries cost one rounding each."""
    deep = [0]
    for _ in range(100_000):
        deep = [deep]
    doc = _textbook(P16, Q16, ["float-divided", "w", "float16", ["tree", "float32", [deep, 1, 2]]], P16)
    verdict = checker.check(doc)  # the forged law p: the derived sum 1025/4096 gives another
    assert not verdict.valid and verdict.reason == checker.Reason.EMITTED
    nested = '{"x": ' + "[" * 100_000 + "0" + "]" * 100_000 + "}"
    assert checker.check(nested).reason == checker.Reason.MALFORMED
    calls = []
    original = checker._round_float

    def counting(value, fmt):
        calls.append(1)
        return original(value, fmt)

    v = 100_000
    row = checker.Row([1] * v, v)
    checker._round_float = counting
    try:
        total = checker._ordered_sum(row, [list(range(v))], FORMATS_CHECKER["float32"], FORMATS_CHECKER["float32"], "s")
    finally:
        checker._round_float = original
    assert len(calls) == 2 * v  # each entry converted once, each addition rounded once (v - 1), the result once
    assert F(total.num, total.den) == FLOAT32.sum([F(1, v)] * v)


FORMATS_CHECKER = checker.FLOAT_FORMATS


def test_an_overflowing_float16_sum_is_a_clean_rejection(tmp_path, capsys):
    """70,000 entries of 1 sum past float16's largest 65504 (in a float32 accumulator, then rounded once):
    float-normalized refused with a reason, not an AttributeError; --json prints the rejection."""
    v = 70_000
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": v,
        "reference": "p",
        "rows": {
            "p": {"recipe": ["input", "p"], "values": ["1/1"] + ["0/1"] * (v - 1)},
            "one": {"recipe": ["given"], "values": ["1/1"] * v},
            "n": {"recipe": ["float-normalized", "one", "float16"]},
        },
        "nodes": [
            {
                "label": "d",
                "reach": "1/1",
                "branches": [
                    {"event": {"draw": {"row": "n", "token": 0}}, "probability": None, "child": {"leaf": [0, True]}}
                ],
            }
        ],
        "law": ["1/1"] + ["0/1"] * (v - 1),
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }
    verdict = checker.check(doc)
    assert not verdict.valid and verdict.reason == checker.Reason.TOTAL
    assert "the float sum of row one overflows to inf while its mass is not 0" in verdict.detail
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    code, report = _json(capsys, ["check", str(path), "--json"])
    assert code == 1 and report["reason"] == "total" and "overflows to inf" in report["detail"]
    doc["rows"]["n"]["recipe"] = ["float-divided", "one", "float16", ["tree", "float32", list(range(v))]]
    assert "overflows to inf" in checker.check(doc).detail


def test_an_accumulator_overflow_is_none():
    row = checker.Row([1, 1], 1)
    tiny = (11, -14, 15)
    assert checker._ordered_sum(row, [0, 1], tiny, tiny, "s") == checker.Ratio(1024, 512)  # 2, unreduced
    huge = checker.Row([1 << 16, 1 << 16], 1)  # not a probability row: the primitive alone
    assert checker._ordered_sum(huge, [0, 1], tiny, tiny, "s") is None
    # each entry finite in float16, their sum not: the overflow is kept through the finite additions after it
    # (a mutant that forgot it returned 2, the sum of the last two)
    late = checker.Row([40000, 40000, 1, 1], 1)
    assert checker._ordered_sum(late, [0, 1, 2, 3], tiny, tiny, "s") is None
    assert checker._ordered_sum(late, [[0, 1], [2, 3]], tiny, tiny, "s") is None


# ---------------------------------------------------------------- the gate: --require-lossless


def _audit_doc(rule_name, p, q):
    from specproof.certify.certificate import build_outcome_certificate, dumps
    from specproof.rules.audit import position_law
    from specproof.rules.policy import named_rule

    tree = position_law(p, q, named_rule(rule_name)).tree
    return json.loads(dumps(build_outcome_certificate(tree, name=rule_name, statement="s")))


PA, QA = [F(3, 4), F(1, 4)], [F(1, 4), F(3, 4)]


def test_accept_all_with_a_reference_equal_to_q_fails_the_gate(tmp_path, capsys):
    """accept-all emits q (TV 1/2 from p); with a given reference row equal to q its law is its reference's:
    valid, 'LOSSLESS' against that reference, but the reference is not p: the gate fails, in text and --json."""
    doc = _audit_doc("accept-all", PA, QA)
    doc["rows"]["ref-q"] = {"recipe": ["given"], "values": [_nd(x) for x in QA]}
    doc["reference"] = "ref-q"
    doc["totals"]["tv"] = "0/1"
    doc["claims"]["lossless"] = True
    verdict = checker.check(doc)
    assert verdict.valid and verdict.facts[0]["reference_source"] == "given row ref-q"
    path, bind = _files(tmp_path, doc, PA, QA)
    for extra in ([], bind):
        assert main(["check", path, *extra, "--require-lossless"]) == 1
        out = capsys.readouterr().out
        assert "LOSSLESS (reference: given row ref-q)" in out
        assert "--require-lossless: failed (exit 1): its reference is given row ref-q, not p" in out
        code, report = _json(capsys, ["check", path, *extra, "--require-lossless", "--json"])
        assert code == 1 and report["lossless"] == [True] and report["required_lossless"] is False
        assert "its reference is given row ref-q, not p" in report["required_lossless_failures"]
    # the same rule against p: LOSSY, and the gate fails for that
    honest = _audit_doc("accept-all", PA, QA)
    path, bind = _files(tmp_path, honest, PA, QA)
    code, report = _json(capsys, ["check", path, *bind, "--require-lossless", "--json"])
    assert code == 1 and report["lossless"] == [False] and report["tv"] == ["1/2"]


def test_an_argmax_of_p_reference_fails_the_gate(tmp_path, capsys):
    """The greedy rule emits the argmax of p: lossless against that reference (not p), so the gate fails."""
    doc = _audit_doc("greedy", PA, QA)
    doc["rows"]["reference"] = {"recipe": ["one-hot-argmax", "p"]}
    verdict = checker.check(doc)
    assert verdict.valid and verdict.facts[0]["reference_source"] == "argmax of p"
    assert verdict.facts[0]["claims"]["lossless"] is True
    path, bind = _files(tmp_path, doc, PA, QA)
    code, report = _json(capsys, ["check", path, *bind, "--require-lossless", "--json"])
    assert code == 1 and report["required_lossless"] is False and report["bound_to_inputs"] is True
    assert report["required_lossless_failures"] == ["its reference is argmax of p, not p"]


def test_the_gate_passes_for_p_and_says_against_what(tmp_path, capsys):
    doc = _audit_doc("standard", PA, QA)
    path, bind = _files(tmp_path, doc, PA, QA)
    assert main(["check", path, "--require-lossless"]) == 0
    assert (
        "--require-lossless: passed: the certified law is exactly the certificate's own input p (no --target "
        "given: p is not bound to a file)"
    ) in capsys.readouterr().out
    assert main(["check", path, *bind, "--require-lossless"]) == 0
    assert "--require-lossless: passed: the certified law is exactly p, bound to --target" in capsys.readouterr().out
    code, report = _json(capsys, ["check", path, "--require-lossless", "--json"])
    assert code == 0 and report["required_lossless"] is True and report["required_lossless_failures"] == []
    assert report["required_lossless_against"] == "the certificate's own input p (no --target: not bound to a file)"


def test_a_given_row_the_tree_reads_fails_the_gate(tmp_path, capsys):
    """The draft's row as a given row (equal to q): the law is p, but it depends on a row taken as stated."""
    p, q = [F(1, 2), F(1, 4), F(1, 4)], [F(3, 8), F(3, 8), F(1, 4)]
    doc = _textbook(
        p, q, ["normalized", "w"], p, extra_rows={"g": {"recipe": ["given"], "values": [_nd(x) for x in q]}}
    )
    doc["rows"]["w"]["recipe"] = ["positive-part", "p", "g"]
    assert checker.check(doc).valid
    path, bind = _files(tmp_path, doc, p, q)
    code, report = _json(capsys, ["check", path, *bind, "--require-lossless", "--json"])
    assert code == 1 and report["lossless"] == [True] and report["bound_to_inputs"] is False
    assert "the tree reads given rows (g), stated, not re-derived" in report["required_lossless_failures"]


# ---------------------------------------------------------------- no exception escapes; valid documents render


def test_valid_documents_with_null_probabilities_and_nameless_bundle_members_render(tmp_path, capsys):
    doc = _textbook(P16, Q16, ["float-divided", "w", "float16", "1/4"], P16)  # every probability and reach null
    path = tmp_path / "null.json"
    path.write_text(json.dumps(doc))
    assert checker.check(doc).valid
    assert main(["transcript", str(path)]) == 0
    text = capsys.readouterr().out
    assert "| (not stated) |" in text and "the tree reads the inputs p, q" in text
    from specproof.certify.certificate import build_certificate

    member = json.loads(json.dumps(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="x")))
    del member["name"]
    bundle = {"schema": checker.BUNDLE_SCHEMA, "count": 1, "certificates": [member]}
    assert checker.check(bundle).valid
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    assert main(["transcript", str(path)]) == 0
    assert "# Proof transcript: (unnamed)" in capsys.readouterr().out


def test_a_tree_that_reads_no_input_says_so(tmp_path, capsys):
    v = 2
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": v,
        "reference": "g",
        "rows": {
            "p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"]},
            "g": {"recipe": ["given"], "values": ["1/1", "0/1"]},
        },
        "nodes": [
            {
                "label": "commit",
                "reach": "1/1",
                "branches": [
                    {"event": {"choice": {"condition": ["always"]}}, "probability": "1/1", "child": {"leaf": [0, True]}}
                ],
            }
        ],
        "law": ["1/1", "0/1"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }
    verdict = checker.check(doc)
    assert verdict.valid and verdict.facts[0]["reads"] == []
    path = tmp_path / "noread.json"
    path.write_text(json.dumps(doc))
    assert main(["transcript", str(path)]) == 0
    text = capsys.readouterr().out
    assert "the tree reads no input row." in text and "the tree reads the inputs ." not in text


def _hostile_documents():
    """Every reproducer class kept in tests/data/trust (JSON files), the float and sum hostile documents of
    this module, and mutants of a float certificate (each field of each row recipe and coin source replaced
    by values of the wrong type)."""
    from pathlib import Path

    out = {}
    for path in sorted((Path(__file__).parent / "data" / "trust").glob("*.json")):
        out[path.name] = path.read_bytes()
    base = _textbook(P16, Q16, ["float-divided", "w", "float16", ["left-to-right", "float32"]], P16)
    junk = [
        None,
        True,
        -1,
        2**70,
        "x",
        "-1/2",
        "1/0",
        [],
        [[]],
        {},
        [0, [1, [2, [3]]]],
        "float16",
        ["tree"],
        ["tree", "float32", [0, 1, 2, 2]],
        1.5,
    ]
    n = 0
    for name in list(base["rows"]):
        recipe = base["rows"][name]["recipe"]
        for i in range(len(recipe) + 1):
            for value in junk:
                doc = copy.deepcopy(base)
                r = doc["rows"][name]["recipe"]
                if i < len(r):
                    r[i] = value
                else:
                    r.append(value)
                out[f"recipe-{n}"] = doc
                n += 1
    for value in junk:
        for field in ("model", "lower", "upper"):
            doc = copy.deepcopy(base)
            doc["nodes"][1]["branches"][0]["event"]["coin"][field] = value
            out[f"coin-{n}"] = doc
            n += 1
        for i in range(8):
            doc = copy.deepcopy(base)
            src = ["rounded-coin-ratio", "p", "q", 0, "float32", "float64", "<"]
            src[i % 7] = value
            doc["nodes"][1]["branches"][0]["event"]["coin"]["upper"]["source"] = src if i < 7 else ["const", value]
            out[f"source-{n}"] = doc
            n += 1
    return out


def test_no_exception_escapes_check_json_or_transcript(tmp_path, capsys):
    """Every hostile document through checker.check, `check`, `check --json` and `transcript`: a verdict or a
    clean refusal (exit 0, 1 or 2), never an exception; --json always prints one JSON object."""
    docs = _hostile_documents()
    assert len(docs) > 300
    for i, (name, doc) in enumerate(docs.items()):
        verdict = checker.check(doc)
        assert isinstance(verdict, checker.Verdict), name
        path = tmp_path / f"d{i}.json"
        path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
        if name.startswith(("recipe-", "coin-", "source-")) and i % 5:
            continue  # the CLI on every fifth mutant (each is checked above): the CLI's own paths are few
        assert main(["check", str(path)]) in (0, 1, 2), name
        capsys.readouterr()
        assert main(["check", str(path), "--json"]) in (0, 1, 2), name
        report = json.loads(capsys.readouterr().out)
        assert report["valid"] is verdict.valid or name.startswith("symbolic") or name.startswith("dupkey"), name
        assert main(["transcript", str(path)]) in (0, 1, 2), name
        captured = capsys.readouterr()
        if verdict.valid:  # a valid document renders
            assert "cannot render" not in captured.err, (name, captured.err)


@pytest.mark.parametrize(
    "fmt, words",
    [
        ("float16", "left to right, in a float32 accumulator"),
        ("bfloat16", "left to right, in a float32 accumulator"),
        ("float32", "left to right"),
        ("float64", "left to right"),
    ],
)
def test_a_float_normalized_sum_is_named_with_its_order(fmt, words):
    """float-normalized's sum is derived left to right (a half format in a float32 accumulator): the facts
    name that order, the modelling assumption the output shows."""
    p, q = [F(1, 2), F(1, 4), F(1, 4)], [F(3, 8), F(3, 8), F(1, 4)]
    w = [max(a - b, F(0)) for a, b in zip(p, q)]
    r = [FORMATS[fmt].div(x, sum(w, F(0))) for x in w]
    verdict = checker.check(_textbook(p, q, ["float-normalized", "w", fmt], _law(p, q, r)))
    assert verdict.valid, verdict
    assert verdict.facts[0]["sums"] == [("r", "w", fmt, words)] and verdict.facts[0]["stated"] == []
