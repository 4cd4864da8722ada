"""pytest helpers for engine developers: is MY sampler lossless, and if not, by exactly how much.

:func:`assert_law` traces a sampler (:func:`specproof.trace.trace`) and compares its exact law with
an expected one; :func:`assert_lossless` compares it with the target's law (one position: the
sampler returns a token id; a block: it returns a tuple of ids and the target is given row by row).
On a difference both raise :class:`AssertionError` with the outputs whose mass differs and the
exact TV, so a failing test says by exactly how much the sampler is off.

The exact path needs a traceable sampler (the random calls :mod:`specproof.trace` models). A
one-position sampler that asks for other randomness is tested statistically by
:func:`assert_lossless` instead (:func:`specproof.conformance.conformance_test`: false-alarm rate
alpha, power at TV >= eps, both guaranteed); :func:`assert_law`, a block sampler, or
``statistical=False`` re-raise :class:`~specproof.trace.UnmodelledRandomness`, naming the call.

Examples
--------
>>> import torch
>>> def textbook(p, q):
...     x = int(torch.multinomial(q, 1))
...     if torch.rand(()) < p[x] / q[x]:
...         return x
...     return int(torch.multinomial(torch.clamp(p - q, min=0), 1))
>>> p, q = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.5, 0.25])
>>> assert_lossless(textbook, p, q).law
{0: Fraction(1, 2), 1: Fraction(1, 4), 2: Fraction(1, 4)}
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Mapping

from .errors import SpecProofError
from .trace import Trace, UnmodelledRandomness, stream_tv, trace

__all__ = ["assert_law", "assert_lossless", "law_difference"]

#: How many differing outputs a failure message lists.
SHOWN = 20


def _fraction(x: Any, what: str) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise SpecProofError(f"{what} is {x!r}, not a number")
    if isinstance(x, (int, str)):
        from .rational import to_fraction

        return to_fraction(x, what=what)
    try:
        return Fraction(float(x))  # a float, a NumPy or 0-d torch scalar: its exact binary value
    except (TypeError, ValueError):
        raise SpecProofError(f"{what} is {x!r}, not a number") from None


def _row(values: Any, what: str) -> tuple[Fraction, ...]:
    """A row made exact: each entry's exact value, renormalized exactly (as torch.multinomial is modelled)."""
    if hasattr(values, "tolist"):
        values = values.tolist()
    row = [_fraction(x, f"{what}[{i}]") for i, x in enumerate(values)]
    total = sum(row, Fraction(0))
    if not row or total <= 0 or any(x < 0 for x in row):
        raise SpecProofError(f"{what} is not a nonnegative row with positive mass")
    return tuple(x / total for x in row)


def _expected(expected: Any) -> dict[Any, Fraction]:
    if isinstance(expected, Mapping):
        return {k: _fraction(v, f"expected mass of {k!r}") for k, v in expected.items()}
    if hasattr(expected, "tolist"):
        expected = expected.tolist()
    return {i: _fraction(v, f"expected mass of token {i}") for i, v in enumerate(expected)}


def law_difference(got: Mapping[Any, Fraction], want: Mapping[Any, Fraction]) -> tuple[Fraction, list]:
    """The exact TV between two laws and the outputs whose mass differs.

    Returns
    -------
    tv : Fraction
        ``(1/2) sum_o |got(o) - want(o)|`` over every output of either law.
    differing : list of (output, got mass, expected mass)
        Largest difference first.
    """
    keys = list(dict.fromkeys([*want, *got]))
    diff = [(k, got.get(k, Fraction(0)), want.get(k, Fraction(0))) for k in keys]
    diff = [d for d in diff if d[1] != d[2]]
    diff.sort(key=lambda d: -abs(d[1] - d[2]))
    return sum((abs(a - b) for _, a, b in diff), Fraction(0)) / 2, diff


