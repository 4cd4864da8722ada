"""specproof.rules.libm (a library's own log and exp as data) and the log-space accept tests of the
float-ideal family: a correct log-space sampler is float-faithful, a buggy one lossy."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from specproof.errors import SpecProofError
from specproof.laws.outcome import FLOAT32 as COIN32
from specproof.laws.outcome import coin_model
from specproof.rules import libm
from specproof.rules.audit import position_law
from specproof.rules.faithful import FAMILY, judge, member_law
from specproof.rules.policy import Arithmetic, Rule, UnsupportedRule, rule_from_dict


def test_log_row_is_numpys_own_result():
    row = (F(1), F(1, 2), F(0))
    with np.errstate(divide="ignore"):
        want = np.log(np.array([1.0, 0.5, 0.0]))
    got = libm.log_row("numpy", "float64", row)
    assert got[0] == 0 and got[1] == F(float(want[1])) and got[2] == -math.inf


def test_exp_value_overflow_and_minus_infinity():
    assert libm.exp_value("numpy", "float32", F(100)) == math.inf
    assert libm.exp_value("numpy", "float32", -math.inf) == 0
    assert libm.exp_value("numpy", "float64", F(0)) == 1


def test_log_coin_count_float64_grid_edges():
    n = 1 << 53
    # log(u) < 0 holds for every coin on [0, 1) and every coin but u = 1 on (0, 1]
    assert libm.log_coin_count("numpy", 53, False, F(0), "<") == n
    assert libm.log_coin_count("numpy", 53, True, F(0), "<") == n - 1
    assert libm.log_coin_count("numpy", 53, True, F(0), "<=") == n
    # log(0) = -inf: only u = 0 passes <= -inf, nothing passes < -inf, NaN passes nothing
    assert libm.log_coin_count("numpy", 53, False, -math.inf, "<=") == 1
    assert libm.log_coin_count("numpy", 53, False, -math.inf, "<") == 0
    assert libm.log_coin_count("numpy", 53, False, math.nan, "<=") == 0


def test_log_coin_count_float32_grid_counts_every_point():
    torch = pytest.importorskip("torch")
    n = 1 << 24
    t = F(float(torch.log(torch.tensor(0.5))))  # torch's fl32 log(1/2): the coins below 1/2 pass, 1/2 does not
    grid = torch.arange(n, dtype=torch.float64).div(n).float()
    want = int((torch.log(grid) < torch.tensor(float(t))).sum())
    assert libm.log_coin_count("torch", 24, False, t, "<") == want == n // 2
    want_le = int((torch.log(grid) <= torch.tensor(float(t))).sum())
    assert libm.log_coin_count("torch", 24, False, t, "<=") == want_le == n // 2 + 1


def test_numpy_float32_coin_rounding_is_nep50():
    assert libm.rounds_python_coin("numpy", "float32") == (int(np.__version__.split(".")[0]) >= 2)
    assert not libm.rounds_python_coin("torch", "float32")


def test_arithmetic_log_forms_need_a_library_and_a_grid():
    with pytest.raises(UnsupportedRule, match="library must be one of"):
        Arithmetic("float32", "log")
    with pytest.raises(UnsupportedRule, match="float32 or float64, not float16"):
        Arithmetic("float16", "exp", library="torch")
    assert (
        Arithmetic("float32", "ratio", library="torch").describe("<")
        == "u < fl32(p/q), residual fl32(max(p - q, 0)) as weights"
    )  # its sums: a processed row's (the audit says so)
    with pytest.raises(UnsupportedRule, match="numpy's sum is evaluated in float32, float64, not float16"):
        Arithmetic("float16", "ratio", "divide", "numpy")
    with pytest.raises(UnsupportedRule, match="library must be one of torch, numpy or None, not 'jax'"):
        Arithmetic("float32", "ratio", "divide", "jax")
    assert (
        Arithmetic("bfloat16", "product", "divide", "torch").describe("<")
        == "flbf16(u * q) < p, residual flbf16(max(p - q, 0)) divided by its torch flbf16 sum"
    )
    with pytest.raises(UnsupportedRule, match="needs a float32 or float64 grid coin"):
        Rule(arithmetic=Arithmetic("float32", "log", library="numpy"))
    rule = rule_from_dict({"coin": "float32", "arithmetic": {"dtype": "float32", "test": "log", "library": "torch"}})
    assert rule.arithmetic == Arithmetic("float32", "log", "none", "torch")
    assert rule_from_dict(rule.as_dict()) == rule


def test_log_space_caveat_says_library_results_are_data():
    arith = Arithmetic("float64", "log", "divide", "numpy")
    text = " ".join(arith.caveats(3, coin_model("float64")))
    assert "not modelled" in text and "numpy" in text and "this machine" in text and "monotone" in text
    assert Arithmetic("float32").caveats(3) == []


def test_family_has_the_log_space_members():
    forms = {(m.rule.arithmetic.library, m.rule.arithmetic.test) for m in FAMILY}
    assert {("torch", "log"), ("torch", "exp"), ("numpy", "log"), ("numpy", "exp")} <= forms
    assert sum(m.rule.arithmetic.library == "torch" and m.rule.arithmetic.test in ("log", "exp") for m in FAMILY) == 64
    assert sum(m.rule.arithmetic.library == "numpy" and m.rule.arithmetic.test in ("log", "exp") for m in FAMILY) == 16


def test_family_has_the_library_sum_members():
    # the residual divided by r.sum() of PyTorch (every format) and of NumPy (float64; float32 with NEP 50's coin)
    sums = [
        m.rule.arithmetic
        for m in FAMILY
        if m.rule.arithmetic.test in ("ratio", "product") and m.rule.arithmetic.library is not None
    ]
    assert {(a.library, a.dtype) for a in sums} == {
        ("torch", d) for d in ("float16", "bfloat16", "float32", "float64")
    } | {("numpy", "float64"), ("numpy", "float32")}
    assert all(a.normalization == "divide" for a in sums)
    assert sum(a.library == "torch" for a in sums) == 4 * 2 * 2 * 4  # dtypes x tests x comparisons x coins


def _random_rows(dtype, n, v, seed):
    rng = np.random.default_rng(seed)
    return [tuple(F(float(x)) for x in (rng.random(v) ** 3).astype(dtype)) for _ in range(n)]


@pytest.mark.parametrize("library", ["torch", "numpy"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_value_is_the_librarys_own_sum(library, dtype):
    mod = pytest.importorskip(library)
    for row in _random_rows(dtype, 60, 16, 3):
        arr = [float(x) for x in row]
        own = (
            mod.tensor(arr, dtype=getattr(mod, dtype)).sum() if library == "torch" else np.array(arr, dtype=dtype).sum()
        )
        assert libm.sum_value(library, dtype, row) == F(float(own))


def test_a_missing_librarys_sum_is_modelled_left_to_right_and_said_so(monkeypatch):
    from specproof.laws.floats import FORMATS
    from specproof.rules.policy import named_rule

    def unavailable(library):
        raise libm.LibraryUnavailable(f"{library} is not installed (a test)")

    monkeypatch.setattr(libm, "_module", unavailable)
    arith = Arithmetic("float32", "ratio", "divide", "torch")
    row = _random_rows("float32", 1, 16, 5)[0]
    assert libm.row_sum("torch", "float32", row, FORMATS["float32"].sum(row)) == FORMATS["float32"].sum(row)
    assert arith.caveats(4) == []
    assert arith.caveats(16) == [
        "torch cannot be imported here: the residual's float32 sum is modelled left to right, "
        "which is not torch's order at V = 16, so the law may differ from the code's by an "
        "ulp's worth of the residual"
    ]
    p, q = _random_rows("float32", 2, 6, 7)
    rule = named_rule("le-float32-coin")
    modelled = Rule(comparison="<=", coin=rule.coin, arithmetic=Arithmetic("float32", "ratio", "divide"))
    assert position_law(p, q, rule).law == position_law(p, q, modelled).law


def test_sum_value_refuses_what_it_does_not_evaluate():
    with pytest.raises(SpecProofError, match="numpy's sum is evaluated in float32, float64, not 'bfloat16'"):
        libm.sum_value("numpy", "bfloat16", (F(1),))
    with pytest.raises(SpecProofError, match="library 'jax' is not one of torch, numpy"):
        libm.sum_value("jax", "float32", (F(1),))
    for bad in (F(10**400), None, float("nan"), float("inf"), "one half"):
        with pytest.raises(
            SpecProofError, match=r"row\[1\] is .*: a sum is evaluated on finite floats of float64 only"
        ):
            libm.sum_value("numpy", "float64", (F(1, 2), bad))


def test_exp_form_on_a_ratio_of_one_accepts_every_coin_below_exp_zero():
    # p(x) == q(x): fl(log p - log q) = 0 exactly, exp(0) = 1, so u < 1 accepts every [0, 1) coin
    rule = Rule(coin=COIN32, arithmetic=Arithmetic("float32", "exp", library="numpy"))
    law = position_law([0.5, 0.25, 0.25], [0.5, 0.25, 0.25], rule)
    assert law.law == (F(1, 2), F(1, 4), F(1, 4)) and law.alpha == 1


# ------------------------------------------------------------------ verdicts on log-space samplers

torch = pytest.importorskip("torch")

from specproof.trace.testing import compare  # noqa: E402

# a row on which torch's log-space tests give laws that no ratio or product member has (found by a search
# over p, q with denominators up to 18): the verdict needs the log-space members
P = torch.tensor([0.1875, 0.375, 0.4375])
Q = torch.tensor([2 / 9, 5 / 18, 0.5], dtype=torch.float32)


def _log_sampler(test, cmp="<", swapped=False):
    def run(p, q):
        x = int(torch.multinomial(q.double(), 1))
        u = torch.rand(())
        lp, lq = torch.log(p), torch.log(q)
        d = (lq[x] - lp[x]) if swapped else (lp[x] - lq[x])
        a, b = (torch.log(u), d) if test == "log" else (u, torch.exp(d))
        if bool(a < b) if cmp == "<" else bool(a <= b):
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0).double(), 1))

    return run


@pytest.mark.parametrize("test", ["log", "exp"])
def test_a_correct_log_space_sampler_is_float_faithful(test):
    result = compare(_log_sampler(test), P, Q)
    assert result.verdict == "float-faithful" and result.tv_from_float_ideal == 0
    member = next(m for m in FAMILY if m.name == result.arithmetic)  # a torch log-space member (log and exp agree here)
    assert member.rule.arithmetic.library == "torch" and member.rule.arithmetic.test in ("log", "exp")
    assert member.rule.arithmetic.dtype == "float32" and member.rule.comparison == "<"
    assert result.tv == position_law(P, Q, member.rule).tv > 0
    assert any("not modelled" in c for c in result.caveats)
    # without the log-space members, the same law is lossy: no ratio or product arithmetic computes it
    plain = [m for m in FAMILY if m.rule.arithmetic.library is None]
    assert judge(result.law, P, Q, family=plain).verdict == "lossy"


def test_a_log_space_sampler_with_swapped_rows_is_lossy():
    result = compare(_log_sampler("log", swapped=True), P, Q)
    assert result.verdict == "lossy" and result.tv_from_float_ideal > F(1, 100)


def test_log_space_le_accepts_a_drafted_zero_probability_token():
    # log(0) = -inf <= log 0 - log q = -inf: the coin u = 0 (probability 2^-24) accepts token 2, p(2) = 0
    p, q = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.25, 0.25, 0.5])
    result = compare(_log_sampler("log", "<="), p, q)
    assert result.verdict == "lossy" and result.outside_support == F(1, 2) * F(1, 2**24)
    member = next(m for m in FAMILY if m.name == result.arithmetic)  # the law is a member's: the fault is the support
    assert result.tv_from_float_ideal == 0 and member.rule.comparison == "<="


def test_numpy_only_judgement_does_not_use_torch_members(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "torch")
    p, q = np.array([0.5, 0.25, 0.25]), np.array([0.375, 0.375, 0.25])
    law = member_law(next(m for m in FAMILY if m.rule.arithmetic.library is None), p, q)
    j = judge(law, p, q)
    assert j.verdict == "float-faithful" and not any("torch" in c for c in j.caveats)
    assert "torch" not in sys.modules


def test_a_numpy_float32_textbook_sampler_is_float_faithful():
    # rng.random() is a Python float; NumPy >= 2 rounds it to float32 where it meets p[x] / q[x] (NEP 50), a law
    # that no exactly-promoted member has
    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip("NEP 50 scalar promotion is NumPy >= 2")

    def run(p, q, rng):
        x = int(rng.choice(len(q), p=q.astype(np.float64)))
        if rng.random() < p[x] / q[x]:
            return x
        w = np.maximum(p - q, 0)
        return int(rng.choice(len(p), p=w / w.sum()))

    p, q = np.array([0.6, 0.3, 0.1], dtype=np.float32), np.array([0.2, 0.5, 0.3], dtype=np.float32)
    result = compare(run, p, q, numpy_rng="rng")
    assert result.verdict == "float-faithful" and result.tv_from_float_ideal == 0
    assert result.arithmetic.startswith("fl32(u) < fl32(p/q) (numpy: a Python-float coin)")
    assert any("NEP 50" in c for c in result.caveats) and not any("log and exp" in c for c in result.caveats)
    plain = [m for m in FAMILY if m.rule.arithmetic.library is None]
    assert judge(result.law, p, q, family=plain).verdict == "lossy"
