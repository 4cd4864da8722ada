"""Cross-check the float path against the exact law on random rational pairs.

Each pair (p, q) is drawn as exact rationals, one of several kinds (random weights with random
denominators, zeros in p, zeros in q, p == q, one-hot target or draft, disjoint supports,
pairs that differ by a tiny mass, V = 1). The exact law comes from :mod:`specproof.laws.exact`;
the float law from :mod:`specproof.laws.numeric` on the float64 roundings of p and q. The error
of each float output is measured exactly (the float's exact value minus the exact law, as a
Fraction), and the worst is reported with the pair that produced it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from specproof.errors import CrosscheckFailed, InvalidDistribution
from specproof.laws import exact, numeric

__all__ = [
    "KINDS",
    "Pair",
    "Worst",
    "CrosscheckReport",
    "random_pair",
    "pairs",
    "crosscheck",
    "crosscheck_real",
    "check_pair",
    "require",
    "Block",
    "blocks",
    "BlockCrosscheckReport",
    "check_blocks",
    "crosscheck_blocks",
    "BLOCK_KINDS",
]


@dataclass(frozen=True)
class Pair:
    """One exact test pair.

    Attributes
    ----------
    kind : str
        Which generator made it (one of :data:`KINDS`).
    p, q : tuple of Fraction
        Target and draft, length V, each summing to exactly 1.
    """

    kind: str
    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]


def _normalize(weights: list[int]) -> tuple[Fraction, ...]:
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


def _weights(rng: np.random.Generator, v: int, zero_fraction: float = 0.0) -> list[int]:
    """Random non-negative integer weights with at least one positive entry."""
    top = int(10 ** rng.integers(0, 13))  # denominators from 1 to about 10^13 * V
    w = [int(x) for x in rng.integers(0, top + 1, size=v)]
    if zero_fraction:
        w = [0 if rng.random() < zero_fraction else x for x in w]
    if not any(w):
        w[int(rng.integers(v))] = top or 1
    return w


def _one_hot(rng: np.random.Generator, v: int) -> tuple[Fraction, ...]:
    i = int(rng.integers(v))
    return tuple(Fraction(int(j == i)) for j in range(v))


def _disjoint(rng: np.random.Generator, v: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    cut = int(rng.integers(1, v))
    wp, wq = _weights(rng, cut), _weights(rng, v - cut)
    return _normalize(wp + [0] * (v - cut)), _normalize([0] * cut + wq)


def _tiny_difference(rng: np.random.Generator, v: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    p = _normalize(_weights(rng, v))
    support = [i for i, x in enumerate(p) if x > 0]
    i = support[int(rng.integers(len(support)))]
    j = int(rng.integers(v - 1))
    j = j + 1 if j >= i else j
    eps = min(p[i], Fraction(1, 2 ** int(rng.integers(40, 70))))
    q = list(p)
    q[i] -= eps
    q[j] += eps
    return p, tuple(q)


def _tiny_new_token(rng: np.random.Generator, v: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """q moves a tiny mass (2^-70 to 2^-20) from one token onto a token k where p(k) = 0:
    drafting k is almost impossible, but once drafted it is rejected for sure, and the
    residual that replaces it is tiny."""
    w = _weights(rng, v)
    k = int(rng.integers(v))
    w[k] = 0
    if not any(w):
        w[(k + 1) % v] = 1
    p = _normalize(w)
    support = [i for i, x in enumerate(p) if x > 0]
    i = support[int(rng.integers(len(support)))]
    q = list(p)
    eps = min(p[i], Fraction(1, 2 ** int(rng.integers(20, 71))))
    q[i] -= eps
    q[k] += eps
    return p, tuple(q)


def _make(kind: str, rng: np.random.Generator, v: int | None = None) -> Pair:
    if v is None:
        v = 1 if kind == "V=1" else int(rng.integers(2, 65))
    if kind == "random":
        p, q = _normalize(_weights(rng, v)), _normalize(_weights(rng, v))
    elif kind == "zeros-in-p":
        p, q = _normalize(_weights(rng, v, 0.5)), _normalize(_weights(rng, v))
    elif kind == "zeros-in-q":
        p, q = _normalize(_weights(rng, v)), _normalize(_weights(rng, v, 0.5))
    elif kind == "equal":
        p = _normalize(_weights(rng, v, 0.2))
        q = p
    elif kind == "one-hot-p":
        p, q = _one_hot(rng, v), _normalize(_weights(rng, v))
    elif kind == "one-hot-q":
        p, q = _normalize(_weights(rng, v)), _one_hot(rng, v)
    elif kind == "disjoint":
        p, q = _disjoint(rng, v)
    elif kind == "tiny-difference":
        p, q = _tiny_difference(rng, v)
    elif kind == "tiny-new-token":
        p, q = _tiny_new_token(rng, v)
    elif kind == "V=1":
        p = q = (Fraction(1),)
    else:
        raise InvalidDistribution(f"unknown pair kind {kind!r}; expected one of {KINDS + ('tiny-new-token',)}")
    return Pair(kind, p, q)


#: The kinds of pairs :func:`pairs` cycles through.
KINDS = (
    "random",
    "zeros-in-p",
    "zeros-in-q",
    "equal",
    "one-hot-p",
    "one-hot-q",
    "disjoint",
    "tiny-difference",
    "V=1",
)


def random_pair(rng: np.random.Generator, kind: str = "random") -> Pair:
    """Draw one exact pair of the given kind.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    kind : str, optional
        One of :data:`KINDS`.

    Returns
    -------
    Pair
        p and q as tuples of Fractions summing to exactly 1; V in [2, 64] (1 for ``"V=1"``).

    Raises
    ------
    InvalidDistribution
        If ``kind`` is unknown.

    Examples
    --------
    >>> pair = random_pair(np.random.default_rng(0), "equal")
    >>> pair.p == pair.q and sum(pair.p) == 1
    True
    """
    return _make(kind, rng)


def pairs(n: int, seed: int) -> Iterator[Pair]:
    """Yield ``n`` reproducible pairs, cycling through :data:`KINDS`.

    Parameters
    ----------
    n : int
        Number of pairs.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Yields
    ------
    Pair
    """
    rng = np.random.default_rng(seed)
    for i in range(n):
        yield _make(KINDS[i % len(KINDS)], rng)


_PRINT_WIDTH = 100  # characters of a row of exact values in the summary; the rest is cut (--json has it all)


def _cut_row(vec: Sequence[Fraction], width: int = _PRINT_WIDTH) -> str:
    """``[a, b, ...]`` of the exact values, cut after ``width`` characters with how many were left out."""
    shown: list[str] = []
    used = 0
    for i, x in enumerate(vec):
        text = str(x)
        if shown and used + len(text) + 2 > width:
            return f"[{', '.join(shown)}, ... {len(vec) - i} more of V = {len(vec)}: --json has them all]"
        shown.append(text)
        used += len(text) + 2
    return f"[{', '.join(shown)}]"


@dataclass
class Worst:
    """The worst absolute error seen for one output, and the pair that produced it."""

    error: Fraction = Fraction(0)
    pair: Pair | Block | None = None
    token: int | tuple[int, int] | None = None

    def update(self, error: Fraction, pair: Pair | Block, token: int | tuple[int, int] | None = None) -> None:
        if self.pair is None or error > self.error:
            self.error, self.pair, self.token = error, pair, token


@dataclass
class CrosscheckReport:
    """Result of :func:`crosscheck`.

    Attributes
    ----------
    pairs : int
        Number of pairs checked.
    bound : float
        The stated bound (:data:`specproof.laws.numeric.ERROR_BOUND`).
    dist, alpha : Worst
        Worst absolute error of the float dist (over all tokens) and of the float alpha,
        each an exact Fraction, with the pair (and token) where it occurred.
    """

    pairs: int
    bound: float
    dist: Worst = field(default_factory=Worst)
    alpha: Worst = field(default_factory=Worst)

    @property
    def passed(self) -> bool:
        """True iff both worst errors are at most :attr:`bound`."""
        return self.dist.error <= self.bound and self.alpha.error <= self.bound

    def summary(self) -> str:
        """Human-readable lines: each worst error with its pair (p and q, cut after about 100 characters),
        the verdict."""
        lines = [f"crosscheck: {self.pairs} pairs, float path vs exact law, bound {self.bound:g}"]
        for name, worst in (("dist", self.dist), ("alpha", self.alpha)):
            where = ""
            pair = worst.pair
            assert pair is None or isinstance(pair, Pair)  # a crosscheck of pairs records pairs
            if pair is not None:
                tok = "" if worst.token is None else f" token {worst.token},"
                where = f" ({pair.kind} pair,{tok} V={len(pair.p)})"
            lines.append(f"  worst |{name} error| = {float(worst.error):.3e}{where}")
            if pair is not None:
                for label, vec in (("p", pair.p), ("q", pair.q)):
                    lines.append(f"    {label} = {_cut_row(vec)}")
        lines.append("  verdict: " + ("within bound" if self.passed else "BOUND EXCEEDED"))
        return "\n".join(lines)


def check_pair(pair: Pair, report: CrosscheckReport, backend: str = "numpy") -> None:
    """Compare the float path (``backend``: see :data:`specproof.laws.numeric.BACKENDS`) with the
    exact law on one pair; update ``report``."""
    law = exact.emitted_law(pair.p, pair.q)
    dist, alpha = numeric.emitted_distribution(
        np.array([float(x) for x in pair.p]), np.array([float(x) for x in pair.q]), backend=backend
    )
    error, token = _worst_error(dist.tolist(), law.emitted.tolist(), law.emitted_denominator)
    report.dist.update(error, pair, token)
    report.alpha.update(abs(Fraction(float(alpha)) - law.alpha), pair)


def _worst_error(values: Sequence[float], numerators: Sequence[int], den: int) -> tuple[Fraction, int]:
    """``max_i |values[i] - numerators[i] / den|``, exactly, and the first ``i`` where it occurs.

    Every float is m / 2^k: over the common denominator ``2^K * den`` (K the largest k) each error
    is an integer, so the maximum is found by comparing integers, with one Fraction at the end
    (V = 49,152: about 20 ms, against 0.2 s for V Fraction differences).

    >>> _worst_error([0.5, 0.25], [1, 1], 3)
    (Fraction(1, 6), 0)
    """
    ratios = [float(v).as_integer_ratio() for v in values]  # (m, 2^k); raises on nan and inf, as Fraction does
    scale = max(d for _, d in ratios)
    best, token = -1, 0
    for i, ((m, d), e) in enumerate(zip(ratios, numerators)):
        err = abs(m * (scale // d) * den - e * scale)
        if err > best:
            best, token = err, i
    return Fraction(best, scale * den), token


def crosscheck(
    n: int,
    seed: int = 0,
    *,
    bound: float = numeric.ERROR_BOUND,
    progress: Callable[[int], None] | None = None,
    backend: str = "numpy",
) -> CrosscheckReport:
    """Run the float path against the exact law on ``n`` random rational pairs.

    Parameters
    ----------
    n : int
        Number of pairs (>= 1).
    seed : int, optional
        Seed; the same seed gives the same pairs and the same report.
    bound : float, optional
        The error bound to judge against, default :data:`specproof.laws.numeric.ERROR_BOUND`.
    progress : callable, optional
        Called with the number of pairs done so far, after each pair.
    backend : {"numpy", "numba"}, optional
        The float path's backend (:func:`specproof.laws.numeric.emitted_distribution`).

    Returns
    -------
    CrosscheckReport
        Worst errors of dist and alpha (exact Fractions), the pairs that produced them,
        and ``passed``.

    Raises
    ------
    InvalidDistribution
        If ``n`` is not an integer >= 1, ``seed`` not an integer >= 0, or ``bound`` not >= 0.
    InvalidOption
        An unknown ``backend``; :class:`~specproof.errors.BackendUnavailable` if it is "numba"
        and numba cannot be imported.

    Examples
    --------
    >>> report = crosscheck(18, seed=0)
    >>> report.passed, report.dist.error < 1e-15
    (True, True)
    """
    _arguments(n, seed, bound)
    numeric._check_backend(backend)
    report = CrosscheckReport(pairs=int(n), bound=float(bound))
    for i, pair in enumerate(pairs(int(n), int(seed)), 1):
        check_pair(pair, report, backend)
        if progress is not None:
            progress(i)
    return report


def _arguments(n: int, seed: int, bound: float) -> None:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise InvalidDistribution(f"the number of pairs or blocks must be an integer >= 1, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidDistribution(f"the seed must be an integer >= 0, got {seed!r}")
    if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or not bound >= 0:
        raise InvalidDistribution(f"the bound must be a real number >= 0, got {bound!r}")


def crosscheck_real(
    *, bound: float = numeric.ERROR_BOUND, progress: Callable[[int], None] | None = None, backend: str = "numpy"
) -> CrosscheckReport:
    """Run the float path against the exact law on every real pair shipped with specproof.

    Each real pair's exact p and q (see :mod:`specproof.models.fixtures`) are rounded to float64,
    given to :func:`specproof.laws.numeric.emitted_distribution` (with ``backend``), and its
    output compared exactly with the exact law of the exact pair.

    Returns
    -------
    CrosscheckReport
        As :func:`crosscheck`; the worst pairs' ``kind`` is the real pair's name.
    """
    from specproof.models.fixtures import real_pairs

    numeric._check_backend(backend)
    real = [Pair(rp.name, rp.p.fractions(), rp.q.fractions()) for rp in real_pairs()]
    report = CrosscheckReport(pairs=len(real), bound=float(bound))
    for i, pair in enumerate(real, 1):
        check_pair(pair, report, backend)
        if progress is not None:
            progress(i)
    return report


def require(report: CrosscheckReport) -> None:
    """Raise :class:`~specproof.errors.CrosscheckFailed` unless ``report.passed``."""
    if not report.passed:
        raise CrosscheckFailed(report.summary())


# ---------------------------------------------------------------- one drafted block, batched


@dataclass(frozen=True)
class Block:
    """One exact drafted block, the input of :func:`specproof.laws.chain.given_block_law`.

    Attributes
    ----------
    kind : str
        The pair kinds (:data:`KINDS`) of its positions, joined by ``"/"``.
    target : tuple of gamma + 1 tuples of Fraction
        Target rows p_0..p_gamma, each of length V (the last gives the bonus token).
    draft : tuple of gamma tuples of Fraction
        Draft rows q_0..q_{gamma-1}.
    tokens : tuple of gamma int
        The drafted tokens, each with q_i(x_i) > 0.
    """

    kind: str
    target: tuple[tuple[Fraction, ...], ...]
    draft: tuple[tuple[Fraction, ...], ...]
    tokens: tuple[int, ...]


#: Blocks come in batches of this many with the same gamma and V (one batched float call each).
BLOCK_BATCH = 8
MAX_BLOCK_GAMMA, MAX_BLOCK_V = 5, 32
#: The pair kinds of a block's positions: every kind of :data:`KINDS` but V = 1, and
#: "tiny-new-token" (q puts a tiny mass on a token p never emits).
BLOCK_KINDS = tuple(k for k in KINDS if k != "V=1") + ("tiny-new-token",)


def blocks(n: int, seed: int) -> Iterator[list[Block]]:
    """Yield ``n`` reproducible blocks in batches of up to :data:`BLOCK_BATCH` that share gamma
    (1..5) and V (2..32); position i of block j is a pair of kind ``BLOCK_KINDS[(j + i) % 9]``,
    the bonus row has random weights. Each drafted token is drawn uniformly from the draft
    row's support in even blocks, and is the token most likely rejected (smallest p(x)/q(x)) in
    odd ones."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < n:
        gamma, v = int(rng.integers(1, MAX_BLOCK_GAMMA + 1)), int(rng.integers(2, MAX_BLOCK_V + 1))
        batch = []
        for j in range(done, min(done + BLOCK_BATCH, n)):
            kinds = [BLOCK_KINDS[(j + i) % len(BLOCK_KINDS)] for i in range(gamma)]
            made = [_make(kind, rng, v) for kind in kinds]
            supports = [[t for t, x in enumerate(m.q) if x > 0] for m in made]
            if j % 2:
                tokens = tuple(min(sup, key=lambda t: (m.p[t] / m.q[t], t)) for m, sup in zip(made, supports))
            else:
                tokens = tuple(int(rng.choice(sup)) for sup in supports)
            bonus = _normalize(_weights(rng, v, 0.3))
            batch.append(Block("/".join(kinds), tuple(m.p for m in made) + (bonus,), tuple(m.q for m in made), tokens))
        done += len(batch)
        yield batch


