"""One engine for a verification step over a block: positions composed along accepted prefixes.

A verifier that checks drafts one position at a time (the textbook rule, every engine rule of
:mod:`specproof.rules`, the relaxed rules, typical acceptance, token trees) does the same thing
at every accepted prefix s: it accepts a drafted token y and goes on at ``s + (y,)``, or it stops
and emits one token y, ending the block with ``s + (y,)``. After gamma accepted drafts (or at a
leaf of a token tree) it draws a last token, the bonus. So the law of one step is the laws of its
positions composed:

==================== ==============================================================================
:class:`Position`    one position's law as the block reads it: ``P(accept, emit y)`` and
                     ``P(stop, emit y)`` for every token y (from an outcome tree:
                     :func:`tree_position`; the textbook rule in integers: ``chain``)
:func:`compose`      the walk over accepted prefixes: a :class:`ChainLaw` (emitted blocks, the
                     accepted-length law, reaches, the reference row at every prefix), a
                     :class:`StepLaw`, the base of every step law
:func:`tree_law`     the same law read off a block's outcome tree (leaves ``(block, accepted)``)
:func:`stream_tv`    the one stream judge: TV between the first gamma + 1 output tokens (the block,
                     then sampling the reference) and the reference's own joint law
:func:`target_joint` the target's joint law, and (:func:`extend_by_target`) a law continued by it
:func:`given_block`  the same composition along one given drafted block
==================== ==============================================================================

:func:`specproof.laws.outcome.block_tree` composes the same position *trees* (rows renamed after
their prefix) into one outcome tree a block certificate lists; its leaves summed by block are the
law :func:`compose` gives (tested). Block verification (Sun et al. 2024) decides the accepted
length from the whole drafted block, not position by position: it is one outcome tree over whole
blocks (:func:`specproof.laws.variants.block_verification_tree`), judged by the same
:func:`stream_tv`. The trusted checker re-derives all of this with its own code
(``checker._stream_gap``), on purpose.

References
----------
Leviathan et al. 2023, Algorithm 1 and Section 3.4; Chen et al. 2023, Algorithm 2 (a rejection
or the bonus token ends the block).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from specproof.errors import InvalidDistribution, ResidualUndefined
from specproof.laws.rational import RationalVector, as_distribution, as_fractions, to_fraction

__all__ = [
    "Position",
    "tree_position",
    "compose",
    "LengthLawName",
    "StepLaw",
    "ChainLaw",
    "BlockLaw",
    "tree_law",
    "stream_tv",
    "target_joint",
    "extend_by_target",
    "given_block",
]

Prefix = tuple[int, ...]
Model = Callable[[Prefix], Any]

_ZERO = Fraction(0)
_ONE = Fraction(1)


# --------------------------------------------------------------------------- one position


@dataclass(frozen=True)
class Position:
    """The law of one verification position, as a block composes it.

    Attributes
    ----------
    reference : sequence of V exact rationals
        The row the next token should follow here (the target's row; a processed or greedy
        reference for some rules): what :attr:`ChainLaw.lossless` and :attr:`ChainLaw.node_tv`
        compare with. A :class:`~specproof.laws.rational.RationalVector` or a tuple of Fraction.
    go, go_scale : sequence of int or Fraction (length V), Fraction
        ``P(the draft y is accepted) = go_scale * go[y]``: the block goes on at ``s + (y,)``.
    stop, stop_scale : sequence (length V or empty), Fraction
        ``P(the position stops and emits y) = stop_scale * stop[y]``.
    stop_mass : Fraction
        ``P(the position stops)``, ids outside [0, V) included.
    out_of_range : mapping of int -> Fraction
        Stops that emit an id outside [0, V) (a faulty rule), and their masses.

    Notes
    -----
    The two scales let the textbook rule keep integers (accept masses over D, residual masses
    over Z) and an outcome tree keep Fractions (scales 1) in one type. ``go_scale * sum(go)`` is
    the acceptance probability alpha (:attr:`accept_mass`).
    """

    reference: Any
    go: Sequence[Any]
    go_scale: Fraction
    stop: Sequence[Any]
    stop_scale: Fraction
    stop_mass: Fraction
    out_of_range: Mapping[int, Fraction] = field(default_factory=dict)

    @property
    def accept_mass(self) -> Fraction:
        """P(the drafted token is accepted): ``go_scale * sum(go)``."""
        return self.go_scale * sum(self.go, _ZERO)

    def tv(self) -> Fraction:
        """TV between the law of the position's next token (accepted or emitted) and its
        reference; an id outside [0, V) counts in full."""
        return _row_tv(
            ((self.go_scale, self.go), (self.stop_scale, self.stop)),
            self.reference,
            sum(self.out_of_range.values(), _ZERO),
        )


def _row_tv(parts: Sequence[tuple[Fraction, Sequence[Any]]], reference: Any, outside: Fraction = _ZERO) -> Fraction:
    """``(sum_y |sum_k scale_k * masses_k[y] - reference[y]| + outside) / 2`` for the parts
    ``(scale_k, masses_k)``; masses past V count in full. In integers over one denominator (a
    Fraction operation per entry costs about twenty integer ones)."""
    ref: Sequence[int]
    if isinstance(reference, RationalVector):
        ref, den = reference.numerators, reference.denominator
    else:
        den = math.lcm(*(r.denominator for r in reference))
        ref = [r.numerator * (den // r.denominator) for r in reference]
    terms = []  # (numerators, denominator) of each part with masses
    for scale, masses in parts:
        mden = math.lcm(*(m.denominator for m in masses))
        terms.append(
            ([scale.numerator * m.numerator * (mden // m.denominator) for m in masses], scale.denominator * mden)
        )
    common = math.lcm(den, *(d for _, d in terms))
    width = max([len(ref)] + [len(nums) for nums, _ in terms])
    total = [0] * width
    for nums, d in terms:
        factor = common // d
        for y, n in enumerate(nums):
            if n:
                total[y] += n * factor
    factor = common // den
    for y, r in enumerate(ref):
        if r:
            total[y] -= r * factor
    return (Fraction(sum(map(abs, total)), common) + outside) / 2


def tree_position(tree: Any, reference: Any) -> Position:
    """A position from its outcome tree: the leaves summed by (output, accepted).

    Parameters
    ----------
    tree : OutcomeTree
        One position (:func:`specproof.rules.audit.position_tree`, :func:`specproof.laws.variants.typical_tree`,
        ...); leaves ``(y, True)`` go on, ``(y, False)`` stop.
    reference : sequence of V Fractions
        The row the next token should follow.

    Returns
    -------
    Position
        Scales 1; an accepted or emitted id outside [0, V) counts in :attr:`Position.out_of_range`
        (and ends the block).

    Examples
    --------
    >>> from specproof.rules.audit import position_tree
    >>> pos = tree_position(position_tree(["1/2", "1/2"], ["1/4", "3/4"]), (Fraction(1, 2), Fraction(1, 2)))
    >>> pos.go, pos.stop, pos.stop_mass
    ((Fraction(1, 4), Fraction(1, 2)), (Fraction(1, 4), Fraction(0, 1)), Fraction(1, 4))
    """
    v = tree.vocab_size
    go, stop = [_ZERO] * v, [_ZERO] * v
    outside: dict[int, Fraction] = {}
    stopping = _ZERO
    for (output, accepted), m in tree.outcomes().items():
        if not 0 <= output < v:
            outside[output] = outside.get(output, _ZERO) + m
            stopping += m
        elif accepted:
            go[output] += m
        else:
            stop[output] += m
            stopping += m
    return Position(reference, tuple(go), _ONE, tuple(stop), _ONE, stopping, outside)


# --------------------------------------------------------------------------- the law of a step


class _Rows:
    """:func:`~specproof.laws.rational.as_distribution`, remembered per row object for rows that
    cannot change (a :class:`RationalVector`, a tuple of Fractions): a model returns the
    same row object after many prefixes (41 ** 2 distinct rows after 65,641 prefixes of a gamma = 3
    phone chain). Other rows (lists, arrays) are validated every time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: dict[
            int, tuple[Any, RationalVector]
        ] = {}  # id -> (the row itself, kept alive so ids stay unique; its vector)

    def __call__(self, row: Any) -> RationalVector:
        hit = self.seen.get(id(row))
        if hit is not None and hit[0] is row:
            return hit[1]
        vec = as_distribution(row, self.name)
        if isinstance(row, RationalVector) or (type(row) is tuple and all(type(v) is Fraction for v in row)):
            self.seen[id(row)] = (row, vec)
        return vec


