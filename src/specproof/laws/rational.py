"""The exact boundary: how values become exact rationals, and nothing else.

Exact inputs (``int``, :class:`fractions.Fraction`, ``sympy.Rational``, ``"n/d"`` strings)
become :class:`~fractions.Fraction` here. A float never becomes a rational implicitly: the
only way in is the named conversion :func:`from_floats`, whose policy is stated below and
recorded on the vector it returns.

Exact probability vectors are held as a :class:`RationalVector`: integer numerators over one
common denominator. That form lets the exact core work on plain Python integers (nothing is
divided), which is what makes exact checks at V = 128,256 fast.
"""

from __future__ import annotations

import decimal
import math
import numbers
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.errors import FloatNotExact, InvalidDistribution

__all__ = [
    "DEFAULT_FLOAT_ATOL",
    "FloatPolicy",
    "RationalVector",
    "to_fraction",
    "as_distribution",
    "as_fractions",
    "from_floats",
    "format_fraction",
]

#: Largest ``abs(sum(x) - 1)`` (of the floats' exact values) that :func:`from_floats` accepts
#: by default before renormalizing: enough for float16 softmax rows (off by up to about 5e-4)
#: and 4-decimal n-gram tables (about 2e-4); float64 and float32 rows are far closer. A row
#: further off is a bug upstream (logits, a truncated vocabulary), not rounding.
DEFAULT_FLOAT_ATOL = 1e-3

_RATIO = re.compile(r"\s*([+-]?[0-9]+)\s*(?:/\s*([0-9]+))?\s*")
_FLOAT_HINT = (
    "floats are not exact; convert explicitly with specproof.laws.rational.from_floats(values) "
    "(exact dyadic value of each float, then exact renormalization) or pass "
    "fractions.Fraction / 'n/d' strings; for the float law of float rows, use the float path, "
    "specproof.emitted_distribution"
)


def _not_a_number(what: str, given: str, value: float) -> InvalidDistribution:
    """The refusal of a NaN or infinite entry (a float or a string such as ``'nan'``): no probability at all,
    so neither an exact value nor :func:`from_floats` can make one of it."""
    kind = "not a number (NaN)" if math.isnan(value) else "infinite"
    return InvalidDistribution(
        f"{what} is {given}, {kind}: no probability, exact or float (from_floats and the float path refuse it "
        "too); a NaN or inf entry comes from upstream (0/0, a softmax of all -inf or of inf logits): fix the row "
        "where it is computed, then pass its values as fractions.Fraction or 'n/d' strings"
    )


def format_fraction(x: Fraction) -> str:
    """Return ``x`` as an ``"n/d"`` string (``"n/1"`` for integers).

    Parameters
    ----------
    x : fractions.Fraction
        The value.

    Returns
    -------
    str
        ``f"{x.numerator}/{x.denominator}"``, the canonical form used in certificates.

    Examples
    --------
    >>> format_fraction(Fraction(2, 4))
    '1/2'
    """
    return f"{x.numerator}/{x.denominator}"


def to_fraction(value: Any, *, what: str = "value") -> Fraction:
    """Convert one exact value to a :class:`~fractions.Fraction`.

    Parameters
    ----------
    value : int, fractions.Fraction, sympy.Rational, numpy integer or str
        An exact rational. Strings must have the form ``"n"`` or ``"n/d"`` (integers, optional
        sign on the numerator, ``d > 0``).
    what : str, optional
        How to name the value in error messages, for example ``"p[3]"``.

    Returns
    -------
    fractions.Fraction
        The same rational number.

    Raises
    ------
    FloatNotExact
        If ``value`` is a Python or NumPy float (or a decimal string such as ``"0.1"``); the
        message names :func:`from_floats`, the explicit conversion.
    InvalidDistribution
        If ``value`` is not a rational number at all (a bool, a SymPy symbol, ``None``,
        a malformed string, a zero denominator, a NaN or infinite float or string such as
        ``'nan'``: the message says it is no probability and where such an entry comes from).

    Examples
    --------
    >>> to_fraction("3/6"), to_fraction(2)
    (Fraction(1, 2), Fraction(2, 1))
    >>> to_fraction(0.5)
    Traceback (most recent call last):
    ...
    specproof.errors.FloatNotExact: value is the float 0.5: floats are not exact; ...
    """
    if type(value) is Fraction:
        return value
    if type(value) is str:  # the common inputs first: "n/d" strings and ints
        return _ratio(value, what)
    if type(value) is int:
        return Fraction(value)
    if isinstance(value, Fraction):
        return Fraction(value.numerator, value.denominator)
    if isinstance(value, (bool, np.bool_)):
        raise InvalidDistribution(f"{what} is the bool {value!r}, not a rational number")
    if isinstance(value, (np.timedelta64, np.datetime64)):
        raise InvalidDistribution(f"{what} is the {type(value).__name__} {value!r}, not a rational number")
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise _not_a_number(what, f"the float {value!r}", float(value))
        raise FloatNotExact(f"{what} is the float {value!r}: {_FLOAT_HINT}")
    if isinstance(value, str):
        return _ratio(value, what)
    # sympy.Rational (and Integer) expose .p and .q; sympy Floats and symbols are refused.
    if _is_sympy_rational(value):
        return Fraction(int(value.p), int(value.q))
    if _is_sympy_float(value):
        raise FloatNotExact(f"{what} is the SymPy expression {value!r}, which holds a float: {_FLOAT_HINT}")
    if isinstance(value, decimal.Decimal):
        raise InvalidDistribution(
            f"{what} is the Decimal {value!r}, not an accepted exact type; pass Fraction({value!r}) "
            "if you mean its exact decimal value"
        )
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    raise InvalidDistribution(
        f"{what} is {value!r} of type {type(value).__name__}, not an exact rational "
        "(int, Fraction, sympy.Rational or 'n/d' string)"
    )


