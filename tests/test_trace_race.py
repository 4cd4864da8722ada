"""specproof.trace.tracer on exponential races, Gumbel-max, and the small fixes of issue 19 (item 8).

The samplers are written here, in the shapes engines use: vLLM, SGLang and FlashInfer draw a
recovered token as ``argmax(w / E)`` with ``E = torch.empty_like(w).exponential_()``. Every law
is checked exactly (``==`` on Fractions); refusals are checked by type and message, with a small
``max_runs`` so that the test bounds the work instead of timing it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from fractions import Fraction as F

import pytest

torch = pytest.importorskip("torch")

from specproof.trace.tracer import (  # noqa: E402
    EXPONENTIAL_ZERO,
    ContinuousThreshold,
    NotPiecewiseConstant,
    SamplerRaised,
    UnmodelledRandomness,
    trace,
)


def t32(row):
    return torch.tensor([float(x) for x in row], dtype=torch.float32)


def exact_weights(row):
    """Fraction(w_i) / sum_j Fraction(w_j) over the positive float weights of a tensor row."""
    ws = [F(x) if x > 0 else F(0) for x in row.tolist()]
    total = sum(ws)
    return {i: w / total for i, w in enumerate(ws) if w}


def residual_race(p, q):
    """vLLM-style recovered token: the positive part of p - q, raced against exponential noise."""
    e = torch.empty_like(p)
    e.exponential_()
    return int(torch.clamp(p - q, min=0).div_(e).argmax(dim=-1))


# --------------------------------------------------------------------------- exact laws


def test_residual_race_is_the_normalized_positive_part_on_dyadic_rows():
    p, q = t32([F(1, 2), F(1, 4), F(1, 4), 0]), t32([F(1, 4), 0, F(1, 2), F(1, 4)])
    got = trace(residual_race, (p, q))
    assert got.law == {0: F(1, 2), 1: F(1, 2)}  # (p - q)+ = (1/4, 1/4, 0, 0)
    assert got.calls == ("Tensor.exponential_",)
    assert any("IDEALIZED" in a and "w_i / sum_j w_j" in a for a in got.assumptions)


def test_residual_race_on_float32_rows_uses_the_float_weights():
    p, q = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3])
    w = torch.clamp(p - q, min=0)  # float32 (0.4, 0, 0): one positive weight
    assert trace(residual_race, (p, q)).law == {0: F(1)} == exact_weights(w)
    p, q = torch.tensor([0.6, 0.3, 0.1, 0.0]), torch.tensor([0.3, 0.1, 0.2, 0.4])
    w = torch.clamp(p - q, min=0)  # the float32 differences, not exactly in ratio 3 : 2
    got = trace(residual_race, (p, q)).law
    assert got == exact_weights(w)
    assert got == {0: F(10066330, 16777217), 1: F(6710887, 16777217)}  # 3/5 and 2/5 up to float32 rounding


def test_zero_weights_never_win_and_the_default_id_is_the_first_positive():
    w = t32([0, F(1, 8), 0, F(3, 8), F(1, 2)])
    got = trace(lambda: int(torch.argmax(w / torch.empty_like(w).exponential_())))
    assert got.law == {1: F(1, 8), 3: F(3, 8), 4: F(1, 2)}
    assert got.runs == 3  # one run per category with positive weight (the first run is the default one's)


def test_a_race_with_one_scalar_dividend_is_uniform():
    got = trace(lambda: int(torch.argmax(1.0 / torch.empty(3).exponential_())))
    assert got.law == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}


def test_batched_races_are_one_race_per_row():
    w = torch.tensor([[0.5, 0.25, 0.25], [0.0, 0.0, 0.0], [0.0, 0.75, 0.25]])

    def rows():
        e = torch.empty_like(w).exponential_()
        return tuple(w.div(e).argmax(dim=-1).tolist())

    got = trace(rows).law
    first = {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    third = {1: F(3, 4), 2: F(1, 4)}
    # the all-zero row: w / E is 0 everywhere and argmax returns index 0, whatever E is
    assert got == {(a, 0, c): first[a] * third[c] for a in first for c in third}


def test_rows_the_noise_cannot_change_are_decided_by_the_codes_argmax():
    nan, inf = float("nan"), float("inf")
    w = torch.tensor([[0.5, nan, 0.5], [0.5, inf, inf], [-1.0, 0.0, -inf], [0.25, -inf, 0.75]])

    def rows():
        return tuple((w / torch.empty_like(w).exponential_()).argmax(-1).tolist())

    got = trace(rows).law
    assert got == {(1, 1, 1, 0): F(1, 4), (1, 1, 1, 2): F(3, 4)}  # a NaN, the first +inf, the max 0; -inf loses
    with pytest.raises(UnmodelledRandomness, match="only negative weights"):
        trace(lambda: int(torch.argmax(torch.tensor([-1.0, -2.0]) / torch.empty(2).exponential_())))


def test_vllm_per_request_redraw_of_a_row():
    # vLLM draws E for the batch, then again for the rows that have their own generator
    w = torch.tensor([[0.5, 0.5], [0.25, 0.75]])

    def rows(w):  # w is written in place, as engines do (trace passes a fresh copy to every run)
        e = torch.empty_like(w)
        e.exponential_()
        e[1].exponential_(generator=torch.Generator())
        return tuple(w.div_(e).argmax(dim=-1).view(-1).tolist())

    got = trace(rows, (w,)).law
    assert got == {(a, b): F(1, 2) * (F(1, 4) if b == 0 else F(3, 4)) for a in (0, 1) for b in (0, 1)}


def vllm_style_step(p, q):
    """One verification position per row, the way vLLM's rejection sampler computes it (our own code):
    the draft from q by an exponential race, a float32 coin, accept iff u < p/q, else the recovered
    token by a second race over (p - q)+ with fresh noise."""
    e = torch.empty_like(q).exponential_()
    x = q.div(e).argmax(dim=-1)  # [B] drafts
    px, qx = p.gather(-1, x[:, None])[:, 0], q.gather(-1, x[:, None])[:, 0]
    u = torch.rand(x.shape)
    accept = u < px / qx
    e2 = torch.empty_like(p).exponential_()
    recovered = torch.clamp(p - q, min=0).div_(e2).argmax(dim=-1)
    return tuple(torch.where(accept, x, recovered).tolist())


def test_a_full_vllm_style_rejection_sampler_is_exactly_lossless_on_float_rows():
    # float32 rows whose ratios p/q are multiples of 2^-24: the float32 coin is then exact
    p = torch.tensor([[0.5, 0.25, 0.25, 0.0], [0.125, 0.375, 0.0, 0.5]])
    q = torch.tensor([[0.25, 0.0, 0.5, 0.25], [0.25, 0.25, 0.25, 0.25]])
    got = trace(vllm_style_step, (p, q))
    row = [{i: F(x) for i, x in enumerate(r) if x} for r in p.tolist()]
    assert got.law == {(a, b): row[0][a] * row[1][b] for a in row[0] for b in row[1]}
    assert "Tensor.exponential_" in got.calls and "torch.rand" in got.calls


def test_a_vllm_style_sampler_off_the_coin_grid_shows_the_float_floor():
    # p/q = 1/3 at token 2 is not on the float32 grid: the law is the float32 coin's, not p
    p, q = torch.tensor([[0.625, 0.0, 0.125, 0.25]]), torch.tensor([[0.25, 0.25, 0.375, 0.125]])
    got = trace(vllm_style_step, (p, q)).law
    ratio = F((torch.tensor(0.125) / torch.tensor(0.375)).item())  # fl32(1/3), just above 1/3
    accept2 = F(-(-ratio.numerator * 2**24 // ratio.denominator), 2**24)  # ceil(2^24 fl32(1/3)) grid points
    assert got[(2,)] == F(3, 8) * accept2 != F(1, 8)
    assert sum(got.values()) == 1 and (1,) not in got


# --------------------------------------------------------------------------- the -0.0 edge


def test_what_the_code_does_when_e_holds_negative_zero():
    # pytorch #22557 / #192577: E_i = -0.0 makes 0 / E_i NaN, and argmax returns that zero-weight id;
    # at a positive weight w_i / -0.0 = -inf, and that id loses
    w = torch.tensor([0.5, 0.0, 0.5])
    assert int(torch.argmax(w / torch.tensor([1.0, -0.0, 2.0]))) == 1
    assert int(torch.argmax(w / torch.tensor([-0.0, 1.0, 2.0]))) == 2


def test_the_negative_zero_edge_as_an_explicit_option():
    w = t32([F(1, 2), 0, F(1, 2), 0])
    race = lambda: int(torch.argmax(w / torch.empty_like(w).exponential_()))  # noqa: E731
    assert trace(race).law == {0: F(1, 2), 2: F(1, 2)}  # the default: idealized, stated
    eps = EXPONENTIAL_ZERO
    assert eps == F(1, 2**53)
    got = trace(race, exponential_zeros=True)
    none = (1 - eps) ** 2  # neither zero-weight id has E = -0.0
    assert got.law == {0: none / 2, 1: eps, 2: none / 2, 3: eps * (1 - eps)}
    assert sum(got.law.values()) == 1
    assert any(a.startswith("exponential_zeros=True") for a in got.assumptions)


# --------------------------------------------------------------------------- refusals, named


@pytest.mark.parametrize(
    "run,match",
    [
        (
            lambda w: int(torch.argmax(torch.log(w) - torch.empty_like(w).exponential_().log_())),
            r"used by log_.*Gumbel variable",
        ),
        (lambda w: int(torch.argmax(torch.empty_like(w).exponential_().reciprocal() + w)), r"on E\.reciprocal\(\)"),
        (lambda w: int(torch.argmax(w * torch.empty_like(w).exponential_())), r"used by mul"),
        (lambda w: (torch.empty_like(w).exponential_(), 0)[1], r"never divided a weight tensor"),
        (lambda w: float((w / torch.empty_like(w).exponential_()).max()), r"quotient w / E.*used by max"),
        (lambda w: int(torch.multinomial(w / torch.empty_like(w).exponential_(), 1)), r"quotient w / E.*multinomial"),
    ],
)
def test_other_uses_of_the_exponential_noise_are_refused_by_name(run, match):
    with pytest.raises(UnmodelledRandomness, match=match):
        trace(run, (torch.tensor([0.5, 0.25, 0.25]),), max_runs=10)


def test_correlated_or_flattened_races_are_refused():
    w = torch.tensor([[0.5, 0.5], [0.25, 0.75]])

    def reuse():
        e = torch.empty_like(w).exponential_()
        return int((w / e).argmax(-1)[0]), int((w.flip(0) / e).argmax(-1)[0])

    with pytest.raises(UnmodelledRandomness, match="divides a second weight tensor.*race-reuse"):
        trace(reuse, max_runs=10)
    with pytest.raises(UnmodelledRandomness, match="argmax over the last dimension"):
        trace(lambda: int((w / torch.empty_like(w).exponential_()).argmax()), max_runs=10)
    with pytest.raises(UnmodelledRandomness, match="broadcasts E of shape"):
        trace(lambda: tuple((w / torch.empty(2).exponential_()).argmax(-1).tolist()), max_runs=10)


def gumbel_max(w):
    u = torch.rand(w.shape)
    return int(torch.argmax(torch.log(w) - torch.log(-torch.log(u))))


def test_gumbel_max_on_uniforms_is_traced_as_a_race_and_other_forms_named_on_the_first_run():
    w = torch.tensor([0.5, 0.25, 0.25])
    assert trace(gumbel_max, (w,)).law == {
        0: F(1, 2),
        1: F(1, 4),
        2: F(1, 4),
    }  # a race in disguise: see test_trace_gumbel
    with pytest.raises(
        ContinuousThreshold,
        match=r"argmax orders values computed from 3 different uniforms "
        r"\(Gumbel-max.*torch\.multinomial.*exponential_",
    ):
        trace(
            lambda w: int(torch.argmax(torch.log(w) - torch.log(-torch.log(torch.rand(w.shape))) ** 3)),
            (w,),
            max_runs=1,
        )
    assert issubclass(ContinuousThreshold, NotPiecewiseConstant)

    def gumbel_uniform_(w):  # the same with Tensor.uniform_ on a buffer, batched, and sort instead of argmax
        u = torch.empty(2, 3).uniform_(1e-6, 1.0)
        return tuple(torch.sort(w - torch.log(-torch.log(u)), dim=-1, descending=True).indices[:, 0].tolist())

    with pytest.raises(ContinuousThreshold, match=r"sort orders values computed from 6 different uniforms"):
        trace(gumbel_uniform_, (torch.log(w),), max_runs=1)


def test_gumbel_max_outside_torch_is_named_by_the_piece_search():
    import math

    w = [0.5, 0.25, 0.25]

    def gumbel_in_python():  # the uniforms leave torch as floats: only the piece search can see it
        u = torch.rand(3).tolist()
        return max(range(3), key=lambda i: math.log(w[i]) - math.log(-math.log(u[i])) if u[i] else -math.inf)

    with pytest.raises(
        ContinuousThreshold,
        match=r"law of the rest of the run changes at each of 32 consecutive "
        r"grid points.*Gumbel-max",
    ):
        trace(gumbel_in_python, max_runs=3000)


def test_a_uniform_through_continuous_ops_against_row_thresholds_still_traces():
    # log-space and scaled accept tests compare one uniform with a threshold from the rows: exact
    p, q = torch.tensor([0.5, 0.25]), torch.tensor([0.25, 0.5])

    def log_coin():
        return int(torch.log(torch.rand(())) < torch.log(p[1]) - torch.log(q[1]))

    def scaled_coin():
        return int(torch.rand(()) * q[1] < p[1])

    assert trace(log_coin).law == {0: F(1, 2), 1: F(1, 2)}
    assert trace(scaled_coin).law == {0: F(1, 2), 1: F(1, 2)}
    assert trace(lambda: tuple((torch.rand(2) < torch.tensor([0.5, 0.25])).tolist())).law[(True, True)] == F(1, 8)


# --------------------------------------------------------------------------- item 8


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.25])
def test_invalid_multinomial_weights_raise_like_torch(bad):
    w = torch.tensor([0.5, bad, 0.25])
    with pytest.raises(RuntimeError):
        torch.multinomial(w, 1)  # torch itself raises
    with pytest.raises(SamplerRaised, match=r"torch\.multinomial: weight 1 is .*, not a finite number >= 0"):
        trace(lambda: int(torch.multinomial(w, 1)))


def test_a_numpy_sampler_does_not_import_torch():
    code = textwrap.dedent("""
        import sys
        from specproof.trace.tracer import trace
        def coin(rng):
            return int(rng.random() < 0.25)
        law = trace(coin, numpy_rng="rng").law
        assert law == {0: 0.75, 1: 0.25}, law
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_race_mode_class_is_built_once_and_each_mode_holds_its_run():
    from specproof.trace.core import _Run
    from specproof.trace.sources.torch_mode import _race_mode

    first, second = _Run(()), _Run(())
    a, b = _race_mode(first), _race_mode(second)
    assert type(a) is type(b)
    assert isinstance(a, torch.overrides.TorchFunctionMode)
    assert (a.run, b.run) == (first, second)


