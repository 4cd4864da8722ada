"""The exact work at every position of a corpus: alpha, and bounds on E[emitted] per gamma.

At a position t of a text (teacher-forced: the context is the text before t), the target's row
p_t and the draft's row q_t give the exact acceptance probability alpha_t = sum_x min(p_t, q_t)
(Leviathan et al. 2023, Thm 3.5). One verification step with gamma drafts started there emits

    E[emitted] = 1 + sum over drafted prefixes s, 1 <= len(s) <= gamma, of reach(s),

where reach(s) = prod_i min(p, q)(s_i | context, s_<i) is the probability that the verifier
accepts every draft of s (Leviathan et al. 2023, Sec. 3.4; :mod:`specproof.laws.chain` computes the
same law by enumeration). The tree below the context needs rows after drafted prefixes: along the
text they are the next positions' rows (free); other prefixes are *explored* (their rows computed
by the models) or not. A prefix whose rows are unknown contributes its own reach exactly and a
subtree of at most ``reach * (gamma - depth)``; so :func:`accepted_bounds` returns exact bounds
``lo <= E[accepted] <= hi`` whose gap is that weighted unexplored mass.

Bounds are integers over ``2**bits`` (default :data:`GRID_BITS`), rounded outward at every node
(lo down, hi up): the exact value's denominator grows with every level (products of row
denominators), the rounded bounds stay small. The rounding adds at most ``gamma * 2**-bits`` to
``hi - lo``. At gamma = 1 the value is exact: ``1 + alpha`` (alpha is stored as ``"n/d"``).
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import InvalidDistribution, InvalidOption, renamed
from ..laws.exact import emitted_law
from ..laws.rational import from_floats, to_fraction

__all__ = [
    "GRID_BITS",
    "ContextNode",
    "node_law",
    "node_from_record",
    "node_record",
    "accepted_bounds",
    "emitted_bounds",
    "context_hash",
    "exact_number",
    "explore",
    "EXPLORE_ROUND",
]

_NUMBER = re.compile(r"[+-]?(\d+(/\d+)?|(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?)")


def exact_number(value: Any, what: str) -> Fraction:
    """An exact rational from a setting: ``"n"``, ``"n/d"`` or a decimal string (``"0.05"`` is exactly
    1/20, ``"1e-6"`` exactly 1/10^6), or an int, a Fraction or another exact value
    (:func:`specproof.laws.rational.to_fraction`).

    Raises
    ------
    InvalidOption
        Anything else (a float, ``"nan"``, ``"abc"``, a zero denominator, an exponent beyond 999),
        naming ``what``.

    Examples
    --------
    >>> exact_number("0.05", "--cost-ratio"), exact_number("3/6", "level")
    (Fraction(1, 20), Fraction(1, 2))
    """
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            try:
                return Fraction(text)
            except (ValueError, ZeroDivisionError):  # 1/0; more digits than int() converts
                pass
        raise InvalidOption(
            f"{what} is {value!r}; give an exact number such as 1/20 or 0.05 (decimal exponents up to 999)"
        )
    try:
        return to_fraction(value, what=what)
    except InvalidDistribution as exc:
        raise InvalidOption(str(exc)) from None


#: The grid of the rounded bounds: multiples of 2**-GRID_BITS.
GRID_BITS = 128


@dataclass(frozen=True)
class ContextNode:
    """The exact acceptance data at one context (node of the drafting tree).

    Attributes
    ----------
    denominator : int
        D, the common denominator of the exact rows (``p = P/D``, ``q = Q/D``).
    accepted : int
        ``A = sum_x min(P, Q)``: alpha = A / D.
    children : tuple of (int, int)
        ``(token, min(P, Q)[token])`` for the children whose subtrees the caller may look up
        (sorted by token); the accept masses of all others are ``A`` minus these.
    alpha_float : float
        The float path's alpha (:func:`specproof.numeric.acceptance_probability`) on the float rows.
    """

    denominator: int
    accepted: int
    children: tuple[tuple[int, int], ...]
    alpha_float: float

    @property
    def alpha(self) -> Fraction:
        """alpha = A / D, exact."""
        return Fraction(self.accepted, self.denominator)


def node_law(p: Any, q: Any, children: Iterable[int] | None, *, atol: float) -> ContextNode:
    """Exact alpha at one node from float rows, and the accept masses of the named children.

    Parameters
    ----------
    p, q : array_like of float, shape [V]
        Target and draft rows (float64 or float32), made exact by
        :func:`specproof.rational.from_floats` (exact dyadic values, exact renormalization).
    children : iterable of int or None
        Token ids whose accept mass min(p, q)(y) is kept; None keeps every token with a
        positive accept mass.
    atol : float
        Largest accepted ``|sum - 1|`` of each float row.

    Returns
    -------
    ContextNode

    Raises
    ------
    InvalidDistribution
        A row that is not a float probability vector within ``atol``, rows of different lengths,
        or a child id outside [0, V).

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 (alpha = 1 - TV = sum min(p, q)).
    """
    from specproof.laws import numeric

    law = emitted_law(from_floats(p, atol=atol, name="p"), from_floats(q, atol=atol, name="q"))
    accept = law.accept_numerators.tolist()
    if children is None:
        kids = tuple((y, a) for y, a in enumerate(accept) if a)
    else:
        ids = sorted(set(int(y) for y in children))
        if ids and not (0 <= ids[0] and ids[-1] < len(accept)):
            raise InvalidDistribution(f"child ids {ids} are not all in [0, {len(accept)})")
        kids = tuple((y, accept[y]) for y in ids)
    alpha_float = float(numeric.acceptance_probability(np.asarray(p), np.asarray(q), atol=atol))
    return ContextNode(law.denominator, law.alpha_numerator, kids, alpha_float)


def node_record(node: ContextNode) -> dict[str, Any]:
    """A JSON- and Arrow-safe form of a :class:`ContextNode` (big integers as decimal strings)."""
    return {
        "d": str(node.denominator),
        "a": str(node.accepted),
        "children": [[y, str(a)] for y, a in node.children],
        "alpha_float": node.alpha_float,
    }


def node_from_record(record: Mapping[str, Any]) -> ContextNode:
    """Inverse of :func:`node_record`."""
    return ContextNode(
        int(record["d"]),
        int(record["a"]),
        tuple((int(y), int(a)) for y, a in record["children"]),
        float(record["alpha_float"]),
    )


Key = Hashable


def accepted_bounds(
    key: Key,
    k: int,
    lookup: Callable[[Key], ContextNode | None],
    child: Callable[[Key, int], Key],
    memo: dict,
    bits: int = GRID_BITS,
) -> tuple[int, int]:
    """Bounds on E[accepted drafts within depth k] below a node, given that it is reached.

    Parameters
    ----------
    key : hashable
        The node.
    k : int
        Depth left (>= 0).
    lookup : callable
        ``lookup(key)`` gives the node's :class:`ContextNode`, or None if its rows are unknown.
    child : callable
        ``child(key, y)`` gives the key of the node after drafting y.
    memo : dict
        Cache keyed by ``(key, k)``, shared across calls (keys must identify the node's subtree:
        for a Markov model the state, for a transformer the context).
    bits : int
        The grid: the results are integers over ``2**bits``.

    Returns
    -------
    lo, hi : int
        ``lo / 2**bits <= sum_{1 <= |s| <= k} reach(s) <= hi / 2**bits``, reach relative to the node.

    Notes
    -----
    With ``a_y = min(P, Q)[y] / D``: the sum is ``sum_y a_y (1 + S_y)``, ``S_y`` the child's own sum
    within depth ``k - 1``. A child the caller does not name, or whose rows are unknown, has
    ``0 <= S_y <= k - 1`` (each level below it has total mass at most 1). A node with unknown rows
    gets ``[0, k]``. lo is rounded down and hi up, once per node.
    """
    if k == 0:
        return 0, 0
    hit = memo.get((key, k))
    if hit is not None:
        return hit
    node = lookup(key)
    if node is None:
        out = (0, k << bits)
    else:
        d, a_total = node.denominator, node.accepted
        lo = hi = a_total << bits
        if k > 1:
            rest = a_total
            for y, a in node.children:
                if a:
                    clo, chi = accepted_bounds(child(key, y), k - 1, lookup, child, memo, bits)
                    lo, hi, rest = lo + a * clo, hi + a * chi, rest - a
            hi += rest * ((k - 1) << bits)
        out = (lo // d, -(-hi // d))
    memo[(key, k)] = out
    return out


def emitted_bounds(
    key: Key,
    gamma_max: int,
    lookup: Callable[[Key], ContextNode | None],
    child: Callable[[Key, int], Key],
    memo: dict,
    bits: int = GRID_BITS,
) -> list[tuple[Fraction, Fraction]]:
    """``[(lo, hi)]`` of E[emitted tokens of one verification step] for gamma = 1..gamma_max.

    E[emitted] = 1 + E[accepted] (the residual draw or the bonus token, Leviathan et al. 2023 Sec. 3.4);
    at gamma = 1 both bounds are exactly ``1 + alpha``. See :func:`accepted_bounds`.

    Raises
    ------
    InvalidDistribution
        If gamma_max < 1 or the root's rows are unknown.
    """
    if isinstance(gamma_max, bool) or not isinstance(gamma_max, int) or gamma_max < 1:
        raise InvalidDistribution(f"gamma_max must be an integer >= 1, got {gamma_max!r}")
    root = lookup(key)
    if root is None:
        raise InvalidDistribution(f"no rows at the position {key!r}")
    out = [(1 + root.alpha, 1 + root.alpha)]
    scale = 1 << bits
    for g in range(2, gamma_max + 1):
        lo, hi = accepted_bounds(key, g, lookup, child, memo, bits)
        out.append((1 + Fraction(lo, scale), 1 + Fraction(hi, scale)))
    return out


#: Prefixes each position explores per round of :func:`explore` (one batched model call per depth).
EXPLORE_ROUND = 4


def _best_children(m: np.ndarray, k: int, skip: int | None) -> list[int]:
    """The k tokens of largest accept mass m (> 0), ties by token id, without ``skip``."""
    idx = np.flatnonzero(m > 0)
    if skip is not None:
        idx = idx[idx != skip]
    if len(idx) > k:
        cut = m[idx[np.argpartition(-m[idx], k - 1)[:k]]].min()
        idx = idx[m[idx] >= cut]  # every tie at the cut, then the smallest ids among them
    return idx[np.lexsort((idx, -m[idx]))][:k].tolist()


def explore(
    roots: Mapping[int, tuple[np.ndarray, int | None]],
    expand: Callable[[list[tuple[int, tuple[int, ...]]]], list[np.ndarray]],
    *,
    gamma_max: int,
    mass_bound: float,
    max_explore: int,
    per_round: int = EXPLORE_ROUND,
) -> dict[int, list[tuple[int, ...]]]:
    """Choose the off-text prefixes to explore below each position, largest unexplored mass first.

    Parameters
    ----------
    roots : mapping of int to (ndarray of float, shape [V]; int or None)
        Per position t: the float accept masses min(p, q) of its row, and the text's next token (its
        subtree is the next position's, so it is never explored here; None at the text's end).
    expand : callable
        ``expand(nodes)`` with ``nodes = [(t, path)]`` computes those prefixes' rows (the caller
        keeps them) and returns their float accept masses, in order. Called once per round.
    gamma_max : int
        Largest gamma: a prefix s is worth ``reach(s) * (gamma_max - |s|)``, reach the product of
        the accept masses along s, the gap its unknown subtree adds to ``hi - lo`` at gamma_max.
    mass_bound : float
        Stop a position once its unexplored worth, summed over the frontier, is at most this.
    max_explore : int
        At most this many prefixes per position.
    per_round : int
        Prefixes popped per position and round (best first over every depth; a prefix's children
        enter the frontier in the next round).

    Returns
    -------
    dict of int to list of tuple of int
        Per position, the explored paths (token ids after the position's context), in the order
        explored; every path's parent path is explored before it.

    Notes
    -----
    The masses only choose what to explore (float, approximate); the bounds computed afterwards
    from the exact rows are exact whatever was chosen. A prefix at depth gamma_max - 1 has children
    of worth 0, so none are pushed; nothing is explored when gamma_max == 1 or max_explore == 0.
    """
    out: dict[int, list[tuple[int, ...]]] = {t: [] for t in roots}
    if gamma_max < 2 or max_explore < 1:
        return out
    heaps: dict[int, list] = {}
    gap: dict[int, float] = {}
    seq = 0

    def push(t: int, path: tuple[int, ...], reach: float, m: np.ndarray, skip: int | None) -> None:
        nonlocal seq
        worth = gamma_max - len(path) - 1  # what a child of this node is worth per unit of reach
        if worth <= 0:
            return
        kids = _best_children(m, max_explore, skip)
        if kids:
            heapq.heappush(heaps[t], (-reach * float(m[kids[0]]) * worth, seq, path, reach, m, kids, 0))
            seq += 1

    for t, (m, skip) in roots.items():
        heaps[t] = []
        if skip is None:  # the text's end: the rows after it are not the corpus's
            continue
        gap[t] = (float(m.sum()) - float(m[skip])) * (gamma_max - 1)
        push(t, (), 1.0, m, skip)
    while True:
        chosen: list[tuple[int, tuple[int, ...], float]] = []
        for t, heap in heaps.items():
            take = min(per_round, max_explore - len(out[t]))
            while heap and take > 0 and gap[t] > mass_bound:
                _, _, path, reach, m, kids, i = heapq.heappop(heap)
                y = kids[i]
                chosen.append((t, path + (y,), reach * float(m[y])))
                take -= 1
                if i + 1 < len(kids):  # the node's next child takes its place in the frontier
                    worth = gamma_max - len(path) - 1
                    heapq.heappush(heap, (-reach * float(m[kids[i + 1]]) * worth, seq, path, reach, m, kids, i + 1))
                    seq += 1
        if not chosen:
            return out
        for (t, path, reach), m in zip(chosen, expand([(t, path) for t, path, _ in chosen])):
            out[t].append(path)
            worth = gamma_max - len(path)
            gap[t] += reach * (float(m.sum()) * (worth - 1) - worth)
            push(t, path, reach, m, None)


def context_hash(pair: str, ids: Sequence[int]) -> str:
    """sha256 (first 16 hex digits) of the pair's name and the context's token ids."""
    text = pair + ":" + ",".join(str(int(i)) for i in ids)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# the old names, with a DeprecationWarning that says where they went (issue 34: one name, one meaning)
__getattr__ = renamed(
    __name__,
    {"Node": ("ContextNode", "specproof.laws.outcome.Node is an outcome tree's node")},
    globals(),
)
