"""Multi-draft verification at one position: recursive rejection sampling with or without
replacement (SpecInfer; Jeon et al. 2024) and SpecTr's k-sequential selection, as outcome trees."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.laws._verifiers import (
    _ZERO,
    InvalidVerifier,
    Prefix,
    Row,
    _accept_test,
    _Builder,
    _fr,
    _normalized,
    _pair,
    _positive_int,
    _positive_part,
    _tv,
    _without,
)
from specproof.laws.outcome import Draw, Leaf, Node, OutcomeTree
from specproof.laws.rational import to_fraction

#: Methods of :func:`multidraft_tree`.
MULTIDRAFT_METHODS = ("with-replacement", "without-replacement", "spectr")

#: Most drafts at one position :func:`multidraft_tree` builds (one tree level each).
MAX_DRAFTS = 64


# --------------------------------------------------------------------------- multi-draft


def spectr_rho(p: Any, q: Any, k: int, *, tolerance: Any = Fraction(1, 2**20)) -> Fraction:
    """The smallest valid rho of SpecTr's k-sequential selection, within ``tolerance`` (a valid rho).

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Target and draft rows.
    k : int
        Number of drafts, >= 1.
    tolerance : rational, optional
        Bisection stops when the interval [invalid, valid] is this narrow (default 2^-20).

    Returns
    -------
    Fraction
        A rho in [1, k] for which SpecTr's residual is nonnegative (the rule is valid), at most
        ``tolerance`` above the smallest such rho (the optimum; it may be irrational). 1 when 1
        is valid (k = 1, or p == q).

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        Bad rows or k.

    Notes
    -----
    With ``beta(rho) = sum_x min(q(x), p(x)/rho)``, the rule accepts draft i with probability
    ``min(1, p(x)/(rho q(x)))``; the law of an accepted token is ``min(q, p/rho) * c`` with
    ``c = (1 - (1 - beta)^k) / beta``, so the residual ``p - c min(q, p/rho)`` is nonnegative iff
    ``c <= rho`` (or no token has ``q >= p/rho > 0``). rho = k is always valid (Bernoulli's
    inequality); smaller rho accepts more. Bisection assumes validity is monotone in rho, which
    is what the paper's search for rho* assumes; whatever it returns is checked valid.

    References
    ----------
    Sun et al. 2023, "SpecTr", Section 4 (k-sequential selection; rho* by binary search).
    """
    pv, qv = _pair(p, q)
    _positive_int(k, "k")
    tol = to_fraction(tolerance, what="tolerance")
    if tol <= 0:
        raise InvalidVerifier(f"tolerance must be > 0, got {tol}")
    if _spectr_residual(pv, qv, k, Fraction(1)) is not None:
        return Fraction(1)
    lo, hi = Fraction(1), Fraction(k)
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if _spectr_residual(pv, qv, k, mid) is not None:
            hi = mid
        else:
            lo = mid
    return hi


def _spectr_residual(pv: Row, qv: Row, k: int, rho: Fraction) -> tuple[Row, Fraction] | None:
    """(unnormalized residual p - c min(q, p/rho), beta), or None if it has a negative entry."""
    m = [min(b, a / rho) for a, b in zip(pv, qv)]
    beta = sum(m, _ZERO)
    if beta == 0:
        return tuple(pv), beta
    c = (1 - (1 - beta) ** k) / beta
    res = tuple(a - c * x for a, x in zip(pv, m))
    if any(r < 0 for r in res):
        return None
    return res, beta


def multidraft_tree(p: Any, q: Any, k: int, *, method: str = "with-replacement", rho: Any = None) -> OutcomeTree[int]:
    """One position verified with ``k`` drafts, as an outcome tree.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Target and draft rows, each summing to 1.
    k : int
        Number of drafts, >= 1 (k = 1 is the textbook rule).
    method : {"with-replacement", "without-replacement", "spectr"}
        ``with-replacement``: drafts i.i.d. from q; draft i is accepted with probability
        ``min(1, p_i(x)/q(x))`` where ``p_1 = p`` and, on rejection, ``p_{i+1}`` is the normalized
        residual ``(p_i - q)+`` (SpecInfer's multi-step speculative sampling).
        ``without-replacement``: draft i is drawn from q with the earlier drafts removed and
        renormalized, ``q_i``; accepted with ``min(1, p_i(x)/q_i(x))``; ``p_{i+1}`` is the
        normalized ``(p_i - q_i)+`` (recursive rejection sampling without replacement). If q has
        no mass left (every token of its support drafted), the token is drawn from ``p_i``.
        ``spectr``: drafts i.i.d. from q, draft i accepted with ``min(1, p(x)/(rho q(x)))``; after
        k rejections the token is drawn from SpecTr's residual ``p - c min(q, p/rho)``,
        ``c = (1 - (1 - beta)^k)/beta``, ``beta = sum min(q, p/rho)``.
        After k rejections the first two draw from ``p_{k+1}``.
    rho : rational, optional
        SpecTr's rho in [1, k] (default: :func:`spectr_rho`). Only with ``method="spectr"``.

    Returns
    -------
    OutcomeTree
        Nodes ``draft i`` (a :class:`~specproof.laws.outcome.Draw` per token), ``test i`` (a continuous
        :class:`~specproof.laws.outcome.Coin` below / above a ratio threshold), ``residual draw``.
        Leaves ``Leaf(x, True)`` for an accepted draft, ``Leaf(y, False)`` for the residual token.
        With replacement and SpecTr, the subtree after a rejection at step i is one shared node.
        Rows (recipes in brackets): ``p``, ``q`` (input); with replacement ``r{i}`` (positive-part
        of the step-i target and ``q``) and ``r{i}n`` (normalized), step i's target being ``p``
        then ``r{i-1}n``; without replacement ``q-without-{a-b}`` (without q [a, b]) and
        ``q-without-{a-b}n`` (normalized), ``r{i}[{a-b}]`` / ``r{i}[{a-b}]n`` (step i's residual
        after earlier drafts a, b); SpecTr ``p-over-rho`` (scaled p 1/rho), ``spectr-min`` (minimum
        p-over-rho q), ``spectr-scaled-min`` (scaled by c) and ``spectr-residual`` (positive-part p
        spectr-scaled-min): rho and c are constants of the tree, the rows derive from p and q.

    Raises
    ------
    InvalidDistribution
        Bad rows.
    InvalidVerifier
        Bad k, method, or a rho for which SpecTr's residual is negative (or rho outside [1, k]).

    Notes
    -----
    A step whose target equals its proposal accepts with probability 1 (its residual, 0/0, is
    never built). q(x) = 0: x is never drafted. p_i(x) = 0 < q(x): x is always rejected. Every
    rejection of x has probability ``1 - p_i(x)/q_i(x) > 0`` only where ``p_i(x) < q_i(x)``, so the
    residual after it has positive mass and is 0 at x (and at every earlier draft).

    References
    ----------
    Miao et al. 2024 (SpecInfer), Algorithm 2 and Theorem 4.2; Jeon et al. 2024, Section 3;
    Sun et al. 2023 (SpecTr), the k-sequential selection.

    Examples
    --------
    >>> tree = multidraft_tree(["1/2", "1/2"], ["1", "0"], 2)
    >>> tree.law()
    ((Fraction(1, 2), Fraction(1, 2)), {})
    >>> tree.accept_probability()
    Fraction(1, 2)
    """
    pv, qv = _pair(p, q)
    _positive_int(k, "k")
    if k > MAX_DRAFTS:
        raise InvalidVerifier(f"k = {k} drafts; at most {MAX_DRAFTS} are supported (each adds a level to the tree)")
    if method not in MULTIDRAFT_METHODS:
        raise InvalidVerifier(f"unknown multi-draft method {method!r}; expected one of {MULTIDRAFT_METHODS}")
    if rho is not None and method != "spectr":
        raise InvalidVerifier("rho is a parameter of method='spectr' only")
    b = _Builder(len(pv))
    b.add("p", pv, ("input", "p"), "the target row as given")
    b.add("q", qv, ("input", "q"), "the draft row as given")
    if method == "spectr":
        return b.tree(_spectr_root(b, pv, qv, k, rho))
    replacement = method == "with-replacement"
    # a step (i, its target row, the drafts so far), or ("final", the residual row)
    memo: dict[tuple[int, str, Prefix] | tuple[str, str], Node[int]] = {}

    def step(i: int, target: str, drafted: Prefix) -> Node[int]:
        key = (i, target, drafted)
        if key in memo:
            return memo[key]
        if replacement or not drafted:
            prop: str | None = "q"
        else:
            tag = "-".join(map(str, drafted))
            w = b.add(
                f"q-without-{tag}",
                _without(qv, drafted),
                ("without", "q", list(drafted)),
                f"q with the drafts {list(drafted)} removed (not renormalized)",
            )
            prop = None
            if sum(b.rows[w], _ZERO) > 0:
                prop = b.add(
                    f"q-without-{tag}n",
                    _normalized(b.rows[w]),
                    ("normalized", w),
                    f"draft {i}'s proposal: q without {list(drafted)}, renormalized",
                )
        if prop is None:
            node = b.draw_all("target draw (q has no mass left)", target)
        else:

            def after(x: int, prop: str = prop) -> Node[int]:
                return _accept_test(b, f"test {i}", target, prop, x, lambda: rejected(i, target, prop, drafted + (x,)))

            node = b.node(f"draft {i}", [b.branch(Draw(prop, x), functools.partial(after, x)) for x in range(b.v)])
        memo[key] = node
        return node

    def rejected(i: int, target: str, prop: str, drafted: Prefix) -> Node[int]:
        tag = "" if replacement else "[" + "-".join(map(str, drafted[:-1])) + "]"
        r = b.add(
            f"r{i}{tag}",
            lambda: _positive_part(b.rows[target], b.rows[prop]),
            ("positive-part", target, prop),
            f"residual weights after draft {i} is rejected: ({target} - {prop})+",
        )
        rn = b.add(f"r{i}{tag}n", lambda: _normalized(b.rows[r]), ("normalized", r), f"the target of step {i + 1}")
        if i == k:
            key = ("final", rn)
            if key not in memo:
                memo[key] = b.draw_all("residual draw", rn)
            return memo[key]
        return step(i + 1, rn, () if replacement else drafted)

    return b.tree(step(1, "p", ()))


def _spectr_root(b: _Builder, pv: Row, qv: Row, k: int, rho: Any) -> Node[int]:
    rho = spectr_rho(pv, qv, k) if rho is None else to_fraction(rho, what="rho")
    if not 1 <= rho <= k:
        raise InvalidVerifier(f"SpecTr's rho must lie in [1, k] = [1, {k}], got {rho}")
    got = _spectr_residual(pv, qv, k, rho)
    if got is None:
        raise InvalidVerifier(
            f"rho = {rho} is not valid for k = {k}: SpecTr's residual p - c min(q, p/rho) "
            "has a negative entry (choose a larger rho, e.g. spectr_rho)"
        )
    res, beta = got
    c = (1 - (1 - beta) ** k) / beta if beta else _ZERO
    over = b.add(
        "p-over-rho", tuple(a / rho for a in pv), ("scaled", "p", _fr(1 / rho)), f"p / rho with rho = {_fr(rho)}"
    )
    m = b.add(
        "spectr-min",
        tuple(min(x, y) for x, y in zip(b.rows[over], qv)),
        ("minimum", over, "q"),
        f"min(q, p/rho), mass beta = {_fr(beta)}",
    )
    cm = b.add(
        "spectr-scaled-min",
        tuple(c * x for x in b.rows[m]),
        ("scaled", m, _fr(c)),
        f"c min(q, p/rho), c = (1 - (1 - beta)^k)/beta = {_fr(c)} with k = {k} (0 if beta = 0)",
    )
    b.add("spectr-residual", res, ("positive-part", "p", cm), "p - c min(q, p/rho) (non-negative for a valid rho)")
    memo: dict[int, Node[int]] = {}

    def stage(i: int) -> Node[int]:
        """Draft i and its test (i <= k), or the residual draw (i = k + 1); built once, shared."""
        if i not in memo:
            if i > k:
                memo[i] = b.draw_all("residual draw", "spectr-residual")
            else:
                memo[i] = b.node(
                    f"draft {i}",
                    [
                        b.branch(
                            Draw("q", x),
                            functools.partial(_accept_test, b, f"test {i}", "p-over-rho", "q", x, lambda: stage(i + 1)),
                        )
                        for x in range(b.v)
                    ],
                )
        return memo[i]

    return stage(1)


@dataclass(frozen=True)
class MultiDraftLaw:
    """The exact law of one position verified with k drafts.

    Attributes
    ----------
    tree : OutcomeTree
        The outcomes (see :func:`multidraft_tree`).
    method : str
    drafts : int
        k.
    target : tuple of Fraction, length V
        p.
    law : tuple of Fraction, length V
        P(the verifier emits each token).
    acceptance : Fraction
        P(some draft is accepted).
    accepted_at : tuple of Fraction, length k
        ``accepted_at[i]``: P(draft i + 1 is the one accepted).
    tv : Fraction
        TV(law, p).
    """

    tree: OutcomeTree[int]
    method: str
    drafts: int
    target: Row
    law: Row
    acceptance: Fraction
    accepted_at: tuple[Fraction, ...]
    tv: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the emitted law equals p exactly."""
        return self.law == self.target

    # the position contract's names (specproof.laws.contract.PositionContract)
    @property
    def reference(self) -> Row:
        """The law the output should have: p (:attr:`target`)."""
        return self.target

    @property
    def alpha(self) -> Fraction:
        """P(some draft is accepted): :attr:`acceptance`."""
        return self.acceptance

    @property
    def tv_reference(self) -> Fraction:
        """TV(law, reference): :attr:`tv`."""
        return self.tv


def _accepted_by_label(tree: OutcomeTree[int], count: int, prefix: str = "test ") -> tuple[Fraction, ...]:
    out = [_ZERO] * count
    for node, m in tree.reaches():
        if isinstance(node, Node) and node.label.startswith(prefix):
            i = int(node.label[len(prefix) :]) - 1
            for br in node.branches:
                if isinstance(br.child, Leaf) and br.child.accepted:
                    out[i] += m * br.probability
    return tuple(out)


def multidraft_law(p: Any, q: Any, k: int, *, method: str = "with-replacement", rho: Any = None) -> MultiDraftLaw:
    """The exact emitted law and acceptance of one position verified with ``k`` drafts.

    Parameters
    ----------
    p, q, k, method, rho
        As :func:`multidraft_tree`.

    Returns
    -------
    MultiDraftLaw

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        As :func:`multidraft_tree`.

    References
    ----------
    Miao et al. 2024 (SpecInfer), Theorem 4.2 (multi-step speculative sampling is lossless);
    Sun et al. 2023 (SpecTr), acceptance ``1 - (1 - beta)^k``.

    Examples
    --------
    >>> law = multidraft_law(["1/2", "1/2"], ["1", "0"], 2, method="without-replacement")
    >>> law.lossless, law.acceptance, law.accepted_at
    (True, Fraction(1, 2), (Fraction(1, 2), Fraction(0, 1)))
    """
    tree = multidraft_tree(p, q, k, method=method, rho=rho)
    law, _ = tree.law()
    pv = tree.rows["p"]
    return MultiDraftLaw(tree, method, k, pv, law, tree.accept_probability(), _accepted_by_label(tree, k), _tv(law, pv))


def acceptance_by_k(p: Any, q: Any, max_k: int, *, method: str = "with-replacement") -> tuple[Fraction, ...]:
    """Exact P(some draft accepted) for k = 1..max_k drafts.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
    max_k : int
        >= 1.
    method : str
        As :func:`multidraft_tree` (SpecTr with its default rho for each k).

    Returns
    -------
    tuple of Fraction, length max_k
        Entry k - 1 is the acceptance with k drafts; entry 0 is ``sum min(p, q)``.

    Examples
    --------
    >>> acceptance_by_k(["1/2", "1/2"], ["1", "0"], 2)
    (Fraction(1, 2), Fraction(1, 2))
    """
    _positive_int(max_k, "max_k")
    return tuple(multidraft_tree(p, q, k, method=method).accept_probability() for k in range(1, max_k + 1))