@dataclass
class BlockCrosscheckReport:
    """Result of :func:`crosscheck_blocks`.

    Attributes
    ----------
    blocks : int
        Number of blocks checked.
    bound : float
        The stated bound (:data:`specproof.laws.numeric.ERROR_BOUND`).
    accepted : Worst
        Worst absolute error of P(exactly i drafts accepted), with the block (as ``pair``) and
        i (as ``token``).
    joint : Worst
        Worst absolute error of P(stop after i accepted drafts and emit token t) =
        accepted_length_law[i] * emitted[i][t], with the block and (i, t).
    before_rounding : Worst
        The same joint error measured against the exact law of the exact rows before they
        were rounded to float64: not bounded (the law of a nearly equal pair with a tiny
        q(x) is ill-conditioned in its inputs), reported to show how much rounding the inputs
        alone can move it.
    recomputed : int
        Positions where the float path judged float64 unable to resolve the replacement token
        and so computed that residual row exactly (:func:`specproof.laws.numeric.recomputed_positions`).

    Notes
    -----
    ``accepted`` and ``joint`` compare with the exact law of the float64 rows the float path
    is given (made exact by the ``dyadic-renormalize`` policy): the float path's own error.
    The joint law is what a sampler produces; the conditional row emitted[i] alone is
    ill-conditioned where the residual mass is small.
    """

    blocks: int
    bound: float
    accepted: Worst = field(default_factory=Worst)
    joint: Worst = field(default_factory=Worst)
    before_rounding: Worst = field(default_factory=Worst)
    recomputed: int = 0

    @property
    def passed(self) -> bool:
        """True iff both worst errors against the float rows' exact law are at most :attr:`bound`."""
        return max(self.accepted.error, self.joint.error) <= self.bound

    def summary(self) -> str:
        """Human-readable lines: each worst error with its block, then the verdict."""
        lines = [
            f"crosscheck: {self.blocks} drafted blocks, batched float path vs exact law of the same "
            f"float rows, bound {self.bound:g}"
        ]

        def where(worst: Worst) -> str:
            if worst.pair is None:
                return ""
            b = worst.pair
            assert isinstance(b, Block)  # a crosscheck of blocks records blocks
            return (
                f" (gamma={len(b.tokens)}, V={len(b.target[0])}, at {worst.token}; "
                f"positions {b.kind}; tokens {list(b.tokens)})"
            )

        for name, worst in (("P(accepted = i) error", self.accepted), ("P(stop at i, emit t) error", self.joint)):
            lines.append(f"  worst {name}: {float(worst.error):.3e}{where(worst)}")
        lines.append(
            f"  residual rows the float path recomputed exactly (float64 could not resolve them): {self.recomputed}"
        )
        lines.append(
            "  verdict: "
            + ("within bound" if self.passed else "BOUND EXCEEDED")
            + " (the two worst errors above, against the exact law of the same float64 rows)"
        )
        lines.append(
            f"  not part of the verdict, not bounded: rounding the exact input rows to float64 moves the exact "
            f"P(stop at i, emit t) itself by up to {float(self.before_rounding.error):.3e}"
            f"{where(self.before_rounding)}; the law of a nearly equal pair at a tiny q(x) is ill-conditioned "
            "in its inputs, so no float64 code can do better there"
        )
        return "\n".join(lines)


