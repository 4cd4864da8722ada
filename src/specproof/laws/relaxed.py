"""Relaxed acceptance as engines ship it: exact laws, acceptance and TV, as functions of the knobs.

Lossy on purpose: each rule below accepts more drafts than a lossless verifier can, and pays in
total variation. Every function takes the target row p and the law q the drafted token x was drawn
from (pass a one-hot q for an argmax draft: ``argmax_proposal(q)``), works over
:class:`fractions.Fraction` only, and returns a :class:`RelaxedLaw`: the emitted law, the exact
acceptance probability, the exact TV from p and from the rule's own reference (the law the engine's
non-speculative path samples: p, or p's argmax for a greedy-only path).

Rules and the engine code they were read from (semantics restated, no code copied):

- :func:`relaxed_topk_law` -- TensorRT-LLM MTP "relaxed acceptance for thinking tokens"
  (``cpp/tensorrt_llm/kernels/speculativeDecoding/mtpKernels.cu``, ``mtpRelaxedAcceptanceKernel``;
  ``tensorrt_llm/_torch/speculative/mtp.py``, ``sample_and_accept_draft_tokens``), and Modular MAX's
  ``_relaxed_thinking_verdict`` (``max/python/max/nn/sampling/rejection_sampler.py``).
- :func:`sglang_threshold_law`, :func:`sglang_threshold_node_law` -- SGLang's
  ``threshold_single`` / ``threshold_acc`` (``sgl-kernel/csrc/speculative/speculative_sampling.cuh``,
  ``TreeSpeculativeSamplingTargetOnly``; called from ``python/sglang/srt/speculative/eagle_info.py``
  with ``draft_probs`` all zero).
- :func:`logit_epsilon_law`, :func:`logit_epsilon_law_eps` -- Modular MAX's ``RejectionSampler``
  (``max/python/max/nn/sampling/rejection_sampler.py``: reject iff the draft logit exceeds the
  target logit by more than ``eps``; the first rejected position is re-sampled from the target).
- :func:`typical_acceptance_law` -- Medusa's typical acceptance (:func:`specproof.laws.variants.typical_law`).
- :func:`match_law` -- sampler-match (:func:`specproof.rules.audit.position_law` with
  ``Rule(acceptance="match")``): lossless, alpha = sum p q.

:func:`relaxed_block_law` gives any of them over a chain of gamma drafts (rows may depend on the
prefix), composed by :func:`specproof.laws.block.compose` and judged by :func:`specproof.laws.block.stream_tv`.

References: Leviathan et al. 2023, Thm 3.5 (the lossless baseline); Cai et al. 2024 (Medusa)
Sec. 2.3.1; NVIDIA, "DeepSeek R1 MTP Implementation and Optimization" (TensorRT-LLM tech blog 2,
relaxed acceptance).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution, SpecProofError
from specproof.laws._verifiers import _dist as _row
from specproof.laws._verifiers import _model, _pair, _tv
from specproof.laws.block import StepLaw
from specproof.laws.outcome import argmax as _argmax
from specproof.laws.rational import to_fraction

__all__ = [
    "InvalidKnob",
    "Undecided",
    "RelaxedLaw",
    "RelaxedBlockLaw",
    "argmax_proposal",
    "exp_bounds",
    "relaxed_topk_law",
    "sglang_threshold_law",
    "sglang_threshold_node_law",
    "logit_epsilon_law",
    "logit_epsilon_law_eps",
    "typical_acceptance_law",
    "match_law",
    "standard_law",
    "lossless_baseline",
    "relaxed_block_law",
    "RULES",
]

Row = tuple[Fraction, ...]
_ZERO = Fraction(0)
_ONE = Fraction(1)


class InvalidKnob(SpecProofError):
    """A rule's knob is out of its domain (top-k < 1, a threshold <= 0, a factor <= 0)."""


class Undecided(SpecProofError):
    """An exact comparison with exp(eps) was not decided within the term cap."""


# --------------------------------------------------------------------------- helpers


def _one_hot(v: int, i: int) -> Row:
    return tuple(_ONE if j == i else _ZERO for j in range(v))


def _knob(value: Any, name: str) -> Fraction:
    try:
        return to_fraction(value, what=name)
    except SpecProofError as exc:
        raise InvalidKnob(f"{name}: {exc}") from exc


def argmax_proposal(q: Any) -> Row:
    """The one-hot law of an argmax draft: q's argmax (ties to the smallest id) with mass 1.

    Examples
    --------
    >>> argmax_proposal(["1/4", "1/4", "1/2"])
    (Fraction(0, 1), Fraction(0, 1), Fraction(1, 1))
    """
    qv = _row(q, "q")
    return _one_hot(len(qv), _argmax(qv))


