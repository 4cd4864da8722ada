"""Exact laws of verifiers beyond one chain: multi-draft, token trees, block verification, typical acceptance.

Every single-position verifier here is written as an :class:`~specproof.laws.outcome.OutcomeTree` in
the existing primitives (``Draw``, ``Coin`` with a continuous coin, ``Choice``), every row it reads
named and given a recipe from :class:`~specproof.laws.outcome.OutcomeTree`'s list, so a checker that
re-derives outcome trees re-verifies it without new code. Where a verifier needs a row no recipe
makes (Medusa's typical-acceptance mask, decided with exp and log), the row's recipe is
``("given",)`` and its derivation names the recipe it would need (:data:`PROPOSED_RECIPES`).
Blocks (block verification, typical acceptance over gamma drafts) are block certificates:
:func:`block_verification_certificate`, :func:`typical_block_certificate`.

=============================== ===================================================================
:func:`multidraft_tree`         k drafts at one position: recursive rejection sampling with or
                                without replacement (SpecInfer; Jeon et al. 2024), or SpecTr's
                                k-sequential selection
:func:`multidraft_law`          its emitted law, acceptance, P(draft i is the one accepted), TV
:func:`acceptance_by_k`         exact acceptance for k = 1..K
:func:`spectr_rho`              the smallest valid rho of SpecTr's k-sequential rule (bisection)
:func:`sibling_tree`            deterministic children at one node: q one-hot, renormalized
                                between siblings
:func:`greedy_sibling_tree`     greedy tree verification at one node (argmax, ties to smallest id)
:func:`topk_tree`               a token tree from the draft's top-k at each node
:func:`deterministic_tree_law`  recursive rejection down a given token tree, bonus at the deepest
                                accepted node
:func:`stochastic_tree_law`     the same with children drafted from q at each node (k per depth)
:func:`greedy_tree_law`         greedy tree verification as its own law
:func:`block_verification_law`  Sun et al. 2024's block verification: joint law, E[accepted],
                                token verification and the full-information bound beside it
:func:`full_information_bound`  ``sum_i sum_{x^i} min(M_b(x^i), M_s(x^i))``
:func:`typical_accepts`         Medusa's ``p(x) > min(eps, delta exp(-H(p)))``, decided exactly
:func:`typical_tree`            one position of typical acceptance as an outcome tree
:func:`typical_law`             its law and exact TV from p
:func:`typical_block_law`       a block of gamma drafts: law, per-position and stream TV
=============================== ===================================================================

References
----------
Miao et al. 2024, "SpecInfer", Section 4 and Algorithm 2 (multi-step speculative sampling, token
trees). Jeon et al. 2024, "Recursive Speculative Decoding" (sampling without replacement). Sun et
al. 2023, "SpecTr: Fast Speculative Decoding via Optimal Transport", the k-sequential selection
(acceptance ``1 - (1 - beta_{p,q}(rho))^k``). Sun et al. 2024 (ICLR 2025), "Block verification
accelerates speculative decoding", Algorithm 2 and Theorems 1-2. Cai et al. 2024, "Medusa",
Section 2.3.1 (typical acceptance) and ``medusa/model/utils.py::evaluate_posterior``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from specproof.errors import InvalidDistribution, SpecProofError
from specproof.laws.outcome import CONTINUOUS, Bound, Branch, Builder, Choice, Coin, Draw, Leaf, Node, OutcomeTree, Rows
from specproof.laws.rational import as_distribution, to_fraction

__all__ = [
    "InvalidVerifier", "Undecidable", "PROPOSED_RECIPES", "MULTIDRAFT_METHODS",
    "multidraft_tree", "MultiDraftLaw", "multidraft_law", "acceptance_by_k", "spectr_rho",
    "sibling_tree", "greedy_sibling_tree", "topk_tree", "TokenTreeLaw", "deterministic_tree_law",
    "stochastic_tree_law", "greedy_tree_law",
    "BlockVerificationLaw", "block_verification_law", "full_information_bound", "block_verification_tree",
    "block_verification_certificate", "typical_block_certificate", "stream_tv",
    "MEDUSA_EPS", "MEDUSA_DELTA", "typical_accepts", "typical_tree", "TypicalLaw", "typical_law",
    "TypicalBlockLaw", "typical_block_law", "extend_by_target", "target_joint",
    "VERIFIERS", "audit_summary", "format_summary",
]

Row = tuple[Fraction, ...]
Prefix = tuple[int, ...]
Model = Callable[[Prefix], Any]
TokenTree = tuple[tuple[int, "TokenTree"], ...]

_ZERO = Fraction(0)

#: Methods of :func:`multidraft_tree`.
MULTIDRAFT_METHODS = ("with-replacement", "without-replacement", "spectr")

#: Recipes a checker would need for rows that are ``("given",)`` here (none exists in
#: :class:`~specproof.laws.outcome.OutcomeTree`'s list): name -> (form, meaning). (``scaled`` and
#: ``minimum``, proposed for SpecTr, are recipes now.)
PROPOSED_RECIPES = {
    "typical-mask": ('("typical-mask", p, "eps", "delta")',
                     "1 where p_i > min(eps, delta * exp(-H(p))), else 0, decided exactly"),
}


#: Most drafts at one position :func:`multidraft_tree` builds (one tree level each).
MAX_DRAFTS = 64


class InvalidVerifier(SpecProofError):
    """A verifier's parameters are bad: k < 1, an invalid SpecTr rho, a malformed token tree."""


class Undecidable(SpecProofError):
    """Typical acceptance's comparison with an irrational threshold was not decided within the
    precision cap (the token's probability equals the threshold, or is closer than the cap)."""


# --------------------------------------------------------------------------- small helpers


def _dist(values: Any, name: str) -> Row:
    return as_distribution(values, name).fractions()


def _pair(p: Any, q: Any) -> tuple[Row, Row]:
    pv, qv = _dist(p, "p"), _dist(q, "q")
    if len(pv) != len(qv):
        raise InvalidDistribution(f"p has V={len(pv)} entries but q has V={len(qv)}")
    return pv, qv


