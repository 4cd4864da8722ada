"""specproof.trace.testing: assert_lossless / assert_law on traced samplers, with exact failure messages."""

from __future__ import annotations

import re
from fractions import Fraction as F

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from specproof.errors import InvalidDistribution, SpecProofError  # noqa: E402
from specproof.rules.audit import position_law  # noqa: E402
from specproof.rules.policy import named_rule  # noqa: E402
from specproof.trace.testing import assert_law, assert_lossless, compare, law_difference, search_lossy  # noqa: E402
from specproof.trace.tracer import UnmodelledRandomness  # noqa: E402

P = torch.tensor([0.5, 0.25, 0.25, 0.0])
Q = torch.tensor([0.25, 0.0, 0.5, 0.25])
# ratio 1/3 at token 3: not on the float32 grid
P_OFF = torch.tensor([0.625, 0.0, 0.25, 0.125])
Q_OFF = torch.tensor([0.25, 0.25, 0.125, 0.375])


def textbook(p, q):
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def le_coin(p, q):
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) <= p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def test_a_lossless_sampler_passes():
    traced = assert_lossless(textbook, P, Q)
    assert traced.law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}


def test_the_float32_textbook_sampler_is_float_faithful_and_float_floor_fail_fails_it():
    result = assert_lossless(textbook, P_OFF, Q_OFF)  # float_floor="allow" by default
    want = position_law([F(x) for x in P_OFF.tolist()], [F(x) for x in Q_OFF.tolist()], named_rule("lt-float32-coin"))
    assert result.verdict == "float-faithful" and result.tv == want.tv and result.tv_from_float_ideal == 0
    assert result.arithmetic == "u < fl32(p/q), residual fl32(max(p - q, 0)) as weights, float32 coin on [0, 1)"
    with pytest.raises(AssertionError) as info:
        assert_lossless(textbook, P_OFF, Q_OFF, float_floor="fail")
    message = str(info.value)
    assert message.startswith(
        "the sampler is not lossless (float_floor='fail'): verdict: FLOAT-FAITHFUL; TV from "
        f"the target's law {float(want.tv):.6g} ({want.tv.numerator}/{want.tv.denominator})"
    )
    assert "its float floor" in message and len(message.splitlines()) <= 20
    assert_lossless(textbook, P_OFF, Q_OFF, float_floor="fail", max_tv=1e-7)  # a stated tolerance passes it
    with pytest.raises(SpecProofError, match="float_floor"):
        assert_lossless(textbook, P_OFF, Q_OFF, float_floor="maybe")


def test_le_coin_emits_a_token_the_target_never_wants():
    # token 1: p = 0, q = 1/4, accepted when the coin is 0: lossy although a family member has this law
    result = compare(le_coin, P_OFF, Q_OFF)
    assert result.verdict == "lossy" and result.tv_from_float_ideal == 0
    assert result.outside_support == F(1, 4) * F(1, 2**24) and result.law[1] == F(1, 2**26)
    with pytest.raises(AssertionError) as info:
        assert_lossless(le_coin, P_OFF, Q_OFF)
    assert re.search(r"^    1 +\+1.49e-08  1.49012e-08 \(1/67108864\)  0$", str(info.value), re.M)
    assert "mass on outputs the target gives probability 0 (or invalid ids): 1.49012e-08 (1/67108864)" in str(
        info.value
    )
    # the member it equals is named, and not called correct: the verdict line gives the reason
    assert "exactly, but that arithmetic emits tokens the target gives probability 0: always a fault" in str(info.value)
    assert "nearest correct float implementation" not in str(info.value)


def test_out_of_range_output_is_shown():
    def off_by_one(p, q):
        return int(torch.multinomial(p, 1)) + 1

    result = compare(off_by_one, torch.tensor([0.5, 0.5]), None)
    assert result.verdict == "lossy" and result.tv == F(1, 2) and result.outside_support == F(1, 2)
    with pytest.raises(AssertionError) as info:
        assert_lossless(off_by_one, torch.tensor([0.5, 0.5]), None)
    assert "TV from the target's law 0.5 (1/2)" in str(info.value)
    assert re.search(r"^    2 +\+0.5  0.5 \(1/2\)  0$", str(info.value), re.M)


def test_assert_law_with_a_sequence_and_a_mapping():
    coin = lambda: int(torch.rand(()) < 0.25)  # noqa: E731
    assert_law(coin, ["3/4", "1/4"])
    assert_law(coin, {0: F(3, 4), 1: 0.25})
    with pytest.raises(AssertionError, match=r"exact TV = 0.25 \(1/4\); .*\n.*\n  0 +0.75 \(3/4\) +0.5 \(1/2\)"):
        assert_law(coin, {0: "1/2", 1: "1/2"})


