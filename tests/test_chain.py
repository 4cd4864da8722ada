"""Tests for specproof.chain: exact block-verification laws checked by hand."""

from fractions import Fraction as F

import pytest

from specproof.chain import expected_tokens, stream_law, target_joint_law, verification_law
from specproof.errors import InvalidDistribution


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
    assert law.accepted_length == (F(1, 4), F(1, 4), F(1, 2))
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
    assert law.accepted_length == (F(1, 4), F(3, 4))
    # reject (1/4) -> residual (1, 0); accept 0 (1/4) or 1 (1/2) -> bonus from p = (1/2, 1/2)
    assert law.emitted == {(0,): F(1, 4), (0, 0): F(1, 8), (0, 1): F(1, 8), (1, 0): F(1, 4), (1, 1): F(1, 4)}
    assert law.expected_emitted == F(7, 4) == expected_tokens(F(3, 4), 1)


def test_constant_rows_match_equation_1():
    p, q = ["1/2", "1/3", "1/6"], ["1/6", "1/2", "1/3"]  # alpha = 1/6 + 1/3 + 1/6 = 2/3
    for gamma in (1, 2, 3):
        law = verification_law(lambda s: p, lambda s: q, gamma)
        assert law.expected_emitted == expected_tokens(F(2, 3), gamma)
        assert law.accepted_length[gamma] == F(2, 3) ** gamma
        assert law.lossless
    assert stream_law(law, lambda s: p) == target_joint_law(lambda s: p, 4)


def test_identical_and_disjoint_drafts():
    law = verification_law(lambda s: ["1/2", "1/2"], lambda s: ["1/2", "1/2"], 3)
    assert law.accepted_length == (0, 0, 0, 1) and law.expected_emitted == 4
    law = verification_law(lambda s: [1, 0], lambda s: [0, 1], 3)
    assert law.accepted_length == (1, 0, 0, 0) and law.emitted == {(0,): 1}


def test_a_wrong_bonus_row_is_caught_by_the_stream_check():
    # a verifier that draws the bonus token from the draft row instead of the target row
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]
    law = verification_law(lambda s: p, lambda s: q, 1)
    wrong = dict(law.emitted)
    for y in (0, 1):
        wrong[(1, y)] = F(1, 2) * F(q[y])
    law.emitted = wrong
    assert stream_law(law, lambda s: p) != target_joint_law(lambda s: p, 2)


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
