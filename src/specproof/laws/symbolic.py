"""The exact law of one speculative-decoding verification step, over SymPy.

The same law as :mod:`specproof.laws.exact`, with the same function names and argument order,
but computed on SymPy expressions. Entries may be exact rationals (then every result is a
``sympy.Rational`` equal to :mod:`specproof.laws.exact`'s result) or SymPy symbols and
expressions (then results are ``Piecewise``/``Min``/``Max`` expressions in them, so a
proof can reason about a generic pair).

The law is built from the sampler's steps, never by returning p: draw ``x ~ q``; accept
with probability ``min(1, p(x)/q(x))``; otherwise emit a token from the residual
``(p - q)+ / Z`` with ``Z = sum((p - q)+)`` [1]_ [2]_.

References
----------
.. [1] Y. Leviathan, M. Kalman, Y. Matias, "Fast Inference from Transformers via
   Speculative Decoding", ICML 2023, Theorem 3.5 and Appendix A.1.
.. [2] C. Chen et al., "Accelerating Large Language Model Decoding with Speculative
   Sampling", 2023, Theorem 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
import sympy as sp

from specproof.errors import InvalidDistribution, ResidualUndefined
from specproof.laws.rational import RationalVector, as_distribution, format_fraction, to_fraction

__all__ = [
    "emitted_distribution",
    "acceptance_probability",
    "tv_distance",
    "residual",
    "per_token_lemma",
    "accept_mass_lemma",
]


# --------------------------------------------------------------------------- inputs


def _is_symbolic(value: Any) -> bool:
    return isinstance(value, sp.Basic) and bool(value.free_symbols)


def _refuse_float_inside(value: Any, what: str) -> None:
    """Raise FloatNotExact for a SymPy expression with a Float anywhere in it."""
    if isinstance(value, sp.Basic) and value.has(sp.Float):
        # to_fraction raises FloatNotExact, whose message names rational.from_floats.
        to_fraction(next(iter(value.atoms(sp.Float))), what=f"{what} ({value})")


def _entry(value: Any, what: str) -> sp.Expr:
    """One entry as a SymPy expression, rationals checked non-negative."""
    if _is_symbolic(value):
        if not isinstance(value, sp.Expr):
            raise InvalidDistribution(f"{what} is {value!r}, not an algebraic SymPy expression (sympy.Expr)")
        if value.is_negative:
            raise InvalidDistribution(f"{what} is {value}, which is negative by its assumptions")
        if value.is_extended_real is not True or value.is_finite is False or value.has(sp.zoo, sp.nan):
            raise InvalidDistribution(
                f"{what} is {value}, which is not known to be a finite real number "
                "(declare symbols real, for example sympy.Symbol('p0', nonnegative=True))"
            )
        return value
    f = to_fraction(value, what=what)
    if f < 0:
        raise InvalidDistribution(f"{what} is {format_fraction(f)}, which is negative")
    return sp.Rational(f.numerator, f.denominator)


def _vector(values: Any, name: str) -> tuple[sp.Expr, ...]:
    """Validate one vector: fully, if it is rational; lengths and signs, if symbolic."""
    if (
        isinstance(values, (RationalVector, str, bytes, Mapping, AbstractSet))
        or not isinstance(values, Iterable)
        or (isinstance(values, np.ndarray) and (values.dtype.kind == "f" or values.ndim != 1))
    ):
        items: Any = values
    else:
        items = list(values)
        for i, v in enumerate(items):
            _refuse_float_inside(v, f"{name}[{i}]")
    if isinstance(items, list) and any(_is_symbolic(v) for v in items):
        return tuple(_entry(v, f"{name}[{i}]") for i, v in enumerate(items))
    vec = as_distribution(items, name)  # same checks and messages as specproof.laws.exact
    return tuple(sp.Rational(n, vec.denominator) for n in vec.numerators)


def _pair(p: Any, q: Any) -> tuple[tuple[sp.Expr, ...], tuple[sp.Expr, ...]]:
    pv = _vector(p, "p")
    qv = _vector(q, "q")
    if len(pv) != len(qv):
        raise InvalidDistribution(f"p has V={len(pv)} entries but q has V={len(qv)}")
    return pv, qv


def _when_zero(x: sp.Expr, if_zero: sp.Expr, otherwise: sp.Expr) -> sp.Expr:
    """``if_zero`` where x == 0, else ``otherwise``; decided now when SymPy can decide it."""
    is_zero = sp.Eq(x, 0)
    if is_zero is sp.true:
        return if_zero
    if is_zero is sp.false:
        return otherwise
    return sp.Piecewise((if_zero, is_zero), (otherwise, True))


def _accept(p: sp.Expr, q: sp.Expr) -> sp.Expr:
    """Accept mass of one token, ``q * Min(1, p/q)``, and 0 where q == 0 (never drafted)."""
    if sp.Eq(q, 0) is sp.true:
        return sp.S.Zero  # do not even form p/0
    return _when_zero(q, sp.S.Zero, q * sp.Min(1, p / q))


def _law(
    p: Any, q: Any
) -> tuple[tuple[sp.Expr, ...], tuple[sp.Expr, ...], list[sp.Expr], list[sp.Expr], sp.Expr, sp.Expr]:
    pv, qv = _pair(p, q)
    accept = [_accept(pi, qi) for pi, qi in zip(pv, qv)]
    resid = [sp.Max(pi - qi, 0) for pi, qi in zip(pv, qv)]
    alpha = sp.Add(*accept)
    z = sp.Add(*resid)
    return pv, qv, accept, resid, alpha, z


# --------------------------------------------------------------------------- the law


def emitted_distribution(p: Any, q: Any) -> tuple[tuple[sp.Expr, ...], sp.Expr]:
    """Return the law of the emitted token and the acceptance probability, over SymPy.

    Parameters
    ----------
    p : sequence, shape [V]
        Target distribution. Entries are exact rationals (int, Fraction, sympy.Rational,
        ``"n/d"``; or a :class:`~specproof.laws.rational.RationalVector`) or SymPy symbols and
        expressions, for example ``sympy.symbols('p0 p1', nonnegative=True)``.
    q : same as p
        Draft distribution; may be 0 where p is not, and the reverse.

    Returns
    -------
    dist : tuple of sympy.Expr, length V
        Probability that the verifier emits each token (accepted draft or residual draw).
        ``sympy.Rational`` entries equal to :func:`specproof.laws.exact.emitted_distribution`'s
        when the inputs are rational; ``Piecewise``/``Min``/``Max`` expressions otherwise.
    alpha : sympy.Expr
        Probability that the drafted token is accepted, ``sum_x q(x) Min(1, p(x)/q(x))``.

    Raises
    ------
    InvalidDistribution
        Empty or mismatched vectors, negative rational entries; and, for a vector with no
        free symbols, a sum other than exactly 1 (same messages as :mod:`specproof.laws.exact`).
    FloatNotExact
        Any float (Python, NumPy or ``sympy.Float``, also inside an expression); convert
        with :func:`specproof.laws.rational.from_floats`.

    Notes
    -----
    Steps, per token x: accept mass ``q(x) Min(1, p(x)/q(x))``, or 0 when q(x) = 0
    (``Piecewise((0, Eq(q, 0)), (q*Min(1, p/q), True))`` for a symbolic q); rejection
    probability ``1 - alpha``; residual ``Max(p(x) - q(x), 0)`` normalized by its mass Z;
    emitted mass ``accept(x) + (1 - alpha) Max(p(x) - q(x), 0) / Z``.

    Special cases: q(x) = 0 (never drafted; emitted only through the residual); p(x) = 0
    (drafted but always rejected, emitted mass 0); p == q (Z = 0: the emitted mass is the
    accept mass alone, decided exactly for rationals and written
    ``Piecewise((accept, Eq(Z, 0)), (accept + (1 - alpha)*r/Z, True))`` for symbols);
    V = 1 (alpha = 1).

    A vector with free symbols is checked only for its length and for non-negative
    rational entries: its normalization (``sum p == 1``) and non-negativity of symbols are
    the caller's assumptions (symbol assumptions, or substitutions made later).

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> dist, alpha = emitted_distribution(["1/3", "2/3", 0], ["1/2", 0, "1/2"])
    >>> dist, alpha
    ((1/3, 2/3, 0), 1/3)
    >>> a = sp.Symbol("a", nonnegative=True)
    >>> dist, alpha = emitted_distribution([a, 1 - a], ["1/2", "1/2"])
    >>> alpha
    Min(1, 2*a)/2 + Min(1, 2 - 2*a)/2
    >>> [d.subs(a, sp.Rational(1, 5)) for d in dist]
    [1/5, 4/5]
    """
    _, _, accept, resid, alpha, z = _law(p, q)
    reject = 1 - alpha
    dist = tuple(_when_zero(z, acc, acc + reject * r / z) for acc, r in zip(accept, resid))
    return dist, alpha


def acceptance_probability(p: Any, q: Any) -> sp.Expr:
    """Return alpha, the probability that the drafted token is accepted, over SymPy.

    Parameters
    ----------
    p, q : sequences, shape [V]
        Target and draft, rational or symbolic, validated as in
        :func:`emitted_distribution`.

    Returns
    -------
    sympy.Expr
        ``sum_x q(x) Min(1, p(x)/q(x))`` (0 for tokens with q(x) = 0); a ``sympy.Rational``
        equal to :func:`specproof.laws.exact.acceptance_probability` for rational inputs.

    Raises
    ------
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    Notes
    -----
    Special cases: q(x) = 0 contributes 0; p(x) = 0 contributes 0; p == q and V = 1 give 1.

    References
    ----------
    Leviathan et al. 2023, Definition 3.1 and Corollary 3.6 (alpha = 1 - D_LK(p, q)).

    Examples
    --------
    >>> acceptance_probability(["1/2", "1/2"], [1, 0])
    1/2
    >>> p0, q0 = sp.symbols("p0 q0", nonnegative=True)
    >>> acceptance_probability([p0], [q0])
    Piecewise((0, Eq(q0, 0)), (q0*Min(1, p0/q0), True))
    """
    return _law(p, q)[4]


def tv_distance(p: Any, q: Any) -> sp.Expr:
    """Return the total variation distance ``(1/2) sum_x |p(x) - q(x)|``, over SymPy.

    Parameters
    ----------
    p, q : sequences, shape [V]
        Two distributions, rational or symbolic, validated as in
        :func:`emitted_distribution`.

    Returns
    -------
    sympy.Expr
        A ``sympy.Rational`` in [0, 1] equal to :func:`specproof.laws.exact.tv_distance` for
        rational inputs; an expression in ``Abs`` otherwise.

    Raises
    ------
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    Notes
    -----
    For distributions it equals ``sum_x Max(p(x) - q(x), 0)`` and ``1 - alpha``; 0 when
    p == q (and so for V = 1), 1 for disjoint supports.

    References
    ----------
    Leviathan et al. 2023, Corollary 3.6; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> tv_distance(["1/2", "1/2"], ["1/4", "3/4"])
    1/4
    """
    pv, qv = _pair(p, q)
    return sp.Rational(1, 2) * sp.Add(*(sp.Abs(pi - qi) for pi, qi in zip(pv, qv)))


def residual(p: Any, q: Any) -> tuple[sp.Expr, ...]:
    """Return the normalized residual ``Max(p - q, 0) / sum(Max(p - q, 0))``, over SymPy.

    Parameters
    ----------
    p, q : sequences, shape [V]
        Target and draft, rational or symbolic, validated as in
        :func:`emitted_distribution`.

    Returns
    -------
    tuple of sympy.Expr, length V
        The distribution the verifier resamples from after a rejection. ``sympy.Rational``
        entries equal to :func:`specproof.laws.exact.residual` for rational inputs; for symbolic
        inputs, ``Max(p(x) - q(x), 0) / Z``, meaningful only where ``Z != 0``.

    Raises
    ------
    ResidualUndefined
        If Z is exactly 0: p == q for rational inputs, or a symbolic pair whose residual
        mass SymPy reduces to 0 (for example p and q the same symbols).
    InvalidDistribution, FloatNotExact
        As :func:`emitted_distribution`.

    Notes
    -----
    q(x) = 0 and p(x) > 0: the token gets all of its mass here; p(x) = 0: residual 0.
    p == q (and V = 1): Z = 0, the verifier accepts with probability 1 and never samples
    the residual; :func:`emitted_distribution` still returns p.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> residual(["1/2", "1/2", 0], ["1/4", "1/4", "1/2"])
    (1/2, 1/2, 0)
    >>> residual(["1/2", "1/2"], ["1/2", "1/2"])
    Traceback (most recent call last):
    ...
    specproof.errors.ResidualUndefined: the residual is undefined: p == q, so (p - q)+ has mass 0 ...
    """
    *_, resid, _, z = _law(p, q)
    if sp.Eq(z, 0) is sp.true:
        raise ResidualUndefined(
            "the residual is undefined: p == q, so (p - q)+ has mass 0 and its normalization "
            "is 0/0; the verifier accepts with probability 1 and never samples it"
        )
    return tuple(r / z for r in resid)


# --------------------------------------------------------------------------- lemmas


def per_token_lemma() -> bool:
    """Prove with SymPy that ``Min(a, b) + Max(a - b, 0) == a`` for real a, b >= 0.

    Returns
    -------
    bool
        True iff ``Min(a, b) + Max(a - b, 0) - a`` simplifies to 0.

    Notes
    -----
    This is the per-token step of losslessness: accept mass plus unnormalized residual mass
    is the target mass. Technique: ``rewrite(Piecewise)``, ``piecewise_fold``, then
    ``simplify``; plain ``simplify`` or ``refine`` leave the expression unchanged.

    References
    ----------
    Leviathan et al. 2023, Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> per_token_lemma()
    True
    """
    a, b = sp.symbols("a b", real=True, nonnegative=True)
    expr = sp.Min(a, b) + sp.Max(a - b, 0) - a
    return bool(sp.simplify(sp.piecewise_fold(expr.rewrite(sp.Piecewise))) == 0)


def _decided(rel: sp.Basic) -> sp.Basic:
    # Compare lhs - rhs, factored, with 0, so the symbols' assumptions can decide the sign.
    return type(rel)(sp.factor(rel.lhs - rel.rhs), 0)


def accept_mass_lemma() -> bool:
    """Prove with SymPy that ``q * Min(1, p/q) == Min(p, q)`` for p >= 0, q > 0.

    Returns
    -------
    bool
        True iff the difference reduces to 0 in both cases of an exhaustive split.

    Notes
    -----
    The split: p >= q, written ``p = q + t`` with q > 0, t >= 0; and p < q, written
    ``q = p + u`` with p >= 0, u > 0. Each case substitutes into the difference,
    rewrites ``Min`` as ``Piecewise``, folds, puts every condition in the form
    ``factor(lhs - rhs) <rel> 0`` (decided by the symbols' assumptions) and simplifies.

    References
    ----------
    Leviathan et al. 2023, Definition 3.1 (``sum_x min(p(x), q(x))``) and Appendix A.1.

    Examples
    --------
    >>> accept_mass_lemma()
    True
    """
    p, q = sp.symbols("p q")
    diff = q * sp.Min(1, p / q) - sp.Min(p, q)
    pos, t = sp.Symbol("q", positive=True), sp.Symbol("t", nonnegative=True)
    nonneg, u = sp.Symbol("p", nonnegative=True), sp.Symbol("u", positive=True)
    cases = ({p: pos + t, q: pos}, {p: nonneg, q: nonneg + u})
    for case in cases:
        folded = sp.piecewise_fold(diff.subs(case, simultaneous=True).rewrite(sp.Piecewise))
        decided = folded.replace(lambda e: e.is_Relational, _decided)
        if sp.simplify(decided) != 0:
            return False
    return True
