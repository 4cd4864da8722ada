"""Outcome trees: the law of one verification position as a finite tree of primitive events.

A verifier's randomness at one position is a short program: draw the draft token from a row,
draw a coin and compare it with a threshold, draw a token from a residual row, or take a
deterministic branch. This module writes that program's *outcomes* as data: a tree whose every
branch carries one primitive event and its exact conditional probability (a
:class:`~fractions.Fraction`), and whose leaves name the emitted token and whether the drafted
token was accepted. Summing the leaves' path masses by output gives the exact emitted law.

The primitives are few on purpose (the kernel grows by primitives, not by rules):

============== ==============================================================================
``Draw``       draw a token from a named row: ``P = row[t] / sum(row)``
``Coin``       a uniform coin ``u`` under a named :class:`CoinModel` falls in an interval whose
               ends are thresholds re-derived from the rows (a ratio ``a[x]/b[x]``, a
               cumulative sum of a normalized row, a ratio of two rows' masses, or a
               constant), each end with ``<``/``<=``
``Choice``     a deterministic branch whose condition is re-derived from the rows (always; the
               row's argmax is / is not a token): probability 1 or 0
``RaceGiven``  the winner of an exponential race ``argmax w_i / E_i`` on one row, given the
               winner of an earlier race on another row that shared the same noise ``E_i``
============== ==============================================================================

Each primitive's :meth:`probability` is a pure function of the primitive and the rows, so a
small checker can re-derive every branch from the rows alone; :meth:`OutcomeTree.rederive`
does exactly that (untrusted here; a trusted checker can do the same with its own code).

Coin models (measured, see the project's NOTES: PyTorch's ``torch.rand`` in float32 returns
multiples of 2^-24 in [0, 1), in float64 multiples of 2^-53): with a grid coin the law stays
exact, as a count of grid points. For ``0 <= t < 1`` on the float32 grid,
``P(u < t) = ceil(t 2^24) / 2^24`` and ``P(u <= t) = (floor(t 2^24) + 1) / 2^24``.

References
----------
Leviathan et al. 2023, Algorithm 1 and Appendix A.1 (the textbook step as coin and residual
draw); Chen et al. 2023, Algorithm 2. The exponential race: ``argmax_i w_i / E_i`` with ``E_i``
i.i.d. Exp(1) picks ``i`` with probability ``w_i / sum(w)`` (the exponential-clock
construction; it is how ``torch.multinomial`` samples).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from specproof.checker import RECIPE_ROWS
from specproof.errors import SpecProofError

if TYPE_CHECKING:
    from specproof.laws.block import Position

__all__ = [
    "CoinModel",
    "CONTINUOUS",
    "FLOAT32",
    "FLOAT64",
    "FLOAT32_OPEN_CLOSED",
    "coin_model",
    "Bound",
    "argmax",
    "block_tree",
    "Draw",
    "Coin",
    "Choice",
    "RaceGiven",
    "Leaf",
    "Branch",
    "Node",
    "OutcomeTree",
    "Rows",
    "Builder",
    "race_given",
    "InvalidTree",
]

Row = tuple[Fraction, ...]

#: A leaf's output: a token id (an int) in a position's tree, the emitted block (a tuple of
#: ids) in a block's tree (:func:`block_tree`). ``OutcomeTree[int]`` is a position's tree,
#: ``OutcomeTree[tuple[int, ...]]`` a block's; only a position's tree has :meth:`OutcomeTree.law`.
Block = tuple[int, ...]
Out = TypeVar("Out", int, Block)


class InvalidTree(SpecProofError):
    """An outcome tree is inconsistent: a branch's stored probability differs from the one its
    primitive gives on the rows, a node's branches do not sum to 1, or a row is missing."""


# --------------------------------------------------------------------------- coin models


@dataclass(frozen=True)
class CoinModel:
    """The law of the uniform coin ``u`` a verifier compares with a threshold.

    Attributes
    ----------
    name : str
        ``"continuous"`` (U[0, 1)), ``"float32"`` (the grid k/2^24, k = 0..2^24-1),
        ``"float64"`` (k/2^53), ``"float32-(0,1]"`` (k/2^24, k = 1..2^24, as ``1 - rand()``
        gives), ``"float64-(0,1]"``, or ``"fixed:V"`` (the coin always equals the rational V).
    bits : int or None
        For a grid, b: the points are multiples of 2^-b. None otherwise.
    open_closed : bool
        For a grid, True for the points 1..2^b (the interval (0, 1]) instead of 0..2^b - 1.
    value : Fraction or None
        For a fixed coin, its value in [0, 1].

    Notes
    -----
    A continuous coin on (0, 1] has the same law as on [0, 1) (a single point has mass 0), so
    there is one continuous model. Thresholds may lie outside [0, 1] (``p/q > 1``); the
    probabilities are clamped by counting, never by a float.
    """

    name: str
    bits: int | None = None
    open_closed: bool = False
    value: Fraction | None = None

    def below(self, t: Fraction, strict: bool) -> Fraction:
        """``P(u < t)`` if ``strict`` else ``P(u <= t)``, exactly.

        Parameters
        ----------
        t : Fraction
            Any rational threshold.
        strict : bool
            True for ``<``, False for ``<=``.

        Returns
        -------
        Fraction
            In [0, 1].

        Examples
        --------
        >>> FLOAT32.below(Fraction(0), strict=False) == Fraction(1, 2**24)
        True
        >>> FLOAT32.below(Fraction(1, 3), strict=True) == Fraction(5592406, 2**24)
        True
        >>> CONTINUOUS.below(Fraction(3, 2), strict=True)
        Fraction(1, 1)
        """
        if self.value is not None:
            return Fraction(1) if (self.value < t if strict else self.value <= t) else Fraction(0)
        if self.bits is None:
            return min(Fraction(1), max(Fraction(0), t))
        n = 1 << self.bits
        lo, hi = (1, n) if self.open_closed else (0, n - 1)
        # grid points k/n with lo <= k <= hi; count those with k < t n (strict) or k <= t n.
        tn = t * n
        top = (math.ceil(tn) - 1) if strict else math.floor(tn)  # the largest admissible k
        return Fraction(max(0, min(hi, top) - lo + 1), n)

    def interval(self, lower: tuple[Fraction, bool] | None, upper: tuple[Fraction, bool] | None) -> Fraction:
        """``P(lower < u < upper)`` with each end strict or not; ``None`` for no bound.

        ``lower = (a, strict)`` means ``a < u`` (strict) or ``a <= u``; ``upper = (b, strict)``
        means ``u < b`` or ``u <= b``. Computed as ``P(u ~ b) - P(u ~' a)`` where ``~'`` is
        the complement of the lower comparison, and 0 for an empty interval.
        """
        top = Fraction(1) if upper is None else self.below(upper[0], upper[1])
        if lower is None:
            return top
        # P(u below the lower end) = P(u <= a) if the lower end is strict (a < u), else P(u < a).
        under = self.below(lower[0], not lower[1])
        return max(Fraction(0), top - under)

    def as_dict(self) -> dict[str, str]:
        """The model as JSON-ready data: ``{"coin": name}``."""
        return {"coin": self.name}


