"""The exact law of one verification step over a block of gamma drafted tokens.

The draft proposes x_1..x_gamma autoregressively from q(. | prefix, x_<i); the target scores
every position; the verifier accepts the longest prefix that passes the per-position test
(accept x_i with probability min(1, p(x_i)/q(x_i))), then emits one more token: a draw from the
normalized residual (p - q)+ at the first rejected position, or, when all gamma drafts were
accepted, the bonus token drawn from the target's next row p(. | x_1..x_gamma).

:func:`verification_law` computes the law of the emitted block by enumerating the draft's
tokens and the verifier's steps position by position (a tree of accepted prefixes), over
exact rationals, and checks losslessness node by node: at every accepted prefix s, the block's
next token has law exactly p(. | s) (by acceptance, by the residual draw, or as the bonus
token). With plain target sampling continuing after the block, this is exactly the statement
that the stream's first gamma + 1 tokens have the target's joint law.

References
----------
Leviathan et al. 2023, Algorithm 1 and Section 3.4 (number of generated tokens);
Chen et al. 2023, Algorithm 2 (modified rejection sampling with a bonus token).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction
from typing import Any, Callable, Sequence

from specproof.errors import InvalidDistribution
from specproof.laws.exact import emitted_law
from specproof.laws.rational import RationalVector, as_distribution, to_fraction

__all__ = ["ChainLaw", "BlockLaw", "verification_law", "stream_law", "target_joint_law", "expected_tokens",
           "walltime_improvement", "operations_factor", "best_gamma", "GivenBlockLaw", "given_block_law"]

Prefix = tuple[int, ...]
Model = Callable[[Prefix], Sequence[Any]]


@dataclass(frozen=True, kw_only=True)
class ChainLaw:
    """The exact law of one block verification step.

    Attributes
    ----------
    gamma : int
        Number of drafted tokens per step.
    vocab_size : int
        V, the same at every position.
    emitted : Mapping of tuple of int -> Fraction
        Probability of each emitted block (1 to gamma + 1 token ids); only blocks of positive
        probability are keys. The values sum to 1. A :class:`BlockLaw` (values computed on
        access), which compares equal to the dict of the same items.
    accepted_length : tuple of Fraction, length gamma + 1
        ``accepted_length[i]`` = P(exactly i drafted tokens are accepted).
    alphas : Mapping of tuple of int -> Fraction
        The acceptance probability alpha(s) at every accepted prefix s of depth < gamma.
    reach : Mapping of tuple of int -> Fraction
        The probability that the verifier reaches each accepted prefix s (all its drafts
        accepted), for every depth 0..gamma: the product of the accept masses min(p, q) along
        it. The block stops at s with probability ``reach[s] * (1 - alphas[s])`` below depth
        gamma and ``reach[s]`` at depth gamma (then the bonus token is drawn).
    target_rows : Mapping of tuple of int -> RationalVector
        The target's row p(. | s) at every accepted prefix s (the keys of ``reach``): what
        :attr:`lossless` compares the block's next token with.
    stop_tokens : frozenset of int, optional
        Stop ids (EOS): a block ends at an accepted stop token (no bonus token after it, no
        further draft). Empty by default.
    ended : Mapping of tuple of int -> Fraction, optional
        The blocks that end at an accepted stop token (s + (t,), t a stop id) and their mass;
        their ends count in :attr:`accepted_length` (t is an accepted draft).

    Notes
    -----
    Build it with :func:`verification_law`, or, for another verifier, from that verifier's own
    steps: :attr:`lossless` does not trust how the law was made. ``expected_accepted``,
    ``expected_emitted`` and ``mean_alpha`` (the reach-weighted mean of alpha over the
    positions visited, the alpha to compare with Leviathan et al.'s Eq. 1) are computed.
    """

    gamma: int
    vocab_size: int
    emitted: Mapping[Prefix, Fraction]
    accepted_length: tuple[Fraction, ...]
    alphas: Mapping[Prefix, Fraction]
    reach: Mapping[Prefix, Fraction]
    target_rows: Mapping[Prefix, Any]
    stop_tokens: frozenset = frozenset()
    ended: Mapping[Prefix, Fraction] = field(default_factory=dict)

    @property
    def expected_accepted(self) -> Fraction:
        """E[number of accepted drafts] = sum_i i * accepted_length[i]."""
        return sum((i * s for i, s in enumerate(self.accepted_length)), Fraction(0))

    @property
    def expected_emitted(self) -> Fraction:
        """E[number of emitted tokens] = 1 + expected_accepted (the residual draw or the bonus
        token) - P(the block ends at an accepted stop token) (then nothing follows it): the
        tokens up to and including the first stop token."""
        return 1 + self.expected_accepted - _fsum(list(self.ended.values()))

    @cached_property
    def lossless(self) -> bool:
        """True iff the first gamma + 1 output tokens have the target's joint law.

        Decided node by node from :attr:`emitted`, :attr:`reach` and :attr:`target_rows` alone:
        the verifier starts at the empty prefix (``reach[()] == 1``); every emitted block ends
        one token after an accepted prefix; and at every accepted prefix s, for every token y,
        the probability that the block goes through s and its next token is y, ``reach[s + (y,)]``
        (y drafted and accepted, below depth gamma) plus ``emitted[s + (y,)]`` (y drawn from the
        residual, or as the bonus token at depth gamma), equals ``reach[s] * p(y | s)``. With plain
        target sampling after the block, this is the statement that the output stream's first
        gamma + 1 tokens have the target's joint law (by induction on the depth).
        """
        if self.reach.get((), None) != 1 or set(self.target_rows) != set(self.reach):
            return False
        table = self.emitted
        stops = (set(table._residual) | set(table._bonus)) if isinstance(table, BlockLaw) else {b[:-1] for b in table}
        if not stops <= set(self.reach):
            return False
        exact = _Rows("p")
        for s, reach in self.reach.items():
            row = exact(self.target_rows[s])
            if len(row) != self.vocab_size:
                return False
            if len(s) == self.gamma and isinstance(table, BlockLaw) and s not in table._residual:
                # the bonus token, read from the stored row: scale * m_y == reach * n_y / den for every y,
                # in integers (tens of thousands of these rows at gamma = 3)
                scale, masses = table._bonus.get(s, (Fraction(0), ()))
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
                through = table.get(s + (y,), Fraction(0))
                if below:
                    through += self.reach.get(s + (y,), Fraction(0))
                if through * row.denominator != reach * num:
                    return False
        return True

    def stop(self, prefix: Sequence[int]) -> Fraction:
        """P(the verifier accepts exactly the drafts ``prefix`` and then stops): the mass of the
        blocks ``prefix + (t,)`` for all t (residual draws, or the bonus token at depth gamma);
        0 for a prefix it never accepts."""
        key = tuple(prefix)
        if key not in self.reach:
            return Fraction(0)
        return self.reach[key] * (1 - self.alphas[key]) if key in self.alphas else self.reach[key]

    @property
    def mean_alpha(self) -> Fraction:
        """sum_s reach(s) alpha(s) / sum_s reach(s) over the accepted prefixes of depth < gamma."""
        return _fsum([self.reach[s] * a for s, a in self.alphas.items()]) / _fsum([self.reach[s] for s in self.alphas])


class _Rows:
    """:func:`~specproof.laws.rational.as_distribution`, validating each :class:`RationalVector` object once:
    a model returns the same (immutable) row object after many prefixes (41 ** 2 distinct rows after
    65,641 prefixes of a gamma = 3 phone chain). Other rows (lists, arrays) are validated every time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: dict[int, RationalVector] = {}  # id -> the object itself (kept alive, so ids stay unique)

    def __call__(self, row: Any) -> Any:
        if not isinstance(row, RationalVector):
            return as_distribution(row, self.name)
        if self.seen.get(id(row)) is not row:
            self.seen[id(row)] = as_distribution(row, self.name)
        return row


def _row(model: Model, prefix: Prefix, name: str) -> Any:
    try:
        return model(prefix)
    except (KeyError, IndexError) as exc:
        raise InvalidDistribution(f"{name} has no distribution after prefix {prefix}: {exc!r}") from None


def verification_law(target: Model, draft: Model, gamma: int, *, stop_tokens: Sequence[int] = ()) -> ChainLaw:
    """Compute the exact law of one verification step with ``gamma`` drafted tokens.

    Parameters
    ----------
    target : callable
        ``target(prefix)`` returns the target's next-token distribution after ``prefix`` (a
        tuple of token ids, ``()`` for the start of the block), as exact rationals accepted by
        :func:`specproof.laws.exact.emitted_law`, length V.
    draft : callable
        ``draft(prefix)``: the draft's next-token distribution, same form.
    gamma : int
        Draft length, >= 1.
    stop_tokens : sequence of int, optional
        Stop ids (EOS). The block ends at the first one: an accepted stop token is not followed
        by a draft or the bonus token; a stop token drawn from the residual ends the block as
        any rejection does. Tokens after the first stop are neither emitted nor counted.

    Returns
    -------
    ChainLaw
        Emitted-block law, law of the number of accepted drafts, their expectations, and
        the node-by-node losslessness verdict.

    Raises
    ------
    InvalidDistribution
        If ``gamma`` is not a positive integer, a row is not an exact distribution, or rows
        have different lengths.

    Notes
    -----
    Only prefixes the verifier can accept (all accept masses min(p, q) > 0 along them) are
    expanded; the work is at most the number of such prefixes times V. Special cases: p == q
    at a position (alpha = 1, no residual draw there); disjoint supports (alpha = 0, the block
    stops there); q = 0 where p > 0 (reachable only through the residual).

    Examples
    --------
    >>> p = lambda s: ["1/2", "1/2"]
    >>> q = lambda s: ["1/4", "3/4"]
    >>> law = verification_law(p, q, 1)
    >>> law.accepted_length, law.expected_emitted, law.lossless
    ((Fraction(1, 4), Fraction(3, 4)), Fraction(7, 4), True)
    >>> law.emitted[(1, 0)], law.emitted[(0,)]
    (Fraction(1, 4), Fraction(1, 4))
    """
    _require_int(gamma, "gamma", 1)
    stop_set = frozenset(stop_tokens)
    if any(isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0 for t in stop_set):
        raise InvalidDistribution(f"stop_tokens are {sorted(stop_tokens)!r}, not token ids >= 0")
    ended: dict[Prefix, Fraction] = {}
    blocks = BlockLaw(ended)
    stopping: list[list[Fraction]] = [[] for _ in range(gamma + 1)]  # the stop masses at each depth
    alphas: dict[Prefix, Fraction] = {}
    reaches: dict[Prefix, Fraction] = {}
    rows: dict[Prefix, Any] = {}
    vocab: int | None = None
    stack: list[tuple[Prefix, Fraction]] = [((), Fraction(1))]
    prefix: Prefix = ()
    exact = _Rows("p")
    try:
        while stack:
            prefix, reach = stack.pop()
            p_row = _row(target, prefix, "target")
            if len(prefix) == gamma:  # every draft accepted: the bonus token from the target's row
                row = exact(p_row)
                vocab = _same_size(vocab, len(row))
                rows[prefix] = row
                reaches[prefix] = reach  # its mass is in stops[gamma] already (added by its parent, below)
                blocks._bonus[prefix] = (reach / row.denominator, row.numerators)
                continue
            p_vec = exact(p_row)
            law = emitted_law(p_vec, _row(draft, prefix, "draft"))
            vocab = _same_size(vocab, len(law))
            rows[prefix] = p_vec
            d, z = law.denominator, law.normalizer
            reject = Fraction(law.rejected, d)
            alphas[prefix] = law.alpha
            reaches[prefix] = reach
            stopping[len(prefix)].append(reach * reject)
            residual = law.residual_mass.tolist()
            if z:
                blocks._residual[prefix] = (reach * reject / z, residual)
            # the block's next token: accepted draft y (mass min(p, q)), or a residual draw
            going = 0  # the accept masses of the children that go on (not stop tokens), over d
            for y, acc in enumerate(law.accept.tolist()):
                if acc and y in stop_set:  # an accepted stop token ends the block
                    ended[prefix + (y,)] = reach * Fraction(acc, d)
                    stopping[len(prefix) + 1].append(ended[prefix + (y,)])
                elif acc:
                    going += acc
                    stack.append((prefix + (y,), reach * Fraction(acc, d)))
            if len(prefix) + 1 == gamma and going:
                # the children at depth gamma all stop (the bonus token): their reaches summed in
                # one step, reach * (sum of their accept masses) / d, not one Fraction at a time
                stopping[gamma].append(reach * Fraction(going, d))
    except InvalidDistribution as exc:  # say where in the chain the bad row is
        raise type(exc)(f"after the drafted prefix {prefix}: {exc}") from None
    if any(t >= (vocab or 0) for t in stop_set):
        raise InvalidDistribution(f"stop_tokens {sorted(stop_set)} are not all ids below V = {vocab}")
    stops = tuple(_fsum(masses) for masses in stopping)
    return ChainLaw(gamma=gamma, vocab_size=vocab or 0, emitted=blocks, accepted_length=stops,
                    alphas=alphas, reach=reaches, target_rows=rows, stop_tokens=stop_set, ended=ended)


class BlockLaw(Mapping):
    """The law of the emitted block, as a read-only mapping block -> Fraction (computed on access).

    Blocks ending in a residual draw are stored per rejecting prefix (its scale and the residual
    masses), blocks ending in the bonus token per fully accepted prefix (its reach and the
    target's row), so a gamma = 3 chain over 41 tokens (2.6 million blocks) costs a few
    thousand stored rows, not millions of Fractions.
    """

    def __init__(self, ended: Mapping[Prefix, Fraction] | None = None) -> None:
        self._residual: dict[Prefix, tuple[Fraction, list[int]]] = {}
        self._bonus: dict[Prefix, tuple[Fraction, tuple[int, ...]]] = {}
        self._ended = {} if ended is None else ended  # blocks ending at an accepted stop token

    def _parts(self):
        yield from self._residual.items()
        yield from self._bonus.items()

    def __getitem__(self, block: Prefix) -> Fraction:
        """The block's mass: a residual draw or bonus token at its end, plus (same block) an
        accepted stop token there."""
        prefix, y = tuple(block[:-1]), block[-1] if block else None
        total = self._ended.get(tuple(block), Fraction(0))
        for table in (self._residual, self._bonus):
            if prefix in table:
                scale, masses = table[prefix]
                if isinstance(y, numbers.Integral) and not isinstance(y, bool) and 0 <= y < len(masses) and masses[y]:
                    total += scale * masses[y]
        if not total:
            raise KeyError(block)
        return total

    def __iter__(self):
        for prefix, (_, masses) in self._parts():
            for y, mass in enumerate(masses):
                if mass:
                    yield prefix + (y,)
        drawn = set(self._residual)
        for block in self._ended:  # those not already listed as residual draws
            if not (block[:-1] in drawn and self._residual[block[:-1]][1][block[-1]]):
                yield block

    def __len__(self) -> int:
        return sum(1 for _ in self)


def stream_law(law: ChainLaw, target: Model) -> dict[Prefix, Fraction]:
    """Law of the first gamma + 1 output tokens: the block, then plain target sampling.

    ``P(z) = sum_k P(block == z[:k]) * prod_{j >= k} p(z_j | z_<j)`` over every sequence z of
    gamma + 1 tokens (V ** (gamma + 1) of them: small vocabularies only). Lossless means this
    equals :func:`target_joint_law`.
    """
    return _continue(law.emitted.items(), target, law.gamma + 1)


def target_joint_law(target: Model, length: int) -> dict[Prefix, Fraction]:
    """The target's own joint law of ``length`` tokens, ``prod_i p(z_i | z_<i)`` (small V only)."""
    return _continue([((), Fraction(1))], target, length)


def _continue(starts: Any, target: Model, length: int) -> dict[Prefix, Fraction]:
    """Extend each (sequence, mass) by plain target sampling to ``length`` tokens; sum the masses."""
    out: dict[Prefix, Fraction] = {}
    frontier = list(starts)
    while frontier:
        seq, m = frontier.pop()
        if len(seq) == length:
            out[seq] = out.get(seq, Fraction(0)) + m
            continue
        for y, py in enumerate(as_distribution(target(seq), "p").fractions()):
            if py:
                frontier.append((seq + (y,), m * py))
    return out


def _fsum(terms: Sequence[Fraction]) -> Fraction:
    """The exact sum of ``terms``, added in pairs (a balanced tree): the same value as adding them
    one by one, but each addition works on numbers of about the size of its two halves instead of
    the whole running sum (thousands of terms of different denominators at gamma = 3).

    >>> _fsum([Fraction(1, 3), Fraction(1, 6), Fraction(1, 2)]), _fsum([])
    (Fraction(1, 1), Fraction(0, 1))
    """
    level = list(terms) or [Fraction(0)]
    while len(level) > 1:
        level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return Fraction(level[0])


def _same_size(vocab: int | None, size: int) -> int:
    if vocab is not None and size != vocab:
        raise InvalidDistribution(f"rows have different vocabulary sizes: {vocab} and {size}")
    return size


def expected_tokens(alpha: Any, gamma: int) -> Fraction:
    """Expected tokens per step when every position has the same alpha (Leviathan Eq. 1).

    ``(1 - alpha**(gamma + 1)) / (1 - alpha)``, and ``gamma + 1`` when ``alpha == 1``.

    Parameters
    ----------
    alpha : exact rational in [0, 1]
    gamma : int, >= 0

    Returns
    -------
    Fraction

    Raises
    ------
    InvalidDistribution
        If alpha is not an exact rational in [0, 1] or gamma is not an integer >= 0.

    References
    ----------
    Leviathan et al. 2023, Equation (1) (Section 3.4).

    Examples
    --------
    >>> expected_tokens("3/4", 1), expected_tokens(1, 3)
    (Fraction(7, 4), Fraction(4, 1))
    """
    a = to_fraction(alpha, what="alpha")
    if not 0 <= a <= 1:
        raise InvalidDistribution(f"alpha is {a}, not in [0, 1]")
    _require_int(gamma, "gamma", 0)
    if a == 1:
        return Fraction(gamma + 1)
    return (1 - a ** (gamma + 1)) / (1 - a)


def _require_int(value: Any, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidDistribution(f"{name} must be an integer >= {minimum}, got {value!r}")


def _cost(value: Any, what: str) -> Fraction:
    c = to_fraction(value, what=what)
    if c < 0:
        raise InvalidDistribution(f"{what} is {c}, not >= 0")
    return c


def walltime_improvement(alpha: Any, gamma: int, c: Any) -> Fraction:
    """Expected walltime improvement factor of speculative decoding (Leviathan Thm 3.8).

    ``(1 - alpha**(gamma + 1)) / ((1 - alpha) * (gamma * c + 1))``: expected tokens per step
    (Eq. 1) over the cost of a step, gamma draft runs at c target-runs each plus one target run.

    Parameters
    ----------
    alpha : exact rational in [0, 1]
        Acceptance probability, the same at every position.
    gamma : int, >= 0
        Draft length.
    c : exact rational >= 0
        Cost coefficient: time of one draft run over time of one target run.

    Returns
    -------
    Fraction

    Raises
    ------
    InvalidDistribution
        As :func:`expected_tokens`, or a negative or inexact ``c``.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.8.

    Examples
    --------
    >>> walltime_improvement("1/2", 1, 0), walltime_improvement(1, 3, "1/10")
    (Fraction(3, 2), Fraction(40, 13))
    """
    return expected_tokens(alpha, gamma) / (gamma * _cost(c, "c") + 1)


def operations_factor(alpha: Any, gamma: int, c_hat: Any) -> Fraction:
    """Expected factor of increase in arithmetic operations (Leviathan Thm 3.11).

    ``(1 - alpha) * (gamma * c_hat + gamma + 1) / (1 - alpha**(gamma + 1))``: per step the
    target runs on gamma + 1 positions and the draft gamma times at c_hat target-operations
    each, divided by the expected tokens per step (Eq. 1).

    Parameters
    ----------
    alpha : exact rational in [0, 1]
    gamma : int, >= 0
    c_hat : exact rational >= 0
        Operations of one draft run over operations of one target run.

    Returns
    -------
    Fraction

    References
    ----------
    Leviathan et al. 2023, Theorem 3.11.

    Examples
    --------
    >>> operations_factor(0, 2, "1/10"), operations_factor(1, 2, 0)
    (Fraction(16, 5), Fraction(1, 1))
    """
    return (gamma * _cost(c_hat, "c_hat") + gamma + 1) / expected_tokens(alpha, gamma)


def best_gamma(alpha: Any, c: Any, *, max_gamma: int = 64) -> int:
    """The integer gamma in [1, max_gamma] that maximizes :func:`walltime_improvement`.

    Ties go to the smaller gamma. With alpha = 1 and c < 1 the improvement grows without
    bound, so the answer is ``max_gamma``: the cap is a parameter, not a hidden choice.

    Examples
    --------
    >>> best_gamma("3/4", "1/20"), best_gamma("1/2", "1/2"), best_gamma(1, "1/10", max_gamma=8)
    (7, 1, 8)
    """
    _require_int(max_gamma, "max_gamma", 1)
    return max(range(1, max_gamma + 1), key=lambda g: (walltime_improvement(alpha, g, c), -g))


@dataclass(frozen=True)
class GivenBlockLaw:
    """What the verifier does with one given drafted block (the reference for batched samplers).

    Attributes
    ----------
    accepted_length : tuple of Fraction, length gamma + 1
        P(exactly i of the given drafts are accepted).
    emitted : tuple of tuple of Fraction, shape [gamma + 1][V]
        ``emitted[i]``: the law of the token emitted when the verifier stops after i accepted
        drafts: the normalized residual row i for i < gamma, the bonus row p_gamma for
        i = gamma. A stop position of probability 0 gets the row it would use, or all zeros if
        that row is the empty residual (p_i == q_i).
    """

    accepted_length: tuple[Fraction, ...]
    emitted: tuple[tuple[Fraction, ...], ...]


def given_block_law(target_rows: Sequence[Any], draft_rows: Sequence[Any], tokens: Sequence[int]) -> GivenBlockLaw:
    """Exact law of the verifier's outcome for a given drafted block.

    Parameters
    ----------
    target_rows : sequence of gamma + 1 exact distributions over V tokens
        p(. | prefix, x_<i) for i = 0..gamma (the last row gives the bonus token).
    draft_rows : sequence of gamma exact distributions over V tokens
        q(. | prefix, x_<i) for i = 0..gamma-1.
    tokens : sequence of gamma ints
        The drafted tokens x_1..x_gamma, each in [0, V) with q_i(x_i) > 0.

    Returns
    -------
    GivenBlockLaw

    Raises
    ------
    InvalidDistribution
        Row counts that do not fit gamma, rows of different lengths, a token id outside
        [0, V) or not an int, or a token the draft gives probability 0 (it cannot have been
        drafted).

    Examples
    --------
    >>> law = given_block_law([["1/2", "1/2"], [1, 0]], [["1/4", "3/4"]], [1])
    >>> law.accepted_length, law.emitted[0]
    ((Fraction(1, 3), Fraction(2, 3)), (Fraction(1, 1), Fraction(0, 1)))
    """
    try:
        gamma, n_target, n_draft = len(tokens), len(target_rows), len(draft_rows)
    except TypeError:
        raise InvalidDistribution("tokens, target_rows and draft_rows must be sequences (lists, tuples or arrays)") from None
    if gamma < 1 or n_target != gamma + 1 or n_draft != gamma:
        raise InvalidDistribution(
            f"need gamma >= 1 tokens, gamma + 1 target rows and gamma draft rows; got {gamma} tokens, "
            f"{n_target} target rows, {n_draft} draft rows"
        )
    stops, rows, alive = [], [], Fraction(1)
    vocab = None
    for i, x in enumerate(tokens):
        try:
            law = emitted_law(target_rows[i], draft_rows[i])
            vocab = _same_size(vocab, len(law))
        except InvalidDistribution as exc:
            raise type(exc)(f"position {i}: {exc}") from None
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not 0 <= x < len(law):
            raise InvalidDistribution(f"drafted token {i} is {x!r}, not an integer token id in [0, {len(law)})")
        x = int(x)
        if law.draft[x] == 0:
            raise InvalidDistribution(f"drafted token {i} ({x}) has draft probability 0: it cannot have been drafted")
        keep = min(Fraction(1), Fraction(law.target[x], law.draft[x]))  # min(1, p(x)/q(x))
        stops.append(alive * (1 - keep))
        alive *= keep
        z = law.normalizer
        rows.append(tuple(Fraction(r, z) if z else Fraction(0) for r in law.residual_mass.tolist()))
    bonus = as_distribution(target_rows[gamma], "p")
    _same_size(vocab, len(bonus))
    stops.append(alive)
    rows.append(bonus.fractions())
    return GivenBlockLaw(tuple(stops), tuple(rows))
