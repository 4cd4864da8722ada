"""Verifier rules: every choice an engine makes when it verifies drafted tokens, as one value.

The textbook verifier (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2)
draws the draft ``x ~ q``, accepts it iff a continuous coin ``u ~ U[0, 1)`` satisfies
``u < p(x)/q(x)``, and otherwise draws a fresh token from ``(p - q)+`` normalized. Engines
differ at the edges: the coin is a float32 grid, the comparison is ``<=``, the residual is
replaced or floored, the uniform is reused, the draft was drawn from another law than the q in
the ratio, the block runs past its stop token. :class:`Rule` names each of these choices; its
default is the textbook rule. :func:`named_rule` gives the rules of the public reports.

The exact law under a rule is computed by :mod:`specproof.rules.audit`; a rule never touches a float.

References
----------
Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative Decoding", ICML
2023, Algorithm 1 and Appendix A.1; Chen et al., "Accelerating Large Language Model Decoding
with Speculative Sampling", 2023, Algorithm 2.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from specproof.errors import SpecProofError
from specproof.laws.outcome import CONTINUOUS, FLOAT32, FLOAT32_OPEN_CLOSED, CoinModel, coin_model
from specproof.laws.rational import format_fraction, to_fraction
from specproof.rules import libm

__all__ = [
    "UnsupportedRule",
    "Processing",
    "Logits",
    "Arithmetic",
    "EXACT",
    "Rule",
    "STANDARD",
    "NamedRule",
    "NAMED_RULES",
    "named_rule",
    "rule_from_dict",
]


class UnsupportedRule(SpecProofError):
    """A rule or a processing step that cannot be described or computed exactly (an unknown
    choice, a temperature whose power is not rational, a bad parameter)."""


_STEPS = ("temperature", "top_k", "top_p", "min_p")
_NEG_INF = -math.inf


def _argmax(row: Sequence[Fraction]) -> int:
    """The index of the largest entry, ties to the smallest index."""
    return max(range(len(row)), key=lambda i: (row[i], -i))


def _ranked(row: Sequence[Fraction]) -> list[int]:
    """The ids in decreasing order of their entries, ties by the smallest id."""
    return sorted(range(len(row)), key=lambda i: (-row[i], i))


class _ExactOps:
    """Rational arithmetic for :meth:`Processing.apply`: nothing is rounded."""

    @staticmethod
    def round(x):
        return Fraction(x)

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def mul(a, b):
        return a * b

    @staticmethod
    def renormalize(row):
        total = sum(row, Fraction(0))
        return tuple(x / total for x in row)


class _FloatOps:
    """IEEE arithmetic in ``fmt`` for :meth:`Processing.apply_float`: each operation rounded to nearest even; a
    row divided by its float sum: ``library``'s own, or left to right (float16 and bfloat16 accumulated in
    float32)."""

    def __init__(self, fmt, library: str | None = None):
        self.fmt, self.round, self.add, self.mul, self.library = fmt, fmt.round, fmt.add, fmt.mul, library

    def renormalize(self, row):
        fmt = self.fmt
        total = libm.row_sum(self.library, fmt.name, row, fmt.accumulated_sum(row))
        return tuple(fmt.div(x, total) for x in row)


def _show(x: Fraction | float) -> str:
    """A temperature or a bias for a message: an integer, the Python float it is exactly, or ``n/d``."""
    if isinstance(x, float) or x.denominator == 1:
        return str(x if isinstance(x, float) else x.numerator)
    return repr(float(x)) if Fraction(float(x)) == x and x.denominator > 1000 else format_fraction(x)


def _exact_number(value: Any, what: str) -> Fraction | float:
    """A temperature or a bias as the code holds it: an exact rational (a Python float at its exact binary
    value, the number code divides or adds), or ``-inf`` (a float); NaN and ``+inf`` are refused."""
    if isinstance(value, float) or (hasattr(value, "dtype") and hasattr(value, "item")):
        value = float(value)
        if math.isnan(value) or value == math.inf:
            raise UnsupportedRule(f"{what} is {value}, not a number or -inf")
        return value if value == _NEG_INF else Fraction(value)
    if isinstance(value, str) and value.strip() == "-inf":
        return _NEG_INF
    try:
        return to_fraction(value, what=what)
    except SpecProofError as exc:
        raise UnsupportedRule(str(exc)) from None


@dataclass(frozen=True)
class Processing:
    """Sampling parameters: logits-to-probabilities processing in a stated order.

    A processing is applied to one of three kinds of input: a rational probability row
    (:meth:`apply`, exact), a float probability row (:meth:`apply_float`, each operation IEEE-rounded),
    or a row of logits (:meth:`apply_logits`, as engines do it: the steps mask logits with ``-inf``,
    then the library's own softmax, evaluated as data). :meth:`refusal` says which steps each kind
    cannot model.

    Attributes
    ----------
    temperature : Fraction or None
        None (or 1): unchanged. 0: greedy, the one-hot row at the argmax (ties to the smallest
        id). Otherwise T > 0: on logits, ``z / T``; on a rational probability row only ``T = 1/n``
        (n an integer >= 1), ``p**n`` normalized (softmax of logits / T is ``p**(1/T)``
        normalized; only integer powers keep the row rational). A Python float is taken at its
        exact binary value (the number code divides by).
    top_k : int or None
        Keep the k largest entries, renormalize. On probability rows ties at the boundary are broken
        by the smallest id (exactly k kept); on logits every entry ``>=`` the k-th largest is kept
        (engines compare with ``torch.topk(z, k).values[-1]``, which keeps ties).
    top_p : Fraction or None
        Keep the largest entries, in decreasing order (ties by id), up to and including the first
        at which the kept mass reaches ``top_p``; renormalize. At least one entry is kept. On logits
        in the engines' form (see :meth:`apply_logits`).
    min_p : Fraction or None
        Keep entries with ``p(x) >= min_p * max(p)``; renormalize.
    order : tuple of str
        The order of the steps (names from ``temperature, top_k, top_p, min_p``); the order
        changes the law (top-p before temperature is not top-p after it).
    logit_bias : tuple of (int, bias) or None
        ``(id, bias)`` pairs added to the logits before every other step (as engines apply a
        logit bias); a bias is an exact rational (a Python float at its exact value) or
        ``-inf``, a ban. On probability rows only bans are modelled (the token's probability set
        to 0, the row renormalized): a finite bias multiplies ``p(id)`` by ``exp(bias)``, which
        needs logits.

    Notes
    -----
    Engines apply these to the target and to the draft separately; a rule carries one
    :class:`Processing` for each.

    Examples
    --------
    >>> Processing(temperature=Fraction(1, 2)).apply((Fraction(1, 3), Fraction(2, 3)))
    (Fraction(1, 5), Fraction(4, 5))
    >>> Processing(top_k=1).apply((Fraction(1, 3), Fraction(2, 3)))
    (Fraction(0, 1), Fraction(1, 1))
    """

    temperature: Fraction | None = None
    top_k: int | None = None
    top_p: Fraction | None = None
    min_p: Fraction | None = None
    order: tuple[str, ...] = _STEPS
    logit_bias: tuple[tuple[int, Fraction | float], ...] | None = None

    def __post_init__(self) -> None:
        if self.logit_bias is not None:
            pairs = []
            for pair in self.logit_bias:
                if (
                    not isinstance(pair, tuple)
                    or len(pair) != 2
                    or isinstance(pair[0], bool)
                    or not isinstance(pair[0], int)
                    or pair[0] < 0
                ):
                    raise UnsupportedRule(f"logit_bias entry {pair!r} is not an (id >= 0, bias) pair")
                pairs.append((pair[0], _exact_number(pair[1], f"logit_bias at id {pair[0]}")))
            object.__setattr__(self, "logit_bias", tuple(pairs))
        if set(self.order) != set(_STEPS) or len(self.order) != len(_STEPS):
            raise UnsupportedRule(f"processing order {self.order!r} must list each of {', '.join(_STEPS)} once")
        if self.temperature is not None:
            t = _exact_number(self.temperature, "temperature")
            if t == _NEG_INF or t < 0:
                raise UnsupportedRule(f"temperature is {self.temperature}, not >= 0")
            object.__setattr__(self, "temperature", t)
        if self.top_k is not None and (
            isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1
        ):
            raise UnsupportedRule(f"top_k is {self.top_k!r}, not an integer >= 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise UnsupportedRule(f"top_p is {self.top_p}, not in (0, 1]")
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            raise UnsupportedRule(f"min_p is {self.min_p}, not in [0, 1]")

    @property
    def identity(self) -> bool:
        """True when no step changes a row."""
        return (
            self.temperature in (None, 1)
            and self.top_k is None
            and self.top_p in (None, 1)
            and self.min_p in (None, 0)
            and not self.logit_bias
        )

    def refusal(self, kind: str) -> str | None:
        """Why these steps cannot be modelled on an input of ``kind``, or None.

        Parameters
        ----------
        kind : {"exact", "float", "logits"}
            A rational probability row (:meth:`apply`), a float probability row
            (:meth:`apply_float`), or logits (:meth:`apply_logits`: every step is modelled).

        Returns
        -------
        str or None
            A message naming the step and what to give instead.

        Examples
        --------
        >>> Processing(temperature=Fraction(7, 10)).refusal("exact")[:40]
        'temperature 7/10 is not exact on rationa'
        >>> Processing(temperature=Fraction(7, 10)).refusal("logits") is None
        True
        """
        if kind not in ("exact", "float", "logits"):
            raise UnsupportedRule(f"unknown input kind {kind!r}: exact, float or logits")
        if kind == "logits":
            return None
        finite = [(i, b) for i, b in self.logit_bias or () if b != _NEG_INF]
        if finite:
            i, b = finite[0]
            return (
                f"logit_bias {_show(b)} at id {i} on a probability row: a finite bias multiplies p({i}) "
                f"by exp({_show(b)}), which {'is not rational' if kind == 'exact' else 'is not an IEEE operation'}"
                "; only bans (-inf) are modelled on probability rows: give the logits (Logits(...)) under a float "
                "arithmetic, or trace the code with specproof.testing.compare"
            )
        t = self.temperature
        if kind == "exact" and t not in (None, 0) and (1 / t).denominator != 1:
            return (
                f"temperature {_show(t)} is not exact on rationals: use 0 (greedy) or 1/n for an integer "
                "n >= 1, or give logits (Logits(...)) under a float arithmetic"
            )
        if kind == "float" and t not in (None, 0, 1):
            return (
                f"temperature {_show(t)} under float arithmetic on a probability row: code computes "
                "softmax(logits / T) with its library's exp; give the logits (Logits(...)), or the rows the code "
                "samples from, or trace the code against its plain sampler (compare(..., reference=plain))"
            )
        return None

    def float_refusal(self) -> str | None:
        """Why :meth:`apply_float` cannot model these steps (``refusal("float")``)."""
        return self.refusal("float")

    def _ban(self, row: tuple[Fraction, ...], renormalize) -> tuple[Fraction, ...]:
        if not self.logit_bias:
            return row
        banned = {i for i, _ in self.logit_bias}
        if max(banned) >= len(row):
            raise UnsupportedRule(f"logit_bias bans id {max(banned)}, outside [0, {len(row)})")
        out = tuple(Fraction(0) if i in banned else x for i, x in enumerate(row))
        if not any(out):
            raise UnsupportedRule("logit_bias bans every token that has probability > 0: no row is left")
        return renormalize(out)

    def apply(self, row: Sequence[Fraction]) -> tuple[Fraction, ...]:
        """Return the processed row (a probability vector of the same length), in exact arithmetic.

        Raises
        ------
        UnsupportedRule
            A step that is not exact on rationals (``refusal("exact")``).
        """
        why = self.refusal("exact")
        if why is not None:
            raise UnsupportedRule(why)
        return self._run(tuple(row), _ExactOps)

    def apply_float(self, row: Sequence[Fraction], fmt, library: str | None = None) -> tuple[Fraction, ...]:
        """The processed row as float code on probability rows computes it, every operation rounded
        in ``fmt`` (a :class:`~specproof.laws.floats.FloatFormat`).

        Parameters
        ----------
        row : sequence of Fraction
            Floats of ``fmt`` (the row as the code holds it).
        fmt : FloatFormat
        library : {"torch", "numpy"} or None, optional
            Whose ``row.sum()`` renormalizes (:func:`specproof.rules.libm.row_sum`, evaluated as
            data); None, or a library that cannot be imported here: the sum left to right.

        Returns
        -------
        tuple of Fraction
            Floats of ``fmt``.

        Raises
        ------
        UnsupportedRule
            A step that is not modelled on float probability rows (``refusal("float")``).

        Notes
        -----
        The model, step by step (each step when it is active: a ban given, ``top_k < V``,
        ``top_p < 1``, ``min_p > 0``): a logit-bias ban, top-k (ties at the boundary by the smallest id) and min-p (keep
        ``x >= fl(fl(min_p) * max)``) mask entries by exact comparisons of their float values;
        top-p ranks the entries in decreasing order (ties by id) and keeps them up to and
        including the first at which the float running sum, left to right, reaches ``fl(top_p)``;
        temperature 0 is the one-hot argmax. After each active masking step (whether or not it
        zeroed an entry) the row is renormalized as
        ``fl(x_i / s)``, ``s`` the library's own ``row.sum()`` or, without one, the float sum left
        to right (float16 and bfloat16 accumulated in float32, then rounded), as code that writes
        ``row / row.sum()`` does for rows of at most 4 entries (PyTorch) or 7 (NumPy); longer rows
        are summed in blocks, which the audit's caveats state. Engines that mask logits and take a softmax instead: :meth:`apply_logits`.

        Examples
        --------
        >>> from specproof.laws.floats import FLOAT32
        >>> Processing(top_k=1).apply_float((Fraction(1, 4), Fraction(3, 4)), FLOAT32)
        (Fraction(0, 1), Fraction(1, 1))
        """
        why = self.refusal("float")
        if why is not None:
            raise UnsupportedRule(why)
        return self._run(tuple(row), _FloatOps(fmt, library))

    def _run(self, row: tuple, ops) -> tuple:
        """The steps on a probability row, in ``ops``' arithmetic (exact or one float format)."""
        out = self._ban(row, ops.renormalize)
        for step in self.order:
            if step == "temperature":
                out = self._temperature(out, ops)
            elif step == "top_k" and self.top_k is not None and self.top_k < len(out):
                keep = set(_ranked(out)[: self.top_k])
                out = ops.renormalize(tuple(x if i in keep else Fraction(0) for i, x in enumerate(out)))
            elif step == "top_p" and self.top_p not in (None, 1):
                bar, keep, mass = ops.round(self.top_p), set(), Fraction(0)
                for i in _ranked(out):
                    keep.add(i)
                    mass = ops.add(mass, out[i])
                    if mass >= bar:
                        break
                out = ops.renormalize(tuple(x if i in keep else Fraction(0) for i, x in enumerate(out)))
            elif step == "min_p" and self.min_p not in (None, 0):
                cut = ops.mul(ops.round(self.min_p), max(out))
                out = ops.renormalize(tuple(x if x >= cut else Fraction(0) for x in out))
        return out

    def _temperature(self, row, ops):
        t = self.temperature
        if t is None or t == 1:
            return row
        if t == 0:
            top = _argmax(row)
            return tuple(Fraction(int(i == top)) for i in range(len(row)))
        n = int(1 / t)  # exact arithmetic only (refusal): T = 1/n
        return ops.renormalize(tuple(x**n for x in row))

    def apply_logits(self, logits: Sequence, fmt, library: str) -> tuple[Fraction, ...]:
        """The probability row that code computes from ``logits`` with these steps: masked logits, then
        its library's softmax.

        Parameters
        ----------
        logits : sequence of Fraction or ``-inf``
            The logits as the code holds them (each is rounded to ``fmt`` first).
        fmt : FloatFormat
            float32 or float64: the dtype of the logits, of every operation and of the softmax.
        library : {"torch", "numpy"}
            Whose softmax (and cumulative sum) is evaluated (:mod:`specproof.rules.libm`).

        Returns
        -------
        tuple of Fraction
            Floats of ``fmt``: the library's softmax of the processed logits.

        Raises
        ------
        UnsupportedRule
            Another format; a biased id outside [0, V); no finite logit left (the softmax is NaN).
        LibraryUnavailable
            The library cannot be imported.

        Notes
        -----
        The model of engines' logits processors (transformers' ``LogitsProcessor`` classes, vLLM's
        sampler), each step when active. Basic operations are IEEE-rounded in ``fmt``; softmax and
        cumulative sums are not modelled but evaluated by ``library`` at the finitely many rows
        needed and used as data (their provenance is :func:`specproof.rules.libm.library_provenance`).

        - logit bias: ``z_i = fl(z_i + fl(b))``; ``b = -inf`` sets ``z_i = -inf``;
        - temperature 0: every entry but the argmax (ties to the smallest id) is set to ``-inf``;
          T > 0: ``z_i = fl(z_i / fl(T))`` (a tensor divided by a Python float on the CPU);
        - top-k: ``z_i = -inf`` where ``z_i`` is below the k-th largest entry (ties kept);
        - top-p, as transformers' ``TopPLogitsWarper`` and vLLM's ``apply_top_k_top_p``: sort
          ``z`` ascending (a stable sort: ties by id), ``c = cumsum(softmax(z_sorted))`` by the
          library, set ``-inf`` where ``c <= fl(1 - fl(top_p))``, except the last (largest) entry;
        - min-p, as transformers' ``MinPLogitsWarper``: ``r = softmax(z)``; ``z_i = -inf`` where
          ``r_i < fl(fl(min_p) * max r)``;
        - then ``softmax(z)``, the row the code samples from.

        Examples
        --------
        >>> from specproof.laws.floats import FLOAT64
        >>> Processing(top_k=1).apply_logits((Fraction(0), Fraction(1)), FLOAT64, "numpy")
        (Fraction(0, 1), Fraction(1, 1))
        """
        if fmt is None or fmt.name not in libm.DTYPES:
            raise UnsupportedRule(
                f"logits are processed in {' or '.join(libm.DTYPES)} (the library's softmax is "
                f"evaluated in the row's dtype), not {getattr(fmt, 'name', 'exact arithmetic')}"
            )
        z = [x if x == _NEG_INF else fmt.round(x) for x in logits]
        v = len(z)
        for i, b in self.logit_bias or ():
            if i >= v:
                raise UnsupportedRule(f"logit_bias at id {i}, outside [0, {v})")
            z[i] = _NEG_INF if b == _NEG_INF else fmt.add(z[i], fmt.round(b))
        for step in self.order:
            if step == "temperature" and self.temperature == 0:
                top = _argmax(z)
                z = [x if i == top else _NEG_INF for i, x in enumerate(z)]
            elif step == "temperature" and self.temperature not in (None, 1):
                t = fmt.round(self.temperature)
                if t == 0:
                    raise UnsupportedRule(f"temperature {_show(self.temperature)} rounds to 0 in {fmt.name}")
                z = [fmt.div(x, t) for x in z]
            elif step == "top_k" and self.top_k is not None and self.top_k < v:
                kth = sorted(z, reverse=True)[self.top_k - 1]
                z = [x if x >= kth else _NEG_INF for x in z]
            elif step == "top_p" and self.top_p not in (None, 1):
                ascending = sorted(range(v), key=lambda i: (z[i], i))
                cum = libm.cumsum_row(library, fmt.name, libm.softmax_row(library, fmt.name, [z[i] for i in ascending]))
                bar = fmt.sub(1, fmt.round(self.top_p))
                for j, i in enumerate(ascending[:-1]):
                    if cum[j] <= bar:  # NaN (no finite logit) compares false
                        z[i] = _NEG_INF
            elif step == "min_p" and self.min_p not in (None, 0):
                r = self._softmax(library, fmt, z)
                cut = fmt.mul(fmt.round(self.min_p), max(r))
                z = [x if y >= cut else _NEG_INF for x, y in zip(z, r)]
        return self._softmax(library, fmt, z)

    @staticmethod
    def _softmax(library: str, fmt, z) -> tuple[Fraction, ...]:
        out = libm.softmax_row(library, fmt.name, z)
        if any(isinstance(x, float) for x in out):
            raise UnsupportedRule(
                f"{library}'s softmax of the processed logits is NaN: no finite logit is left "
                "(every token banned or masked, or an infinite logit)"
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data (rationals as ``"n/d"``)."""
        out: dict[str, Any] = {"order": list(self.order)}
        for name in _STEPS:
            v = getattr(self, name)
            if v is not None:
                out[name] = v if isinstance(v, int) and not isinstance(v, Fraction) else format_fraction(Fraction(v))
        if self.logit_bias:
            out["logit_bias"] = {
                str(i): "-inf" if b == _NEG_INF else format_fraction(Fraction(b)) for i, b in self.logit_bias
            }
        return out


@dataclass(frozen=True, init=False)
class Logits:
    """A row of logits, given to a rule in place of a probability row: the rule's processing runs on
    the logits as engines run it, and the row the code samples from is its library's softmax
    (:meth:`Processing.apply_logits`).

    Parameters
    ----------
    values : sequence of numbers, a NumPy array or a torch tensor, shape [V]
        Finite logits or ``-inf`` (a masked entry); floats at their exact value.
    library : {"torch", "numpy"}, optional
        Whose softmax (and cumulative sum) the code uses (default torch).

    Raises
    ------
    InvalidDistribution
        An empty row, a NaN or ``+inf`` entry, a non-number.

    Notes
    -----
    The rule's arithmetic must be float32 or float64 (the logits' dtype): a softmax is not rational.

    Examples
    --------
    >>> Logits([0.5, float("-inf")], library="numpy").values
    (Fraction(1, 2), -inf)
    """

    values: tuple
    library: str

    def __init__(self, values: Any, library: str = "torch") -> None:
        from specproof.errors import InvalidDistribution

        if library not in libm.LIBRARIES:
            raise UnsupportedRule(f"logits library {library!r} is not one of {', '.join(libm.LIBRARIES)}")
        if hasattr(values, "detach"):
            values = values.detach().cpu().double()
        if hasattr(values, "tolist"):
            values = values.tolist()
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise InvalidDistribution(f"logits must be a sequence of numbers, got {type(values).__name__}")
        out = []
        for i, x in enumerate(values):
            try:
                out.append(_exact_number(x, f"logits[{i}]"))
            except UnsupportedRule as exc:
                raise InvalidDistribution(str(exc)) from None
        if not out:
            raise InvalidDistribution("logits are empty")
        object.__setattr__(self, "values", tuple(out))
        object.__setattr__(self, "library", library)

    def __len__(self) -> int:
        return len(self.values)


_DTYPES = ("exact", "float16", "bfloat16", "float32", "float64")
_TESTS = ("ratio", "product", "log", "exp")
_LIBRARIES = libm.LIBRARIES
_NORMALIZATIONS = ("none", "divide")


@dataclass(frozen=True)
class Arithmetic:
    """The arithmetic a verifier's code does in its accept test and its residual.

    Attributes
    ----------
    dtype : {"exact", "float16", "bfloat16", "float32", "float64"}
        The format the rows are held and computed in. ``"exact"``: rational arithmetic (the
        papers' verifier). A float format: the target's and the draft's rows are rounded to it
        (a row that is already in the format is unchanged), and every operation below is the
        exact result rounded to nearest, ties to even (:mod:`specproof.laws.floats`).
    test : {"ratio", "product", "log", "exp"}
        The form of the accept test, with the rule's comparison ``<`` or ``<=``: ``"ratio"``
        compares the coin with ``fl(p(x) / q(x))``; ``"product"`` compares ``fl(u * q(x))`` with
        ``p(x)``, the product computed in the wider of the coin's format and ``dtype`` (as
        PyTorch and NumPy promote), so it needs a float-grid coin. ``"log"`` compares
        ``log(u)`` (in the coin's own format) with ``fl(log p(x) - log q(x))``; ``"exp"``
        compares ``u`` with ``exp(fl(log p(x) - log q(x)))``. Their ``log`` and ``exp`` are not
        IEEE basic operations and are not modelled: they are the named :attr:`library`'s own
        results on this machine, evaluated at the values the law needs
        (:mod:`specproof.rules.libm`); the subtraction is IEEE-rounded as usual. ``"log"`` needs
        a float32 or float64 grid coin.
    normalization : {"none", "divide"}
        How the residual ``fl(max(p - q, 0))`` is handed to the draw: as weights (the draw
        normalizes them exactly, as ``torch.multinomial`` is modelled), or divided first by its
        float sum, each ``fl(r_i / s)``. With a :attr:`library`, ``s`` is that library's own sum
        of the row (``r.sum()``), evaluated as data (:func:`specproof.rules.libm.sum_value`):
        PyTorch sums rows of 5 or more entries in blocks, NumPy rows of 8 or more pairwise.
        Without one, ``s`` is modelled left to right, in ``dtype`` for float32 and float64 and in
        float32 (then rounded once) for float16 and bfloat16: a Python loop's order, and the
        libraries' on short rows (NumPy below 8 entries, PyTorch below 5, measured); on longer
        rows :meth:`caveats` says that the libraries' block order is not this model.
    library : {"torch", "numpy"} or None
        Whose functions the code calls. A ``"log"`` or ``"exp"`` test needs one (``dtype``
        float32 or float64): that library's own ``log`` and ``exp``. Any test: its own ``r.sum()``
        where the code divides a row by its sum (the residual with the ``"divide"``
        normalization, a processed row's renormalization; PyTorch: any float ``dtype``; NumPy:
        float32 or float64). With ``"ratio"`` or ``"product"``, ``"numpy"`` on float32 also means NumPy >=
        2's scalar semantics (NEP 50): a Python-float coin (``Generator.random()``) met with a
        float32 value is rounded to float32 first, so the test is ``fl32(u) < fl32(p/q)`` or
        ``fl32(fl32(u) * q) < p``. None: PyTorch's (and NumPy's array) promotion, exact, and the
        left-to-right sum.

    Notes
    -----
    A division by ``q(x) = 0`` gives ``+inf`` (accepted) for ``p(x) > 0`` and NaN (rejected)
    for ``p(x) = 0``, as IEEE arithmetic does; an overflow of ``p/q`` is ``+inf``. The coin's
    own law (its grid) is the rule's :class:`~specproof.laws.outcome.CoinModel`.

    Examples
    --------
    >>> Arithmetic("float32").describe("<=")
    'u <= fl32(p/q), residual fl32(max(p - q, 0)) as weights'
    >>> EXACT.describe("<")
    'u < p/q, exact'
    >>> Arithmetic("float32", "log", library="torch").describe("<")
    'torch log(u) < fl32(log p - log q), residual fl32(max(p - q, 0)) as weights'
    """

    dtype: str = "exact"
    test: str = "ratio"
    normalization: str = "none"
    library: str | None = None

    def __post_init__(self) -> None:
        for name, allowed in (("dtype", _DTYPES), ("test", _TESTS), ("normalization", _NORMALIZATIONS)):
            if getattr(self, name) not in allowed:
                raise UnsupportedRule(f"arithmetic {name} is {getattr(self, name)!r}, not one of {', '.join(allowed)}")
        if self.dtype == "exact" and (self.test, self.normalization) != ("ratio", "none"):
            raise UnsupportedRule(
                "exact arithmetic has test 'ratio' and normalization 'none' (the other forms "
                "compute the same exact values)"
            )
        if self.test in ("log", "exp"):
            if self.library not in _LIBRARIES:
                raise UnsupportedRule(
                    f"the {self.test} test uses a library's own log and exp: library must be one of "
                    f"{', '.join(_LIBRARIES)}, not {self.library!r}"
                )
            if self.dtype not in ("float32", "float64"):
                raise UnsupportedRule(
                    f"the {self.test} test is evaluated in float32 or float64, not {self.dtype} "
                    "(log and exp of half formats are not evaluated)"
                )
        elif self.library is not None:
            if self.library not in _LIBRARIES:
                raise UnsupportedRule(f"library must be one of {', '.join(_LIBRARIES)} or None, not {self.library!r}")
            if self.dtype not in libm.SUM_DTYPES[self.library]:
                raise UnsupportedRule(
                    f"{self.library}'s sum is evaluated in {', '.join(libm.SUM_DTYPES[self.library])}, not {self.dtype}"
                )

    @property
    def is_exact(self) -> bool:
        """True for rational arithmetic."""
        return self.dtype == "exact"

    @property
    def python_coin(self) -> bool:
        """True for NumPy's float32 ratio and product tests: a Python-float coin meets a float32 value."""
        return self.library == "numpy" and self.dtype == "float32" and self.test in ("ratio", "product")

    def format(self):
        """The :class:`~specproof.laws.floats.FloatFormat` of ``dtype`` (None when exact)."""
        from specproof.laws.floats import FORMATS

        return FORMATS.get(self.dtype)

    def describe(self, comparison: str = "<") -> str:
        """One line naming the accept test and the residual's arithmetic."""
        if self.is_exact:
            return f"u {comparison} p/q, exact"
        fl = {"float16": "fl16", "bfloat16": "flbf16", "float32": "fl32", "float64": "fl64"}[self.dtype]
        if self.python_coin:  # NEP 50: u is rounded to the row's dtype
            test = (
                f"{fl}(u) {comparison} {fl}(p/q)" if self.test == "ratio" else f"{fl}({fl}(u) * q) {comparison} p"
            ) + " (numpy: a Python-float coin)"
            return f"{test}, residual {fl}(max(p - q, 0)) {self._norm(fl)}"
        test = {
            "ratio": f"u {comparison} {fl}(p/q)",
            "product": f"{fl}(u * q) {comparison} p",
            "log": f"{self.library} log(u) {comparison} {fl}(log p - log q)",
            "exp": f"u {comparison} {self.library} exp({fl}(log p - log q))",
        }[self.test]
        return f"{test}, residual {fl}(max(p - q, 0)) {self._norm(fl)}"

    def _norm(self, fl: str) -> str:
        if self.normalization == "none":  # a library's sums are then a processed row's renormalization only,
            return "as weights"  # which the audit's arithmetic line names
        return f"divided by its {self.library} {fl} sum" if self.library else f"divided by its {fl} sum"

    def caveats(self, vocab_size: int, coin: CoinModel | None = None) -> list[str]:
        """What this model does not capture exactly at vocabulary size ``vocab_size`` (with ``coin``,
        also what the log test assumes of that coin's grid)."""
        out = []
        if not self.is_exact and self.normalization == "divide" and vocab_size >= 5:
            if self.library is None:
                out.append(
                    f"the residual's {self.dtype} sum is modelled left to right; at V = {vocab_size} PyTorch "
                    "(V >= 5) and NumPy (V >= 8) sum in blocks, whose rounding may differ by an ulp (the "
                    "arithmetics that name a library use its own sum)"
                )
            elif not libm.available(self.library):
                out.append(
                    f"{self.library} cannot be imported here: the residual's {self.dtype} sum is modelled left "
                    f"to right, which is not {self.library}'s order at V = {vocab_size}, so the law may differ "
                    f"from the code's by an ulp's worth of the residual"
                )
            else:
                out.append(
                    f"the residual's {self.dtype} sum is {self._provenance()}'s own sum on this machine, "
                    "evaluated at the residual; the certificate names the order that gives it (NumPy's pairwise "
                    "sum, or PyTorch's CPU cascade sum at this CPU's vector width: a modelling assumption, kept "
                    "only where it gives the library's value), which the checker evaluates itself, or states the "
                    "sum where no modelled order gives it"
                )
        if self.python_coin:
            out.append(
                "NumPy >= 2 rounds a Python-float coin to float32 where it meets a float32 value (NEP 50); "
                "with NumPy 1's value-based casting the comparison would be exact"
            )
        elif self.test in ("log", "exp"):
            out.append(
                f"log and exp are not modelled: they are {self._provenance()}'s own {self.dtype} results on "
                "this machine (CPU), evaluated at the rows' values and the coin's grid points and used as data"
            )
            if self.test == "log" and coin is not None and coin.bits == 53:
                out.append(
                    f"{self.library}'s float64 log is assumed monotone on the float64 coin grid (the passing "
                    "coins are counted by bisection)"
                )
        return out

    def _provenance(self) -> str:
        """The library and its version if it is imported (``"torch 2.9.1"``), else its name."""
        import sys

        library = self.library
        assert library is not None  # asked only of an arithmetic that names its library
        mod = sys.modules.get(library)
        return f"{library} {mod.__version__}" if mod is not None and hasattr(mod, "__version__") else library

    def as_dict(self) -> dict[str, str]:
        """JSON-ready data."""
        out = {"dtype": self.dtype, "test": self.test, "normalization": self.normalization}
        if self.library is not None:
            out["library"] = self.library
        return out


EXACT = Arithmetic()


_CHOICES = {
    "acceptance": ("ratio", "all", "match", "greedy"),
    "comparison": ("<", "<="),
    "residual": ("positive-part", "target", "floor"),
    "fallback": ("error", "target", "argmax", "last", "uniform"),
    "residual_draw": ("independent", "inverse-cdf-reuse", "race-reuse"),
    "fallthrough": ("last", "out-of-range"),
    "proposal": ("draft", "argmax"),
    "padding": ("stop", "wraparound"),
    "accepted_count": ("prefix", "flags"),
    "acceptance_rate": ("per-draft", "per-emitted"),
}


@dataclass(frozen=True)
class Rule:
    """Every choice a verifier makes, as one frozen value; the default is the textbook rule.

    Attributes
    ----------
    acceptance : {"ratio", "all", "match", "greedy"}
        ``ratio``: accept x iff ``u < min(1, p(x)/q(x))`` (written ``u < p(x)/q(x)``).
        ``all``: accept every draft. ``match``: draw an independent target sample y ~ p; accept
        iff y == x; emit y either way (Chen et al.'s exact-match baseline; lossless, accepts
        ``sum p q``). ``greedy``: accept iff x is the target's argmax; else emit the argmax.
    comparison : {"<", "<="}
        How the coin is compared with the ratio.
    coin : CoinModel
        The coin's law (:data:`~specproof.laws.outcome.CONTINUOUS`, the float32/float64 grids, the
        (0, 1] grids, or a fixed value).
    residual : {"positive-part", "target", "floor"}
        What a rejection draws from: ``(p - q)+`` normalized; ``p`` itself ("resample from
        target"); ``max(p - q, floor)`` normalized, for every token.
    floor : Fraction or None
        The ``eps`` of ``residual="floor"``.
    fallback : {"error", "target", "argmax", "last", "uniform"}
        What a rejection emits when the residual has mass 0: raise
        :class:`~specproof.errors.ResidualUndefined`; a draw from p; p's argmax; the last id
        V - 1; a uniform id.
    residual_draw : {"independent", "inverse-cdf-reuse", "race-reuse"}
        How the residual token is drawn: a fresh draw; the smallest i with ``u < C_i``
        reusing the acceptance coin u (C the cumulative normalized residual in token order, u
        not rescaled); the argmax of ``residual_i / E_i`` reusing the exponential noise E that
        drew the draft by a race.
    fallthrough : {"last", "out-of-range"}
        With an inverse-CDF draw, what a coin past every CDF entry gives (possible only with a
        coin that can equal 1): id V - 1, or id V (an invalid id).
    proposal : {"draft", "argmax"}
        What the drafted token is drawn from: the draft row q (processed by
        :attr:`draft_processing`), or its argmax (greedy drafts). A proposal row given to the
        law functions overrides it (a bf16 q, a beam draft).
    target_processing, draft_processing : Processing
        What the engine applies to p and to q before the ratio.
    proposal_processing : Processing or None
        What the engine applies to q to get the law it drafts from (a top-k/top-p processed q
        while the ratio uses :attr:`draft_processing`); None: the same row as the ratio.
    reference_processing : Processing or None
        The target law the output should have, from p; None: ``target_processing`` (the
        reference of ``acceptance="greedy"`` is always p's argmax).
    unchecked_drafts : int
        The first this-many drafted positions of a block are committed without a test (an
        off-by-one), 0 for none.
    stop_at_stop_token : bool
        True: a block ends at its first stop token (nothing after it is emitted or counted);
        False: the engine commits the whole block past it.
    padding : {"stop", "wraparound"}
        A padded drafted block (sentinel id, such as -1, after the real drafts): the real
        drafts end at the first sentinel; or the sentinel is read as the id ``V + sentinel``
        (negative indexing).
    accepted_count : {"prefix", "flags"}
        The number of accepted drafts: the accepted prefix, or the sum of per-position pass
        flags (non-causal: counts passes after the first rejection).
    acceptance_rate : {"per-draft", "per-emitted"}
        How the engine reports its acceptance rate: counted drafts over gamma, or over the
        emitted tokens (a biased stand-in; see :func:`specproof.rules.audit.acceptance_rate`).
    arithmetic : Arithmetic
        The arithmetic of the accept test and the residual (default exact; the named rules of
        real code use that code's float arithmetic).

    Examples
    --------
    >>> Rule() == STANDARD, STANDARD.is_standard
    (True, True)
    >>> Rule(comparison="<=", coin=FLOAT32).describe()
    'u <= p/q, coin float32'
    """

    acceptance: str = "ratio"
    comparison: str = "<"
    coin: CoinModel = CONTINUOUS
    residual: str = "positive-part"
    floor: Fraction | None = None
    fallback: str = "error"
    residual_draw: str = "independent"
    fallthrough: str = "last"
    proposal: str = "draft"
    target_processing: Processing = field(default_factory=Processing)
    draft_processing: Processing = field(default_factory=Processing)
    proposal_processing: Processing | None = None
    reference_processing: Processing | None = None
    unchecked_drafts: int = 0
    stop_at_stop_token: bool = True
    padding: str = "stop"
    accepted_count: str = "prefix"
    acceptance_rate: str = "per-draft"
    arithmetic: Arithmetic = EXACT

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise UnsupportedRule(f"{name} is {getattr(self, name)!r}, not one of {', '.join(allowed)}")
        if not isinstance(self.coin, CoinModel):
            raise UnsupportedRule(f"coin is {self.coin!r}, not a CoinModel")
        if (self.residual == "floor") != (self.floor is not None):
            raise UnsupportedRule("residual='floor' needs floor=EPS (a rational > 0), and floor needs residual='floor'")
        if self.floor is not None and not 0 < self.floor:
            raise UnsupportedRule(f"floor is {self.floor}, not > 0")
        if (
            isinstance(self.unchecked_drafts, bool)
            or not isinstance(self.unchecked_drafts, int)
            or self.unchecked_drafts < 0
        ):
            raise UnsupportedRule(f"unchecked_drafts is {self.unchecked_drafts!r}, not an integer >= 0")
        if not isinstance(self.arithmetic, Arithmetic):
            raise UnsupportedRule(f"arithmetic is {self.arithmetic!r}, not an Arithmetic")
        if not self.arithmetic.is_exact:
            if self.arithmetic.test == "product" and self.coin.bits is None:
                raise UnsupportedRule(f"the accept test fl(u * q) < p needs a float-grid coin, not {self.coin.name}")
            if self.arithmetic.test == "log" and self.coin.bits not in (24, 53):
                raise UnsupportedRule(
                    f"the accept test log(u) < log p - log q needs a float32 or float64 grid coin, not {self.coin.name}"
                )
            if self.residual == "floor" or self.residual_draw != "independent":
                raise UnsupportedRule(
                    "float arithmetic is modelled for the positive-part residual with an "
                    "independent draw; this rule's residual is exact only"
                )
        if self.arithmetic.is_exact:  # rational rows only (logits need a float arithmetic): refuse what they cannot do
            for name in ("target_processing", "draft_processing", "proposal_processing", "reference_processing"):
                proc = getattr(self, name)
                why = None if proc is None else proc.refusal("exact")
                if why is not None:
                    raise UnsupportedRule(f"{name}: {why}")
        if self.residual_draw == "inverse-cdf-reuse" and self.acceptance != "ratio":
            raise UnsupportedRule(
                "residual_draw='inverse-cdf-reuse' reuses the ratio test's coin: needs acceptance='ratio'"
            )

    @property
    def is_standard(self) -> bool:
        """True iff this is the textbook rule."""
        return self == STANDARD

    @property
    def reference(self) -> Processing:
        """The processing that gives the reference (target) law from p."""
        if self.acceptance == "greedy":
            return Processing(temperature=Fraction(0))
        return self.target_processing if self.reference_processing is None else self.reference_processing

    def describe(self) -> str:
        """A short human description of the choices that differ from the textbook rule."""
        parts = []
        if self.acceptance == "ratio":
            parts.append(
                self.arithmetic.describe(self.comparison)
                if not self.arithmetic.is_exact
                else f"u {self.comparison} p/q"
            )
        else:
            parts.append(f"acceptance {self.acceptance}")
        if self.coin != CONTINUOUS:
            parts.append(f"coin {self.coin.name}")
        for f in fields(self):
            if f.name in ("acceptance", "comparison", "coin", "arithmetic"):
                continue
            v, d = getattr(self, f.name), getattr(STANDARD, f.name)
            if v != d:
                parts.append(f"{f.name} {v.as_dict() if isinstance(v, Processing) else v}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data; :func:`rule_from_dict` reads it back."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, CoinModel):
                v = v.name
            elif isinstance(v, (Processing, Arithmetic)):
                v = v.as_dict()
            elif isinstance(v, Fraction):
                v = format_fraction(v)
            out[f.name] = v
        return out


STANDARD = Rule()


def _processing_from(data: Any, where: str) -> Processing:
    if not isinstance(data, dict):
        raise UnsupportedRule(f"{where} must be an object, got {type(data).__name__}")
    unknown = set(data) - {*_STEPS, "order", "logit_bias"}
    if unknown:
        raise UnsupportedRule(f"{where} has unknown keys {sorted(unknown)}")
    kw: dict[str, Any] = {}
    if data.get("logit_bias"):
        bias = data["logit_bias"]
        if not isinstance(bias, dict):
            raise UnsupportedRule(f"{where}.logit_bias must be an object id -> bias, got {type(bias).__name__}")
        pairs = []
        for key, value in bias.items():
            if not str(key).isdigit():
                raise UnsupportedRule(f"{where}.logit_bias key {key!r} is not a token id")
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise UnsupportedRule(f'{where}.logit_bias[{key}] is {value!r}, not a number, "n/d" or "-inf"')
            pairs.append((int(key), _exact_number(value, f"{where}.logit_bias[{key}]")))
        kw["logit_bias"] = tuple(sorted(pairs))
    if data.get("temperature") is not None:  # a JSON number at its exact value, as code divides by it
        kw["temperature"] = _exact_number(data["temperature"], f"{where}.temperature")
    for name in ("top_p", "min_p"):
        if data.get(name) is not None:
            kw[name] = to_fraction(data[name], what=f"{where}.{name}")
    if data.get("top_k") is not None:
        kw["top_k"] = data["top_k"]
    if "order" in data:
        kw["order"] = tuple(data["order"])
    return Processing(**kw)


def rule_from_dict(data: Any) -> Rule:
    """Build a :class:`Rule` from JSON data (keys as :meth:`Rule.as_dict` writes; missing keys
    take the textbook default).

    Parameters
    ----------
    data : dict
        Rule fields; the coin by name, rationals as ``"n/d"``, processing steps as objects.

    Returns
    -------
    Rule

    Raises
    ------
    UnsupportedRule
        Unknown keys or values.

    Examples
    --------
    >>> rule_from_dict({"comparison": "<=", "coin": "float32"}) == named_rule("le-float32-grid")
    True
    >>> rule_from_dict({"comparison": "<=", "coin": "float32", "arithmetic": {"dtype": "float32",
    ...                 "normalization": "divide", "library": "torch"}}) == named_rule("le-float32-coin")
    True
    """
    if not isinstance(data, dict):
        raise UnsupportedRule(f"a rule must be a JSON object, got {type(data).__name__}")
    names = {f.name for f in fields(Rule)}
    unknown = set(data) - names
    if unknown:
        raise UnsupportedRule(f"unknown rule keys {sorted(unknown)}; known: {', '.join(sorted(names))}")
    kw: dict[str, Any] = dict(data)
    if "coin" in kw:
        kw["coin"] = coin_model(kw["coin"])
    if kw.get("floor") is not None:
        kw["floor"] = to_fraction(kw["floor"], what="floor")
    for name in ("target_processing", "draft_processing", "proposal_processing", "reference_processing"):
        if kw.get(name) is not None:
            kw[name] = _processing_from(kw[name], name)
    if "arithmetic" in kw:
        arith = kw["arithmetic"]
        if isinstance(arith, str):
            arith = {"dtype": arith}
        if not isinstance(arith, dict) or set(arith) - {"dtype", "test", "normalization", "library"}:
            raise UnsupportedRule(
                "arithmetic must be a dtype name or an object with keys dtype, test, normalization, library"
            )
        kw["arithmetic"] = Arithmetic(**arith)
    return Rule(**kw)


@dataclass(frozen=True)
class NamedRule:
    """A named rule: the rule, a one-line description and its source."""

    name: str
    rule: Rule
    description: str
    source: str


_GREEDY = Processing(temperature=Fraction(0))

NAMED_RULES: dict[str, NamedRule] = {
    r.name: r
    for r in [
        NamedRule(
            "standard",
            STANDARD,
            "textbook: u ~ U[0,1) continuous, accept iff u < p/q, residual (p - q)+ normalized, fresh draws",
            "Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2",
        ),
        NamedRule(
            "accept-all",
            Rule(acceptance="all"),
            "every draft accepted without a test: the output is the draft's law",
            "a disabled or short-circuited verifier (e.g. a debug flag left on)",
        ),
        NamedRule(
            "le-float32-coin",
            Rule(comparison="<=", coin=FLOAT32, arithmetic=Arithmetic("float32", "ratio", "divide", "torch")),
            "accept iff u <= fl32(p/q) with a float32 coin (k/2^24), residual fl32(max(p - q, 0)) divided by its "
            "torch fl32 sum: accepts p(x) = 0 when u = 0",
            "transformers generation/utils.py _speculative_sampling (r <= p_i / q_i, torch.rand_like, "
            "clamp(p - q, min=0) divided by its sum, float32)",
        ),
        NamedRule(
            "lt-float32-coin",
            Rule(coin=FLOAT32, arithmetic=Arithmetic("float32")),
            "accept iff u < fl32(p/q) with a float32 coin (k/2^24), residual fl32(max(p - q, 0)) as weights: "
            "off by a count of grid points",
            "a textbook PyTorch verifier in float32 (torch.rand: multiples of 2^-24 in [0, 1), measured)",
        ),
        NamedRule(
            "le-float32-grid",
            Rule(comparison="<=", coin=FLOAT32),
            "accept iff u <= p/q, the exact ratio, with a float32 coin (k/2^24): the coin grid's effect alone",
            "le-float32-coin without the float rounding of p/q and of the residual (certifiable)",
        ),
        NamedRule(
            "lt-float32-grid",
            Rule(coin=FLOAT32),
            "accept iff u < p/q, the exact ratio, with a float32 coin (k/2^24): the coin grid's effect alone",
            "lt-float32-coin without the float rounding of p/q and of the residual (certifiable)",
        ),
        NamedRule(
            "resample-from-target",
            Rule(residual="target"),
            "after a rejection, draw from p instead of (p - q)+ normalized",
            "a common simplification in hand-written verifiers; contrasted in Chen et al. 2023, Sec. 2.3",
        ),
        NamedRule(
            "residual-floor:EPS",
            Rule(residual="floor", floor=Fraction(1, 1000)),
            "residual max(p - q, EPS) normalized (a floor against an empty residual); EPS = 1/1000 by default",
            "clamp(p - q, min=eps) guards against 0/0 in engine kernels",
        ),
        NamedRule(
            "coin-reuse-inverse-cdf",
            Rule(residual_draw="inverse-cdf-reuse"),
            "the residual token is the smallest i with u < C_i, reusing the acceptance coin u (not rescaled)",
            "fused accept-and-resample kernels that draw one uniform per position",
        ),
        NamedRule(
            "match-rule",
            Rule(acceptance="match"),
            "accept iff an independent target sample equals the draft; emit that sample (lossless, alpha = sum p q)",
            "the exact-match baseline discussed in Leviathan et al. 2023, Sec. 3 and Chen et al. 2023",
        ),
        NamedRule(
            "first-draft-unchecked",
            Rule(unchecked_drafts=1),
            "the first drafted token of a block is committed without a test (off by one)",
            "an off-by-one between draft and target positions",
        ),
        NamedRule(
            "race-reuse",
            Rule(residual_draw="race-reuse"),
            "the residual token is argmax residual_i / E_i, reusing the noise E of the race that drew the draft",
            "engines that sample with a Gumbel/exponential race (torch.multinomial samples by one) and keep its noise",
        ),
        NamedRule(
            "greedy",
            Rule(acceptance="greedy", proposal="argmax"),
            "greedy speculative decoding: accept iff the draft is p's argmax, else emit the argmax (ties: smallest id)",
            "Leviathan et al. 2023, Sec. 2.3 (argmax sampling as a special case)",
        ),
        NamedRule(
            "greedy-first-draft-unchecked",
            Rule(acceptance="greedy", proposal="argmax", unchecked_drafts=1),
            "greedy, with the first draft committed unchecked",
            "an off-by-one between draft and target positions in a greedy engine",
        ),
        NamedRule(
            "temperature-ignored",
            Rule(target_processing=_GREEDY, draft_processing=_GREEDY, reference_processing=Processing()),
            "the engine falls back to greedy (T = 0) for both models while the user asked for T = 1",
            "sampling parameters dropped on the speculative path",
        ),
        NamedRule(
            "inverse-cdf-last-id",
            Rule(residual_draw="inverse-cdf-reuse", coin=FLOAT32_OPEN_CLOSED),
            "coin-reuse-inverse-cdf with a (0,1] float32 coin: u = 1 passes no CDF entry and falls to id V - 1",
            "searchsorted/inverse-CDF kernels that clamp a fall-through to the last id",
        ),
        NamedRule(
            "commit-past-stop",
            Rule(stop_at_stop_token=False),
            "the whole block is committed past its first stop token (EOS)",
            "blocks verified without an EOS check",
        ),
        NamedRule(
            "flag-sum-count",
            Rule(accepted_count="flags"),
            "the accepted count is the sum of per-position pass flags, not the accepted prefix",
            "acceptance metrics summed over all drafted positions",
        ),
        NamedRule(
            "padding-wraparound",
            Rule(padding="wraparound"),
            "a padding sentinel -1 read as token id V - 1 (negative indexing) and verified as a draft",
            "padded batches of drafts indexed without a mask",
        ),
    ]
}


def named_rule(name: str) -> Rule:
    """The rule called ``name`` (see :data:`NAMED_RULES`); ``residual-floor:EPS`` takes any
    rational EPS > 0, for example ``residual-floor:1/1000`` or ``residual-floor:0.001`` (a decimal
    is read exactly as the decimal it names).

    Parameters
    ----------
    name : str
        A key of :data:`NAMED_RULES`, or ``residual-floor:EPS`` with a rational EPS.

    Returns
    -------
    Rule

    Raises
    ------
    UnsupportedRule
        For an unknown name or a bad EPS.

    Examples
    --------
    >>> named_rule("residual-floor:1/100").floor
    Fraction(1, 100)
    >>> named_rule("le-float32-coin").comparison
    '<='
    """
    if isinstance(name, str) and name.startswith("residual-floor:") and name != "residual-floor:EPS":
        text = name.split(":", 1)[1]
        try:  # 'n/d', or a decimal such as 0.01, read exactly as the decimal it names (1/100)
            eps = (
                Fraction(text)
                if re.fullmatch(r"-?[0-9]*\.?[0-9]+(e-?[0-9]+)?", text)
                else to_fraction(text, what="EPS")
            )
        except SpecProofError as exc:
            raise UnsupportedRule(f"rule {name!r}: {exc}") from None
        return Rule(residual="floor", floor=eps)
    if name == "residual-floor":
        return NAMED_RULES["residual-floor:EPS"].rule
    if name not in NAMED_RULES:
        raise UnsupportedRule(f"unknown rule {name!r}; known: {', '.join(NAMED_RULES)}")
    return NAMED_RULES[name].rule


def load_rule(text: str) -> Rule:
    """A rule from a name or from JSON text (an object of :class:`Rule` fields)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise UnsupportedRule(f"rule JSON is malformed: {exc}") from None
        return rule_from_dict(data)
    return named_rule(stripped)