CONTINUOUS = CoinModel("continuous")
FLOAT32 = CoinModel("float32", bits=24)
FLOAT64 = CoinModel("float64", bits=53)
FLOAT32_OPEN_CLOSED = CoinModel("float32-(0,1]", bits=24, open_closed=True)
_FLOAT64_OPEN_CLOSED = CoinModel("float64-(0,1]", bits=53, open_closed=True)
_COINS = {c.name: c for c in (CONTINUOUS, FLOAT32, FLOAT64, FLOAT32_OPEN_CLOSED, _FLOAT64_OPEN_CLOSED)}


def coin_model(name: str) -> CoinModel:
    """Look up a coin model by name: one of ``continuous``, ``float32``, ``float64``,
    ``float32-(0,1]``, ``float64-(0,1]``, or ``fixed:V`` with V a rational in [0, 1].

    Parameters
    ----------
    name : str

    Returns
    -------
    CoinModel

    Raises
    ------
    SpecProofError
        For an unknown name or a fixed value outside [0, 1].

    Examples
    --------
    >>> coin_model("fixed:0").below(Fraction(0), strict=False)
    Fraction(1, 1)
    >>> coin_model("float32") is FLOAT32
    True
    """
    if isinstance(name, str) and name.startswith("fixed:"):
        from specproof.laws.rational import to_fraction

        v = to_fraction(name[len("fixed:") :], what="fixed coin value")
        if not 0 <= v <= 1:
            raise SpecProofError(f"fixed coin value is {v}, not in [0, 1]")
        return CoinModel(f"fixed:{v}", value=v)
    if name not in _COINS:
        raise SpecProofError(f"unknown coin model {name!r}; known: {', '.join(_COINS)}, fixed:V")
    return _COINS[name]


# --------------------------------------------------------------------------- primitives


def argmax(row: Row) -> int:
    """The index of the largest entry of ``row``, ties to the smallest id (the recipe
    ``one-hot-argmax`` and the events ``argmax-is``, ``argmax-is-not``).

    >>> argmax((Fraction(1, 4), Fraction(3, 8), Fraction(3, 8)))
    1
    """
    return row.index(max(row))


def _row(rows: Mapping[str, Row], name: str) -> Row:
    if name not in rows:
        raise InvalidTree(f"the tree refers to row {name!r}, which it does not list")
    return rows[name]


class Rows(dict[str, Row]):
    """The rows of a tree (a dict name -> tuple of Fraction) that remembers each row's total and
    cumulative sums, so that re-deriving V branches costs O(V), not O(V^2). Treat as read-only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cumulative: dict[str, list[Fraction]] = {}
        self._argmax: dict[str, int] = {}

    def argmax(self, name: str) -> int:
        """The argmax of row ``name``, ties to the smallest id (remembered)."""
        if name not in self._argmax:
            row = _row(self, name)
            self._argmax[name] = argmax(row)
        return self._argmax[name]

    def cumulative(self, name: str) -> list[Fraction]:
        """``[r[0], r[0] + r[1], ...]`` for the row ``name`` (its last entry is the total)."""
        if name not in self._cumulative:
            acc, out = Fraction(0), []
            for x in _row(self, name):
                acc += x
                out.append(acc)
            self._cumulative[name] = out
        return self._cumulative[name]


def _cumulative(rows: Mapping[str, Row], name: str, i: int) -> Fraction:
    """sum(rows[name][:i + 1]); i = -1 for the total."""
    if isinstance(rows, Rows):
        return rows.cumulative(name)[i]
    row = _row(rows, name)
    return sum(row if i == -1 else row[: i + 1], Fraction(0))


@dataclass(frozen=True)
class Bound:
    """One end of a coin interval, re-derived from the rows.

    Attributes
    ----------
    source : tuple
        ``("ratio", a, b, x)``: ``a[x] / b[x]`` (b[x] > 0); ``("cdf", r, i)``: the cumulative
        normalized row ``sum(r[:i+1]) / sum(r)``; ``("masses", a, b)``: ``sum(a) / sum(b)``
        (sum(b) > 0); ``("const", v)``: the rational v; ``("float-ratio", a, b, x, dtype)``:
        ``fl(a[x] / b[x])`` rounded in ``dtype`` (an overflow counts as 2, above every coin);
        ``("float-product", a, b, x, dtype, coin, cmp)``: the t with ``u < t`` exactly for the
        grid coins u with ``fl(u * b[x]) cmp a[x]`` (used with ``strict`` True for the accept
        side and False for the reject side); ``("rounded-coin-ratio", a, b, x, dtype, coin, cmp)``
        and ``("rounded-coin-product", ...)``: the same for ``fl(u) cmp fl(a[x] / b[x])`` and
        ``fl(fl(u) * b[x]) cmp a[x]``, the coin rounded to ``dtype`` first
        (:func:`rounded_coin_threshold`).
    strict : bool
        For a lower end, True means ``t < u``; for an upper end, True means ``u < t``.
    """

    source: tuple[Any, ...]
    strict: bool

    def value(self, rows: Mapping[str, Row]) -> Fraction:
        """The threshold's value on ``rows``."""
        kind = self.source[0]
        a: str  # row names
        b: str
        x: int  # a token id
        if kind == "ratio":
            _, a, b, x = self.source
            den = _row(rows, b)[x]
            if den == 0:
                raise InvalidTree(f"ratio threshold {a}[{x}]/{b}[{x}] divides by 0")
            return _row(rows, a)[x] / den
        if kind == "cdf":
            _, r, i = self.source
            total = _cumulative(rows, r, -1)
            if total == 0:
                raise InvalidTree(f"cdf threshold on row {r!r}, which has mass 0")
            return _cumulative(rows, r, i) / total
        if kind == "masses":
            _, a, b = self.source
            den = _cumulative(rows, b, -1)
            if den == 0:
                raise InvalidTree(f"masses threshold sum({a})/sum({b}) divides by 0")
            return _cumulative(rows, a, -1) / den
        if kind == "const":
            return Fraction(self.source[1])
        if kind == "float-ratio":
            _, a, b, x, dtype = self.source
            return _float_ratio(_row(rows, a)[x], _row(rows, b)[x], dtype)
        if kind == "float-product":
            _, a, b, x, dtype, coin, comparison = self.source
            return _float_product_threshold(_row(rows, a)[x], _row(rows, b)[x], dtype, coin_model(coin), comparison)
        if kind in ("rounded-coin-ratio", "rounded-coin-product"):
            _, a, b, x, dtype, coin, comparison = self.source
            return rounded_coin_threshold(
                _row(rows, a)[x], _row(rows, b)[x], dtype, coin_model(coin), comparison, kind.rpartition("-")[2]
            )
        raise InvalidTree(f"unknown threshold source {self.source!r}")