def _block(p_rows, q_rows):
    """gamma = 2 speculative block with a float32 coin and <=, as transformers writes it."""
    out = []
    for i in range(2):
        p, q = p_rows[i], q_rows[i]
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) <= p[x] / q[x]:
            out.append(x)
            continue
        out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
        return tuple(out)
    return (*out, int(torch.multinomial(p_rows[2], 1)))


def test_blocks_are_judged_on_the_stream():
    same = torch.tensor([[0.25] * 4] * 3)
    assert assert_lossless(_block, same, same[:2]).verdict == "lossless"
    target = torch.tensor([[0.5, 0.5, 0.0, 0.0]] * 3)
    result = compare(_block, target, same[:2])
    # <= accepts a drafted p = 0 token when the coin is 0: float arithmetic of a member, but a fault
    assert result.verdict == "lossy" and result.tv == F(3, 67108864) and result.outside_support == F(3, 67108864)
    assert result.gamma == 2 and result.tv_from_float_ideal == 0
    assert all(len(seq) == 3 for seq, _, _ in result.differing)  # the joint law, not marginals
    with pytest.raises(AssertionError, match=r"TV from the target's law 4.47035e-08 \(3/67108864\)"):
        assert_lossless(_block, target, same[:2])


def test_unmodelled_randomness_propagates():
    with pytest.raises(UnmodelledRandomness, match="torch.randn"):
        assert_lossless(lambda p, q: int(torch.randn(()) > 0), P, Q, statistical=False)


def test_law_difference():
    tv, diff = law_difference({0: F(1, 2), 2: F(1, 2)}, {0: F(1, 2), 1: F(1, 2)})
    assert tv == F(1, 2) and {d[0] for d in diff} == {1, 2}


def test_the_readme_example_values():
    # docs/tracing.md: the textbook code with a float32 coin, p/q = 1/3 at token 3
    traced = assert_law(
        textbook, {0: "167772157/268435456", 2: "67108863/268435456", 3: "8388609/67108864"}, args=(P_OFF, Q_OFF)
    )
    assert traced.runs == 24  # the coin's thresholds read from its comparisons (53 runs by bisection)
    assert (
        assert_law(
            textbook,
            {0: "167772157/268435456", 2: "67108863/268435456", 3: "8388609/67108864"},
            args=(P_OFF, Q_OFF),
            read_thresholds=False,
        ).runs
        == 53
    )
    result = assert_lossless(textbook, P_OFF, Q_OFF)
    assert result.verdict == "float-faithful" and result.tv == F(1, 67108864)


def test_statistical_fallback_for_an_untraceable_sampler():
    # a race whose noise is scaled first (Exponential(rate).sample() divides E by the rate) is not traced:
    # assert_lossless tests it statistically
    def race(p, q):
        return int(torch.argmax(p / torch.distributions.Exponential(torch.ones(len(p))).sample()))

    with pytest.raises(UnmodelledRandomness, match="pass statistical=True"):  # never silently statistical
        assert_lossless(race, torch.tensor([0.5, 0.5]), None)
    torch.manual_seed(0)
    result = assert_lossless(race, torch.tensor([0.5, 0.5]), None, eps=0.2, statistical=True)
    assert result.conforms and result.n < 1000

    def biased(p, q):
        return int(torch.argmax(q / torch.distributions.Exponential(torch.ones(len(q))).sample()))

    with pytest.raises(AssertionError, match="statistical test.*Tensor.exponential_.*p-value"):
        assert_lossless(biased, torch.tensor([0.5, 0.5]), torch.tensor([0.9, 0.1]), eps=0.2, statistical=True)
    with pytest.raises(UnmodelledRandomness):
        assert_lossless(race, torch.tensor([0.5, 0.5]), None, statistical=False)


# --------------------------------------------------------------------- compare: verdicts of issue 19


def test_the_issues_float32_textbook_sampler_is_float_faithful():
    p, q = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3])
    result = compare(textbook, p, q)
    want = position_law(p, q, named_rule("lt-float32-coin"))  # the rule computes the float32 code's law
    assert result.verdict == "float-faithful" and result.tv == want.tv and 0 < result.tv < F(1, 10**8)
    assert result.tv_from_float_ideal == 0 and result.outside_support == 0

    # the same rows in float64 with a float64 coin: a float floor of about 1e-17
    def textbook64(p, q):
        x = int(torch.multinomial(q, 1))
        if torch.rand((), dtype=torch.float64) < p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    p64, q64 = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64), torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    result64 = compare(textbook64, p64, q64)
    assert result64.verdict == "float-faithful" and result64.tv < F(1, 10**16)
    assert result64.arithmetic.startswith("u < fl64(p/q)") and "float64 coin on [0, 1)" in result64.arithmetic


