"""Tests for specproof.rules.audit: laws under rules, the fault catalogue of issue 11, regression
against the textbook laws of specproof.laws.exact and specproof.laws.chain, counterexample search."""

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import distribution_pairs

from specproof.errors import InvalidDistribution, ResidualUndefined
from specproof.laws import chain, exact
from specproof.laws.outcome import FLOAT32, FLOAT32_OPEN_CLOSED, coin_model
from specproof.rules.audit import (
    acceptance_rate,
    accepted_prefix_expectation,
    block_law,
    given_block_law,
    greedy_margin,
    position_law,
    position_tree,
    search_counterexample,
)
from specproof.rules.policy import Rule, UnsupportedRule, named_rule

N24 = 2**24
#: The float32 coin grid with the exact ratio p/q (the named float32 rules also round the ratio).
GRID = {"lt-float32-coin": Rule(coin=FLOAT32), "le-float32-coin": Rule(comparison="<=", coin=FLOAT32)}
pairs = distribution_pairs(max_len=5, max_weight=10)


def _tv(a, b):
    return sum(abs(x - y) for x, y in zip(a, b)) / 2


# --------------------------------------------------------------------- the fault catalogue, row by row


def test_row_accept_every_draft():
    law = position_law(["9/10", "1/10"], ["1/10", "9/10"], named_rule("accept-all"))
    assert law.law == (F(1, 10), F(9, 10)) and law.tv == F(4, 5)
    assert law.textbook_alpha == F(1, 5) and law.alpha == 1


def test_row_le_float32_coin():
    le = position_law([0, 1], [1, 0], named_rule("le-float32-coin"))
    assert le.law[0] == F(1, N24) and le.tv == F(1, N24)
    lt = position_law([0, 1], [1, 0], named_rule("lt-float32-coin"))
    assert lt.law[0] == 0 and lt.tv == 0


def test_row_resample_from_target():
    law = position_law(["1/2", "1/2"], ["1/4", "3/4"], named_rule("resample-from-target"))
    assert law.law == (F(3, 8), F(5, 8)) and law.tv == F(1, 8) and law.alpha == F(3, 4)


def test_row_residual_floor():
    law = position_law([0, "1/2", "1/2"], [1, 0, 0], named_rule("residual-floor:1/1000"))
    assert law.law[0] == F(1, 1001) and law.tv == F(1, 1001)
    # a decimal EPS is read exactly as the decimal it names; a negative one is refused as such
    assert named_rule("residual-floor:0.001") == named_rule("residual-floor:1/1000")
    assert named_rule("residual-floor:1e-3").floor == F(1, 1000)
    with pytest.raises(UnsupportedRule, match="floor is -1/10, not > 0"):
        named_rule("residual-floor:-0.1")
    with pytest.raises(UnsupportedRule, match="not of the form 'n/d'"):
        named_rule("residual-floor:abc")


def test_row_coin_reused_for_inverse_cdf():
    law = position_law(["1/4", "1/4", "1/2"], [1, 0, 0], named_rule("coin-reuse-inverse-cdf"))
    assert law.law == (F(1, 4), F(1, 12), F(2, 3)) and law.tv == F(1, 6)


def test_row_exact_match_rule():
    law = position_law(["1/2", "1/2"], ["1/4", "3/4"], named_rule("match-rule"))
    assert law.lossless and law.alpha == F(1, 2)
    assert position_law(["1/2", "1/2"], ["1/4", "3/4"]).alpha == F(3, 4)


def test_row_first_draft_unchecked_greedy():
    # greedy drafts the argmax of q = [1, 0]: token 0, which p = [0, 1] never emits
    faulty = position_law([0, 1], [1, 0], named_rule("greedy-first-draft-unchecked"))
    correct = position_law([0, 1], [1, 0], named_rule("greedy"))
    assert faulty.law == (1, 0) and faulty.tv == 1
    assert correct.law == (0, 1) and correct.tv == 0
    given = given_block_law([[0, 1], [0, 1]], [[1, 0]], [0], named_rule("greedy-first-draft-unchecked"))
    assert given.accepted_length_law == (0, 1)


