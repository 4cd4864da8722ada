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
import re
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, Sequence

from specproof.errors import SpecProofError
from specproof.laws.outcome import CONTINUOUS, FLOAT32, FLOAT32_OPEN_CLOSED, CoinModel, coin_model
from specproof.laws.rational import format_fraction, to_fraction

__all__ = ["UnsupportedRule", "Processing", "Arithmetic", "EXACT", "Rule", "STANDARD", "NamedRule", "NAMED_RULES",
           "named_rule", "rule_from_dict"]


class UnsupportedRule(SpecProofError):
    """A rule or a processing step that cannot be described or computed exactly (an unknown
    choice, a temperature whose power is not rational, a bad parameter)."""


_STEPS = ("temperature", "top_k", "top_p", "min_p")


def _argmax(row: Sequence[Fraction]) -> int:
    """The index of the largest entry, ties to the smallest index."""
    return max(range(len(row)), key=lambda i: (row[i], -i))


@dataclass(frozen=True)
class Processing:
    """Logits-to-probabilities processing, applied to a probability row in a stated order.

    Attributes
    ----------
    temperature : Fraction or None
        None (or 1): unchanged. 0: greedy, the one-hot row at the argmax (ties to the smallest
        id). ``1/n`` for an integer n >= 1: ``p**n`` normalized (softmax of logits / T is
        ``p**(1/T)`` normalized; only integer powers keep the row rational).
    top_k : int or None
        Keep the k largest entries (ties at the boundary broken by the smallest id), renormalize.
    top_p : Fraction or None
        Keep the largest entries, in decreasing order (ties by id), up to and including the first
        at which the kept mass reaches ``top_p``; renormalize. At least one entry is kept.
    min_p : Fraction or None
        Keep entries with ``p(x) >= min_p * max(p)``; renormalize.
    order : tuple of str
        The order of the steps (names from ``temperature, top_k, top_p, min_p``); the order
        changes the law (top-p before temperature is not top-p after it).
    logit_bias : tuple of (int, float) or None
        ``(id, bias)`` pairs added to the logits before every other step (as engines apply a
        logit bias). Only bans, ``bias = -inf`` (the token's probability set to 0, the row
        renormalized), are exact: a finite bias multiplies ``p(id)`` by ``exp(bias)``, which is
        not rational, and is refused (give the biased rows, or trace the code).

    Notes
    -----
    Engines apply these to the target and to the draft separately; a rule carries one
    :class:`Processing` for each. Every step is exact on rationals. Under a rule's float
    arithmetic, :meth:`apply_float` models the steps the way float code on probability rows does
    them (see there); temperatures other than 0 and 1 are refused there, naming the step.

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
    logit_bias: tuple[tuple[int, float], ...] | None = None

    def __post_init__(self) -> None:
        if self.logit_bias is not None:
            for pair in self.logit_bias:
                if (not isinstance(pair, tuple) or len(pair) != 2 or isinstance(pair[0], bool)
                        or not isinstance(pair[0], int) or pair[0] < 0):
                    raise UnsupportedRule(f"logit_bias entry {pair!r} is not an (id >= 0, bias) pair")
                if pair[1] != -float("inf"):
                    raise UnsupportedRule(
                        f"logit_bias {pair[1]!r} at id {pair[0]}: a finite bias multiplies p({pair[0]}) by "
                        f"exp({pair[1]}), which is not rational; only bans (-inf) are exact (give the biased rows, "
                        "or trace the code with specproof.testing.compare)")
        if set(self.order) != set(_STEPS) or len(self.order) != len(_STEPS):
            raise UnsupportedRule(f"processing order {self.order!r} must list each of {', '.join(_STEPS)} once")
        t = self.temperature
        if t is not None:
            if t < 0 or (t != 0 and (1 / t).denominator != 1):
                raise UnsupportedRule(
                    f"temperature {t} is not exact on rationals: use 0 (greedy) or 1/n for an integer n >= 1")
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1):
            raise UnsupportedRule(f"top_k is {self.top_k!r}, not an integer >= 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise UnsupportedRule(f"top_p is {self.top_p}, not in (0, 1]")
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            raise UnsupportedRule(f"min_p is {self.min_p}, not in [0, 1]")

    @property
    def identity(self) -> bool:
        """True when no step changes a row."""
        return (self.temperature in (None, 1) and self.top_k is None and self.top_p in (None, 1)
                and self.min_p in (None, 0) and not self.logit_bias)

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
        """Return the processed row (a probability vector of the same length)."""
        out = self._ban(tuple(row), self._normalized)
        for step in self.order:
            out = getattr(self, "_" + step)(out)
        return out

    def float_refusal(self) -> str | None:
        """Why :meth:`apply_float` cannot model these steps (a message naming the step), or None."""
        if self.temperature not in (None, 0, 1):
            return (f"temperature {self.temperature} under float arithmetic: code computes softmax(logits / T) with "
                    "its library's exp, which a rule on probability rows does not model; give the rows the code "
                    "samples from, or trace the code against its plain sampler (compare(..., reference=plain))")
        return None

    def apply_float(self, row: Sequence[Fraction], fmt) -> tuple[Fraction, ...]:
        """The processed row as float code on probability rows computes it, every operation rounded
        in ``fmt`` (a :class:`~specproof.rules.floats.FloatFormat`).

        Parameters
        ----------
        row : sequence of Fraction
            Floats of ``fmt`` (the row as the code holds it).
        fmt : FloatFormat

        Returns
        -------
        tuple of Fraction
            Floats of ``fmt``.

        Raises
        ------
        UnsupportedRule
            A step that is not modelled (:meth:`float_refusal`).

        Notes
        -----
        The model, step by step (each step when it is active: a ban given, ``top_k < V``,
        ``top_p < 1``, ``min_p > 0``): a logit-bias ban, top-k (ties at the boundary by the smallest id) and min-p (keep
        ``x >= fl(fl(min_p) * max)``) mask entries by exact comparisons of their float values;
        top-p ranks the entries in decreasing order (ties by id) and keeps them up to and
        including the first at which the float running sum, left to right, reaches ``fl(top_p)``;
        temperature 0 is the one-hot argmax. After each active masking step (whether or not it
        zeroed an entry) the row is renormalized as
        ``fl(x_i / s)``, ``s`` its float sum left to right (float16 and bfloat16 accumulated in
        float32, then rounded), as code that writes ``row / row.sum()`` does for rows of at most 4
        entries (PyTorch) or 7 (NumPy); longer rows are summed in blocks, which the rule's
        caveats state. Engines that mask logits and take a softmax instead round differently:
        trace them.

        Examples
        --------
        >>> from specproof.rules.floats import FLOAT32
        >>> Processing(top_k=1).apply_float((Fraction(1, 4), Fraction(3, 4)), FLOAT32)
        (Fraction(0, 1), Fraction(1, 1))
        """
        why = self.float_refusal()
        if why is not None:
            raise UnsupportedRule(why)
        from specproof.rules.floats import FLOAT32

        def renormalize(r):
            total = fmt.round(FLOAT32.sum(r)) if fmt.precision < 24 else fmt.sum(r)
            return tuple(fmt.div(x, total) for x in r)

        out = self._ban(tuple(row), renormalize)
        for step in self.order:
            if step == "temperature":
                out = self._temperature(out)  # None, 1 or 0: exact
            elif step == "top_k" and self.top_k is not None and self.top_k < len(out):
                keep = set(self._ranked(out)[: self.top_k])
                out = renormalize(tuple(x if i in keep else Fraction(0) for i, x in enumerate(out)))
            elif step == "top_p" and self.top_p not in (None, 1):
                bar, keep, mass = fmt.round(self.top_p), set(), Fraction(0)
                for i in self._ranked(out):
                    keep.add(i)
                    mass = fmt.add(mass, out[i])
                    if mass >= bar:
                        break
                out = renormalize(tuple(x if i in keep else Fraction(0) for i, x in enumerate(out)))
            elif step == "min_p" and self.min_p not in (None, 0):
                cut = fmt.mul(fmt.round(self.min_p), max(out))
                out = renormalize(tuple(x if x >= cut else Fraction(0) for x in out))
        return out

    @staticmethod
    def _normalized(row: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
        total = sum(row, Fraction(0))
        return tuple(x / total for x in row)

    def _temperature(self, row):
        t = self.temperature
        if t is None or t == 1:
            return row
        if t == 0:
            top = _argmax(row)
            return tuple(Fraction(int(i == top)) for i in range(len(row)))
        n = int(1 / t)
        return self._normalized(tuple(x ** n for x in row))

    def _ranked(self, row):
        return sorted(range(len(row)), key=lambda i: (-row[i], i))

    def _top_k(self, row):
        if self.top_k is None or self.top_k >= len(row):
            return row
        keep = set(self._ranked(row)[: self.top_k])
        return self._normalized(tuple(x if i in keep else Fraction(0) for i, x in enumerate(row)))

    def _top_p(self, row):
        if self.top_p is None or self.top_p == 1:
            return row
        keep, mass = set(), Fraction(0)
        for i in self._ranked(row):
            keep.add(i)
            mass += row[i]
            if mass >= self.top_p:
                break
        return self._normalized(tuple(x if i in keep else Fraction(0) for i, x in enumerate(row)))

    def _min_p(self, row):
        if self.min_p is None or self.min_p == 0:
            return row
        cut = self.min_p * max(row)
        return self._normalized(tuple(x if x >= cut else Fraction(0) for x in row))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data (rationals as ``"n/d"``)."""
        out: dict[str, Any] = {"order": list(self.order)}
        for name in _STEPS:
            v = getattr(self, name)
            if v is not None:
                out[name] = v if isinstance(v, int) and not isinstance(v, Fraction) else format_fraction(Fraction(v))
        if self.logit_bias:
            out["logit_bias"] = {str(i): "-inf" for i, _ in self.logit_bias}
        return out


