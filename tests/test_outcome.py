"""Tests for specproof.laws.outcome: coin models counted against brute force, primitives, trees."""

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import distribution_pairs

from specproof.errors import SpecProofError
from specproof.laws.outcome import (
    CONTINUOUS,
    FLOAT32,
    FLOAT32_OPEN_CLOSED,
    FLOAT64,
    Bound,
    Branch,
    Choice,
    Coin,
    CoinModel,
    Draw,
    InvalidTree,
    Leaf,
    Node,
    OutcomeTree,
    coin_model,
    race_given,
)

TINY = CoinModel("grid3", bits=3)  # points 0, 1/8, ..., 7/8
TINY_OC = CoinModel("grid3-(0,1]", bits=3, open_closed=True)  # points 1/8, ..., 1

thresholds = st.fractions(min_value=F(-1, 2), max_value=F(3, 2), max_denominator=40)


def _points(model):
    n = 1 << model.bits
    ks = range(1, n + 1) if model.open_closed else range(n)
    return [F(k, n) for k in ks]


@pytest.mark.parametrize("model", [TINY, TINY_OC])
@given(t=thresholds, strict=st.booleans())
def test_grid_below_counts_grid_points(model, t, strict):
    pts = _points(model)
    count = sum(1 for u in pts if (u < t if strict else u <= t))
    assert model.below(t, strict) == F(count, len(pts))


@pytest.mark.parametrize("model", [TINY, TINY_OC])
@given(a=thresholds, b=thresholds, sa=st.booleans(), sb=st.booleans())
def test_grid_interval_counts_grid_points(model, a, b, sa, sb):
    pts = _points(model)
    inside = [u for u in pts if (a < u if sa else a <= u) and (u < b if sb else u <= b)]
    assert model.interval((a, sa), (b, sb)) == F(len(inside), len(pts))