def test_row_coin_past_every_cdf_entry():
    p, q = ["1/2", "1/2", 0], [1, 0, 0]
    for name in ("standard", "coin-reuse-inverse-cdf"):
        law = position_law(p, q, named_rule(name))
        assert law.law[2] == 0 and law.out_of_range == {} and law.lossless
        assert all(0 <= leaf.output < 3 for _, _, leaf in law.tree.paths())
    # a (0,1] float32 coin reaches u = 1, which passes no CDF entry: the fall-through id gets 2^-24
    last = position_law(p, q, named_rule("inverse-cdf-last-id"))
    assert last.law[2] == F(1, N24) and last.tv == F(1, N24)
    invalid = position_law(
        p, q, Rule(residual_draw="inverse-cdf-reuse", coin=FLOAT32_OPEN_CLOSED, fallthrough="out-of-range")
    )
    assert invalid.out_of_range == {3: F(1, N24)} and invalid.tv == F(1, N24)


def test_row_accepted_count_as_sum_of_flags():
    law = given_block_law([["1/4", "3/4"]] * 4, [["1/2", "1/2"]] * 3, [0, 0, 0])
    assert law.accepted_length_law == (F(1, 2), F(1, 4), F(1, 8), F(1, 8))
    assert law.expected_accepted == F(7, 8) and law.expected_flags == F(3, 2)
    assert given_block_law(
        [["1/4", "3/4"]] * 4, [["1/2", "1/2"]] * 3, [0, 0, 0], named_rule("flag-sum-count")
    ).expected_counted == F(3, 2)


def test_row_acceptance_counted_past_first_rejection():
    assert accepted_prefix_expectation(["1/2", "9/10", "9/10"]) == (F(271, 200), F(23, 10))
    # the same through rows: pass 1/2 (p = 1/4, q = 1/2) then 9/10 twice (p = 9/20, q = 1/2)
    rows = [["1/4", "3/4"], ["9/20", "11/20"], ["9/20", "11/20"], ["1/2", "1/2"]]
    law = given_block_law(rows, [["1/2", "1/2"]] * 3, [0, 0, 0])
    assert law.pass_probabilities == (F(1, 2), F(9, 10), F(9, 10))
    assert law.expected_accepted == F(271, 200) and law.expected_flags == F(23, 10)


def test_row_block_committed_past_eos():
    half = ["1/2", "1/2"]
    correct = block_law(half, half, 2, stop_tokens=[0])
    assert correct.expected_emitted_to_stop == F(7, 4) == correct.expected_emitted
    past = block_law(half, half, 2, named_rule("commit-past-stop"), stop_tokens=[0])
    assert past.expected_emitted == 3 and past.expected_emitted_to_stop == F(7, 4)
    assert chain.verification_law(lambda s: half, lambda s: half, 2).expected_emitted == 3


def test_row_padded_block():
    u = ["1/4"] * 4
    law = given_block_law([u] * 6, [u] * 5, [1, 0, 1, -1, -1])
    assert law.real_drafts == 3 and law.accepted_length_law == (0, 0, 0, 1)
    wrapped = given_block_law([u] * 6, [u] * 5, [1, 0, 1, -1, -1], named_rule("padding-wraparound"))
    assert wrapped.real_drafts == 5 and wrapped.accepted_length_law[5] == 1  # the fault: 5 "accepted"
    with pytest.raises(InvalidDistribution, match="follows a padding sentinel"):
        given_block_law([u] * 4, [u] * 3, [1, -1, 0])


def test_row_temperature_ignored():
    law = position_law(["3/5", "2/5"], ["1/2", "1/2"], named_rule("temperature-ignored"))
    assert law.law == (1, 0) and law.tv == F(2, 5)