@dataclass(frozen=True)
class RelaxedLaw:
    """The exact law of one position of a (relaxed) verifier.

    Attributes
    ----------
    rule : str
        The rule's name (a key of :data:`RULES`).
    knobs : dict of str -> Fraction or int
        The knob values used.
    law : tuple of Fraction, length V
        P(the verifier emits each token).
    accept : tuple of Fraction, length V
        ``a(x)``: P(accept | the drafted token is x).
    alpha : Fraction
        P(the drafted token is accepted) = ``sum_x q(x) a(x)``.
    reference : tuple of Fraction, length V
        What the engine's plain (non-speculative) sampler emits: p, or p's one-hot argmax for a
        greedy-only path.
    tv : Fraction
        ``TV(law, p)``.
    tv_reference : Fraction
        ``TV(law, reference)``; 0 iff the rule is lossless here.
    """

    rule: str
    knobs: dict[str, Any]
    law: Row
    accept: Row
    alpha: Fraction
    reference: Row
    tv: Fraction
    tv_reference: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the emitted law equals the reference exactly."""
        return self.tv_reference == 0


@dataclass(frozen=True)
class _Kernel:
    """One position as data: a(x), and what a rejection of x emits (a row per x, or one row)."""

    accept: Row
    reject: Callable[[int], Row]
    bonus: Row
    reference: Row


def _law_from(
    rule: str,
    knobs: dict[str, Any],
    pv: Row,
    qv: Row,
    kernel: _Kernel,
    reject_mass: Callable[[Row, Row, Row], Row] | None = None,
) -> RelaxedLaw:
    v = len(pv)
    a = kernel.accept
    alpha = sum((qv[x] * a[x] for x in range(v)), _ZERO)
    rej: Sequence[Fraction]
    if reject_mass is not None:
        rej = reject_mass(pv, qv, a)
    else:
        rej = fresh = [_ZERO] * v
        for x in range(v):
            m = qv[x] * (1 - a[x])
            if m:
                for y, r in enumerate(kernel.reject(x)):
                    if r:
                        fresh[y] += m * r
    law = tuple(qv[y] * a[y] + rej[y] for y in range(v))
    return RelaxedLaw(rule, knobs, law, a, alpha, kernel.reference, _tv(law, pv), _tv(law, kernel.reference))


# --------------------------------------------------------------------------- TensorRT-LLM / MAX relaxed top-k


def _relaxed_topk_kernel(pv: Row, topk: int, delta: Fraction, reference: str) -> _Kernel:
    v = len(pv)
    order = sorted(range(v), key=lambda i: (-pv[i], i))
    top = order[0]
    threshold = pv[top] - delta
    a = [_ZERO] * v
    for rank, x in enumerate(order[:topk]):
        if rank > 0 and pv[x] < threshold:
            break
        a[x] = _ONE
    greedy = _one_hot(v, top)
    return _Kernel(
        tuple(a), lambda x: greedy, greedy if reference == "greedy" else pv, greedy if reference == "greedy" else pv
    )


def relaxed_topk_law(p: Any, q: Any, topk: int, delta: Any, *, reference: str = "greedy") -> RelaxedLaw:
    """TensorRT-LLM's (and Modular MAX's) relaxed acceptance for thinking tokens at one position.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
        The target row: the softmax of the target's raw logits (no temperature, no top-k/top-p).
    q : sequence of exact rationals, shape [V]
        The law the drafted token was drawn from (the engines draft by argmax: pass
        :func:`argmax_proposal`).
    topk : int
        ``relaxed_topk`` (>= 1).
    delta : rational
        ``relaxed_delta`` (>= 0), **in probability units**: see Notes.
    reference : {"greedy", "target"}, optional
        The plain path the rule is compared with: TensorRT-LLM's MTP path is greedy only (the
        default); Modular's relaxed overlay sits in its stochastic sampler, whose plain path
        samples p ("target").

    Returns
    -------
    RelaxedLaw
        ``a(x) = 1`` iff x is among the target's ``topk`` most probable tokens and (it is the
        top-1 or ``p(x) >= p(top1) - delta``); a rejection emits the target's top-1 token.
        ``law(y) = q(y) a(y) + [y = top1] (1 - alpha)``.

    Raises
    ------
    InvalidDistribution, InvalidKnob

    Notes
    -----
    Source: ``mtpRelaxedAcceptanceKernel`` (``cpp/tensorrt_llm/kernels/speculativeDecoding/
    mtpKernels.cu``): per draft position, ``threshold = topv[0] - delta``; scanning the top-k
    list, stop at the first rank j > 0 with ``threshold > topv[j]``; accept if the draft id is
    ``topi[j]`` for a rank reached; the first rejection ends the block and the golden token
    ``topi[0]`` is appended (also after all drafts pass). ``topv`` is ``torch.topk`` of
    ``torch.softmax(logits)`` (``mtp.py``: ``process_generation_logits`` names it
    ``gen_logprobs``, and the config comment speaks of log probabilities, but the values are
    probabilities), so delta is compared on probabilities: exactly ``p(x) >= p(top1) - delta``
    here, in rationals (the kernel does it in float32). ``delta`` is in effect only inside
    ``<think>`` ... ``</think>``; outside it is 0. Modular MAX's ``_relaxed_thinking_verdict``
    (``max/python/max/nn/sampling/rejection_sampler.py``) is the same test (``top_probs >=
    top1 - delta`` over ``ops.top_k`` of the untempered softmax; recovery = top-1).

    Special cases: ties in p are ranked by smallest id first (torch.topk's order among equal
    values is unspecified); with ``topk = 1`` or ``delta = 0`` (no ties) it is greedy matching;
    ``topk >= V`` and ``delta >= 1`` accept every draft (accept-all); ``p(x) = 0`` can still be
    accepted when ``delta >= p(top1)`` and x is within the top-k.

    References
    ----------
    NVIDIA TensorRT-LLM tech blog 2, "DeepSeek R1 MTP Implementation and Optimization",
    section "Relaxed Acceptance".

    Examples
    --------
    >>> law = relaxed_topk_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"], 2, "1/4")
    >>> law.alpha, law.law, law.tv_reference
    (Fraction(1, 2), (Fraction(3, 4), Fraction(1, 4), Fraction(0, 1)), Fraction(1, 4))
    """
    pv, qv = _pair(p, q)
    if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
        raise InvalidKnob(f"relaxed_topk must be an int >= 1, got {topk!r}")
    d = _knob(delta, "relaxed_delta")
    if d < 0:
        raise InvalidKnob(f"relaxed_delta must be >= 0, got {d}")
    if reference not in ("greedy", "target"):
        raise InvalidKnob(f"reference must be 'greedy' or 'target', got {reference!r}")
    kernel = _relaxed_topk_kernel(pv, topk, d, reference)
    return _law_from("trtllm-relaxed", {"relaxed_topk": topk, "relaxed_delta": d}, pv, qv, kernel)


# --------------------------------------------------------------------------- SGLang thresholds


def _sglang_check(threshold_single: Any, threshold_acc: Any) -> tuple[Fraction, Fraction]:
    ts, ta = _knob(threshold_single, "threshold_single"), _knob(threshold_acc, "threshold_acc")
    if ts <= 0:
        raise InvalidKnob(f"threshold_single must be > 0, got {ts}")
    if not 0 < ta <= 1:
        raise InvalidKnob(f"threshold_acc must be in (0, 1], got {ta}")
    return ts, ta


def _sglang_accept(px: Fraction, ts: Fraction, ta: Fraction) -> Fraction:
    return _ONE if px >= ts else min(_ONE, px / ta)


def _without(pv: Row, tokens: Sequence[int]) -> Row:
    drop = set(tokens)
    mass = sum((pv[i] for i in range(len(pv)) if i not in drop), _ZERO)
    if mass == 0:
        raise InvalidDistribution("the residual p without the rejected drafts has no mass")
    return tuple(_ZERO if i in drop else pv[i] / mass for i in range(len(pv)))


def _sglang_kernel(pv: Row, ts: Fraction, ta: Fraction) -> _Kernel:
    a = tuple(_sglang_accept(px, ts, ta) for px in pv)
    return _Kernel(a, lambda x: _without(pv, [x]), pv, pv)


def _sglang_reject_mass(pv: Row, qv: Row, a: Row) -> Row:
    # law of a rejection: sum_x q(x)(1 - a(x)) p(y)/(1 - p(x)) for y != x, in O(V).
    w = [qv[x] * (1 - a[x]) / (1 - pv[x]) if qv[x] and a[x] != 1 else _ZERO for x in range(len(pv))]
    s = sum(w, _ZERO)
    return tuple(pv[y] * (s - w[y]) for y in range(len(pv)))


def sglang_threshold_law(p: Any, q: Any, threshold_single: Any = 1, threshold_acc: Any = 1) -> RelaxedLaw:
    """SGLang's target-only verification with ``threshold_single`` / ``threshold_acc``, one draft.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
        The target row as SGLang verifies it (softmax of logits / temperature, top-k and top-p
        renormalized).
    q : sequence of exact rationals, shape [V]
        The law of the drafted token (EAGLE drafts are the draft's top-k: pass
        :func:`argmax_proposal` for a chain).
    threshold_single : rational, optional
        ``--speculative-accept-threshold-single`` (> 0; default 1).
    threshold_acc : rational, optional
        ``--speculative-accept-threshold-acc`` (in (0, 1]; default 1).

    Returns
    -------
    RelaxedLaw
        ``a(x) = 1`` if ``p(x) >= threshold_single``, else ``min(1, p(x) / threshold_acc)``; a
        rejection emits from p without x, renormalized. Reference p.

    Raises
    ------
    InvalidDistribution, InvalidKnob

    Notes
    -----
    Source: ``TreeSpeculativeSamplingTargetOnly`` (``sgl-kernel/csrc/speculative/
    speculative_sampling.cuh``). At a tree node, with one uniform ``coin`` per node and
    ``prob_acc`` the running sum of the target probabilities of the siblings tried so far, a
    child is accepted iff ``coin <= prob_acc / threshold_acc`` or ``p(child) >= threshold_single``;
    a rejected child's ``draft_probs`` entry is set to its target probability, so the final token
    is drawn from ``relu(p - draft_probs)`` = p without the rejected siblings (the caller,
    ``eagle_info.py``, passes ``draft_probs`` all zero: the draft's probabilities are never read).
    The coin is taken as continuous, ``P(coin <= t) = min(1, t)``. With one child this is the
    formula above. The server flags' help text: "Accept a draft token if its probability in the
    target model is greater than this threshold" / "The accept probability of a draft token is
    raised from its target probability p to min(1, p / threshold_acc)".

    Special cases: at (1, 1) it is lossless for every q, with alpha = sum p q (given x, accept
    with p(x), else p without x: the emitted law is p whatever x is); ``p(x) = 1`` is always
    accepted; ``threshold_single <= min p`` or ``threshold_acc <= min over drafted x of p(x)``
    accepts every draft in the support of p.

    References
    ----------
    Li et al. 2024 (EAGLE-2), tree verification; SGLang server arguments
    ``speculative_accept_threshold_single`` / ``speculative_accept_threshold_acc``.

    Examples
    --------
    >>> law = sglang_threshold_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"], 1, "1/2")
    >>> law.alpha, law.law, law.tv
    (Fraction(5, 8), (Fraction(1, 2), Fraction(5, 24), Fraction(7, 24)), Fraction(1, 24))
    """
    pv, qv = _pair(p, q)
    ts, ta = _sglang_check(threshold_single, threshold_acc)
    return _law_from(
        "sglang-threshold",
        {"threshold_single": ts, "threshold_acc": ta},
        pv,
        qv,
        _sglang_kernel(pv, ts, ta),
        _sglang_reject_mass,
    )


def sglang_threshold_node_law(
    p: Any, children: Sequence[int], threshold_single: Any = 1, threshold_acc: Any = 1
) -> RelaxedLaw:
    """One tree node of SGLang's verification: ordered distinct children tried with one coin.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
    children : sequence of int
        The node's children in sibling order (distinct ids; for EAGLE, the draft's top-k).
    threshold_single, threshold_acc : rational, optional
        As :func:`sglang_threshold_law`.

    Returns
    -------
    RelaxedLaw
        ``accept`` is P(child x is the accepted one) (0 off the children); ``alpha`` the
        probability that some child is accepted; a rejection of all emits p without the children.

    Notes
    -----
    Child k (S_k the sum of p over children 1..k) is accepted iff the coin is in
    ``(S_{k-1}/ta, S_k/ta]`` (capped at 1), unless an earlier child was, or, when
    ``p(child_k) >= threshold_single``, for every coin above ``S_{k-1}/ta``. At (1, 1) this is
    :func:`specproof.laws.variants.sibling_tree` (tested).

    Examples
    --------
    >>> law = sglang_threshold_node_law(["1/2", "1/4", "1/4"], [2, 0])
    >>> law.accept, law.alpha, law.lossless
    ((Fraction(1, 2), Fraction(0, 1), Fraction(1, 4)), Fraction(3, 4), True)
    """
    pv = _row(p, "p")
    ts, ta = _sglang_check(threshold_single, threshold_acc)
    kids = list(children)
    if len(set(kids)) != len(kids) or any(not isinstance(c, int) or not 0 <= c < len(pv) for c in kids):
        raise InvalidKnob(f"children must be distinct ids in [0, {len(pv)}), got {kids}")
    chosen = [_ZERO] * len(pv)
    low, s = _ZERO, _ZERO
    for c in kids:
        s += pv[c]
        high = _ONE if pv[c] >= ts else min(_ONE, s / ta)
        if high > low:
            chosen[c] = high - low
            low = high
        if low == 1:
            break
    alpha = sum(chosen, _ZERO)
    law = list(chosen)
    if alpha < 1:
        residual = _without(pv, kids)
        law = [law[y] + (1 - alpha) * residual[y] for y in range(len(pv))]
    law_t = tuple(law)
    return RelaxedLaw(
        "sglang-threshold-node",
        {"threshold_single": ts, "threshold_acc": ta, "children": tuple(kids)},
        law_t,
        tuple(chosen),
        alpha,
        pv,
        _tv(law_t, pv),
        _tv(law_t, pv),
    )


# --------------------------------------------------------------------------- Modular MAX logit epsilon


def _logit_eps_kernel(pv: Row, qv: Row, accept_ratio: Callable[[Fraction, Fraction], bool]) -> _Kernel:
    a = tuple(_ONE if qv[x] and accept_ratio(qv[x], pv[x]) else _ZERO for x in range(len(pv)))
    return _Kernel(a, lambda x: pv, pv, pv)


def _fresh_target_mass(pv: Row, qv: Row, a: Row) -> Row:
    rejected = 1 - sum((qv[x] * a[x] for x in range(len(pv))), _ZERO)
    return tuple(rejected * py for py in pv)


def logit_epsilon_law(p: Any, q: Any, factor: Any = 1, *, proposal: Any = None) -> RelaxedLaw:
    """Modular MAX's ``RejectionSampler`` at one position, with the multiplicative factor as knob.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Target row and the draft's law (the drafted token is sampled from q).
    factor : rational, optional
        ``r > 0``: the draft x is accepted iff ``q(x) <= r p(x)``. For logits that are
        log-probabilities, ``r = exp(eps)`` (use :func:`logit_epsilon_law_eps` to pass eps itself).
    proposal : sequence of exact rationals, shape [V], optional
        The law the drafted token was drawn from, when it is not q (an argmax draft:
        :func:`argmax_proposal` of q, while the test still reads q's logit). Default: q.

    Returns
    -------
    RelaxedLaw
        ``a(x) = [q(x) <= r p(x)]``; a rejection emits a fresh sample of p (Modular samples the
        target at the first rejected position, not the residual): ``law(y) = q(y) a(y) +
        (1 - alpha) p(y)``. Reference p.

    Notes
    -----
    Source: ``RejectionSampler.__call__`` (``max/python/max/nn/sampling/rejection_sampler.py``):
    ``rejected = draft_logit(x) > target_logit(x) + eps`` (class doc: "Accepts a draft token when
    the draft logit for that token does not exceed the target logit by more than eps"; default
    ``eps = 1e-5``); the first rejected position's token is ``topk_fused_sampling`` of the target
    logits there (the bonus row when all pass). No coin is drawn: the test is deterministic.

    From logits to an exact comparison: with ``draft_logit = log q + c_q`` and ``target_logit =
    log p + c_p`` (c the rows' log-normalizers), accept iff ``q(x) <= p(x) exp(eps + c_p - c_q)``.
    The rule is a function of (p, q) only when the offsets are known; the factor r absorbs them,
    and with log-softmax logits (c = 0) ``r = exp(eps)``. ``p(x) = 0`` (logit -inf) is rejected.

    Special cases: lossy for most pairs at every r, even r = 1 (the rejection resamples p instead
    of the residual); lossless when p == q; r -> infinity accepts every draft in the support of p
    (accept-all when supp q is inside supp p); alpha is non-decreasing in r.

    Examples
    --------
    >>> law = logit_epsilon_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"])
    >>> law.alpha, law.law, law.tv
    (Fraction(1, 2), (Fraction(1, 2), Fraction(3, 8), Fraction(1, 8)), Fraction(1, 8))
    """
    pv, qv = _pair(p, q)
    xv = qv if proposal is None else _pair(p, proposal)[1]
    r = _knob(factor, "factor")
    if r <= 0:
        raise InvalidKnob(f"factor must be > 0, got {r}")
    kernel = _logit_eps_kernel(pv, qv, lambda qx, px: qx <= r * px)
    return _law_from("max-logit-eps", {"factor": r}, pv, xv, kernel, _fresh_target_mass)


def _factorial_terms(x: Fraction, n: int) -> tuple[Fraction, Fraction]:
    """sum_{k<n} x^k/k! and the term x^n/n!, for x >= 0."""
    total, term = _ZERO, _ONE
    for k in range(n):
        total += term
        term = term * x / (k + 1)
    return total, term


def exp_bounds(x: Any, terms: int) -> tuple[Fraction, Fraction]:
    """Rational bounds ``lo < exp(x) < hi`` (``lo == hi == 1`` for x = 0) from ``terms`` Taylor terms.

    Parameters
    ----------
    x : rational
    terms : int
        Number of series terms (>= 1); the remainder is bounded by ``t (n+1)/(n+1-|x|)`` with t
        the first omitted term, valid when ``terms + 1 > |x|`` (more terms are taken otherwise).

    Returns
    -------
    tuple of Fraction

    Examples
    --------
    >>> lo, hi = exp_bounds(1, 12)
    >>> Fraction(27182818, 10**7) < lo < hi < Fraction(27182819, 10**7), hi - lo < Fraction(1, 10**8)
    (True, True)
    """
    e = _knob(x, "x")
    if e == 0:
        return _ONE, _ONE
    a = abs(e)
    n = max(int(terms), int(a) + 2)
    lo, t = _factorial_terms(a, n)
    hi = lo + t * (n + 1) / (n + 1 - a)
    lo = lo + t  # the first omitted term is positive
    return (lo, hi) if e > 0 else (1 / hi, 1 / lo)


def logit_epsilon_law_eps(
    p: Any, q: Any, eps: Any = Fraction(1, 100000), *, proposal: Any = None, max_terms: int = 4096
) -> RelaxedLaw:
    """:func:`logit_epsilon_law` with ``r = exp(eps)``, every comparison decided exactly.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
    eps : rational, optional
        Modular's ``eps`` (default 1e-5 as the rational 1/100000), logits taken as log-probabilities.
    proposal : sequence of exact rationals, shape [V], optional
        As :func:`logit_epsilon_law`.
    max_terms : int, optional
        Largest number of series terms before giving up.

    Returns
    -------
    RelaxedLaw
        ``knobs`` holds ``eps``.

    Raises
    ------
    Undecided
        A ratio ``q(x)/p(x)`` was not separated from exp(eps) within ``max_terms`` terms.

    Notes
    -----
    ``q(x) <= p(x) exp(eps)`` iff ``q(x)/p(x) <= exp(eps)``. For a rational eps != 0, exp(eps) is
    irrational (Lindemann), so it never equals the rational ratio: bounds from
    :func:`exp_bounds` are refined (terms doubled) until no ratio lies between them. eps = 0 is
    the factor 1 exactly. No float is used.

    Examples
    --------
    >>> logit_epsilon_law_eps(["1/2", "1/2"], ["2/3", "1/3"], "1/5").alpha
    Fraction(1, 3)
    >>> logit_epsilon_law_eps(["1/2", "1/2"], ["2/3", "1/3"], "3/10").alpha
    Fraction(1, 1)
    """
    pv, qv = _pair(p, q)
    xv = qv if proposal is None else _pair(p, proposal)[1]
    e = _knob(eps, "eps")
    ratios = {qv[x] / pv[x] for x in range(len(pv)) if qv[x] and pv[x]}
    terms = 8
    while True:
        lo, hi = exp_bounds(e, terms)
        if lo == hi or not any(lo <= r <= hi for r in ratios):
            break
        terms *= 2
        if terms > max_terms:
            raise Undecided(f"q(x)/p(x) not separated from exp({e}) within {max_terms} terms")
    if lo == hi:  # eps = 0: the factor is exactly 1
        kernel = _logit_eps_kernel(pv, qv, lambda qx, px: qx <= px)
    else:
        kernel = _logit_eps_kernel(pv, qv, lambda qx, px: px > 0 and qx / px < hi)
    return _law_from("max-logit-eps", {"eps": e}, pv, xv, kernel, _fresh_target_mass)


# --------------------------------------------------------------------------- existing rules, same shape


def typical_acceptance_law(
    p: Any, q: Any, eps: Any = Fraction(9, 100), delta: Any = Fraction(3, 10), offset: Any = 0
) -> RelaxedLaw:
    """Medusa's typical acceptance (:func:`specproof.laws.variants.typical_law`) as a :class:`RelaxedLaw`.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
    eps, delta, offset : rational, optional
        Medusa's ``posterior_threshold``, ``posterior_alpha`` and the entropy offset.

    Returns
    -------
    RelaxedLaw
        ``a(x) = [p(x) > min(eps, delta exp(-H(p)))]``, a rejection emits p's argmax; reference p
        (typical acceptance is Medusa's sampling mode).

    References
    ----------
    Cai et al. 2024 (Medusa), Section 2.3.1.

    Examples
    --------
    >>> typical_acceptance_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]).tv
    Fraction(1, 4)
    """
    from specproof.laws.variants import typical_accepts

    pv, qv = _pair(p, q)
    e, d, o = _knob(eps, "eps"), _knob(delta, "delta"), _knob(offset, "offset")
    if e <= 0 or d <= 0:
        raise InvalidKnob(f"eps and delta must be > 0, got {e}, {d}")
    a = tuple(_ONE if qv[x] and typical_accepts(pv, x, eps=e, delta=d, offset=o) else _ZERO for x in range(len(pv)))
    greedy = _one_hot(len(pv), _argmax(pv))
    return _law_from("typical", {"eps": e, "delta": d, "offset": o}, pv, qv, _Kernel(a, lambda x: greedy, greedy, pv))


def match_law(p: Any, q: Any) -> RelaxedLaw:
    """Sampler-match: accept iff an independent target sample equals the draft; emit that sample.

    The draft x is accepted with probability ``a(x) = p(x)``; a rejection of x emits the target
    sample conditioned on differing from x, ``p(y) / (1 - p(x))`` for ``y != x``. The same law as
    :func:`specproof.rules.audit.position_law` with ``Rule(acceptance="match")`` (a test checks
    the two agree).

    Returns
    -------
    RelaxedLaw
        Lossless; ``a(x) = p(x)``; ``alpha = sum_x p(x) q(x)``.

    Examples
    --------
    >>> law = match_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"])
    >>> law.alpha, law.lossless
    (Fraction(5, 16), True)
    """
    pv, qv = _pair(p, q)

    def other_sample(x: int) -> Row:  # only asked for when p(x) < 1 (a rejection has mass)
        return tuple(_ZERO if y == x else pv[y] / (1 - pv[x]) for y in range(len(pv)))

    return _law_from("match", {}, pv, qv, _Kernel(pv, other_sample, pv, pv))


def standard_law(p: Any, q: Any) -> RelaxedLaw:
    """The textbook verifier (accept with min(1, p/q), residual (p - q)+): the lossless baseline.

    Examples
    --------
    >>> standard_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]).alpha
    Fraction(3, 4)
    """
    pv, qv = _pair(p, q)
    a = tuple(min(_ONE, pv[x] / qv[x]) if qv[x] else _ONE for x in range(len(pv)))
    pos = [max(pv[i] - qv[i], _ZERO) for i in range(len(pv))]
    mass = sum(pos, _ZERO)
    residual = tuple(v / mass for v in pos) if mass else pv
    return _law_from("standard", {}, pv, qv, _Kernel(a, lambda x: residual, pv, pv))


def lossless_baseline(p: Any, q: Any, reference: str = "target") -> Fraction:
    """The largest acceptance of a lossless one-draft verifier for the same proposal q.

    ``reference="target"``: ``sum min(p, q)`` (Leviathan et al. 2023, Thm 3.5: no lossless rule
    accepts more; for a one-hot q, p(x*)). ``reference="greedy"``: ``q(argmax p)`` (a lossless
    greedy verifier accepts only the argmax).

    Examples
    --------
    >>> lossless_baseline(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"], "greedy")
    Fraction(1, 4)
    """
    pv, qv = _pair(p, q)
    if reference == "greedy":
        return qv[_argmax(pv)]
    return sum((min(a, b) for a, b in zip(pv, qv)), _ZERO)


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True, kw_only=True)
class RelaxedBlockLaw(StepLaw):
    """A relaxed rule over a chain of gamma drafts: a :class:`~specproof.laws.block.StepLaw`
    (``gamma``, ``emitted``: the accepted drafts, then the rejection's or the bonus token;
    ``accepted_length_law``, ``expected_accepted``, ``expected_emitted``) with:

    Attributes
    ----------
    stream_tv : Fraction
        TV between the first gamma + 1 tokens (block, then target sampling) and the target's joint
        law (:func:`specproof.laws.block.stream_tv`), against p.
    """

    stream_tv: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the stream's first gamma + 1 tokens have the target's joint law."""
        return self.stream_tv == 0


def _kernel_for(rule: str, pv: Row, qv: Row, knobs: Mapping[str, Any]) -> _Kernel:
    if rule == "trtllm-relaxed":
        return _relaxed_topk_kernel(
            pv, knobs["relaxed_topk"], _knob(knobs["relaxed_delta"], "relaxed_delta"), knobs.get("reference", "greedy")
        )
    if rule == "sglang-threshold":
        ts, ta = _sglang_check(knobs.get("threshold_single", 1), knobs.get("threshold_acc", 1))
        return _sglang_kernel(pv, ts, ta)
    if rule == "max-logit-eps":
        r = _knob(knobs.get("factor", 1), "factor")
        return _logit_eps_kernel(pv, qv, lambda qx, px: qx <= r * px)
    if rule in ("typical", "match", "standard"):
        law = RULES[rule](pv, qv, **dict(knobs))
        if rule == "match":
            return _Kernel(pv, lambda x: _without(pv, [x]), pv, pv)  # the sample, given it is not x
        if rule == "standard":
            pos = [max(pv[i] - qv[i], _ZERO) for i in range(len(pv))]
            mass = sum(pos, _ZERO)
            res = tuple(v / mass for v in pos) if mass else pv
            return _Kernel(law.accept, lambda x: res, pv, pv)
        greedy = _one_hot(len(pv), _argmax(pv))
        return _Kernel(law.accept, lambda x: greedy, greedy, pv)
    raise InvalidKnob(f"unknown rule {rule!r}; known: {sorted(RULES)}")


def relaxed_block_law(target: Any, draft: Any, gamma: int, rule: str, **knobs: Any) -> RelaxedBlockLaw:
    """The exact law of one step of ``rule`` over gamma chained drafts.

    Parameters
    ----------
    target, draft : callable or sequence
        ``target(prefix)`` / ``draft(prefix)``: the rows after the drafted prefix (a sequence is
        used at every position). Drafts are a chain ``x_i ~ q(. | x_<i)`` (a one-hot row for argmax
        drafting).
    gamma : int
        >= 1.
    rule : str
        A key of :data:`RULES`.
    **knobs
        The rule's knobs, as its one-position function names them (``factor`` for max-logit-eps;
        ``reference`` for trtllm-relaxed).

    Returns
    -------
    RelaxedBlockLaw

    Notes
    -----
    Every engine here verifies position by position and stops at the first rejection, which emits
    the rule's rejection token; when all gamma pass, the bonus token comes from the last target row
    (TensorRT-LLM, typical: its argmax; SGLang, MAX, match, textbook: a sample of p). The match
    rule's bonus is a sample of p too.

    Examples
    --------
    >>> law = relaxed_block_law(["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"], 2, "sglang-threshold")
    >>> law.stream_tv, law.expected_accepted
    (Fraction(0, 1), Fraction(105, 256))
    """
    from specproof.laws.block import BlockLaw, Position, compose, stream_tv

    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise InvalidKnob(f"gamma must be an int >= 1, got {gamma!r}")
    tmodel, dmodel = _model(target, "p"), _model(draft, "q")

    def position(prefix: tuple[int, ...]) -> Position:
        pv, qv = _row(tmodel(prefix), "p"), _row(dmodel(prefix), "q")
        kernel = _kernel_for(rule, pv, qv, knobs)
        stop, stopping = [_ZERO] * len(pv), _ZERO
        for x, qx in enumerate(qv):
            a = kernel.accept[x]
            if qx and a != 1:  # x drafted and rejected: the rule's rejection token
                m = qx * (1 - a)
                stopping += m
                for y, r in enumerate(kernel.reject(x)):
                    if r:
                        stop[y] += m * r
        return Position(pv, [qx * kernel.accept[x] for x, qx in enumerate(qv)], _ONE, stop, _ONE, stopping)

    def bonus(prefix: tuple[int, ...]) -> tuple[Row, Fraction, Row]:
        pv = _row(tmodel(prefix), "p")
        return pv, _ONE, _kernel_for(rule, pv, pv, knobs).bonus

    law = compose(position, gamma, bonus)
    assert isinstance(law.emitted, BlockLaw)  # as compose builds it
    emitted = law.emitted.to_dict()
    return RelaxedBlockLaw(
        gamma=gamma,
        emitted=emitted,
        accepted_length_law=law.accepted_length_law,
        stream_tv=stream_tv(emitted, tmodel, gamma),
    )


#: One-position functions by rule name.
RULES: dict[str, Callable[..., RelaxedLaw]] = {
    "trtllm-relaxed": relaxed_topk_law,
    "sglang-threshold": sglang_threshold_law,
    "max-logit-eps": logit_epsilon_law,
    "typical": typical_acceptance_law,
    "match": match_law,
    "standard": standard_law,
}
