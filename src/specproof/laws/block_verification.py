"""Block verification (Sun et al. 2024, Algorithm 2): the outcome tree over whole blocks, its law
beside token verification and the full-information bound, and its block certificate."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution
from specproof.laws._verifiers import (
    _ZERO,
    InvalidVerifier,
    Model,
    Prefix,
    Row,
    _Builder,
    _dist,
    _model,
    _pair,
    _positive_int,
    _positive_part,
)
from specproof.laws.block import StepLaw, stream_tv, tree_law
from specproof.laws.outcome import CONTINUOUS, Bound, Coin, Draw, Leaf, Node, OutcomeTree

# --------------------------------------------------------------------------- block verification


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
    tmodel, dmodel = _model(target), _model(draft, "q")
    total = _ZERO
    level: list[tuple[Prefix, Fraction, Fraction]] = [((), Fraction(1), Fraction(1))]
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


@dataclass(frozen=True, kw_only=True)
class BlockVerificationLaw(StepLaw):
    """The exact law of one step of block verification, with token verification beside it: a
    :class:`~specproof.laws.block.StepLaw` (``gamma``, ``emitted``: the block ``(X^tau, Y)``;
    ``accepted_length_law``: P(tau = i); ``expected_accepted``: E[tau]; ``expected_emitted``:
    E[tau] + 1) with:

    Attributes
    ----------
    token_expected_accepted : Fraction
        E[accepted] of token verification (the textbook chain) on the same rows.
    upper_bound : Fraction
        :func:`full_information_bound`.
    stream_tv : Fraction
        TV between the first gamma + 1 tokens (block, then target sampling) and the target's joint
        law: 0 iff lossless.
    """

    token_expected_accepted: Fraction
    upper_bound: Fraction
    stream_tv: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the stream's first gamma + 1 tokens have the target's joint law."""
        return self.stream_tv == 0


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
    The law is the leaves of :func:`block_verification_tree` summed by block (the tree drafts the
    V**gamma blocks of positive probability, then decides tau from the top: ``P(tau = i) = h_i
    prod_{j > i} (1 - h_j)``); the stream TV is :func:`specproof.laws.block.stream_tv`. Where
    ``S_i + 1 - p_i = 0`` (p_i = 1 and M_b = M_s after X^i) h_i is
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

    emitted, lengths = tree_law(_block_verification_tree(target, draft, gamma), gamma)
    tmodel, dmodel = _model(target), _model(draft, "q")
    return BlockVerificationLaw(
        gamma=gamma,
        emitted=emitted,
        accepted_length_law=lengths,
        token_expected_accepted=verification_law(tmodel, dmodel, gamma).expected_accepted,
        upper_bound=full_information_bound(tmodel, dmodel, gamma),
        stream_tv=stream_tv(emitted, tmodel, gamma),
    )


def _prefix_name(kind: str, prefix: Prefix) -> str:
    return f"{kind}{list(prefix)}"


def block_verification_tree(target: Any, draft: Any, gamma: int) -> OutcomeTree[Prefix]:
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
        drafts) as ``accepted``; use :func:`specproof.certify.blocks.block_verification_certificate` for its law.

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
    return _block_verification_tree(target, draft, gamma)


def _block_verification_tree(target: Any, draft: Any, gamma: int) -> OutcomeTree[Prefix]:
    """:func:`block_verification_tree` for any gamma >= 1 (no certificate limit)."""
    _positive_int(gamma, "gamma")
    tmodel, dmodel = _model(target), _model(draft, "q")
    v = len(_dist(tmodel(()), "p"))
    b = _Builder(v)

    def row(kind: str, model: Model, prefix: Prefix) -> str:
        def values() -> Row:
            out = _dist(model(prefix), kind)
            if len(out) != v:
                raise InvalidDistribution(f"the {kind} row after {list(prefix)} has {len(out)} entries, not V = {v}")
            return out

        who = "target" if kind == "p" else "draft"
        return b.add(
            _prefix_name(kind, prefix), values, ("input", kind, list(prefix)), f"the {who}'s row after {list(prefix)}"
        )

    def w(prefix: Prefix) -> str:
        if not prefix:
            return row("p", tmodel, ())
        parent, x = prefix[:-1], prefix[-1]
        wp, qp, pc = w(parent), row("q", dmodel, parent), row("p", tmodel, prefix)
        scale = min(Fraction(1), b.rows[wp][x] / b.rows[qp][x])
        return b.add(
            _prefix_name("w", prefix),
            lambda: tuple(c * scale for c in b.rows[pc]),
            ("times-capped-ratio", pc, wp, qp, x),
            f"p_{len(prefix)} times the target's row after {list(prefix)}",
        )

    def residual(prefix: Prefix) -> str:
        wp, qp = w(prefix), row("q", dmodel, prefix)
        return b.add(
            _prefix_name("r", prefix),
            lambda: _positive_part(b.rows[wp], b.rows[qp]),
            ("positive-part", wp, qp),
            f"the residual (w - q)+ after {list(prefix)}",
        )

    def complement(prefix: Prefix) -> str:
        wp, qp = w(prefix), row("q", dmodel, prefix)
        return b.add(
            _prefix_name("c", prefix),
            lambda: _positive_part(b.rows[qp], b.rows[wp]),
            ("positive-part", qp, wp),
            f"(q - w)+ after {list(prefix)}: mass S + 1 - p",
        )

    shared: dict[tuple[str, Prefix], Node[Prefix]] = {}

    def once(key: tuple[str, Prefix], build: Callable[[], Node[Prefix]]) -> Node[Prefix]:
        if key not in shared:
            shared[key] = build()
        return shared[key]

    def emit(prefix: Prefix, source: str) -> Node[Prefix]:
        return once(
            ("emit", prefix),
            lambda: b.node(
                f"tau = {len(prefix)}: draw the next token after {list(prefix)}",
                [b.branch(Draw(source, y), Leaf(prefix + (y,), len(prefix))) for y in range(v)],
            ),
        )

    def decide(block: Prefix, i: int) -> Node[Prefix]:  # tau <= i is known; is it i?
        if i == 0:
            return emit((), residual(()))
        prefix = block[:i]
        source: tuple[Any, ...]  # a Bound's source
        if i == gamma:
            source = ("ratio", w(block[:-1]), row("q", dmodel, block[:-1]), block[-1])
            chosen = lambda: emit(prefix, row("p", tmodel, prefix))  # noqa: E731
        else:
            r, c = residual(prefix), complement(prefix)
            # an empty complement: the threshold 0, re-derived as sum(c) / sum(p after the prefix), not stated
            source = ("masses", r, c) if any(b.rows[c]) else ("masses", c, row("p", tmodel, prefix))
            chosen = lambda: emit(prefix, r)  # noqa: E731

        def build() -> Node[Prefix]:
            return b.node(
                f"eta_{i} <= h_{i} after {list(prefix)}",
                [
                    b.branch(Coin(CONTINUOUS, upper=Bound(source, False)), chosen),
                    b.branch(Coin(CONTINUOUS, lower=Bound(source, True)), lambda: decide(block, i - 1)),
                ],
            )

        return build() if i == gamma else once(("decide", prefix), build)

    def drafts(prefix: Prefix) -> Node[Prefix]:
        if len(prefix) == gamma:
            return decide(prefix, gamma)
        qp = row("q", dmodel, prefix)
        return b.node(
            f"draft X_{len(prefix) + 1} after {list(prefix)}",
            [b.branch(Draw(qp, x), functools.partial(drafts, prefix + (x,))) for x in range(v)],
        )

    return b.tree(drafts(()))
