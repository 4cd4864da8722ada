"""The exact law of one verification step over a block of gamma drafted tokens.

The draft proposes x_1..x_gamma autoregressively from q(. | prefix, x_<i); the target scores
every position; the verifier accepts the longest prefix that passes the per-position test
(accept x_i with probability min(1, p(x_i)/q(x_i))), then emits one more token: a draw from the
normalized residual (p - q)+ at the first rejected position, or, when all gamma drafts were
accepted, the bonus token drawn from the target's next row p(. | x_1..x_gamma).

:func:`verification_law` computes the law of the emitted block with the block engine
(:func:`specproof.laws.block.compose`) and the textbook position in integers
(:func:`textbook_position`), over exact rationals, and checks losslessness node by node
(:attr:`ChainLaw.lossless`): at every accepted prefix s, the block's
next token has law exactly p(. | s) (by acceptance, by the residual draw, or as the bonus
token). With plain target sampling continuing after the block, this is exactly the statement
that the stream's first gamma + 1 tokens have the target's joint law.

References
----------
Leviathan et al. 2023, Algorithm 1 and Section 3.4 (number of generated tokens);
Chen et al. 2023, Algorithm 2 (modified rejection sampling with a bonus token).
"""

from __future__ import annotations

import functools
import numbers
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution
from specproof.laws.block import (
    BlockLaw,
    ChainLaw,
    LengthLawName,
    Position,
    _require_int,
    _Rows,
    compose,
    extend_by_target,
    given_block,
    target_joint,
)
from specproof.laws.exact import emitted_law
from specproof.laws.rational import as_distribution, to_fraction

__all__ = [
    "ChainLaw",
    "BlockLaw",
    "textbook_position",
    "verification_law",
    "stream_law",
    "target_joint_law",
    "expected_tokens",
    "walltime_improvement",
    "operations_factor",
    "best_gamma",
    "GivenBlockLaw",
    "given_block_law",
]

Prefix = tuple[int, ...]
Model = Callable[[Prefix], Sequence[Any]]


def _renamed_keywords(**renames: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Let a function still take its parameters' old keyword names (``old="new"``) for one release,
    with a :class:`DeprecationWarning`."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{function.__name__}() got both {old}= (its old name) and {new}=")
                    warnings.warn(
                        f"{function.__name__}({old}=...) is deprecated; use {new}=", DeprecationWarning, stacklevel=2
                    )
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return call

    return wrap


def _row(model: Model, prefix: Prefix, name: str) -> Any:
    try:
        return model(prefix)
    except (KeyError, IndexError) as exc:
        raise InvalidDistribution(f"{name} has no distribution after prefix {prefix}: {exc!r}") from None


def textbook_position(p_row: Any, q_row: Any) -> Position:
    """The textbook position (accept x ~ q with probability min(1, p(x)/q(x)), else draw from the
    residual) as the block composes it, in integers: the accept masses over D and the residual
    masses over Z (:func:`specproof.laws.exact.emitted_law`).

    Parameters
    ----------
    p_row, q_row : exact distributions over V tokens
        The target's and the draft's rows (``p_row`` is also the reference).

    Returns
    -------
    Position

    Examples
    --------
    >>> pos = textbook_position(["1/2", "1/2"], ["1/4", "3/4"])
    >>> pos.go, pos.go_scale, pos.stop, pos.stop_mass
    ([1, 2], Fraction(1, 4), [1, 0], Fraction(1, 4))
    >>> pos.tv()
    Fraction(0, 1)
    """
    law = emitted_law(p_row, q_row)
    d, z = law.denominator, law.normalizer
    reject = Fraction(law.reject_numerator, d)
    reference = tuple(Fraction(n, d) for n in law.target_numerators.tolist())  # p as exact values, however given
    return Position(
        reference,
        law.accept_numerators.tolist(),
        Fraction(1, d),
        law.residual_numerators.tolist(),
        reject / z if z else Fraction(0),
        reject,
    )


