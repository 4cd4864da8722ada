"""The exact law of one speculative-decoding verification step, over rationals.

The draft proposes ``x ~ q``; the verifier accepts it with probability ``min(1, p(x)/q(x))``
and otherwise emits a fresh token from the residual ``(p - q)+ / sum((p - q)+)``. This module
computes the *law* of the emitted token from those steps (not a sample of it) and checks,
exactly, that it equals the target ``p`` and that ``alpha = 1 - TV(p, q)`` [1]_ [2]_.

Everything is computed on Python integers over one common denominator ``D``: ``p = P/D``,
``q = Q/D``. No float is ever touched and nothing is divided until a
:class:`~fractions.Fraction` is returned. This is also what keeps V = 128,256 fast.

References
----------
.. [1] Y. Leviathan, M. Kalman, Y. Matias, "Fast Inference from Transformers via
   Speculative Decoding", ICML 2023, Theorem 3.5 and Appendix A.1.
.. [2] C. Chen et al., "Accelerating Large Language Model Decoding with Speculative
   Sampling", 2023, Theorem 1.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.errors import InvalidDistribution, ResidualUndefined
from specproof.laws.rational import as_distribution

__all__ = [
    "EmittedLaw",
    "emitted_law",
    "emitted_distribution",
    "acceptance_probability",
    "tv_distance",
    "residual",
    "reference_distribution",
]


def _renamed(old: str, new: str) -> property:
    """A read-only alias ``old`` of the attribute ``new``, warning that ``old`` is deprecated."""

    def read(self: Any) -> Any:
        warnings.warn(f"EmittedLaw.{old} is deprecated; use EmittedLaw.{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    return property(read, doc=f"Deprecated name of :attr:`{new}`.")


@dataclass(frozen=True, eq=False)
class EmittedLaw:
    """The verifier's operational law for one pair (p, q), in integers over ``denominator``.

    Vectors are one-dimensional NumPy arrays of dtype ``object`` holding Python integers
    (arbitrary size, exact), length V. All masses are numerators over the common denominator
    ``D`` (``p = P/D``), except :attr:`emitted`, which is over :attr:`emitted_denominator`.

    Attributes
    ----------
    denominator : int
        D, the least common denominator of p and q.
    target_numerators, draft_numerators : numpy.ndarray of object (int), shape [V]
        P and Q: the target ``p = P/D`` and the draft ``q = Q/D``.
    accept_numerators : numpy.ndarray of object (int), shape [V]
        Per token, the accept mass ``q(x) * min(1, p(x)/q(x))`` times D (0 where q(x) = 0).
    residual_numerators : numpy.ndarray of object (int), shape [V]
        Per token, ``(p(x) - q(x))+`` times D: the unnormalized residual.
    alpha_numerator : int
        ``A = sum(accept_numerators)``; alpha = A / D.
    reject_numerator : int
        ``D - A``; the probability of rejection is ``reject_numerator / D``.
    normalizer : int
        ``Z = sum(residual_numerators)``; the residual's mass is ``Z / D``. Zero iff p == q.

    Notes
    -----
    Build it with :func:`emitted_law`. :meth:`is_lossless` checks dist == p and
    alpha == 1 - TV as integer identities, without building any Fraction. The older names
    ``target``, ``draft``, ``accept``, ``accepted`` and ``rejected`` still read
    these attributes, with a :class:`DeprecationWarning` (``accept`` and ``accepted`` were two
    letters apart for an array and an int).
    """

    denominator: int
    target_numerators: np.ndarray
    draft_numerators: np.ndarray
    accept_numerators: np.ndarray
    residual_numerators: np.ndarray
    alpha_numerator: int
    reject_numerator: int
    normalizer: int

    target = _renamed("target", "target_numerators")
    draft = _renamed("draft", "draft_numerators")
    accept = _renamed("accept", "accept_numerators")
    accepted = _renamed("accepted", "alpha_numerator")
    rejected = _renamed("rejected", "reject_numerator")

    def __len__(self) -> int:
        return len(self.target_numerators)

    @property
    def emitted(self) -> np.ndarray:
        """Emitted mass per token, over :attr:`emitted_denominator`: object array [V].

        The sampler's last step: accept mass plus rejection probability times the normalized
        residual, ``A_x/D + (R/D) * (residual_x/Z)`` (``A_x``: accept_numerators, R:
        reject_numerator, ``residual_x``: residual_numerators), put over ``D * Z``:
        ``Z * A_x + R * residual_x``. When Z == 0 (p == q) the rejection probability is 0 as well
        and the residual is never sampled: the emitted mass is the accept mass over D.
        """
        z = self.normalizer
        if z == 0:
            return self.accept_numerators
        emitted: np.ndarray = z * self.accept_numerators + self.reject_numerator * self.residual_numerators
        return emitted

    @property
    def emitted_denominator(self) -> int:
        """The denominator of :attr:`emitted`: ``D * Z``, or ``D`` when ``Z == 0``."""
        return self.denominator * (self.normalizer or 1)

    @property
    def alpha(self) -> Fraction:
        """Acceptance probability ``sum_x q(x) min(1, p(x)/q(x))`` as a Fraction."""
        return Fraction(self.alpha_numerator, self.denominator)

    @property
    def tv(self) -> Fraction:
        """Total variation ``(1/2) sum_x |p(x) - q(x)|`` as a Fraction."""
        return Fraction(int(np.abs(self.target_numerators - self.draft_numerators).sum()), 2 * self.denominator)

    def dist(self) -> tuple[Fraction, ...]:
        """The emitted law as a tuple of V Fractions."""
        den = self.emitted_denominator
        return tuple(Fraction(e, den) for e in self.emitted.tolist())

    def is_lossless(self) -> bool:
        """Check exactly that dist == p and alpha == 1 - TV.

        Returns
        -------
        bool
            True iff alpha == 1 - TV, decided as ``sum|P - Q| == 2 (D - A)``, and every
            emitted mass equals p(x), decided as ``emitted[x] == Z * P[x]`` (``== P[x]``
            when Z == 0).

        Notes
        -----
        When the rejection mass equals the residual's mass (``reject_numerator == Z``, which
        is ``D - A == Z``, the normalizer lemma, checked first), ``emitted[x] = Z * (A_x +
        residual_x)``, so the per-token identity reduces to ``A_x + residual_x == P[x]``, with no
        multiplication. Otherwise the check compares the full products ``emitted[x] == Z * P[x]``.
        """
        d, a, z = self.denominator, self.alpha_numerator, self.normalizer
        if int(np.abs(self.target_numerators - self.draft_numerators).sum()) != 2 * (d - a):
            return False
        if z == 0:
            return bool((self.accept_numerators == self.target_numerators).all())
        if self.reject_numerator == z:
            return bool((self.accept_numerators + self.residual_numerators == self.target_numerators).all())
        return bool((self.emitted == z * self.target_numerators).all())


def _pair(p: Any, q: Any) -> tuple[int, np.ndarray, np.ndarray]:
    pv = as_distribution(p, "p")
    qv = as_distribution(q, "q")
    if len(pv) != len(qv):
        raise InvalidDistribution(f"p has V={len(pv)} entries but q has V={len(qv)}")
    den = math.lcm(pv.denominator, qv.denominator)
    big_p = np.array(pv.numerators, dtype=object) * (den // pv.denominator)
    big_q = np.array(qv.numerators, dtype=object) * (den // qv.denominator)
    return den, big_p, big_q


def emitted_law(p: Any, q: Any) -> EmittedLaw:
    """Compute the verifier's exact operational law for target p and draft q.

    Parameters
    ----------
    p : RationalVector or sequence of exact rationals, shape [V]
        The target distribution (int, Fraction, sympy.Rational or ``"n/d"`` entries, or a
        :class:`~specproof.laws.rational.RationalVector` such as
        :func:`~specproof.laws.rational.from_floats` returns). Must sum exactly to 1.
    q : same as p
        The draft distribution the drafted token was sampled from.

    Returns
    -------
    EmittedLaw
        Accept masses, residual masses, alpha, the rejection mass and the emitted masses,
        all as Python integers over one common denominator.

    Raises
    ------
    InvalidDistribution
        On an empty vector, different lengths, a negative or non-rational entry, or a
        vector that does not sum to exactly 1.
    FloatNotExact
        If an entry is a float; use :func:`specproof.laws.rational.from_floats`.

    Notes
    -----
    Steps, per token x: accept mass ``q(x) min(1, p(x)/q(x))`` (0 when q(x) = 0: never
    drafted); rejection probability ``1 - alpha``; residual ``(p(x) - q(x))+`` normalized by
    its mass Z; emitted mass ``accept(x) + (1 - alpha) * residual(x) / Z``. Over integers the
    accept mass needs no division: ``p/q >= 1`` iff ``P >= Q``, giving ``Q * 1``, else
    ``Q * (P/Q) = P``. When p == q, Z = 0 and the rejection probability is 0: the verifier
    never reaches the residual, and no 0/0 is formed.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> law = emitted_law(["1/2", "1/2"], ["1/4", "3/4"])
    >>> law.alpha, law.dist(), law.is_lossless()
    (Fraction(3, 4), (Fraction(1, 2), Fraction(1, 2)), True)
    """
    den, big_p, big_q = _pair(p, q)
    # q * min(1, p/q): q * 1 where p/q >= 1 (P >= Q, which includes q == 0), else q * p/q = p.
    accept = np.where(big_p >= big_q, big_q, big_p)
    # (p - q)+, computed on its own (not as p - accept), so is_lossless checks a real identity.
    resid = np.maximum(big_p - big_q, 0)
    alpha_numerator = int(accept.sum())
    return EmittedLaw(
        denominator=den,
        target_numerators=big_p,
        draft_numerators=big_q,
        accept_numerators=accept,
        residual_numerators=resid,
        alpha_numerator=alpha_numerator,
        reject_numerator=den - alpha_numerator,
        normalizer=int(resid.sum()),
    )


def emitted_distribution(p: Any, q: Any) -> tuple[tuple[Fraction, ...], Fraction]:
    """Return the exact law of the emitted token and the acceptance probability.

    Parameters
    ----------
    p : sequence of exact rationals or RationalVector, shape [V]
        Target distribution; entries int, Fraction, sympy.Rational or ``"n/d"``; sums to 1.
    q : same as p
        Draft distribution; may be 0 where p is not, and the reverse.

    Returns
    -------
    dist : tuple of Fraction, length V
        The probability that the verifier emits each token (accepted draft or residual draw).
        For a correct verifier this equals p, entry by entry.
    alpha : Fraction
        The probability that the drafted token is accepted: ``sum_x min(p(x), q(x))``.

    Raises
    ------
    InvalidDistribution
        Empty or mismatched vectors, negative entries, sums other than exactly 1.
    FloatNotExact
        Float entries (convert with :func:`specproof.laws.rational.from_floats`).

    Notes
    -----
    Computed by the sampler's steps (see :func:`emitted_law`), never by returning p.
    Special cases: q(x) = 0 (never drafted, emitted only through the residual); p(x) = 0
    (drafted but always rejected, emitted mass exactly 0); p == q (residual empty,
    alpha = 1, finite answer); V = 1 (alpha = 1).

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> dist, alpha = emitted_distribution(["1/3", "2/3", 0], ["1/2", 0, "1/2"])
    >>> dist, alpha
    ((Fraction(1, 3), Fraction(2, 3), Fraction(0, 1)), Fraction(1, 3))
    """
    law = emitted_law(p, q)
    return law.dist(), law.alpha


def acceptance_probability(p: Any, q: Any) -> Fraction:
    """Return alpha, the probability that the drafted token is accepted.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Target and draft distributions, validated as in :func:`emitted_distribution`.

    Returns
    -------
    Fraction
        ``sum_x q(x) min(1, p(x)/q(x)) = sum_x min(p(x), q(x))``; 1 when p == q.

    Raises
    ------
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 (beta = 1 - D_LK(p, q), D_LK the total variation).

    Examples
    --------
    >>> acceptance_probability(["1/2", "1/2"], [1, 0])
    Fraction(1, 2)
    """
    return emitted_law(p, q).alpha


def tv_distance(p: Any, q: Any) -> Fraction:
    """Return the total variation distance ``(1/2) sum_x |p(x) - q(x)|``.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Two distributions, validated as in :func:`emitted_distribution`.

    Returns
    -------
    Fraction
        In [0, 1]; equals ``sum_x (p(x) - q(x))+`` and ``1 - alpha``.

    Raises
    ------
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    Examples
    --------
    >>> tv_distance(["1/2", "1/2"], ["1/4", "3/4"])
    Fraction(1, 4)
    """
    return emitted_law(p, q).tv


def residual(p: Any, q: Any) -> tuple[Fraction, ...]:
    """Return the normalized residual ``(p - q)+ / sum((p - q)+)``.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Target and draft, validated as in :func:`emitted_distribution`.

    Returns
    -------
    tuple of Fraction, length V
        The distribution the verifier resamples from after a rejection; sums to 1.

    Raises
    ------
    ResidualUndefined
        If p == q: the residual has mass 0 and its normalization is 0/0. The verifier never
        samples it then (alpha = 1); :func:`emitted_distribution` still returns p.
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    Examples
    --------
    >>> residual(["1/2", "1/2", 0], ["1/4", "1/4", "1/2"])
    (Fraction(1, 2), Fraction(1, 2), Fraction(0, 1))
    >>> residual(["1/2", "1/2"], ["1/2", "1/2"])
    Traceback (most recent call last):
    ...
    specproof.errors.ResidualUndefined: the residual is undefined: p == q, so (p - q)+ has mass 0 ...
    """
    law = emitted_law(p, q)
    if law.normalizer == 0:
        raise ResidualUndefined(
            "the residual is undefined: p == q, so (p - q)+ has mass 0 and its normalization "
            "is 0/0; the verifier accepts with probability 1 and never samples it"
        )
    return tuple(Fraction(r, law.normalizer) for r in law.residual_numerators.tolist())


def reference_distribution(p: Any, q: Any) -> tuple[tuple[Fraction, ...], Fraction]:
    """The straightforward per-token Fraction computation of the emitted law (slow).

    A second, deliberately literal implementation of the sampler's steps, one Fraction at a
    time: ``accept = q * min(1, p/q)`` (0 where q = 0), ``alpha = sum(accept)``,
    ``residual = max(p - q, 0) / Z``, ``emitted = accept + (1 - alpha) * residual``
    (accept alone when Z = 0). It shares no code with :func:`emitted_law` beyond input
    validation, so the tests use it to cross-check the integer kernel, and the benchmark
    uses it as the baseline.

    Parameters
    ----------
    p, q : sequences of exact rationals or RationalVector, shape [V]
        Validated as in :func:`emitted_distribution`.

    Returns
    -------
    dist : tuple of Fraction, length V
    alpha : Fraction

    Raises
    ------
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    Examples
    --------
    >>> reference_distribution(["1/2", "1/2"], ["1/4", "3/4"]) == emitted_distribution(["1/2", "1/2"], ["1/4", "3/4"])
    True
    """
    pf = as_distribution(p, "p").fractions()
    qf = as_distribution(q, "q").fractions()
    if len(pf) != len(qf):
        raise InvalidDistribution(f"p has V={len(pf)} entries but q has V={len(qf)}")
    accept = [b * min(Fraction(1), a / b) if b else Fraction(0) for a, b in zip(pf, qf)]
    alpha = sum(accept, Fraction(0))
    resid = [max(a - b, Fraction(0)) for a, b in zip(pf, qf)]
    z = sum(resid, Fraction(0))
    if z == 0:
        return tuple(accept), alpha
    return tuple(m + (1 - alpha) * r / z for m, r in zip(accept, resid)), alpha
