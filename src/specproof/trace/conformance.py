"""Statistical conformance for samplers that cannot be traced (a CUDA kernel, a subprocess, a server).

:func:`conformance_test` draws N outputs from a sampler and tests them against an exact law with a
test whose false-alarm rate and power are *guaranteed by an inequality*, not estimated:

Test (an L1 / TV test with the Bretagnolle-Huber-Carol / Weissman et al. bound). Let p be the
exact law on k outputs and p_hat the empirical law of N i.i.d. draws from the sampler's law s.
For every s and every t > 0,

    P( TV(p_hat, s) >= t ) <= (2^k - 2) exp(-2 N t^2)        (Weissman et al. 2003, Thm 2.1)

(TV = L1 / 2). Reject "s == p" when ``TV(p_hat, p) >= t``, or when an output outside p's support
is seen (impossible under the null). Then

- false alarm: P(reject | s = p) <= (2^k - 2) exp(-2 N t^2) <= alpha, with
  ``t = sqrt(ln((2^k - 2) / alpha) / (2 N))``;
- power: if TV(s, p) >= eps then TV(p_hat, p) >= eps - TV(p_hat, s), so
  P(miss) <= (2^k - 2) exp(-2 N (eps - t)^2) <= beta = 1 - power as soon as
  ``N >= (sqrt(ln((2^k - 2)/alpha)) + sqrt(ln((2^k - 2)/beta)))^2 / (2 eps^2)``, the N chosen.
- p-value: ``min(1, (2^k - 2) exp(-2 N T^2))`` with T the observed TV (a valid, conservative
  p-value); upper confidence bound on TV(s, p) at level 1 - alpha: ``T + t``.

No cell pooling, no asymptotic approximation, no scipy: the bound holds for every N and k, at the
price of a larger N than a chi-square test would ask for (the chi-square's power is asymptotic).
The number of categories k counts only outputs with positive mass under p (outputs outside are
rejected on sight), so a law on few outputs needs few draws.

References
----------
T. Weissman, E. Ordentlich, G. Seroussi, S. Verdu, M. J. Weinberger, "Inequalities for the L1
deviation of the empirical distribution", HP Labs HPL-2003-97, 2003, Theorem 2.1; J. Bretagnolle
and C. Huber, 1979 (the same bound, (2^k) exp(-N eps^2 / 2) on L1).

Examples
--------
>>> import numpy as np
>>> from fractions import Fraction
>>> rng = np.random.default_rng(0)
>>> law = {0: Fraction(1, 2), 1: Fraction(1, 2)}
>>> result = conformance_test(lambda n: rng.integers(0, 2, n), law, eps=0.1)
>>> result.n, result.conforms
(1642, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import SpecProofError

__all__ = ["ConformanceResult", "sample_size", "conformance_test", "six_sigma_counts"]


def _log_events(k: int) -> float:
    """ln(2^k - 2), the number of events in the union bound (k >= 2)."""
    return math.log(2.0**k - 2) if k < 1000 else k * math.log(2.0)


def _check(eps: float, alpha: float, power: float) -> None:
    for name, v, lo, hi in (("eps", eps, 0, 1), ("alpha", alpha, 0, 1), ("power", power, 0, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v < hi:
            raise SpecProofError(f"{name} is {v!r}, not a number strictly between {lo} and {hi}")


def sample_size(k: int, eps: float, alpha: float = 1e-6, power: float = 0.95) -> tuple[int, float]:
    """The N that guarantees false alarms <= alpha and detection >= power at TV >= eps, and the
    threshold t on the observed TV.

    Parameters
    ----------
    k : int
        Outputs with positive mass under the exact law. For k = 1 the test is the support check
        alone (reject on any other output), with N = ceil(ln(1/(1 - power)) / eps).
    eps : float
        The smallest TV that must be detected, in (0, 1).
    alpha, power : float
        False-alarm rate and power, in (0, 1).

    Returns
    -------
    n : int
    threshold : float
        Reject when the observed TV >= threshold.

    Examples
    --------
    >>> sample_size(10, 0.05)
    (11874, 0.0295...)
    """
    _check(eps, alpha, power)
    if k < 2:  # one output: reject on any other output; a sampler at TV >= eps shows one with
        # probability >= 1 - (1 - eps)^N >= 1 - exp(-eps N), so N = ln(1/(1 - power)) / eps suffices
        return max(1, math.ceil(math.log(1 / (1 - power)) / eps)), 1.0
    la, lb = _log_events(k) + math.log(1 / alpha), _log_events(k) + math.log(1 / (1 - power))
    n = math.ceil((math.sqrt(max(la, 0.0)) + math.sqrt(max(lb, 0.0))) ** 2 / (2 * eps * eps))
    return n, math.sqrt(max(la, 0.0) / (2 * n))


@dataclass(frozen=True)
class ConformanceResult:
    """The outcome of :func:`conformance_test`.

    Attributes
    ----------
    conforms : bool
        False iff the test rejects "the sampler has the exact law".
    n : int
        Draws taken.
    observed_tv : float
        TV between the empirical law and the exact law (outputs outside the support included).
    threshold : float
        Rejection threshold on ``observed_tv``.
    p_value : float
        ``min(1, (2^k - 2) exp(-2 n observed_tv^2))``; 0 when an output outside the support was seen.
    tv_upper_bound : float
        Upper confidence bound on the sampler's TV from the law, at level 1 - alpha.
    eps, alpha, power : float
        As requested.
    outside_support : dict
        Outputs seen that the exact law gives mass 0, with their counts.
    test : str
        The test's name and source.
    """

    conforms: bool
    n: int
    observed_tv: float
    threshold: float
    p_value: float
    tv_upper_bound: float
    eps: float
    alpha: float
    power: float
    outside_support: dict
    test: str = "L1/TV test with the Weissman et al. 2003 (Thm 2.1) bound; no pooling"


def conformance_test(
    sample: Callable[[int], Any],
    law: Mapping[Any, Any],
    *,
    eps: float = 0.01,
    alpha: float = 1e-6,
    power: float = 0.95,
    n: int | None = None,
) -> ConformanceResult:
    """Test a sampler's outputs against an exact law, with guaranteed false-alarm rate and power.

    Parameters
    ----------
    sample : callable
        ``sample(n)`` returns n outputs (an iterable of hashable values, e.g. a NumPy array of
        token ids) drawn i.i.d. from the sampler.
    law : mapping of output -> rational
        The exact law (Fraction, int or ``"n/d"``; summing to 1).
    eps : float
        Detect any sampler whose TV from ``law`` is at least eps, with probability >= power.
    alpha : float
        False-alarm rate (default 1e-6: a CI failure means a fault).
    power : float
        Default 0.95.
    n : int, optional
        Draws to take instead of :func:`sample_size`'s N (then the power guarantee is the one
        that N gives, not ``power``).

    Returns
    -------
    ConformanceResult

    Raises
    ------
    SpecProofError
        A law that does not sum to 1, bad parameters, a sampler that returns the wrong count.
    """
    from specproof.laws.rational import to_fraction

    exact = {k: to_fraction(v, what=f"mass of {k!r}") if not isinstance(v, Fraction) else v for k, v in law.items()}
    if sum(exact.values(), Fraction(0)) != 1 or any(v < 0 for v in exact.values()):
        raise SpecProofError("the exact law must be nonnegative and sum to exactly 1")
    support = {k: v for k, v in exact.items() if v}
    k = len(support)
    need, threshold = sample_size(k, eps, alpha, power)
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise SpecProofError(f"n is {n!r}, not an integer >= 1")
        need = n
        threshold = math.sqrt(max(_log_events(k) + math.log(1 / alpha), 0.0) / (2 * n)) if k >= 2 else 1.0
    draws = sample(need)
    draws = draws.tolist() if hasattr(draws, "tolist") else list(draws)
    if len(draws) != need:
        raise SpecProofError(f"sample({need}) returned {len(draws)} outputs")
    counts: dict[Any, int] = {}
    for x in draws:
        counts[x] = counts.get(x, 0) + 1
    outside = {x: c for x, c in counts.items() if x not in support}
    tv = 0.5 * (sum(abs(counts.get(x, 0) / need - float(m)) for x, m in support.items()) + sum(outside.values()) / need)
    if outside:
        p_value = 0.0
    elif k < 2:
        p_value = 1.0
    else:
        p_value = min(1.0, math.exp(_log_events(k) - 2 * need * tv * tv))
    conforms = not outside and (k < 2 or tv < threshold)
    return ConformanceResult(
        conforms, need, tv, threshold, p_value, min(1.0, tv + threshold), eps, alpha, power, outside
    )


def six_sigma_counts(sample: Callable[[int], Any], law: Mapping[Any, Any], n: int) -> bool:
    """The count test of the strongest public engine test, for comparison: pass iff every output's
    count is within ``6 sqrt(n p (1 - p)) + 5`` of ``n p`` (outputs outside the support: ``p = 0``).

    Returns
    -------
    bool
        True if the sampler passes (no fault found).
    """
    draws = sample(n)
    draws = draws.tolist() if hasattr(draws, "tolist") else list(draws)
    counts: dict[Any, int] = {}
    for x in draws:
        counts[x] = counts.get(x, 0) + 1
    for x in set(counts) | set(law):
        p = float(law.get(x, 0))
        if abs(counts.get(x, 0) - n * p) > 6 * math.sqrt(n * p * (1 - p)) + 5:
            return False
    return True