def _np_chain(p_rows, q_rows, rng, resample="residual"):
    out = []
    for i in range(2):
        p, q = p_rows[i], q_rows[i]
        x = int(rng.choice(len(q), p=q))
        if rng.random() < p[x] / q[x]:
            out.append(x)
            continue
        w = p if resample == "target" else np.maximum(p - q, 0)
        out.append(int(rng.choice(len(p), p=w / w.sum())))
        return tuple(out)
    return (*out, int(rng.choice(len(p_rows[2]), p=p_rows[2])))


def test_a_numpy_chain_that_resamples_from_p_is_lossy_by_one_eighth():
    P, Q = np.array([[0.5, 0.25, 0.25]] * 3), np.array([[0.25, 0.25, 0.5]] * 2)
    wrong = compare(lambda p, q, rng: _np_chain(p, q, rng, "target"), P, Q, numpy_rng="rng")
    assert wrong.gamma == 2 and wrong.verdict == "lossy" and wrong.tv == F(1, 8)
    # a gross fault: no nearest member is sought unless asked for
    assert wrong.tv_from_float_ideal == F(1, 8) and not wrong.member_differing and "(a gross fault)" in wrong.arithmetic
    assert "block (vs the nearest member)" not in wrong.report() and len(wrong.report().splitlines()) <= 20
    near = compare(lambda p, q, rng: _np_chain(p, q, rng, "target"), P, Q, numpy_rng="rng", nearest=True)
    assert (near.verdict, near.tv, near.law) == ("lossy", F(1, 8), wrong.law)
    assert near.tv_from_float_ideal > 0 and near.member_differing
    assert "block (vs the nearest member)" in near.report() and len(near.report().splitlines()) <= 20
    right = compare(_np_chain, P, Q, numpy_rng="rng")
    assert right.verdict == "lossless" and right.tv == 0
    assert "torch" not in right.arithmetic


def _context_rows():
    """A target and a draft whose rows depend on the drafted prefix (as a real model's do)."""

    def target(prefix):
        return torch.tensor([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]][sum(prefix) % 3])

    def draft(prefix):
        return torch.tensor([[0.25, 0.5, 0.25], [0.5, 0.25, 0.25], [0.25, 0.25, 0.5]][len(prefix) % 3])

    return target, draft


def _chain_by_prefix(target, draft, offset=0):
    """gamma = 2 speculative chain reading target(prefix); ``offset = 1`` reads the row one position late."""
    out: list[int] = []
    for _ in range(2):
        q = draft(tuple(out))
        x = int(torch.multinomial(q, 1))
        p = target(tuple(out + [x])[: len(out) + offset]) if offset else target(tuple(out))
        if torch.rand(()) < p[x] / q[x]:
            out.append(x)
            continue
        out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
        return tuple(out)
    return (*out, int(torch.multinomial(target(tuple(out)), 1)))


def test_a_position_offset_fault_is_caught_with_prefix_dependent_rows_only():
    target, draft = _context_rows()
    right = compare(_chain_by_prefix, target, draft, gamma=2)
    assert right.verdict == "lossless"
    late = compare(lambda t, d: _chain_by_prefix(t, d, offset=1), target, draft, gamma=2)
    assert late.verdict == "lossy" and late.tv > 0
    # the same fault, judged with one row for every position, is invisible
    row = target(())
    same = lambda prefix: row  # noqa: E731
    assert compare(lambda t, d: _chain_by_prefix(t, d, offset=1), same, draft, gamma=2).verdict == "lossless"


def test_a_vllm_style_exponential_race_residual_draw_gets_a_verdict():
    def vllm_like(p, q):
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        residual = torch.clamp(p - q, min=0)
        e = torch.empty_like(residual).exponential_()
        return int(residual.div_(e).argmax(dim=-1))

    p, q = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3])
    result = compare(vllm_like, p, q)
    assert result.verdict == "float-faithful" and result.tv == compare(textbook, p, q).tv
    assert any("race" in a for a in result.trace.assumptions)


def test_compare_with_an_expected_law_and_bad_arguments():
    coin = lambda p, q: int(torch.rand(()) < 0.25)  # noqa: E731
    assert compare(coin, None, None, reference={0: "3/4", 1: "1/4"}).verdict == "lossless"
    off = compare(coin, None, None, reference={0: "1/2", 1: "1/2"})
    assert off.verdict == "lossy" and off.tv == F(1, 4)
    with pytest.raises(SpecProofError, match="gamma"):
        compare(textbook, P, Q, gamma=0)
    with pytest.raises(SpecProofError, match="gamma \\+ 1 >= 2 rows"):
        compare(textbook, torch.tensor([[0.5, 0.5]]), Q)