def _model(rows: Any) -> Model:
    return rows if callable(rows) else (lambda prefix: rows)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidVerifier(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _positive_part(a: Row, b: Row) -> Row:
    return tuple(max(x - y, _ZERO) for x, y in zip(a, b))


def _normalized(a: Row) -> Row:
    total = sum(a, _ZERO)
    return tuple(x / total for x in a)


def _without(a: Row, tokens: Sequence[int]) -> Row:
    drop = set(tokens)
    return tuple(_ZERO if i in drop else x for i, x in enumerate(a))


def _argmax(row: Sequence[Fraction]) -> int:
    return max(range(len(row)), key=lambda i: (row[i], -i))


def _tv(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sum((abs(x - y) for x, y in zip(a, b)), _ZERO) / 2


def _dict_tv(a: Mapping, b: Mapping) -> Fraction:
    return sum((abs(a.get(k, _ZERO) - b.get(k, _ZERO)) for k in set(a) | set(b)), _ZERO) / 2


def _fr(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


class _Builder(Builder):
    """Collects named rows with recipes and builds nodes whose branch probabilities come from
    their primitives (a branch of probability 0 is left out, its child never built)."""

    def __init__(self, v: int):
        self.v = v
        self.rows = Rows()
        self.recipes: dict[str, tuple] = {}
        self.derivations: dict[str, str] = {}

    def add(self, name: str, values: "Row | Callable[[], Row]", recipe: tuple, why: str) -> str:
        """Add row ``name`` (``values`` may be a thunk, called only if the row is new)."""
        if name not in self.rows:
            self.rows[name] = tuple(values() if callable(values) else values)
            self.recipes[name] = recipe
            self.derivations[name] = why
        return name

    def draw_all(self, label: str, row: str, accepted: bool = False) -> Node:
        return self.node(label, [self.branch(Draw(row, y), Leaf(y, accepted)) for y in range(self.v)])

    def tree(self, root) -> OutcomeTree:
        return OutcomeTree(self.rows, root, self.v, dict(self.derivations), dict(self.recipes))


# --------------------------------------------------------------------------- multi-draft


def _accept_test(b: _Builder, label: str, top: str, bottom: str, x: int, rejected: Callable[[], Node]) -> Node:
    """Accept x iff u < top[x]/bottom[x] (continuous coin); else the ``rejected`` subtree."""
    ratio = ("ratio", top, bottom, x)
    return b.node(label, [b.branch(Coin(CONTINUOUS, upper=Bound(ratio, True)), Leaf(x, True)),
                          b.branch(Coin(CONTINUOUS, lower=Bound(ratio, False)), rejected)])


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


def multidraft_tree(p: Any, q: Any, k: int, *, method: str = "with-replacement", rho: Any = None) -> OutcomeTree:
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
    memo: dict[tuple, Node] = {}

    def step(i: int, target: str, drafted: Prefix) -> Node:
        key = (i, target, drafted)
        if key in memo:
            return memo[key]
        if replacement or not drafted:
            prop: str | None = "q"
        else:
            tag = "-".join(map(str, drafted))
            w = b.add(f"q-without-{tag}", _without(qv, drafted), ("without", "q", list(drafted)),
                      f"q with the drafts {list(drafted)} removed (not renormalized)")
            prop = None
            if sum(b.rows[w], _ZERO) > 0:
                prop = b.add(f"q-without-{tag}n", _normalized(b.rows[w]), ("normalized", w),
                             f"draft {i}'s proposal: q without {list(drafted)}, renormalized")
        if prop is None:
            node = b.draw_all("target draw (q has no mass left)", target)
        else:
            def after(x: int, prop: str = prop) -> Node:
                return _accept_test(b, f"test {i}", target, prop, x, lambda: rejected(i, target, prop, drafted + (x,)))

            node = b.node(f"draft {i}", [b.branch(Draw(prop, x), lambda x=x: after(x)) for x in range(b.v)])
        memo[key] = node
        return node

    def rejected(i: int, target: str, prop: str, drafted: Prefix) -> Node:
        tag = "" if replacement else "[" + "-".join(map(str, drafted[:-1])) + "]"
        r = b.add(f"r{i}{tag}", lambda: _positive_part(b.rows[target], b.rows[prop]), ("positive-part", target, prop),
                  f"residual weights after draft {i} is rejected: ({target} - {prop})+")
        rn = b.add(f"r{i}{tag}n", lambda: _normalized(b.rows[r]), ("normalized", r), f"the target of step {i + 1}")
        if i == k:
            key = ("final", rn)
            if key not in memo:
                memo[key] = b.draw_all("residual draw", rn)
            return memo[key]
        return step(i + 1, rn, () if replacement else drafted)

    return b.tree(step(1, "p", ()))


def _spectr_root(b: _Builder, pv: Row, qv: Row, k: int, rho: Any) -> Node:
    rho = spectr_rho(pv, qv, k) if rho is None else to_fraction(rho, what="rho")
    if not 1 <= rho <= k:
        raise InvalidVerifier(f"SpecTr's rho must lie in [1, k] = [1, {k}], got {rho}")
    got = _spectr_residual(pv, qv, k, rho)
    if got is None:
        raise InvalidVerifier(f"rho = {rho} is not valid for k = {k}: SpecTr's residual p - c min(q, p/rho) "
                              "has a negative entry (choose a larger rho, e.g. spectr_rho)")
    res, beta = got
    c = (1 - (1 - beta) ** k) / beta if beta else _ZERO
    over = b.add("p-over-rho", tuple(a / rho for a in pv), ("scaled", "p", _fr(1 / rho)), f"p / rho with rho = {_fr(rho)}")
    m = b.add("spectr-min", tuple(min(x, y) for x, y in zip(b.rows[over], qv)), ("minimum", over, "q"),
              f"min(q, p/rho), mass beta = {_fr(beta)}")
    cm = b.add("spectr-scaled-min", tuple(c * x for x in b.rows[m]), ("scaled", m, _fr(c)),
               f"c min(q, p/rho), c = (1 - (1 - beta)^k)/beta = {_fr(c)} with k = {k} (0 if beta = 0)")
    b.add("spectr-residual", res, ("positive-part", "p", cm), "p - c min(q, p/rho) (non-negative for a valid rho)")
    memo: dict[int, Node] = {}

    def stage(i: int) -> Node:
        """Draft i and its test (i <= k), or the residual draw (i = k + 1); built once, shared."""
        if i not in memo:
            if i > k:
                memo[i] = b.draw_all("residual draw", "spectr-residual")
            else:
                memo[i] = b.node(f"draft {i}", [b.branch(Draw("q", x), lambda x=x: _accept_test(
                    b, f"test {i}", "p-over-rho", "q", x, lambda: stage(i + 1))) for x in range(b.v)])
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

    tree: OutcomeTree
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


def _accepted_by_label(tree: OutcomeTree, count: int, prefix: str = "test ") -> tuple[Fraction, ...]:
    out = [_ZERO] * count
    for node, m in tree.reaches():
        if isinstance(node, Node) and node.label.startswith(prefix):
            i = int(node.label[len(prefix):]) - 1
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
    return MultiDraftLaw(tree, method, k, pv, law, tree.accept_probability(), _accepted_by_label(tree, k),
                         _tv(law, pv))


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


# --------------------------------------------------------------------------- token trees


def _parse_tree(tree: Any, where: str = "tree") -> TokenTree:
    """A token tree as nested ``((token, children), ...)``; accepts lists (JSON) too."""
    if not isinstance(tree, (list, tuple)):
        raise InvalidVerifier(f"{where} must be a list of [token, children] pairs, got {type(tree).__name__}")
    out = []
    for i, item in enumerate(tree):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InvalidVerifier(f"{where}[{i}] must be a [token, children] pair, got {item!r}")
        token, children = item
        if isinstance(token, bool) or not isinstance(token, int) or token < 0:
            raise InvalidVerifier(f"{where}[{i}] has token {token!r}, not a token id >= 0")
        out.append((token, _parse_tree(children, f"{where}[{i}][1]")))
    return tuple(out)


def _tree_depth(tree: TokenTree) -> int:
    return max((1 + _tree_depth(c) for _, c in tree), default=0)


def _check_tokens(tokens: Sequence[int], v: int) -> None:
    for t in tokens:
        if not 0 <= t < v:
            raise InvalidVerifier(f"token tree child {t} is not a token id in [0, {v})")


def sibling_tree(p: Any, tokens: Sequence[int]) -> OutcomeTree:
    """One node of a deterministic token tree: its children verified in order, q one-hot.

    Child j (token t_j) is accepted with probability ``p_j(t_j)`` (the ratio test with q one-hot
    at t_j: ``min(1, p_j(t_j)/1)``); on rejection ``p_{j+1}`` is the normalized ``(p_j - onehot(t_j))+``,
    that is p_j with t_j removed and renormalized; after every child is rejected the token is
    drawn from the last residual.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
        The target row at the node.
    tokens : sequence of int
        The children's tokens in verification order (repeats allowed; may be empty).

    Returns
    -------
    OutcomeTree
        Nodes ``child j`` (two coin branches) and ``residual draw``. Rows: ``p`` (input),
        ``uniform`` (uniform), ``only-{t}`` (without uniform, every id but t), ``onehot-{t}``
        (normalized ``only-{t}``: q one-hot at t), ``r{j}`` (positive-part of step j's target and
        ``onehot-{t_j}``) and ``r{j}n`` (normalized).

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        Bad row, or a token outside [0, V).

    Notes
    -----
    A repeated token is never accepted the second time (the residual is 0 there). A child whose
    draft probability is 0 is still verified: q is one-hot at it. The law is p exactly: it is
    rejection sampling of p with each proposal a point mass (equivalently, sample y ~ p and accept
    the child with token y if there is one).

    References
    ----------
    Miao et al. 2024 (SpecInfer), Section 4 (token tree verification); SGLang's
    ``tree_speculative_sampling_target_only`` (one-hot draft probabilities between siblings).

    Examples
    --------
    >>> tree = sibling_tree(["1/2", "1/4", "1/4"], [1, 1, 2])
    >>> tree.law()[0], tree.accept_probability()
    ((Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), Fraction(1, 2))
    """
    pv = _dist(p, "p")
    v = len(pv)
    _check_tokens(tokens, v)
    b = _Builder(v)
    b.add("p", pv, ("input", "p"), "the target row at the node")
    b.add("uniform", tuple(Fraction(1, v) for _ in range(v)), ("uniform",), "1/V for every token")

    def step(j: int, target: str) -> Node:
        if j == len(tokens):
            return b.draw_all("residual draw", target)
        t = tokens[j]
        others = [i for i in range(v) if i != t]
        only = b.add(f"only-{t}", lambda: _without(b.rows["uniform"], others), ("without", "uniform", others),
                     f"1/V at {t}, 0 elsewhere")
        hot = b.add(f"onehot-{t}", lambda: _normalized(b.rows[only]), ("normalized", only), f"q one-hot at {t}")

        def rejected() -> Node:
            r = b.add(f"r{j + 1}", _positive_part(b.rows[target], b.rows[hot]), ("positive-part", target, hot),
                      f"{target} without token {t}")
            rn = b.add(f"r{j + 1}n", _normalized(b.rows[r]), ("normalized", r), f"the target after child {j + 1}")
            return step(j + 1, rn)

        return _accept_test(b, f"child {j + 1}", target, hot, t, rejected)

    return b.tree(step(0, "p"))


def greedy_sibling_tree(p: Any, tokens: Sequence[int]) -> OutcomeTree:
    """One node of greedy tree verification: accept the child whose token is p's argmax.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
    tokens : sequence of int
        The children's tokens (repeats allowed; may be empty).

    Returns
    -------
    OutcomeTree
        Deterministic: a chain of :class:`~specproof.laws.outcome.Choice` nodes ``child j`` (argmax is /
        is not t_j) ending in ``Leaf(argmax, True)`` at the first child holding the argmax, or in a
        ``greedy token`` node with ``Leaf(argmax, False)``. Row: ``p`` (input).

    Notes
    -----
    Tie rule: the argmax is the smallest id among the tokens of largest probability (as
    :class:`~specproof.laws.outcome.Choice` and ``Rows.argmax`` compute it); with repeated child
    tokens the first child holding the argmax is the one accepted.

    Examples
    --------
    >>> greedy_sibling_tree(["1/4", "3/8", "3/8"], [2, 1]).law()[0]
    (Fraction(0, 1), Fraction(1, 1), Fraction(0, 1))
    """
    pv = _dist(p, "p")
    _check_tokens(tokens, len(pv))
    b = _Builder(len(pv))
    b.add("p", pv, ("input", "p"), "the target row at the node")
    top = b.rows.argmax("p")
    node: Node = b.node("greedy token", [b.branch(Choice(("argmax-is", "p", top), "the target's argmax"),
                                                  Leaf(top, False))])
    for j in range(len(tokens) - 1, -1, -1):
        t = tokens[j]
        if t == top:
            node = b.node(f"child {j + 1}", [b.branch(Choice(("argmax-is", "p", t)), Leaf(t, True))])
        else:
            node = b.node(f"child {j + 1}", [b.branch(Choice(("argmax-is-not", "p", t)), node)])
    return b.tree(node)


def topk_tree(draft: Any, widths: Sequence[int]) -> TokenTree:
    """A token tree with the draft's top ``widths[d]`` tokens as the children of each depth-d node.

    Parameters
    ----------
    draft : callable or sequence
        ``draft(prefix)``: the draft row after ``prefix`` (a sequence: the same row everywhere).
    widths : sequence of int
        Children per node at each depth, each >= 1; ``len(widths)`` is the depth.

    Returns
    -------
    tuple
        ``((token, children), ...)``; children in decreasing draft probability, ties to the
        smallest id. A child may have draft probability 0 when fewer tokens have mass.

    Examples
    --------
    >>> topk_tree(["1/2", "1/3", "1/6"], [2, 1])
    ((0, ((0, ()),)), (1, ((0, ()),)))
    """
    dmodel = _model(draft)
    for w in widths:
        _positive_int(w, "tree width")

    def build(prefix: Prefix, depth: int) -> TokenTree:
        if depth == len(widths):
            return ()
        row = _dist(dmodel(prefix), "q")
        order = sorted(range(len(row)), key=lambda i: (-row[i], i))[: widths[depth]]
        return tuple((t, build(prefix + (t,), depth + 1)) for t in order)

    return build((), 0)


@dataclass(frozen=True)
class TokenTreeLaw:
    """The exact law of one token-tree verification step.

    Attributes
    ----------
    depth : int
        The tree's depth (the most drafts that can be accepted).
    emitted : dict of tuple of int -> Fraction
        The law of the emitted path: the accepted tokens then one more (the residual token at the
        deepest accepted node, or the bonus token when that node has no children).
    accepted_length : tuple of Fraction, length depth + 1
        P(exactly i tokens accepted).
    expected_accepted : Fraction
    expected_emitted : Fraction
        ``expected_accepted + 1``.
    positions : dict of tuple of int -> OutcomeTree
        At every reachable tree node with children (keyed by its path), the node's outcome tree.
    node_tv : dict of tuple of int -> Fraction
        At every reachable node, TV between the law of the next emitted token and the reference:
        the target row (sampling verifiers) or the one-hot at its argmax (greedy).
    reference : str
        ``"target"`` or ``"greedy target"``.
    """

    depth: int
    emitted: dict[Prefix, Fraction]
    accepted_length: tuple[Fraction, ...]
    expected_accepted: Fraction
    expected_emitted: Fraction
    positions: dict[Prefix, OutcomeTree]
    node_tv: dict[Prefix, Fraction]
    reference: str

    @property
    def lossless(self) -> bool:
        """True iff at every reachable node the next token has the reference law."""
        return all(v == 0 for v in self.node_tv.values())


def _walk_tree(target: Model, depth: int, position: Callable[[Prefix, Any, Row], OutcomeTree | None],
               child_state: Callable[[Any, int], Any], root_state: Any, greedy: bool) -> TokenTreeLaw:
    """Walk accepted tree nodes: ``position(path, state, p)`` gives the node's outcome tree (None at
    a node without children: the bonus token), ``child_state(state, token)`` the accepted child's."""
    emitted: dict[Prefix, Fraction] = {}
    lengths = [_ZERO] * (depth + 1)
    positions: dict[Prefix, OutcomeTree] = {}
    node_tv: dict[Prefix, Fraction] = {}
    stack: list[tuple[Prefix, Fraction, Any]] = [((), Fraction(1), root_state)]
    while stack:
        path, reach, state = stack.pop()
        try:
            pv = _dist(target(path), "p")
        except InvalidDistribution as exc:
            raise type(exc)(f"after the path {path}: {exc}") from None
        top = _argmax(pv)
        ref = tuple(Fraction(int(i == top)) for i in range(len(pv))) if greedy else pv
        tree = position(path, state, pv)
        if tree is None:  # no children: the bonus token (greedy: the argmax)
            lengths[len(path)] += reach
            for y, m in enumerate(ref):
                if m:
                    emitted[path + (y,)] = emitted.get(path + (y,), _ZERO) + reach * m
            node_tv[path] = _ZERO
            continue
        positions[path] = tree
        law, _ = tree.law()
        node_tv[path] = _tv(law, ref)
        for (y, accepted), m in tree.outcomes().items():
            if accepted:
                stack.append((path + (y,), reach * m, child_state(state, y)))
            else:
                lengths[len(path)] += reach * m
                emitted[path + (y,)] = emitted.get(path + (y,), _ZERO) + reach * m
    expected = sum((i * m for i, m in enumerate(lengths)), _ZERO)
    return TokenTreeLaw(depth, emitted, tuple(lengths), expected, expected + 1, positions, node_tv,
                        "greedy target" if greedy else "target")


def _first_child(tree: TokenTree, token: int) -> TokenTree:
    for t, children in tree:
        if t == token:
            return children
    raise InvalidVerifier(f"token {token} was accepted but is not a child")  # not reachable


def deterministic_tree_law(target: Any, tree: Any) -> TokenTreeLaw:
    """Recursive rejection down a given token tree, q one-hot between siblings; bonus at the end.

    Parameters
    ----------
    target : callable or sequence
        ``target(path)``: the target row after the path of accepted tokens (a sequence: the same
        row at every node).
    tree : sequence
        ``[[token, children], ...]`` (nested; ``[]`` for no children), or :func:`topk_tree`'s
        output. Siblings are verified in the order given.

    Returns
    -------
    TokenTreeLaw
        ``positions[path]`` is :func:`sibling_tree` of the node's row and children.

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        Bad rows or a malformed tree.

    Notes
    -----
    At each node, :func:`sibling_tree` emits one token with the target's law; if it is a child's
    token (the first child holding it) the walk goes on below that child, otherwise the step ends
    with that token. At a node without children the bonus token is drawn from the target. So the
    next token's law at every reachable node is the target's (``lossless``), and the emitted path
    continued by target sampling has the target's joint law.

    References
    ----------
    Miao et al. 2024 (SpecInfer), Section 4 and Theorem 4.2; Li et al. 2024 (EAGLE-2) and SGLang
    for deterministic top-k trees.

    Examples
    --------
    >>> law = deterministic_tree_law(["1/2", "1/2"], [[0, [[1, []]]]])
    >>> law.accepted_length, law.lossless
    ((Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), True)
    """
    parsed = _parse_tree(tree)
    tmodel = _model(target)

    def position(path: Prefix, node: TokenTree, pv: Row) -> OutcomeTree | None:
        return sibling_tree(pv, [t for t, _ in node]) if node else None

    return _walk_tree(tmodel, _tree_depth(parsed), position, _first_child, parsed, greedy=False)


def greedy_tree_law(target: Any, tree: Any) -> TokenTreeLaw:
    """Greedy tree verification: accept the child that is the target's argmax, go on below it.

    Parameters
    ----------
    target : callable or sequence
        As :func:`deterministic_tree_law`.
    tree : sequence
        As :func:`deterministic_tree_law`.

    Returns
    -------
    TokenTreeLaw
        One emitted path with probability 1; its reference is greedy decoding of the target, so
        ``lossless`` says the path equals the target's greedy continuation.

    Notes
    -----
    Tie rule: the smallest id among the tokens of largest target probability; among repeated
    children the first. At a node without children, or when no child is the argmax, the argmax
    is emitted (the bonus / correction token).

    Examples
    --------
    >>> greedy_tree_law(["1/4", "3/4"], [[0, []], [1, [[0, []]]]]).emitted
    {(1, 1): Fraction(1, 1)}
    """
    parsed = _parse_tree(tree)

    def position(path: Prefix, node: TokenTree, pv: Row) -> OutcomeTree | None:
        return greedy_sibling_tree(pv, [t for t, _ in node]) if node else None

    return _walk_tree(_model(target), _tree_depth(parsed), position, _first_child, parsed, greedy=True)


def stochastic_tree_law(target: Any, draft: Any, branching: Sequence[int], *,
                        method: str = "with-replacement") -> TokenTreeLaw:
    """A token tree whose children are drafted from q at each node, verified by recursive rejection.

    Parameters
    ----------
    target, draft : callable or sequence
        ``target(path)``, ``draft(path)``: rows after a path (a sequence: the same row everywhere).
    branching : sequence of int
        ``branching[d]`` children per node at depth d (SpecInfer's expansion configuration); the
        depth is ``len(branching)``.
    method : {"with-replacement", "without-replacement", "spectr"}
        How the children of a node are drafted and verified (:func:`multidraft_tree`).

    Returns
    -------
    TokenTreeLaw
        ``positions[path]`` is :func:`multidraft_tree` of the node's rows.

    Notes
    -----
    Every node at depth d has the same number of children, and each child's subtree is drafted
    independently of the verification at its parent, so which sibling was accepted does not
    change the law below: the state after an accepted token y is the path and the depth.

    References
    ----------
    Miao et al. 2024 (SpecInfer), Section 4 (expansion-based token trees, multi-step speculative
    sampling) and Theorem 4.2.

    Examples
    --------
    >>> law = stochastic_tree_law(["1/2", "1/2"], ["1", "0"], [2])
    >>> law.accepted_length, law.lossless
    ((Fraction(1, 2), Fraction(1, 2)), True)
    """
    widths = [_positive_int(k, "branching") for k in branching]
    dmodel = _model(draft)

    def position(path: Prefix, depth: int, pv: Row) -> OutcomeTree | None:
        if depth == len(widths):
            return None
        try:
            qv = _dist(dmodel(path), "q")
        except InvalidDistribution as exc:
            raise type(exc)(f"after the path {path}: {exc}") from None
        return multidraft_tree(pv, qv, widths[depth], method=method)

    return _walk_tree(_model(target), len(widths), position, lambda depth, y: depth + 1, 0, greedy=False)


# --------------------------------------------------------------------------- block verification


def extend_by_target(starts: Mapping[Prefix, Fraction], target: Model, length: int) -> dict[Prefix, Fraction]:
    """Continue each sequence by plain target sampling to ``length`` tokens; sum the masses.

    Parameters
    ----------
    starts : mapping of tuple of int -> Fraction
        Sequences (at most ``length`` long) and their probabilities.
    target : callable
        ``target(prefix)``: the target row after ``prefix``.
    length : int

    Returns
    -------
    dict of tuple of int -> Fraction
        The law of the first ``length`` tokens.
    """
    out: dict[Prefix, Fraction] = {}
    frontier = [(s, m) for s, m in starts.items() if m]
    while frontier:
        seq, m = frontier.pop()
        if len(seq) >= length:
            out[seq[:length]] = out.get(seq[:length], _ZERO) + m
            continue
        for y, py in enumerate(_dist(target(seq), "p")):
            if py:
                frontier.append((seq + (y,), m * py))
    return out


def target_joint(target: Any, length: int) -> dict[Prefix, Fraction]:
    """The target's joint law of its first ``length`` tokens (by enumeration)."""
    return extend_by_target({(): Fraction(1)}, _model(target), length)


def stream_tv(emitted: Mapping[Prefix, Fraction], target: Any, gamma: int) -> Fraction:
    """TV between the stream (an emitted block, continued by target sampling) and the target's
    joint law over gamma + 1 tokens, reading the target only where blocks pass.

    The gap ``F = T - E`` (target minus stream probability of a prefix) obeys ``F(()) = 1`` and
    ``F(s + (t,)) = F(s) p_s(t) - emitted(s + (t,))``; below a prefix that no emitted block
    passes through, F is ``F(s)`` times the target's conditional probabilities, so that subtree
    adds ``|F(s)|``. The TV is half the sum. Equal to the enumeration
    ``TV(extend_by_target(emitted, target, gamma + 1), target_joint(target, gamma + 1))``
    (tested), but it queries the target only after live prefixes: usable at V = 49,152.

    Parameters
    ----------
    emitted : mapping of tuple of int -> Fraction
        The law of the emitted block (blocks of 1 to gamma + 1 ids).
    target : callable or sequence
        ``target(prefix)``.
    gamma : int

    Returns
    -------
    Fraction

    Examples
    --------
    >>> stream_tv({(0,): Fraction(1)}, ["1/2", "1/2"], 1)
    Fraction(1, 2)
    """
    tmodel = _model(target)
    live = {b[:i] for b in emitted for i in range(len(b))}
    level, total = {(): Fraction(1)}, _ZERO
    for depth in range(1, gamma + 2):
        nxt: dict[Prefix, Fraction] = {}
        for prefix, gap in level.items():
            if gap:
                for t, pt in enumerate(_dist(tmodel(prefix), "p")):
                    if pt:
                        nxt[prefix + (t,)] = gap * pt
        for b, m in emitted.items():
            if len(b) == depth:
                nxt[b] = nxt.get(b, _ZERO) - m
        level = {}
        for prefix, gap in nxt.items():
            if prefix in live:
                level[prefix] = gap
            else:
                total += abs(gap)
    return total / 2


def full_information_bound(target: Any, draft: Any, gamma: int) -> Fraction:
    """``sum_{i=1..gamma} sum_{x^i} min(M_b(x^i), M_s(x^i))``, joint prefix probabilities.

    The largest expected number of accepted drafts any valid verifier can reach when it sees the
    joint probabilities of the whole block (Sun et al. 2024, Section 3's upper bound).

    Parameters
    ----------
    target, draft : callable or sequence
        Rows after each prefix (M_b: target, M_s: draft).
    gamma : int
        Draft length, >= 1.

    Returns
    -------
    Fraction

    Examples
    --------
    >>> full_information_bound(["1/3", "2/3"], ["2/3", "1/3"], 2)
    Fraction(4, 3)
    """
    _positive_int(gamma, "gamma")
    tmodel, dmodel = _model(target), _model(draft)
    total = _ZERO
    level = [((), Fraction(1), Fraction(1))]
    for _ in range(gamma):
        nxt = []
        for prefix, mb, ms in level:
            pv, qv = _pair(tmodel(prefix), dmodel(prefix))
            for x, (a, c) in enumerate(zip(pv, qv)):
                jb, js = mb * a, ms * c
                if jb and js:
                    total += min(jb, js)
                    nxt.append((prefix + (x,), jb, js))
        level = nxt
    return total


@dataclass(frozen=True)
class BlockVerificationLaw:
    """The exact law of one step of block verification, with token verification beside it.

    Attributes
    ----------
    gamma : int
    emitted : dict of tuple of int -> Fraction
        The law of the emitted block ``(X^tau, Y)``.
    accepted_length : tuple of Fraction, length gamma + 1
        P(tau = i).
    expected_accepted : Fraction
        E[tau].
    expected_emitted : Fraction
        E[tau] + 1.
    token_expected_accepted : Fraction
        E[accepted] of token verification (the textbook chain) on the same rows.
    upper_bound : Fraction
        :func:`full_information_bound`.
    stream_tv : Fraction
        TV between the first gamma + 1 tokens (block, then target sampling) and the target's joint
        law: 0 iff lossless.
    """

    gamma: int
    emitted: dict[Prefix, Fraction]
    accepted_length: tuple[Fraction, ...]
    expected_accepted: Fraction
    expected_emitted: Fraction
    token_expected_accepted: Fraction
    upper_bound: Fraction
    stream_tv: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the stream's first gamma + 1 tokens have the target's joint law."""
        return self.stream_tv == 0


def _block_weights(tmodel: Model, dmodel: Model, block: Prefix, gamma: int):
    """Algorithm 2's p_i and h_i (i = 0..gamma) and the residual weights at each i < gamma."""
    ps = [Fraction(1)]
    hs: list[Fraction] = [_ZERO]
    res: list[Row | None] = []
    for i in range(gamma + 1):
        prefix = block[:i]
        if i > 0:
            pv, qv = _pair(tmodel(block[:i - 1]), dmodel(block[:i - 1]))
            x = block[i - 1]
            ps.append(min(ps[-1] * pv[x] / qv[x], Fraction(1)))
        if i == gamma:
            res.append(None)
            if i > 0:
                hs.append(ps[gamma])
            break
        pv, qv = _pair(tmodel(prefix), dmodel(prefix))
        r = tuple(max(ps[i] * a - c, _ZERO) for a, c in zip(pv, qv))
        res.append(r)
        if i > 0:
            s = sum(r, _ZERO)
            den = s + 1 - ps[i]
            hs.append(s / den if den else _ZERO)
    return ps, hs, res


def block_verification_law(target: Any, draft: Any, gamma: int) -> BlockVerificationLaw:
    """The exact joint law of block verification (Sun et al. 2024, Algorithm 2).

    For a drafted block ``X^gamma`` (X_i ~ M_s(. | X^{i-1})): ``p_0 = 1``,
    ``p_i = min(p_{i-1} M_b(X_i | X^{i-1}) / M_s(X_i | X^{i-1}), 1)``; for i < gamma
    ``h_i = S_i / (S_i + 1 - p_i)`` with ``S_i = sum_x (p_i M_b(x | X^i) - M_s(x | X^i))+``, and
    ``h_gamma = p_gamma``; with independent ``eta_i ~ U(0, 1)``, tau is the *last* i with
    ``eta_i <= h_i`` (0 if none). The verifier emits ``X^tau`` and then Y drawn from the normalized
    ``(p_tau M_b(. | X^tau) - M_s(. | X^tau))+`` (tau < gamma) or from ``M_b(. | X^gamma)``.

    Parameters
    ----------
    target, draft : callable or sequence
        ``target(prefix)`` (M_b) and ``draft(prefix)`` (M_s), rows after each prefix.
    gamma : int
        Draft length, >= 1.

    Returns
    -------
    BlockVerificationLaw

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        Bad rows or gamma.

    Notes
    -----
    Enumerates the V**gamma drafted blocks of positive probability. ``P(tau = i) = h_i
    prod_{j > i} (1 - h_j)``. Where ``S_i + 1 - p_i = 0`` (p_i = 1 and M_b = M_s after X^i) h_i is
    0/0; it is taken as 0, and it never matters: then p_{i+1} = 1, and the first j > i with
    ``S_j > 0`` (or j = gamma) has ``h_j = 1``, so tau > i whatever h_i is. Lossless is checked as the stream statement (Theorem 1): the emitted block
    continued by target sampling has the target's joint law over gamma + 1 tokens.

    References
    ----------
    Sun, Mendlovic, Leviathan, Aharoni, Ro, Beirami, Suresh 2024, "Block verification accelerates
    speculative decoding" (ICLR 2025), Algorithm 2, Theorem 1 (lossless), Theorem 2 (optimal among
    valid verifiers that see the same conditionals); their binary example gives 10/9 (token),
    11/9 (block), 12/9 (full information) accepted tokens at gamma = 2.

    Examples
    --------
    >>> law = block_verification_law(["1/3", "2/3"], ["2/3", "1/3"], 2)
    >>> law.token_expected_accepted, law.expected_accepted, law.upper_bound, law.lossless
    (Fraction(10, 9), Fraction(11, 9), Fraction(4, 3), True)
    """
    from specproof.laws.chain import verification_law

    _positive_int(gamma, "gamma")
    tmodel, dmodel = _model(target), _model(draft)
    emitted: dict[Prefix, Fraction] = {}
    lengths = [_ZERO] * (gamma + 1)
    level = [((), Fraction(1))]
    for _ in range(gamma):  # the drafted blocks and their probabilities
        nxt = []
        for prefix, m in level:
            qv = _dist(dmodel(prefix), "q")
            nxt.extend((prefix + (x,), m * c) for x, c in enumerate(qv) if c)
        level = nxt
    for block, mass in level:
        ps, hs, res = _block_weights(tmodel, dmodel, block, gamma)
        for tau in range(gamma + 1):
            pt = Fraction(1) if tau == 0 else hs[tau]
            for j in range(tau + 1, gamma + 1):
                pt *= 1 - hs[j]
            if not pt:
                continue
            lengths[tau] += mass * pt
            row = _dist(tmodel(block), "p") if tau == gamma else _normalized(res[tau])
            for y, r in enumerate(row):
                if r:
                    key = block[:tau] + (y,)
                    emitted[key] = emitted.get(key, _ZERO) + mass * pt * r
    expected = sum((i * m for i, m in enumerate(lengths)), _ZERO)
    token = verification_law(tmodel, dmodel, gamma).expected_accepted
    stream = extend_by_target(emitted, tmodel, gamma + 1)
    tv = _dict_tv(stream, target_joint(tmodel, gamma + 1))
    return BlockVerificationLaw(gamma, emitted, tuple(lengths), expected, expected + 1, token,
                                full_information_bound(tmodel, dmodel, gamma), tv)


def _prefix_name(kind: str, prefix: Prefix) -> str:
    return f"{kind}{list(prefix)}"


def block_verification_tree(target: Any, draft: Any, gamma: int) -> OutcomeTree:
    """Block verification (Sun et al. 2024, Algorithm 2) as an outcome tree over whole blocks.

    The tree drafts ``X_1 .. X_gamma`` (a draw from the draft's row after each prefix), then
    decides tau from the top: the coin ``eta_gamma <= h_gamma`` emits the whole block and a
    bonus token drawn from ``M_b(. | X^gamma)``; otherwise ``eta_{gamma-1} <= h_{gamma-1}``
    emits ``X^{gamma-1}`` and a token drawn from the residual there; and so on down to tau = 0,
    a draw from the first residual. Its rows carry recipes a checker re-derives:
    ``p[ids]``/``q[ids]`` are the inputs (the target's and draft's rows after a prefix);
    ``w[ids] = p_i M_b(. | X^i)`` (``times-capped-ratio``, ``p_i = min(1, p_{i-1} M_b(X_i) /
    M_s(X_i))``); ``r[ids] = (w - q)+`` (the residual, mass S_i) and ``c[ids] = (q - w)+`` (mass
    S_i + 1 - p_i), so ``h_i = sum(r) / sum(c)`` is a ``masses`` threshold and ``h_gamma = p_gamma``
    a ``ratio`` threshold ``w[X^{gamma-1}](X_gamma) / q[X^{gamma-1}](X_gamma)`` (a coin against a
    ratio above 1 always passes). Where ``sum(c) = 0`` h_i is 0/0; it is taken as 0 (see
    :func:`block_verification_law`). Nodes that depend on a prefix only (the residual draws,
    the coins below the top) are shared between the blocks that extend it.

    Parameters
    ----------
    target, draft : callable or sequence
        ``target(prefix)`` (M_b) and ``draft(prefix)`` (M_s), rows after each prefix (one row:
        the same at every prefix).
    gamma : int
        Draft length, 1 to :data:`specproof.checker.MAX_BLOCK_GAMMA`.

    Returns
    -------
    OutcomeTree
        Its leaves carry the emitted block (a tuple of ids) as ``output`` and tau (the accepted
        drafts) as ``accepted``; use :func:`block_verification_certificate` for its law.

    Raises
    ------
    InvalidDistribution
        Bad rows, or rows of different lengths; ``FloatNotExact`` (a subclass) for float rows:
        make them exact first (``specproof.laws.rational.from_floats``).
    InvalidVerifier
        gamma out of range.

    Notes
    -----
    The tree has about ``D^gamma`` blocks (D: the draft's support), each with gamma + 1 coins
    and a draw of V branches: V = 3 at gamma = 8 is about 20,000 x V branches, seconds to build
    and to check.

    Examples
    --------
    >>> tree = block_verification_tree(["1/3", "2/3"], ["2/3", "1/3"], 1)
    >>> sorted((leaf.output, m) for leaf, m in tree.reaches() if isinstance(leaf, Leaf))[:2]
    [((0, 0), Fraction(1, 9)), ((0, 1), Fraction(2, 9))]
    """
    from specproof.checker import MAX_BLOCK_GAMMA

    _positive_int(gamma, "gamma")
    if gamma > MAX_BLOCK_GAMMA:
        raise InvalidVerifier(f"gamma = {gamma}; block certificates hold blocks of at most {MAX_BLOCK_GAMMA} drafts")
    tmodel, dmodel = _model(target), _model(draft)
    v = len(_dist(tmodel(()), "p"))
    b = _Builder(v)

    def row(kind: str, model: Model, prefix: Prefix) -> str:
        def values() -> Row:
            out = _dist(model(prefix), kind)
            if len(out) != v:
                raise InvalidDistribution(f"the {kind} row after {list(prefix)} has {len(out)} entries, not V = {v}")
            return out
        who = "target" if kind == "p" else "draft"
        return b.add(_prefix_name(kind, prefix), values, ("input", kind, list(prefix)), f"the {who}'s row after {list(prefix)}")

    def w(prefix: Prefix) -> str:
        if not prefix:
            return row("p", tmodel, ())
        parent, x = prefix[:-1], prefix[-1]
        wp, qp, pc = w(parent), row("q", dmodel, parent), row("p", tmodel, prefix)
        scale = min(Fraction(1), b.rows[wp][x] / b.rows[qp][x])
        return b.add(_prefix_name("w", prefix), lambda: tuple(c * scale for c in b.rows[pc]),
                     ("times-capped-ratio", pc, wp, qp, x), f"p_{len(prefix)} times the target's row after {list(prefix)}")

    def residual(prefix: Prefix) -> str:
        wp, qp = w(prefix), row("q", dmodel, prefix)
        return b.add(_prefix_name("r", prefix), lambda: _positive_part(b.rows[wp], b.rows[qp]),
                     ("positive-part", wp, qp), f"the residual (w - q)+ after {list(prefix)}")

    def complement(prefix: Prefix) -> str:
        wp, qp = w(prefix), row("q", dmodel, prefix)
        return b.add(_prefix_name("c", prefix), lambda: _positive_part(b.rows[qp], b.rows[wp]),
                     ("positive-part", qp, wp), f"(q - w)+ after {list(prefix)}: mass S + 1 - p")

    shared: dict[tuple, Node] = {}

    def once(key: tuple, build: Callable[[], Node]) -> Node:
        if key not in shared:
            shared[key] = build()
        return shared[key]

    def emit(prefix: Prefix, source: str) -> Node:
        return once(("emit", prefix), lambda: b.node(f"tau = {len(prefix)}: draw the next token after {list(prefix)}", [
            b.branch(Draw(source, y), Leaf(prefix + (y,), len(prefix))) for y in range(v)]))

    def decide(block: Prefix, i: int) -> Node:  # tau <= i is known; is it i?
        if i == 0:
            return emit((), residual(()))
        prefix = block[:i]
        if i == gamma:
            source = ("ratio", w(block[:-1]), row("q", dmodel, block[:-1]), block[-1])
            chosen = lambda: emit(prefix, row("p", tmodel, prefix))  # noqa: E731
        else:
            r, c = residual(prefix), complement(prefix)
            source = ("masses", r, c) if any(b.rows[c]) else ("const", Fraction(0))
            chosen = lambda: emit(prefix, r)  # noqa: E731

        def build() -> Node:
            return b.node(f"eta_{i} <= h_{i} after {list(prefix)}", [
                b.branch(Coin(CONTINUOUS, upper=Bound(source, False)), chosen),
                b.branch(Coin(CONTINUOUS, lower=Bound(source, True)), lambda: decide(block, i - 1))])
        return build() if i == gamma else once(("decide", prefix), build)

    def drafts(prefix: Prefix) -> Node:
        if len(prefix) == gamma:
            return decide(prefix, gamma)
        qp = row("q", dmodel, prefix)
        return b.node(f"draft X_{len(prefix) + 1} after {list(prefix)}", [
            b.branch(Draw(qp, x), lambda x=x: drafts(prefix + (x,))) for x in range(v)])

    return b.tree(drafts(()))


def _emitted_blocks(tree: OutcomeTree) -> dict[Prefix, Fraction]:
    """The law of the emitted block of a block tree: its leaves' masses summed by block."""
    emitted: dict[Prefix, Fraction] = {}
    for (block, _), mass in tree.outcomes().items():
        emitted[block] = emitted.get(block, _ZERO) + mass
    return emitted


def block_verification_certificate(target: Any, draft: Any, gamma: int, *, name: str | None = None,
                                   statement: str | None = None, provenance: Mapping[str, Any] | None = None) -> dict:
    """A ``specproof.block-certificate/1`` document for block verification on these rows.

    The tree is :func:`block_verification_tree`; its law, accepted-length law and expected
    emitted tokens are summed from the tree's leaves, and the stream TV is computed by
    enumeration (:func:`extend_by_target` against :func:`target_joint`), independently of the
    checker's prefix recursion. :func:`specproof.checker.check` re-verifies it.

    Parameters
    ----------
    target, draft, gamma
        As :func:`block_verification_tree`.
    name, statement : str, optional
        What the certificate proves, in words (defaults name block verification and gamma).
    provenance : mapping, optional
        JSON-ready facts (where the rows came from).

    Returns
    -------
    dict

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        As :func:`block_verification_tree`.

    Examples
    --------
    >>> from specproof import checker
    >>> doc = block_verification_certificate(["1/3", "2/3"], ["2/3", "1/3"], 2)
    >>> doc["totals"]["accepted_length"], doc["claims"], bool(checker.check(doc))
    (['1/3', '1/9', '5/9'], {'lossless': True}, True)
    """
    from specproof.certify.certificate import build_block_certificate

    tree = block_verification_tree(target, draft, gamma)
    tmodel = _model(target)
    tv = _dict_tv(extend_by_target(_emitted_blocks(tree), tmodel, gamma + 1), target_joint(tmodel, gamma + 1))
    return build_block_certificate(
        tree, gamma=gamma, stream_tv=tv, name=name or f"block verification, gamma = {gamma}",
        statement=statement or (f"Block verification (Sun et al. 2024, Algorithm 2) with gamma = {gamma}: the "
                                f"emitted block, continued by sampling the target, has the target's joint law "
                                f"over gamma + 1 tokens"),
        provenance=provenance)


# --------------------------------------------------------------------------- typical acceptance

#: Medusa's defaults (``medusa_generate``: ``posterior_threshold=0.09``, ``posterior_alpha=0.3``,
#: the latter "recommended to be sqrt(posterior_threshold)"), read as exact decimals.
MEDUSA_EPS = Fraction(9, 100)
MEDUSA_DELTA = Fraction(3, 10)

_EXACT_BITS = 1 << 22  # largest integer power (bits) the exact comparison builds


def typical_accepts(p: Any, x: int, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA, offset: Any = 0,
                    max_precision: int = 1 << 14) -> bool:
    """Decide exactly whether ``p(x) > min(eps, delta * exp(-H(p)))`` (Medusa's typical acceptance).

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
        The target row.
    x : int
        The candidate token.
    eps, delta : rational, optional
        Medusa's ``posterior_threshold`` and ``posterior_alpha`` (defaults 9/100 and 3/10).
    offset : rational, optional
        ``H(p) = -sum p_i log(p_i + offset)``: 0 for the paper's entropy; Medusa's code uses 1e-5
        (pass ``"1/100000"``).
    max_precision : int, optional
        Largest working precision (bits) of the interval arithmetic before giving up.

    Returns
    -------
    bool

    Raises
    ------
    Undecidable
        ``p(x)`` is within the precision cap of ``delta exp(-H)`` and the exact route does not
        apply (``offset != 0`` or too large a denominator): for example exactly equal with an
        offset.
    InvalidDistribution, InvalidVerifier
        Bad row, token or parameters (eps, delta must be > 0).

    Notes
    -----
    ``p(x) > eps`` is a rational comparison. Otherwise the question is ``p(x) > delta exp(-H)``,
    and with ``offset = 0``, ``exp(-H) = prod_i p_i^{p_i}``: writing ``p_i = n_i / D`` with one
    denominator D and ``p(x) / delta = a / b``, it is ``(a D)^D > b^D prod_i n_i^{n_i}``, an integer
    comparison, used when the powers stay below 2^22 bits (ties decided too). Otherwise mpmath's
    interval arithmetic (``mpmath.iv``, outward rounding) bounds ``log(p(x)/delta) + H`` at
    53, 106, 212, ... bits until the interval excludes 0.

    References
    ----------
    Cai et al. 2024, "Medusa", Section 2.3.1; ``medusa/model/utils.py::evaluate_posterior``.

    Examples
    --------
    >>> typical_accepts(["1/2", "1/2"], 0)
    True
    >>> typical_accepts(["97/100", "3/100"], 1)
    False
    """
    pv = _dist(p, "p")
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(pv):
        raise InvalidVerifier(f"token {x!r} is not an id in [0, {len(pv)})")
    return _typical_decide(pv, [x], eps, delta, offset, max_precision)[x]


def _typical_decide(pv: Row, tokens: Sequence[int], eps: Any, delta: Any, offset: Any,
                    cap: int = 1 << 14) -> dict[int, bool]:
    """Decide ``p(x) > min(eps, delta exp(-H(p)))`` for each of ``tokens`` (see :func:`typical_accepts`);
    the entropy is bounded once per precision for the whole row."""
    eps_f, delta_f = to_fraction(eps, what="eps"), to_fraction(delta, what="delta")
    off = to_fraction(offset, what="offset")
    if eps_f <= 0 or delta_f <= 0 or off < 0:
        raise InvalidVerifier(f"need eps > 0, delta > 0, offset >= 0; got {eps_f}, {delta_f}, {off}")
    out: dict[int, bool] = {}
    hard: list[int] = []
    for x in tokens:
        if pv[x] > eps_f:
            out[x] = True
        elif pv[x] == 0:
            out[x] = False  # the threshold is > 0
        else:
            hard.append(x)
    if not hard:
        return out
    if off == 0:  # exp(-H) = prod p_i^{p_i}: an integer comparison after raising to the power D
        d = math.lcm(*(f.denominator for f in pv))
        ratios = {x: pv[x] / delta_f for x in hard}
        widest = max(max(r.numerator.bit_length(), r.denominator.bit_length()) for r in ratios.values())
        if d * (widest + d.bit_length()) <= _EXACT_BITS:
            entropy_power = 1  # prod n_i^{n_i} = D^D prod p_i^{p_i D}
            for f in pv:
                n = f.numerator * (d // f.denominator)
                if n:
                    entropy_power *= n ** n
            for x, r in ratios.items():
                out[x] = (r.numerator * d) ** d > r.denominator ** d * entropy_power
            return out
    out.update(_typical_interval(pv, hard, delta_f, off, cap))
    return out


def _typical_interval(pv: Row, tokens: Sequence[int], delta: Fraction, off: Fraction, cap: int) -> dict[int, bool]:
    """Decide ``log(p(x)/delta) > -H`` (H with ``offset``) for each token by interval arithmetic at
    53, 106, ... bits up to ``cap``; raise :class:`Undecidable` for a token still undecided."""
    from mpmath import iv

    out: dict[int, bool] = {}
    left = list(tokens)
    prec = 53
    saved = iv.prec
    try:
        while left and prec <= cap:
            iv.prec = prec

            def q(f: Fraction):
                return iv.mpf(f.numerator) / iv.mpf(f.denominator)

            neg_h = iv.mpf(0)
            for f in pv:
                if f:
                    neg_h += q(f) * iv.log(q(f + off))
            log_delta = iv.log(q(delta))
            undecided = []
            for x in left:
                total = iv.log(q(pv[x])) - log_delta - neg_h  # log(p(x)/delta) + H
                if total.a > 0:
                    out[x] = True
                elif total.b < 0:
                    out[x] = False
                else:
                    undecided.append(x)
            left = undecided
            prec *= 2
    finally:
        iv.prec = saved
    if left:
        raise Undecidable(f"p(x) = {pv[left[0]]} (token {left[0]}) vs delta exp(-H(p)) not decided at {cap} bits")
    return out


def typical_tree(p: Any, q: Any, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA, offset: Any = 0) -> OutcomeTree:
    """One position of typical acceptance as an outcome tree.

    The draft token x ~ q is accepted iff ``p(x) > min(eps, delta exp(-H(p)))``; otherwise the
    verifier emits the target's argmax (the greedy token; ties to the smallest id).

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
    eps, delta, offset : rational, optional
        As :func:`typical_accepts`.

    Returns
    -------
    OutcomeTree
        Root ``draft`` (Draw from ``q``), then ``typical test`` (Choice ``positive`` / ``zero`` on
        the row ``typical-mask``), then ``greedy token`` (Choice ``argmax-is`` on ``p``). Rows: ``p``,
        ``q`` (input), ``typical-mask`` (given: 1 where accepted, else 0; a checker needs the
        :data:`PROPOSED_RECIPES` ``typical-mask``).

    Raises
    ------
    InvalidDistribution, InvalidVerifier, Undecidable
        As :func:`typical_accepts`.

    References
    ----------
    Cai et al. 2024 (Medusa), Section 2.3.1.

    Examples
    --------
    >>> typical_tree(["97/100", "3/100"], ["1/2", "1/2"]).law()[0]
    (Fraction(1, 1), Fraction(0, 1))
    """
    pv, qv = _pair(p, q)
    decided = _typical_decide(pv, [x for x in range(len(pv)) if qv[x]], eps, delta, offset)
    mask = tuple(Fraction(int(decided.get(x, False))) for x in range(len(pv)))
    b = _Builder(len(pv))
    b.add("p", pv, ("input", "p"), "the target row as given")
    b.add("q", qv, ("input", "q"), "the draft row as given")
    e, dl, o = (to_fraction(v, what="parameter") for v in (eps, delta, offset))
    b.add("typical-mask", mask, ("given",),
          f"1 where p(x) > min({_fr(e)}, {_fr(dl)} exp(-H(p))) with H offset {_fr(o)}, for drafts with q(x) > 0; "
          f"proposed recipe ('typical-mask', 'p', '{_fr(e)}', '{_fr(dl)}')")
    top = b.rows.argmax("p")
    greedy = b.node("greedy token", [b.branch(Choice(("argmax-is", "p", top), "the target's argmax"), Leaf(top, False))])

    def test(x: int) -> Node:
        return b.node("typical test", [b.branch(Choice(("positive", "typical-mask", x), "p(x) above the threshold"),
                                                Leaf(x, True)),
                                       b.branch(Choice(("zero", "typical-mask", x), "p(x) at or below it"), greedy)])

    return b.tree(b.node("draft", [b.branch(Draw("q", x), lambda x=x: test(x)) for x in range(b.v)]))


@dataclass(frozen=True)
class TypicalLaw:
    """One position of typical acceptance: the outcome tree, emitted law, acceptance and TV from p."""

    tree: OutcomeTree
    target: Row
    law: Row
    acceptance: Fraction
    tv: Fraction


def typical_law(p: Any, q: Any, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA, offset: Any = 0) -> TypicalLaw:
    """The exact law of one position of typical acceptance and its TV from p.

    Parameters
    ----------
    p, q, eps, delta, offset
        As :func:`typical_tree`.

    Returns
    -------
    TypicalLaw
        ``law[y] = q(y) [y accepted] + [y == argmax p] sum_{x rejected} q(x)``.

    Examples
    --------
    >>> law = typical_law(["1/2", "1/4", "1/4"], ["0", "1/2", "1/2"])
    >>> law.law, law.tv
    ((Fraction(0, 1), Fraction(1, 2), Fraction(1, 2)), Fraction(1, 2))
    """
    tree = typical_tree(p, q, eps=eps, delta=delta, offset=offset)
    law, _ = tree.law()
    pv = tree.rows["p"]
    return TypicalLaw(tree, pv, law, tree.accept_probability(), _tv(law, pv))


@dataclass(frozen=True)
class TypicalBlockLaw:
    """Typical acceptance over a block of gamma drafts (the longest accepted prefix, then the greedy
    token).

    Attributes
    ----------
    gamma : int
    emitted : dict of tuple of int -> Fraction
        The law of the emitted block (accepted drafts, then the target's argmax there).
    accepted_length : tuple of Fraction, length gamma + 1
    expected_accepted, expected_emitted : Fraction
    node_tv : dict of tuple of int -> Fraction
        At every reachable accepted prefix s, TV between the next token's law and p(. | s).
    stream_tv : Fraction
        TV between the first gamma + 1 tokens (block, then target sampling) and the target's joint
        law (:func:`stream_tv`: the target is read only after prefixes the blocks pass through).
    """

    gamma: int
    emitted: dict[Prefix, Fraction]
    accepted_length: tuple[Fraction, ...]
    expected_accepted: Fraction
    expected_emitted: Fraction
    node_tv: dict[Prefix, Fraction]
    stream_tv: Fraction


def typical_block_law(target: Any, draft: Any, gamma: int, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA,
                      offset: Any = 0) -> TypicalBlockLaw:
    """The exact law of one step of typical acceptance with gamma drafted tokens.

    Parameters
    ----------
    target, draft : callable or sequence
        Rows after each prefix.
    gamma : int
        >= 1.
    eps, delta, offset
        As :func:`typical_accepts`.

    Returns
    -------
    TypicalBlockLaw

    Notes
    -----
    The drafts are a chain ``x_i ~ q(. | x_<i)``; the verifier keeps the longest prefix whose every
    token passes the typical test at its position, then emits the target's argmax after it (also
    when all gamma pass: Medusa's next token is the base model's greedy token). It is lossy; the
    block TV is measured on the stream, as for the chain.

    References
    ----------
    Cai et al. 2024 (Medusa), Section 2.3.1; ``evaluate_posterior`` (``cumprod`` of the mask: the
    longest accepted prefix) and ``generate_candidates`` (greedy base token).

    Examples
    --------
    >>> law = typical_block_law(["1/2", "1/2"], ["1/2", "1/2"], 1)
    >>> law.accepted_length, law.stream_tv
    ((Fraction(0, 1), Fraction(1, 1)), Fraction(1, 2))
    """
    _positive_int(gamma, "gamma")
    tmodel, dmodel = _model(target), _model(draft)
    emitted: dict[Prefix, Fraction] = {}
    lengths = [_ZERO] * (gamma + 1)
    node_tv: dict[Prefix, Fraction] = {}
    stack = [((), Fraction(1))]
    while stack:
        prefix, reach = stack.pop()
        pv = _dist(tmodel(prefix), "p")
        if len(prefix) == gamma:
            top = _argmax(pv)
            lengths[gamma] += reach
            emitted[prefix + (top,)] = emitted.get(prefix + (top,), _ZERO) + reach
            node_tv[prefix] = 1 - pv[top]
            continue
        law = typical_law(pv, dmodel(prefix), eps=eps, delta=delta, offset=offset)
        node_tv[prefix] = law.tv
        for (y, accepted), m in law.tree.outcomes().items():
            if accepted:
                stack.append((prefix + (y,), reach * m))
            else:
                lengths[len(prefix)] += reach * m
                emitted[prefix + (y,)] = emitted.get(prefix + (y,), _ZERO) + reach * m
    expected = sum((i * m for i, m in enumerate(lengths)), _ZERO)
    return TypicalBlockLaw(gamma, emitted, tuple(lengths), expected, expected + 1, node_tv,
                           stream_tv(emitted, tmodel, gamma))


def typical_block_certificate(target: Any, draft: Any, gamma: int, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA,
                              offset: Any = 0, name: str | None = None, statement: str | None = None,
                              provenance: Mapping[str, Any] | None = None) -> dict:
    """A ``specproof.block-certificate/1`` document for typical acceptance over gamma drafts.

    The block tree composes :func:`typical_tree` at every accepted prefix
    (:func:`specproof.laws.outcome.block_tree`): draft from q, keep the draft iff it passes the
    typical test (a ``given`` mask row after each prefix, decided exactly by
    :func:`typical_accepts`), else emit the target's argmax there; after gamma accepted drafts,
    the target's argmax. Its stream TV (from the target's joint law over gamma + 1 tokens) is
    :func:`stream_tv` of the tree's law, which the checker recomputes; it equals
    :attr:`TypicalBlockLaw.stream_tv` (tested).

    Parameters
    ----------
    target, draft, gamma, eps, delta, offset
        As :func:`typical_block_law` (gamma at most :data:`specproof.checker.MAX_BLOCK_GAMMA`).
    name, statement : str, optional
    provenance : mapping, optional

    Returns
    -------
    dict

    Raises
    ------
    InvalidDistribution, InvalidVerifier, Undecidable
        As :func:`typical_block_law`.

    Examples
    --------
    >>> from specproof import checker
    >>> doc = typical_block_certificate(["1/2", "1/2"], ["1/2", "1/2"], 1)
    >>> doc["totals"]["stream_tv"], doc["claims"], bool(checker.check(doc))
    ('1/2', {'lossless': False}, True)
    """
    from specproof.certify.certificate import build_block_certificate
    from specproof.checker import MAX_BLOCK_GAMMA
    from specproof.laws.outcome import block_tree

    _positive_int(gamma, "gamma")
    if gamma > MAX_BLOCK_GAMMA:
        raise InvalidVerifier(f"gamma = {gamma}; block certificates hold blocks of at most {MAX_BLOCK_GAMMA} drafts")
    tmodel, dmodel = _model(target), _model(draft)

    def position(prefix: Prefix) -> OutcomeTree:
        return typical_tree(tmodel(prefix), dmodel(prefix), eps=eps, delta=delta, offset=offset)

    def greedy(prefix: Prefix, p_row: str, row: Row) -> Node:
        top = _argmax(row)
        return Node(f"greedy token after {list(prefix)}", (Branch(Choice(("argmax-is", p_row, top), "the target's argmax"),
                                                                  Fraction(1), Leaf(prefix + (top,), gamma)),))

    tree = block_tree(position, gamma, greedy)
    tv = stream_tv(_emitted_blocks(tree), tmodel, gamma)
    return build_block_certificate(
        tree, gamma=gamma, stream_tv=tv, name=name or f"typical acceptance, gamma = {gamma}",
        statement=statement or (f"Typical acceptance (Medusa) over {gamma} drafts: the emitted block, continued by "
                                f"sampling the target, is at exact TV {_fr(tv)} from the target's joint law "
                                f"over gamma + 1 tokens."),
        provenance=provenance)


# --------------------------------------------------------------------------- one summary per verifier (CLI)

#: Verifiers of :func:`audit_summary` (``chain`` is :mod:`specproof.rules.audit`'s own path).
VERIFIERS = ("block", "multidraft", "tree", "typical")


def audit_summary(p: Any, q: Any, verifier: str, *, drafts: int = 2, method: str = "with-replacement",
                  tree: Any = None, gamma: int | None = None) -> dict[str, Any]:
    """The exact law of one verifier on the rows (p, q), as JSON-ready data (rationals ``"n/d"``).

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        The same rows serve every position (of a block or a tree).
    verifier : {"block", "multidraft", "tree", "typical"}
        ``multidraft``: :func:`multidraft_law` with ``drafts`` and ``method``; with ``gamma``, also
        the stochastic tree with ``drafts`` children per node and depth gamma. ``tree``:
        :func:`deterministic_tree_law` on ``tree`` (nested ``[[token, children], ...]``, or None
        for q's top-``drafts`` at each of ``gamma`` (default 1) depths). ``block``:
        :func:`block_verification_law` at ``gamma`` (default 1). ``typical``: :func:`typical_law`,
        and :func:`typical_block_law` with ``gamma``.
    drafts, method, tree, gamma
        As above.

    Returns
    -------
    dict
        Always ``verifier``, ``verdict`` (``"lossless"`` / ``"lossy"``), ``accepted_length`` and
        ``expected_accepted`` (one position unless ``gamma``/a tree), ``expected_emitted``; plus the
        verifier's own fields (``acceptance``, ``law``, ``tv``, ``upper_bound``, ...).

    Raises
    ------
    InvalidVerifier
        Unknown verifier or bad parameters; InvalidDistribution for bad rows.

    Examples
    --------
    >>> audit_summary(["1/2", "1/2"], ["1", "0"], "multidraft")["expected_accepted"]
    '1/2'
    """
    def ff(x: Fraction) -> str:
        return _fr(Fraction(x))

    def lengths(law) -> dict[str, Any]:
        return {"accepted_length": [ff(x) for x in law.accepted_length],
                "expected_accepted": ff(law.expected_accepted), "expected_emitted": ff(law.expected_emitted)}

    if verifier not in VERIFIERS:
        raise InvalidVerifier(f"unknown verifier {verifier!r}; expected chain or one of {VERIFIERS}")
    if gamma is not None:
        _positive_int(gamma, "gamma")
    out: dict[str, Any] = {"verifier": verifier}
    if verifier == "multidraft":
        law = multidraft_law(p, q, drafts, method=method)
        out.update(method=method, drafts=drafts, acceptance=ff(law.acceptance),
                   accepted_at=[ff(x) for x in law.accepted_at], law=[ff(x) for x in law.law], tv=ff(law.tv),
                   accepted_length=[ff(1 - law.acceptance), ff(law.acceptance)],
                   expected_accepted=ff(law.acceptance), expected_emitted=ff(1 + law.acceptance))
        lossless = law.lossless
        if gamma is not None:
            tlaw = stochastic_tree_law(p, q, [drafts] * gamma, method=method)
            out.update(gamma=gamma, **lengths(tlaw))
            lossless = lossless and tlaw.lossless
    elif verifier == "tree":
        shape = topk_tree(q, [drafts] * (gamma or 1)) if tree is None else tree
        tlaw = deterministic_tree_law(p, shape)
        out.update(tree=shape, depth=tlaw.depth, **lengths(tlaw))
        lossless = tlaw.lossless
    elif verifier == "block":
        g = gamma or 1
        blaw = block_verification_law(p, q, g)
        out.update(gamma=g, token_expected_accepted=ff(blaw.token_expected_accepted),
                   upper_bound=ff(blaw.upper_bound), stream_tv=ff(blaw.stream_tv), **lengths(blaw))
        lossless = blaw.lossless
    else:
        tl = typical_law(p, q)
        out.update(acceptance=ff(tl.acceptance), law=[ff(x) for x in tl.law], tv=ff(tl.tv),
                   accepted_length=[ff(1 - tl.acceptance), ff(tl.acceptance)],
                   expected_accepted=ff(tl.acceptance), expected_emitted=ff(1 + tl.acceptance))
        lossless = tl.tv == 0
        if gamma is not None:
            bl = typical_block_law(p, q, gamma)
            out.update(gamma=gamma, stream_tv=ff(bl.stream_tv), **lengths(bl))
            lossless = lossless and bl.stream_tv == 0
    out["verdict"] = "lossless" if lossless else "lossy"
    return out


def format_summary(out: Mapping[str, Any]) -> str:
    """:func:`audit_summary`'s data as a few readable lines."""
    skip = {"verifier", "verdict", "law", "tree"}
    lines = [f"verifier {out['verifier']}: {out['verdict'].upper()}"]
    for key in sorted(k for k in out if k not in skip):
        value = out[key]
        lines.append(f"  {key}: {', '.join(map(str, value)) if isinstance(value, list) else value}")
    return "\n".join(lines)
