"""The distribution faults of 2026 as named, tested cases (issue 20, item 3).

Each section writes a small PyTorch sampler that reproduces one public report's *mechanism* (not
its code), its correct twin, and asserts: the fault's exact TV on a minimal input (found by
:func:`specproof.trace.testing.search_lossy`, or by hand where the fault needs sampling parameters or
prefix-dependent rows, which the search does not vary; each test says which), the verdict that
catches it, and the twin passing. Faults about sampling parameters are judged differentially,
against the engine's plain sampler applying the same parameters
(``compare(..., reference=plain_sampler)``). Rows are dyadic wherever the mechanism allows, so the
float32 arithmetic of the samplers is exact and the laws are short. docs/tracing.md: "The faults of 2026,
reproduced".
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

torch = pytest.importorskip("torch")

from specproof.trace.testing import compare, search_lossy  # noqa: E402
from specproof.trace.tracer import SamplerRaised, trace  # noqa: E402

T = torch.tensor


def textbook(p, q):
    """Leviathan et al. 2023, Algorithm 1, one position (the correct verifier)."""
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def chain(target, draft, gamma, verify=None):
    """A gamma-draft speculative chain on prefix-dependent rows: ``verify(prefix, x, q)`` returns the
    target row used to verify draft x after ``prefix`` (default: the row after ``prefix``, correct)."""
    out: list[int] = []
    for _ in range(gamma):
        q = draft(tuple(out))
        x = int(torch.multinomial(q, 1))
        p = verify(tuple(out), x, target) if verify else target(tuple(out))
        if torch.rand(()) < p[x] / q[x]:
            out.append(x)
            continue
        out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
        return tuple(out)
    return (*out, int(torch.multinomial(target(tuple(out)), 1)))


def _rows(*rows):
    """``prefix -> row``: row ``sum(prefix) % len(rows)`` (the rows differ from position to position)."""
    tensors = [T(r) for r in rows]
    return lambda prefix: tensors[sum(prefix) % len(tensors)]


# --------------------------------------------------------------------------------------------------
# transformers #47932: candidate generators sample from processed logits but return the raw q.


def top_k(row, k):
    """Keep the k largest weights (ties at the k-th value kept), renormalized."""
    kept = row * (row >= torch.topk(row, k).values[-1])
    return kept / kept.sum()


def hf_plain(row, k=2):
    return int(torch.multinomial(top_k(row, k), 1))


def hf_step(p, q, k=2, raw_q=False):
    """One verified token as transformers' assisted generation runs it with top-k: the target's
    row processed, the draft sampled from its processed row; ``raw_q``: the ratio and the residual
    read the raw q the candidate generator returned (#47932)."""
    pp, qq = top_k(p, k), top_k(q, k)
    x = int(torch.multinomial(qq, 1))
    used = q if raw_q else qq
    if torch.rand(()) < pp[x] / used[x]:
        return x
    return int(torch.multinomial(torch.clamp(pp - used, min=0), 1))


def test_transformers_47932_raw_q_in_the_ratio():
    # by hand: V = 4 is the smallest vocabulary where top-2 drops mass without a tie and keeps the
    # processed rows' float32 ratios exact (fl(1/3) / fl(2/3) = 1/2), so the twin is exactly lossless
    p, q = T([0.25, 0.5, 0.125, 0.125]), T([0.5, 0.25, 0.125, 0.125])
    wrong = compare(lambda t, d: hf_step(t, d, raw_q=True), p, q, reference=hf_plain)
    assert wrong.verdict == "lossy"
    assert wrong.tv == F(2796203, 25165824)  # 2/3 * 11184811/2^24 - 1/3: accepts 0 w.p. fl32(2/3), not 1/2
    assert wrong.law == {0: F(11184811, 25165824), 1: F(13981013, 25165824)}
    right = compare(hf_step, p, q, reference=hf_plain)
    assert right.verdict == "lossless" and right.law == {0: F(1, 3), 1: F(2, 3)}


# --------------------------------------------------------------------------------------------------
# DeepSpec #31: drafts sampled from bf16 logits, the ratio and the residual in fp32.


def deepspec_step(p, q, bf16_draft=True):
    """The draft sampled through the native-dtype path (its probabilities rounded to bfloat16, as a
    bf16 softmax delivers them), verified with the float32 q; the fix samples from q itself."""
    r = q.to(torch.bfloat16).float() if bf16_draft else q
    x = int(torch.multinomial(r, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def test_deepspec_31_bf16_draft_fp32_ratio():
    found = search_lossy(deepspec_step, max_vocab=2, max_denominator=5)  # found by the search
    assert found is not None and found.pairs == 59  # no pair with denominators <= 4 shows it: all are dyadic
    assert (found.p, found.q) == ((F(1, 2), F(1, 2)), (F(2, 5), F(3, 5)))
    assert found.comparison.verdict == "lossy" and found.comparison.tv == F(699025, 2151677952)  # ~3.2e-4
    assert found.comparison.tv_from_float_ideal > 0  # no correct float arithmetic explains it
    p, q = T([0.5, 0.5]), T([0.4, 0.6])
    right = compare(lambda a, b: deepspec_step(a, b, bf16_draft=False), p, q)
    assert right.verdict == "float-faithful" and right.tv == F(978671, 140737492549632)  # the float32 floor


# --------------------------------------------------------------------------------------------------
# vLLM PR #42802: min_p ignored on every verified token, honoured on the bonus token.


def min_p(row, threshold=0.5):
    kept = row * (row >= threshold * row.max())
    return kept / kept.sum()


def vllm_plain(row):
    return int(torch.multinomial(min_p(row), 1))


def vllm_step(target, draft, gamma=1, drop=False):
    """A speculative step with min_p = 1/2; ``drop``: the verified tokens read the target's row
    without min_p, the bonus token goes through the plain sampler and honours it (PR #42802)."""
    out: list[int] = []
    for _ in range(gamma):
        p = target(tuple(out)) if drop else min_p(target(tuple(out)))
        q = draft(tuple(out))
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            out.append(x)
            continue
        out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
        return tuple(out)
    return (*out, vllm_plain(target(tuple(out))))


def test_vllm_42802_min_p_dropped_on_verified_tokens():
    # by hand: V = 2, gamma = 1 (one verified token and the bonus), rows that differ by position
    target, draft = _rows([0.75, 0.25], [0.25, 0.75]), _rows([0.5, 0.5])
    wrong = compare(lambda t, d: vllm_step(t, d, drop=True), target, draft, gamma=1, reference=vllm_plain)
    assert wrong.verdict == "lossy" and wrong.tv == F(1, 4) and wrong.outside_support == F(1, 4)
    # id 1, which min_p removes after the empty prefix, is verified w.p. 1/4; the bonus after it honours min_p
    assert wrong.law == {(0,): F(1, 4), (0, 0): F(1, 2), (1, 1): F(1, 4)}
    right = compare(vllm_step, target, draft, gamma=1, reference=vllm_plain)
    assert right.verdict == "lossless" and right.law == {(0,): F(1, 2), (0, 0): F(1, 2)}


# --------------------------------------------------------------------------------------------------
# SGLang #10617: logit_bias (and min_p) not applied on EAGLE's verify path.


def biased(logits, bias):
    return torch.softmax(logits + bias, dim=-1)


BAN_1 = T([0.0, float("-inf")])  # logit_bias {1: -100} as a ban (-inf), so the laws stay exact


def sglang_plain(logits):
    return int(torch.multinomial(biased(logits, BAN_1), 1))


def sglang_verify(logits, q, apply_bias=True):
    """EAGLE's verify on the target's logits; ``apply_bias=False``: the bias is not applied (#10617)."""
    p = biased(logits, BAN_1) if apply_bias else torch.softmax(logits, dim=-1)
    return textbook(p, q)


def test_sglang_10617_logit_bias_not_applied_on_verify():
    # by hand: V = 2, equal target logits, the bias bans id 1; the smallest case (TV 1/2)
    logits, q = T([0.0, 0.0]), T([0.5, 0.5])
    wrong = compare(lambda t, d: sglang_verify(t, d, apply_bias=False), logits, q, reference=sglang_plain)
    assert wrong.verdict == "lossy" and wrong.tv == F(1, 2) and wrong.outside_support == F(1, 2)
    assert wrong.law == {0: F(1, 2), 1: F(1, 2)}  # the banned token, half the time
    right = compare(sglang_verify, logits, q, reference=sglang_plain)
    assert right.verdict == "lossless" and right.law == {0: F(1)}


# --------------------------------------------------------------------------------------------------
# SGLang PR #36173: top-k, renormalize, then top-p, where the plain sampler takes the top-p cutoff
# from the original distribution and intersects it with top-k.


def top_p_mask(row, top_p):
    """Tokens whose mass before them (sorted by weight, descending) is below top_p."""
    values, order = torch.sort(row, descending=True)
    before = torch.cumsum(values, dim=0) - values
    mask = torch.zeros_like(row, dtype=torch.bool)
    mask[order[before < top_p]] = True
    return mask


def top_k_mask(row, k):
    return row >= torch.topk(row, k).values[-1]


def plain_filter(row, k=2, top_p=0.5):
    kept = row * (top_k_mask(row, k) & top_p_mask(row, top_p))
    return kept / kept.sum()


def reordered_filter(row, k=2, top_p=0.5):
    kept = row * top_k_mask(row, k)
    kept = kept / kept.sum()  # renormalized after top-k: top-p then reads this mass
    kept = kept * top_p_mask(kept, top_p)
    return kept / kept.sum()


def sglang_plain_sampler(row):
    return int(torch.multinomial(plain_filter(row), 1))


def sglang_filtered_verify(p, q, reordered=False):
    return textbook(reordered_filter(p) if reordered else plain_filter(p), q)


def test_sglang_36173_top_k_renormalize_top_p_order():
    # by hand: V = 3 is the smallest vocabulary (top-2 must drop a token); p = (15/32, 9/32, 1/4) keeps
    # the renormalized top-2 dyadic (5/8, 3/8): top_p = 1/2 keeps ids {0, 1} of p, but only {0} of (5/8, 3/8)
    p, q = T([15 / 32, 9 / 32, 0.25]), T([0.25, 0.25, 0.5])
    wrong = compare(lambda t, d: sglang_filtered_verify(t, d, reordered=True), p, q, reference=sglang_plain_sampler)
    assert wrong.verdict == "lossy" and wrong.tv == F(3, 8) and wrong.law == {0: F(1)}
    right = compare(sglang_filtered_verify, p, q, reference=sglang_plain_sampler)
    assert right.verdict == "lossless" and right.law == {0: F(5, 8), 1: F(3, 8)}


# --------------------------------------------------------------------------------------------------
# TensorRT-LLM PR #15098: EAGLE-3 dynamic-tree verification read the logits of the wrong positions.


def wrong_slice(prefix, x, target):
    """The tree's logits are laid out one row per node; node x's target row is its parent's row
    (the row after ``prefix``), but the wrong slice reads the node's own row (the row after x)."""
    return target(prefix + (x,))


def test_tensorrt_llm_15098_wrong_positions_caught_only_with_prefix_dependent_rows():
    # by hand: V = 2, gamma = 1 (a chain is the tree with one child per node), rows that differ by position
    target, draft = _rows([0.75, 0.25], [0.25, 0.75]), _rows([0.5, 0.5])
    wrong = compare(lambda t, d: chain(t, d, 1, wrong_slice), target, draft, gamma=1)
    assert wrong.verdict == "lossy" and wrong.tv == F(1, 4)
    assert wrong.law == {(0, 0): F(3, 8), (0, 1): F(1, 8), (1, 0): F(1, 8), (1, 1): F(3, 8)}
    right = compare(lambda t, d: chain(t, d, 1), target, draft, gamma=1)
    assert right.verdict == "lossless"
    # the same fault, tested with one row for every position (as vLLM's chi-square test does): missed
    same = _rows([0.75, 0.25])
    assert compare(lambda t, d: chain(t, d, 1, wrong_slice), same, draft, gamma=1).verdict == "lossless"
    assert compare(lambda t, d: chain(t, d, 2, wrong_slice), same, draft, gamma=2).verdict == "lossless"
    # and the search, which gives the same row at every position, finds no lossy input either
    assert (
        search_lossy(
            lambda t, d: chain(lambda s: t[len(s)], lambda s: d[len(s)], 1, wrong_slice),
            gamma=1,
            max_vocab=2,
            max_denominator=2,
        )
        is None
    )


# --------------------------------------------------------------------------------------------------
# vllm-ascend #7807: block verification with the token-wise accept rule and the plain residual.


def block_step(target, draft, gamma, token_wise=False):
    """Block verification (Sun et al. 2024, Algorithm 2) on prefix-dependent rows. p_i = min(1, p_{i-1}
    p(x_i)/q(x_i)); tau is the last i with u_i < h_i; then Y from (p_tau M_b - M_s)+ after X^tau (or the
    bonus). The correct h_i = S_i / (S_i + 1 - p_i), S_i the residual's mass, h_gamma = p_gamma;
    ``token_wise`` (#7807): h_i = p_i, the token-wise acceptance, and the plain residual (M_b - M_s)+."""
    xs: list[int] = []
    for _ in range(gamma):
        xs.append(int(torch.multinomial(draft(tuple(xs)), 1)))
    ps = [torch.tensor(1.0)]
    for i in range(gamma):
        p, q = target(tuple(xs[:i])), draft(tuple(xs[:i]))
        ps.append(torch.clamp(ps[-1] * p[xs[i]] / q[xs[i]], max=1.0))

    def residual(i):
        p, q = target(tuple(xs[:i])), draft(tuple(xs[:i]))
        return torch.clamp((p if token_wise else ps[i] * p) - q, min=0)

    tau = 0
    for i in range(1, gamma + 1):
        if token_wise or i == gamma:
            h = ps[i]
        else:
            s = residual(i).sum()
            den = s + 1 - ps[i]
            h = s / den if den > 0 else torch.tensor(0.0)
        if torch.rand(()) < h:
            tau = i
    if tau == gamma:
        return (*xs, int(torch.multinomial(target(tuple(xs)), 1)))
    return (*xs[:tau], int(torch.multinomial(residual(tau), 1)))


def _stack(rows):
    return lambda prefix: rows[len(prefix)]


def test_vllm_ascend_7807_block_verification_with_the_token_wise_rule():
    found = search_lossy(
        lambda t, d: block_step(_stack(t), _stack(d), 2, token_wise=True), gamma=2, max_vocab=2, max_denominator=2
    )  # found by the search: the same row at every position
    assert found is not None and (found.p, found.q) == ((F(1, 2), F(1, 2)), (F(0), F(1)))
    assert found.comparison.verdict == "lossy" and found.comparison.tv == F(1, 8)
    # there the correct twin's h_1 = (1/4) / (3/4) = 1/3 is rounded to float32: off by its float floor only,
    # which the float-ideal family (single-token verifiers) does not name
    p, q = T([0.5, 0.5]), T([0.0, 1.0])
    floor = compare(lambda t, d: block_step(t, d, 2), (lambda s: p), (lambda s: q), gamma=2)
    assert floor.tv == F(1, 33554432)
    # by hand, the smallest dyadic input on which every h_i is a float32 grid point: the twin is exactly lossless
    p, q = T([0.25, 0.75]), T([0.5, 0.5])
    target, draft = (lambda s: p), (lambda s: q)
    wrong = compare(lambda t, d: block_step(t, d, 2, token_wise=True), target, draft, gamma=2)
    assert wrong.verdict == "lossy" and wrong.tv == F(1, 8)
    right = compare(lambda t, d: block_step(t, d, 2), target, draft, gamma=2)
    assert right.verdict == "lossless"
    from specproof.laws.variants import block_verification_law

    exact = block_verification_law(lambda s: (F(1, 4), F(3, 4)), lambda s: (F(1, 2), F(1, 2)), 2).emitted
    assert right.law == {b: m for b, m in exact.items() if m}  # the twin is Algorithm 2, as variants computes it
    assert wrong.law[(1,)] == F(1, 8) and exact[(1,)] == F(1, 4)  # the plain residual: too little mass on (1,)


# --------------------------------------------------------------------------------------------------
# hipfire PR #483: a tree built from the draft's top-k marginals (no draft sample) verified with min(1, p/q).


def hipfire_tree(p, q, k=2, naive=False):
    """One tree node whose children are the draft's k most likely tokens, chosen, not sampled. The
    biased verify tests them in turn with u < p'(c)/q(c), p' the running residual (SpecInfer's rule,
    which assumes sampled children); ``naive``: the fix, SpecInfer's naive sampling: draw y from the
    target and accept the child equal to it (every emitted token is a target draw)."""
    children = torch.topk(q, k).indices.tolist()
    if naive:
        return int(torch.multinomial(p, 1))  # accepted iff y is among the children: only the speed depends on it
    r = p.clone()
    for c in children:
        if torch.rand(()) < r[c] / q[c]:
            return c
        r = torch.clamp(r - q, min=0)
        r = r / r.sum()
    return int(torch.multinomial(r, 1))


def test_hipfire_483_top_k_tree_verified_with_min_1_p_over_q():
    found = search_lossy(hipfire_tree, max_vocab=3, max_denominator=2)  # found by the search
    # p == q: the first child (the draft's argmax) is proposed with probability 1, its ratio is 1, so it is
    # always accepted: the "verified counterexample" of the PR
    assert found is not None and (found.p, found.q) == ((F(1, 2), F(1, 2)), (F(1, 2), F(1, 2)))
    assert found.comparison.verdict == "lossy" and found.comparison.tv == F(1, 2)
    assert found.comparison.law == {0: F(1)}
    p, q = T([float(x) for x in found.p]), T([float(x) for x in found.q])
    assert compare(lambda a, b: hipfire_tree(a, b, naive=True), p, q).verdict == "lossless"
    assert search_lossy(lambda a, b: hipfire_tree(a, b, naive=True), max_vocab=3, max_denominator=2) is None


# --------------------------------------------------------------------------------------------------
# vLLM #53029: an all-NaN target row is laundered into a token id (also issue 20, item 5).

BLOCK = 2  # the kernel's vocabulary block (VOCAB_BLOCK_SIZE; 8192 in vLLM)


def block_argmax(row, nan_fix=False):
    """A tiled argmax as the Triton kernels compute it: each block's local max and local argmax, then
    the argmax over blocks. In a NaN block every comparison is false, so the local argmax is the last
    lane and the local max NaN. Without ``nan_fix`` the argmax over the blocks' maxima, all NaN, falls
    past the last block (the padded lanes): the id is V (vLLM PR #45060's ``recovered_id == vocab_size``).
    With the fix of PR #50183 (NaN maxima read as -inf) it is block 0, and its local argmax BLOCK - 1 is
    emitted: an ordinary-looking id (8191 on ROCm, the report's comment)."""
    values = row.tolist()
    maxima, argmaxes = [], []
    for start in range(0, len(values), BLOCK):
        lanes = range(start, min(start + BLOCK, len(values)))
        best, arg = float("-inf"), start + BLOCK - 1  # a NaN never compares greater: a NaN block keeps the last lane
        for i in lanes:
            if values[i] > best:
                best, arg = values[i], i
        maxima.append(float("nan") if any(values[i] != values[i] for i in lanes) else best)  # max propagates NaN
        argmaxes.append(arg)
    if nan_fix:
        maxima = [float("-inf") if m != m else m for m in maxima]
    winner, top = (0, maxima[0]) if nan_fix else (len(maxima), float("-inf"))  # unfixed: all NaN falls past the end
    for b, m in enumerate(maxima):
        if m > top:
            winner, top = b, m
    return winner * BLOCK if winner == len(maxima) else argmaxes[winner]


def greedy_verify(p, q, nan_fix=False, refuse_nan=False):
    """The one-hot verification path of greedy drafts: the draft's argmax is accepted iff it equals the
    target's (tiled) argmax; else the target's argmax is emitted. ``refuse_nan``: the twin, which
    raises on a NaN row instead of emitting."""
    if refuse_nan and torch.isnan(p).any():
        raise FloatingPointError("NaN in the target row")
    x = int(torch.argmax(q))
    y = block_argmax(p, nan_fix)
    return x if x == y else y


def greedy_plain(row):
    return block_argmax(row)


def test_vllm_53029_all_nan_target_row_emits_an_id():
    q = T([0.125, 0.5, 0.25, 0.125])
    # on a valid row the tiled argmax is the argmax: the greedy step equals the plain greedy sampler
    ok = compare(greedy_verify, T([0.25, 0.125, 0.5, 0.125]), q, reference=greedy_plain)
    assert ok.verdict == "lossless" and ok.law == {2: F(1)}
    nan = torch.full((4,), float("nan"))
    before = compare(greedy_verify, nan, q)  # judged against no valid law: reported, not refused
    assert before.verdict == "lossy" and before.tv == 1 and before.outside_support == 1 and before.degenerate
    assert before.law == {4: F(1)} and before.differing == [(4, F(1), F(0))]  # id V: outside [0, V)
    assert before.arithmetic.startswith("no valid law: the target row is degenerate (all 4 entries are NaN)")
    after = compare(lambda p, d: greedy_verify(p, d, nan_fix=True), nan, q)
    assert after.verdict == "lossy" and after.law == {BLOCK - 1: F(1)}  # an in-vocabulary id, silently
    assert "no valid law" in after.report() and len(after.report().splitlines()) <= 20
    with pytest.raises(SamplerRaised, match="NaN in the target row"):  # the twin refuses the row
        compare(lambda p, d: greedy_verify(p, d, refuse_nan=True), nan, q)


def test_degenerate_rows_are_audited_not_refused():
    """Item 5: NaN, +/-inf, all-zero and all -inf target rows; a degenerate draft row."""
    q = T([0.5, 0.25, 0.25])

    def accept_on_nan(p, d):  # `not (u >= ratio)`: a NaN ratio accepts every draft
        x = int(torch.multinomial(d, 1))
        if not (torch.rand(()) >= p[x] / d[x]):
            return x
        return int(torch.multinomial(torch.clamp(p - d, min=0), 1))

    for row, why in (
        (T([float("nan")] * 3), "all 3 entries are NaN"),
        (T([0.5, float("nan"), 0.5]), "NaN at id 1"),
        (T([float("inf"), 0.5, 0.5]), "+inf at id 0"),
        (T([float("-inf")] * 3), "all 3 entries are -inf"),
        (T([0.0, 0.0, 0.0]), "all 3 entries are zero"),
    ):
        result = compare(lambda p, d: int(torch.argmax(d)), row, q)
        assert result.verdict == "lossy" and result.law == {0: F(1)} and result.outside_support == 1, why
        assert why in result.arithmetic
    law = compare(accept_on_nan, T([float("nan")] * 3), q)
    assert law.verdict == "lossy" and law.law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}  # the draft's law, reported
    with pytest.raises(SamplerRaised, match="nan"):  # the textbook verifier's residual draw raises, as torch does
        compare(textbook, T([float("nan")] * 3), q)
    # a block whose target row is degenerate only after a prefix
    target = lambda s: T([0.5, 0.5]) if not s else T([float("nan")] * 2)  # noqa: E731

    def accept_then_argmax(t, d):  # the draft accepted, the bonus token an argmax of the NaN row (id 0)
        x = int(torch.multinomial(d(()), 1))
        return x, int(torch.argmax(t((x,))))

    block = compare(accept_then_argmax, target, lambda s: T([1.0, 0.0]), gamma=1)
    assert block.verdict == "lossy" and block.tv == 1 and block.law == {(0, 0): F(1)}
    assert "the target row after (0,) is degenerate" in block.arithmetic
    # a degenerate draft row: no float-ideal family, the law judged against the target alone
    p = T([0.5, 0.25, 0.25])
    nan_q = T([float("nan")] * 3)
    fallback = compare(lambda t, d: int(torch.multinomial(t, 1)) if torch.isnan(d).any() else textbook(t, d), p, nan_q)
    assert fallback.verdict == "lossless"
    wrong = compare(lambda t, d: 0, p, nan_q)
    assert wrong.verdict == "lossy" and wrong.tv == F(1, 2) and "undefined on this draft" in wrong.arithmetic


# --------------------------------------------------------------------------------------------------
# pytorch #192577: Tensor.exponential_ returns -0.0, so an exponential race picks a zero-weight id.


def race_verify(p, q, race=True):
    """The textbook verifier with the residual drawn by the race argmax(r / E) (vLLM, SGLang,
    FlashInfer); the twin draws it with torch.multinomial."""
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    if not race:
        return int(torch.multinomial(r, 1))
    e = torch.empty_like(r).exponential_()
    return int(r.div_(e).argmax(dim=-1))


def test_pytorch_192577_exponential_zero_picks_a_zero_probability_id():
    # by hand: V = 2, p = (0, 1), q = (1/2, 1/2); drafting 0 is always rejected, the residual (0, 1/2) races
    # and E_0 = -0.0 (probability 2^-53) makes 0 / E_0 NaN, which argmax returns: id 0, where p is 0
    p, q = T([0.0, 1.0]), T([0.5, 0.5])
    ideal = compare(race_verify, p, q)
    assert ideal.verdict == "lossless"  # the race idealized (the default): the edge is stated, not in the law
    real = compare(race_verify, p, q, exponential_zeros=True)
    assert real.verdict == "lossy" and real.tv == F(1, 2**54) and real.outside_support == F(1, 2**54)
    assert real.law == {0: F(1, 2**54), 1: 1 - F(1, 2**54)}
    twin = compare(lambda a, b: race_verify(a, b, race=False), p, q, exponential_zeros=True)
    assert twin.verdict == "lossless"


# --------------------------------------------------------------------------------------------------
# mlx-swift-lm PR #459: the sampler-match (exact-match) rule was called biased. It is lossless; it only
# accepts less: alpha = sum p q instead of sum min(p, q).


def sampler_match(p, q, report=False):
    x = int(torch.multinomial(q, 1))
    y = int(torch.multinomial(p, 1))  # the target's own sample at this position
    out = x if x == y else y
    return (out, x == y) if report else out


def test_mlx_swift_lm_459_sampler_match_is_lossless():
    assert search_lossy(sampler_match, max_vocab=3, max_denominator=3) is None  # no input shows a bias
    p, q = T([0.5, 0.25, 0.25]), T([0.25, 0.25, 0.5])
    assert compare(sampler_match, p, q).verdict == "lossless"
    accepted = trace(lambda a, b: sampler_match(a, b, report=True)[1], (p, q)).law[True]
    assert accepted == F(1, 2) * F(1, 4) + F(1, 4) * F(1, 4) + F(1, 4) * F(1, 2) == F(5, 16)  # sum p q
    assert accepted < F(3, 4)  # sum min(p, q), the rejection sampler's alpha

    # and as a block on rows that differ by position
    def block(target, draft):
        out: list[int] = []
        for _ in range(2):
            x, y = int(torch.multinomial(draft(tuple(out)), 1)), int(torch.multinomial(target(tuple(out)), 1))
            out.append(y)
            if x != y:
                return tuple(out)
        return (*out, int(torch.multinomial(target(tuple(out)), 1)))

    assert compare(block, _rows([0.75, 0.25], [0.25, 0.75]), _rows([0.5, 0.5]), gamma=2).verdict == "lossless"