def test_progress_is_called_once_per_run():
    calls = []
    result = compare(textbook, P, Q, progress=calls.append)
    assert calls == [1] * result.trace.runs and result.trace.runs > 10


# --------------------------------------------------------------------- the differential test (issue 20)


def _min_p(row, min_p):
    return row * (row >= min_p * row.max())


def plain_sampler(row, min_p=0.5):
    """The engine's plain sampler: min-p on the target's row, then a draw."""
    return int(torch.multinomial(_min_p(row, min_p), 1))


def spec_step(target, draft, min_p=0.5, drop_min_p=False):
    """gamma = 2 speculative step with min-p; ``drop_min_p``: min-p only on the bonus token (vLLM PR #42802)."""
    out: list[int] = []
    for _ in range(2):
        w = target(tuple(out)) if drop_min_p else _min_p(target(tuple(out)), min_p)
        p = w / w.sum()
        q = draft(tuple(out))
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            out.append(x)
            continue
        out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
        return tuple(out)
    return (*out, plain_sampler(target(tuple(out)), min_p))


def _min_p_rows():
    rows = [torch.tensor([0.375, 0.375, 0.125, 0.125]), torch.tensor([0.125, 0.375, 0.375, 0.125])]
    return (lambda prefix: rows[sum(prefix) % 2]), (lambda prefix: torch.tensor([0.25] * 4))


def test_a_step_that_drops_min_p_on_verified_tokens_differs_from_its_plain_sampler():
    target, draft = _min_p_rows()
    right = compare(spec_step, target, draft, gamma=2, reference=plain_sampler)
    assert right.verdict == "lossless" and right.tv == 0
    wrong = compare(lambda t, d: spec_step(t, d, drop_min_p=True), target, draft, gamma=2, reference=plain_sampler)
    assert wrong.verdict == "lossy" and wrong.tv > 0 and wrong.outside_support > 0
    assert wrong.arithmetic.startswith("differential")
    # one position: the same, against the plain sampler's law after the empty prefix
    one = lambda t, d: spec_step(t, d, drop_min_p=True)[0]  # noqa: E731
    first = compare(one, target, draft, reference=plain_sampler)
    assert first.verdict == "lossy" and first.reference == {0: F(1, 2), 1: F(1, 2)}


def test_a_block_sampler_is_judged_by_its_stream_not_by_how_blocks_are_cut():
    # verifies only the first of two drafts (and emits one token): correct code, its stream has
    # the float floor of one position; the nearest member verifies 1 draft of the 2
    def one_step_block(P, Q):
        x = int(torch.multinomial(Q[0], 1))
        if torch.rand(()) < P[0][x] / Q[0][x]:
            return (x,)
        return (int(torch.multinomial(torch.clamp(P[0] - Q[0], min=0), 1)),)

    P3, Q2 = torch.tensor([[0.6, 0.3, 0.1]] * 3), torch.tensor([[0.2, 0.5, 0.3]] * 2)
    result = compare(one_step_block, P3, Q2)
    assert result.verdict == "float-faithful" and result.tv_from_float_ideal == 0
    assert result.tv == compare(textbook, P3[0], Q2[0]).tv  # one position's float floor
    assert "(verifying 1 draft of the 2)" in result.arithmetic


def test_equivalent_members_are_counted():
    result = compare(textbook, torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3]))
    assert result.equivalents > 0 and "other arithmetic(s) of the family give the same law" in result.report()


def test_bad_outputs_and_shapes_are_named():
    # found by an adversarial review: each a clear error or a consistent verdict, never a traceback or a hang
    with pytest.raises(SpecProofError, match="returned a set"):
        compare(lambda p, q: {1}, P, Q)
    with pytest.raises(SpecProofError, match="gamma = 5 needs gamma \\+ 1 = 6 target rows, got 3"):
        compare(lambda p, q: (0,), torch.tensor([[0.5, 0.5]] * 3), torch.tensor([[0.5, 0.5]] * 2), gamma=5)
    with pytest.raises(SpecProofError, match="needs 2 draft rows, got 1"):
        compare(lambda p, q: (0,), torch.tensor([[0.5, 0.5]] * 3), torch.tensor([[0.5, 0.5]]))
    with pytest.raises(SpecProofError, match="gamma must be an integer >= 1"):
        search_lossy(textbook, gamma=-2)

    def boom(prefix):
        raise ZeroDivisionError("boom")

    with pytest.raises(SpecProofError, match="the row callable raised ZeroDivisionError"):
        compare(lambda t, d: (0,), boom, lambda s: torch.tensor([0.5, 0.5]), gamma=1)
    # a token returned as a bool is not an id: all of its mass is a fault, and the TV says so
    as_bool = compare(lambda p, q: bool(textbook(p, q)), torch.tensor([0.5, 0.5]), torch.tensor([0.25, 0.75]))
    assert as_bool.verdict == "lossy" and as_bool.outside_support == 1 and as_bool.tv == 1