def test_float32_grid_formulas_from_the_notes():
    # P(u < t) = ceil(t 2^24)/2^24 and P(u <= t) = (floor(t 2^24) + 1)/2^24 for 0 <= t < 1
    n = 2**24
    t = F(1, 3)
    assert FLOAT32.below(t, True) == F(n // 3 + 1, n)  # ceil(n/3) = 5592406
    assert FLOAT32.below(t, False) == F(n // 3 + 1, n)  # floor(n/3) + 1: same since n/3 is not an integer
    assert FLOAT32.below(F(1, 2), True) == F(1, 2)  # a multiple of 2^-24: exact
    assert FLOAT32.below(F(1, 2), False) == F(1, 2) + F(1, n)
    assert FLOAT32.below(F(0), False) == F(1, n) and FLOAT32.below(F(0), True) == 0
    assert FLOAT64.below(F(0), False) == F(1, 2**53)
    assert FLOAT32_OPEN_CLOSED.below(F(1), True) == 1 - F(1, n)
    assert CONTINUOUS.below(F(2, 7), True) == CONTINUOUS.below(F(2, 7), False) == F(2, 7)
    assert CONTINUOUS.below(F(5, 2), True) == 1 and CONTINUOUS.below(F(-1), False) == 0


def test_fixed_coin_and_lookup():
    zero = coin_model("fixed:0")
    assert zero.below(F(0), False) == 1 and zero.below(F(0), True) == 0
    assert coin_model("fixed:1/2").interval((F(1, 4), True), (F(1, 2), False)) == 1
    with pytest.raises(SpecProofError, match="not in"):
        coin_model("fixed:3/2")
    with pytest.raises(SpecProofError, match="unknown coin model"):
        coin_model("float16")


def test_primitives_rederive_from_rows():
    rows = {"p": (F(1, 4), F(3, 4)), "q": (F(1, 2), F(1, 2)), "w": (F(1), F(3))}
    assert Draw("w", 1).probability(rows) == F(3, 4)
    ratio = Bound(("ratio", "p", "q", 0), True)
    assert Coin(CONTINUOUS, upper=ratio).probability(rows) == F(1, 2)
    assert Coin(CONTINUOUS, lower=Bound(("cdf", "w", 0), False), upper=Bound(("const", 1), True)).probability(
        rows
    ) == F(3, 4)
    assert Choice(("argmax-is", "p", 1)).probability(rows) == 1
    assert Choice(("argmax-is-not", "p", 1)).probability(rows) == 0
    assert Choice(("zero", "p", 0)).probability(rows) == 0
    with pytest.raises(InvalidTree, match="does not list"):
        Draw("r", 0).probability(rows)


def _tree():
    rows = {"q": (F(1, 2), F(1, 2)), "p": (F(1, 4), F(3, 4))}
    accept = Branch(Coin(CONTINUOUS, upper=Bound(("ratio", "p", "q", 0), True)), F(1, 2), Leaf(0, True))
    reject = Branch(Coin(CONTINUOUS, lower=Bound(("ratio", "p", "q", 0), False)), F(1, 2), Leaf(1, False))
    root = Node(
        "draft",
        (
            Branch(Draw("q", 0), F(1, 2), Node("test", (accept, reject))),
            Branch(Draw("q", 1), F(1, 2), Leaf(1, True)),
        ),
    )
    return OutcomeTree(rows, root, 2)


def test_tree_law_paths_and_rederive():
    tree = _tree()
    assert tree.law() == ((F(1, 4), F(3, 4)), {})
    assert tree.accept_probability() == F(3, 4)
    assert tree.accepted_law() == (F(1, 4), F(1, 2))
    assert tree.size() == 4
    tree.rederive()


def test_rederive_rejects_a_tampered_branch_and_a_bad_sum():
    tree = _tree()
    root = tree.root
    bad = Node("draft", (Branch(root.branches[0].event, F(1, 3), root.branches[0].child), root.branches[1]))
    with pytest.raises(InvalidTree, match="claims 1/3"):
        OutcomeTree(tree.rows, bad, 2).rederive()
    short = Node("draft", (root.branches[0],))
    with pytest.raises(InvalidTree, match="sum to 1/2"):
        OutcomeTree(tree.rows, short, 2).rederive()


def test_race_given_by_hand():
    # weights (2/3, 1/3, 0) won by 0 means E_1 > E_0 / 2; then argmin(E_1, E_2) is 1 with
    # P(E_1 > E_0/2, E_1 < E_2) / (2/3) = (int e^-2t - e^-4t dt) / (2/3) = (1/4) / (2/3) = 3/8.
    q = (F(2, 3), F(1, 3), F(0))
    r = (F(0), F(1, 6), F(1, 6))
    assert race_given(q, 0, r, 1) == F(3, 8)
    assert race_given(q, 0, r, 2) == F(5, 8)
    assert race_given(q, 0, r, 0) == 0
    # the same row twice: the second race repeats the first
    assert race_given(q, 1, q, 1) == 1 and race_given(q, 1, q, 0) == 0


@settings(max_examples=60, deadline=None)
@given(distribution_pairs(max_len=4, max_weight=6))
def test_race_given_is_a_law_with_the_right_marginal(pair):
    # shared noise couples the winners but cannot change the second race's marginal law
    a, b = pair
    for x in range(len(a)):
        if a[x]:
            assert sum(race_given(a, x, b, y) for y in range(len(b))) == 1
    for y in range(len(b)):
        marginal = sum(a[x] * race_given(a, x, b, y) for x in range(len(a)) if a[x])
        assert marginal == b[y]


def test_tree_round_trips_through_json_and_tampering_is_caught():
    import json

    from specproof.rules.audit import position_tree
    from specproof.rules.policy import named_rule

    for name in ("standard", "coin-reuse-inverse-cdf", "race-reuse", "le-float32-grid", "greedy", "match-rule"):
        tree = position_tree(["1/3", "1/2", "1/6"], ["2/3", "1/3", 0], named_rule(name))
        data = json.loads(json.dumps(tree.as_dict()))
        back = OutcomeTree.from_dict(data)
        back.rederive()
        assert back.law() == tree.law() and back.size() == tree.size()
    # the standard tree shares its residual draw: written once
    data = position_tree(["1/3", "1/2", "1/6"], ["2/3", "1/3", 0]).as_dict()
    assert sum(1 for n in data["nodes"] if n["label"] == "residual draw") == 1
    data["nodes"][1]["branches"][0]["probability"] = "1/7"
    with pytest.raises(InvalidTree, match="claims 1/7"):
        OutcomeTree.from_dict(data).rederive()


# ------------------------------------------------------------------ the float product test's threshold


@settings(max_examples=300, deadline=None)
@given(
    a=st.floats(0, 1, allow_subnormal=True),
    b=st.floats(0, 1, allow_subnormal=True),
    dtype=st.sampled_from(["float16", "bfloat16", "float32", "float64"]),
    coin=st.sampled_from(["float32", "float64", "float32-(0,1]", "float64-(0,1]"]),
    cmp=st.sampled_from(["<", "<="]),
)
def test_the_float_product_threshold_is_the_first_failing_grid_point(a, b, dtype, coin, cmp):
    # the threshold K / n: grid point K - 1 passes fl(u * b) cmp a (or is below the grid) and K fails (or is past it)
    from specproof.laws.floats import FORMATS
    from specproof.laws.outcome import _float_product_threshold, coin_model

    fmt, model = FORMATS[dtype], coin_model(coin)
    a, b = fmt.round(F(a)), fmt.round(F(b))
    wide = max(fmt, FORMATS["float32" if model.bits <= 24 else "float64"], key=lambda f: f.precision)
    n = 1 << model.bits
    lo, hi = (1, n) if model.open_closed else (0, n - 1)

    def passes(k):
        prod = wide.mul(F(k, n), b)
        return prod < a if cmp == "<" else prod <= a

    t = _float_product_threshold(a, b, dtype, model, cmp)
    k = t.numerator * (n // t.denominator)
    assert t == F(k, n) and lo <= k <= hi + 1
    assert k == lo or passes(k - 1)
    assert k == hi + 1 or not passes(k)