def check_blocks(batch: list[Block], report: BlockCrosscheckReport) -> None:
    """Compare one batched float call with the exact law of each block; update ``report``."""
    from specproof.laws.chain import given_block_law
    from specproof.laws.rational import from_floats

    t = np.array([[[float(x) for x in row] for row in b.target] for b in batch])
    d = np.array([[[float(x) for x in row] for row in b.draft] for b in batch])
    accepted, emitted = numeric.given_block_law(t, d, np.array([b.tokens for b in batch]))
    report.recomputed += int(numeric.recomputed_positions(t, d, accepted).sum())
    for k, (b, acc, emi) in enumerate(zip(batch, accepted.tolist(), emitted.tolist())):
        given = given_block_law([from_floats(r) for r in t[k]], [from_floats(r) for r in d[k]], b.tokens)
        before = given_block_law(b.target, b.draft, b.tokens)
        for i, (a, want) in enumerate(zip(acc, given.accepted_length_law)):
            report.accepted.update(abs(Fraction(a) - want), b, i)
            for tok, e in enumerate(emi[i]):
                joint = Fraction(a) * Fraction(e)
                report.joint.update(abs(joint - want * given.emitted[i][tok]), b, (i, tok))
                report.before_rounding.update(
                    abs(joint - before.accepted_length_law[i] * before.emitted[i][tok]), b, (i, tok)
                )