def test_messages_print_huge_masses_through_the_one_formatter():
    """A law over 14,000-digit denominators: the message gives decimals and a digest, never fails
    on Python's int-to-str limit (the formatter is specproof.transcript.number_text)."""
    from fractions import Fraction

    from specproof.report.transcript import number_text

    tiny = Fraction(1, 3**30000)
    with pytest.raises(AssertionError) as info:
        assert_law(lambda: 0, {0: 1 - tiny, 1: tiny})
    text = str(info.value)
    assert f"exact TV = {number_text(tiny)};" in text and "sha256" in text and "e-14314" in text


def _half_max_cut(row):
    kept = row * (row >= 0.5 * row.max())
    return kept / kept.sum()


def _plain_min_p(row):
    return int(torch.multinomial(_half_max_cut(row), 1))


def _step_min_p(p, q, drop):
    """One speculative position with min_p = 1/2; ``drop`` verifies against the raw row (vLLM PR #42802)."""
    t = p if drop else _half_max_cut(p)
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < t[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(t - q, min=0), 1))


def test_search_lossy_with_a_reference_finds_the_smallest_differential_difference():
    found = search_lossy(
        lambda p, q: _step_min_p(p, q, drop=True), max_vocab=2, max_denominator=4, reference=_plain_min_p
    )
    assert found is not None and "differential" in found.comparison.arithmetic
    # the first difference is the fault: p = (1/4, 3/4), q = (0, 1): min_p removes id 0, which the step still emits
    # through its residual; the float floor before it (p = fl32(1/3, 2/3), q = (0, 1), pair 16: min_p keeps both
    # tokens, the step accepts id 1 w.p. fl32(2/3), a grid point, the plain sampler draws it w.p. fl32(2/3) /
    # (1 + 2^-25), the row's exact sum: TV 1 / (3 2^24)) is argued a float artefact by re-tracing in float64
    assert (found.p, found.q) == ((F(1, 4), F(3, 4)), (F(0), F(1)))
    assert found.comparison.tv == F(1, 4) and found.pairs == 36 and found.comparison.floor is None
    floored = compare(
        lambda p, q: _step_min_p(p, q, drop=True),
        torch.tensor([1 / 3, 2 / 3]),
        torch.tensor([0.0, 1.0]),
        reference=_plain_min_p,
    )
    assert floored.verdict == "float-faithful" and floored.tv == F(1, 3 * 2**24)
    assert floored.floor.argument == "widening" and floored.floor.tv_wide == F(1, 27021597764222976)  # 1 / (3 2^53)
    # without the reference the same pair is float-faithful by the family (the plain sampler is what differs)
    alone = compare(lambda p, q: _step_min_p(p, q, drop=True), torch.tensor([1 / 3, 2 / 3]), torch.tensor([0.0, 1.0]))
    assert alone.verdict == "float-faithful" and alone.floor is None
    # the fault itself, on a dyadic row: min_p removes id 0 (1/4 < 3/8), which the step still emits
    p, q = torch.tensor([0.25, 0.75]), torch.tensor([0.5, 0.5])
    wrong = compare(lambda a, b: _step_min_p(a, b, drop=True), p, q, reference=_plain_min_p)
    assert wrong.verdict == "lossy" and wrong.tv == F(1, 4)
    right = compare(lambda a, b: _step_min_p(a, b, drop=False), p, q, reference=_plain_min_p)
    assert right.verdict == "lossless"


def test_search_lossy_refuses_a_fixed_reference_law():
    with pytest.raises(SpecProofError, match="reference must be the plain sampler"):
        search_lossy(lambda p, q: 0, reference={0: F(1)})


def test_rows_that_do_not_sum_to_one_are_refused_not_renormalized():
    # a target of weights (6, 3, 2) is not a float-rounded probability row: compare would otherwise judge
    # the law of p / 11 and call a TV of 0.345 from the row given a float floor
    from specproof.errors import InvalidDistribution
    from specproof.testing import assert_lossless, compare

    def verify(p, q, rng):
        x = int(rng.choice(len(q), p=q))
        return x

    import numpy as np

    for bad in ([6.0, 3.0, 2.0], [0.9, 0.9, 0.9], [0.55, 0.3, 0.25]):
        with pytest.raises(InvalidDistribution, match="sums to .*not 1"):
            compare(verify, np.array(bad), np.array([0.2, 0.5, 0.3]))
        with pytest.raises(InvalidDistribution, match="sums to .*not 1"):
            assert_lossless(verify, np.array([0.2, 0.5, 0.3]), np.array(bad))