def test_a_sampler_that_imports_torch_during_the_run_is_still_intercepted():
    code = textwrap.dedent("""
        import sys
        from specproof.trace.tracer import trace
        def coin():
            import torch
            return int(torch.rand(()) < 0.25)
        assert "torch" not in sys.modules
        print(trace(coin).law)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "{0: Fraction(3, 4), 1: Fraction(1, 4)}"


def test_a_minus_inf_weight_wins_when_its_e_is_negative_zero():
    # -inf / -0.0 = +inf: with exponential_zeros, a -inf-weight id wins w.p. 2^-53 (pytorch #192577's edge at a
    # masked weight); a NaN (0 / -0.0) still beats it, as torch.argmax returns the first NaN before any +inf
    eps, inf = EXPONENTIAL_ZERO, float("inf")

    def race(w):
        return int(torch.argmax(w / torch.empty_like(w).exponential_()))

    w = torch.tensor([0.5, -inf, 0.5])
    assert trace(race, (w,)).law == {0: F(1, 2), 2: F(1, 2)}  # idealized: -inf loses
    assert trace(race, (w,), exponential_zeros=True).law == {1: eps, 0: (1 - eps) / 2, 2: (1 - eps) / 2}
    w = torch.tensor([0.0, -inf, 1.0])
    assert trace(race, (w,), exponential_zeros=True).law == {0: eps, 1: (1 - eps) * eps, 2: (1 - eps) ** 2}
    w = torch.tensor([0.0, -inf])  # no positive weight: without a -0.0, 0 / E = 0 wins
    assert trace(race, (w,), exponential_zeros=True).law == {0: 1 - (1 - eps) * eps, 1: (1 - eps) * eps}
    assert trace(race, (w,)).law == {0: F(1)}


# --------------------------------------------------------------------------- vLLM V1's recovered-token form (issue 33)


def vllm_v1_recovered(target, draft, draft_id):
    """A stand-alone torch function of the form vLLM V1's sample_recovered_tokens has (not its code): the noise
    q.exponential_(), inv_q = q.reciprocal(), then argmax of prob * inv_q over the residual max(p - q, 0)."""
    prob = torch.clamp(target - draft, min=0)
    q = torch.empty_like(prob)
    q.exponential_()
    inv_q = q.reciprocal()
    return int(torch.argmax(prob * inv_q, dim=-1))


def vllm_v1_step(target, draft):
    """Draft, a float64 coin accepting when p/q >= u (vLLM V1's test), else the recovered token."""
    x = int(torch.multinomial(draft, 1))
    if target[x] / draft[x] >= torch.rand((), dtype=torch.float64):
        return x
    return vllm_v1_recovered(target, draft, x)


def test_the_reciprocal_race_is_the_exponential_race():
    p = t32([0.5, 0.25, 0.25, 0.0])
    q = t32([0.25, 0.0, 0.5, 0.25])
    got = trace(vllm_v1_recovered, (p, q, 0))
    assert got.law == {0: F(1, 2), 1: F(1, 2)}  # the residual (1/4, 1/4, 0, 0), normalized
    divided = trace(
        lambda a, b: int(torch.argmax(torch.clamp(a - b, min=0) / torch.empty_like(a).exponential_(), dim=-1)), (p, q)
    )
    assert got.law == divided.law
    assert got.calls == ("Tensor.exponential_",)


def test_the_reciprocal_race_batched_and_in_float64():
    w = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.25, 0.75]], dtype=torch.float64)

    def batched(w):
        inv = torch.empty_like(w).exponential_().reciprocal()
        return tuple(torch.argmax(w * inv, dim=-1).tolist())

    law = trace(batched, (w,)).law
    assert law == {(0, 1): F(1, 8), (0, 2): F(3, 8), (1, 1): F(1, 8), (1, 2): F(3, 8)}
    assert trace(
        lambda w: int(torch.argmax(w[1].mul(torch.empty_like(w[1]).exponential_().reciprocal()))), (w,)
    ).law == {1: F(1, 4), 2: F(3, 4)}