def test_row_acceptance_rate_metric():
    assert acceptance_rate(1, 3) == F(1, 3) and acceptance_rate(1, 3, "per-emitted") == F(1, 2)


def test_row_greedy_near_tie():
    a, b = ["5001/10000", "4999/10000"], ["4999/10000", "5001/10000"]
    (ta, ma), (tb, mb) = greedy_margin(a), greedy_margin(b)
    assert ta != tb and ma == mb == F(1, 5000)
    assert position_law(a, a, named_rule("greedy")).law == (1, 0)
    assert position_law(b, b, named_rule("greedy")).law == (0, 1)


def test_race_reuse_by_hand():
    # accept masses 1/3 (x = 0, p/q = 1/2) and 1/3 (x = 1); x = 0 rejected w.p. 1/3, residual (0, 1/6, 1/6)
    # drawn by a race sharing the draft race's noise: 3/8 to token 1, 5/8 to token 2 (tests/test_outcome.py)
    law = position_law(["1/3", "1/2", "1/6"], ["2/3", "1/3", 0], named_rule("race-reuse"))
    assert law.law == (F(1, 3), F(11, 24), F(5, 24)) and law.tv == F(1, 24)


# --------------------------------------------------------------------- each fault's kind, as a property


def _accept_masses(p, q, prob):
    return [q[x] * prob(p[x] / q[x]) if q[x] else F(0) for x in range(len(p))]


def _with_residual(p, q, acc, resid):
    rej = 1 - sum(acc)
    z = sum(resid)
    return tuple(a + (rej * r / z if z else 0) for a, r in zip(acc, resid))


@settings(max_examples=80, deadline=None)
@given(pairs)
def test_standard_rule_reproduces_exact_emitted_law(pair):
    p, q = pair
    law = position_law(p, q)
    ref = exact.emitted_law(p, q)
    assert law.law == ref.dist() and law.alpha == ref.alpha == law.textbook_alpha and law.lossless
    law.tree.rederive()


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_kind_accept_all_emits_the_draft(pair):
    p, q = pair
    law = position_law(p, q, named_rule("accept-all"))
    assert law.law == q and law.tv == _tv(p, q) and law.alpha == 1


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_kind_float32_coins_against_grid_counts(pair):
    p, q = pair

    def lt(t):
        return min(F(1), F(math.ceil(t * N24), N24))

    def le(t):
        return min(F(1), F(math.floor(t * N24) + 1, N24))

    resid = [max(a - b, F(0)) for a, b in zip(p, q)]
    for name, prob in (("lt-float32-coin", lt), ("le-float32-coin", le)):
        acc = _accept_masses(p, q, prob)
        if sum(resid) == 0 and sum(acc) < 1:
            with pytest.raises(ResidualUndefined):
                position_law(p, q, GRID[name])
            continue
        assert position_law(p, q, GRID[name]).law == _with_residual(p, q, acc, resid)
    # '<' on the float32 grid is lossless iff every ratio p/q < 1 is a multiple of 2^-24
    on_grid = all((p[x] / q[x] * N24).denominator == 1 for x in range(len(p)) if q[x] and p[x] < q[x])
    assert position_law(p, q, GRID["lt-float32-coin"]).lossless == on_grid
    # '<=' accepts a drafted token of target probability 0 with probability 2^-24
    if any(q[x] and not p[x] for x in range(len(p))):
        assert not position_law(p, q, GRID["le-float32-coin"]).lossless


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_kind_resample_and_floor(pair):
    p, q = pair
    acc = [min(a, b) for a, b in zip(p, q)]
    alpha = sum(acc)
    resample = position_law(p, q, named_rule("resample-from-target"))
    assert resample.law == tuple(m + (1 - alpha) * a for m, a in zip(acc, p))
    eps = F(1, 1000)
    floor = position_law(p, q, named_rule("residual-floor:1/1000"))
    w = [max(a - b, eps) for a, b in zip(p, q)]
    assert floor.law == tuple(m + (1 - alpha) * x / sum(w) for m, x in zip(acc, w))
    assert floor.lossless == (p == q)


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_kind_inverse_cdf_coin_reuse(pair):
    p, q = pair
    resid = [max(a - b, F(0)) for a, b in zip(p, q)]
    z = sum(resid)
    if z == 0:
        assert position_law(p, q, named_rule("coin-reuse-inverse-cdf")).lossless
        return
    cdf = [sum(resid[: i + 1]) / z for i in range(len(p))]
    law = [F(0)] * len(p)
    for x in range(len(p)):
        if not q[x]:
            continue
        t = min(F(1), p[x] / q[x])
        law[x] += q[x] * t
        lo = F(0)
        for i, hi in enumerate(cdf):  # u uniform on [t, 1): token i on [C_{i-1}, C_i)
            law[i] += q[x] * max(F(0), hi - max(lo, t))
            lo = max(lo, hi)
    assert position_law(p, q, named_rule("coin-reuse-inverse-cdf")).law == tuple(law)


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_kind_match_greedy_unchecked_temperature(pair):
    p, q = pair
    match = position_law(p, q, named_rule("match-rule"))
    assert match.lossless and match.alpha == sum(a * b for a, b in zip(p, q))
    unchecked = position_law(p, q, named_rule("first-draft-unchecked"))
    assert unchecked.law == q
    top = max(range(len(p)), key=lambda i: (p[i], -i))
    onehot = tuple(F(int(i == top)) for i in range(len(p)))
    greedy = position_law(p, q, named_rule("greedy"))
    assert greedy.law == onehot == greedy.reference and greedy.lossless
    ignored = position_law(p, q, named_rule("temperature-ignored"))
    assert ignored.law == onehot and ignored.tv == _tv(onehot, p)