def test_a_reference_that_raises_is_named_never_a_counterexample():
    from specproof.testing import ReferenceRaised

    def textbook(p, q):
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    def raises(row):
        raise RuntimeError("reference blew up")

    with pytest.raises(ReferenceRaised, match="the reference sampler raised .*reference blew up"):
        search_lossy(textbook, reference=raises, max_vocab=2, max_denominator=2)
    with pytest.raises(ReferenceRaised, match="reference blew up"):
        compare(textbook, torch.tensor([0.5, 0.5]), torch.tensor([0.25, 0.75]), reference=raises)


def test_bfloat16_rows_whose_rounding_moves_their_sum_past_the_float_tolerance_are_judged():
    # bfloat16 rounds each entry within 2^-8 of itself: a softmax row's sum moves by more than 1e-3, and such a
    # row is judged, not refused; a float32 row off by as much is still refused
    torch = pytest.importorskip("torch")

    def sampler(p, q):
        x = int(torch.multinomial(q.float(), 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0).float(), 1))

    g = torch.Generator().manual_seed(0)
    rows = [torch.randn(6, generator=g).softmax(-1).to(torch.bfloat16) for _ in range(40)]
    off = [r for r in rows if abs(sum(F(float(x)) for x in r.tolist()) - 1) > F(1, 1000)]
    assert off
    p, q = off[0], rows[-1]
    assert compare(sampler, p, q).verdict == "float-faithful"
    far = torch.tensor([0.2, 0.2, 0.2, 0.2, 0.1, 0.102])  # a float32 row off from 1 by 0.002: not rounding
    with pytest.raises(InvalidDistribution, match="more than float rounding"):
        compare(sampler, far, q.float())


def test_gamma_refuses_rows_and_samplers_that_cannot_make_a_block():
    # one row each: no block of 2 can be drawn from them
    with pytest.raises(SpecProofError, match=r"gamma = 2 .* needs gamma \+ 1 = 3 target rows .* got one row \[V\]"):
        compare(textbook, P, Q, gamma=2)
    with pytest.raises(SpecProofError, match=r"gamma = 2 .* needs 2 draft rows .* got one row \[V\]"):
        compare(textbook, torch.stack([P, P, P]), Q, gamma=2)

    def first_position_only(p, q):  # block rows, but it verifies position 0 and returns one token
        return textbook(p[0], q[0])

    with pytest.raises(SpecProofError, match=r"the sampler returned one token \(\d\), not a sequence"):
        compare(first_position_only, torch.stack([P, P, P]), torch.stack([Q, Q]), gamma=2)


def test_search_lossy_skips_inputs_on_which_the_sampler_raises_and_lists_them():
    def fragile_accept_all(p, q):  # raises where p == q; elsewhere accepts every draft (lossy)
        if torch.equal(p, q):
            raise RuntimeError("p equals q")
        return int(torch.multinomial(q, 1))

    found = search_lossy(fragile_accept_all, max_vocab=2, max_denominator=2)
    assert found is not None and found.comparison is not None
    assert (found.p, found.q, found.pairs) == ((F(0), F(1)), (F(1), F(0)), 2)
    assert found.comparison.verdict == "lossy" and found.comparison.tv == 1
    assert [(p, q) for p, q, _ in found.skipped] == [((F(0), F(1)), (F(0), F(1)))]
    assert "RuntimeError: p equals q" in found.skipped[0][2]

    def always_fragile(p, q):  # raises where p == q, correct elsewhere
        if torch.equal(p, q):
            raise RuntimeError("p equals q")
        return textbook(p, q)

    found = search_lossy(always_fragile, max_vocab=2, max_denominator=2)
    assert (found.comparison, found.p, found.q, found.pairs) == (None, (F(0), F(1)), (F(0), F(1)), 1)
    assert "RuntimeError: p equals q" in found.raised
    assert [(p, q) for p, q, _ in found.skipped] == [
        ((F(0), F(1)), (F(0), F(1))),
        ((F(1), F(0)), (F(1), F(0))),
        ((F(1, 2), F(1, 2)), (F(1, 2), F(1, 2))),
    ]