_DTYPES = ("exact", "float16", "bfloat16", "float32", "float64")
_TESTS = ("ratio", "product", "log", "exp")
_LIBRARIES = ("torch", "numpy")
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
        exact result rounded to nearest, ties to even (:mod:`specproof.rules.floats`).
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
        float sum, each ``fl(r_i / s)``. ``s`` is summed left to right, in ``dtype`` for float32
        and float64 and in float32 (then rounded once) for float16 and bfloat16, as NumPy does for
        rows of fewer than 8 entries and PyTorch for rows of at most 4 (measured); for longer rows
        their block order is not modelled, which :meth:`caveats` states.
    library : {"torch", "numpy"} or None
        Whose ``log`` and ``exp`` a ``"log"`` or ``"exp"`` test uses (required for them; ``dtype``
        float32 or float64). With ``"ratio"`` or ``"product"``, ``"numpy"`` (float32 only) means
        NumPy >= 2's scalar semantics (NEP 50): a Python-float coin (``Generator.random()``) met
        with a float32 value is rounded to float32 first, so the test is ``fl32(u) < fl32(p/q)`` or
        ``fl32(fl32(u) * q) < p``; None is PyTorch's (and NumPy's array) promotion, exact.

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
            raise UnsupportedRule("exact arithmetic has test 'ratio' and normalization 'none' (the other forms "
                                  "compute the same exact values)")
        if self.test in ("log", "exp"):
            if self.library not in _LIBRARIES:
                raise UnsupportedRule(f"the {self.test} test uses a library's own log and exp: library must be one of "
                                      f"{', '.join(_LIBRARIES)}, not {self.library!r}")
            if self.dtype not in ("float32", "float64"):
                raise UnsupportedRule(f"the {self.test} test is evaluated in float32 or float64, not {self.dtype} "
                                      "(log and exp of half formats are not evaluated)")
        elif self.library is not None and (self.library, self.dtype) != ("numpy", "float32"):
            raise UnsupportedRule(f"library {self.library!r} with the {self.test} test: only 'numpy' with float32 "
                                  "(a Python-float coin rounded to float32, NEP 50); torch's promotion is the default")

    @property
    def is_exact(self) -> bool:
        """True for rational arithmetic."""
        return self.dtype == "exact"

    def format(self):
        """The :class:`~specproof.rules.floats.FloatFormat` of ``dtype`` (None when exact)."""
        from specproof.rules.floats import FORMATS

        return FORMATS.get(self.dtype)

    def describe(self, comparison: str = "<") -> str:
        """One line naming the accept test and the residual's arithmetic."""
        if self.is_exact:
            return f"u {comparison} p/q, exact"
        fl = {"float16": "fl16", "bfloat16": "flbf16", "float32": "fl32", "float64": "fl64"}[self.dtype]
        if self.library == "numpy" and self.test in ("ratio", "product"):  # NEP 50: u is rounded to the row's dtype
            test = (f"{fl}(u) {comparison} {fl}(p/q)" if self.test == "ratio"
                    else f"{fl}({fl}(u) * q) {comparison} p") + " (numpy: a Python-float coin)"
            norm = "as weights" if self.normalization == "none" else f"divided by its {fl} sum"
            return f"{test}, residual {fl}(max(p - q, 0)) {norm}"
        test = {"ratio": f"u {comparison} {fl}(p/q)", "product": f"{fl}(u * q) {comparison} p",
                "log": f"{self.library} log(u) {comparison} {fl}(log p - log q)",
                "exp": f"u {comparison} {self.library} exp({fl}(log p - log q))"}[self.test]
        norm = "as weights" if self.normalization == "none" else f"divided by its {fl} sum"
        return f"{test}, residual {fl}(max(p - q, 0)) {norm}"

    def caveats(self, vocab_size: int, coin: CoinModel | None = None) -> list[str]:
        """What this model does not capture exactly at vocabulary size ``vocab_size`` (with ``coin``,
        also what the log test assumes of that coin's grid)."""
        out = []
        if not self.is_exact and self.normalization == "divide" and vocab_size >= 5:
            out.append(f"the residual's {self.dtype} sum is modelled left to right; at V = {vocab_size} PyTorch (V >= 5) "
                       "and NumPy (V >= 8) sum in blocks, whose rounding may differ by an ulp")
        if self.library is not None and self.test in ("ratio", "product"):
            out.append("NumPy >= 2 rounds a Python-float coin to float32 where it meets a float32 value (NEP 50); "
                       "with NumPy 1's value-based casting the comparison would be exact")
        elif self.library is not None:
            import sys

            mod = sys.modules.get(self.library)
            version = f" {mod.__version__}" if mod is not None and hasattr(mod, "__version__") else ""
            out.append(f"log and exp are not modelled: they are {self.library}{version}'s own {self.dtype} results on "
                       "this machine (CPU), evaluated at the rows' values and the coin's grid points and used as data")
            if self.test == "log" and coin is not None and coin.bits == 53:
                out.append(f"{self.library}'s float64 log is assumed monotone on the float64 coin grid (the passing "
                           "coins are counted by bisection)")
        return out

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
        if isinstance(self.unchecked_drafts, bool) or not isinstance(self.unchecked_drafts, int) or self.unchecked_drafts < 0:
            raise UnsupportedRule(f"unchecked_drafts is {self.unchecked_drafts!r}, not an integer >= 0")
        if not isinstance(self.arithmetic, Arithmetic):
            raise UnsupportedRule(f"arithmetic is {self.arithmetic!r}, not an Arithmetic")
        if not self.arithmetic.is_exact:
            if self.arithmetic.test == "product" and self.coin.bits is None:
                raise UnsupportedRule(f"the accept test fl(u * q) < p needs a float-grid coin, not {self.coin.name}")
            if self.arithmetic.test == "log" and self.coin.bits not in (24, 53):
                raise UnsupportedRule(f"the accept test log(u) < log p - log q needs a float32 or float64 grid coin, "
                                      f"not {self.coin.name}")
            for name in ("target_processing", "draft_processing", "proposal_processing"):
                proc = getattr(self, name)
                why = None if proc is None else proc.float_refusal()
                if why is not None:
                    raise UnsupportedRule(f"{name}: {why}")
            if self.residual == "floor" or self.residual_draw != "independent":
                raise UnsupportedRule("float arithmetic is modelled for the positive-part residual with an "
                                      "independent draw; this rule's residual is exact only")
        if self.residual_draw == "inverse-cdf-reuse" and self.acceptance != "ratio":
            raise UnsupportedRule("residual_draw='inverse-cdf-reuse' reuses the ratio test's coin: needs acceptance='ratio'")

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
            parts.append(self.arithmetic.describe(self.comparison) if not self.arithmetic.is_exact
                         else f"u {self.comparison} p/q")
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
            if value not in ("-inf", -float("inf")):
                raise UnsupportedRule(f"{where}.logit_bias[{key}] is {value!r}: a finite bias multiplies p by exp(bias), "
                                      "which is not rational; only bans (\"-inf\") are exact")
            pairs.append((int(key), -float("inf")))
        kw["logit_bias"] = tuple(sorted(pairs))
    for name in ("temperature", "top_p", "min_p"):
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
    ...                 "normalization": "divide"}}) == named_rule("le-float32-coin")
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
            raise UnsupportedRule("arithmetic must be a dtype name or an object with keys dtype, test, normalization, "
                                  "library")
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