def _float_ratio(a: Fraction, b: Fraction, dtype: str) -> Fraction:
    """``fl(a / b)`` in ``dtype``; an overflow (``+inf``) is returned as 2, above every coin."""
    from specproof.laws.floats import FORMATS

    if b == 0:
        raise InvalidTree(f"float ratio threshold {a}/{b} divides by 0")
    value = FORMATS[dtype].div(a, b)
    if value == math.inf:
        return Fraction(2)
    assert isinstance(value, Fraction)  # finite: a row's entries are >= 0, so fl(a / b) is not -inf
    return value


@functools.lru_cache(maxsize=1 << 16)
def _float_product_threshold(a: Fraction, b: Fraction, dtype: str, coin: CoinModel, comparison: str) -> Fraction:
    """The threshold t with ``{u : u < t}`` = ``{u : fl(u * b) < a}`` (or ``<=``) on the coin's grid.

    The product is rounded in the wider of ``dtype`` and the coin's own format (float32 for a
    24-bit grid, float64 for 53 bits), as PyTorch and NumPy promote; rounding is monotone, so the
    coins that pass are the grid's first K points. K is found from the exact estimate
    ``a n / b`` by galloping away from it and bisecting the last gap, on exact products: a few
    roundings where the estimate is close (the rounding moves the boundary by about
    ``ulp(a) n / b`` grid points), never more than twice a bisection's. Cached: the members of
    the float-ideal family that differ only in their residual share their thresholds.
    """
    from specproof.laws.floats import FORMATS

    if coin.bits is None:
        raise InvalidTree(f"the product test fl(u * q) {comparison} p needs a float-grid coin, not {coin.name}")
    wide = max(FORMATS[dtype], FORMATS["float32" if coin.bits <= 24 else "float64"], key=lambda f: f.precision)
    n = 1 << coin.bits
    lo, hi = (1, n) if coin.open_closed else (0, n - 1)

    def fails(k: int) -> bool:  # False for k < K, True from K on (hi + 1 stands for "none fails")
        if k > hi:
            return True
        prod = wide.mul(Fraction(k, n), b)
        return not (prod < a if comparison == "<" else prod <= a)

    guess = lo if b == 0 else min(max(math.floor(a * n / b), lo), hi + 1)
    step = 1
    if fails(guess):  # K <= guess: gallop down to a passing k (or lo)
        top = guess
        while top - step >= lo and fails(top - step):
            top, step = top - step, step * 2
        bottom = max(top - step, lo - 1)  # passes, or lo - 1 (below the grid)
    else:  # K > guess: gallop up to a failing k (hi + 1 fails)
        bottom = guess
        while not fails(min(bottom + step, hi + 1)):
            bottom, step = bottom + step, step * 2
        top = min(bottom + step, hi + 1)
    while top - bottom > 1:  # fails(top), and bottom passes or is lo - 1
        mid = (bottom + top) // 2
        if fails(mid):
            top = mid
        else:
            bottom = mid
    return Fraction(top, n)  # u < top / n holds exactly for the passing grid points


@functools.lru_cache(maxsize=1 << 16)
def rounded_coin_threshold(
    a: Fraction, b: Fraction, dtype: str, coin: CoinModel, comparison: str, test: str
) -> Fraction:
    """The grid point t with ``{u : u < t}`` = the grid coins u that pass the test with the coin
    rounded to ``dtype`` first (NumPy >= 2 meeting a Python-float coin with a float32 value, NEP 50).

    Parameters
    ----------
    a, b : Fraction
        p(x) and q(x) as the code holds them (floats of ``dtype``).
    dtype : str
        The format of the test.
    coin : CoinModel
        A grid coin.
    comparison : {"<", "<="}
    test : {"ratio", "product"}
        ``fl(u) cmp fl(a / b)`` (an overflow is +inf: every coin passes; b > 0), or
        ``fl(fl(u) * b) cmp a``.

    Returns
    -------
    Fraction
        t = K / 2^bits, K the index after the last passing grid point (rounding is monotone, so
        the passing coins are the grid's first ones), found by bisection.
    """
    from specproof.laws.floats import FORMATS

    if coin.bits is None:
        raise InvalidTree(f"a rounded coin is a grid coin, not {coin.name}")
    fmt = FORMATS[dtype]
    if test == "ratio":
        if b == 0:
            raise InvalidTree(f"rounded-coin ratio threshold {a}/{b} divides by 0")
        right = fmt.div(a, b)

        def passes(u: Fraction) -> bool:
            return right == math.inf or (fmt.round(u) < right if comparison == "<" else fmt.round(u) <= right)
    else:

        def passes(u: Fraction) -> bool:
            prod = fmt.mul(fmt.round(u), b)
            return prod < a if comparison == "<" else prod <= a

    return first_failing(coin.bits, coin.open_closed, passes)