def _ratio(value: str, what: str) -> Fraction:
    """An ``"n/d"`` (or ``"n"``) string as a Fraction (see :func:`to_fraction`)."""
    match = _RATIO.fullmatch(value)
    if match is None:
        if _looks_like_float(value):
            if value.strip().lstrip("+-").lower() in ("nan", "inf", "infinity"):  # not "1e400": a decimal
                raise _not_a_number(what, f"the string {_clip(value)!r}", float(value))
            raise FloatNotExact(
                f"{what} is the string {_clip(value)!r}, a decimal, not of the form 'n/d': whether you mean the exact "
                f"decimal or the float it prints is yours to say: pass fractions.Fraction({_clip(value)!r}) (the exact "
                "decimal) or an 'n/d' string; for the float's value, specproof.laws.rational.from_floats(values) "
                "(exact dyadic value of each float, then exact renormalization)"
            )
        raise InvalidDistribution(f"{what} is the string {_clip(value)!r}, not of the form 'n/d'")
    try:
        num = int(match.group(1))
        den = int(match.group(2)) if match.group(2) is not None else 1
    except ValueError:  # beyond Python's limit on int/str conversions (sys.get_int_max_str_digits)
        raise InvalidDistribution(f"{what} is a string of {len(value)} characters: too many digits") from None
    if den == 0:
        raise InvalidDistribution(f"{what} is {_clip(value)!r}, which has a zero denominator")
    return Fraction(num, den)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _looks_like_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_sympy_rational(value: Any) -> bool:
    return type(value).__module__.startswith("sympy") and getattr(value, "is_Rational", False) is True


def _is_sympy_float(value: Any) -> bool:
    if not type(value).__module__.startswith("sympy"):
        return False
    atoms = getattr(value, "atoms", None)
    return bool(atoms and any(a.is_Float for a in atoms()))


@dataclass(frozen=True)
class FloatPolicy:
    """How a float vector was made exact, recorded for provenance.

    Attributes
    ----------
    name : str
        ``"dyadic-renormalize"``: each float is replaced by its exact binary value
        ``m * 2**e`` (no rounding: every finite float is a dyadic rational), then the vector
        is divided by its exact sum.
    source_dtype : str
        The NumPy dtype of the floats, for example ``"float64"`` or ``"float32"``.
    float_sum : fractions.Fraction
        The exact sum of the floats before renormalization.
    atol : float
        The tolerance that was applied: ``abs(float_sum - 1) <= atol`` was required.
    """

    name: str
    source_dtype: str
    float_sum: Fraction
    atol: float

    def as_dict(self) -> dict[str, str]:
        """Return the policy as a JSON-ready dict of strings (rationals as ``"n/d"``)."""
        return {
            "atol": repr(self.atol),
            "float_sum": format_fraction(self.float_sum),
            "name": self.name,
            "source_dtype": self.source_dtype,
        }