class LengthLawName:
    """Keeps the old name ``accepted_length`` of a step law's :attr:`accepted_length_law` (P(i drafts
    accepted), i = 0..gamma) readable for one release, with a :class:`DeprecationWarning`: it is a
    law over lengths, not a length."""

    accepted_length_law: tuple[Fraction, ...]  # a field of each step law that keeps the old name

    @property
    def accepted_length(self) -> tuple[Fraction, ...]:
        """Deprecated name of :attr:`accepted_length_law`."""
        name = type(self).__name__
        warnings.warn(
            f"{name}.accepted_length is deprecated; use {name}.accepted_length_law", DeprecationWarning, stacklevel=2
        )
        return self.accepted_length_law


@dataclass(frozen=True, kw_only=True)
class StepLaw(LengthLawName):
    """What every law of one verification step over a block has: the emitted blocks and the law of
    the number of accepted drafts (the results of :func:`compose` and :func:`tree_law`).

    :class:`ChainLaw` (the engine's own result), and the typical, relaxed, token-tree and
    block-verification laws (:mod:`specproof.laws.typical`, :mod:`specproof.laws.relaxed`,
    :mod:`specproof.laws.token_trees`, :mod:`specproof.laws.block_verification`) extend it with
    what each verdict reads (node TVs, the stream TV, bounds).

    Attributes
    ----------
    gamma : int
        The most drafts a step can accept (the deepest accepted prefix; a token tree's depth).
    emitted : Mapping of tuple of int -> Fraction
        The law of the emitted block: the accepted drafts, then one more token (1 to gamma + 1 ids).
    accepted_length_law : tuple of Fraction, length gamma + 1
        P(exactly i drafted tokens are accepted), i = 0..gamma.
    """

    gamma: int
    emitted: Mapping[Prefix, Fraction]
    accepted_length_law: tuple[Fraction, ...]

    @property
    def expected_accepted(self) -> Fraction:
        """E[number of accepted drafts] = sum_i i * accepted_length_law[i]."""
        return sum((i * s for i, s in enumerate(self.accepted_length_law)), _ZERO)

    @property
    def expected_emitted(self) -> Fraction:
        """E[number of emitted tokens] = 1 + expected_accepted: the accepted drafts, then one token."""
        return 1 + self.expected_accepted