def first_failing(bits: int, open_closed: bool, passes: Callable[[Fraction], bool]) -> Fraction:
    """K / 2^bits, K the index after the last grid coin k / 2^bits with ``passes`` (monotone: the passing
    coins are the grid's first ones; the grid is k = 0 .. 2^bits - 1, or 1 .. 2^bits when ``open_closed``),
    found by bisection, so that ``u < K / 2^bits`` holds exactly for the passing coins."""
    n = 1 << bits
    first, last = (1, n + 1) if open_closed else (0, n)  # the first failing k lies in [first, last]
    while first < last:
        mid = (first + last) // 2
        if passes(Fraction(mid, n)):
            first = mid + 1
        else:
            last = mid
    return Fraction(first, n)


@dataclass(frozen=True)
class Draw:
    """Draw token ``token`` from the row named ``row``: ``P = row[token] / sum(row)``."""

    row: str
    token: int

    def probability(self, rows: Mapping[str, Row]) -> Fraction:
        r = _row(rows, self.row)
        total = _cumulative(rows, self.row, -1)
        if total == 0:
            raise InvalidTree(f"draw from row {self.row!r}, which has mass 0")
        return r[self.token] / total


@dataclass(frozen=True)
class Coin:
    """The coin ``u`` (law :attr:`model`) lies between :attr:`lower` and :attr:`upper`."""

    model: CoinModel
    lower: Bound | None = None
    upper: Bound | None = None

    def probability(self, rows: Mapping[str, Row]) -> Fraction:
        lo = None if self.lower is None else (self.lower.value(rows), self.lower.strict)
        hi = None if self.upper is None else (self.upper.value(rows), self.upper.strict)
        return self.model.interval(lo, hi)


@dataclass(frozen=True)
class Choice:
    """A deterministic branch: probability 1 if its condition holds on the rows, else 0.

    Conditions: ``("always",)``; ``("argmax-is", r, t)`` and ``("argmax-is-not", r, t)``
    (the argmax of row r, ties to the smallest id, is / is not t); ``("zero", r, t)`` and
    ``("positive", r, t)`` (``r[t] == 0`` / ``> 0``). :attr:`why` is free text for people.
    """

    condition: tuple[Any, ...]
    why: str = ""

    def probability(self, rows: Mapping[str, Row]) -> Fraction:
        kind = self.condition[0]
        if kind == "always":
            holds = True
        elif kind in ("argmax-is", "argmax-is-not"):
            _, r, t = self.condition
            if isinstance(rows, Rows):
                top = rows.argmax(r)
            else:
                top = argmax(_row(rows, r))
            holds = (top == t) == (kind == "argmax-is")
        elif kind in ("zero", "positive"):
            _, r, t = self.condition
            holds = (_row(rows, r)[t] == 0) == (kind == "zero")
        else:
            raise InvalidTree(f"unknown choice condition {self.condition!r}")
        return Fraction(int(holds))


@dataclass(frozen=True)
class RaceGiven:
    """The race ``argmax_i second[i] / E_i`` is won by :attr:`winner`, given that the race
    ``argmax_i first[i] / E_i`` on the same noise ``E`` was won by :attr:`given`.

    Probability: :func:`race_given` on the two rows.
    """

    first: str
    given: int
    second: str
    winner: int

    def probability(self, rows: Mapping[str, Row]) -> Fraction:
        return race_given(_row(rows, self.first), self.given, _row(rows, self.second), self.winner)


Primitive = Draw | Coin | Choice | RaceGiven


def _race_joint(a: Row, x: int, b: Row, y: int) -> Fraction:
    """P(argmax a/E = x and argmax b/E = y) for i.i.d. E_i ~ Exp(1), a[x] > 0, b[y] > 0.

    Write T_i = E_i. The first race is won by x iff T_i > (a_i/a_x) T_x for all i != x; the second
    by y iff T_i > (b_i/b_y) T_y for all i != y. For x == y: P = 1 / sum_i max(a_i/a_x, b_i/b_x)
    (integrate e^{-t sum_i c_i}). For x != y, substitute T_x = a_x s, T_y = b_y s lam: the joint
    density integrates, over s, to a_x b_y / K(lam)^2 with K(lam) = a_x + b_y lam + sum_{i != x, y}
    max(a_i, b_i lam), piecewise linear in lam, for lam > (a_y / b_y) and also T_x > b_x lam s
    (the second race not won by x): lam < a_x / b_x when b_x > 0. Each linear piece c + d lam
    integrates in closed form: int d lam / (c + d lam)^2 = 1/(d (c + d lo)) - 1/(d (c + d hi)).
    """
    if x == y:
        total = Fraction(0)
        for i in range(len(a)):
            total += max(a[i] / a[x], b[i] / b[y])
        return 1 / total
    lo = a[y] / b[y]  # the first race is not won by y: T_y > (a_y/a_x) T_x
    hi = a[x] / b[x] if b[x] > 0 else None  # the second race is not won by x
    if hi is not None and hi <= lo:
        return Fraction(0)
    others = [i for i in range(len(a)) if i not in (x, y)]
    cuts = sorted(
        {a[i] / b[i] for i in others if b[i] > 0 and a[i] > 0 and a[i] / b[i] > lo and (hi is None or a[i] / b[i] < hi)}
    )
    total = Fraction(0)
    for left, right in zip([lo, *cuts], [*cuts, hi]):  # the pieces between the edges lo, *cuts, hi
        probe = left + 1 if right is None else (left + right) / 2
        c, d = a[x], b[y]
        for i in others:
            if b[i] * probe > a[i]:
                d += b[i]
            else:
                c += a[i]
        upper = Fraction(0) if right is None else 1 / (d * (c + d * right))
        total += 1 / (d * (c + d * left)) - upper
    return a[x] * b[y] * total