def crosscheck_blocks(
    n: int,
    seed: int = 0,
    *,
    bound: float = numeric.ERROR_BOUND,
    progress: Callable[[int], None] | None = None,
) -> BlockCrosscheckReport:
    """Run the batched given-block float path against the exact law on ``n`` random blocks.

    :func:`specproof.laws.numeric.given_block_law` gets the float64 roundings of each batch's rows
    ([B, gamma + 1, V], [B, gamma, V], [B, gamma]); :func:`specproof.laws.chain.given_block_law`
    the same float rows made exact (the bounded comparison), and the exact rows before
    rounding (reported, not bounded); every error is measured exactly.

    Parameters
    ----------
    n : int
        Number of blocks (>= 1).
    seed : int, optional
        Seed; the same seed gives the same blocks and the same report.
    bound : float, optional
        The error bound, default :data:`specproof.laws.numeric.ERROR_BOUND`.
    progress : callable, optional
        Called with the number of blocks done so far, after each batch.

    Returns
    -------
    BlockCrosscheckReport

    Raises
    ------
    InvalidDistribution
        As :func:`crosscheck`.

    Examples
    --------
    >>> report = crosscheck_blocks(16, seed=0)
    >>> report.passed, report.joint.error < 1e-15
    (True, True)
    """
    _arguments(n, seed, bound)
    report = BlockCrosscheckReport(blocks=int(n), bound=float(bound))
    done = 0
    for batch in blocks(int(n), int(seed)):
        check_blocks(batch, report)
        done += len(batch)
        if progress is not None:
            progress(done)
    return report