@dataclass(frozen=True, kw_only=True)
class ChainLaw(StepLaw):
    """The exact law of one verification step over a block of gamma drafts.

    Attributes
    ----------
    gamma : int
        Number of drafted tokens per step (the deepest accepted prefix).
    vocab_size : int
        V, the same at every position.
    emitted : Mapping of tuple of int -> Fraction
        Probability of each emitted block (1 to gamma + 1 token ids); only blocks of positive
        probability are keys. The values sum to 1. A :class:`BlockLaw` (values computed on
        access), which compares equal to the dict of the same items.
    accepted_length_law : tuple of Fraction, length gamma + 1
        The law of the number of accepted drafts: ``accepted_length_law[i]`` = P(exactly i drafted
        tokens are accepted). Its old name ``accepted_length`` still reads it, with a
        :class:`DeprecationWarning`.
    alphas : Mapping of tuple of int -> Fraction
        The acceptance probability alpha(s) at every accepted prefix s that is not full.
    reach : Mapping of tuple of int -> Fraction
        The probability that the verifier reaches each accepted prefix s (all its drafts
        accepted), for every depth 0..gamma: the product of the accept masses along it.
    reference_rows : Mapping of tuple of int -> row
        The reference row (the target's p(. | s)) at every accepted prefix s (the keys of
        ``reach``): what :attr:`lossless` compares the block's next token with.
    stop_tokens : frozenset of int, optional
        Stop ids (EOS): a block ends at an accepted stop token (no bonus token after it, no
        further draft). Empty by default.
    ended : Mapping of tuple of int -> Fraction, optional
        The blocks that end at an accepted stop token (s + (t,), t a stop id) and their mass;
        their ends count in :attr:`accepted_length_law` (t is an accepted draft).
    out_of_range : Fraction, optional
        The mass of blocks that end in an id outside [0, V) (a faulty rule); 0 for a sound one.
    node_tv : Mapping of tuple of int -> Fraction, optional
        At every accepted prefix s, the TV between the law of the block's next token there and
        ``reference_rows[s]`` (an id outside [0, V) counts in full): 0 everywhere iff every position
        follows its reference. Filled by :func:`compose` when asked (``node_tv=True``).

    Notes
    -----
    Build it with :func:`compose` (:func:`specproof.laws.chain.verification_law` for the textbook
    rule), or, for another verifier, from that verifier's own steps: :attr:`lossless` does not
    trust how the law was made. ``expected_accepted``, ``expected_emitted`` and ``mean_alpha``
    (the reach-weighted mean of alpha over the positions visited, the alpha to compare with
    Leviathan et al.'s Eq. 1) are computed.
    """

    vocab_size: int
    alphas: Mapping[Prefix, Fraction]
    reach: Mapping[Prefix, Fraction]
    reference_rows: Mapping[Prefix, Any]
    stop_tokens: frozenset[int] = frozenset()
    ended: Mapping[Prefix, Fraction] = field(default_factory=dict)
    out_of_range: Fraction = _ZERO
    node_tv: Mapping[Prefix, Fraction] | None = None

    @property
    def expected_emitted(self) -> Fraction:
        """E[number of emitted tokens] = 1 + expected_accepted (the residual draw or the bonus
        token) - P(the block ends at an accepted stop token) (then nothing follows it): the
        tokens up to and including the first stop token."""
        return 1 + self.expected_accepted - _fsum(list(self.ended.values()))

    @cached_property
    def lossless(self) -> bool:
        """True iff the first gamma + 1 output tokens have the target's joint law.

        Decided node by node from :attr:`emitted`, :attr:`reach` and :attr:`reference_rows` alone:
        the verifier starts at the empty prefix (``reach[()] == 1``); every emitted block ends
        one token after an accepted prefix; and at every accepted prefix s, for every token y,
        the probability that the block goes through s and its next token is y, ``reach[s + (y,)]``
        (y drafted and accepted, below depth gamma) plus ``emitted[s + (y,)]`` (y drawn from the
        residual, or as the bonus token at depth gamma), equals ``reach[s] * p(y | s)``. With plain
        target sampling after the block, this is the statement that the output stream's first
        gamma + 1 tokens have the target's joint law (by induction on the depth).
        """
        if self.out_of_range or self.reach.get((), None) != 1 or set(self.reference_rows) != set(self.reach):
            return False
        table = self.emitted
        stops = (set(table._residual) | set(table._bonus)) if isinstance(table, BlockLaw) else {b[:-1] for b in table}
        if not stops <= set(self.reach):
            return False
        exact = _Rows("p")
        for s, reach in self.reach.items():
            row = exact(self.reference_rows[s])
            if len(row) != self.vocab_size:
                return False
            if len(s) == self.gamma and isinstance(table, BlockLaw) and s not in table._residual:
                # the bonus token, read from the stored row: scale * m_y == reach * n_y / den for every y,
                # in integers (tens of thousands of these rows at gamma = 3)
                scale, masses = table._bonus.get(s, (_ZERO, ()))
                a, b = scale * row.denominator, Fraction(reach)
                big_a, big_b = a.numerator * b.denominator, b.numerator * a.denominator
                if len(masses) != len(row):
                    return False
                if a == b and (big_a == 0 or tuple(masses) == row.numerators):
                    continue  # the same identity, all at once: big_a == big_b, so m_y == n_y for every y suffices
                if any(m * big_a != n * big_b for m, n in zip(masses, row.numerators)):
                    return False
                continue
            below = len(s) < self.gamma
            for y, num in enumerate(row.numerators):
                through = table.get(s + (y,), _ZERO)
                if below:
                    through += self.reach.get(s + (y,), _ZERO)
                if through * row.denominator != reach * num:
                    return False
        return True

    def stop(self, prefix: Sequence[int]) -> Fraction:
        """P(the verifier accepts exactly the drafts ``prefix`` and then stops): the mass of the
        blocks ``prefix + (t,)`` for all t (residual draws, or the bonus token at depth gamma);
        0 for a prefix it never accepts."""
        key = tuple(prefix)
        if key not in self.reach:
            return _ZERO
        return self.reach[key] * (1 - self.alphas[key]) if key in self.alphas else self.reach[key]

    @property
    def mean_alpha(self) -> Fraction:
        """sum_s reach(s) alpha(s) / sum_s reach(s) over the accepted prefixes of depth < gamma."""
        return _fsum([self.reach[s] * a for s, a in self.alphas.items()]) / _fsum([self.reach[s] for s in self.alphas])