@settings(max_examples=40, deadline=None)
@given(pairs)
def test_kind_race_reuse_one_token_residual_is_lossless(pair):
    p, q = pair
    law = position_law(p, q, named_rule("race-reuse"))
    assert sum(law.law) == 1
    if sum(1 for a, b in zip(p, q) if a > b) <= 1:
        assert law.lossless
    law.tree.rederive()


@settings(max_examples=40, deadline=None)
@given(st.lists(distribution_pairs(max_len=3, max_weight=6), min_size=1, max_size=4), st.data())
def test_kind_flag_count_and_prefix(rows, data):
    v = len(rows[0][0])
    rows = [r for r in rows if len(r[0]) == v]
    gamma = len(rows)
    tokens = [data.draw(st.sampled_from([x for x in range(v) if q[x]])) for _, q in rows]
    law = given_block_law([p for p, _ in rows] + [rows[0][0]], [q for _, q in rows], tokens)
    passes = [min(F(1), p[x] / q[x]) for (p, q), x in zip(rows, tokens)]
    assert (law.expected_accepted, law.expected_flags) == accepted_prefix_expectation(passes)
    assert law.expected_flags >= law.expected_accepted
    assert sum(law.accepted_length_law) == 1 and len(law.accepted_length_law) == gamma + 1


@settings(max_examples=30, deadline=None)
@given(distribution_pairs(max_len=3, max_weight=6), st.integers(1, 3), st.integers(0, 2), st.integers(0, 3))
def test_kind_stop_tokens_and_padding(pair, gamma, stop, pads):
    p, q = pair
    stop = stop % len(p)
    correct = block_law(p, q, gamma, stop_tokens=[stop])
    past = block_law(p, q, gamma, named_rule("commit-past-stop"), stop_tokens=[stop])
    assert correct.expected_emitted == correct.expected_emitted_to_stop == past.expected_emitted_to_stop
    assert past.expected_emitted == block_law(p, q, gamma).expected_emitted >= correct.expected_emitted
    assert correct.lossless and correct.stream_tv == 0
    x = next(i for i in range(len(q)) if q[i])
    law = given_block_law([p] * (gamma + pads + 1), [q] * (gamma + pads), [x] * gamma + [-1] * pads)
    assert law.real_drafts == gamma and len(law.accepted_length_law) == gamma + 1


