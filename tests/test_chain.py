"""Tests for specproof.laws.chain: exact block-verification laws checked by hand."""

from dataclasses import FrozenInstanceError, replace
from fractions import Fraction as F

import pytest

from specproof.errors import InvalidDistribution
from specproof.laws.chain import (
    BlockLaw,
    best_gamma,
    expected_tokens,
    operations_factor,
    stream_law,
    target_joint_law,
    verification_law,
    walltime_improvement,
)


def _rows(table):
    return lambda prefix: table[prefix]


# gamma = 2, V = 2. alpha differs by position: 3/4 at the root, 1 after token 0 (p == q there),
# 1/2 after token 1. Depth-2 rows (the bonus) are uniform.
HALF = (F(1, 2), F(1, 2))
TARGET = {(): HALF, (0,): (F(1, 3), F(2, 3)), (1,): (F(1), F(0))}
DRAFT = {(): (F(1, 4), F(3, 4)), (0,): (F(1, 3), F(2, 3)), (1,): HALF}
for a in (0, 1):
    for b in (0, 1):
        TARGET[(a, b)] = HALF


def test_hand_computed_chain_with_varying_alpha_and_p_equal_q():
    law = verification_law(_rows(TARGET), _rows(DRAFT), 2)
    # root: accept masses (1/4, 1/2), rejection 1/4 -> residual (1, 0): block (0,) w.p. 1/4
    # after 0 (reach 1/4): p == q, never rejected; after 1 (reach 1/2): accept (1/2, 0),
    # rejection 1/2 -> residual (1, 0): block (1, 0) w.p. 1/4. Depth 2: reach 1/12, 1/6, 1/4.
    assert law.alphas == {(): F(3, 4), (0,): F(1), (1,): F(1, 2)}
    assert law.accepted_length_law == (F(1, 4), F(1, 4), F(1, 2))
    assert law.expected_accepted == F(5, 4) and law.expected_emitted == F(9, 4)
    expected = {(0,): F(1, 4), (1, 0): F(1, 4)}
    for (a, b), reach in {(0, 0): F(1, 12), (0, 1): F(1, 6), (1, 0): F(1, 4)}.items():
        for y in (0, 1):
            expected[(a, b, y)] = reach / 2
    assert law.emitted == expected
    assert sum(law.emitted.values()) == 1
    assert law.lossless
    assert stream_law(law, _rows(TARGET)) == target_joint_law(_rows(TARGET), 3)
    # the i.i.d. formula with the reach-weighted mean alpha 5/7 predicts 109/49, not 9/4
    assert expected_tokens(F(5, 7), 2) == F(109, 49) != law.expected_emitted


def test_single_position_chain():
    law = verification_law(lambda s: ["1/2", "1/2"], lambda s: ["1/4", "3/4"], 1)
    assert law.accepted_length_law == (F(1, 4), F(3, 4))
    # reject (1/4) -> residual (1, 0); accept 0 (1/4) or 1 (1/2) -> bonus from p = (1/2, 1/2)
    assert law.emitted == {(0,): F(1, 4), (0, 0): F(1, 8), (0, 1): F(1, 8), (1, 0): F(1, 4), (1, 1): F(1, 4)}
    assert law.expected_emitted == F(7, 4) == expected_tokens(F(3, 4), 1)


def test_constant_rows_match_equation_1():
    p, q = ["1/2", "1/3", "1/6"], ["1/6", "1/2", "1/3"]  # alpha = 1/6 + 1/3 + 1/6 = 2/3
    for gamma in (1, 2, 3):
        law = verification_law(lambda s: p, lambda s: q, gamma)
        assert law.expected_emitted == expected_tokens(F(2, 3), gamma)
        assert law.accepted_length_law[gamma] == F(2, 3) ** gamma
        assert law.lossless
    assert stream_law(law, lambda s: p) == target_joint_law(lambda s: p, 4)


def test_identical_and_disjoint_drafts():
    law = verification_law(lambda s: ["1/2", "1/2"], lambda s: ["1/2", "1/2"], 3)
    assert law.accepted_length_law == (0, 0, 0, 1) and law.expected_emitted == 4
    law = verification_law(lambda s: [1, 0], lambda s: [0, 1], 3)
    assert law.accepted_length_law == (1, 0, 0, 0) and law.emitted == {(0,): 1}