@dataclass(frozen=True, eq=False)
class RationalVector:
    """An exact vector ``numerators[i] / denominator`` with one common denominator.

    Attributes
    ----------
    numerators : tuple of int
        Length V, Python integers (arbitrary size).
    denominator : int
        Positive Python integer. The fractions need not be in lowest terms.
    policy : FloatPolicy or None
        How floats were made exact, if they were (see :func:`from_floats`); ``None`` for
        exact inputs.

    Examples
    --------
    >>> v = as_distribution(["1/2", "1/3", "1/6"])
    >>> v.numerators, v.denominator
    ((3, 2, 1), 6)
    >>> v.fractions()
    (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    >>> v == RationalVector((6, 4, 2), 12)
    True
    """

    numerators: tuple[int, ...]
    denominator: int
    policy: FloatPolicy | None = None

    def __len__(self) -> int:
        return len(self.numerators)

    def __eq__(self, other: object) -> bool:
        """Equal iff the same rational values in the same order (policy and scale ignored)."""
        if not isinstance(other, RationalVector):
            return NotImplemented
        d1, d2 = self.denominator, other.denominator
        return len(self) == len(other) and all(a * d2 == b * d1 for a, b in zip(self.numerators, other.numerators))

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, index: int) -> Fraction:
        return Fraction(self.numerators[index], self.denominator)

    def __iter__(self) -> Iterator[Fraction]:
        d = self.denominator
        return (Fraction(n, d) for n in self.numerators)

    def fractions(self) -> tuple[Fraction, ...]:
        """Return the entries as a tuple of :class:`~fractions.Fraction` (lowest terms)."""
        d = self.denominator
        return tuple(Fraction(n, d) for n in self.numerators)

    def rescaled(self, denominator: int) -> tuple[int, ...]:
        """Return the numerators over ``denominator``, a multiple of :attr:`denominator`.

        Raises
        ------
        InvalidDistribution
            If ``denominator`` is not a positive multiple of :attr:`denominator`.
        """
        if denominator <= 0 or denominator % self.denominator:
            raise InvalidDistribution(
                f"cannot rescale to denominator {denominator}: not a multiple of {self.denominator}"
            )
        factor = denominator // self.denominator
        if factor == 1:
            return self.numerators
        return tuple(n * factor for n in self.numerators)


