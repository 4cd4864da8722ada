"""Tests for specproof.rules.policy: the rule value, processing steps, named rules."""

from fractions import Fraction as F

import pytest

from specproof.errors import SpecProofError
from specproof.laws.outcome import CONTINUOUS, FLOAT32
from specproof.rules.audit import position_law
from specproof.rules.policy import (
    NAMED_RULES,
    STANDARD,
    Arithmetic,
    Processing,
    Rule,
    UnsupportedRule,
    load_rule,
    named_rule,
    rule_from_dict,
)


def test_default_is_the_textbook_rule():
    r = Rule()
    assert (r.acceptance, r.comparison, r.coin, r.residual, r.residual_draw, r.proposal) == (
        "ratio",
        "<",
        CONTINUOUS,
        "positive-part",
        "independent",
        "draft",
    )
    assert r.is_standard and named_rule("standard") == STANDARD
    with pytest.raises(AttributeError):
        r.comparison = "<="  # frozen


def test_named_rules_from_the_issue_exist_with_description_and_source():
    for name in [
        "standard",
        "accept-all",
        "le-float32-coin",
        "lt-float32-coin",
        "resample-from-target",
        "residual-floor:EPS",
        "coin-reuse-inverse-cdf",
        "match-rule",
        "first-draft-unchecked",
        "race-reuse",
    ]:
        entry = NAMED_RULES[name]
        assert entry.description and entry.source and "\n" not in entry.description
    assert named_rule("le-float32-grid") == Rule(comparison="<=", coin=FLOAT32)
    assert named_rule("le-float32-coin") == Rule(
        comparison="<=", coin=FLOAT32, arithmetic=Arithmetic("float32", "ratio", "divide", "torch")
    )
    assert named_rule("lt-float32-coin") == Rule(coin=FLOAT32, arithmetic=Arithmetic("float32"))
    assert named_rule("residual-floor:1/1000") == Rule(residual="floor", floor=F(1, 1000))
    assert not named_rule("lt-float32-coin").is_standard


def test_bad_arithmetic_is_refused_with_the_field_named():
    with pytest.raises(UnsupportedRule, match="dtype is 'float8'"):
        Arithmetic("float8")
    with pytest.raises(UnsupportedRule, match="test is 'logit'"):
        Arithmetic("float32", test="logit")
    with pytest.raises(UnsupportedRule, match="exact arithmetic"):
        Arithmetic("exact", normalization="divide")
    with pytest.raises(UnsupportedRule, match="float-grid coin"):
        Rule(arithmetic=Arithmetic("float32", test="product"))
    # a temperature under float arithmetic is modelled on logits; on probability rows it is refused at use, named
    half = Rule(arithmetic=Arithmetic("float32"), draft_processing=Processing(temperature=F(1, 2)))
    with pytest.raises(UnsupportedRule, match=r"draft_processing: temperature 1/2 under float arithmetic"):
        position_law(["1/2", "1/2"], ["1/4", "3/4"], half)
    with pytest.raises(UnsupportedRule, match=r"target_processing: temperature 7/10 is not exact on rationals"):
        Rule(target_processing=Processing(temperature=F(7, 10)))
    with pytest.raises(UnsupportedRule, match="arithmetic must be"):
        rule_from_dict({"arithmetic": {"dtype": "float32", "colour": "red"}})
    assert (
        Rule(coin=FLOAT32, arithmetic=Arithmetic("float16", "product")).describe()
        == "fl16(u * q) < p, residual fl16(max(p - q, 0)) as weights, coin float32"
    )


def test_bad_rules_are_refused_with_the_field_named():
    with pytest.raises(UnsupportedRule, match="comparison is '=='"):
        Rule(comparison="==")
    with pytest.raises(UnsupportedRule, match="floor"):
        Rule(residual="floor")
    with pytest.raises(UnsupportedRule, match="unknown rule 'nope'"):
        named_rule("nope")
    with pytest.raises(UnsupportedRule, match="unknown rule keys"):
        rule_from_dict({"colour": "red"})
    assert named_rule("residual-floor:0.001") == Rule(residual="floor", floor=F(1, 1000))  # the decimal it names
    with pytest.raises(SpecProofError):
        named_rule("residual-floor:-0.001")
    assert issubclass(UnsupportedRule, ValueError)


def test_rule_round_trips_through_json_data():
    for entry in NAMED_RULES.values():
        assert rule_from_dict(entry.rule.as_dict()) == entry.rule
    assert load_rule('{"coin": "float32"}') == named_rule("lt-float32-grid")
    assert load_rule('{"coin": "float32", "arithmetic": "float32"}') == named_rule("lt-float32-coin")
    assert load_rule(" match-rule ") == named_rule("match-rule")


def test_processing_steps_by_hand():
    row = (F(1, 2), F(1, 4), F(1, 8), F(1, 8))
    assert Processing(temperature=F(0)).apply(row) == (1, 0, 0, 0)
    # T = 1/2: p^2 normalized: (16, 4, 1, 1) / 22
    assert Processing(temperature=F(1, 2)).apply(row) == (F(16, 22), F(4, 22), F(1, 22), F(1, 22))
    # top-k 3 with a tie at the boundary: the smaller id is kept
    assert Processing(top_k=3).apply(row) == (F(4, 7), F(2, 7), F(1, 7), 0)
    # top-p 3/4: 1/2 then 1/4 reaches 3/4 -> keep two
    assert Processing(top_p=F(3, 4)).apply(row) == (F(2, 3), F(1, 3), 0, 0)
    # min-p 1/2: keep p >= 1/4
    assert Processing(min_p=F(1, 2)).apply(row) == (F(2, 3), F(1, 3), 0, 0)
    with pytest.raises(UnsupportedRule, match="temperature 2/3 is not exact on rationals"):
        Processing(temperature=F(2, 3)).apply(row)
    with pytest.raises(UnsupportedRule, match="temperature is -1, not >= 0"):
        Processing(temperature=-1)
    assert Processing(temperature=0.5) == Processing(temperature=F(1, 2))  # a float at its exact value


