"""Shared pieces of the verifiers of :mod:`specproof.laws.variants`: row checks, small exact row
operations, the tree builder with named rows and recipes, and :class:`InvalidVerifier`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution, SpecProofError
from specproof.laws.outcome import (
    CONTINUOUS,
    Bound,
    Builder,
    Coin,
    Draw,
    Leaf,
    Node,
    Out,
    OutcomeTree,
    Rows,
)
from specproof.laws.rational import as_fractions

Row = tuple[Fraction, ...]
Prefix = tuple[int, ...]
Model = Callable[[Prefix], Any]
TokenTree = tuple[tuple[int, "TokenTree"], ...]

_ZERO = Fraction(0)
_ONE = Fraction(1)


class InvalidVerifier(SpecProofError):
    """A verifier's parameters are bad: k < 1, an invalid SpecTr rho, a malformed token tree."""


# --------------------------------------------------------------------------- small helpers


def _dist(values: Any, name: str) -> Row:
    return as_fractions(values, name)


def _pair(p: Any, q: Any) -> tuple[Row, Row]:
    pv, qv = _dist(p, "p"), _dist(q, "q")
    if len(pv) != len(qv):
        raise InvalidDistribution(f"p has V={len(pv)} entries but q has V={len(qv)}")
    return pv, qv


def _model(rows: Any, name: str = "p") -> Model:
    """``rows`` if it is a callable, else the model that returns that one row after every prefix,
    validated once (:func:`_dist`, under ``name``) when it is first read."""
    if callable(rows):
        given: Model = rows
        return given
    fixed: list[Row] = []

    def model(prefix: Prefix) -> Row:
        if not fixed:
            fixed.append(_dist(rows, name))
        return fixed[0]

    return model


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidVerifier(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _positive_part(a: Row, b: Row) -> Row:
    return tuple(max(x - y, _ZERO) for x, y in zip(a, b))


def _normalized(a: Row) -> Row:
    total = sum(a, _ZERO)
    return tuple(x / total for x in a)


def _without(a: Row, tokens: Sequence[int]) -> Row:
    drop = set(tokens)
    return tuple(_ZERO if i in drop else x for i, x in enumerate(a))


def _tv(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sum((abs(x - y) for x, y in zip(a, b)), _ZERO) / 2


def _fr(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


class _Builder(Builder):
    """Collects named rows with recipes and builds nodes whose branch probabilities come from
    their primitives (a branch of probability 0 is left out, its child never built)."""

    rows: Rows  # a Rows, which remembers each row's argmax and cumulative sums

    def __init__(self, v: int):
        self.v = v
        self.rows = Rows()
        self.recipes: dict[str, tuple[Any, ...]] = {}
        self.derivations: dict[str, str] = {}

    def add(self, name: str, values: Row | Callable[[], Row], recipe: tuple[Any, ...], why: str) -> str:
        """Add row ``name`` (``values`` may be a thunk, called only if the row is new)."""
        if name not in self.rows:
            self.rows[name] = tuple(values() if callable(values) else values)
            self.recipes[name] = recipe
            self.derivations[name] = why
        return name

    def draw_all(self, label: str, row: str, accepted: bool = False) -> Node[int]:
        return self.node(label, [self.branch(Draw(row, y), Leaf(y, accepted)) for y in range(self.v)])

    def tree(self, root: Node[Out] | Leaf[Out]) -> OutcomeTree[Out]:
        return OutcomeTree(self.rows, root, self.v, dict(self.derivations), dict(self.recipes))


def _accept_test(
    b: _Builder, label: str, top: str, bottom: str, x: int, rejected: Callable[[], Node[int]]
) -> Node[int]:
    """Accept x iff u < top[x]/bottom[x] (continuous coin); else the ``rejected`` subtree."""
    ratio = ("ratio", top, bottom, x)
    return b.node(
        label,
        [
            b.branch(Coin(CONTINUOUS, upper=Bound(ratio, True)), Leaf(x, True)),
            b.branch(Coin(CONTINUOUS, lower=Bound(ratio, False)), rejected),
        ],
    )