class BlockLaw(Mapping[Prefix, Fraction]):
    """The law of the emitted block, as a read-only mapping block -> Fraction (computed on access).

    Blocks ending in a stop draw are stored per stopping prefix (its scale and the stop row's
    masses: the residual for the textbook rule), blocks ending in the bonus token per fully
    accepted prefix (its scale and the bonus row), so a gamma = 3 chain over 41 tokens (2.6 million
    blocks) costs a few thousand stored rows, not millions of Fractions. Blocks that end at an
    accepted stop token, or in an id outside [0, V), are listed one by one.
    """

    def __init__(self, ended: Mapping[Prefix, Fraction] | None = None) -> None:
        self._residual: dict[Prefix, tuple[Fraction, Sequence[Any]]] = {}
        self._bonus: dict[Prefix, tuple[Fraction, Sequence[Any]]] = {}
        self._ended = {} if ended is None else ended  # blocks ending at an accepted stop token
        self._outside: dict[Prefix, Fraction] = {}  # blocks ending in an id outside [0, V)

    def _parts(self) -> Iterator[tuple[Prefix, tuple[Fraction, Sequence[Any]]]]:
        yield from self._residual.items()
        yield from self._bonus.items()

    def __getitem__(self, block: Prefix) -> Fraction:
        """The block's mass: a stop draw or bonus token at its end, plus (same block) an accepted
        stop token there."""
        prefix, y = tuple(block[:-1]), block[-1] if block else None
        total = self._ended.get(tuple(block), _ZERO) + self._outside.get(tuple(block), _ZERO)
        for table in (self._residual, self._bonus):
            if prefix in table:
                scale, masses = table[prefix]
                if isinstance(y, numbers.Integral) and not isinstance(y, bool) and 0 <= y < len(masses) and masses[y]:
                    total += scale * masses[y]
        if not total:
            raise KeyError(block)
        return total

    def __iter__(self) -> Iterator[Prefix]:
        for prefix, (_, masses) in self._parts():
            for y, mass in enumerate(masses):
                if mass:
                    yield prefix + (y,)
        drawn = set(self._residual)
        for block in self._ended:  # those not already listed as stop draws
            if not (block[:-1] in drawn and self._residual[block[:-1]][1][block[-1]]):
                yield block
        yield from self._outside

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def to_dict(self) -> dict[Prefix, Fraction]:
        """The same law as a plain dict, built in one pass over the stored rows (``dict(law)``
        reads it block by block through :meth:`__getitem__`)."""
        out: dict[Prefix, Fraction] = {}
        for prefix, (scale, masses) in self._parts():
            for y, mass in enumerate(masses):
                if mass:
                    block = prefix + (y,)
                    out[block] = out.get(block, _ZERO) + scale * mass
        for listed in (self._ended, self._outside):
            for block, mass in listed.items():
                out[block] = out.get(block, _ZERO) + mass
        return out


