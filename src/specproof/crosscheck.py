"""Cross-check the float path against the exact law on random rational pairs.

Each pair (p, q) is drawn as exact rationals, one of several kinds (random weights with random
denominators, zeros in p, zeros in q, p == q, one-hot target or draft, disjoint supports,
pairs that differ by a tiny mass, V = 1). The exact law comes from :mod:`specproof.exact`;
the float law from :mod:`specproof.numeric` on the float64 roundings of p and q. The error
of each float output is measured exactly (the float's exact value minus the exact law, as a
Fraction), and the worst is reported with the pair that produced it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Iterator

import numpy as np

from . import exact, numeric
from .errors import CrosscheckFailed, InvalidDistribution

__all__ = ["KINDS", "Pair", "Worst", "CrosscheckReport", "random_pair", "pairs", "crosscheck",
           "crosscheck_real", "check_pair", "require"]


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


def _make(kind: str, rng: np.random.Generator) -> Pair:
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
    elif kind == "V=1":
        p = q = (Fraction(1),)
    else:
        raise InvalidDistribution(f"unknown pair kind {kind!r}; expected one of {KINDS}")
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


_PRINT_V = 64  # pairs up to this size are printed in full in the summary


@dataclass
class Worst:
    """The worst absolute error seen for one output, and the pair that produced it."""

    error: Fraction = Fraction(0)
    pair: Pair | None = None
    token: int | None = None

    def update(self, error: Fraction, pair: Pair, token: int | None = None) -> None:
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
        The stated bound (:data:`specproof.numeric.ERROR_BOUND`).
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
        """Human-readable lines: each worst error with its pair (p and q in full), the verdict."""
        lines = [f"crosscheck: {self.pairs} pairs, float path vs exact law, bound {self.bound:g}"]
        for name, worst in (("dist", self.dist), ("alpha", self.alpha)):
            where = ""
            if worst.pair is not None:
                tok = "" if worst.token is None else f" token {worst.token},"
                where = f" ({worst.pair.kind} pair,{tok} V={len(worst.pair.p)})"
            lines.append(f"  worst |{name} error| = {float(worst.error):.3e}{where}")
            if worst.pair is not None and len(worst.pair.p) <= _PRINT_V:
                for label, vec in (("p", worst.pair.p), ("q", worst.pair.q)):
                    lines.append(f"    {label} = [{', '.join(map(str, vec))}]")
        lines.append("  verdict: " + ("within bound" if self.passed else "BOUND EXCEEDED"))
        return "\n".join(lines)


def check_pair(pair: Pair, report: CrosscheckReport) -> None:
    """Compare the float path with the exact law on one pair; update ``report``."""
    law = exact.emitted_law(pair.p, pair.q)
    want = law.dist()
    dist, alpha = numeric.emitted_distribution(
        np.array([float(x) for x in pair.p]), np.array([float(x) for x in pair.q])
    )
    errors = [abs(Fraction(float(d)) - w) for d, w in zip(dist.tolist(), want)]
    token = max(range(len(errors)), key=errors.__getitem__)
    report.dist.update(errors[token], pair, token)
    report.alpha.update(abs(Fraction(float(alpha)) - law.alpha), pair)


def crosscheck(
    n: int,
    seed: int = 0,
    *,
    bound: float = numeric.ERROR_BOUND,
    progress: Callable[[int], None] | None = None,
) -> CrosscheckReport:
    """Run the float path against the exact law on ``n`` random rational pairs.

    Parameters
    ----------
    n : int
        Number of pairs (>= 1).
    seed : int, optional
        Seed; the same seed gives the same pairs and the same report.
    bound : float, optional
        The error bound to judge against, default :data:`specproof.numeric.ERROR_BOUND`.
    progress : callable, optional
        Called with the number of pairs done so far, after each pair.

    Returns
    -------
    CrosscheckReport
        Worst errors of dist and alpha (exact Fractions), the pairs that produced them,
        and ``passed``.

    Raises
    ------
    InvalidDistribution
        If ``n`` is not an integer >= 1, ``seed`` not an integer >= 0, or ``bound`` not >= 0.

    Examples
    --------
    >>> report = crosscheck(18, seed=0)
    >>> report.passed, report.dist.error < 1e-15
    (True, True)
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise InvalidDistribution(f"the number of pairs must be an integer >= 1, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidDistribution(f"the seed must be an integer >= 0, got {seed!r}")
    if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or not bound >= 0:
        raise InvalidDistribution(f"the bound must be a real number >= 0, got {bound!r}")
    report = CrosscheckReport(pairs=int(n), bound=float(bound))
    for i, pair in enumerate(pairs(int(n), int(seed)), 1):
        check_pair(pair, report)
        if progress is not None:
            progress(i)
    return report


def crosscheck_real(*, bound: float = numeric.ERROR_BOUND,
                    progress: Callable[[int], None] | None = None) -> CrosscheckReport:
    """Run the float path against the exact law on every real pair shipped with specproof.

    Each real pair's exact p and q (see :mod:`specproof.fixtures`) are rounded to float64,
    given to :func:`specproof.numeric.emitted_distribution`, and its output compared exactly
    with the exact law of the exact pair.

    Returns
    -------
    CrosscheckReport
        As :func:`crosscheck`; the worst pairs' ``kind`` is the real pair's name.
    """
    from .fixtures import real_pairs

    real = [Pair(rp.name, rp.p.fractions(), rp.q.fractions()) for rp in real_pairs()]
    report = CrosscheckReport(pairs=len(real), bound=float(bound))
    for i, pair in enumerate(real, 1):
        check_pair(pair, report)
        if progress is not None:
            progress(i)
    return report


def require(report: CrosscheckReport) -> None:
    """Raise :class:`~specproof.errors.CrosscheckFailed` unless ``report.passed``."""
    if not report.passed:
        raise CrosscheckFailed(report.summary())