def _message(title: str, tv: Fraction, diff: list, traced: Trace) -> str:
    lines = [f"{title}: exact TV = {tv.numerator}/{tv.denominator} (~{float(tv):.3g}); "
             f"{len(diff)} output(s) differ:", f"  {'output':<16} {'traced':<28} expected"]
    for out, a, b in diff[:SHOWN]:
        lines.append(f"  {str(out):<16} {str(a):<28} {b}")
    if len(diff) > SHOWN:
        lines.append(f"  ... and {len(diff) - SHOWN} more")
    lines.append(f"(traced exactly over {traced.runs} runs; assumptions: " + "; ".join(traced.assumptions) + ")")
    return "\n".join(lines)


def assert_law(sampler: Callable[..., Any], expected_law: Any, *, args: tuple = (), kwargs: dict | None = None,
               numpy_rng: str | None = None, key: Callable[[Any], Any] | None = None,
               max_runs: int = 200_000) -> Trace:
    """Assert that ``sampler(*args, **kwargs)`` has exactly ``expected_law``.

    Parameters
    ----------
    sampler : callable
        Traceable by :func:`specproof.trace.trace`.
    expected_law : mapping of output -> rational, or a sequence of length V
        The law the outputs should have (a sequence gives token id i the mass at i); rationals as
        Fraction, int, ``"n/d"`` or a float (its exact binary value).
    args, kwargs, numpy_rng, key, max_runs
        As :func:`specproof.trace.trace`.

    Returns
    -------
    Trace
        The traced law (for further checks).

    Raises
    ------
    AssertionError
        The laws differ: the message lists the outputs whose mass differs (largest first) and the
        exact TV.
    SpecProofError
        The tracer's errors (unmodelled randomness, a non-monotone sampler ...), a bad expected law.

    Examples
    --------
    >>> import torch
    >>> assert_law(lambda: int(torch.rand(()) < 0.5), {0: "1/2", 1: "1/2"}).runs <= 31
    True
    """
    want = _expected(expected_law)
    traced = trace(sampler, args, kwargs, numpy_rng=numpy_rng, key=key, max_runs=max_runs)
    tv, diff = law_difference(traced.law, want)
    if diff:
        raise AssertionError(_message("the sampler's law differs from the expected law", tv, diff, traced))
    return traced


