"""Tests for specproof.laws.variants: hand-derived laws (== on Fractions), independent brute-force
oracles, and property tests that the lossless verifiers are lossless."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from fractions import Fraction as F
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import distribution_pairs, normalize_fractions

from specproof.errors import InvalidDistribution, SpecProofError
from specproof.laws.outcome import InvalidTree, Node, OutcomeTree
from specproof.laws.variants import (
    InvalidVerifier,
    Undecidable,
    acceptance_by_k,
    block_verification_law,
    deterministic_tree_law,
    full_information_bound,
    greedy_sibling_tree,
    greedy_tree_law,
    multidraft_law,
    multidraft_tree,
    sibling_tree,
    spectr_rho,
    stochastic_tree_law,
    topk_tree,
    typical_accepts,
    typical_block_law,
    typical_law,
    typical_tree,
)

# the small worked pair of docs/variants.md: p = (1/2, 1/4, 1/4), q = (1/4, 1/4, 1/2)
P = (F(1, 2), F(1, 4), F(1, 4))
Q = (F(1, 4), F(1, 4), F(1, 2))

ALL_RECIPES = {
    "input",
    "given",
    "copy",
    "positive-part",
    "normalized",
    "without",
    "one-hot-argmax",
    "uniform",
    "floor-difference",
    "scaled",
    "minimum",
    "times-capped-ratio",
}


# --------------------------------------------------------------------------- independent oracles


def naive_recursive_rejection(p, q, k, replacement):
    """Brute force: enumerate every draft sequence with its probability and the verifier's choices
    step by step (no outcome tree); return (law, acceptance)."""
    v = len(p)
    law = [F(0)] * v
    accept = F(0)

    def go(i, target, drafted, mass):
        nonlocal accept
        if replacement:
            prop = list(q)
        else:
            prop = [F(0) if t in drafted else q[t] for t in range(v)]
        total = sum(prop)
        if i == k or total == 0:
            for y in range(v):
                law[y] += mass * target[y]
            return
        prop = [x / total for x in prop]
        for x in range(v):
            if prop[x] == 0:
                continue
            a = min(F(1), target[x] / prop[x])
            law[x] += mass * prop[x] * a
            accept += mass * prop[x] * a
            if a < 1:
                res = [max(t - s, F(0)) for t, s in zip(target, prop)]
                z = sum(res)
                go(i + 1, [r / z for r in res], drafted + (x,), mass * prop[x] * (1 - a))

    go(0, list(p), (), F(1))
    return tuple(law), accept


def naive_block_verification(mb, ms, gamma, v):
    """Brute force of Algorithm 2: enumerate drafted blocks and every pass/fail pattern of the coins
    eta_i <= h_i (tau = last pass); return the law of the first gamma + 1 stream tokens and E[tau]."""
    stream = {}
    expected = F(0)
    for block in itertools.product(range(v), repeat=gamma):
        pq = F(1)
        for i, x in enumerate(block):
            pq *= ms(block[:i])[x]
        if not pq:
            continue
        ps = [F(1)]
        for i, x in enumerate(block):
            ps.append(min(ps[-1] * mb(block[:i])[x] / ms(block[:i])[x], F(1)))

        def resid(i, ps=ps, block=block):
            return [max(ps[i] * a - c, F(0)) for a, c in zip(mb(block[:i]), ms(block[:i]))]

        h = [None]
        for i in range(1, gamma + 1):
            if i == gamma:
                h.append(ps[gamma])
            else:
                s = sum(resid(i))
                h.append(s / (s + 1 - ps[i]) if s + 1 - ps[i] else F(0))
        for passes in itertools.product((True, False), repeat=gamma):
            pr = F(1)
            for i, ok in enumerate(passes, start=1):
                pr *= h[i] if ok else 1 - h[i]
            if not pr:
                continue
            tau = max([i for i, ok in enumerate(passes, start=1) if ok], default=0)
            expected += pq * pr * tau
            row = mb(block) if tau == gamma else [r / sum(resid(tau)) for r in resid(tau)]
            for y in range(v):
                if row[y]:
                    for rest in itertools.product(range(v), repeat=gamma - tau):
                        seq = block[:tau] + (y,) + rest
                        m = pq * pr * row[y]
                        for j in range(tau + 1, gamma + 1):
                            m *= mb(seq[:j])[seq[j]]
                        if m:
                            stream[seq] = stream.get(seq, F(0)) + m
    return stream, expected


def naive_joint(mb, length, v):
    out = {}
    for seq in itertools.product(range(v), repeat=length):
        m = F(1)
        for j in range(length):
            m *= mb(seq[:j])[seq[j]]
        if m:
            out[seq] = m
    return out


def recipes_known(tree: OutcomeTree, allowed=ALL_RECIPES):
    return all(r[0] in allowed for r in tree.recipes.values())


# --------------------------------------------------------------------------- multi-draft, hand-derived


def test_with_replacement_hand_derived():
    # step 1: alpha = 3/4; residual (1/4, 0, 0) -> (1, 0, 0); step 2: alpha = min(1, 1/4) = 1/4
    law = multidraft_law(P, Q, 2)
    assert law.law == P and law.lossless
    assert law.acceptance == F(13, 16)  # 1 - (1/4)(3/4)
    assert law.accepted_at == (F(3, 4), F(1, 16))
    assert multidraft_law(P, Q, 3).acceptance == F(55, 64)  # 1 - (1/4)(3/4)(3/4)
    assert acceptance_by_k(P, Q, 3) == (F(3, 4), F(13, 16), F(55, 64))


def test_without_replacement_hand_derived():
    # only x = 2 can be rejected (prob 1/2 * 1/2); then q without 2 is (1/2, 1/2, 0), target (1, 0, 0):
    # draft 0 accepted (ratio 2), draft 1 rejected; acceptance 3/4 + 1/4 * 1/2
    law = multidraft_law(P, Q, 2, method="without-replacement")
    assert law.law == P and law.lossless
    assert law.acceptance == F(7, 8)
    assert law.accepted_at == (F(3, 4), F(1, 8))
    assert law.tree.rows["q-without-2n"] == (F(1, 2), F(1, 2), F(0))
    assert law.tree.recipes["q-without-2"] == ("without", "q", [2])
    # k = 3: after draft 1 is rejected at step 2, q without {2, 1} is (1, 0, 0) and the target (1, 0, 0)
    assert multidraft_law(P, Q, 3, method="without-replacement").accepted_at == (F(3, 4), F(1, 8), F(1, 8))


def test_without_replacement_runs_out_of_draft_tokens():
    # q has one token; after it is rejected, q has no mass left: the token comes from the residual
    law = multidraft_law(["1/2", "1/2"], ["1", "0"], 3, method="without-replacement")
    assert law.law == (F(1, 2), F(1, 2)) and law.acceptance == F(1, 2)
    assert law.accepted_at == (F(1, 2), F(0), F(0))


def test_spectr_hand_derived():
    # rho = 3/2: min(q, p/rho) = (1/4, 1/6, 1/6), beta = 7/12, acceptance 1 - (5/12)^2 = 119/144,
    # c = 17/12, residual p - c m = (7/48, 1/72, 1/72) (mass 25/144)
    law = multidraft_law(P, Q, 2, method="spectr", rho="3/2")
    assert law.lossless and law.acceptance == F(119, 144)
    assert law.tree.rows["spectr-residual"] == (F(7, 48), F(1, 72), F(1, 72))
    assert law.accepted_at == (F(7, 12), F(7, 12) * F(5, 12))
    # rho = 2 = k: beta = 1/2, acceptance 3/4
    assert multidraft_law(P, Q, 2, method="spectr", rho=2).acceptance == F(3, 4)
    # rho = 1 (beta = alpha = 3/4, the reading of "1 - (1 - beta)^k") is invalid at k = 2:
    # c = (1 - 1/16)/(3/4) = 5/4 and p(1) - c min(p, q)(1) = 1/4 - 5/16 < 0
    with pytest.raises(InvalidVerifier, match="not valid"):
        multidraft_tree(P, Q, 2, method="spectr", rho=1)
    # rho = 4/3 is invalid: beta = 5/8 and 2 - beta = 11/8 > 4/3
    with pytest.raises(InvalidVerifier, match="not valid"):
        multidraft_tree(P, Q, 2, method="spectr", rho="4/3")


def test_spectr_rho_brackets_the_irrational_optimum():
    # valid iff 2 - beta(rho) <= rho with beta = 1/4 + 1/(2 rho): rho >= (7 + sqrt(17)) / 8
    rho = spectr_rho(P, Q, 2)
    assert 8 * rho - 7 > 0 and (8 * rho - 7) ** 2 >= 17
    below = rho - F(1, 2**20)
    assert (8 * below - 7) ** 2 < 17
    assert spectr_rho(P, Q, 1) == 1 and spectr_rho(P, P, 3) == 1


def test_k_equal_1_is_the_textbook_rule():
    for method in ("with-replacement", "without-replacement", "spectr"):
        law = multidraft_law(P, Q, 1, method=method)
        assert law.acceptance == F(3, 4) and law.law == P


def test_multidraft_recipes_are_the_documented_ones():
    for method in ("with-replacement", "without-replacement"):
        tree = multidraft_tree(P, Q, 3, method=method)
        assert recipes_known(tree, ALL_RECIPES - {"given"})
        tree.rederive()
    spectr = multidraft_tree(P, Q, 2, method="spectr", rho=2)
    assert spectr.recipes["p-over-rho"] == ("scaled", "p", "1/2")
    assert spectr.recipes["spectr-residual"] == ("positive-part", "p", "spectr-scaled-min")
    assert not [n for n, r in spectr.recipes.items() if r[0] == "given"]
    spectr.rederive()
    assert multidraft_tree(P, Q, 2).recipes["r1"] == ("positive-part", "p", "q")
    assert multidraft_tree(P, Q, 2).recipes["r1n"] == ("normalized", "r1")


def test_tampered_branch_is_rejected_and_json_round_trips():
    tree = multidraft_tree(P, Q, 2, method="without-replacement")
    again = OutcomeTree.from_dict(json.loads(json.dumps(tree.as_dict())))
    again.rederive()
    assert again.law() == tree.law()
    data = tree.as_dict()
    data["nodes"][1]["branches"][0]["probability"] = "1/3"
    with pytest.raises(InvalidTree):
        OutcomeTree.from_dict(data).rederive()
    root = tree.root
    bad = Node(
        root.label,
        (replace(root.branches[0], probability=root.branches[0].probability + F(1, 10**9)), *root.branches[1:]),
    )
    with pytest.raises(InvalidTree):
        OutcomeTree(tree.rows, bad, tree.vocab_size, tree.derivations, tree.recipes).rederive()


def test_multidraft_bad_inputs():
    with pytest.raises(InvalidVerifier):
        multidraft_tree(P, Q, 0)
    with pytest.raises(InvalidVerifier):
        multidraft_tree(P, Q, 2, method="sequential")
    with pytest.raises(InvalidVerifier):
        multidraft_tree(P, Q, 2, rho=2)
    with pytest.raises(InvalidDistribution):
        multidraft_tree(P, Q[:2], 2)
    with pytest.raises(SpecProofError):
        multidraft_tree(["1/2", "1/3"], ["1/2", "1/2"], 2)


# --------------------------------------------------------------------------- token trees


SHARED = [[1, [[0, []]]], [1, [[2, []]]], [2, []]]  # siblings share token 1


def test_tree_with_siblings_sharing_a_token_hand_derived():
    # root: child 1 (token 1) accepted 1/4; then target (2/3, 0, 1/3): child 2 (token 1) never, child 3
    # (token 2) 1/3 * 3/4 = 1/4; else 0 is emitted (1/2). Below (1,): child 0 accepted 1/2, else a draw
    # from (0, 1/2, 1/2). (2,) and (1, 0) have no children: the bonus token from p.
    law = deterministic_tree_law(P, SHARED)
    assert law.emitted == {
        (0,): F(1, 2),
        (2, 0): F(1, 8),
        (2, 1): F(1, 16),
        (2, 2): F(1, 16),
        (1, 1): F(1, 16),
        (1, 2): F(1, 16),
        (1, 0, 0): F(1, 16),
        (1, 0, 1): F(1, 32),
        (1, 0, 2): F(1, 32),
    }
    assert law.accepted_length_law == (F(1, 2), F(3, 8), F(1, 8))
    assert law.expected_accepted == F(5, 8) and law.expected_emitted == F(13, 8)
    assert law.lossless
    root = law.positions[()]
    assert root.accepted_law() == (F(0), F(1, 4), F(1, 4))
    assert recipes_known(root, ALL_RECIPES - {"given"})
    root.rederive()


def test_child_with_draft_probability_zero():
    # top-3 of q = (1/2, 1/2, 0): token 2 is a child though q(2) = 0; with q one-hot it is accepted
    # with probability p(2) = 1/4, and every draw is some child: all accepted
    tree = topk_tree(["1/2", "1/2", "0"], [3])
    assert tree == ((0, ()), (1, ()), (2, ()))
    law = deterministic_tree_law(P, tree)
    assert law.accepted_length_law == (F(0), F(1))
    assert law.emitted[(2, 0)] == F(1, 4) * F(1, 2)
    # drafted from q: token 2 is never drafted; with replacement acceptance 1/2 + 1/4 = 3/4 (then the
    # residual is (0, 0, 1), which q cannot reach)
    sto = stochastic_tree_law(P, ["1/2", "1/2", "0"], [2])
    assert sto.accepted_length_law == (F(1, 4), F(3, 4))
    assert sum(m for s, m in sto.emitted.items() if s[0] == 2) == F(1, 4)
    assert sto.lossless


def test_sibling_tree_hand_derived():
    tree = sibling_tree(P, [1, 1, 2])
    assert tree.law()[0] == P
    assert tree.accept_probability() == F(1, 2)  # 1/4 + 3/4 * 0 + 3/4 * 1/3
    assert tree.rows["onehot-1"] == (F(0), F(1), F(0))
    assert tree.recipes["only-1"] == ("without", "uniform", [0, 2])
    empty = sibling_tree(P, [])
    assert empty.law()[0] == P and empty.accept_probability() == 0
    with pytest.raises(InvalidVerifier):
        sibling_tree(P, [3])


def test_stochastic_tree_depth_two_hand_derived():
    # p = (1/2, 1/2) everywhere, q = (1, 0): each node accepts its (only) draft 0 with probability 1/2,
    # a second sibling adds nothing (the residual is (0, 1))
    law = stochastic_tree_law(["1/2", "1/2"], ["1", "0"], [2, 1])
    assert law.accepted_length_law == (F(1, 2), F(1, 4), F(1, 4))
    assert law.emitted == {(1,): F(1, 2), (0, 1): F(1, 4), (0, 0, 0): F(1, 8), (0, 0, 1): F(1, 8)}
    assert law.lossless


def test_trees_with_the_same_rows_everywhere():
    # every node has the same rows, so the per-node acceptance a gives P(accepted = i) = a^i (1 - a)
    a = F(13, 16)  # two drafts with replacement (test_with_replacement_hand_derived)
    law = stochastic_tree_law(P, Q, [2, 2])
    assert law.accepted_length_law == (1 - a, a * (1 - a), a * a) and law.expected_emitted == 1 + a + a * a
    b = F(7, 8)
    assert stochastic_tree_law(P, Q, [2, 2], method="without-replacement").expected_emitted == 1 + b + b * b
    c = P[2] + P[0]  # q's top 2 are tokens 2 and 0 at every node
    assert topk_tree(Q, [2, 2]) == ((2, ((2, ()), (0, ()))), (0, ((2, ()), (0, ()))))
    assert deterministic_tree_law(P, topk_tree(Q, [2, 2])).expected_emitted == 1 + c + c * c


def test_greedy_tree_with_ties():
    # p = (1/2, 1/2): the argmax is 0 (ties to the smallest id)
    law = greedy_tree_law(["1/2", "1/2"], [[1, []], [0, [[0, []]]]])
    assert law.emitted == {(0, 0, 0): F(1)}
    assert law.accepted_length_law == (F(0), F(0), F(1))
    assert law.lossless and law.reference == "greedy target"
    # no child is the argmax: emit it at once
    law = greedy_tree_law(["1/4", "3/4"], [[0, [[1, []]]]])
    assert law.emitted == {(1,): F(1)} and law.accepted_length_law == (F(1), F(0), F(0))
    tree = greedy_sibling_tree(["1/4", "3/8", "3/8"], [2, 1, 1])
    assert tree.law()[0] == (F(0), F(1), F(0)) and tree.accept_probability() == 1
    tree.rederive()


def test_greedy_tree_follows_the_context():
    def target(s):
        return ["1/3", "2/3"] if len(s) % 2 == 0 else ["3/4", "1/4"]

    law = greedy_tree_law(target, [[1, [[1, []], [0, [[0, []]]]]]])
    assert law.emitted == {(1, 0, 1): F(1)}  # 1 accepted, 0 accepted, then child 0 is not the argmax 1


def test_token_tree_bad_inputs():
    with pytest.raises(InvalidVerifier):
        deterministic_tree_law(P, [[0]])
    with pytest.raises(InvalidVerifier):
        deterministic_tree_law(P, [["a", []]])
    with pytest.raises(InvalidVerifier):
        stochastic_tree_law(P, Q, [0])


# --------------------------------------------------------------------------- block verification


def test_block_verification_paper_example():
    # Sun et al. 2024, Section 3: M_b = (1/3, 2/3), M_s = (2/3, 1/3), gamma = 2: token verification
    # 10/9, block verification 11/9, full information 12/9 accepted tokens
    law = block_verification_law(["1/3", "2/3"], ["2/3", "1/3"], 2)
    assert law.token_expected_accepted == F(10, 9)
    assert law.expected_accepted == F(11, 9)
    assert law.upper_bound == F(12, 9)
    assert law.lossless and law.expected_emitted == F(20, 9)


def test_block_verification_gamma_1_is_token_verification():
    law = block_verification_law(P, Q, 1)
    assert law.emitted == {
        (0, 0): F(1, 8),
        (0, 1): F(1, 16),
        (0, 2): F(1, 16),
        (1, 0): F(1, 8),
        (1, 1): F(1, 16),
        (1, 2): F(1, 16),
        (2, 0): F(1, 8),
        (2, 1): F(1, 16),
        (2, 2): F(1, 16),
        (0,): F(1, 4),
    }
    assert law.accepted_length_law == (F(1, 4), F(3, 4))
    assert law.expected_accepted == law.token_expected_accepted == law.upper_bound == F(3, 4)


def test_full_information_bound_hand_derived():
    # gamma = 1: alpha; gamma = 2 with context-free rows: alpha + sum_{x,y} min(p_x p_y, q_x q_y)
    assert full_information_bound(P, Q, 1) == F(3, 4)
    pairs = sum(min(P[x] * P[y], Q[x] * Q[y]) for x in range(3) for y in range(3))
    assert pairs == F(11, 16)  # rows (1/16, 1/16, 1/8), (1/16, 1/16, 1/16), (1/8, 1/16, 1/16)
    assert full_information_bound(P, Q, 2) == F(23, 16)


def _rows_strategy(v, depth):
    """A context-dependent model: one exact row per prefix of length < depth."""
    weights = st.lists(st.integers(0, 6), min_size=v, max_size=v).filter(lambda w: sum(w) > 0)
    prefixes = [s for n in range(depth) for s in itertools.product(range(v), repeat=n)]
    return st.lists(weights, min_size=len(prefixes), max_size=len(prefixes)).map(
        lambda ws: {s: normalize_fractions(w) for s, w in zip(prefixes, ws)}
    )


@settings(max_examples=100, deadline=None)
@given(_rows_strategy(2, 3), _rows_strategy(2, 3))
def test_block_verification_is_lossless_and_matches_brute_force(tb, ts):
    def mb(s):
        return tb[s]

    def ms(s):
        return ts[s]

    law = block_verification_law(mb, ms, 2)
    stream, expected = naive_block_verification(mb, ms, 2, 2)
    assert law.expected_accepted == expected
    assert stream == naive_joint(mb, 3, 2)
    assert law.lossless
    assert law.token_expected_accepted <= law.expected_accepted <= law.upper_bound


# --------------------------------------------------------------------------- typical acceptance


def test_typical_threshold_decided_exactly():
    # p = (1/2, 1/16 x 8): exp(-H) = 1/(4 sqrt 2); 1/16 > 0.3/(4 sqrt 2) iff sqrt 2 > 6/5: accepted
    p = (F(1, 2),) + (F(1, 16),) * 8
    assert typical_accepts(p, 1)
    # p = (1/2, 1/32 x 16): exp(-H) = 1/8; threshold min(9/100, 3/80) = 3/80 > 1/32: rejected
    p2 = (F(1, 2),) + (F(1, 32),) * 16
    assert not typical_accepts(p2, 1) and typical_accepts(p2, 0)
    # a tie, decided exactly: delta = 1/4 makes the threshold 1/32 = p(x); '>' fails
    assert not typical_accepts(p2, 1, delta="1/4")
    assert typical_accepts(p2, 1, delta="1/4", eps="1/33")  # then eps decides: 1/32 > 1/33
    # the eps branch: p(x) > 9/100
    assert typical_accepts(["3/4", "1/8", "1/16", "1/16"], 1)
    assert not typical_accepts(["3/4", "1/8", "1/16", "1/16"], 2)


def test_typical_interval_route_agrees_and_refuses_at_the_cap():
    from specproof.laws.typical import _typical_interval

    p = (F(1, 2),) + (F(1, 16),) * 8
    assert _typical_interval(p, [1, 2], F(3, 10), F(0), 1 << 10) == {1: True, 2: True}
    p2 = (F(1, 2),) + (F(1, 32),) * 16
    assert _typical_interval(p2, [1], F(3, 10), F(0), 1 << 10) == {1: False}
    with pytest.raises(Undecidable):  # an exact tie cannot be separated by intervals
        _typical_interval(p2, [1], F(1, 4), F(0), 1 << 9)
    # Medusa's code adds 1e-5 inside the log: H is smaller, exp(-H) larger; 1/16 still accepted
    assert typical_accepts(p, 1, offset="1/100000")


def test_typical_law_hand_derived():
    # accepted: tokens 0, 1 (p > 9/100); rejected 2, 3 -> the argmax 0
    law = typical_law(["3/4", "1/8", "1/16", "1/16"], ["1/4"] * 4)
    assert law.law == (F(3, 4), F(1, 4), F(0), F(0))
    assert law.acceptance == F(1, 2) and law.tv == F(1, 8)
    tree = law.tree
    assert tree.rows["typical-mask"] == (F(1), F(1), F(0), F(0))
    assert tree.recipes["typical-mask"] == ("given",)
    tree.rederive()
    # every draft rejected: the law is the point mass at the argmax
    p2 = (F(1, 2),) + (F(1, 32),) * 16
    law2 = typical_law(p2, (F(0),) + (F(1, 16),) * 16)
    assert law2.law == (F(1),) + (F(0),) * 16 and law2.tv == F(1, 2) and law2.acceptance == 0


def test_typical_block_hand_derived():
    p, q = ["3/4", "1/8", "1/16", "1/16"], ["1/4"] * 4
    law = typical_block_law(p, q, 2)
    assert law.accepted_length_law == (F(1, 2), F(1, 4), F(1, 4))
    assert law.expected_accepted == F(3, 4) and law.expected_emitted == F(7, 4)
    assert law.emitted == {
        (0,): F(1, 2),
        (0, 0): F(1, 8),
        (1, 0): F(1, 8),
        (0, 0, 0): F(1, 16),
        (0, 1, 0): F(1, 16),
        (1, 0, 0): F(1, 16),
        (1, 1, 0): F(1, 16),
    }
    assert law.node_tv == {
        (): F(1, 8),
        (0,): F(1, 8),
        (1,): F(1, 8),
        (0, 0): F(1, 4),
        (0, 1): F(1, 4),
        (1, 0): F(1, 4),
        (1, 1): F(1, 4),
    }
    # stream TV by brute force over the 4^3 sequences
    pv = [F(3, 4), F(1, 8), F(1, 16), F(1, 16)]
    mine = {}
    for block, m in law.emitted.items():
        for rest in itertools.product(range(4), repeat=3 - len(block)):
            w = m
            for t in rest:
                w *= pv[t]
            mine[block + rest] = mine.get(block + rest, F(0)) + w
    tv = sum(abs(mine.get(s, F(0)) - pv[s[0]] * pv[s[1]] * pv[s[2]]) for s in itertools.product(range(4), repeat=3)) / 2
    assert law.stream_tv == tv


def test_typical_bad_inputs():
    with pytest.raises(InvalidVerifier):
        typical_accepts(P, 3)
    with pytest.raises(InvalidVerifier):
        typical_accepts(P, 0, eps=0)
    with pytest.raises(InvalidDistribution):
        typical_tree(P, Q[:2])


# --------------------------------------------------------------------------- properties


@settings(max_examples=200, deadline=None)
@given(
    distribution_pairs(max_len=4, max_weight=6),
    st.integers(1, 3),
    st.sampled_from(["with-replacement", "without-replacement"]),
)
def test_recursive_rejection_is_lossless_and_matches_brute_force(pair, k, method):
    p, q = pair
    law = multidraft_law(p, q, k, method=method)
    naive_law, naive_accept = naive_recursive_rejection(p, q, k, method == "with-replacement")
    assert law.law == naive_law == p
    assert law.acceptance == naive_accept == sum(law.accepted_at)
    law.tree.rederive()
    if method == "with-replacement":  # 1 - prod(1 - alpha_i), alpha_i = sum min(p_i, q)
        rest, target = F(1), list(p)
        for _ in range(k):
            a = sum(min(x, y) for x, y in zip(target, q))
            rest *= 1 - a
            if a == 1:
                break
            res = [max(x - y, F(0)) for x, y in zip(target, q)]
            target = [r / sum(res) for r in res]
        assert law.acceptance == 1 - rest


@settings(max_examples=100, deadline=None)
@given(distribution_pairs(max_len=4, max_weight=6), st.integers(1, 3))
def test_spectr_is_lossless_with_acceptance_one_minus_power(pair, k):
    p, q = pair
    law = multidraft_law(p, q, k, method="spectr")
    assert law.law == p
    rho = spectr_rho(p, q, k)
    beta = sum(min(y, x / rho) for x, y in zip(p, q))
    assert law.acceptance == 1 - (1 - beta) ** k
    law.tree.rederive()


@settings(max_examples=100, deadline=None)
@given(distribution_pairs(max_len=4, max_weight=6), st.lists(st.integers(0, 3), max_size=4))
def test_sibling_tree_is_lossless(pair, tokens):
    p, _ = pair
    tokens = [t % len(p) for t in tokens]
    tree = sibling_tree(p, tokens)
    assert tree.law()[0] == p
    # acceptance: the mass of p on the children's tokens
    assert tree.accept_probability() == sum(p[t] for t in set(tokens))
    tree.rederive()


@settings(max_examples=30, deadline=None)
@given(_rows_strategy(2, 2), _rows_strategy(2, 2), st.sampled_from(["with-replacement", "without-replacement"]))
def test_stochastic_tree_stream_is_the_target(tb, ts, method):
    law = stochastic_tree_law(lambda s: tb[s] if s in tb else tb[()], lambda s: ts[s], [2, 1], method=method)
    assert law.lossless
    target = lambda s: tb[s] if s in tb else tb[()]  # noqa: E731
    stream = {}
    for seq, m in law.emitted.items():
        for rest in itertools.product(range(2), repeat=3 - len(seq)):
            w = m
            full = seq + rest
            for j in range(len(seq), 3):
                w *= target(full[:j])[full[j]]
            if w:
                stream[full] = stream.get(full, F(0)) + w
    assert stream == naive_joint(target, 3, 2)


# --------------------------------------------------------------------------- the proof document


def test_variants_proof_runs_and_rejects_tampering(tmp_path):
    from specproof.certify.variants_proof import rederive_rows, verify_document, write_variants_proof

    proved, json_path, md_path = write_variants_proof(tmp_path)
    assert proved and "PROVED" in md_path.read_text(encoding="utf-8")
    committed = Path(__file__).resolve().parents[1] / "proofs" / "transcripts" / "variants"
    assert json_path.read_bytes() == (committed / "variants.json").read_bytes()  # regenerating: same bytes
    assert md_path.read_bytes() == (committed / "variants.md").read_bytes()
    # the trusted checker re-verifies every position, and rejects a changed branch probability
    from specproof import checker
    from specproof.certify.variants_proof import position_certificates

    bundle = json.loads(json.dumps(position_certificates()))
    verdict = checker.check(bundle)
    assert verdict.valid and len(verdict.facts) == 27
    assert [c["name"] for c, f in zip(bundle["certificates"], verdict.facts) if not f["claims"]["lossless"]] == [
        "worked-typical"
    ]
    cert = next(c for c in bundle["certificates"] if c["name"] == "worked-without-replacement-k2")
    cert["nodes"][1]["branches"][0]["probability"] = "1/3"
    assert checker.check(bundle).reason is checker.Reason.BRANCH
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    assert verify_document(doc) == (True, [])
    # one branch's probability changed
    bad = json.loads(json_path.read_text(encoding="utf-8"))
    case = next(c for c in bad["positions"] if c["name"] == "worked-with-replacement-k2")
    case["tree"]["nodes"][1]["branches"][0]["probability"] = "1/3"
    ok, problems = verify_document(bad)
    assert not ok and any("worked-with-replacement-k2" in p for p in problems)
    # a derived row changed (and the branches that read it): its recipe no longer gives it
    bad = json.loads(json_path.read_text(encoding="utf-8"))
    case = next(c for c in bad["positions"] if c["name"] == "worked-without-replacement-k2")
    case["tree"]["rows"]["q-without-2n"] = ["1/3", "2/3", "0/1"]
    ok, problems = verify_document(bad)
    assert not ok and any("q-without-2n" in p for p in problems)
    # a claimed law that the leaves do not give
    bad = json.loads(json_path.read_text(encoding="utf-8"))
    bad["positions"][0]["law"] = ["1/3", "1/3", "1/3"]
    assert not verify_document(bad)[0]
    spectr = OutcomeTree.from_dict(next(c for c in doc["positions"] if c["name"] == "worked-spectr-k2")["tree"])
    assert rederive_rows(spectr) == ["p", "q"]  # every SpecTr row derives from p and q


# --------------------------------------------------------------------------- CLI: specproof audit --verifier


def _cli(tmp_path, capsys, *extra):
    from specproof.cli import main

    (tmp_path / "p.json").write_text('["1/2", "1/4", "1/4"]', encoding="utf-8")
    (tmp_path / "q.json").write_text('["1/4", "1/4", "1/2"]', encoding="utf-8")
    code = main(["audit", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json"), *extra])
    return code, capsys.readouterr().out


def test_cli_audit_verifiers(tmp_path, capsys):
    code, out = _cli(tmp_path, capsys, "--verifier", "multidraft", "--drafts", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "lossless"
    assert data["expected_accepted"] == "13/16" and data["accepted_length"] == ["3/16", "13/16"]
    code, out = _cli(tmp_path, capsys, "--verifier", "multidraft", "--method", "without-replacement", "--json")
    assert json.loads(out)["acceptance"] == "7/8"
    code, out = _cli(tmp_path, capsys, "--verifier", "block", "--gamma", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["expected_accepted"] == "11/8" and data["token_expected_accepted"] == "21/16"
    (tmp_path / "tree.json").write_text(json.dumps(SHARED), encoding="utf-8")
    code, out = _cli(tmp_path, capsys, "--verifier", "tree", "--tree", str(tmp_path / "tree.json"), "--json")
    data = json.loads(out)
    assert code == 0 and data["accepted_length"] == ["1/2", "3/8", "1/8"]
    code, out = _cli(tmp_path, capsys, "--verifier", "typical")
    assert code == 1 and "LOSSY" in out and "tv: 1/4" in out
    code, _ = _cli(tmp_path, capsys, "--verifier", "multidraft", "--drafts", "0")
    assert code == 2


def test_the_summary_s_old_names_in_laws_variants_are_deprecated_aliases():
    """One door per thing: the CLI's summary lives in laws.summary, every verifier by name in the registry;
    laws.variants' old names still work, with a DeprecationWarning naming both."""
    import specproof.laws.summary as summary
    import specproof.laws.variants as variants

    for name in ("VERIFIERS", "audit_summary", "format_summary"):
        assert name not in variants.__all__
        with pytest.warns(DeprecationWarning, match=rf"laws\.summary\.{name}.*certify\.registry"):
            assert getattr(variants, name) is getattr(summary, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        variants.nothing  # noqa: B018
    assert summary.audit_summary(["1/2", "1/2"], ["1", "0"], "multidraft")["expected_accepted"] == "1/2"