def test_a_vllm_v1_form_rejection_sampler_is_traced_with_the_right_verdict():
    from specproof.trace.testing import compare

    result = compare(vllm_v1_step, t32([0.5, 0.25, 0.25]), t32([0.25, 0.25, 0.5]))
    # p/q >= u accepts token 2 (ratio 1/2) at u = 1/2 too: the float floor of the <= member, 2^-54
    assert result.verdict == "float-faithful" and result.tv == F(1, 2**54), result.report()
    assert "u <= fl32(p/q)" in result.arithmetic and "float64 coin" in result.arithmetic
    # a target that misses a drafted token: p/q = 0 >= u at u = 0 accepts it, 2^-53 of a float64 coin per draft
    result = compare(vllm_v1_step, t32([0.5, 0.5, 0.0]), t32([0.25, 0.25, 0.5]))
    assert result.verdict == "lossy" and result.outside_support == F(1, 2) * F(1, 2**53)


def test_the_reciprocal_used_twice_or_otherwise_is_refused():
    def twice(w):
        inv = torch.empty_like(w).exponential_().reciprocal()
        return int(torch.argmax(w * inv)), int(torch.argmax(w * inv))

    with pytest.raises(UnmodelledRandomness, match="divides a second weight tensor"):
        trace(twice, (t32([0.5, 0.5]),))
    with pytest.raises(UnmodelledRandomness, match="quotient w / E.*used by max"):
        trace(lambda w: float((w * torch.empty_like(w).exponential_().reciprocal()).max()), (t32([0.5, 0.5]),))