# ---------------------------------------------------------------- multi-draft and token-tree mirrors


@dataclass
class VariantsCrosscheckReport:
    """Result of :func:`crosscheck_variants`: worst absolute errors of the float mirrors
    (:func:`specproof.laws.numeric.multidraft_law`, :func:`specproof.laws.numeric.sibling_law`) against the
    exact laws of :mod:`specproof.laws.variants`.

    Attributes
    ----------
    pairs : int
    bound : float
    dist, acceptance, accepted_at : Worst
        Over both mirrors; ``accepted_at`` is P(draft or child i is the one accepted).
    """

    pairs: int
    bound: float
    dist: Worst = field(default_factory=Worst)
    acceptance: Worst = field(default_factory=Worst)
    accepted_at: Worst = field(default_factory=Worst)

    @property
    def passed(self) -> bool:
        """True iff every worst error is at most :attr:`bound`."""
        return all(w.error <= self.bound for w in (self.dist, self.acceptance, self.accepted_at))

    def summary(self) -> str:
        lines = [
            f"crosscheck --variants: {self.pairs} pairs, k = 1..4 drafts (with replacement) and k = 1..4 "
            f"one-hot children, float mirrors vs exact laws, bound {self.bound:g}"
        ]
        for name in ("dist", "acceptance", "accepted_at"):
            worst = getattr(self, name)
            where = "" if worst.pair is None else f" ({worst.pair.kind} pair, V={len(worst.pair.p)})"
            lines.append(f"  worst |{name} error| = {float(worst.error):.3e}{where}")
        lines.append("  verdict: " + ("within bound" if self.passed else "BOUND EXCEEDED"))
        return "\n".join(lines)


