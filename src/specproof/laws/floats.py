"""IEEE 754 binary floating point, modelled exactly: each operation is the exact rational result
rounded to nearest, ties to even, in the operation's format.

A verifier written with floats does not compute ``p/q``; it computes ``fl(p/q)``, the float
nearest to it. :class:`FloatFormat` rounds an exact :class:`~fractions.Fraction` to a binary
format (normal and subnormal numbers, overflow to infinity), so a law that depends on float
arithmetic stays exact: every threshold, difference and sum the code forms is the rational the
hardware returns, never an approximation of it.

=========== ========= ============= =========== ==============================
format      precision min exponent  max expon.  largest finite
=========== ========= ============= =========== ==============================
float16     11        -14           15          65504
bfloat16    8         -126          127         (2 - 2^-7) 2^127
float32     24        -126          127         (2 - 2^-23) 2^127
float64     53        -1022         1023        (2 - 2^-52) 2^1023
=========== ========= ============= =========== ==============================

Infinities are :data:`INF` (``math.inf``, which compares exactly with any Fraction); NaN is
never produced by the operations here (their callers decide what ``0/0`` means).

References
----------
IEEE Std 754-2019, Sections 4.3.1 (roundTiesToEven) and 7.4 (overflow); Goldberg, "What Every
Computer Scientist Should Know About Floating-Point Arithmetic", ACM Computing Surveys 1991.

Examples
--------
>>> FLOAT32.round(Fraction(2, 3)) == Fraction(11184811, 2**24)
True
>>> FLOAT16.round(Fraction(65520)), FLOAT16.round(Fraction(65519))
(inf, Fraction(65504, 1))
>>> FLOAT32.div(Fraction(1, 4), Fraction(3, 8)) == FLOAT32.round(Fraction(2, 3))
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from specproof.errors import SpecProofError

__all__ = [
    "FloatFormat",
    "FLOAT16",
    "BFLOAT16",
    "FLOAT32",
    "FLOAT64",
    "FORMATS",
    "INF",
    "float_format",
    "UnknownFormat",
]

#: Positive infinity: the result of an overflow (compares exactly with every Fraction).
INF = math.inf


class UnknownFormat(SpecProofError):
    """A float format name that is not one of :data:`FORMATS`."""


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format with round-to-nearest-even arithmetic on exact values.

    Attributes
    ----------
    name : str
        ``"float16"``, ``"bfloat16"``, ``"float32"`` or ``"float64"``.
    precision : int
        Significand bits, the implicit leading bit included (float32: 24).
    emin, emax : int
        Exponents of the smallest and largest normal binades (float32: -126 and 127).

    Notes
    -----
    Values are Fractions (every finite float is a dyadic rational) or :data:`INF` / ``-INF``.
    Below ``2**emin`` the spacing stays ``2**(emin - precision + 1)`` (gradual underflow); a
    result that rounds to ``2**(emax + 1)`` or beyond is infinite. Signed zero is not
    represented: ``-0`` and ``0`` are the same Fraction (every comparison treats them alike).
    """

    name: str
    precision: int
    emin: int
    emax: int

    @property
    def max_finite(self) -> Fraction:
        """The largest finite value, ``(2 - 2**(1 - precision)) * 2**emax``."""
        return Fraction(2**self.precision - 1) * Fraction(2) ** (self.emax - self.precision + 1)

    @property
    def min_subnormal(self) -> Fraction:
        """The smallest positive value, ``2**(emin - precision + 1)``."""
        return Fraction(2) ** (self.emin - self.precision + 1)

    def round(self, x: Fraction | float) -> Fraction | float:
        """The float of this format nearest to the exact value ``x`` (ties to even).

        Parameters
        ----------
        x : Fraction, int, or ``±INF``
            An exact value (a Python float is taken at its exact binary value).

        Returns
        -------
        Fraction or float
            The rounded value as a Fraction, or ``INF`` / ``-INF`` on overflow.

        Raises
        ------
        SpecProofError
            ``x`` is NaN.

        Examples
        --------
        >>> FLOAT32.round(Fraction(1, 3)) == Fraction(11184811, 2**25)
        True
        >>> FLOAT16.round(Fraction(1, 2**26))  # half the smallest subnormal: ties to even, 0
        Fraction(0, 1)
        """
        if isinstance(x, float):
            if math.isnan(x):
                raise SpecProofError("cannot round NaN")
            if math.isinf(x):
                return x
            x = Fraction(x)
        x = Fraction(x)
        num, den = x.numerator, x.denominator  # in integers: den > 0, no Fraction arithmetic below
        if num == 0:
            return Fraction(0)
        if num < 0:
            r = self.round(-x)
            return -r
        # the binade: 2**e <= x < 2**(e + 1)
        e = num.bit_length() - den.bit_length()
        if (num << -e if e < 0 else num) < (den << e if e > 0 else den):
            e -= 1
        step = max(e, self.emin) - self.precision + 1  # the spacing of floats there is 2**step
        m, rest = divmod(num << -step, den) if step < 0 else divmod(num, den << step)
        twice, bottom = 2 * rest, (den if step < 0 else den << step)
        if twice > bottom or (twice == bottom and m % 2 == 1):
            m += 1
        if m.bit_length() + step > self.emax + 1:  # m 2**step >= 2**(emax + 1): past the largest finite
            return INF
        return Fraction(m << step) if step >= 0 else Fraction(m, 1 << -step)

    def contains(self, x: Fraction) -> bool:
        """True iff the exact value ``x`` is a finite float of this format."""
        return self.round(x) == x

    def add(self, a: Fraction | float, b: Fraction | float) -> Fraction | float:
        """``fl(a + b)``."""
        return self._op(a, b, "+")

    def sub(self, a: Fraction | float, b: Fraction | float) -> Fraction | float:
        """``fl(a - b)``."""
        return self._op(a, b, "-")

    def mul(self, a: Fraction | float, b: Fraction | float) -> Fraction | float:
        """``fl(a * b)``."""
        return self._op(a, b, "*")

    def div(self, a: Fraction | float, b: Fraction | float) -> Fraction | float:
        """``fl(a / b)``; ``b == 0`` gives ``±INF`` for ``a != 0`` and raises for ``0/0``."""
        return self._op(a, b, "/")

    def sum(self, values: Iterable[Fraction | float]) -> Fraction | float:
        """``fl(...fl(fl(v0 + v1) + v2)... )``: a left-to-right sum, one rounding per addition.

        This is the order NumPy uses for rows of fewer than 8 entries and PyTorch for rows of at
        most 4 (measured); longer rows are summed in blocks (pairwise or by vector lanes), which
        this does not model. Every addition rounds in *this* format: NumPy and PyTorch accumulate
        float16 and bfloat16 rows in float32 instead, which is ``fmt.round(FLOAT32.sum(values))``
        (how the rules and the checker model a half-precision row's sum).
        """
        total: Fraction | float = Fraction(0)
        for v in values:
            total = self.add(total, v)
        return total

    def accumulated_sum(self, values: Iterable[Fraction | float]) -> Fraction | float:
        """The left-to-right sum as NumPy and PyTorch take it of a short row: :meth:`sum` for float32
        and float64, a float32 accumulator rounded to this format once for float16 and bfloat16 (the
        rules' model of ``row.sum()``; the libraries' own order on longer rows is
        :func:`specproof.rules.libm.sum_value`).

        Examples
        --------
        >>> FLOAT16.accumulated_sum([Fraction(1), Fraction(1, 2**11), Fraction(1, 2**11)])  # 1 + 2^-10
        Fraction(1025, 1024)
        >>> FLOAT16.sum([Fraction(1), Fraction(1, 2**11), Fraction(1, 2**11)])  # each addition a tie to even: 1
        Fraction(1, 1)
        """
        return self.round(FLOAT32.sum(values)) if self.precision < 24 else self.sum(values)

    def _op(self, a: Fraction | float, b: Fraction | float, op: str) -> Fraction | float:
        if any(isinstance(v, float) and math.isinf(v) for v in (a, b)):
            exact = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b}[op]()
            if isinstance(exact, float) and math.isnan(exact):
                raise SpecProofError(f"{self.name}: {a} {op} {b} is NaN")
            return exact if isinstance(exact, float) else self.round(Fraction(exact))
        a, b = Fraction(a), Fraction(b)
        if op == "/":
            if b == 0:
                if a == 0:
                    raise SpecProofError(f"{self.name}: 0/0 is NaN")
                return INF if a > 0 else -INF
            return self.round(a / b)
        return self.round({"+": a + b, "-": a - b, "*": a * b}[op])


FLOAT16 = FloatFormat("float16", 11, -14, 15)
BFLOAT16 = FloatFormat("bfloat16", 8, -126, 127)
FLOAT32 = FloatFormat("float32", 24, -126, 127)
FLOAT64 = FloatFormat("float64", 53, -1022, 1023)
#: The formats by name.
FORMATS = {f.name: f for f in (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)}


def float_format(name: str) -> FloatFormat:
    """The format called ``name`` (``float16``, ``bfloat16``, ``float32``, ``float64``).

    Raises
    ------
    UnknownFormat
        Any other name.

    Examples
    --------
    >>> float_format("bfloat16").precision
    8
    """
    if name not in FORMATS:
        raise UnknownFormat(f"unknown float format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]