def compose(
    position: Callable[[Prefix], Position | None],
    gamma: int,
    bonus: Callable[[Prefix], tuple[Any, Fraction, Sequence[Any]]],
    *,
    stop_tokens: frozenset[int] = frozenset(),
    stop_at_stop_token: bool = True,
    where: str = "after the drafted prefix",
    node_tv: bool = False,
) -> ChainLaw:
    """The law of one verification step: the positions composed along accepted prefixes.

    At every accepted prefix s of depth below gamma the step runs ``position(s)``: an accepted
    draft y goes on at ``s + (y,)`` (or ends the block there if y is a stop token and
    ``stop_at_stop_token``), a stop emitting y ends the block with ``s + (y,)``. At depth gamma,
    or where ``position(s)`` is None (a leaf of a token tree), the last token is drawn from
    ``bonus(s) = (reference, scale, masses)``: ``P(emit y) = scale * masses[y]``, and the
    reference row there is ``reference``.

    Parameters
    ----------
    position : callable
        ``position(prefix) -> Position or None``.
    gamma : int
        The deepest accepted prefix, >= 1 (the length of the accepted-length law minus 1).
    bonus : callable
        ``bonus(prefix) -> (reference row, scale, masses)``.
    stop_tokens : frozenset of int, optional
    stop_at_stop_token : bool, optional
        True (the textbook rule): an accepted stop token ends the block.
    where : str, optional
        How an error names the prefix (``"after the drafted prefix"``, ``"after the path"``).
    node_tv : bool, optional
        Also the TV of every position's next token from its reference (:attr:`ChainLaw.node_tv`):
        :meth:`Position.tv`, and at a bonus draw the TV of its row.

    Returns
    -------
    ChainLaw

    Raises
    ------
    InvalidDistribution, ResidualUndefined
        Positions of different vocabulary sizes; the callables' own errors, with the prefix
        where they were raised.

    Notes
    -----
    Only prefixes of positive reach are visited: the work is the number of accepted prefixes
    times V. Masses are exact; the accepted-length law is summed in a balanced tree of
    additions (:func:`_fsum`), the same value as any order.
    """
    ended: dict[Prefix, Fraction] = {}
    blocks = BlockLaw(ended)
    stopping: list[list[Fraction]] = [[] for _ in range(gamma + 1)]  # the stop masses at each depth
    alphas: dict[Prefix, Fraction] = {}
    reaches: dict[Prefix, Fraction] = {}
    rows: dict[Prefix, Any] = {}
    vocab: list[int] = []
    outside = _ZERO
    tvs: dict[Prefix, Fraction] | None = {} if node_tv else None
    stack: list[tuple[Prefix, Fraction]] = [((), _ONE)]

    def same_size(prefix: Prefix, size: int) -> None:
        if not vocab:
            vocab.append(size)
        elif size != vocab[0]:
            raise InvalidDistribution(f"{where} {prefix}: rows have different vocabulary sizes: {vocab[0]} and {size}")

    while stack:
        prefix, reach = stack.pop()
        depth = len(prefix)
        try:
            pos = None if depth == gamma else position(prefix)
            if pos is None:
                reference, scale, masses = bonus(prefix)
        except (InvalidDistribution, ResidualUndefined) as exc:  # say where in the block the bad row is
            raise type(exc)(f"{where} {prefix}: {exc}") from None
        if pos is None:  # the block is full: the bonus token
            same_size(prefix, len(reference))
            rows[prefix] = reference
            reaches[prefix] = reach  # its mass is in stopping[depth] already (added by its parent, below)
            blocks._bonus[prefix] = (reach * scale, masses)
            if tvs is not None:  # a bonus drawn from the reference row itself is at TV 0
                tvs[prefix] = _ZERO if scale == 1 and masses is reference else _row_tv(((scale, masses),), reference)
            if depth < gamma:
                stopping[depth].append(reach)
            continue
        same_size(prefix, len(pos.reference))
        rows[prefix] = pos.reference
        reaches[prefix] = reach
        if tvs is not None:
            tvs[prefix] = pos.tv()
        alphas[prefix] = 1 - pos.stop_mass
        if pos.stop_mass:
            stopping[depth].append(reach * pos.stop_mass)
        if pos.stop_scale:
            blocks._residual[prefix] = (reach * pos.stop_scale, pos.stop)
        for y, m in pos.out_of_range.items():
            blocks._outside[prefix + (y,)] = reach * m
            outside += reach * m
        scale = reach * pos.go_scale
        going = 0  # the go masses of the children that go on (not stop tokens), over go_scale
        for y, g in enumerate(pos.go):
            if g and stop_at_stop_token and y in stop_tokens:  # an accepted stop token ends the block
                ended[prefix + (y,)] = scale * g
                stopping[depth + 1].append(ended[prefix + (y,)])
            elif g:
                going += g
                stack.append((prefix + (y,), scale * g))
        if depth + 1 == gamma and going:
            # the children at depth gamma all stop (the bonus token): their reaches summed in
            # one step, reach * go_scale * (sum of their go masses), not one Fraction at a time
            stopping[gamma].append(scale * going)
    lengths = tuple(_fsum(masses) for masses in stopping)
    return ChainLaw(
        gamma=gamma,
        vocab_size=vocab[0] if vocab else 0,
        emitted=blocks,
        accepted_length_law=lengths,
        alphas=alphas,
        reach=reaches,
        reference_rows=rows,
        stop_tokens=stop_tokens,
        ended=ended,
        out_of_range=outside,
        node_tv=tvs,
    )