def test_a_wrong_bonus_row_is_caught_by_the_stream_check():
    # a verifier that draws the bonus token from the draft row instead of the target row
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]
    law = verification_law(lambda s: p, lambda s: q, 1)
    assert law.lossless
    wrong = dict(law.emitted)
    for y in (0, 1):
        wrong[(1, y)] = F(1, 2) * F(q[y])  # reach of the accepted draft 1 is min(1/2, 3/4) = 1/2
    wrong_law = replace(law, emitted=wrong)
    assert stream_law(wrong_law, lambda s: p) != target_joint_law(lambda s: p, 2)
    assert not wrong_law.lossless


def _law_with(law, **changes):
    return replace(law, **changes)  # a new ChainLaw: lossless is computed again, not copied


def test_lossless_is_computed_and_fails_on_other_verifiers():
    # gamma = 1, p = (1/2, 1/2), q = (1/4, 3/4): the textbook law, by hand: reach (0,) = 1/4,
    # reach (1,) = 1/2, stop at the root 1/4 with residual (1, 0): block (0,) w.p. 1/4; bonus
    # blocks (a, b) w.p. reach(a) * 1/2.
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]
    law = verification_law(lambda s: p, lambda s: q, 1)
    textbook = {(0,): F(1, 4), (0, 0): F(1, 8), (0, 1): F(1, 8), (1, 0): F(1, 4), (1, 1): F(1, 4)}
    assert dict(law.emitted) == textbook and len(law.emitted) == 5 and law.lossless
    with pytest.raises(FrozenInstanceError):
        law.gamma = 2
    # a verifier whose residual is (q - p)+ instead of (p - q)+: on a rejection it emits token 1
    bad_residual = dict(textbook)
    del bad_residual[(0,)]
    bad_residual[(1,)] = F(1, 4)
    assert not _law_with(law, emitted=bad_residual).lossless
    # a verifier that accepts with probability min(1, q/p): token 1 is drafted w.p. 3/4 and
    # accepted w.p. 1 (q/p > 1) -> reach (1,) = 3/4, token 0 accepted w.p. min(1, 1/2) -> 1/8
    coin = {(0,): F(1, 8), (0, 0): F(1, 16), (0, 1): F(1, 16), (1, 0): F(3, 8), (1, 1): F(3, 8)}
    assert not _law_with(law, emitted=coin, reach={(): F(1), (0,): F(1, 8), (1,): F(3, 4)}).lossless
    # the wrong target: the same law checked against another row at the root
    other = dict(law.reference_rows)
    other[()] = ["1/3", "2/3"]
    assert not _law_with(law, reference_rows=other).lossless
    # a block emitted after a prefix the verifier never reaches
    stray = dict(textbook)
    stray[(0, 0)] -= F(1, 16)
    stray[(5, 0)] = F(1, 16)
    assert not _law_with(law, emitted=stray).lossless
    # not starting at the empty prefix with probability 1
    assert not _law_with(law, reach={**law.reach, (): F(1, 2)}).lossless
    # every mass halved (a sub-probability law, each node's identity still proportional)
    half = {k: v / 2 for k, v in textbook.items()}
    assert not _law_with(law, emitted=half, reach={k: v / 2 for k, v in law.reach.items()}).lossless
    # an extra block after a prefix the verifier never reaches, every other mass unchanged
    assert not _law_with(law, emitted={**textbook, (5, 0): F(1, 16)}).lossless
    # a target row of another vocabulary size (an extra token of probability 0)
    assert not _law_with(law, reference_rows={**law.reference_rows, (): ["1/2", "1/2", 0]}).lossless
    # a prefix whose target row is missing: not lossless (no row to compare with), not an error
    rows = dict(law.reference_rows)
    del rows[(1,)]
    assert not _law_with(law, reference_rows=rows).lossless
    with pytest.raises(TypeError):
        type(law)(1, 2, textbook, law.accepted_length_law, law.alphas, law.reach, law.reference_rows)  # keywords only
    # a gamma = 2 law presented as gamma = 1: its blocks are longer than gamma + 1 tokens
    law2 = verification_law(lambda s: p, lambda s: q, 2)
    assert law2.lossless
    assert not _law_with(law2, gamma=1, emitted=dict(law2.emitted)).lossless