def assert_lossless(sampler: Callable[..., Any], target: Any, draft: Any, *, numpy_rng: str | None = None,
                    key: Callable[[Any], Any] | None = None, max_runs: int = 200_000, statistical: bool = False,
                    eps: float = 0.05, alpha: float = 1e-6, power: float = 0.95) -> Any:
    """Assert that the verifier ``sampler(target, draft)`` emits exactly the target's law.

    Parameters
    ----------
    sampler : callable
        Called as ``sampler(target, draft)`` (plus the NumPy generator as ``numpy_rng`` if given);
        returns a token id (one position) or a sequence of ids (a block).
    target : sequence or tensor, shape [V] or [gamma + 1, V]
        The target's row (one position), or its row at each position of a block (then the
        sampler's output is a block and losslessness is judged on the first gamma + 1 stream
        tokens: the block continued by sampling these rows, against their product). Float entries
        count at their exact binary value, renormalized exactly (as ``torch.multinomial`` is
        modelled).
    draft : any
        Passed to the sampler as is.
    numpy_rng, key, max_runs
        As :func:`specproof.trace.trace`.
    statistical : bool, optional
        Default False: a sampler that cannot be traced raises
        :class:`~specproof.trace.UnmodelledRandomness` (the answer would not be exact). True: if the
        sampler cannot be traced and the target is one row, fall back to
        :func:`specproof.conformance.conformance_test`: call the sampler N times with its real
        randomness (no NumPy generator is passed; ``numpy_rng`` must be None) and test the outputs
        against the target with false-alarm rate ``alpha`` and power ``power`` at TV >= ``eps``
        (a sampler off by less than ``eps`` may pass).
    eps, alpha, power : float
        The statistical test's tolerance, false-alarm rate and power (defaults 0.05, 1e-6, 0.95).

    Returns
    -------
    Trace or ConformanceResult
        The exact trace, or the statistical result when the fallback ran.

    Raises
    ------
    AssertionError
        The emitted law is not the target's: the message lists the tokens (or blocks) whose mass
        differs, an out-of-range id as its own output, and the exact TV (or, for the statistical
        fallback, the observed TV, p-value and upper confidence bound).
    SpecProofError
        The tracer's errors; a bad target.

    Examples
    --------
    >>> import torch
    >>> def accept_all(p, q):
    ...     return int(torch.multinomial(q, 1))
    >>> assert_lossless(accept_all, torch.tensor([0.5, 0.5]), torch.tensor([0.75, 0.25]))
    Traceback (most recent call last):
    ...
    AssertionError: the sampler is not lossless: exact TV = 1/4 (~0.25); 2 output(s) differ:
    ...
    """
    rows = target.tolist() if hasattr(target, "tolist") else list(target)
    blocks = bool(rows) and isinstance(rows[0], (list, tuple))
    try:
        traced = trace(sampler, (target, draft), numpy_rng=numpy_rng, key=key, max_runs=max_runs)
    except UnmodelledRandomness as exc:
        if not statistical:
            raise UnmodelledRandomness(f"{exc}; pass statistical=True to test it statistically instead (it then "
                                       f"detects only a TV of at least eps = {eps})") from None
        if blocks or numpy_rng is not None:
            raise
        return _statistical(sampler, target, draft, rows, key, eps, alpha, power, str(exc))
    if not blocks:
        want = dict(enumerate(_row(rows, "target")))
        single: dict[Any, Fraction] = {}  # a one-element output (torch.multinomial's shape [1]) is its token
        for out, m in traced.law.items():
            out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            single[out] = single.get(out, Fraction(0)) + m
        tv, diff = law_difference(single, want)
    else:
        ref = [_row(r, f"target[{i}]") for i, r in enumerate(rows)]
        law: dict[tuple[int, ...], Fraction] = {}
        bad = Fraction(0)
        for out, m in traced.law.items():
            ids = out if isinstance(out, tuple) else (out,)
            if all(isinstance(t, int) and 0 <= t < len(ref[0]) for t in ids) and 1 <= len(ids) <= len(ref):
                law[ids] = m
            else:
                bad += m
        tv = (2 * stream_tv(law, ref) + bad) / 2  # an invalid block counts fully
        diff = [(b, m, "not a valid block") for b, m in traced.law.items() if b not in law]
        for i, row in enumerate(ref):  # the stream's marginal at each position, against the target's row
            marginal = [Fraction(0)] * len(row)
            for b, m in law.items():
                if len(b) > i:
                    marginal[b[i]] += m
                else:
                    for y, r in enumerate(row):
                        marginal[y] += m * r
            diff += [(f"pos {i} token {y}", a, w) for y, (a, w) in enumerate(zip(marginal, row)) if a != w]
    if tv:
        raise AssertionError(_message("the sampler is not lossless", tv, diff, traced))
    return traced


def _statistical(sampler, target, draft, rows, key, eps, alpha, power, why: str):
    """The fallback of :func:`assert_lossless` for a sampler that cannot be traced."""
    from .conformance import conformance_test

    want = dict(enumerate(_row(rows, "target")))

    def sample(n: int) -> list:
        out = []
        for _ in range(n):
            x = sampler(target, draft)
            x = key(x) if key is not None else x
            out.append(int(x) if hasattr(x, "__index__") or hasattr(x, "item") else x)
        return out

    result = conformance_test(sample, want, eps=eps, alpha=alpha, power=power)
    if not result.conforms:
        raise AssertionError(
            f"the sampler is not lossless (statistical test, the sampler could not be traced: {why}): observed TV "
            f"{result.observed_tv:.4g} >= threshold {result.threshold:.4g} over N = {result.n} draws; p-value "
            f"{result.p_value:.3g}; TV upper bound {result.tv_upper_bound:.4g} at level 1 - {alpha}"
            + (f"; outputs outside the target's support: {result.outside_support}" if result.outside_support else ""))
    return result