def tree_law(tree: Any, gamma: int) -> tuple[dict[Prefix, Fraction], tuple[Fraction, ...]]:
    """The law of a block's outcome tree: its leaves ``(block, accepted drafts)`` summed by block.

    Parameters
    ----------
    tree : OutcomeTree
        A block tree (:func:`specproof.laws.outcome.block_tree`,
        :func:`specproof.laws.variants.block_verification_tree`): each leaf's output is the emitted
        block (a tuple of ids) and its ``accepted`` the number of accepted drafts, 0 to gamma.
    gamma : int

    Returns
    -------
    emitted : dict of tuple of int -> Fraction
        The blocks of positive mass.
    accepted_length_law : tuple of Fraction, length gamma + 1

    Examples
    --------
    >>> from specproof.laws.outcome import block_tree
    >>> from specproof.rules.audit import position_tree
    >>> emitted, lengths = tree_law(block_tree(lambda s: position_tree(["1/2", "1/2"], ["1/2", "1/2"]), 1), 1)
    >>> emitted[(0, 1)], lengths
    (Fraction(1, 4), (Fraction(0, 1), Fraction(1, 1)))
    """
    emitted: dict[Prefix, Fraction] = {}
    lengths = [_ZERO] * (gamma + 1)
    for (block, accepted), mass in tree.outcomes().items():
        if mass:
            emitted[block] = emitted.get(block, _ZERO) + mass
            lengths[accepted] += mass
    return emitted, tuple(lengths)


def _fsum(terms: Sequence[Fraction]) -> Fraction:
    """The exact sum of ``terms``, added in pairs (a balanced tree): the same value as adding them
    one by one, but each addition works on numbers of about the size of its two halves instead of
    the whole running sum (thousands of terms of different denominators at gamma = 3).

    >>> _fsum([Fraction(1, 3), Fraction(1, 6), Fraction(1, 2)]), _fsum([])
    (Fraction(1, 1), Fraction(0, 1))
    """
    level = list(terms) or [_ZERO]
    while len(level) > 1:
        level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return Fraction(level[0])


# --------------------------------------------------------------------------- one given block


def given_block(
    steps: Iterable[tuple[Any, Sequence[Any]]], bonus: Sequence[Any]
) -> tuple[tuple[Fraction, ...], tuple[tuple[Fraction, ...], ...]]:
    """The composition along one given drafted block.

    Parameters
    ----------
    steps : iterable of (rational, row)
        Per drafted position i, ``(keep_i, rejected_i)``: P(the given draft passes), in [0, 1],
        and the law of the token emitted when it does not (V exact rationals >= 0 summing to at
        most 1: a rule that emits an id outside [0, V) leaves that mass out; ignored where
        ``keep_i == 1``).
    bonus : row
        The law of the token emitted after every draft passed: an exact distribution over the
        same V ids.

    Returns
    -------
    accepted_length_law : tuple of Fraction, length gamma + 1
        ``P(stop after i) = prod_{j < i} keep_j * (1 - keep_i)``, and ``prod keep`` at gamma.
    emitted : tuple of rows
        The rejection rows, then the bonus row, as tuples of Fraction.

    Raises
    ------
    InvalidDistribution
        A step that is not a pair; a pass probability that is not an exact rational in [0, 1];
        a row with an inexact or negative entry, of another length than the bonus row, or
        summing above 1 (the bonus row: not to 1).

    Examples
    --------
    >>> half = (Fraction(1, 2), Fraction(1, 2))
    >>> given_block([(Fraction(1, 2), half)], half)[0]
    (Fraction(1, 2), Fraction(1, 2))
    >>> given_block([(Fraction(3, 2), half)], half)
    Traceback (most recent call last):
    ...
    specproof.errors.InvalidDistribution: step 0: the pass probability is 3/2, not in [0, 1]
    """
    last = as_fractions(bonus, "the bonus row")
    alive, lengths, rows = _ONE, [], []
    for i, step in enumerate(steps):
        if type(step) is not tuple and not isinstance(step, Sequence) or len(step) != 2:
            raise InvalidDistribution(f"step {i} is {step!r}, not a pair (pass probability, rejection row)")
        keep = to_fraction(step[0], what=f"step {i}: the pass probability")
        if not 0 <= keep <= 1:
            raise InvalidDistribution(f"step {i}: the pass probability is {keep}, not in [0, 1]")
        rows.append(_sub_probability(step[1], f"step {i}: the rejection row", len(last)))
        lengths.append(alive * (1 - keep))
        alive *= keep
    lengths.append(alive)
    rows.append(last)
    return tuple(lengths), tuple(rows)


