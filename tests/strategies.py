"""Shared hypothesis strategies for the specproof tests."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from hypothesis import strategies as st

__all__ = ["weight_pairs", "normalize_fractions", "distribution_pairs"]


def weight_pairs(max_len: int = 12, max_weight: int = 20) -> st.SearchStrategy[list[tuple[int, int]]]:
    """Lists of ``(weight_p, weight_q)`` pairs of integers in ``[0, max_weight]``.

    Length 1 to ``max_len`` (the vocabulary size V). Each column has at least one positive
    weight, so both columns normalize to a probability vector (see
    :func:`normalize_fractions`). Zeros are common, so q = 0 where p > 0, p = 0 where
    q > 0 and disjoint supports all occur.
    """
    if max_len < 1 or max_weight < 1:
        raise ValueError("max_len and max_weight must be >= 1")
    weight = st.integers(min_value=0, max_value=max_weight)
    return st.lists(st.tuples(weight, weight), min_size=1, max_size=max_len).filter(
        lambda pairs: any(a > 0 for a, _ in pairs) and any(b > 0 for _, b in pairs)
    )


def normalize_fractions(weights: Sequence[int]) -> tuple[Fraction, ...]:
    """Return ``weights / sum(weights)`` exactly, as Fractions (the sum must be positive)."""
    total = sum(weights)
    if total <= 0:
        raise ValueError(f"weights {list(weights)!r} do not have a positive sum")
    return tuple(Fraction(w, total) for w in weights)


def distribution_pairs(
    max_len: int = 6, max_weight: int = 12
) -> st.SearchStrategy[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]]:
    """Pairs ``(p, q)`` of exact distributions of one length, built from :func:`weight_pairs`
    (so zeros, disjoint supports and p == q all occur, and shrinking stays minimal)."""
    return weight_pairs(max_len, max_weight).map(
        lambda pairs: (normalize_fractions([a for a, _ in pairs]), normalize_fractions([b for _, b in pairs]))
    )