def test_a_gross_fault_is_lossy_without_the_float_family_scan():
    from specproof.rules.faithful import judge
    from specproof.trace.testing import gross_tv, verdict_lines

    def accept_all(p, q):
        return int(torch.multinomial(q, 1))

    got = compare(accept_all, P, Q)
    assert (got.verdict, got.tv, got.tv_from_float_ideal, got.member_differing) == ("lossy", F(1, 2), F(1, 2), [])
    assert got.arithmetic.startswith(
        "not compared: the TV from the target, 0.5 (1/2), is above 0.015625 (1/64), "
        "farther than any correct float code is (a gross fault)"
    )
    assert verdict_lines(got) == [
        f"  {got.arithmetic}",
        "  mass on outputs the target gives probability 0 (or invalid ids): 0.25 (1/4)",
    ]
    # the full scan finds the same verdict and TV, and a nearest member
    full = judge(got.law, P, Q)
    assert (full.verdict, full.tv) == ("lossy", F(1, 2)) and full.member is not None
    assert gross_tv(None) == F(1, 64) and gross_tv(3) == F(4, 64)
    # below the bound the family is scanned as before: the textbook sampler's law matches a member
    assert compare(textbook, P_OFF, Q_OFF).verdict in ("lossless", "float-faithful")


def test_the_float_family_scan_reports_its_progress(monkeypatch):
    from specproof.rules.faithful import FAMILY, judge
    from specproof.trace import testing

    calls = []
    law = {0: F(1, 2), 1: F(1, 2)}
    judge(law, [0.5, 0.25, 0.25], [0.25, 0.5, 0.25], progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, len(FAMILY)) and calls[-1][0] == len(calls) - 1 and len(calls) <= len(FAMILY)
    monkeypatch.setattr(testing, "SCAN_QUIET", 0.0)
    monkeypatch.setattr(testing, "SCAN_EVERY", 0.0)
    import io
    import sys

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    show = testing._ScanProgress()
    show(0, 10)
    show(4, 10)
    assert err.getvalue().startswith("judging: 4/10 float-family members' laws computed (")
    assert err.getvalue().count("\n") == 1


def test_exact_sums_of_float_rows_by_integers_equal_the_rational_sums():
    from specproof.trace.core import _fraction_weights, exact_float_sum
    from specproof.trace.testing import _exact_sum

    row = [0.1, 0.2, 0.7, 2.0**-60, 0.0]
    nums, d = exact_float_sum(row)
    assert [F(n, d) for n in nums] == [F(x) for x in row] and d == 2**60
    assert exact_float_sum([0.5, float("nan")]) is None and exact_float_sum([1, 0.5]) is None
    assert _exact_sum(torch.tensor(row, dtype=torch.float64), "p") == sum(map(F, row))
    assert _exact_sum([F(1, 3), F(2, 3)], "p") == 1  # rationals: entry by entry
    weights = _fraction_weights(row, "torch.multinomial")
    assert weights == tuple(F(x) / sum(map(F, row)) for x in row) and sum(weights) == 1
    with pytest.raises(InvalidDistribution, match="not 1"):
        compare(textbook, torch.tensor([0.5, 0.6]), torch.tensor([0.5, 0.5]))


def test_equivalent_members_are_counted_up_to_v_16_by_default():
    from specproof.trace.testing import EQUIVALENTS_MAX_V

    g = torch.Generator().manual_seed(0)
    p, q = (torch.softmax(torch.randn(17, generator=g), -1) for _ in range(2))
    result = compare(textbook, p, q)
    assert EQUIVALENTS_MAX_V == 16 and result.verdict == "float-faithful" and result.equivalents is None
    assert (
        "(other arithmetics of the family that give the same law were not counted (they are at V <= 16, or with "
        "equivalents=True): the code's arithmetic is one of them, not necessarily the one named)"
    ) in result.report()
    counted = compare(textbook, p, q, equivalents=True)
    assert (counted.verdict, counted.tv, counted.arithmetic) == (result.verdict, result.tv, result.arithmetic)
    assert isinstance(counted.equivalents, int) and counted.equivalents >= 0
    assert (
        compare(textbook, torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3]), equivalents=False).equivalents
        is None
    )


def test_multinomial_without_replacement_renormalizes_after_the_first_draw():
    from specproof.trace.tracer import trace

    def two_distinct(w):
        return tuple(torch.multinomial(w, 2).tolist())

    law = trace(two_distinct, (torch.tensor([0.5, 0.25, 0.25]),)).law
    assert law == {
        (0, 1): F(1, 4),
        (0, 2): F(1, 4),
        (1, 0): F(1, 6),
        (1, 2): F(1, 12),
        (2, 0): F(1, 6),
        (2, 1): F(1, 12),
    }