def _sub_probability(values: Any, what: str, size: int) -> tuple[Fraction, ...]:
    """A row of ``size`` exact rationals >= 0 summing to at most 1, as Fractions."""
    if type(values) is tuple and all(type(v) is Fraction for v in values):
        row = values
    elif isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidDistribution(f"{what} is a {type(values).__name__}, not a sequence of rationals")
    else:
        row = tuple(to_fraction(v, what=f"{what}[{y}]") for y, v in enumerate(values))
    if len(row) != size:
        raise InvalidDistribution(f"{what} has {len(row)} entries, not V = {size}")
    den = math.lcm(*(m.denominator for m in row))
    scaled = [m.numerator * (den // m.denominator) for m in row]
    if min(scaled) < 0:
        y = scaled.index(min(scaled))
        raise InvalidDistribution(f"{what}[{y}] is {row[y]}, which is negative")
    if sum(scaled) > den:
        raise InvalidDistribution(f"{what} sums to {Fraction(sum(scaled), den)}, above 1")
    return row


# --------------------------------------------------------------------------- the stream and the target


def _require_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InvalidDistribution(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _block_law(
    law: Any, longest: int | None, what: str = "the emitted law", shortest: int = 1
) -> dict[Prefix, Fraction]:
    """``law`` checked: blocks (tuples of ``shortest`` to ``longest`` integer ids; an id outside
    [0, V) counts as any other, in full) to exact masses >= 0 summing to at most 1 (blocks left
    out count as mass the reference never matches)."""
    if isinstance(law, BlockLaw):
        return law.to_dict()
    if not isinstance(law, Mapping):
        raise InvalidDistribution(f"{what} is a {type(law).__name__}, not a mapping block -> probability")
    out: dict[Prefix, Fraction] = {}
    for block, mass in law.items():
        if (
            not isinstance(block, tuple)
            or len(block) < shortest
            or (longest is not None and len(block) > longest)
            or not all(type(t) is int or isinstance(t, numbers.Integral) and not isinstance(t, bool) for t in block)
        ):
            raise InvalidDistribution(
                f"{what} has the block {block!r}, not a tuple of {shortest} to "
                f"{'any number of' if longest is None else longest} integer ids"
            )
        m = mass if type(mass) is Fraction else to_fraction(mass, what=f"the mass of the block {block}")
        if m < 0:
            raise InvalidDistribution(f"{what} gives the block {block} the mass {m}, which is negative")
        out[block] = m
    den = math.lcm(*(m.denominator for m in out.values()))
    if sum(m.numerator * (den // m.denominator) for m in out.values()) > den:
        raise InvalidDistribution(f"{what}'s masses sum to {sum(out.values(), _ZERO)}, above 1")
    return out


def _target_rows(target: Any, name: str = "p") -> Callable[[Prefix], RationalVector]:
    """``prefix -> the reference row there``, validated (a constant row once)."""
    if not callable(target):
        row = as_distribution(target, name)
        return lambda prefix: row
    rows = _Rows(name)
    return lambda prefix: rows(target(prefix))


def stream_tv(
    emitted: Mapping[Prefix, Fraction], target: Any, gamma: int, *, stop_tokens: Iterable[int] = ()
) -> Fraction:
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
    emitted : mapping of tuple of int -> exact rational
        The law of the emitted block: blocks of 1 to gamma + 1 ids, masses >= 0 summing to at
        most 1 (mass left out, for example blocks set aside as invalid, is mass the target never
        matches: it adds to the sum). An id outside [0, V) counts in full.
    target : callable or sequence
        ``target(prefix)``: the reference row after ``prefix`` (one row: the same everywhere).
    gamma : int
        >= 0: the stream is compared over gamma + 1 tokens.
    stop_tokens : iterable of int, optional
        Stop ids: both streams end at their first one (a block is cut after it; a prefix ending
        in one is not continued on either side).

    Returns
    -------
    Fraction

    Raises
    ------
    InvalidDistribution
        gamma not an integer >= 0; ``emitted`` not such a law (a block that is not a tuple of 1 to
        gamma + 1 integer ids, an inexact or negative mass, masses summing above 1); a stop token
        that is not an integer; a target row that is not an exact distribution.

    Notes
    -----
    Each live prefix's children are computed in integers over one denominator (the gap, the
    target's row and the blocks ending there), and the children no block passes are summed there
    as one Fraction.

    Examples
    --------
    >>> stream_tv({(0,): Fraction(1)}, ["1/2", "1/2"], 1)
    Fraction(1, 2)
    >>> stream_tv({(0,): Fraction(1)}, ["1/2", "1/2"], -1)
    Traceback (most recent call last):
    ...
    specproof.errors.InvalidDistribution: gamma must be an integer >= 0, got -1
    """
    gamma = _require_int(gamma, "gamma", 0)
    law = _block_law(emitted, gamma + 1)
    stops = frozenset(stop_tokens)
    if any(isinstance(t, bool) or not isinstance(t, numbers.Integral) for t in stops):
        raise InvalidDistribution(f"stop_tokens are {sorted(stops, key=repr)!r}, not integer ids")
    row = _target_rows(target)
    ends: dict[Prefix, dict[int, Fraction]] = {}  # s -> {t: the mass of the block s + (t,)}
    for block, m in law.items():
        if stops:  # cut every block after its first stop token (a cut prefix is never continued: it is not live)
            block = block[: next((i + 1 for i, t in enumerate(block) if t in stops), len(block))]
        if m:
            at = ends.setdefault(block[:-1], {})
            at[block[-1]] = at.get(block[-1], _ZERO) + m
    live = {s[:i] for s in ends for i in range(len(s) + 1)}  # the prefixes some block passes
    level: dict[Prefix, Fraction] = {(): _ONE}
    total = _ZERO
    for depth in range(gamma + 1):
        nxt: dict[Prefix, Fraction] = {}
        for prefix in list(level) + [s for s in ends if len(s) == depth and s not in level]:
            gap, here = level.get(prefix, _ZERO), ends.get(prefix, {})
            vec = row(prefix) if gap else None
            den = gap.denominator * vec.denominator if vec is not None else 1
            common = math.lcm(den, *(m.denominator for m in here.values()))
            values: dict[int, int] = {}  # child t -> F(prefix + (t,)) * common
            if vec is not None:
                factor = gap.numerator * (common // den)
                values = {t: factor * n for t, n in enumerate(vec.numerators) if n}
            for t, m in here.items():
                values[t] = values.get(t, 0) - m.numerator * (common // m.denominator)
            dead = 0
            for t, value in values.items():
                if prefix + (t,) in live:
                    nxt[prefix + (t,)] = Fraction(value, common)
                else:
                    dead += abs(value)
            if dead:
                total += Fraction(dead, common)
        level = nxt
    return total / 2


def extend_by_target(starts: Mapping[Prefix, Fraction], target: Any, length: int) -> dict[Prefix, Fraction]:
    """Continue each sequence by plain target sampling to ``length`` tokens; sum the masses.

    Parameters
    ----------
    starts : mapping of tuple of int -> exact rational
        Sequences (longer ones are cut to ``length``) and their probabilities (>= 0, summing to
        at most 1).
    target : callable or sequence
        ``target(prefix)``: the target row after ``prefix``.
    length : int
        >= 0.

    Returns
    -------
    dict of tuple of int -> Fraction
        The law of the first ``length`` tokens (V ** length keys at most: small V only).

    Raises
    ------
    InvalidDistribution
        ``length`` not an integer >= 0; ``starts`` not such a law (as :func:`stream_tv`); a
        target row that is not an exact distribution.

    Examples
    --------
    >>> extend_by_target({(1,): Fraction(1)}, ["1/2", "1/2"], 2)
    {(1, 1): Fraction(1, 2), (1, 0): Fraction(1, 2)}
    """
    length = _require_int(length, "length", 0)
    law = _block_law(starts, None, "the starting law", shortest=0)
    row = _target_rows(target)
    out: dict[Prefix, Fraction] = {}
    frontier = [(s, m) for s, m in law.items() if m]
    while frontier:
        seq, m = frontier.pop()
        if len(seq) >= length:
            out[seq[:length]] = out.get(seq[:length], _ZERO) + m
            continue
        for y, py in enumerate(row(seq).fractions()):
            if py:
                frontier.append((seq + (y,), m * py))
    return out


def target_joint(target: Any, length: int) -> dict[Prefix, Fraction]:
    """The target's own joint law of ``length`` tokens, ``prod_i p(z_i | z_<i)`` (small V only).

    Raises
    ------
    InvalidDistribution
        As :func:`extend_by_target`.

    Examples
    --------
    >>> target_joint(["1/4", "3/4"], 1)
    {(1,): Fraction(3, 4), (0,): Fraction(1, 4)}
    """
    return extend_by_target({(): _ONE}, target, length)