@_renamed_keywords(target="target_model", draft="draft_model")
def verification_law(
    target_model: Model, draft_model: Model, gamma: int, *, stop_tokens: Sequence[int] = ()
) -> ChainLaw:
    """Compute the exact law of one verification step with ``gamma`` drafted tokens.

    Parameters
    ----------
    target_model : callable
        ``target_model(prefix)``, for ``prefix`` a tuple of token ids (``()`` at the start of the
        block), returns the target's next-token distribution p(. | prefix) as exact rationals
        accepted by :func:`specproof.laws.exact.emitted_law`, length V. (Its old keyword
        ``target=``, and ``draft=`` for ``draft_model``, still work, with a DeprecationWarning.)
    draft_model : callable
        ``draft_model(prefix)``: the draft's next-token distribution q(. | prefix), same form.
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
    The block engine (:func:`specproof.laws.block.compose`) with :func:`textbook_position` at
    every accepted prefix and the bonus token drawn from the target's row. Only prefixes the
    verifier can accept (all accept masses min(p, q) > 0 along them) are expanded; the work is at
    most the number of such prefixes times V. Special cases: p == q at a position (alpha = 1, no
    residual draw there); disjoint supports (alpha = 0, the block stops there); q = 0 where p > 0
    (reachable only through the residual).

    Examples
    --------
    >>> p = lambda s: ["1/2", "1/2"]
    >>> q = lambda s: ["1/4", "3/4"]
    >>> law = verification_law(p, q, 1)
    >>> law.accepted_length_law, law.expected_emitted, law.lossless
    ((Fraction(1, 4), Fraction(3, 4)), Fraction(7, 4), True)
    >>> law.emitted[(1, 0)], law.emitted[(0,)]
    (Fraction(1, 4), Fraction(1, 4))
    """
    _require_int(gamma, "gamma", 1)
    stop_set = frozenset(stop_tokens)
    if any(isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0 for t in stop_set):
        raise InvalidDistribution(f"stop_tokens are {sorted(stop_tokens)!r}, not token ids >= 0")
    exact = _Rows("p")

    def position(prefix: Prefix) -> Position:
        return textbook_position(exact(_row(target_model, prefix, "target")), _row(draft_model, prefix, "draft"))

    def bonus(prefix: Prefix) -> tuple[Any, Fraction, Sequence[int]]:  # every draft accepted: the target's row
        row = exact(_row(target_model, prefix, "target"))
        return row, Fraction(1, row.denominator), row.numerators

    law = compose(position, gamma, bonus, stop_tokens=stop_set)
    if any(t >= law.vocab_size for t in stop_set):
        raise InvalidDistribution(f"stop_tokens {sorted(stop_set)} are not all ids below V = {law.vocab_size}")
    return law


def stream_law(law: ChainLaw, target_model: Model) -> dict[Prefix, Fraction]:
    """Law of the first gamma + 1 output tokens: the block, then plain target sampling from
    ``target_model(prefix)``, the target's row p(. | prefix).

    ``P(z) = sum_k P(block == z[:k]) * prod_{j >= k} p(z_j | z_<j)`` over every sequence z of
    gamma + 1 tokens (V ** (gamma + 1) of them: small vocabularies only):
    :func:`specproof.laws.block.extend_by_target`. Lossless means this equals
    :func:`target_joint_law`.
    """
    return extend_by_target(law.emitted, target_model, law.gamma + 1)


#: The target's own joint law of ``length`` tokens (:func:`specproof.laws.block.target_joint`).
target_joint_law = target_joint


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
class GivenBlockLaw(LengthLawName):
    """What the verifier does with one given drafted block (the reference for batched samplers).

    Attributes
    ----------
    accepted_length_law : tuple of Fraction, length gamma + 1
        P(exactly i of the given drafts are accepted).
    emitted : tuple of tuple of Fraction, shape [gamma + 1][V]
        ``emitted[i]``: the law of the token emitted when the verifier stops after i accepted
        drafts: the normalized residual row i for i < gamma, the bonus row p_gamma for
        i = gamma. A stop position of probability 0 gets the row it would use, or all zeros if
        that row is the empty residual (p_i == q_i).
    """

    accepted_length_law: tuple[Fraction, ...]
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
    >>> law.accepted_length_law, law.emitted[0]
    ((Fraction(1, 3), Fraction(2, 3)), (Fraction(1, 1), Fraction(0, 1)))
    """
    try:
        gamma, n_target, n_draft = len(tokens), len(target_rows), len(draft_rows)
    except TypeError:
        raise InvalidDistribution(
            "tokens, target_rows and draft_rows must be sequences (lists, tuples or arrays)"
        ) from None
    if gamma < 1 or n_target != gamma + 1 or n_draft != gamma:
        raise InvalidDistribution(
            f"need gamma >= 1 tokens, gamma + 1 target rows and gamma draft rows; got {gamma} tokens, "
            f"{n_target} target rows, {n_draft} draft rows"
        )
    steps: list[Any] = []
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
        if law.draft_numerators[x] == 0:
            raise InvalidDistribution(f"drafted token {i} ({x}) has draft probability 0: it cannot have been drafted")
        keep = min(Fraction(1), Fraction(law.target_numerators[x], law.draft_numerators[x]))  # min(1, p(x)/q(x))
        z = law.normalizer
        steps.append((keep, tuple(Fraction(r, z) if z else Fraction(0) for r in law.residual_numerators.tolist())))
    bonus = as_distribution(target_rows[gamma], "p")
    _same_size(vocab, len(bonus))
    return GivenBlockLaw(*given_block(steps, bonus.fractions()))