def _stored(law, residual=None, bonus=None):
    """A BlockLaw with the tables of ``law.emitted``, some entries replaced (another verifier's law)."""
    blocks = BlockLaw()
    blocks._residual = {**law.emitted._residual, **(residual or {})}
    blocks._bonus = {**law.emitted._bonus, **(bonus or {})}
    return replace(law, emitted=blocks)


def test_lossless_reads_the_stored_block_law():
    # the same checks on the compact BlockLaw (bonus rows stored as a scale and the row's numerators)
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]
    law = verification_law(lambda s: p, lambda s: q, 1)
    assert law.emitted._bonus == {(0,): (F(1, 8), (1, 1)), (1,): (F(1, 4), (1, 1))}  # reach / 2, p = (1, 1)/2
    assert _stored(law).lossless
    # the bonus token drawn from the draft row (1/4, 3/4) after the accepted draft 1
    assert not _stored(law, bonus={(1,): (F(1, 8), (1, 3))}).lossless
    # the bonus row with an extra token id 2 (block (1, 2) emitted)
    assert not _stored(law, bonus={(1,): (F(1, 4), (1, 1, 1))}).lossless
    # no bonus draw after an accepted draft
    blocks = _stored(law)
    del blocks.emitted._bonus[(1,)]
    assert not blocks.lossless
    # a residual draw stored after the last accepted draft as well as the bonus token
    assert not _stored(law, residual={(1,): (F(1, 8), [1, 0])}).lossless


def test_expected_tokens():
    assert expected_tokens(0, 5) == 1
    assert expected_tokens(1, 5) == 6
    assert expected_tokens("1/2", 2) == F(7, 4)
    with pytest.raises(InvalidDistribution, match="not in"):
        expected_tokens(2, 1)
    with pytest.raises(InvalidDistribution, match="from_floats"):
        expected_tokens(0.5, 1)


def test_bad_inputs():
    with pytest.raises(InvalidDistribution, match="gamma must be an integer >= 1"):
        verification_law(lambda s: [1], lambda s: [1], 0)
    with pytest.raises(InvalidDistribution, match="different vocabulary sizes"):
        verification_law(lambda s: [1, 0] if s == () else [1], lambda s: [1, 0] if s == () else [1], 1)
    with pytest.raises(InvalidDistribution, match="no distribution after prefix"):
        verification_law(_rows({(): HALF}), _rows({(): HALF}), 1)
    with pytest.raises(InvalidDistribution, match="p sums to"):
        verification_law(lambda s: ["1/2"], lambda s: [1], 1)


def test_closed_forms_by_hand():
    # Thm 3.8: (1 - a^(g+1)) / ((1 - a)(g c + 1)); a = 3/4, g = 2, c = 1/4: (37/16)/(3/2) = 37/24
    assert walltime_improvement("3/4", 2, "1/4") == F(37, 24)
    # c = 0 (a free draft): the improvement is Eq. 1 itself
    assert walltime_improvement("3/4", 3, 0) == expected_tokens("3/4", 3)
    # Thm 3.11: (g c_hat + g + 1) / Eq.1; a = 1/2, g = 1, c_hat = 1/2: (5/2)/(3/2) = 5/3
    assert operations_factor("1/2", 1, "1/2") == F(5, 3)
    # the best gamma maximizes Thm 3.8; by hand for a = 4/5, c = 1/10, (1 - a^(g+1)) / (0.2 (0.1 g + 1))
    # = 1.636, 2.033, 2.271, 2.401, 2.460, 2.470, 2.448 for g = 1..7 (decreasing after): 6
    assert best_gamma("4/5", "1/10") == 6
    assert best_gamma("4/5", "1/10", max_gamma=5) == 5
    # a tie: a = 0 gives 1 / (g c + 1), and with c = 0 every gamma gives 1: the smallest wins
    assert best_gamma(0, 0, max_gamma=4) == 1
    assert best_gamma(0, "1/10") == 1  # nothing is ever accepted: draft as little as possible
    with pytest.raises(InvalidDistribution, match="c is -1"):
        walltime_improvement("1/2", 1, -1)
    with pytest.raises(InvalidDistribution, match="max_gamma"):
        best_gamma("1/2", 0, max_gamma=0)