def _floats(vec: tuple[Fraction, ...]) -> np.ndarray:
    return np.array([float(x) for x in vec])


def check_variants(pair: Pair, k: int, report: VariantsCrosscheckReport) -> None:
    """Compare both mirrors with the exact laws on one pair, with ``k`` drafts / children."""
    from specproof.laws import variants

    p, q = _floats(pair.p), _floats(pair.q)

    def update(dist, acceptance, accepted_at, exact_dist, exact_acceptance, exact_at):
        report.dist.update(max(abs(Fraction(float(d)) - w) for d, w in zip(dist.tolist(), exact_dist)), pair)
        report.acceptance.update(abs(Fraction(float(acceptance)) - exact_acceptance), pair)
        report.accepted_at.update(
            max(abs(Fraction(float(a)) - w) for a, w in zip(accepted_at.tolist(), exact_at)), pair
        )

    law = variants.multidraft_law(pair.p, pair.q, k)
    update(*numeric.multidraft_law(p, q, k), law.law, law.acceptance, law.accepted_at)
    children = [int(t) for t in np.argsort(-q, kind="stable")[:k]]  # the draft's top-k, as engines build trees
    tree = variants.sibling_tree(pair.p, children)
    accepted = tree.accepted_law()  # P(token x is a child and accepted); a repeated child's later copy gets 0
    seen: set[int] = set()
    exact_at = []
    for t in children:
        exact_at.append(Fraction(0) if t in seen else accepted[t])
        seen.add(t)
    update(*numeric.sibling_law(p, np.array(children)), tree.law()[0], tree.accept_probability(), exact_at)


def crosscheck_variants(
    n: int, seed: int = 0, *, bound: float = numeric.ERROR_BOUND, progress: Callable[[int], None] | None = None
) -> VariantsCrosscheckReport:
    """Run the multi-draft and token-tree float mirrors against the exact laws on ``n`` random
    rational pairs (the kinds of :func:`pairs`), k = 1..4 in turn.

    Parameters
    ----------
    n : int
        Number of pairs (>= 1).
    seed : int, optional
    bound : float, optional
        Default :data:`specproof.laws.numeric.ERROR_BOUND`.
    progress : callable, optional
        Called with the number of pairs done.

    Returns
    -------
    VariantsCrosscheckReport

    Raises
    ------
    InvalidDistribution
        Bad ``n``, ``seed`` or ``bound``.

    Examples
    --------
    >>> crosscheck_variants(12, seed=0).passed
    True
    """
    _arguments(n, seed, bound)
    report = VariantsCrosscheckReport(pairs=int(n), bound=float(bound))
    for i, pair in enumerate(pairs(int(n), int(seed)), 1):
        check_variants(pair, 1 + (i - 1) % 4, report)
        if progress is not None:
            progress(i)
    return report
