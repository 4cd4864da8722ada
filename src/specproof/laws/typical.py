"""Typical acceptance (Medusa): the exact decision p(x) > min(eps, delta exp(-H(p))), one position
as an outcome tree, and a block of gamma drafts composed by the block engine."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import SpecProofError
from specproof.laws._verifiers import (
    _ONE,
    InvalidVerifier,
    Prefix,
    Row,
    _Builder,
    _dist,
    _fr,
    _model,
    _pair,
    _positive_int,
    _tv,
)
from specproof.laws.block import BlockLaw, Position, StepLaw, compose, stream_tv, tree_position
from specproof.laws.outcome import Choice, Draw, Leaf, Node, OutcomeTree
from specproof.laws.outcome import argmax as _argmax
from specproof.laws.rational import to_fraction

#: Recipes a checker would need for rows that are ``("given",)`` here (none exists in
#: :class:`~specproof.laws.outcome.OutcomeTree`'s list): name -> (form, meaning). (``scaled`` and
#: ``minimum``, proposed for SpecTr, are recipes now.)
PROPOSED_RECIPES = {
    "typical-mask": (
        '("typical-mask", p, "eps", "delta")',
        "1 where p_i > min(eps, delta * exp(-H(p))), else 0, decided exactly",
    ),
}


class Undecidable(SpecProofError):
    """Typical acceptance's comparison with an irrational threshold was not decided within the
    precision cap (the token's probability equals the threshold, or is closer than the cap)."""


# --------------------------------------------------------------------------- typical acceptance

#: Medusa's defaults (``medusa_generate``: ``posterior_threshold=0.09``, ``posterior_alpha=0.3``,
#: the latter "recommended to be sqrt(posterior_threshold)"), read as exact decimals.
MEDUSA_EPS = Fraction(9, 100)
MEDUSA_DELTA = Fraction(3, 10)

_EXACT_BITS = 1 << 22  # largest integer power (bits) the exact comparison builds


def typical_accepts(
    p: Any, x: int, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA, offset: Any = 0, max_precision: int = 1 << 14
) -> bool:
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


def _typical_decide(
    pv: Row, tokens: Sequence[int], eps: Any, delta: Any, offset: Any, cap: int = 1 << 14
) -> dict[int, bool]:
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
                    entropy_power *= n**n
            for x, r in ratios.items():
                out[x] = (r.numerator * d) ** d > r.denominator**d * entropy_power
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

            def q(f: Fraction) -> Any:
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


def typical_tree(
    p: Any, q: Any, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA, offset: Any = 0
) -> OutcomeTree[int]:
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
    b.add(
        "typical-mask",
        mask,
        ("given",),
        f"1 where p(x) > min({_fr(e)}, {_fr(dl)} exp(-H(p))) with H offset {_fr(o)}, for drafts with q(x) > 0; "
        f"proposed recipe ('typical-mask', 'p', '{_fr(e)}', '{_fr(dl)}')",
    )
    top = b.rows.argmax("p")
    greedy = b.node(
        "greedy token", [b.branch(Choice(("argmax-is", "p", top), "the target's argmax"), Leaf(top, False))]
    )

    def test(x: int) -> Node[int]:
        return b.node(
            "typical test",
            [
                b.branch(Choice(("positive", "typical-mask", x), "p(x) above the threshold"), Leaf(x, True)),
                b.branch(Choice(("zero", "typical-mask", x), "p(x) at or below it"), greedy),
            ],
        )

    return b.tree(b.node("draft", [b.branch(Draw("q", x), functools.partial(test, x)) for x in range(b.v)]))


@dataclass(frozen=True)
class TypicalLaw:
    """One position of typical acceptance: the outcome tree, emitted law, acceptance and TV from p."""

    tree: OutcomeTree[int]
    target: Row
    law: Row
    acceptance: Fraction
    tv: Fraction

    # the position contract's names (specproof.laws.contract.PositionContract)
    @property
    def reference(self) -> Row:
        """The law the output should have: p (:attr:`target`)."""
        return self.target

    @property
    def alpha(self) -> Fraction:
        """P(the drafted token passes the typical test): :attr:`acceptance`."""
        return self.acceptance

    @property
    def tv_reference(self) -> Fraction:
        """TV(law, reference): :attr:`tv`."""
        return self.tv

    @property
    def lossless(self) -> bool:
        """True iff the emitted law equals p exactly."""
        return self.tv == 0


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


@dataclass(frozen=True, kw_only=True)
class TypicalBlockLaw(StepLaw):
    """Typical acceptance over a block of gamma drafts (the longest accepted prefix, then the greedy
    token): a :class:`~specproof.laws.block.StepLaw` (``gamma``, ``emitted``: the accepted drafts,
    then the target's argmax there; ``accepted_length_law``, ``expected_accepted``,
    ``expected_emitted``) with:

    Attributes
    ----------
    node_tv : dict of tuple of int -> Fraction
        At every reachable accepted prefix s, TV between the next token's law and p(. | s).
    stream_tv : Fraction
        TV between the first gamma + 1 tokens (block, then target sampling) and the target's joint
        law (:func:`stream_tv`: the target is read only after prefixes the blocks pass through).
    """

    node_tv: dict[Prefix, Fraction]
    stream_tv: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the stream's first gamma + 1 tokens have the target's joint law."""
        return self.stream_tv == 0


def typical_block_law(
    target: Any, draft: Any, gamma: int, *, eps: Any = MEDUSA_EPS, delta: Any = MEDUSA_DELTA, offset: Any = 0
) -> TypicalBlockLaw:
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
    >>> law.accepted_length_law, law.stream_tv
    ((Fraction(0, 1), Fraction(1, 1)), Fraction(1, 2))
    """
    _positive_int(gamma, "gamma")
    tmodel, dmodel = _model(target), _model(draft, "q")

    def position(prefix: Prefix) -> Position:
        pv = _dist(tmodel(prefix), "p")
        return tree_position(typical_tree(pv, dmodel(prefix), eps=eps, delta=delta, offset=offset), pv)

    def greedy(prefix: Prefix) -> tuple[Row, Fraction, Row]:  # after gamma accepted drafts: the target's argmax
        pv = _dist(tmodel(prefix), "p")
        top = _argmax(pv)
        return pv, _ONE, tuple(Fraction(int(i == top)) for i in range(len(pv)))

    law = compose(position, gamma, greedy, node_tv=True)
    assert isinstance(law.emitted, BlockLaw) and law.node_tv is not None  # as compose builds them (node_tv=True)
    emitted = law.emitted.to_dict()
    return TypicalBlockLaw(
        gamma=gamma,
        emitted=emitted,
        accepted_length_law=law.accepted_length_law,
        node_tv=dict(law.node_tv),
        stream_tv=stream_tv(emitted, tmodel, gamma),
    )