def test_the_exact_weights_cache_is_bounded_by_its_entries(monkeypatch):
    from specproof.trace import core

    monkeypatch.setattr(core, "_WEIGHTS", {})
    monkeypatch.setattr(core, "_WEIGHTS_HELD", 0)
    monkeypatch.setattr(core, "WEIGHTS_CACHED", 5)
    first = core._fraction_weights([0.5, 0.25, 0.25], "torch.multinomial")
    assert core._fraction_weights([0.5, 0.25, 0.25], "torch.multinomial") is first  # read from the cache
    core._fraction_weights([1.0, 3.0], "torch.multinomial")  # 3 + 2 entries: both held
    assert list(core._WEIGHTS) == [(0.5, 0.25, 0.25), (1.0, 3.0)] and core._WEIGHTS_HELD == 5
    assert core._fraction_weights([1.0, 1.0], "torch.multinomial") == (F(1, 2), F(1, 2))
    assert list(core._WEIGHTS) == [(1.0, 3.0), (1.0, 1.0)] and core._WEIGHTS_HELD == 4  # the oldest went
    assert core._fraction_weights([1.0] * 6, "torch.multinomial") == (F(1, 6),) * 6  # too long to hold
    assert list(core._WEIGHTS) == [(1.0, 3.0), (1.0, 1.0)] and core._WEIGHTS_HELD == 4  # and nothing went


def test_a_row_off_from_one_by_more_than_rounding_is_named_as_renormalized():
    # a new user's finding: [0.6, 0.3, 0.0999] was renormalized silently and its TV 4e-5 read as a float floor
    torch = pytest.importorskip("torch")

    def textbook(p, q):
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    q = torch.tensor([0.2, 0.5, 0.3])
    off = compare(textbook, torch.tensor([0.6, 0.3, 0.0999]), q)
    assert off.verdict == "float-faithful" and off.tv > F(1, 100000)
    named = [c for c in off.caveats if "renormalized" in c]
    assert len(named) == 1 and named[0].startswith("the target row sums to 0.9999000356, not 1 (off by 0.0001,")
    assert "caveat: the target row sums to 0.9999000356" in str(off)
    assert not any("renormalized" in c for c in compare(textbook, torch.tensor([0.6, 0.3, 0.1]), q).caveats)


def test_a_stack_of_rows_against_one_row_is_refused_naming_both_shapes_before_the_sampler_runs():
    # a new user's trap (issue 34): a [2, V] target with a [V] draft reached the sampler, which failed inside
    # its own code, or (indexing row 0 of the target) ran and was judged on a block of gamma = 1 it never drew
    ran = []

    def sampler(p, q):
        ran.append((tuple(p.shape), tuple(q.shape)))
        return textbook(p[0] if p.dim() > 1 else p, q[0] if q.dim() > 1 else q)

    two = torch.tensor([[0.5, 0.25, 0.25, 0.0], [0.25, 0.25, 0.25, 0.25]])
    with pytest.raises(InvalidDistribution, match=r"target is a stack of 2 rows, shape \[2, 4\].*draft is one row, "):
        compare(sampler, two, Q)
    with pytest.raises(InvalidDistribution, match=r"shape \[4\]; a block needs .* shape \[gamma, V\] = \[1, 4\]"):
        assert_lossless(sampler, two, Q)
    with pytest.raises(InvalidDistribution, match=r"target is one row, shape \[4\] .* draft is a stack of 2 rows"):
        compare(sampler, P, two)
    with pytest.raises(InvalidDistribution, match=r"shape \[2, 3\] \(a block: gamma = 1 inferred\)"):
        compare(sampler, [[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]], [0.25, 0.25, 0.5])  # lists: the same shapes
    assert ran == []
    # one draft row as a stack, [1, V]: a block of gamma = 1, traced
    assert compare(lambda p, q: (textbook(p[0], q[0]),), two, Q[None, :]).gamma == 1


def test_lists_given_to_a_torch_sampler_are_named_not_left_to_its_error():
    # a new user's trap (issue 34): compare passes rows to the sampler as given (as trace does), so Python lists
    # reached a torch sampler, which raised "'list' object has no attribute 'dim'" with no word about the lists
    from specproof.trace.tracer import SamplerRaised

    with pytest.raises(SamplerRaised, match=r"'list' object .*: the target and the draft were given as Python lists"):
        compare(textbook, [0.6, 0.3, 0.1], [0.2, 0.5, 0.3])
    with pytest.raises(
        SamplerRaised, match=r"the target was given as a Python list, .* pass torch\.tensor\(rows, dtype"
    ):
        assert_lossless(textbook, [0.6, 0.3, 0.1], torch.tensor([0.2, 0.5, 0.3]))

    def plain_python(p, q):  # a sampler in pure Python takes lists as they are: traced, never refused
        import random

        x = random.choices(range(len(q)), weights=q)[0]
        if random.random() < p[x] / q[x]:
            return x
        return random.choices(range(len(p)), weights=[max(a - b, 0) for a, b in zip(p, q)])[0]

    assert compare(plain_python, [0.5, 0.5], [0.5, 0.5]).verdict == "lossless"
