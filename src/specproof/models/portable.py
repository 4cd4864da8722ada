"""The float conversions that turn the real models' outputs into the rows specproof proves, the same
bits on every machine: the phone model's ``1.0001 ** n`` (:func:`power`) and SmolLM2's softmax.

The C library's ``pow`` picks its code by the CPU (glibc's FMA variant and its plain one round 51
and 42 of the phone model's 36,482 powers differently from the correctly rounded value), NumPy's ``np.exp`` picks its kernel by the CPU's instruction set (an AVX-512 float64 ``exp`` gives
other last bits than the scalar one), and its sums are not correctly rounded, so
``softmax(float64(logits))`` written with them is a function of the machine, and so would be every
certificate and transcript made from it. :func:`softmax` uses only operations IEEE 754 rounds
exactly (``+``, ``-``, ``*``, ``/``, ``rint``, ``ldexp``), each a separate NumPy call, in an
order fixed by the code (the sum too): given the same logits it gives the same bits with any NumPy
on any CPU.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np

from specproof.errors import InvalidDistribution, InvalidOption

__all__ = ["power", "exp_nonpositive", "pairwise_sum", "softmax"]

# ln 2 split so that k * _LN2_HI is exact for |k| < 2^20 (fdlibm's constants, Cody and Waite 1980).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
# 1/k! for k = 13 down to 1: the Taylor polynomial of exp on |r| <= ln(2)/2, whose remainder
# (ln 2 / 2)^14 / 14! < 2^-57 is below a quarter of an ulp of the result.
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(13, 0, -1))
# Below this, exp(x) < 2^-1075 rounds to 0 in binary64.
_UNDERFLOW = -745.2


@cache
def power(base: float, n: int) -> float:
    """``base ** n`` rounded to the nearest float64, the same bits on every machine.

    Parameters
    ----------
    base : float
        A finite, positive float64 (the phone model's log base, ``1.0001``).
    n : int
        The exponent (pocketsphinx's integer log probability).

    Returns
    -------
    float
        The exact power of the float ``base``, evaluated with 128 bits (mpmath: integer arithmetic
        only) and rounded to nearest by ``fractions.Fraction``: the correctly rounded value unless
        the power lies within about 2^-115 (relative) of a tie, and a function of ``base`` and ``n``
        alone, unlike ``base ** n``, which calls the C library's ``pow``.

    Raises
    ------
    InvalidOption
        If ``base`` is not a finite positive float or ``n`` is not an integer.
    """
    if not (isinstance(base, float) and math.isfinite(base) and base > 0) or not isinstance(n, int):
        raise InvalidOption(f"power takes a finite positive float base and an integer exponent, not {base!r}, {n!r}")
    import mpmath

    with mpmath.workprec(128):
        man, exp = (mpmath.mpf(base) ** n).man_exp
    return float(Fraction(int(man)) * Fraction(2) ** int(exp))


def exp_nonpositive(x: np.ndarray) -> np.ndarray:
    """``exp(x)`` for float64 ``x <= 0``, the same bits on every machine.

    Parameters
    ----------
    x : numpy.ndarray of float64, any shape
        Non-positive, not NaN (``-inf`` gives 0).

    Returns
    -------
    numpy.ndarray of float64, the shape of ``x``
        Within 2 ulp of ``exp(x)`` (measured against a correctly rounded exp in the tests), and a
        function of ``x`` alone: Cody and Waite's reduction ``x = k ln 2 + r``, ``|r| <= ln(2)/2``,
        the degree-13 Taylor polynomial of ``exp(r)`` by Horner's rule, then ``ldexp(., k)``.

    Raises
    ------
    InvalidDistribution
        If an entry is positive or NaN (the softmax subtracts the row's maximum first).

    References
    ----------
    W. J. Cody and W. Waite, *Software Manual for the Elementary Functions*, 1980, ch. 6.
    """
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any() or (x > 0).any():
        raise InvalidDistribution("exp_nonpositive takes float64 entries <= 0 (no NaN)")
    low = x < _UNDERFLOW
    x = np.where(low, 0.0, x)
    k = np.rint(x * _INV_LN2)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    poly = np.full_like(r, _TAYLOR[0])
    for c in (*_TAYLOR[1:], 1.0):  # Horner's rule, in place: poly = poly * r + c
        np.multiply(poly, r, out=poly)
        np.add(poly, c, out=poly)
    out = np.ldexp(poly, k.astype(np.int32))
    out[low] = 0.0
    return out


def pairwise_sum(values: np.ndarray) -> np.ndarray:
    """Sums over the last axis in one fixed pairwise order, the same bits on every machine.

    The row is padded with zeros to a power of two, then its halves are added elementwise until
    one entry is left: ``log2(V)`` rounds of separate IEEE additions (NumPy's own ``sum`` picks
    its order by the CPU's vector width). The error is at most ``ceil(log2 V)`` roundings of the
    partial sums (Higham 2002, section 4.2).

    Parameters
    ----------
    values : numpy.ndarray of float64, shape [..., V]

    Returns
    -------
    numpy.ndarray of float64, shape [...]
    """
    a = np.asarray(values, dtype=np.float64)
    n = a.shape[-1]
    width = 1 << max(n - 1, 0).bit_length()
    if width != n:
        a = np.concatenate([a, np.zeros(a.shape[:-1] + (width - n,))], axis=-1)
    while a.shape[-1] > 1:
        half = a.shape[-1] // 2
        a = a[..., :half] + a[..., half:]
    return a[..., 0]


def softmax(values: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """``softmax(float64(values) / temperature)`` over the last axis, the same bits on every machine.

    Parameters
    ----------
    values : array_like of float, shape [..., V]
        Logits (float32 or float64), finite.
    temperature : float
        T > 0; the logits are divided by it in float64.

    Returns
    -------
    numpy.ndarray of float64, shape [..., V]
        ``e / sum(e)`` with ``e = exp(x - max(x))`` by :func:`exp_nonpositive` and the sum by
        :func:`pairwise_sum`; each row sums to 1
        within a few ulp (not exactly: specproof makes the rows exact by a stated policy,
        :func:`specproof.laws.rational.from_floats`).

    Raises
    ------
    InvalidDistribution
        If a logit is not finite.
    InvalidOption
        If the temperature is not a positive number.
    """
    if not temperature > 0:
        raise InvalidOption(f"temperature must be > 0, not {temperature!r}")
    x = np.asarray(values, dtype=np.float64) / temperature
    if not np.isfinite(x).all():
        raise InvalidDistribution("softmax takes finite logits")
    e = exp_nonpositive(x - x.max(axis=-1, keepdims=True))
    return e / pairwise_sum(e)[..., None]
