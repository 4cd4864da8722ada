"""Rationals as text: the one number format of check's lines, transcripts and the tracer's messages.

Moved here from :mod:`specproof.report.transcript` (which still exports these names) so that the
layers below the report (the tracer's verdicts) format numbers without importing it.
"""

from __future__ import annotations

import decimal
import hashlib
import math
from fractions import Fraction
from typing import Any

from specproof import checker

__all__ = ["column_texts", "exact_text", "number_text", "show"]

_DIGITS = 12
#: Rationals up to this many bits are reduced before they are shown (a gcd of such numbers is
#: cheap); larger ones are shown by their leading digits as they are.
REDUCE_BITS = 20000
_SHORT = 24


def show(value: str | Fraction | checker.Ratio) -> str:
    """A rational for people: exact ``n/d`` if short, else 12 significant digits and "…".

    Huge numbers are never printed in full (nor converted to decimal text): their digits come
    from a few hundred leading bits, so showing costs time linear in their size.

    Examples
    --------
    >>> show("1/3"), show("0/1"), show("1/1"), show("0x3/0x4")
    ('1/3', '0', '1', '3/4')
    >>> show(Fraction(1, 3 * 10**30)), show(Fraction(10**30, 3 * 10**30 + 1))
    ('3.33333333333e-31…', '0.333333333333…')
    >>> show(1 - Fraction(1, 2**53))  # near 1: the distance from 1, not 1.00000000000
    '1 − 1/9007199254740992'
    """
    num, den = _parts(value)
    if num == 0:
        return "0"
    if max(num.bit_length(), den.bit_length()) <= REDUCE_BITS:  # the checker keeps values unreduced
        common = math.gcd(num, den)
        num, den = num // common, den // common
    if num != den and abs(num - den) * 10**_DIGITS < den:  # would round to 1.00000000000
        return f"1 {'+' if num > den else '−'} {show(checker.Ratio(abs(num - den), den))}"
    if num.bit_length() <= 80 and den.bit_length() <= 80:
        x = Fraction(num, den)
        if x.denominator == 1:
            return str(x.numerator)
        text = f"{x.numerator}/{x.denominator}"
        if len(text) <= _SHORT:
            return text
    return _digits(value) + "…"


#: Integers up to this many bits are written in decimal by :func:`exact_text` (well below Python's
#: limit of 4300 digits on int-to-str conversion), longer ones in hexadecimal.
EXACT_DECIMAL_BITS = 4000


def exact_text(value: str | Fraction | checker.Ratio) -> str:
    """A rational exactly, as the checker reads it: ``"n/d"`` reduced, in decimal while both
    numbers have at most :data:`EXACT_DECIMAL_BITS` bits, else ``"0x.../0x..."`` (hexadecimal:
    linear time, no digit limit). Never fails.

    >>> exact_text(Fraction(2, 4)), exact_text(Fraction(1, 2 ** 5000))[:12]
    ('1/2', '0x1/0x100000')
    """
    x = Fraction(*_parts(value))
    num, den = x.numerator, x.denominator
    if max(num.bit_length(), den.bit_length()) <= EXACT_DECIMAL_BITS:
        return f"{num}/{den}"
    return f"{num:#x}/{den:#x}"


#: Longest exact text :func:`number_text` writes in full after the decimals (longer: a digest).
NUMBER_TEXT_EXACT_CHARS = 100