def test_iid_formula_against_the_exact_law_on_varying_alpha():
    law = verification_law(_rows(TARGET), _rows(DRAFT), 2)
    assert law.mean_alpha == F(5, 7)  # (1 * 3/4 + 1/4 * 1 + 1/2 * 1/2) / (1 + 1/4 + 1/2)
    assert law.expected_emitted - expected_tokens(law.mean_alpha, 2) == F(9, 4) - F(109, 49)


# ---------------------------------------------------------------- a given drafted block

import numpy as np  # noqa: E402

from specproof.laws import numeric  # noqa: E402
from specproof.laws.chain import given_block_law  # noqa: E402
from specproof.laws.rational import from_floats  # noqa: E402


def test_given_block_accepts_numpy_integer_tokens_and_names_bad_positions():
    law = given_block_law([HALF, (F(1), F(0))], [(F(1, 4), F(3, 4))], [np.int64(1)])
    assert law.accepted_length_law == (F(1, 3), F(2, 3))
    with pytest.raises(InvalidDistribution, match=r"^position 0: p has V=2 entries but q has V=3"):
        given_block_law([HALF, HALF], [(F(1, 4), F(3, 4), F(0))], [1])
    bad = {**TARGET, (1,): (F(1, 2), F(1, 3))}
    with pytest.raises(InvalidDistribution, match=r"^after the drafted prefix \(1,\): p sums to 5/6, not 1"):
        verification_law(_rows(bad), _rows(DRAFT), 2)
    with pytest.raises(
        InvalidDistribution, match=r"block \(1,\) position 0: the drafted token 0 has draft probability 0"
    ):
        numeric.given_block_law(np.full((2, 2, 2), 0.5), np.array([[[0.5, 0.5]], [[0.0, 1.0]]]), np.array([[0], [0]]))


def test_given_block_by_hand():
    # p0 = (1/2, 1/2), q0 = (1/4, 3/4), x1 = 1: keep 2/3; p1 = q1 = (1/3, 2/3), x2 = 0: keep 1;
    # bonus p2 = (1, 0). Stops: 1/3 after 0 accepted, 0 after 1, 2/3 after 2.
    law = given_block_law([HALF, (F(1, 3), F(2, 3)), (F(1), F(0))], [(F(1, 4), F(3, 4)), (F(1, 3), F(2, 3))], [1, 0])
    assert law.accepted_length_law == (F(1, 3), F(0), F(2, 3))
    assert law.emitted == ((F(1), F(0)), (F(0), F(0)), (F(1), F(0)))


@pytest.mark.parametrize(
    "tokens, message",
    [
        ([2], r"not an integer token id in \[0, 2\)"),
        ([-1], "not an integer token id"),
        ([True], "not an integer token id"),
        ([0.0], "not an integer token id"),
        ([0], "draft probability 0"),
    ],
)
def test_given_block_bad_tokens(tokens, message):
    with pytest.raises(InvalidDistribution, match=message):
        given_block_law([HALF, HALF], [(F(0), F(1))], tokens)


def test_float_given_block_matches_exact_on_random_blocks():
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(40):
        gamma, v = int(rng.integers(1, 5)), int(rng.integers(2, 9))
        w_t = rng.integers(0, 6, size=(gamma + 1, v))
        w_t[:, 0] += 1
        w_d = rng.integers(0, 6, size=(gamma, v))
        w_d[:, 0] += 1
        tgt = [tuple(F(int(a), int(r.sum())) for a in r) for r in w_t]
        drf = [tuple(F(int(a), int(r.sum())) for a in r) for r in w_d]
        toks = [int(rng.choice(np.flatnonzero(r))) for r in w_d]
        exact = given_block_law(tgt, drf, toks)
        acc, emi = numeric.given_block_law(
            w_t / w_t.sum(-1, keepdims=True), w_d / w_d.sum(-1, keepdims=True), np.array(toks)
        )
        worst = max(worst, max(abs(F(float(a)) - b) for a, b in zip(acc.tolist(), exact.accepted_length_law)))
        for row_f, row_e in zip(emi.tolist(), exact.emitted):
            worst = max(worst, max(abs(F(float(a)) - b) for a, b in zip(row_f, row_e)))
    assert worst < 1e-12


