"""Exceptions raised by specproof.

Every error specproof raises on bad input derives from :class:`SpecProofError`, which is
itself a :class:`ValueError`, so ``except ValueError`` catches them all. Messages name the
check that failed, the token index where there is one, and the expected and actual values.
:func:`renamed` keeps an old public name working, with a :class:`DeprecationWarning` that says where
it went (PEP 562).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "SpecProofError",
    "InvalidDistribution",
    "FloatNotExact",
    "ResidualUndefined",
    "CrosscheckFailed",
    "InvalidOption",
    "BackendUnavailable",
    "renamed",
]


class SpecProofError(ValueError):
    """Root of every specproof exception (a :class:`ValueError`)."""


class InvalidDistribution(SpecProofError):
    """A target or draft vector is not a probability vector.

    Raised for empty vectors, mismatched lengths, negative, NaN or infinite entries,
    entries that are not numbers, and vectors that do not sum to 1 (exactly, on the exact
    paths; within the stated tolerance, on the float path).
    """


class FloatNotExact(InvalidDistribution):
    """A float was given where an exact rational is required.

    The exact paths never guess how a float should become a rational. Convert explicitly
    with :func:`specproof.laws.rational.from_floats` (exact dyadic value of each float, then an
    exact renormalization) or pass ``fractions.Fraction``/``"n/d"`` strings.
    """


class ResidualUndefined(SpecProofError):
    """The residual (p - q)+ has no mass (p == q), so its normalization is 0/0.

    The verifier never samples from the residual in that case (it accepts with
    probability 1), so :func:`specproof.laws.exact.emitted_distribution` still returns the
    finite, correct law; only asking for the normalized residual itself raises this.
    """


class CrosscheckFailed(SpecProofError):
    """The float path differed from the exact law by more than the stated bound."""


class InvalidOption(SpecProofError):
    """A setting outside its valid range (a false-alarm rate, a bias, a cost ratio, a depth).

    The message names the setting, the value given and the range that is valid.
    """


class BackendUnavailable(InvalidOption):
    """An optional backend was asked for (``backend="numba"``) but its library cannot be imported.

    The message names the library, the import error and the extra that installs it.
    """


def renamed(module: str, names: Mapping[str, tuple[str, str]], namespace: Mapping[str, Any]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for names that moved.

    Parameters
    ----------
    module : str
        The module's ``__name__`` (named in the warning and in the AttributeError).
    names : mapping of str -> (str, str)
        Old name -> (its new name in the same module, why it changed).
    namespace : mapping
        The module's ``globals()``, where the new name is looked up when the old one is used.

    Returns
    -------
    callable
        ``__getattr__(name)``: the new object with a ``DeprecationWarning`` for an old name; else
        ``AttributeError``, as for any missing attribute.
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            new, why = names[name]
            warnings.warn(f"{module}.{name} is now {new} ({why})", DeprecationWarning, stacklevel=2)
            return namespace[new]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
