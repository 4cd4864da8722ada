"""Float mirrors of multi-draft and token-tree verification at one position (issue 13, item 7)."""

import json
from fractions import Fraction as F

import numpy as np
import pytest

from specproof.certify.crosscheck import crosscheck_variants
from specproof.cli import main
from specproof.errors import InvalidDistribution
from specproof.laws import numeric, variants


def test_multidraft_by_hand():
    # p = (1/2, 1/4, 1/4), q = (1/4, 1/4, 1/2): draft 1 accepted with alpha = 3/4; the residual
    # (1/4, 0, 0)/(1/4) = (1, 0, 0) accepts draft 2 iff it is token 0: (1/4)(1/4) = 1/16
    dist, acc, at = numeric.multidraft_law([0.5, 0.25, 0.25], [0.25, 0.25, 0.5], 2)
    assert dist.tolist() == [0.5, 0.25, 0.25] and float(acc) == 13 / 16 and at.tolist() == [0.75, 1 / 16]


def _exact(row):
    values = [F(x) for x in row.tolist()]
    return [x / sum(values) for x in values]


def test_multidraft_batched_equals_rows_and_the_exact_law():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(7), size=(2, 3)), rng.dirichlet(np.ones(7) * 0.3, size=(2, 3))
    dist, acc, at = numeric.multidraft_law(p, q, 3)
    assert dist.shape == (2, 3, 7) and acc.shape == (2, 3) and at.shape == (2, 3, 3)
    for i in range(2):
        for j in range(3):
            one = numeric.multidraft_law(p[i, j], q[i, j], 3)
            assert np.array_equal(one[0], dist[i, j]) and float(one[1]) == acc[i, j]
            exact = variants.multidraft_law(_exact(p[i, j]), _exact(q[i, j]), 3)
            assert abs(F(float(acc[i, j])) - exact.acceptance) < 1e-15


def test_siblings_by_hand_with_a_repeated_child():
    # children 2, 0, 2 under p = (1/2, 1/4, 1/4): child 2 accepted w.p. 1/4, then 0 w.p. 1/2, then 2 never
    dist, acc, at = numeric.sibling_law([0.5, 0.25, 0.25], [2, 0, 2])
    assert float(acc) == 0.75 and at.tolist() == [0.25, 0.5, 0.0] and dist.tolist() == [0.5, 0.25, 0.25]
    tree = variants.sibling_tree(["1/2", "1/4", "1/4"], [2, 0, 2])
    assert tree.accept_probability() == F(3, 4)


def test_bad_inputs_are_refused():
    with pytest.raises(InvalidDistribution, match="k"):
        numeric.multidraft_law([0.5, 0.5], [0.5, 0.5], 0)
    with pytest.raises(InvalidDistribution):
        numeric.multidraft_law([0.5, 0.6], [0.5, 0.5], 2)
    with pytest.raises(InvalidDistribution, match="outside"):
        numeric.sibling_law([0.5, 0.5], [2])
    with pytest.raises(InvalidDistribution, match="integer ids"):
        numeric.sibling_law([0.5, 0.5], [0.5])


def test_crosscheck_variants_within_bound(capsys):
    report = crosscheck_variants(60, seed=1)
    assert report.passed and report.acceptance.error <= 1e-15
    assert main(["crosscheck", "--variants", "20", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "variants" and out["passed"] is True and out["pairs"] == 20
    assert main(["crosscheck", "--variants", "0"]) == 2