def race_given(first: Row, given: int, second: Row, winner: int) -> Fraction:
    """P(the race on ``second`` is won by ``winner`` | the race on ``first`` was won by ``given``),
    both races ``argmax_i w_i / E_i`` sharing the same i.i.d. Exp(1) noise E.

    Parameters
    ----------
    first, second : tuple of Fraction, length V
        Nonnegative weights (need not be normalized); ``first[given] > 0``.
    given, winner : int
        Token ids.

    Returns
    -------
    Fraction
        Exact; 0 when ``second[winner] == 0``.

    Notes
    -----
    With independent noise the answer would be ``second[winner] / sum(second)``; sharing the
    noise couples the two winners (a token that won the first race is likely to win the
    second), which is the "race-reuse" fault. See :func:`_race_joint` for the integral.

    Examples
    --------
    >>> half = (Fraction(1, 2), Fraction(1, 2))
    >>> race_given(half, 0, half, 0)
    Fraction(1, 1)
    >>> race_given((Fraction(1), Fraction(1), Fraction(0)), 0, (Fraction(0), Fraction(1), Fraction(1)), 1)
    Fraction(1, 3)

    (Given E_0 < E_1, the second race is won by 1 iff E_1 < E_2: P(E_0 < E_1 < E_2) / P(E_0 < E_1)
    = (1/6) / (1/2).)
    """
    if first[given] <= 0:
        raise InvalidTree(f"race on the first row cannot be won by {given}: its weight is 0")
    if second[winner] <= 0:
        return Fraction(0)
    p_given = first[given] / sum(first, Fraction(0))
    return _race_joint(first, given, second, winner) / p_given


# --------------------------------------------------------------------------- the tree


@dataclass(frozen=True)
class Leaf(Generic[Out]):
    """An outcome: the verifier emits ``output`` (a token id; ``V`` or more marks an
    out-of-range id a faulty rule can produce) and ``accepted`` says whether the drafted
    token was accepted (the block continues after it).

    In a block's tree (:func:`block_tree`) ``output`` is the emitted block (a tuple of ids) and
    ``accepted`` the number of accepted drafts (an int; a bool in a position's tree)."""

    output: Out
    accepted: int


@dataclass(frozen=True)
class Branch(Generic[Out]):
    """One branch: its primitive event and its exact probability given the parent node."""

    event: Primitive
    probability: Fraction
    child: Node[Out] | Leaf[Out]


@dataclass(frozen=True)
class Node(Generic[Out]):
    """A step of the verifier (``label`` says which); its branches' probabilities sum to 1.

    Branches of probability 0 are left out."""

    label: str
    branches: tuple[Branch[Out], ...]


class Builder:
    """Base of the tree builders (:mod:`specproof.rules.audit`, :mod:`specproof.laws.variants`): a branch's
    probability always comes from its primitive on :attr:`rows`, and a branch of probability 0
    is left out (its child, which may be given as a thunk, is then never built)."""

    rows: Mapping[str, Row]

    def branch(
        self, event: Primitive, child: Node[Out] | Leaf[Out] | Callable[[], Node[Out] | Leaf[Out]]
    ) -> Branch[Out] | None:
        """The branch, or None if its probability is 0."""
        prob = event.probability(self.rows)
        if not prob:
            return None
        return Branch(event, prob, child() if callable(child) else child)

    def node(self, label: str, branches: Iterable[Branch[Out] | None]) -> Node[Out]:
        """A node of the branches that are not None."""
        return Node(label, tuple(b for b in branches if b is not None))