def test_float_given_block_is_batched_and_refuses_bad_tokens():
    t = np.full((3, 2, 4), 0.25)
    d = np.full((3, 1, 4), 0.25)
    acc, emi = numeric.given_block_law(t, d, np.array([[0], [1], [3]]))
    assert acc.shape == (3, 2) and emi.shape == (3, 2, 4)
    assert acc.tolist() == [[0.0, 1.0]] * 3  # p == q: always accepted
    with pytest.raises(InvalidDistribution, match=r"in \[0, 4\)"):
        numeric.given_block_law(t, d, np.array([[0], [4], [1]]))
    with pytest.raises(InvalidDistribution, match="shapes do not fit"):
        numeric.given_block_law(t, d, np.array([0, 1, 2]))


def test_float_given_block_resolves_what_float64_cannot():
    # position 0: p(1) = 0 < q(1) = 2^-80, p and q otherwise equal as float64 rows: token 1 is
    # rejected for sure, and the float rows' exact residual (renormalized, it puts mass on
    # tokens 0 and 2) is below float64 resolution in the float computation
    target = np.array([[0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    draft = np.array([[0.5, 2.0**-80, 0.5]])
    exact = given_block_law([from_floats(r) for r in target], [from_floats(draft[0])], [1])
    acc, emi = numeric.given_block_law(target, draft, np.array([1]))
    assert exact.accepted_length_law == (1, 0) and acc.tolist() == [1.0, 0.0]
    assert emi[0].tolist() == [float(x) for x in exact.emitted[0]] == [0.5, 0.0, 0.5]
    # the adversarial review's case: q(x) = 1.09e-12, p(x) = 0, rows equal after normalization
    # up to 1e-12; computed in floats alone the joint law was off by 2.3e-5
    t = np.array([[0.0, 0.7249524016611025, 0.27504759833889747], [0.5, 0.25, 0.25]])
    d = np.array([[1.0859987400844336e-12, 0.7249356235229049, 0.27504123269805636]])
    acc, emi = numeric.given_block_law(t, d, np.array([0]))
    ex = given_block_law([from_floats(r) for r in t], [from_floats(d[0])], [0])
    assert (
        max(abs(F(float(acc[0])) * F(float(e)) - ex.accepted_length_law[0] * r) for e, r in zip(emi[0], ex.emitted[0]))
        < 1e-18
    )
    # a drafted token that is never rejected: the empty float residual is harmless
    acc, emi = numeric.given_block_law(target, draft, np.array([0]))
    assert acc.tolist() == [0.0, 1.0]


def test_review_edge_cases_of_the_chain_api():
    law = verification_law(_rows(TARGET), _rows(DRAFT), 2)
    assert law.stop(()) == F(1, 4) and law.stop([1]) == F(1, 4) and law.stop((0,)) == 0
    assert law.stop((1, 1)) == 0  # never accepted: min(p, q)(1) = 0 after token 1
    assert sum(law.stop(s) for s in law.reach) == 1
    assert law.emitted[(np.int64(1), np.int64(0))] == F(1, 4) == law.emitted[(1, 0)]
    with pytest.raises(InvalidDistribution, match="must be sequences"):
        given_block_law([HALF, HALF], [HALF], 1)
    with pytest.raises(InvalidDistribution, match="tokens is not a rectangular array"):
        numeric.given_block_law(np.full((2, 2, 2), 0.5), np.full((2, 1, 2), 0.5), [[0], [0, 1]])
    with pytest.raises(InvalidDistribution, match=r"^target\[0, 1, 0\] is nan"):
        numeric.given_block_law(np.array([[[0.5, 0.5], [np.nan, 1.0]]]), np.full((1, 1, 2), 0.5), [[0]])
    with pytest.raises(InvalidDistribution, match=r"^draft\[0, 0, 1\] is -0.5, which is negative"):
        numeric.given_block_law(np.full((1, 2, 2), 0.5), np.array([[[1.5, -0.5]]]), [[0]])


def test_float_given_block_with_a_subnormal_draft_probability_and_unnormalized_rows():
    # the second review's case: q(x) = 3e-323 (subnormal) in a draft row summing to 1.0007;
    # normalizing q(x) first lost its low bits and accepted_length was off by 3.5e-4
    t = np.array([[1.5e-323, 0.5, 0.5], [0.5, 0.25, 0.25]])
    d = np.array([[3e-323, 0.50035, 0.50035]])
    acc, emi = numeric.given_block_law(t, d, np.array([0]))
    ex = given_block_law([from_floats(r) for r in t], [from_floats(d[0])], [0])
    assert max(abs(F(float(a)) - b) for a, b in zip(acc, ex.accepted_length_law)) < 1e-16
    assert (
        max(abs(F(float(acc[0])) * F(float(e)) - ex.accepted_length_law[0] * r) for e, r in zip(emi[0], ex.emitted[0]))
        < 1e-16
    )


def test_stream_and_joint_laws_by_hand():
    # gamma = 1, p = (1/2, 1/2) at every prefix, q = (1/4, 3/4): the first two output tokens
    # are i.i.d. p, so every pair has mass 1/4; the stream sums several paths into one pair
    # ((0,) then 0 from the target, and the block (0, 0)): 1/4 * 1/2 + 1/8 = 1/4
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]
    law = verification_law(lambda s: p, lambda s: q, 1)
    pairs = {(a, b): F(1, 4) for a in (0, 1) for b in (0, 1)}
    assert target_joint_law(lambda s: p, 2) == pairs
    assert stream_law(law, lambda s: p) == pairs
    # a target that depends on the prefix: p(. | ()) = (1/3, 2/3), then (1, 0) after 0, (1/2, 1/2) after 1
    rows = {(): ["1/3", "2/3"], (0,): [1, 0], (1,): ["1/2", "1/2"]}
    assert target_joint_law(lambda s: rows[s], 2) == {(0, 0): F(1, 3), (1, 0): F(1, 3), (1, 1): F(1, 3)}


def test_block_law_lookups_outside_the_law_are_missing_keys():
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]
    blocks = verification_law(lambda s: p, lambda s: q, 1).emitted
    assert blocks[(1, 1)] == F(1, 4)
    for missing in [(1, 2), (0, 5), (0, -1), (1, True), (1, 0.0), (1,), (), (7, 0), (0, 0, 0)]:
        assert missing not in blocks and blocks.get(missing) is None, missing
        with pytest.raises(KeyError):
            blocks[missing]


def test_closed_form_edges():
    assert expected_tokens("1/2", 0) == 1  # no draft: the one target token
    with pytest.raises(InvalidDistribution, match="gamma must be an integer >= 0"):
        expected_tokens("1/2", -1)
    assert best_gamma("1/2", "1/2", max_gamma=1) == 1


def test_given_block_law_refuses_rows_that_do_not_fit_gamma():
    half = ["1/2", "1/2"]
    for target_rows, draft_rows, tokens in [
        ([half], [], []),  # gamma = 0
        ([half, half, half], [half], [0]),  # 3 target rows for gamma = 1
        ([half, half], [half, half], [0]),  # 2 draft rows for gamma = 1
        ([half], [half], [0]),  # no bonus row
    ]:
        with pytest.raises(InvalidDistribution, match="need gamma >= 1 tokens, gamma \\+ 1 target rows"):
            given_block_law(target_rows, draft_rows, tokens)
    with pytest.raises(InvalidDistribution, match="different vocabulary sizes: 2 and 3"):
        given_block_law([half, ["1/3", "1/3", "1/3"]], [half], [0])
    law = given_block_law([half, half], [half], [0])
    with pytest.raises(FrozenInstanceError):
        law.accepted_length_law = ()


def test_verification_law_takes_its_old_keywords_with_a_warning():
    p, q = (lambda s: ["1/2", "1/2"]), (lambda s: ["1/4", "3/4"])
    want = verification_law(p, q, 1)
    with pytest.warns(
        DeprecationWarning, match=r"verification_law\(target=...\) is deprecated; use target_model="
    ) as seen:
        old = verification_law(target=p, draft_model=q, gamma=1)
    assert [w.filename for w in seen] == [__file__]  # the warning names the caller's line
    with pytest.warns(DeprecationWarning, match=r"verification_law\(draft=...\) is deprecated; use draft_model="):
        assert verification_law(p, draft=q, gamma=1).accepted_length_law == want.accepted_length_law
    assert old.accepted_length_law == want.accepted_length_law and dict(old.emitted) == dict(want.emitted)
    with pytest.raises(TypeError, match="got both target= .its old name. and target_model="):
        verification_law(target=p, target_model=p, draft_model=q, gamma=1)
