"""Tests for specproof.laws.relaxed: hand-derived laws (== on Fractions), the knobs' limits (textbook /
lossless, greedy, accept-all), monotonicity of acceptance in each knob, and block laws against the
existing typical and match laws."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from strategies import distribution_pairs

from specproof.errors import InvalidDistribution, SpecProofError
from specproof.laws.relaxed import (
    InvalidKnob,
    Undecided,
    argmax_proposal,
    exp_bounds,
    logit_epsilon_law,
    logit_epsilon_law_eps,
    lossless_baseline,
    match_law,
    relaxed_block_law,
    relaxed_topk_law,
    sglang_threshold_law,
    sglang_threshold_node_law,
    standard_law,
    typical_acceptance_law,
)
from specproof.laws.variants import sibling_tree, typical_block_law, typical_law

P = (F(1, 2), F(1, 4), F(1, 4))
Q = (F(1, 4), F(1, 4), F(1, 2))

GRID = [F(n, 4) for n in range(5)]
SMALL_PAIRS = [
    (p, q)
    for p in itertools.product(GRID, repeat=3)
    if sum(p) == 1
    for q in itertools.product(GRID, repeat=3)
    if sum(q) == 1
]


def _sums_to_one(law):
    return sum(law.law) == 1


# --------------------------------------------------------------------------- sampler-match


def test_match_is_lossless_with_alpha_sum_pq_on_the_worked_pair():
    law = match_law(P, Q)
    assert law.law == P and law.tv == 0 and law.lossless
    assert law.alpha == F(5, 16) == sum(a * b for a, b in zip(P, Q))


@pytest.mark.parametrize("p,q", SMALL_PAIRS)
def test_match_is_lossless_with_alpha_sum_pq_on_the_grid(p, q):
    law = match_law(p, q)
    assert law.law == p and law.tv == 0
    assert law.alpha == sum(a * b for a, b in zip(p, q))


@pytest.mark.parametrize("p,q", SMALL_PAIRS)
def test_match_law_is_the_match_rules_position_law(p, q):
    from specproof.rules.audit import position_law
    from specproof.rules.policy import Rule

    law, rule = match_law(p, q), position_law(p, q, Rule(acceptance="match"))
    assert law.law == tuple(rule.law) and law.alpha == rule.alpha


# --------------------------------------------------------------------------- TensorRT-LLM relaxed top-k / delta


def test_relaxed_topk_by_hand():
    # ranks by p: 0, 1, 2 (ties to the smallest id); drafted token x ~ q
    law = relaxed_topk_law(P, Q, 3, F(1, 4))
    assert law.accept == (1, 1, 1) and law.alpha == 1
    assert law.law == Q and law.tv_reference == F(3, 4) and law.tv == F(1, 4)
    law = relaxed_topk_law(P, Q, 3, F(1, 5))  # 1/4 < 1/2 - 1/5: only the top-1
    assert law.accept == (1, 0, 0) and law.alpha == F(1, 4) and law.law == (1, 0, 0) and law.lossless
    law = relaxed_topk_law(P, argmax_proposal(Q), 2, F(1, 4))  # argmax draft is token 2, rank 2 >= topk
    assert law.alpha == 0 and law.law == (1, 0, 0)


def test_relaxed_topk_zero_delta_is_greedy_and_accepts_tied_tokens():
    for p, q in SMALL_PAIRS:
        law = relaxed_topk_law(p, q, 1, F(1, 2))
        assert law.lossless and law.alpha == lossless_baseline(p, q, "greedy")
    tied = (F(1, 2), F(1, 2), F(0))
    law = relaxed_topk_law(tied, (F(0), F(1), F(0)), 2, 0)  # the kernel's `threshold > value` lets a tie pass
    assert law.alpha == 1 and law.law == (0, 1, 0) and law.tv_reference == 1


def test_relaxed_topk_accept_all_limit():
    for p, q in SMALL_PAIRS:
        law = relaxed_topk_law(p, q, 3, 1)
        assert law.alpha == 1 and law.law == q


@pytest.mark.parametrize("p,q", SMALL_PAIRS[::7])
def test_relaxed_topk_acceptance_is_monotone_in_both_knobs(p, q):
    deltas = [F(0), F(1, 8), F(1, 4), F(1, 2), F(1)]
    for k in (1, 2, 3):
        alphas = [relaxed_topk_law(p, q, k, d).alpha for d in deltas]
        assert alphas == sorted(alphas)
    for d in deltas:
        alphas = [relaxed_topk_law(p, q, k, d).alpha for k in (1, 2, 3)]
        assert alphas == sorted(alphas)


def test_relaxed_topk_target_reference():
    law = relaxed_topk_law(P, Q, 3, F(1, 4), reference="target")
    assert law.reference == P and law.tv_reference == law.tv == F(1, 4)


# --------------------------------------------------------------------------- SGLang thresholds


def test_sglang_by_hand():
    law = sglang_threshold_law(P, Q, 1, F(1, 2))
    # a = min(1, 2 p) = (1, 1/2, 1/2); rejections of 1 and 2 go to p without them
    assert law.accept == (1, F(1, 2), F(1, 2)) and law.alpha == F(5, 8)
    assert law.law == (F(1, 2), F(5, 24), F(7, 24)) and law.tv == F(1, 24)
    law = sglang_threshold_law(P, Q, F(1, 4), 1)  # every p(x) >= 1/4: accept-all
    assert law.alpha == 1 and law.law == Q and law.tv == F(1, 4)


@pytest.mark.parametrize("p,q", SMALL_PAIRS)
def test_sglang_default_is_lossless_with_alpha_sum_pq(p, q):
    law = sglang_threshold_law(p, q)
    assert law.law == p and law.lossless and law.alpha == sum(a * b for a, b in zip(p, q))
    assert _sums_to_one(sglang_threshold_law(p, q, F(1, 2), F(1, 2)))


@given(distribution_pairs(max_len=5))
@settings(max_examples=60, deadline=None)
def test_sglang_closed_form_matches_the_per_draft_sum(pair):
    p, q = pair
    ts, ta = F(1, 3), F(2, 3)
    law = sglang_threshold_law(p, q, ts, ta)
    # independent: sum over drafted x of q(x) [a(x) delta_x + (1 - a(x)) p without x]
    expect = [F(0)] * len(p)
    for x, qx in enumerate(q):
        if not qx:
            continue
        a = F(1) if p[x] >= ts else min(F(1), p[x] / ta)
        expect[x] += qx * a
        if a != 1:
            for y in range(len(p)):
                if y != x:
                    expect[y] += qx * (1 - a) * p[y] / (1 - p[x])
    assert law.law == tuple(expect)


@pytest.mark.parametrize("p,q", SMALL_PAIRS[::5])
def test_sglang_acceptance_is_monotone_in_both_knobs(p, q):
    ts_grid = [F(1, 10), F(1, 4), F(1, 2), F(1), F(2)]
    ta_grid = [F(1, 10), F(1, 4), F(1, 2), F(1)]
    for ta in ta_grid:  # lower threshold_single accepts more
        alphas = [sglang_threshold_law(p, q, ts, ta).alpha for ts in ts_grid]
        assert alphas == sorted(alphas, reverse=True)
    for ts in ts_grid:
        alphas = [sglang_threshold_law(p, q, ts, ta).alpha for ta in ta_grid]
        assert alphas == sorted(alphas, reverse=True)


def test_sglang_node_at_default_thresholds_is_the_sibling_tree():
    for p, _ in SMALL_PAIRS[::3]:
        for kids in ([0], [2, 0], [1, 2, 0], [2]):
            if sum(p[c] for c in kids) == 1 and len(kids) < 3:
                continue
            node = sglang_threshold_node_law(p, kids)
            law, _ = sibling_tree(p, kids).law()
            assert node.law == tuple(law) and node.lossless


def test_sglang_node_threshold_acc_uses_the_running_sum():
    # children 2 then 1 (p = 1/4 each), threshold_acc = 1/2: child 2 for u <= 1/2, child 1 for u in (1/2, 1]
    node = sglang_threshold_node_law(P, [2, 1], 1, F(1, 2))
    assert node.accept == (0, F(1, 2), F(1, 2)) and node.alpha == 1 and node.law == (0, F(1, 2), F(1, 2))
    node = sglang_threshold_node_law(P, [2, 0], F(1, 2), 1)  # p(0) >= 1/2 forces child 0 for u > 1/4
    assert node.accept == (F(3, 4), 0, F(1, 4)) and node.alpha == 1


# --------------------------------------------------------------------------- Modular MAX logit epsilon


def test_logit_eps_by_hand_and_lossy_even_at_factor_one():
    law = logit_epsilon_law(P, Q, 1)
    assert law.accept == (1, 1, 0) and law.alpha == F(1, 2)
    assert law.law == (F(1, 2), F(3, 8), F(1, 8)) and law.tv == F(1, 8)
    law = logit_epsilon_law(P, Q, 2)  # q(2) = 1/2 <= 2 * 1/4: accept-all
    assert law.alpha == 1 and law.law == Q and law.tv == F(1, 4)
    assert logit_epsilon_law(P, P, 1).lossless


def test_logit_eps_limits_and_monotone():
    for p, q in SMALL_PAIRS:
        big = logit_epsilon_law(p, q, 10**6)
        support = sum(qx for qx, px in zip(q, p) if px)
        assert big.alpha == support
        alphas = [logit_epsilon_law(p, q, r).alpha for r in (F(1, 4), F(1, 2), F(1), F(2), F(4))]
        assert alphas == sorted(alphas)
        assert _sums_to_one(big)


def test_logit_eps_with_eps_decides_exactly():
    p, q = (F(1, 2), F(1, 2)), (F(2, 3), F(1, 3))  # ratio 4/3 = exp(0.2877...)
    assert logit_epsilon_law_eps(p, q, F(28, 100)).accept == (0, 1)
    assert logit_epsilon_law_eps(p, q, F(29, 100)).accept == (1, 1)
    assert logit_epsilon_law_eps(P, Q, 0).law == logit_epsilon_law(P, Q, 1).law
    assert logit_epsilon_law_eps(P, Q, F(-1, 2)).alpha == F(1, 4)  # exp(-1/2) = 0.607: only q(0)/p(0) = 1/2 passes
    with pytest.raises(Undecided):
        r = exp_bounds(F(1, 2), 60)[0]  # a rational within 1e-80 of exp(1/2)
        logit_epsilon_law_eps((F(1, 2), F(1, 2)), (r / 2, 1 - r / 2), F(1, 2), max_terms=32)
    assert logit_epsilon_law_eps((F(1, 2), F(1, 2)), (r / 2, 1 - r / 2), F(1, 2)).accept == (1, 1)


def test_exp_bounds_bracket():
    for x in (F(1, 3), F(-2), F(5), F(1, 100000)):
        lo, hi = exp_bounds(x, 20)
        assert lo < hi
    lo, hi = exp_bounds(F(-1), 30)
    assert F(36787944117, 10**11) < lo < hi < F(36787944118, 10**11) and hi - lo < F(1, 10**30)


# --------------------------------------------------------------------------- typical, standard


def test_typical_wrapper_equals_variants():
    for p, q in SMALL_PAIRS[::4]:
        mine, theirs = typical_acceptance_law(p, q), typical_law(p, q)
        assert mine.law == theirs.law and mine.alpha == theirs.acceptance and mine.tv == theirs.tv


def test_typical_small_eps_accepts_everything_in_support():
    law = typical_acceptance_law(P, Q, F(1, 10**6))
    assert law.alpha == 1 and law.law == Q


@pytest.mark.parametrize("p,q", SMALL_PAIRS[::3])
def test_typical_acceptance_is_monotone_in_eps(p, q):
    alphas = [typical_acceptance_law(p, q, e).alpha for e in (F(1, 100), F(1, 10), F(1, 4), F(1, 2), F(1))]
    assert alphas == sorted(alphas, reverse=True)


@pytest.mark.parametrize("p,q", SMALL_PAIRS[::4])
def test_standard_is_lossless_with_alpha_sum_min(p, q):
    law = standard_law(p, q)
    assert law.law == p and law.alpha == lossless_baseline(p, q)


# --------------------------------------------------------------------------- blocks


def test_block_typical_equals_variants_typical_block_law():
    for gamma in (1, 2):
        mine = relaxed_block_law(P, Q, gamma, "typical")
        theirs = typical_block_law(P, Q, gamma)
        assert mine.emitted == theirs.emitted and mine.stream_tv == theirs.stream_tv


def test_a_threshold_below_one_is_lossy_on_prefix_dependent_rows():
    # the lossless rules' zero stream TV on these rows is the contract's (tests/test_contract.py)
    def target(prefix):
        return P if len(prefix) % 2 == 0 else (F(1, 3), F(1, 3), F(1, 3))

    def draft(prefix):
        return Q if not prefix or prefix[-1] == 0 else (F(1, 2), F(1, 2), F(0))

    lossy = relaxed_block_law(target, draft, 2, "sglang-threshold", threshold_single=F(1, 4))
    assert lossy.stream_tv > 0


def test_sglang_default_thresholds_are_sampler_match():
    for p, q in SMALL_PAIRS[::2]:
        assert sglang_threshold_law(p, q).law == match_law(p, q).law
        assert sglang_threshold_law(p, q).accept == match_law(p, q).accept


def test_block_one_position_matches_the_position_law():
    for rule, knobs, fn in (
        ("max-logit-eps", {"factor": 1}, lambda: logit_epsilon_law(P, Q, 1)),
        ("sglang-threshold", {"threshold_acc": F(1, 2)}, lambda: sglang_threshold_law(P, Q, 1, F(1, 2))),
    ):
        block = relaxed_block_law(P, Q, 1, rule, **knobs)
        law = fn()
        assert block.accepted_length_law[1] == law.alpha
        first = [sum(m for b, m in block.emitted.items() if b[0] == y) for y in range(3)]
        assert tuple(first) == law.law


# --------------------------------------------------------------------------- errors


def test_bad_knobs_raise_specproof_errors():
    with pytest.raises(InvalidKnob):
        relaxed_topk_law(P, Q, 0, 0)
    with pytest.raises(InvalidKnob):
        relaxed_topk_law(P, Q, 1, F(-1))
    with pytest.raises(InvalidKnob):
        sglang_threshold_law(P, Q, 1, F(3, 2))
    with pytest.raises(InvalidKnob):
        logit_epsilon_law(P, Q, 0)
    with pytest.raises(InvalidKnob):
        relaxed_topk_law(P, Q, 1, 0.5)  # a float knob is refused
    with pytest.raises(InvalidDistribution):
        match_law(P, (F(1, 2), F(1, 2)))
    assert issubclass(InvalidKnob, SpecProofError) and issubclass(Undecided, SpecProofError)


def test_logit_eps_argmax_proposal_reads_q_in_the_test():
    # x = argmax q = 2 always; q(2) = 1/2 > p(2) = 1/4: rejected at r = 1, accepted at r = 2
    x = argmax_proposal(Q)
    assert logit_epsilon_law(P, Q, 1, proposal=x).alpha == 0
    law = logit_epsilon_law(P, Q, 2, proposal=x)
    assert law.alpha == 1 and law.law == (0, 0, 1) and law.tv == F(3, 4)
    assert logit_epsilon_law_eps(P, Q, 1, proposal=x).alpha == 1  # e > 2