# --------------------------------------------------------------------- regression against chain


def _model(table, default):
    return lambda prefix: table.get(prefix, default)


@settings(max_examples=25, deadline=None)
@given(st.lists(distribution_pairs(max_len=3, max_weight=5), min_size=7, max_size=7), st.integers(1, 2))
def test_standard_block_law_reproduces_chain(rows, gamma):
    v = len(rows[0][0])
    rows = [r if len(r[0]) == v else rows[0] for r in rows]
    prefixes = [(), (0,), (1,), (2,), (0, 0), (1, 1), (0, 1)]
    target = _model({s: r[0] for s, r in zip(prefixes, rows)}, rows[0][0])
    draft = _model({s: r[1] for s, r in zip(prefixes, rows)}, rows[0][1])
    mine = block_law(target, draft, gamma)
    ref = chain.verification_law(target, draft, gamma)
    assert mine.emitted == dict(ref.emitted)
    assert mine.accepted_length_law == ref.accepted_length_law
    assert mine.expected_emitted == ref.expected_emitted == mine.expected_emitted_to_stop
    assert mine.lossless == ref.lossless and mine.stream_tv == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(distribution_pairs(max_len=3, max_weight=6), min_size=2, max_size=4), st.data())
def test_standard_given_block_reproduces_chain(rows, data):
    v = len(rows[0][0])
    rows = [r if len(r[0]) == v else rows[0] for r in rows]
    tokens = [data.draw(st.sampled_from([x for x in range(v) if q[x]])) for _, q in rows[:-1]]
    targets, drafts = [p for p, _ in rows], [q for _, q in rows[:-1]]
    mine = given_block_law(targets, drafts, tokens)
    ref = chain.given_block_law(targets, drafts, tokens)
    assert mine.accepted_length_law == ref.accepted_length_law
    assert mine.emitted[-1] == ref.emitted[-1]
    for i in range(len(tokens)):
        if ref.accepted_length_law[i]:
            assert mine.emitted[i] == ref.emitted[i]


def test_block_law_under_lossy_rule_reports_stream_tv():
    law = block_law(["1/2", "1/2"], ["1/4", "3/4"], 1, named_rule("accept-all"))
    # first token ~ q = (1/4, 3/4), then the bonus from p: the stream's TV is the first token's, 1/4
    assert law.stream_tv == F(1, 4) and not law.lossless and law.node_tv[()] == F(1, 4)


def test_errors_name_the_problem():
    with pytest.raises(ResidualUndefined, match="residual has mass 0"):
        position_law(["1/2", "1/2"], ["1/2", "1/2"], Rule(coin=coin_model("fixed:1")))  # u = 1 fails u < 1
    with pytest.raises(InvalidDistribution, match="drafted token is 5"):
        position_tree(["1/2", "1/2"], ["1/2", "1/2"], drafted=5)
    with pytest.raises(InvalidDistribution, match="gamma"):
        block_law(["1"], ["1"], 0)


# --------------------------------------------------------------------- counterexample search


def test_search_finds_the_smallest_and_the_worst_pair():
    found = search_counterexample(named_rule("accept-all"), max_vocab=2, max_denominator=2)
    # V = 1 is always lossless; the first lossy pair at V = 2, d = 1 is p = (0, 1), q = (1, 0), TV 1
    assert found.smallest.p == (0, 1) and found.smallest.q == (1, 0) and found.smallest.tv == 1
    assert found.largest.tv == 1
    none = search_counterexample(named_rule("match-rule"), max_vocab=3, max_denominator=3, random_pairs=20)
    assert none.smallest is None and none.largest is None and none.pairs > 20