@dataclass(frozen=True)
class OutcomeTree(Generic[Out]):
    """The outcomes of one verification position, with the rows its primitives read.

    Attributes
    ----------
    rows : dict of str -> tuple of Fraction
        Every row a primitive names (``"target"``, ``"draft"``, ``"proposal"``, ``"residual"``
        ...), each of length V.
    derivations : dict of str -> str
        For each row, how it was obtained from the inputs, in words (for people).
    root : Node or Leaf
    vocab_size : int
        V.
    recipes : dict of str -> tuple
        For each row, how a checker re-derives it from other rows, one step each (flat: the
        arguments are row names, rationals as ``"n/d"`` strings, or lists of token ids):

        ``("input", name)``           an input of the certificate (``"p"``, ``"q"``, ...)
        ``("given",)``                taken as stated, not re-derived (e.g. a top-p processed row)
        ``("copy", a)``               the row ``a``
        ``("positive-part", a, b)``   ``max(a_i - b_i, 0)``
        ``("floor-difference", a, b, eps)``  ``max(a_i - b_i, eps)``
        ``("normalized", a)``         ``a / sum(a)`` (``sum(a) > 0``)
        ``("without", a, [t, ...])``  ``a`` with those tokens set to 0 (not renormalized)
        ``("one-hot-argmax", a)``     1 at the argmax of ``a`` (ties to the smallest id), else 0
        ``("uniform",)``              ``1/V`` everywhere
        ``("times-capped-ratio", c, a, b, x)``  ``c_i * min(1, a[x] / b[x])`` (b[x] > 0)
        ``("scaled", a, c)``          ``c * a_i`` (c a rational ``"n/d"`` >= 0)
        ``("minimum", a, b)``         ``min(a_i, b_i)``

        A row without a recipe counts as given.
    """

    rows: Mapping[str, Row]
    root: Node[Out] | Leaf[Out]
    vocab_size: int
    derivations: Mapping[str, str] = field(default_factory=dict)
    recipes: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def _nodes(self) -> list[Node[Out] | Leaf[Out]]:
        """Every distinct node (a subtree may be shared, e.g. one residual draw for every
        rejected draft), parents before children."""
        order: list[Node[Out] | Leaf[Out]] = []
        seen: set[int] = set()
        stack: list[tuple[Node[Out] | Leaf[Out], bool]] = [(self.root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            if isinstance(node, Node):
                stack.extend((br.child, False) for br in node.branches)
        order.reverse()  # reversed post-order: a topological order
        return order

    def reaches(self) -> list[tuple[Node[Out] | Leaf[Out], Fraction]]:
        """Every distinct node and leaf with its reach (the probability that the verifier gets
        there: the sum over the paths to it of their products of branch probabilities), parents
        before children, in the order :meth:`as_dict` numbers the nodes. Linear in the number of
        branches, shared subtrees counted once. Computed once per tree."""
        return list(self._reaches)

    @functools.cached_property
    def _reaches(self) -> list[tuple[Node[Out] | Leaf[Out], Fraction]]:
        mass: dict[int, Fraction] = {id(self.root): Fraction(1)}
        out = []
        for node in self._nodes():
            m = mass.pop(id(node), Fraction(0))
            out.append((node, m))
            if isinstance(node, Node):
                for br in node.branches:
                    k = id(br.child)
                    mass[k] = mass.get(k, Fraction(0)) + m * br.probability
        return out

    def outcomes(self) -> dict[tuple[Out, int], Fraction]:
        """The mass of each outcome ``(output, accepted)``: the leaves' reaches (see
        :meth:`reaches`) summed by leaf. Computed once per tree."""
        return dict(self._outcomes)

    @functools.cached_property
    def _outcomes(self) -> dict[tuple[Out, int], Fraction]:
        out: dict[tuple[Out, int], Fraction] = {}
        for node, m in self._reaches:
            if isinstance(node, Leaf):
                key = (node.output, node.accepted)
                out[key] = out.get(key, Fraction(0)) + m
        return out

    def paths(self) -> Iterator[tuple[tuple[Branch[Out], ...], Fraction, Leaf[Out]]]:
        """Every root-to-leaf path: its branches, its mass (product of the branch
        probabilities) and its leaf, depth first in branch order."""
        stack: list[tuple[Node[Out] | Leaf[Out], tuple[Branch[Out], ...], Fraction]] = [(self.root, (), Fraction(1))]
        while stack:
            node, path, mass = stack.pop()
            if isinstance(node, Leaf):
                yield path, mass, node
                continue
            for br in reversed(node.branches):
                stack.append((br.child, path + (br,), mass * br.probability))

    def law(self: OutcomeTree[int]) -> tuple[tuple[Fraction, ...], dict[int, Fraction]]:
        """The emitted law: leaves summed by output.

        Returns
        -------
        law : tuple of Fraction, length V
            Mass of each token id in [0, V).
        out_of_range : dict of int -> Fraction
            Mass of outputs outside [0, V) (a faulty rule's invalid ids); empty for a sound rule.
        """
        law = [Fraction(0)] * self.vocab_size
        bad: dict[int, Fraction] = {}
        for (output, _), mass in self.outcomes().items():
            if 0 <= output < self.vocab_size:
                law[output] += mass
            else:
                bad[output] = bad.get(output, Fraction(0)) + mass
        return tuple(law), bad

    def accept_probability(self) -> Fraction:
        """P(the drafted token is accepted): the mass of the accepted leaves."""
        return sum((m for (_, acc), m in self.outcomes().items() if acc), Fraction(0))

    def accepted_law(self: OutcomeTree[int]) -> tuple[Fraction, ...]:
        """Per token x, P(x is drafted and accepted): the accepted leaves summed by output."""
        out = [Fraction(0)] * self.vocab_size
        for (output, acc), m in self.outcomes().items():
            if acc:
                out[output] += m
        return tuple(out)

    def rederive(self) -> None:
        """Re-derive every branch's probability from its primitive and the rows.

        Raises
        ------
        InvalidTree
            If a stored probability differs from the primitive's, or a node's branches do
            not sum to exactly 1.
        """
        for node in self._nodes():
            if isinstance(node, Leaf):
                continue
            total = Fraction(0)
            for br in node.branches:
                got = br.event.probability(self.rows)
                if got != br.probability:
                    raise InvalidTree(f"{node.label}: branch {br.event!r} claims {br.probability}, rows give {got}")
                total += got
            if total != 1:
                raise InvalidTree(f"{node.label}: branches sum to {total}, not 1")

    def as_dict(self) -> dict[str, Any]:
        """The tree as JSON-ready data (rationals as ``"n/d"``), shared subtrees written once.

        Returns
        -------
        dict
            ``{"schema", "vocab_size", "rows": {name: ["n/d", ...]}, "derivations", "recipes",
            "nodes": [{"label", "branches": [{"event", "probability", "child"}]}], "root"}``
            where ``child`` is a node index or ``{"leaf": [output, accepted]}`` and ``event`` is
            one of ``{"draw": {"row", "token"}}``, ``{"coin": {"model", "lower", "upper"}}``
            (each bound ``{"source": [...], "strict"}`` or null), ``{"choice": {"condition",
            "why"}}``, ``{"race": {"first", "given", "second", "winner"}}``. Node 0 is the root
            (the root may also be a leaf: ``"root": {"leaf": ...}``). A certificate can list this
            and a checker re-derive each branch from ``rows`` (see :meth:`from_dict`).

        Examples
        --------
        >>> from fractions import Fraction as F
        >>> tree = OutcomeTree({"q": (F(1, 2), F(1, 2))}, Node("draft", (
        ...     Branch(Draw("q", 0), F(1, 2), Leaf(0, True)), Branch(Draw("q", 1), F(1, 2), Leaf(1, True)))), 2)
        >>> OutcomeTree.from_dict(tree.as_dict()).law() == tree.law()
        True
        """

        def fr(x: Fraction) -> str:
            return f"{x.numerator}/{x.denominator}"

        def bound(b: Bound | None) -> dict[str, Any] | None:
            if b is None:
                return None
            src = list(b.source)
            if src[0] == "const":
                src[1] = fr(Fraction(src[1]))
            return {"source": src, "strict": b.strict}

        def event(e: Primitive) -> dict[str, Any]:
            if isinstance(e, Draw):
                return {"draw": {"row": e.row, "token": e.token}}
            if isinstance(e, Coin):  # a fixed coin's value as 'n/d', as the checker reads it ('fixed:0' is not)
                model = e.model.name if e.model.value is None else f"fixed:{fr(e.model.value)}"
                return {"coin": {"model": model, "lower": bound(e.lower), "upper": bound(e.upper)}}
            if isinstance(e, Choice):
                return {"choice": {"condition": list(e.condition), "why": e.why}}
            return {"race": {"first": e.first, "given": e.given, "second": e.second, "winner": e.winner}}

        nodes = [n for n in self._nodes() if isinstance(n, Node)]
        index = {id(n): i for i, n in enumerate(nodes)}

        def child(c: Node[Out] | Leaf[Out]) -> dict[str, list[Any]] | int:
            return {"leaf": [c.output, c.accepted]} if isinstance(c, Leaf) else index[id(c)]

        return {
            "schema": "specproof.outcome-tree/1",
            "vocab_size": self.vocab_size,
            "rows": {k: [fr(x) for x in v] for k, v in sorted(self.rows.items())},
            "derivations": dict(sorted(self.derivations.items())),
            "recipes": {k: list(v) for k, v in sorted(self.recipes.items())},
            "nodes": [
                {
                    "label": n.label,
                    "branches": [
                        {"event": event(b.event), "probability": fr(b.probability), "child": child(b.child)}
                        for b in n.branches
                    ],
                }
                for n in nodes
            ],
            "root": child(self.root),
        }

    @classmethod
    def from_dict(cls: type[OutcomeTree[Any]], data: dict[str, Any]) -> OutcomeTree[int]:
        """Read back :meth:`as_dict`'s data (probabilities as stored: call :meth:`rederive` to
        check them against the rows).

        Raises
        ------
        InvalidTree
            Malformed data (an unknown event, a child index out of range or not below-first).
        """

        def fr(x: Any) -> Fraction:
            if not isinstance(x, str):
                raise InvalidTree(f"{x!r} is not an 'n/d' string")
            num, _, den = x.partition("/")
            return Fraction(int(num), int(den or 1))

        def bound(b: Any) -> Bound | None:
            if b is None:
                return None
            src = tuple(fr(v) if i == 1 and b["source"][0] == "const" else v for i, v in enumerate(b["source"]))
            return Bound(src, bool(b["strict"]))

        def event(e: dict[str, Any]) -> Primitive:
            ((kind, body),) = e.items()
            if kind == "draw":
                return Draw(body["row"], body["token"])
            if kind == "coin":
                return Coin(coin_model(body["model"]), bound(body["lower"]), bound(body["upper"]))
            if kind == "choice":
                return Choice(tuple(body["condition"]), body.get("why", ""))
            if kind == "race":
                return RaceGiven(body["first"], body["given"], body["second"], body["winner"])
            raise InvalidTree(f"unknown event kind {kind!r}")

        raw = data["nodes"]
        built: list[Node[int] | None] = [None] * len(raw)

        def node(i: int) -> Node[int]:
            out = built[i]
            assert out is not None  # nodes are built from the end, and children come after their parents
            return out

        def child(c: Any, parent: int) -> Node[int] | Leaf[int]:
            if isinstance(c, dict):
                out, acc = c["leaf"]
                return Leaf(int(out), bool(acc))
            if not isinstance(c, int) or not parent < c < len(raw):
                raise InvalidTree(f"node {parent} has child {c!r}: not a later node index")
            return node(c)

        for i in range(len(raw) - 1, -1, -1):  # children come after their parents: build from the end
            n = raw[i]
            built[i] = Node(
                n["label"],
                tuple(Branch(event(b["event"]), fr(b["probability"]), child(b["child"], i)) for b in n["branches"]),
            )
        root = data["root"]
        rows = Rows({k: tuple(fr(x) for x in v) for k, v in data["rows"].items()})
        top = child(root, -1) if isinstance(root, dict) or root != 0 else node(0)
        recipes = {k: tuple(v) for k, v in data.get("recipes", {}).items()}
        return cls(rows, top, int(data["vocab_size"]), dict(data.get("derivations", {})), recipes)

    def size(self) -> int:
        """The number of distinct branches (a shared subtree counted once)."""
        return sum(len(node.branches) for node in self._nodes() if isinstance(node, Node))


# --------------------------------------------------------------------------- blocks of positions

#: Recipe kind -> the positions of its arguments that name rows: the checker's own table.
RECIPE_ROW_ARGS = RECIPE_ROWS

#: Threshold source kind -> the positions of its arguments that name rows.
_SOURCE_ROW_ARGS = {
    "ratio": (0, 1),
    "cdf": (0,),
    "masses": (0, 1),
    "const": (),
    "float-ratio": (0, 1),
    "float-product": (0, 1),
    "rounded-coin-ratio": (0, 1),
    "rounded-coin-product": (0, 1),
}


def _renamed_event(event: Primitive, name: Callable[[str], str]) -> Primitive:
    """The same primitive on renamed rows."""

    def bound(b: Bound | None) -> Bound | None:
        if b is None:
            return None
        kind, *args = b.source
        rows = _SOURCE_ROW_ARGS[kind]
        return Bound((kind, *(name(a) if i in rows else a for i, a in enumerate(args))), b.strict)

    if isinstance(event, Draw):
        return Draw(name(event.row), event.token)
    if isinstance(event, Coin):
        return Coin(event.model, bound(event.lower), bound(event.upper))
    if isinstance(event, Choice):
        cond = event.condition
        return Choice(cond if len(cond) == 1 else (cond[0], name(cond[1]), *cond[2:]), event.why)
    return RaceGiven(name(event.first), event.given, name(event.second), event.winner)


def block_tree(
    position: Callable[[Block], OutcomeTree[int]],
    gamma: int,
    last: Callable[[Block, str, Row], Node[Block]] | None = None,
    bonus_row: str = "p",
) -> OutcomeTree[Block]:
    """One verification step over a block of gamma drafts, composed from position trees.

    At the accepted prefix s (depth < gamma) the block runs ``position(s)``, a one-position tree
    whose inputs are ``("input", "p")`` and ``("input", "q")``: a leaf ``(y, accepted=True)``
    goes on at ``s + (y,)``, a leaf ``(y, False)`` ends the block with ``s + (y,)``. At depth
    gamma, ``last(s, p_row, values)`` gives the final node (default: the bonus token drawn from the
    target's row ``p_row``). Rows are renamed ``name[ids]`` after their prefix; the inputs
    become ``("input", "p" or "q", [ids])``, which a block certificate binds to the target's and
    the draft's rows (:func:`specproof.certify.certificate.build_block_certificate`).

    Parameters
    ----------
    position : callable
        ``position(prefix) -> OutcomeTree`` (for example :func:`specproof.laws.variants.typical_tree`
        on the rows after the prefix).
    gamma : int
        Drafts per block, >= 1.
    last : callable, optional
        ``last(prefix, row_name, values) -> Node``: the final node after a full block, reading
        the row ``bonus_row`` of ``position(prefix)`` there (named ``p[ids]`` for the default).
    bonus_row : str, optional
        The row of ``position(prefix)`` the bonus token is drawn from after a full block: ``"p"``
        (default), or, say, ``"target"``, the row float code samples from (p rounded to its
        format, ``torch.multinomial`` normalizing it exactly); it is listed with the rows its recipe
        reads.

    Returns
    -------
    OutcomeTree
        Leaves carry the emitted block (a tuple of ids) and the number of accepted drafts.

    Raises
    ------
    InvalidTree
        A position tree with an input other than p and q, rows of different lengths, a leaf id
        outside [0, V), or an accepted leaf on a branch of probability 0 (outcome trees leave such
        branches out).
    InvalidDistribution, ResidualUndefined
        ``position``'s own errors, with the prefix where they were raised.

    Notes
    -----
    A front end of the block engine: :func:`specproof.laws.block.compose` walks the accepted
    prefixes over the positions' outcomes (:func:`specproof.laws.block.tree_position`), which
    decides the prefixes the block reaches. Each reached prefix's tree is then copied once, deepest
    prefixes first, with its rows renamed, a stop leaf ``(y, False)`` becoming the block's leaf
    ``(s + (y,), len(s))`` and an accepted leaf the copy made for ``s + (y,)``. The tree's leaves
    summed by block are the law :func:`~specproof.laws.block.compose` gives (tested).
    """
    from specproof.laws.block import compose, tree_position

    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise InvalidTree(f"gamma must be an integer >= 1, got {gamma!r}")
    trees: dict[Block, OutcomeTree[int]] = {}
    full: dict[Block, OutcomeTree[int]] = {}  # the position after each full block, whose bonus_row the bonus reads

    def visit(prefix: Block) -> Position:
        tree = position(prefix)
        if trees and tree.vocab_size != trees[()].vocab_size:
            raise InvalidTree(
                f"after {list(prefix)} the rows have {tree.vocab_size} entries, not V = {trees[()].vocab_size}"
            )
        trees[prefix] = tree
        pos = tree_position(tree, (Fraction(0),) * tree.vocab_size)
        for y in pos.out_of_range:
            raise InvalidTree(f"after {list(prefix)} the verifier emits id {y}, outside [0, V)")
        return pos

    def target_row(prefix: Block) -> tuple[Row, Fraction, Row]:
        full[prefix] = tree = position(prefix)
        row = tuple(tree.rows["p"])
        return row, Fraction(1), row

    law = compose(visit, gamma, target_row)

    rows = Rows()
    recipes: dict[str, tuple[Any, ...]] = {}
    derivations: dict[str, str] = {}

    def adopt(prefix: Block, tree: OutcomeTree[int], only: str | None = None) -> Callable[[str], str]:
        def name(n: str) -> str:
            return f"{n}{list(prefix)}"

        needed, todo = set(tree.rows), []  # every row, or the row ``only`` and those its recipe reads
        if only is not None:
            needed, todo = set(), [only]
        while todo:
            n = todo.pop()
            if n not in needed:
                if n not in tree.rows:
                    raise InvalidTree(f"the bonus row {n!r} is not a row of the position after {list(prefix)}")
                needed.add(n)
                recipe = tree.recipes.get(n, ("given",))
                todo.extend(recipe[1 + i] for i in RECIPE_ROW_ARGS[recipe[0]])
        for n, values in tree.rows.items():
            if n not in needed:
                continue
            recipe = tuple(tree.recipes.get(n, ("given",)))
            if recipe[0] == "input":
                if recipe[1] not in ("p", "q"):
                    raise InvalidTree(f"a block's positions read the inputs p and q only, not {recipe[1]!r}")
                recipe = ("input", recipe[1], list(prefix))
            else:
                recipe = (
                    recipe[0],
                    *(name(a) if i in RECIPE_ROW_ARGS[recipe[0]] else a for i, a in enumerate(recipe[1:])),
                )
            rows.setdefault(name(n), tuple(values))
            recipes.setdefault(name(n), recipe)
            derivations.setdefault(name(n), f"{tree.derivations.get(n, n)} (after {list(prefix)})")
        return name

    def bonus(prefix: Block, p_row: str, values: Row) -> Node[Block]:
        return Node(
            f"bonus token after {list(prefix)}",
            tuple(
                Branch(Draw(p_row, y), m / sum(values, Fraction(0)), Leaf(prefix + (y,), gamma))
                for y, m in enumerate(values)
                if m
            ),
        )

    def copied(prefix: Block) -> Node[Block] | Leaf[Block]:
        tree = trees[prefix]
        name = adopt(prefix, tree)
        memo: dict[int, Node[Block] | Leaf[Block]] = {}

        def copy(node: Node[int] | Leaf[int]) -> Node[Block] | Leaf[Block]:
            if id(node) not in memo:
                if isinstance(node, Node):
                    memo[id(node)] = Node(
                        node.label,
                        tuple(
                            Branch(_renamed_event(br.event, name), br.probability, copy(br.child))
                            for br in node.branches
                        ),
                    )
                elif not node.accepted:
                    memo[id(node)] = Leaf(prefix + (node.output,), len(prefix))
                elif prefix + (node.output,) in built:
                    memo[id(node)] = built[prefix + (node.output,)]
                else:
                    raise InvalidTree(
                        f"after {list(prefix)} a branch of probability 0 leads to the accepted draft "
                        f"{node.output}: leave it out"
                    )
            return memo[id(node)]

        root = tree.root
        if isinstance(root, Leaf):
            root = Node("certain", (Branch(Choice(("always",)), Fraction(1), root),))
        return copy(root)

    built: dict[Block, Node[Block] | Leaf[Block]] = {}
    for prefix in sorted(law.reach, key=len, reverse=True):  # children before their parents
        if len(prefix) < gamma:
            built[prefix] = copied(prefix)
            continue
        row = adopt(prefix, full[prefix], only=bonus_row)(bonus_row)  # with the rows its recipe reads, if any
        if "p" in full[prefix].rows:  # the stream's TV reads the target's row here, though a given bonus row does not
            adopt(prefix, full[prefix], only="p")
        built[prefix] = (last or bonus)(prefix, row, rows[row])
    return OutcomeTree(rows, built[()], trees[()].vocab_size, derivations, recipes)