NAMED_RULES: dict[str, NamedRule] = {r.name: r for r in [
    NamedRule("standard", STANDARD,
              "textbook: u ~ U[0,1) continuous, accept iff u < p/q, residual (p - q)+ normalized, fresh draws",
              "Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2"),
    NamedRule("accept-all", Rule(acceptance="all"),
              "every draft accepted without a test: the output is the draft's law",
              "a disabled or short-circuited verifier (e.g. a debug flag left on)"),
    NamedRule("le-float32-coin", Rule(comparison="<=", coin=FLOAT32, arithmetic=Arithmetic("float32", "ratio", "divide")),
              "accept iff u <= fl32(p/q) with a float32 coin (k/2^24), residual fl32(max(p - q, 0)) divided by its "
              "fl32 sum: accepts p(x) = 0 when u = 0",
              "transformers generation/utils.py _speculative_sampling (r <= p_i / q_i, torch.rand_like, "
              "clamp(p - q, min=0) divided by its sum, float32)"),
    NamedRule("lt-float32-coin", Rule(coin=FLOAT32, arithmetic=Arithmetic("float32")),
              "accept iff u < fl32(p/q) with a float32 coin (k/2^24), residual fl32(max(p - q, 0)) as weights: "
              "off by a count of grid points",
              "a textbook PyTorch verifier in float32 (torch.rand: multiples of 2^-24 in [0, 1), measured)"),
    NamedRule("le-float32-grid", Rule(comparison="<=", coin=FLOAT32),
              "accept iff u <= p/q, the exact ratio, with a float32 coin (k/2^24): the coin grid's effect alone",
              "le-float32-coin without the float rounding of p/q and of the residual (certifiable)"),
    NamedRule("lt-float32-grid", Rule(coin=FLOAT32),
              "accept iff u < p/q, the exact ratio, with a float32 coin (k/2^24): the coin grid's effect alone",
              "lt-float32-coin without the float rounding of p/q and of the residual (certifiable)"),
    NamedRule("resample-from-target", Rule(residual="target"),
              "after a rejection, draw from p instead of (p - q)+ normalized",
              "a common simplification in hand-written verifiers; contrasted in Chen et al. 2023, Sec. 2.3"),
    NamedRule("residual-floor:EPS", Rule(residual="floor", floor=Fraction(1, 1000)),
              "residual max(p - q, EPS) normalized (a floor against an empty residual); EPS = 1/1000 by default",
              "clamp(p - q, min=eps) guards against 0/0 in engine kernels"),
    NamedRule("coin-reuse-inverse-cdf", Rule(residual_draw="inverse-cdf-reuse"),
              "the residual token is the smallest i with u < C_i, reusing the acceptance coin u (not rescaled)",
              "fused accept-and-resample kernels that draw one uniform per position"),
    NamedRule("match-rule", Rule(acceptance="match"),
              "accept iff an independent target sample equals the draft; emit that sample (lossless, alpha = sum p q)",
              "the exact-match baseline discussed in Leviathan et al. 2023, Sec. 3 and Chen et al. 2023"),
    NamedRule("first-draft-unchecked", Rule(unchecked_drafts=1),
              "the first drafted token of a block is committed without a test (off by one)",
              "an off-by-one between draft and target positions"),
    NamedRule("race-reuse", Rule(residual_draw="race-reuse"),
              "the residual token is argmax residual_i / E_i, reusing the noise E of the race that drew the draft",
              "engines that sample with a Gumbel/exponential race (torch.multinomial samples by one) and keep its noise"),
    NamedRule("greedy", Rule(acceptance="greedy", proposal="argmax"),
              "greedy speculative decoding: accept iff the draft is p's argmax, else emit the argmax (ties: smallest id)",
              "Leviathan et al. 2023, Sec. 2.3 (argmax sampling as a special case)"),
    NamedRule("greedy-first-draft-unchecked", Rule(acceptance="greedy", proposal="argmax", unchecked_drafts=1),
              "greedy, with the first draft committed unchecked",
              "an off-by-one between draft and target positions in a greedy engine"),
    NamedRule("temperature-ignored", Rule(target_processing=_GREEDY, draft_processing=_GREEDY,
                                          reference_processing=Processing()),
              "the engine falls back to greedy (T = 0) for both models while the user asked for T = 1",
              "sampling parameters dropped on the speculative path"),
    NamedRule("inverse-cdf-last-id", Rule(residual_draw="inverse-cdf-reuse", coin=FLOAT32_OPEN_CLOSED),
              "coin-reuse-inverse-cdf with a (0,1] float32 coin: u = 1 passes no CDF entry and falls to id V - 1",
              "searchsorted/inverse-CDF kernels that clamp a fall-through to the last id"),
    NamedRule("commit-past-stop", Rule(stop_at_stop_token=False),
              "the whole block is committed past its first stop token (EOS)",
              "blocks verified without an EOS check"),
    NamedRule("flag-sum-count", Rule(accepted_count="flags"),
              "the accepted count is the sum of per-position pass flags, not the accepted prefix",
              "acceptance metrics summed over all drafted positions"),
    NamedRule("padding-wraparound", Rule(padding="wraparound"),
              "a padding sentinel -1 read as token id V - 1 (negative indexing) and verified as a draft",
              "padded batches of drafts indexed without a mask"),
]}


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
            eps = Fraction(text) if re.fullmatch(r"-?[0-9]*\.?[0-9]+(e-?[0-9]+)?", text) else to_fraction(text, what="EPS")
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