def test_search_lt_float32_smallest_counterexample():
    found = search_counterexample(GRID["lt-float32-coin"], max_vocab=2, max_denominator=3)
    # d = 3 first: p = (1/3, 2/3), q = (0, 1): the coin passes 2/3 on ceil(2^24 * 2/3) grid points
    assert found.smallest.p == (F(1, 3), F(2, 3)) and found.smallest.q == (0, 1)
    assert found.smallest.tv == F(math.ceil(F(2, 3) * N24), N24) - F(2, 3) == F(1, 3 * N24)


# --------------------------------------------------------------------- proposal != q, processing, fallbacks


def test_proposal_differs_from_the_ratio_q():
    # argmax drafts (proposal [1, 0]) checked against q = [3/4, 1/4]: accept 0 w.p. (1/2)/(3/4) = 2/3,
    # else the residual (p - q)+ = [0, 1/4] gives 1: law [2/3, 1/3], TV 1/6
    law = position_law(["1/2", "1/2"], ["3/4", "1/4"], Rule(proposal="argmax"))
    assert law.law == (F(2, 3), F(1, 3)) and law.tv == F(1, 6)
    same = position_law(["1/2", "1/2"], ["3/4", "1/4"], proposal=[1, 0])
    assert same.law == law.law
    # a draft with q(x) = 0 < p(x): p/q = +inf, accepted
    inf = position_law(["1/2", "1/2"], [1, 0], proposal=[0, 1])
    assert inf.law == (0, 1) and inf.tv == F(1, 2) and inf.alpha == 1
    # q(x) = 0 = p(x): 0/0 is NaN, rejected; the residual is empty (p == q), so the fallback decides
    with pytest.raises(ResidualUndefined):
        position_law([1, 0], [1, 0], proposal=[0, 1])
    assert position_law([1, 0], [1, 0], Rule(fallback="target"), proposal=[0, 1]).law == (1, 0)
    assert position_law([1, 0], [1, 0], Rule(fallback="last"), proposal=[0, 1]).law == (0, 1)
    assert position_law([1, 0], [1, 0], Rule(fallback="uniform"), proposal=[0, 1]).law == (F(1, 2), F(1, 2))


def test_top_k_on_the_draft_only_is_lossy_by_hand():
    # q = [1/2, 1/4, 1/4] top-1 -> [1, 0, 0]; p = [1/2, 1/4, 1/4]: accept 0 w.p. 1/2, else residual
    # (p - [1, 0, 0])+ = [0, 1/4, 1/4] -> tokens 1, 2 equally: law = p, lossless despite the processing
    from specproof.rules.policy import Processing

    row = ["1/2", "1/4", "1/4"]
    law = position_law(row, row, Rule(draft_processing=Processing(top_k=1)))
    assert law.law == (F(1, 2), F(1, 4), F(1, 4)) and law.lossless
    # processing the target only, with the reference still p: the output follows the processed target
    lossy = position_law(row, row, Rule(target_processing=Processing(top_k=1), reference_processing=Processing()))
    assert lossy.law == (1, 0, 0) and lossy.tv == F(1, 2)


def test_block_law_counts_out_of_range_ids():
    law = block_law(
        ["1/2", "1/2", 0],
        [1, 0, 0],
        1,
        Rule(residual_draw="inverse-cdf-reuse", coin=FLOAT32_OPEN_CLOSED, fallthrough="out-of-range"),
    )
    assert law.out_of_range == F(1, N24) and not law.lossless


# --------------------------------------------------------------------- the phone model's </s>


def _phone(context):
    from specproof.models.fixtures import PHONE_END, phone_lm_chain

    target, draft, labels = phone_lm_chain(context)
    return target, draft, labels.index(PHONE_END)