def number_text(value: str | Fraction | checker.Ratio) -> str:
    """A rational in a message: its decimal approximation first (6 significant digits), then the
    exact value in parentheses, or, when that is long, its length and a digest.

    The one number format of ``specproof check``'s lines and of :mod:`specproof.testing`'s
    messages. Never fails, whatever the size: the digits come from the leading bits (no
    conversion of a huge integer to decimal text).

    Parameters
    ----------
    value : Fraction, checker.Ratio or str
        A rational (an ``"n/d"`` text may be hexadecimal, as the checker reads it).

    Returns
    -------
    str
        A short integer as such (``"0"``, ``"1"``); otherwise ``"d (n/d)"``, or ``"d (exact: N
        characters, sha256 h...)"`` where the exact text (:func:`exact_text`) is longer than
        :data:`NUMBER_TEXT_EXACT_CHARS`.

    Examples
    --------
    >>> number_text(Fraction(1, 2)), number_text(Fraction(1, 3)), number_text(Fraction(0)), number_text("4/2")
    ('0.5 (1/2)', '0.333333 (1/3)', '0', '2')
    >>> number_text(Fraction(1, 67108864))
    '1.49012e-08 (1/67108864)'
    >>> number_text(Fraction(1, 3 ** 5000))
    '2.47586e-2386 (exact: 1988 characters, sha256 ab116d2432fe8a08...)'

    A value that rounds to an integer without being one is written as its distance from it:

    >>> number_text(Fraction(16777215, 16777216))
    '1 - 5.96046e-08 (16777215/16777216)'
    """
    exact = exact_text(value)
    short = len(exact) <= NUMBER_TEXT_EXACT_CHARS
    if short and exact.endswith("/1"):
        return exact[:-2]
    digits = decimal.Decimal(_digits(exact, 6))  # correctly rounded; written as Python writes a float
    approx = (
        f"{float(digits):.6g}"
        if decimal.Decimal("1e-300") < abs(digits) < decimal.Decimal("1e300")
        else format(digits, ".6g")
    )
    if digits == digits.to_integral_value() and abs(digits) < 100:  # 1 - 2^-24 is not "1": its distance
        num, den = _parts(exact)
        k = int(digits)
        off = Fraction(num - k * den, den)
        approx = f"{k} {'-' if off < 0 else '+'} {number_text(abs(off)).split(' (')[0]}"
    if short:
        return f"{approx} ({exact})"
    digest = hashlib.sha256(exact.encode()).hexdigest()[:16]
    return f"{approx} (exact: {len(exact)} characters, sha256 {digest}...)"


def column_texts(values: list[Any]) -> list[str]:
    """One number format for a whole column: exact ``n/d`` if every value is short, else
    decimals for all (12 digits, "…" where rounded; near 1 as the distance from 1).

    >>> column_texts([Fraction(1, 2), Fraction(1, 3)]), column_texts([Fraction(1, 2), Fraction(1, 3**60)])
    (['1/2', '1/3'], ['0.5', '2.35898248759e-29…'])
    """
    texts = [show(v) for v in values]
    if all("…" not in t for t in texts):
        return texts
    out = []
    for v, text in zip(values, texts):
        if "…" in text or text.startswith("1 "):
            out.append(text)
            continue
        x = Fraction(*_parts(v))
        digits = _digits(x)
        out.append(digits if Fraction(decimal.Decimal(digits)) == x else digits + "…")
    return out


def _parts(value: str | Fraction | checker.Ratio) -> tuple[int, int]:
    """(numerator, denominator) of a Fraction, a checker Ratio or an "n/d" text (hex allowed)."""
    if isinstance(value, Fraction):
        return value.numerator, value.denominator
    if isinstance(value, checker.Ratio):
        return value.num, value.den
    text = str(value)
    if "/" not in text:
        return int(text), 1
    num, den = (int(x, 16) if x.lstrip("-").startswith("0x") else int(x) for x in text.split("/"))
    return num, den


def _digits(value: str | Fraction | checker.Ratio, places: int = _DIGITS) -> str:
    """``value`` to ``places`` significant digits, correctly rounded for numbers below 2^200
    bits of size, and from the leading 200 bits of larger ones (any size, linear time)."""
    num, den = _parts(value)
    negative, num = num < 0, abs(num)
    if num == 0:
        return "0"
    shift = 0
    if max(num.bit_length(), den.bit_length()) > 400:  # keep the leading bits: value = q * 2^-shift
        shift = 200 - (num.bit_length() - den.bit_length())
        num, den = (num << shift if shift > 0 else num >> -shift) // den, 1
    with decimal.localcontext() as ctx:
        ctx.prec = places + 10 if shift else places
        x = decimal.Decimal(num) / decimal.Decimal(den)
        if shift:
            x = x * decimal.Decimal(2) ** (-shift)
            ctx.prec = places
            x = +x
        text = str(x).replace("E", "e")
    return "-" + text if negative else text