def test_processing_order_changes_the_law():
    row = (F(1, 2), F(3, 10), F(2, 10))
    # top-p 3/5 first: 1/2 < 3/5, so tokens 0 and 1 are kept, (5/8, 3/8, 0); squared (T = 1/2): (25, 9, 0)/34.
    # temperature first: (25, 9, 4)/38; 25/38 >= 3/5 already, so top-p keeps token 0 alone.
    first_top_p = Processing(temperature=F(1, 2), top_p=F(3, 5), order=("top_p", "temperature", "top_k", "min_p"))
    first_temp = Processing(temperature=F(1, 2), top_p=F(3, 5))
    assert first_top_p.apply(row) == (F(25, 34), F(9, 34), 0)
    assert first_temp.apply(row) == (F(1), 0, 0)


def test_logit_bias_bans_are_exact_and_finite_biases_are_refused():
    ban = Processing(logit_bias=((1, -float("inf")),))
    assert ban.apply((F(1, 2), F(1, 4), F(1, 4))) == (F(2, 3), F(0), F(1, 3))
    assert not ban.identity
    with pytest.raises(UnsupportedRule, match=r"finite bias multiplies p\(1\) by exp\(2\), which is not rational"):
        Processing(logit_bias=((1, 2.0),)).apply((F(1, 2), F(1, 2)))
    with pytest.raises(UnsupportedRule, match=r"logit_bias at id 1 is nan"):
        Processing(logit_bias=((1, float("nan")),))
    with pytest.raises(UnsupportedRule, match=r"outside \[0, 2\)"):
        Processing(logit_bias=((5, -float("inf")),)).apply((F(1), F(0)))
    rule = rule_from_dict({"target_processing": {"logit_bias": {"1": "-inf"}, "top_k": 2}})
    assert rule.target_processing == Processing(top_k=2, logit_bias=((1, -float("inf")),))
    assert rule_from_dict(rule.as_dict()) == rule
    with pytest.raises(UnsupportedRule, match="only bans"):
        rule_from_dict({"target_processing": {"logit_bias": {"1": "2"}}})  # an exact rule on probability rows
    biased = rule_from_dict(
        {"arithmetic": "float32", "target_processing": {"logit_bias": {"1": 0.5, "2": "-inf"}, "temperature": 0.7}}
    )
    assert biased.target_processing == Processing(temperature=F(0.7), logit_bias=((1, F(1, 2)), (2, -float("inf"))))
    assert rule_from_dict(biased.as_dict()) == biased


def test_float_processing_rounds_each_renormalization():
    from specproof.laws.floats import FLOAT32

    # top-k 2 of (0.5, 0.3, 0.2) in float32: kept (fl(0.5), fl(0.3)), each divided by their float32 sum
    row = tuple(FLOAT32.round(F(x)) for x in ("1/2", "3/10", "1/5"))
    got = Processing(top_k=2).apply_float(row, FLOAT32)
    s = FLOAT32.add(row[0], row[1])
    assert got == (FLOAT32.div(row[0], s), FLOAT32.div(row[1], s), F(0))
    assert got != Processing(top_k=2).apply(row)  # the exact renormalization differs


def test_logits_as_input_need_a_float_arithmetic_and_finite_or_masked_entries():
    from specproof.errors import InvalidDistribution
    from specproof.laws.floats import FLOAT16, FLOAT64
    from specproof.rules.policy import Logits

    assert Logits([0.5, float("-inf"), 2], library="numpy").values == (F(1, 2), -float("inf"), F(2))
    for bad, message in (
        ([float("nan")], r"logits\[0\] is nan"),
        ([float("inf")], r"logits\[0\] is inf"),
        ([], "logits are empty"),
        ("ab", "sequence of numbers"),
    ):
        with pytest.raises(InvalidDistribution, match=message):
            Logits(bad)
    with pytest.raises(UnsupportedRule, match="logits library 'jax'"):
        Logits([0.0], library="jax")
    with pytest.raises(UnsupportedRule, match="give the rule a float arithmetic"):
        position_law(Logits([0.0, 1.0], "numpy"), Logits([0.0, 1.0], "numpy"), Rule())
    with pytest.raises(UnsupportedRule, match="not float16"):
        Processing().apply_logits((F(0),), FLOAT16, "numpy")
    with pytest.raises(UnsupportedRule, match=r"logit_bias at id 2, outside \[0, 2\)"):
        Processing(logit_bias=((2, 1.0),)).apply_logits((F(0), F(1)), FLOAT64, "numpy")
    with pytest.raises(UnsupportedRule, match="no finite logit is left"):
        Processing(logit_bias=((0, float("-inf")), (1, float("-inf")))).apply_logits((F(0), F(1)), FLOAT64, "numpy")
    # greedy on logits: the first maximal id; top-k on logits keeps ties at the boundary (torch.topk's threshold)
    z = (F(1), F(3), F(3), F(0))
    assert Processing(temperature=0).apply_logits(z, FLOAT64, "numpy") == (0, 1, 0, 0)
    assert Processing(top_k=1).apply_logits(z, FLOAT64, "numpy") == (0, F(1, 2), F(1, 2), 0)
    assert Processing(top_k=1).apply((F(1, 8), F(3, 8), F(3, 8), F(1, 8))) == (0, 1, 0, 0)  # rows: ties by id