def test_phone_chain_up_to_end_of_sentence_gamma_1():
    target, draft, end = _phone(("AH", "N"))
    ref = chain.verification_law(target, draft, 1)
    law = block_law(target, draft, 1, stop_tokens=[end], enumeration_limit=0)
    past = block_law(target, draft, 1, named_rule("commit-past-stop"), stop_tokens=[end], enumeration_limit=0)
    assert past.expected_emitted == ref.expected_emitted and law.lossless
    # gamma = 1: only a block whose accepted draft is </s> is cut, losing its bonus token
    p, q = target(()), draft(())
    assert law.expected_emitted == ref.expected_emitted - min(p[end], q[end]) == law.expected_emitted_to_stop


@pytest.mark.slow
def test_phone_chain_up_to_end_of_sentence_gamma_2_issue_figures():
    # issue 11 item 8: after "AH N" at gamma = 2, 2.5637 counted vs 2.4721 up to the first </s>
    target, draft, end = _phone(("AH", "N"))
    past = block_law(target, draft, 2, named_rule("commit-past-stop"), stop_tokens=[end], enumeration_limit=0)
    assert F(25636_5, 10**5) <= past.expected_emitted < F(25637_5, 10**5)
    assert F(24720_5, 10**5) <= past.expected_emitted_to_stop < F(24721_5, 10**5)


def test_proposal_processed_while_the_ratio_uses_raw_q():
    from specproof.rules.policy import Processing

    # the draft is drawn from top-1(q) = [1, 0, 0] but the ratio uses q itself: p = q, so t = 1 and
    # every draft is accepted: the output is token 0 always, TV 1/2
    row = ["1/2", "1/4", "1/4"]
    law = position_law(row, row, Rule(proposal_processing=Processing(top_k=1)))
    assert law.law == (1, 0, 0) and law.tv == F(1, 2)


def test_block_acceptance_rate_definitions():
    half = ["1/2", "1/2"]
    # p == q: all 3 drafts accepted, 4 tokens emitted: per-draft 3/3, per-emitted 3/4
    assert block_law(half, half, 3).acceptance_rate == 1
    assert block_law(half, half, 3, Rule(acceptance_rate="per-emitted")).acceptance_rate == F(3, 4)
    # p = [1/4, 3/4], q = [1/2, 1/2], gamma 1: alpha 3/4; E[emitted] = 7/4: 3/4 and (3/4)/(7/4) = 3/7
    p, q = ["1/4", "3/4"], half
    assert block_law(p, q, 1).acceptance_rate == F(3, 4)
    assert block_law(p, q, 1, Rule(acceptance_rate="per-emitted")).acceptance_rate == F(3, 7)


@settings(max_examples=40, deadline=None)
@given(pairs)
def test_every_named_rule_gives_a_consistent_tree(pair):
    from specproof.laws.outcome import OutcomeTree
    from specproof.rules.policy import NAMED_RULES

    p, q = pair
    for name, entry in NAMED_RULES.items():
        try:
            law = position_law(p, q, entry.rule)
        except ResidualUndefined:
            continue  # a rejection with an empty residual under fallback 'error' (coins that can refuse t = 1)
        law.tree.rederive()
        assert sum(law.law) + sum(law.out_of_range.values()) == 1, name
        assert OutcomeTree.from_dict(law.tree.as_dict()).law() == law.tree.law(), name
        assert law.tv == _tv(law.law, law.reference) + sum(law.out_of_range.values(), F(0)) / 2


# --------------------------------------------------------------------- float arithmetic in rules


def test_le_float32_coin_rounds_the_ratio_as_the_code_does():
    # fl32(2/3) = 11184811/2^24 is a grid point, so u <= fl32(p/q) passes 11184812 points: TV 2^-25;
    # with the exact ratio 2/3 on the same grid the TV is 2^-27 (the rule's old model)
    p, q = ["1/2", "1/4", "1/4"], ["3/8", "3/8", "1/4"]
    assert position_law(p, q, named_rule("le-float32-coin")).tv == F(1, 2**25)
    assert position_law(p, q, named_rule("le-float32-grid")).tv == F(1, 2**27)