def as_distribution(values: Any, name: str = "p") -> RationalVector:
    """Validate an exact probability vector and put it over one common denominator.

    Parameters
    ----------
    values : RationalVector or sequence of exact rationals
        Length V >= 1; entries as accepted by :func:`to_fraction`. A :class:`RationalVector`
        (for example from :func:`from_floats`) is validated and returned as is.
    name : str, optional
        The vector's name in error messages (``"p"`` for the target, ``"q"`` for the draft).

    Returns
    -------
    RationalVector
        Numerators over the least common denominator of the entries.

    Raises
    ------
    FloatNotExact
        If an entry is a float (see :func:`from_floats`) or ``values`` is a float array.
    InvalidDistribution
        If ``values`` is empty, not one-dimensional, has a non-rational or negative entry,
        or does not sum exactly to 1. The message names the index and the values, for example
        ``"p sums to 5/6, not 1"``.

    Examples
    --------
    >>> as_distribution(["1/2", "1/3"])
    Traceback (most recent call last):
    ...
    specproof.errors.InvalidDistribution: p sums to 5/6, not 1
    """
    if isinstance(values, RationalVector):
        vec = values
    else:
        if isinstance(values, np.ndarray) and values.dtype.kind == "f":
            raise FloatNotExact(f"{name} is a {values.dtype} array: {_FLOAT_HINT}")
        if isinstance(values, (str, bytes, Mapping, AbstractSet)) or not isinstance(values, Iterable):
            raise InvalidDistribution(
                f"{name} must be a sequence of rationals (token order matters), got {type(values).__name__}"
            )
        if isinstance(values, np.ma.MaskedArray):
            raise InvalidDistribution(f"{name} is a masked array: pass the values you mean, unmasked")
        if isinstance(values, np.ndarray) and values.ndim != 1:
            raise InvalidDistribution(f"{name} has shape {values.shape}, not [V]")
        fracs = [to_fraction(v, what=f"{name}[{i}]") for i, v in enumerate(values)]
        den = math.lcm(*(f.denominator for f in fracs)) if fracs else 1
        vec = RationalVector(tuple(f.numerator * (den // f.denominator) for f in fracs), den)
    return _validated(vec, name)


def as_fractions(values: Any, name: str = "p") -> tuple[Fraction, ...]:
    """Validate an exact probability vector and return its entries as Fractions.

    The same checks and errors as :func:`as_distribution` (whose result's
    :meth:`RationalVector.fractions` this is). A tuple or list of :class:`~fractions.Fraction`
    that is already a distribution is returned as a tuple without rebuilding its entries: the
    laws of a block validate the same rows at every prefix.

    Parameters
    ----------
    values : RationalVector or sequence of exact rationals
    name : str, optional

    Returns
    -------
    tuple of Fraction, length V

    Raises
    ------
    FloatNotExact, InvalidDistribution
        As :func:`as_distribution`.

    Examples
    --------
    >>> as_fractions(["1/2", 0.5])
    Traceback (most recent call last):
    ...
    specproof.errors.FloatNotExact: p[1] is the float 0.5: floats are not exact; ...
    >>> as_fractions((Fraction(1, 2), Fraction(1, 2)))
    (Fraction(1, 2), Fraction(1, 2))
    """
    if type(values) in (tuple, list) and values and all(type(v) is Fraction for v in values):
        den = math.lcm(*(v.denominator for v in values))
        scaled = [v.numerator * (den // v.denominator) for v in values]
        if min(scaled) >= 0 and sum(scaled) == den:
            return tuple(values)
    return as_distribution(values, name).fractions()


def _validated(vec: RationalVector, name: str) -> RationalVector:
    if not isinstance(vec.numerators, tuple):
        raise InvalidDistribution(f"{name} has numerators of type {type(vec.numerators).__name__}, not a tuple of int")
    if len(vec.numerators) == 0:
        raise InvalidDistribution(f"{name} is empty: a distribution needs V >= 1 entries")
    if type(vec.denominator) is not int or vec.denominator <= 0:
        raise InvalidDistribution(f"{name} has denominator {vec.denominator!r}, not a positive int")
    for i, n in enumerate(vec.numerators):
        if type(n) is not int:
            raise InvalidDistribution(f"{name}.numerators[{i}] is {n!r} of type {type(n).__name__}, not an int")
    if min(vec.numerators) < 0:
        i = min(range(len(vec)), key=vec.numerators.__getitem__)
        value = Fraction(vec.numerators[i], vec.denominator)
        raise InvalidDistribution(f"{name}[{i}] is {_show(value)}, which is negative")
    total = sum(vec.numerators)
    if total != vec.denominator:
        raise InvalidDistribution(f"{name} sums to {_show(Fraction(total, vec.denominator))}, not 1")
    return vec


def _show(x: Fraction) -> str:
    """A rational for an error message: ``n`` or ``n/d``; very long numbers by their size."""
    if max(abs(x.numerator), x.denominator).bit_length() > 4000:
        return f"a rational with a {abs(x.numerator).bit_length()}-bit numerator and a {x.denominator.bit_length()}-bit denominator"
    return str(x.numerator) if x.denominator == 1 else format_fraction(x)


def check_atol(atol: Any) -> float | Fraction:
    """Return ``atol`` (a float, or the Fraction itself) after checking it is a real number in [0, 1).

    Raises
    ------
    InvalidDistribution
        If ``atol`` is not a real number (bools and arrays included) or lies outside [0, 1).
    """
    real: Any = atol  # numbers.Real declares no order; every real type here has one
    if isinstance(atol, (bool, np.bool_)) or not isinstance(atol, numbers.Real) or not 0 <= real < 1:
        raise InvalidDistribution(f"atol is {atol!r}; it must be a real number in [0, 1)")
    return atol if isinstance(atol, Fraction) else float(atol)


def as_array(values: Any, name: str) -> np.ndarray:
    """``np.asarray(values)``, refusing masked arrays and ragged nested lists.

    A PyTorch tensor (torch already imported by the caller; never imported here) is read as its values:
    detached (a softmax output that requires grad), on the CPU, and bfloat16 widened to float32 (exact:
    every bfloat16 is a float32), since NumPy has no bfloat16.

    Raises
    ------
    InvalidDistribution
        For a masked array (its mask would be dropped silently) or ragged input.
    """
    if isinstance(values, np.ma.MaskedArray):
        raise InvalidDistribution(f"{name} is a masked array: pass the values you mean, unmasked")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        if values.dtype == torch.bfloat16:
            values = values.to(torch.float32)
        return np.asarray(values.numpy())
    try:
        return np.asarray(values)
    except ValueError as exc:  # ragged nested lists
        raise InvalidDistribution(f"{name} is not a rectangular array: {exc}") from None


def _approx(x: Fraction) -> str:
    try:
        return repr(float(x))
    except OverflowError:
        return "more than 1.8e308"


def from_floats(values: Any, *, atol: float | Fraction = DEFAULT_FLOAT_ATOL, name: str = "x") -> RationalVector:
    """Make a float probability vector exact: exact dyadic values, then exact renormalization.

    Policy ``"dyadic-renormalize"``: every finite float is exactly ``m * 2**e`` with integer
    ``m`` (a dyadic rational), so step 1 loses nothing. Float rows (softmax outputs, n-gram
    probabilities) rarely sum to exactly 1, so step 2 divides by their exact sum ``S``; the
    result sums to exactly 1 and differs from the floats by a factor ``1/S``. The vector is
    refused if ``abs(S - 1) > atol``: a row that far from normalized is a bug upstream, not
    rounding. The returned vector records the policy, the dtype and ``S``.

    Parameters
    ----------
    values : array_like of float, shape [V]
        float16, float32 or float64 (converted to float64 first, which is exact). Wider
        floats (``np.longdouble``) are refused: they do not fit float64 exactly.
    atol : float, optional
        Largest accepted ``abs(S - 1)``, default :data:`DEFAULT_FLOAT_ATOL` (1e-3).
    name : str, optional
        The vector's name in error messages.

    Returns
    -------
    RationalVector
        Integer numerators ``N`` with denominator ``sum(N)``; ``policy`` is a
        :class:`FloatPolicy`.

    Raises
    ------
    InvalidDistribution
        If ``values`` is not a one-dimensional float array of at most 64 bits, is empty, has a
        NaN, infinite or negative entry, is all zeros, or its exact sum is off from 1 by more
        than ``atol`` (which must lie in [0, 1)).

    Notes
    -----
    The conversion uses ``np.frexp``: ``x = f * 2**k`` with ``0.5 <= f < 1``, so
    ``m = f * 2**53`` is an integer held exactly in int64, subnormals included. All
    mantissas are shifted to the smallest exponent in Python integers, so the common
    power of two cancels in the renormalization.

    Examples
    --------
    >>> v = from_floats([0.5, 0.25, 0.25])
    >>> v.fractions()
    (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
    >>> from_floats([0.1, 0.2, 0.7]).fractions()[0] == Fraction(0.1) / (Fraction(0.1) + Fraction(0.2) + Fraction(0.7))
    True
    """
    arr = as_array(values, name)
    if arr.dtype.kind != "f":
        raise InvalidDistribution(
            f"{name} has dtype {arr.dtype}, not a float dtype; use as_distribution for exact values"
        )
    if arr.dtype.itemsize > 8:
        raise InvalidDistribution(
            f"{name} has dtype {arr.dtype}, wider than float64: its values are not all exact in "
            "float64; convert it yourself (and say how) or pass exact rationals"
        )
    if arr.ndim != 1:
        raise InvalidDistribution(f"{name} has shape {arr.shape}, not [V]")
    atol = check_atol(atol)
    if arr.size == 0:
        raise InvalidDistribution(f"{name} is empty: a distribution needs V >= 1 entries")
    x = arr.astype(np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidDistribution(f"{name}[{i}] is {float(x[i])!r}, not a finite number")
    if (x < 0).any():
        i = int(np.argmax(x < 0))
        raise InvalidDistribution(f"{name}[{i}] is {float(x[i])!r}, which is negative")
    frac, exp = np.frexp(x)
    mant = np.ldexp(frac, 53).astype(np.int64)  # exact: |frac| < 1 has 53 significant bits
    exp = exp.astype(np.int64) - 53
    nonzero = mant != 0
    if not nonzero.any():
        raise InvalidDistribution(f"{name} is all zeros: it cannot sum to 1")
    emin = int(exp[nonzero].min())
    shift = np.where(nonzero, exp - emin, 0)
    nums = tuple(m << s for m, s in zip(mant.tolist(), shift.tolist()))
    total = sum(nums)
    float_sum = Fraction(total, 1 << -emin) if emin < 0 else Fraction(total << emin)
    if abs(float_sum - 1) > atol:
        raise InvalidDistribution(
            f"{name} sums to {_approx(float_sum)} (exactly {_show(float_sum)}), off from 1 by "
            f"{_approx(abs(float_sum - 1))}, more than atol={atol!r}; refusing to renormalize"
        )
    policy = FloatPolicy("dyadic-renormalize", str(arr.dtype), float_sum, float(atol))
    return RationalVector(nums, total, policy)
