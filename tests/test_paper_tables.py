"""Leviathan et al. 2023 (arXiv 2211.17192v2), Tables 1 and 4, from their printed inputs.

The printed values were transcribed from a text conversion of the paper (GitHub
para1lel/asabook, docs/en/papers/speculative-decoding.md); a second, independent
transcription prints the same six rows of Table 1 and the EnDe T5-small and T5-large rows
of Table 4. Every computation here is exact (Fractions); only the final rounding to the
printed digits is compared.
"""

from fractions import Fraction as F

import pytest

from specproof.laws.chain import best_gamma, operations_factor, walltime_improvement

# Table 1: alpha, gamma -> operations factor and speed factor, assuming c = c_hat = 0.
TABLE_1 = [
    ("0.6", 2, "1.53", "1.96"),
    ("0.7", 3, "1.58", "2.53"),
    ("0.8", 2, "1.23", "2.44"),
    ("0.8", 5, "1.63", "3.69"),
    ("0.9", 2, "1.11", "2.71"),
    ("0.9", 10, "1.60", "6.86"),
]

# Table 4: task, M_q, temperature, gamma, alpha, c, Exp (expected improvement, Thm 3.8), Emp.
TABLE_4 = [
    ("EnDe", "T5-small", 0, 7, "0.75", "0.02", "3.2", "3.4"),
    ("EnDe", "T5-base", 0, 7, "0.8", "0.04", "3.3", "2.8"),
    ("EnDe", "T5-large", 0, 7, "0.82", "0.11", "2.5", "1.7"),
    ("EnDe", "T5-small", 1, 7, "0.62", "0.02", "2.3", "2.6"),
    ("EnDe", "T5-base", 1, 5, "0.68", "0.04", "2.4", "2.4"),
    ("EnDe", "T5-large", 1, 3, "0.71", "0.11", "2.0", "1.4"),
    ("CNNDM", "T5-small", 0, 5, "0.65", "0.02", "2.4", "3.1"),
    ("CNNDM", "T5-base", 0, 5, "0.73", "0.04", "2.6", "3.0"),
    ("CNNDM", "T5-large", 0, 3, "0.74", "0.11", "2.0", "2.2"),
    ("CNNDM", "T5-small", 1, 5, "0.53", "0.02", "1.9", "2.3"),
    ("CNNDM", "T5-base", 1, 3, "0.55", "0.04", "1.8", "2.2"),
    ("CNNDM", "T5-large", 1, 3, "0.56", "0.11", "1.6", "1.7"),
]

# Rows whose printed Exp is NOT Thm 3.8 at the printed (alpha, c) rounded to one decimal.
# The paper prints alpha and c to two decimals; these rows come out right only for alpha and
# c inside the interval that rounds to the printed values (tested below), so the authors must
# have used unrounded measurements there.
OFF_AT_PRINTED_INPUTS = {
    ("EnDe", "T5-base", 1): "2.3",  # 2.3467 at alpha 0.68, c 0.04; printed 2.4
    ("EnDe", "T5-large", 1): "1.9",  # 1.9338 at alpha 0.71, c 0.11; printed 2.0
    ("CNNDM", "T5-large", 1): "1.5",  # 1.5408 at alpha 0.56, c 0.11; printed 1.6
}


def _printed(x: F, places: int) -> F:
    """``x`` rounded to ``places`` decimals, as a printed table cell (ties cannot occur here)."""
    return round(x, places)


@pytest.mark.parametrize("alpha, gamma, operations, speed", TABLE_1)
def test_table_1_operations_and_speed(alpha, gamma, operations, speed):
    a = F(alpha)
    assert _printed(operations_factor(a, gamma, 0), 2) == F(operations)
    assert _printed(walltime_improvement(a, gamma, 0), 2) == F(speed)


@pytest.mark.parametrize("task, model, temp, gamma, alpha, c, exp, emp", TABLE_4)
def test_table_4_expected_column(task, model, temp, gamma, alpha, c, exp, emp):
    a, cost, printed = F(alpha), F(c), F(exp)
    at_printed_inputs = _printed(walltime_improvement(a, gamma, cost), 1)
    off = OFF_AT_PRINTED_INPUTS.get((task, model, temp))
    if off is None:
        assert at_printed_inputs == printed
    else:
        assert at_printed_inputs == F(off) != printed
    # Thm 3.8 grows with alpha and falls with c: over every (alpha, c) that prints as the
    # table's inputs, it covers an interval that must reach the printed Exp's rounding interval.
    half = F(1, 200)
    low = walltime_improvement(a - half, gamma, cost + half)
    high = walltime_improvement(a + half, gamma, cost - half)
    assert low < printed + F(1, 20) and high >= printed - F(1, 20)


def test_table_4_gammas_against_the_best_gamma():
    """The paper's gammas against Section 3.5's optimum (Thm 3.8 maximized over integers).

    At the printed (alpha, c), the printed gamma is the optimum in two rows only (CNNDM
    T5-small and T5-large at temperature 1), yet never costs more than 3% of the optimum's
    improvement: Thm 3.8 is flat near its maximum.
    """
    optimal = []
    for task, model, temp, gamma, alpha, c, _, _ in TABLE_4:
        a, cost = F(alpha), F(c)
        best = best_gamma(a, cost)
        ratio = walltime_improvement(a, gamma, cost) / walltime_improvement(a, best, cost)
        assert F(97, 100) < ratio <= 1
        assert (ratio == 1) == (best == gamma)
        optimal += [(task, model, temp)] if best == gamma else []
    assert optimal == [("CNNDM", "T5-small", 1), ("CNNDM", "T5-large", 1)]