def test_rows_are_rounded_to_the_dtype_and_the_law_is_of_the_rounded_rows():
    from specproof.laws.floats import FLOAT16
    from specproof.rules.policy import Arithmetic

    p, q = ["1/3", "2/3"], ["1/2", "1/2"]
    law = position_law(p, q, Rule(coin=FLOAT32, arithmetic=Arithmetic("float16")))
    t = [FLOAT16.round(F(1, 3)), FLOAT16.round(F(2, 3))]
    assert law.tree.rows["target"] == tuple(t)
    assert law.reference == (F(1, 3), F(2, 3))  # the law the output should have: p itself
    assert sum(law.law) == 1 and law.tv != 0


def test_float_rows_enter_at_their_exact_values_and_a_float16_ratio_can_overflow():
    from specproof.rules.policy import Arithmetic

    # q(0) = 2^-24 is a float16 subnormal: p/q = 2^23 overflows float16 (max 65504) to +inf: accepted
    p, q = [0.5, 0.5], [2.0**-24, 1 - 2.0**-24]
    law = position_law(p, q, Rule(arithmetic=Arithmetic("float16")))
    assert law.tree.rows["draft"][0] == F(1, 2**24)
    assert law.tree.rows["draft"][1] == 1  # 1 - 2^-24 rounds to 1 in float16
    # draft 0 drawn with q'(0)/sum q' and always accepted; draft 1: ratio 1/2, else the residual (token 0)
    s = 1 + F(1, 2**24)
    w0 = F(1, 2**24) / s
    assert law.law[0] == w0 + (1 - w0) * F(1, 2)
    with pytest.raises(InvalidDistribution, match="not a finite number"):
        position_law([math.nan, 1.0], [0.5, 0.5], Rule(arithmetic=Arithmetic("float32")))
    with pytest.raises(InvalidDistribution, match="negative"):
        position_law([-0.5, 1.5], [0.5, 0.5], Rule(arithmetic=Arithmetic("float32")))


@pytest.mark.parametrize("cmp", ["<", "<="])
def test_product_form_equals_numpy_on_every_grid_point(cmp):
    """fl32(u * q) < p, counted by NumPy over all 2^24 float32 coins, equals the rule's law."""
    from specproof.rules.policy import Arithmetic

    rng = np.random.default_rng(5)
    grid = np.arange(2**24, dtype=np.float32) / np.float32(2**24)
    for _ in range(3):
        w = rng.random((2, 3)).astype(np.float32)
        p32, q32 = (w / w.sum(axis=1, keepdims=True)).astype(np.float32)
        law = position_law(p32, q32, Rule(comparison=cmp, coin=FLOAT32, arithmetic=Arithmetic("float32", "product")))
        for x in range(3):
            passed = (grid * q32[x] < p32[x]) if cmp == "<" else (grid * q32[x] <= p32[x])
            accept = next(
                br for br in law.tree.root.branches[x].child.branches if br.child.__class__.__name__ == "Leaf"
            )
            assert accept.probability == F(int(passed.sum()), 2**24)


def test_ratio_form_equals_numpy_on_every_grid_point():
    from specproof.rules.policy import Arithmetic

    rng = np.random.default_rng(6)
    grid = np.arange(2**24, dtype=np.float32) / np.float32(2**24)
    for cmp in ("<", "<="):
        w = rng.random((2, 4)).astype(np.float32)
        p32, q32 = (w / w.sum(axis=1, keepdims=True)).astype(np.float32)
        law = position_law(p32, q32, Rule(comparison=cmp, coin=FLOAT32, arithmetic=Arithmetic("float32")))
        for x in range(4):
            ratio = p32[x] / q32[x]
            passed = (grid < ratio) if cmp == "<" else (grid <= ratio)
            accept = next(
                br for br in law.tree.root.branches[x].child.branches if br.child.__class__.__name__ == "Leaf"
            )
            assert accept.probability == F(int(passed.sum()), 2**24)
