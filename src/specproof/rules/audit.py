"""Exact laws of a verifier under a :class:`~specproof.rules.policy.Rule`, and counterexample search.

:func:`position_tree` writes one verification position as an
:class:`~specproof.laws.outcome.OutcomeTree` of primitive events (draw the draft, a coin against a
threshold, a residual draw, a deterministic choice); :func:`position_law` sums its leaves into the
emitted law, the acceptance probability and the exact TV from the target's law.
:func:`block_law` composes positions into a block of gamma drafts (:func:`specproof.laws.block.compose`: stop tokens, the accepted-length
law, the expected emitted tokens up to the first stop token); :func:`given_block_law` does the same
for one given drafted block (padding, per-position flags). :func:`search_counterexample` finds the
smallest and the worst input on which a rule is lossy.

With the textbook rule these reproduce :func:`specproof.laws.exact.emitted_law` and
:func:`specproof.laws.chain.verification_law` exactly (tested).

References
----------
Leviathan et al. 2023, Algorithm 1, Theorem 3.5, Appendix A.1 and Section 3.4; Chen et al. 2023,
Algorithm 2 and Theorem 1.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution, ResidualUndefined, renamed
from specproof.laws.block import BlockLaw, LengthLawName, Position, compose, given_block, stream_tv, tree_position
from specproof.laws.floats import FLOAT32
from specproof.laws.outcome import Bound, Branch, Builder, Choice, Coin, Draw, Leaf, Node, OutcomeTree, RaceGiven, Rows
from specproof.laws.rational import as_distribution, format_fraction
from specproof.rules import libm
from specproof.rules.policy import STANDARD, Logits, Processing, Rule, UnsupportedRule, _argmax

__all__ = [
    "position_tree",
    "PositionRuleLaw",
    "position_law",
    "BlockRuleLaw",
    "block_law",
    "GivenBlockRuleLaw",
    "given_block_law",
    "Counterexample",
    "SearchResult",
    "search_counterexample",
    "acceptance_rate",
    "greedy_margin",
    "accepted_prefix_expectation",
]

Row = tuple[Fraction, ...]
Prefix = tuple[int, ...]


def _tv(a: Sequence[Fraction], b: Sequence[Fraction], extra: Fraction = Fraction(0)) -> Fraction:
    return (sum((abs(x - y) for x, y in zip(a, b)), Fraction(0)) + extra) / 2


def _rows(p: Any, q: Any, rule: Rule, proposal: Any) -> tuple[Rows, dict[str, tuple]]:
    """The rows a position tree reads, and each row's recipe (see :class:`OutcomeTree`). ``p`` and ``q`` are
    probability rows or :class:`~specproof.rules.policy.Logits` (then every processed row is the library's
    softmax of the processed logits, :meth:`~specproof.rules.policy.Processing.apply_logits`)."""
    fmt = rule.arithmetic.format()
    if fmt is None:
        if isinstance(p, Logits) or isinstance(q, Logits):
            raise UnsupportedRule(
                "logits are turned into probabilities by a library's softmax, which is not rational: "
                "give the rule a float arithmetic (Arithmetic('float32'), say), or probability rows"
            )
        pv = as_distribution(p, "p").fractions()
        qv = as_distribution(q, "q").fractions()
        raw_p, raw_q = pv, qv
    else:
        raw_p, pv = _float_row(p, "p", fmt)
        raw_q, qv = _float_row(q, "q", fmt)
    if len(pv) != len(qv):
        raise InvalidDistribution(f"p has V={len(pv)} entries but q has V={len(qv)}")

    def float_processed(proc, given, raw, name):
        """What float code computes from the row as given (probabilities or logits), in the rule's format."""
        if isinstance(given, Logits):
            return proc.apply_logits(given.values, fmt, given.library)
        why = proc.refusal("float")
        if why is not None:
            raise UnsupportedRule(f"{name}: {why}")
        return proc.apply_float(tuple(fmt.round(x) for x in raw), fmt, rule.arithmetic.library)

    def processed(proc, row, raw, given, name, field):
        if fmt is not None and not proc.identity:  # float code's own processing steps, IEEE-rounded
            return float_processed(proc, given, raw, field), ("given",)
        if fmt is not None:  # the row as the code holds it, in its format (a float row is unchanged)
            rounded = tuple(fmt.round(x) for x in raw)
            if rounded == row:
                return rounded, ("copy", name)
            if rounded == tuple(fmt.round(x) for x in row):  # rationals rounded to the format: a checker step
                return rounded, ("float-rounded", name, rule.arithmetic.dtype)
            return rounded, ("given",)  # float rows off from 1: their values, as given
        return (row, ("copy", name)) if proc.identity else (proc.apply(row), ("given",))

    target, r_target = processed(rule.target_processing, pv, raw_p, p, "p", "target_processing")
    draft, r_draft = processed(rule.draft_processing, qv, raw_q, q, "q", "draft_processing")
    r_reference: tuple[str, ...]
    if rule.reference.identity:
        reference, r_reference = pv, ("copy", "p")
    elif fmt is not None and (isinstance(p, Logits) or rule.reference.refusal("float") is None):
        reference = _normalized(float_processed(rule.reference, p, raw_p, "reference_processing"))
        r_reference = ("given",)  # what a plain float sampler draws from
    else:
        reference, r_reference = rule.reference.apply(pv), ("given",)
    if proposal is not None:
        prop = as_distribution(proposal, "proposal").fractions()
        if len(prop) != len(pv):
            raise InvalidDistribution(f"the proposal has V={len(prop)} entries but p has V={len(pv)}")
        r_prop: tuple = ("input", "proposal")
    elif rule.proposal_processing is not None:  # the draft was drawn from another processed row than the ratio's q
        prop = (
            rule.proposal_processing.apply(qv)
            if fmt is None
            else float_processed(rule.proposal_processing, q, raw_q, "proposal_processing")
        )
        r_prop = ("given",)
        if rule.proposal == "argmax":
            top = _argmax(prop)
            prop = tuple(Fraction(int(i == top)) for i in range(len(prop)))
    elif rule.proposal == "argmax":
        top = _argmax(draft)
        prop = tuple(Fraction(int(i == top)) for i in range(len(draft)))
        r_prop = ("one-hot-argmax", "draft")
    else:
        prop, r_prop = draft, ("copy", "draft")
    extra_rows: dict[str, tuple] = {}
    extra_recipes: dict[str, tuple] = {}
    if fmt is not None and rule.residual == "positive-part":
        dtype = rule.arithmetic.dtype
        resid = tuple(max(fmt.sub(a, b), Fraction(0)) for a, b in zip(target, draft))
        r_resid: tuple = ("float-positive-part", "target", "draft", dtype)
        if rule.arithmetic.normalization == "divide":
            extra_rows["residual-weights"], extra_recipes["residual-weights"] = resid, r_resid
            modelled = fmt.accumulated_sum(resid)
            total = libm.row_sum(rule.arithmetic.library, dtype, resid, modelled)  # the library's own, if it names one
            resid = tuple(fmt.div(r, total) for r in resid) if total else resid
            # the checker sums left to right itself, or in the order the recipe names (the library's, modelled
            # and kept only where it gives the library's value); a sum no modelled order gives is stated
            if total == modelled:
                r_resid = ("float-normalized", "residual-weights", dtype)
            else:
                order = libm.sum_order(rule.arithmetic.library, dtype, extra_rows["residual-weights"], total)
                if order is None:
                    # V weights of at most 1 each: a finite sum (a float only for an overflow, +inf)
                    assert isinstance(total, Fraction)
                    how: str | list[Any] = format_fraction(total)
                else:
                    how = order[1]
                r_resid = ("float-divided", "residual-weights", dtype, how)
    elif rule.residual == "positive-part":
        resid = tuple(max(a - b, Fraction(0)) for a, b in zip(target, draft))
        r_resid = ("positive-part", "target", "draft")
    elif rule.residual == "target":
        resid, r_resid = target, ("copy", "target")
    else:
        floor = rule.floor
        assert floor is not None  # residual "floor" comes with a floor (Rule checks it)
        resid = tuple(max(a - b, floor) for a, b in zip(target, draft))
        r_resid = ("floor-difference", "target", "draft", f"{floor.numerator}/{floor.denominator}")
    v = len(pv)
    rows = Rows(
        p=pv,
        q=qv,
        target=target,
        draft=draft,
        proposal=prop,
        residual=resid,
        reference=reference,
        uniform=tuple(Fraction(1, v) for _ in range(v)),
        **extra_rows,
    )
    recipes = {
        "p": ("input", "p"),
        "q": ("input", "q"),
        "target": r_target,
        "draft": r_draft,
        "proposal": r_prop,
        "residual": r_resid,
        "reference": r_reference,
        "uniform": ("uniform",),
        **extra_recipes,
    }
    return rows, recipes


def _normalized(row: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """The row divided by its sum (a float row's law; an exact row is returned as it is)."""
    total = sum(row, Fraction(0))
    return tuple(row) if total in (0, 1) else tuple(x / total for x in row)


def row_entries(values: Any, name: str):
    """A row's entries as float code holds them, one at a time: each finite entry's exact value (a
    Fraction), NaN and +-inf kept as floats. Floats, NumPy or torch arrays, or rationals.

    Raises
    ------
    InvalidDistribution
        ``values`` is not a sequence (checked at once); an entry that is not a number (when reached).
    """
    from specproof.laws.rational import to_fraction

    if hasattr(values, "detach"):
        values = values.detach().cpu().double()
    if hasattr(values, "tolist"):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidDistribution(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    return (
        (Fraction(v) if math.isfinite(v) else v) if isinstance(v, float) else to_fraction(v, what=f"{name}[{i}]")
        for i, v in enumerate(values)
    )


def _float_row(values: Any, name: str, fmt=None) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """A row as float code receives it: each entry's exact value (floats, NumPy or torch arrays,
    or rationals; :class:`~specproof.rules.policy.Logits`: the library's softmax of them in ``fmt``), and the
    same row divided by its exact sum (the law it stands for)."""
    if isinstance(values, Logits):
        values = Processing().apply_logits(values.values, fmt, values.library)
    raw = []
    for i, v in enumerate(row_entries(values, name)):
        if isinstance(v, float):
            raise InvalidDistribution(f"{name}[{i}] is {v}, not a finite number")
        raw.append(v)
    if not raw:
        raise InvalidDistribution(f"{name} is empty")
    for i, v in enumerate(raw):
        if v < 0:
            raise InvalidDistribution(f"{name}[{i}] is {v}, negative")
    total = sum(raw, Fraction(0))
    if total == 0:
        raise InvalidDistribution(f"{name} sums to 0")
    return tuple(raw), tuple(v / total for v in raw)


_DERIVATIONS = {
    "p": "the target row as given",
    "q": "the draft row as given",
    "target": "p after the rule's target processing",
    "draft": "q after the rule's draft processing",
    "proposal": "the law the draft token is drawn from",
    "residual": "the rule's residual weights (unnormalized)",
    "reference": "p after the rule's reference processing: the law the output should have",
    "uniform": "1/V for every token",
    "residual-weights": "fl(max(p - q, 0)) in the rule's float format, before it is divided by its float sum",
}


def _first_failing(rule: Rule, passes: Callable[[Fraction], bool]) -> Fraction:
    """The grid point after the last coin u of the rule's grid with ``passes(u)`` (monotone: the passing coins are
    the grid's first ones), so that ``u < t`` (strict) holds exactly for them."""
    from specproof.laws.outcome import first_failing

    bits = rule.coin.bits
    assert bits is not None  # asked only of a coin on a grid
    return first_failing(bits, rule.coin.open_closed, passes)


def _rounded_coin_threshold(rows: Rows, x: int, rule: Rule) -> Fraction:
    """The threshold of ``fl(u) cmp fl(p/q)`` or ``fl(fl(u) * q) cmp p``, the coin rounded to the row's format
    first (NumPy >= 2 meeting a Python-float coin with a float32 value, NEP 50). Rounding is monotone, so the
    passing coins are the grid's first ones (q(x) > 0 here)."""
    fmt, cmp = rule.arithmetic.format(), rule.comparison
    a, b = rows["target"][x], rows["draft"][x]
    if rule.arithmetic.test == "ratio":
        t = fmt.div(a, b)
        t = Fraction(2) if t == math.inf else t
        return _first_failing(rule, lambda u: fmt.round(u) < t if cmp == "<" else fmt.round(u) <= t)
    return _first_failing(rule, lambda u: fmt.mul(fmt.round(u), b) < a if cmp == "<" else fmt.mul(fmt.round(u), b) <= a)


def _log_row(rows: Rows, library: str, dtype: str, name: str) -> tuple:
    """The library's log of row ``name``, computed once per tree (each drafted token reads one entry: the
    row's conversion per token made a V = 64 position's library members cost O(V^2))."""
    memo = rows.__dict__.setdefault("_library_logs", {})
    key = (library, dtype, name)
    if key not in memo:
        memo[key] = libm.log_row(library, dtype, rows[name])
    return memo[key]


def _library_threshold(rows: Rows, x: int, rule: Rule) -> Fraction:
    """The threshold t of the log-space accept tests at drafted token ``x`` (q(x) > 0), with the
    library's own log and exp (:mod:`specproof.rules.libm`) and the IEEE-rounded difference
    ``d = fl(log p(x) - log q(x))``.

    ``"exp"``: t = exp(d), compared with the coin as the rule says (an overflow is 2, above every
    coin); NumPy >= 2 in float32 compares ``fl32(u)`` (a Python-float coin meeting a float32, NEP 50),
    so t is then the grid point after the last coin whose float32 rounding passes (strict). ``"log"``: the coins that pass ``log(u) cmp d`` are counted on the grid (K of them) and
    t is the grid point after the K-th, so that ``u < t`` (strict) has probability K / 2^bits: the
    accept probability exactly (the event itself is the first K coins when the library's log is
    monotone on the grid, which PyTorch's float32 log is, measured).
    """
    arith, coin = rule.arithmetic, rule.coin
    fmt = arith.format()
    library = arith.library
    assert library is not None  # the log and exp tests name their library (Arithmetic checks it)
    lp = _log_row(rows, library, arith.dtype, "target")[x]
    lq = _log_row(rows, library, arith.dtype, "draft")[x]
    if lp == -math.inf:  # p(x) = 0 (q(x) > 0 here): -inf - finite
        d: Any = -math.inf
    else:
        d = fmt.sub(lp, lq)
    n = 1 << (coin.bits or 0)
    if arith.test == "exp":
        e = libm.exp_value(library, arith.dtype, d)
        if isinstance(e, float) and math.isnan(e):  # not reached for q(x) > 0; NaN passes no coin
            return Fraction(-1)
        e = Fraction(2) if e == math.inf else e
        assert isinstance(e, Fraction)  # exp_value gives a float only for an overflow (+inf) or NaN
        if coin.bits is None or not libm.rounds_python_coin(library, arith.dtype):
            return e
        # NumPy >= 2 (NEP 50): Generator.random() is a Python float, and u < np.float32(e) rounds u to
        # float32 before comparing; rounding is monotone, so the passing coins are the grid's first ones
        return _first_failing(rule, lambda u: FLOAT32.round(u) < e if rule.comparison == "<" else FLOAT32.round(u) <= e)
    assert coin.bits is not None  # the log test needs a float32 or float64 grid coin (Rule checks it)
    count = libm.log_coin_count(library, coin.bits, coin.open_closed, d, rule.comparison)
    return Fraction(int(coin.open_closed) + count, n)


def accept_bound(rows: Rows, x: int, rule: Rule) -> tuple[tuple, bool]:
    """The accept test's threshold at drafted token ``x`` (``q(x) > 0``, or any q with the float product
    test): a :class:`~specproof.laws.outcome.Bound` source and whether the coin must be strictly below it."""
    arith = rule.arithmetic
    strict = rule.comparison == "<"
    if arith.is_exact:
        return ("ratio", "target", "draft", x), strict
    if arith.python_coin:  # NumPy: fl32(u) meets the test; the checker counts the grid coins that pass
        kind = "rounded-coin-ratio" if arith.test == "ratio" else "rounded-coin-product"
        return (kind, "target", "draft", x, arith.dtype, rule.coin.name, rule.comparison), True
    if arith.test == "ratio":
        return ("float-ratio", "target", "draft", x, arith.dtype), strict
    if arith.test in ("log", "exp"):  # the library's own log and exp, as data: a stated constant threshold
        assert arith.library is not None  # the log and exp tests name their library (Arithmetic checks it)
        strict = strict if arith.test == "exp" and not libm.rounds_python_coin(arith.library, arith.dtype) else True
        return ("const", _library_threshold(rows, x, rule)), strict
    # fl(u * q) < p: a threshold on the grid, compared strictly
    return ("float-product", "target", "draft", x, arith.dtype, rule.coin.name, rule.comparison), True


class _Builder(Builder):
    """Builds one position's outcome tree; every branch's probability comes from its primitive."""

    rows: Rows

    def __init__(self, rows: Rows, rule: Rule):
        self.rows, self.rule, self.v = rows, rule, len(rows["p"])
        self.shared: Node | None = None  # a residual subtree that does not depend on the draft

    def after_draft(self, x: int, unchecked: bool) -> Node:
        rule, rows = self.rule, self.rows
        if unchecked or rule.acceptance == "all":
            why = "committed without a test" if unchecked else "every draft accepted"
            return self.node("commit", [self.branch(Choice(("always",), why), Leaf(x, True))])
        if rule.acceptance == "greedy":
            top = rows.argmax("target")
            if x == top:
                return self.node("greedy test", [self.branch(Choice(("argmax-is", "target", x)), Leaf(x, True))])
            return self.node("greedy test", [self.branch(Choice(("argmax-is-not", "target", x)), Leaf(top, False))])
        if rule.acceptance == "match":
            return self.node("target sample", [self.branch(Draw("target", y), Leaf(y, y == x)) for y in range(self.v)])
        # ratio test: u < p(x)/q(x) (or <=); the product test u * q < p needs no case for q(x) = 0
        if rows["draft"][x] == 0 and not (rule.arithmetic.test == "product" and not rule.arithmetic.is_exact):
            if rows["target"][x] > 0:
                inner = self.node(
                    "p(x) > 0",
                    [self.branch(Choice(("positive", "target", x), "p/q = +inf: every coin passes"), Leaf(x, True))],
                )
            else:
                inner = self.node(
                    "p(x) = 0",
                    [
                        self.branch(
                            Choice(("zero", "target", x), "p/q = 0/0 = NaN: no coin passes"),
                            lambda: self.residual(x, None),
                        )
                    ],
                )
            return self.node("q(x) = 0", [self.branch(Choice(("zero", "draft", x)), inner)])
        source, strict = accept_bound(rows, x, rule)
        accept = self.branch(Coin(rule.coin, upper=Bound(source, strict)), Leaf(x, True))
        reject = Bound(source, not strict)  # the complement: u >= t for "<", u > t for "<="
        if rule.residual_draw == "inverse-cdf-reuse" and rows.cumulative("residual")[-1] > 0:
            return self.node("accept test and inverse-CDF residual (one coin)", [accept, *self._cdf(reject)])
        return self.node(
            "accept test", [accept, self.branch(Coin(rule.coin, lower=reject), lambda: self.residual(x, reject))]
        )

    def _cdf(self, lower: Bound | None) -> list[Branch | None]:
        """The residual token as the smallest i with u < C_i, u restricted to ``lower``'s side."""
        out = []
        prev = start = Bound(("const", 0), False)
        low: Bound | None
        bounds = [*(Bound(("cdf", "residual", i), True) for i in range(self.v)), None]
        for i, upper in enumerate(bounds):
            low = prev
            if lower is not None:
                a, b = lower.value(self.rows), prev.value(self.rows)
                if a > b or (a == b and lower.strict):
                    low = lower
            output = i if upper is not None else (self.v - 1 if self.rule.fallthrough == "last" else self.v)
            low = None if low is start else low  # u >= 0 always holds: no threshold to state
            out.append(self.branch(Coin(self.rule.coin, lower=low, upper=upper), Leaf(output, False)))
            if upper is not None:
                prev = Bound(upper.source, False)
        return out

    def residual(self, x: int, reject: Bound | None) -> Node:
        """The rejection's subtree; one shared node for every x when it does not depend on x."""
        if self.shared is not None:
            return self.shared
        node = self._residual(x)
        if self.rule.residual_draw == "independent" or self.rows.cumulative("residual")[-1] == 0:
            self.shared = node
        return node

    def _residual(self, x: int) -> Node:
        rule, rows = self.rule, self.rows
        if rows.cumulative("residual")[-1] == 0:
            fb = rule.fallback
            if fb == "error":
                raise ResidualUndefined(
                    f"a rejection of drafted token {x} is possible but the residual has mass 0 "
                    "(p == q after processing); the rule's fallback is 'error'"
                )
            if fb in ("target", "uniform"):
                return self.node(
                    f"fallback: draw from {fb}", [self.branch(Draw(fb, y), Leaf(y, False)) for y in range(self.v)]
                )
            top = rows.argmax("target") if fb == "argmax" else self.v - 1
            cond = ("argmax-is", "target", top) if fb == "argmax" else ("always",)
            return self.node(f"fallback: {fb}", [self.branch(Choice(cond), Leaf(top, False))])
        if rule.residual_draw == "inverse-cdf-reuse":  # reached only through a q(x) = 0 branch: a fresh coin
            return self.node("inverse-CDF residual", self._cdf(None))
        if rule.residual_draw == "race-reuse":
            return self.node(
                "residual race (shared noise)",
                [self.branch(RaceGiven("proposal", x, "residual", y), Leaf(y, False)) for y in range(self.v)],
            )
        return self.node("residual draw", [self.branch(Draw("residual", y), Leaf(y, False)) for y in range(self.v)])


def position_tree(
    p: Any, q: Any, rule: Rule = STANDARD, *, proposal: Any = None, drafted: int | None = None, unchecked: bool = False
) -> OutcomeTree:
    """The outcome tree of one verification position under ``rule``.

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        Target and draft rows (before the rule's processing), each summing to 1.
    rule : Rule, optional
        The verifier's choices (default: the textbook rule).
    proposal : sequence of exact rationals, shape [V], optional
        The law the draft token is really drawn from, if not the (processed) q of the ratio.
    drafted : int, optional
        A given drafted token: the tree starts after the draft (the law given x).
    unchecked : bool, optional
        Commit the draft without a test (a position the rule leaves unchecked).

    Returns
    -------
    OutcomeTree
        Root ``draft`` (a :class:`~specproof.laws.outcome.Draw` from ``proposal`` per token), then
        the acceptance test and the residual draw as the rule makes them. Branches of
        probability 0 are left out.

    Raises
    ------
    InvalidDistribution
        Bad rows.
    ResidualUndefined
        A rejection has positive probability, the residual has mass 0 and the rule's fallback
        is ``"error"``.

    Notes
    -----
    ``q(x) = 0`` under the ratio test (possible when the proposal is not q): ``p(x) > 0`` gives
    ``p/q = +inf`` (accepted, as IEEE division does); ``p(x) = 0`` gives ``0/0 = NaN``, which
    every comparison fails (rejected). With ``inverse-cdf-reuse`` the coin's intervals are
    intersected with the rejection region: one coin node with the accept interval and one
    interval per residual token.

    Examples
    --------
    >>> tree = position_tree(["1/2", "1/2"], ["1/4", "3/4"])
    >>> tree.law()
    ((Fraction(1, 2), Fraction(1, 2)), {})
    >>> [br.probability for br in tree.root.branches]
    [Fraction(1, 4), Fraction(3, 4)]
    """
    rows, recipes = _rows(p, q, rule, proposal)
    b = _Builder(rows, rule)
    if drafted is not None:
        if isinstance(drafted, bool) or not isinstance(drafted, int) or not 0 <= drafted < b.v:
            raise InvalidDistribution(f"drafted token is {drafted!r}, not an integer token id in [0, {b.v})")
        root: Node = b.after_draft(drafted, unchecked)
    else:
        root = b.node(
            "draft",
            [
                Branch(Draw("proposal", x), Draw("proposal", x).probability(rows), b.after_draft(x, unchecked))
                for x in range(b.v)
                if rows["proposal"][x]
            ],
        )
    return OutcomeTree(rows, root, b.v, _derivations(p, q, rule), recipes)


def _derivations(p: Any, q: Any, rule: Rule) -> dict[str, str]:
    """What each row is; for rows computed from logits, which library's softmax was evaluated, in which dtype."""
    out = dict(_DERIVATIONS)
    for given, names in ((p, ("p", "target", "reference")), (q, ("q", "draft", "proposal"))):
        if isinstance(given, Logits):
            from specproof.rules import libm

            how = (
                f"the softmax by {libm.library_provenance(given.library)} in {rule.arithmetic.dtype}, evaluated and used as "
                "data (not modelled), of the {} logits after {}; the masking steps modelled exactly "
                "(Processing.apply_logits)"
            )
            whose = "target" if names[0] == "p" else "draft"
            out[names[0]] = how.format(whose, "no processing")
            out[names[1]] = how.format(whose, f"the rule's {names[1]} processing")
            out[names[2]] = how.format(whose, f"the rule's {names[2]} processing")
    return out


@dataclass(frozen=True)
class PositionRuleLaw:
    """The exact law of one verification position under a rule.

    Attributes
    ----------
    tree : OutcomeTree
        The outcomes, each branch with its primitive and exact probability.
    law : tuple of Fraction, length V
        P(the verifier emits each token).
    out_of_range : dict of int -> Fraction
        Mass on ids outside [0, V) (a faulty rule); empty for a sound one.
    reference : tuple of Fraction, length V
        The law the output should have (p after the rule's reference processing).
    alpha : Fraction
        P(the drafted token is accepted) under the rule.
    textbook_alpha : Fraction
        ``sum_x min(p(x), q(x))`` on the processed rows: the textbook acceptance.
    tv : Fraction
        Exact total variation between the emitted law and the reference (out-of-range mass
        counts fully).
    """

    tree: OutcomeTree
    law: tuple[Fraction, ...]
    out_of_range: dict[int, Fraction]
    reference: tuple[Fraction, ...]
    alpha: Fraction
    textbook_alpha: Fraction
    tv: Fraction

    @property
    def lossless(self) -> bool:
        """True iff the emitted law equals the reference exactly (and no invalid id)."""
        return self.tv == 0

    @property
    def tv_reference(self) -> Fraction:
        """TV(law, reference): :attr:`tv` (the position contract's name,
        :class:`specproof.laws.contract.PositionContract`)."""
        return self.tv

    def differing(self) -> list[int]:
        """The token ids whose emitted mass differs from the reference."""
        return [i for i, (a, b) in enumerate(zip(self.law, self.reference)) if a != b]


def position_law(p: Any, q: Any, rule: Rule = STANDARD, *, proposal: Any = None) -> PositionRuleLaw:
    """The exact emitted law, acceptance and TV of one verification position under ``rule``.

    Parameters
    ----------
    p, q, rule, proposal
        As :func:`position_tree`. The position is the first of a block: a rule that leaves its
        first drafts unchecked commits the draft here.

    Returns
    -------
    PositionRuleLaw

    Raises
    ------
    InvalidDistribution, ResidualUndefined
        As :func:`position_tree`.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1 (the textbook rule is lossless and
    accepts with probability ``sum min(p, q)``); Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> from specproof.rules.policy import named_rule
    >>> law = position_law(["9/10", "1/10"], ["1/10", "9/10"], named_rule("accept-all"))
    >>> law.law, law.tv, law.alpha, law.textbook_alpha
    ((Fraction(1, 10), Fraction(9, 10)), Fraction(4, 5), Fraction(1, 1), Fraction(1, 5))
    """
    tree = position_tree(p, q, rule, proposal=proposal, unchecked=rule.unchecked_drafts > 0)
    law, bad = tree.law()
    ref = tree.rows["reference"]
    textbook = sum(
        (min(a, b) for a, b in zip(_normalized(tree.rows["target"]), _normalized(tree.rows["draft"]))), Fraction(0)
    )
    return PositionRuleLaw(
        tree, law, bad, ref, tree.accept_probability(), textbook, _tv(law, ref, sum(bad.values(), Fraction(0)))
    )


# --------------------------------------------------------------------------- blocks


def _as_model(rows: Any) -> Callable[[Prefix], Any]:
    if callable(rows):
        return rows
    return lambda prefix: rows


@dataclass(frozen=True)
class BlockRuleLaw(LengthLawName):
    """The exact law of one block verification step under a rule.

    Attributes
    ----------
    gamma : int
    emitted : dict of tuple of int -> Fraction
        The law of the committed block (1 to gamma + 1 ids; with stop tokens and the textbook
        rule a block ends at its first stop token).
    accepted_length_law : tuple of Fraction, length gamma + 1
        P(exactly i drafts are accepted), i the accepted prefix.
    expected_accepted : Fraction
        E[accepted prefix length].
    expected_counted : Fraction
        E[the rule's accepted count]: the prefix, or the sum of per-position pass flags.
    expected_emitted : Fraction
        E[committed tokens] (past a stop token too, if the rule commits past it).
    expected_emitted_to_stop : Fraction
        E[committed tokens up to and including the first stop token].
    node_tv : dict of tuple of int -> Fraction
        At every reachable accepted prefix s, the TV between the law of the block's next token
        and the reference row after s.
    stream_tv : Fraction or None
        Exact TV between the first gamma + 1 output tokens (block, then reference sampling;
        cut at the first stop token) and the reference's own law; None when V**(gamma + 1) is
        above the enumeration limit.
    out_of_range : Fraction
        Mass of blocks ending in an id outside [0, V).
    acceptance_rate : Fraction
        The rate the rule reports: ``expected_counted / gamma`` (per-draft) or
        ``expected_counted / expected_emitted`` (per-emitted).
    """

    gamma: int
    emitted: dict[Prefix, Fraction]
    accepted_length_law: tuple[Fraction, ...]
    expected_accepted: Fraction
    expected_counted: Fraction
    expected_emitted: Fraction
    expected_emitted_to_stop: Fraction
    node_tv: dict[Prefix, Fraction]
    stream_tv: Fraction | None
    out_of_range: Fraction = Fraction(0)
    acceptance_rate: Fraction = Fraction(0)

    @property
    def lossless(self) -> bool:
        """True iff at every reachable accepted prefix the next token has the reference law."""
        return all(v == 0 for v in self.node_tv.values()) and self.out_of_range == 0


def _to_stop(block: Prefix, stops: frozenset[int]) -> int:
    for i, t in enumerate(block):
        if t in stops:
            return i + 1
    return len(block)


def block_law(
    target: Any,
    draft: Any,
    gamma: int,
    rule: Rule = STANDARD,
    *,
    stop_tokens: Sequence[int] = (),
    proposal: Any = None,
    enumeration_limit: int = 200_000,
) -> BlockRuleLaw:
    """The exact law of one verification step with ``gamma`` drafts under ``rule``.

    Parameters
    ----------
    target, draft : callable or sequence
        ``target(prefix)`` gives the target row after the drafted ``prefix`` (as
        :func:`specproof.laws.chain.verification_law`); a sequence of rationals is used at every
        position.
    gamma : int
        Number of drafts, >= 1.
    rule : Rule, optional
        Default: the textbook rule.
    stop_tokens : sequence of int, optional
        Stop ids (EOS). With ``rule.stop_at_stop_token`` the block ends at the first one.
    proposal : callable or sequence, optional
        The draft's real proposal law at each prefix, if it is not the q of the ratio.
    enumeration_limit : int, optional
        Largest V**(gamma + 1) for which :attr:`BlockRuleLaw.stream_tv` is computed (and the
        flag count when ``rule.accepted_count == "flags"``).

    Returns
    -------
    BlockRuleLaw

    Raises
    ------
    InvalidDistribution
        Bad rows or gamma; ``accepted_count="flags"`` above the enumeration limit.
    ResidualUndefined
        As :func:`position_tree`.

    Notes
    -----
    The block is a walk down accepted prefixes: at prefix s (depth < gamma) the position's
    outcome tree gives, per leaf, either an accepted draft x (go on at s + (x,), or stop there
    if x is a stop token) or a rejection emitting y (the block ends with s + (y,)). At depth
    gamma the bonus token is drawn from the (processed) target row. Losslessness is checked
    node by node: the next token's law at s must be the reference row there, which makes the
    stream's first gamma + 1 tokens the target's joint law (as in
    :func:`specproof.laws.chain.verification_law`).

    References
    ----------
    Leviathan et al. 2023, Algorithm 1 and Section 3.4 (expected generated tokens).

    Examples
    --------
    >>> law = block_law(["1/2", "1/2"], ["1/2", "1/2"], 2, stop_tokens=[0])
    >>> law.expected_emitted_to_stop, law.expected_emitted
    (Fraction(7, 4), Fraction(7, 4))
    """
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise InvalidDistribution(f"gamma must be an integer >= 1, got {gamma!r}")
    tmodel, dmodel = _as_model(target), _as_model(draft)
    pmodel = None if proposal is None else _as_model(proposal)
    stops = frozenset(int(t) for t in stop_tokens)

    made: dict[tuple[int, int], tuple[Any, Any, Rows]] = {}

    def rows_at(prefix: Prefix) -> Rows:
        """The rows after ``prefix``, made once per pair of row objects (a stack gives the same row at every
        prefix of a depth; the objects are held, so an id is never reused while it is a key)."""
        t, d = tmodel(prefix), dmodel(prefix)
        hit = made.get((id(t), id(d)))
        if hit is None or hit[0] is not t or hit[1] is not d:
            hit = (t, d, _rows(t, d, rule, None)[0])
            made[(id(t), id(d))] = hit
        return hit[2]

    def reference(prefix: Prefix) -> tuple[Fraction, ...]:
        return rows_at(prefix)["reference"]

    positions: dict[tuple, tuple[Any, Any, Any, Position]] = {}

    def position(prefix: Prefix) -> Position:
        """The position after ``prefix``, made once per triple of row objects (held, as in ``rows_at``)."""
        t, d = tmodel(prefix), dmodel(prefix)
        prop = None if pmodel is None else pmodel(prefix)
        unchecked = len(prefix) < rule.unchecked_drafts
        key = (id(t), id(d), id(prop), unchecked)
        hit = positions.get(key)
        if hit is None or hit[0] is not t or hit[1] is not d or hit[2] is not prop:
            tree = position_tree(t, d, rule, proposal=prop, unchecked=unchecked)
            hit = (t, d, prop, tree_position(tree, tree.rows["reference"]))
            positions[key] = hit
        return hit[3]

    def bonus(prefix: Prefix) -> tuple[Any, Fraction, tuple[Fraction, ...]]:
        rows = rows_at(prefix)
        return rows["reference"], Fraction(1), _normalized(rows["target"])

    law = compose(position, gamma, bonus, stop_tokens=stops, stop_at_stop_token=rule.stop_at_stop_token, node_tv=True)
    assert isinstance(law.emitted, BlockLaw) and law.node_tv is not None  # as compose builds them (node_tv=True)
    blocks = law.emitted.to_dict()
    expected = law.expected_accepted
    emitted = sum((len(b) * m for b, m in blocks.items()), Fraction(0))
    to_stop = sum((_to_stop(b, stops) * m for b, m in blocks.items()), Fraction(0))
    size = (law.vocab_size or 1) ** (gamma + 1)
    counted = expected
    if rule.accepted_count == "flags":
        if size > enumeration_limit:
            raise InvalidDistribution(
                f"the flag count enumerates V**(gamma+1) = {size} sequences, above the limit {enumeration_limit}"
            )
        counted = _flag_expectation(tmodel, dmodel, pmodel, gamma, rule)
    stream = None
    if size <= enumeration_limit:
        stream = stream_tv(blocks, reference, gamma, stop_tokens=stops)
    rate = counted / gamma if rule.acceptance_rate == "per-draft" else counted / emitted
    return BlockRuleLaw(
        gamma,
        blocks,
        law.accepted_length_law,
        expected,
        counted,
        emitted,
        to_stop,
        dict(law.node_tv),
        stream,
        law.out_of_range,
        rate,
    )


def _flag_expectation(tmodel, dmodel, pmodel, gamma: int, rule: Rule) -> Fraction:
    """E[sum of per-position pass flags] over every drafted prefix (drafts go on after a rejection)."""
    total = Fraction(0)
    stack: list[tuple[Prefix, Fraction]] = [((), Fraction(1))]
    while stack:
        prefix, reach = stack.pop()
        if len(prefix) == gamma:
            continue
        tree = position_tree(
            tmodel(prefix),
            dmodel(prefix),
            rule,
            proposal=None if pmodel is None else pmodel(prefix),
            unchecked=len(prefix) < rule.unchecked_drafts,
        )
        total += reach * tree.accept_probability()
        for x, px in enumerate(_normalized(tree.rows["proposal"])):
            if px:
                stack.append((prefix + (x,), reach * px))
    return total


@dataclass(frozen=True)
class GivenBlockRuleLaw(LengthLawName):
    """What a rule does with one given drafted block.

    Attributes
    ----------
    real_drafts : int
        The drafts verified (before the first padding sentinel, unless the rule reads it as an id).
    pass_probabilities : tuple of Fraction
        Per verified position i, P(the draft passes its test), as if reached.
    accepted_length_law : tuple of Fraction, length real_drafts + 1
        P(exactly i drafts accepted), i the accepted prefix.
    expected_accepted : Fraction
        E[accepted prefix].
    expected_flags : Fraction
        E[sum of the pass flags]: ``sum(pass_probabilities)``.
    expected_counted : Fraction
        What the rule counts (the prefix or the flags).
    emitted : tuple of tuple of Fraction
        ``emitted[i]``: the law of the token emitted when the verifier stops after i accepted
        drafts (the rejection's token law at i < real_drafts, the bonus row at real_drafts);
        all zeros where the stop has probability 0 and nothing is defined.
    """

    real_drafts: int
    pass_probabilities: tuple[Fraction, ...]
    accepted_length_law: tuple[Fraction, ...]
    expected_accepted: Fraction
    expected_flags: Fraction
    expected_counted: Fraction
    emitted: tuple[tuple[Fraction, ...], ...]


def given_block_law(
    target_rows: Sequence[Any],
    draft_rows: Sequence[Any],
    tokens: Sequence[int],
    rule: Rule = STANDARD,
    *,
    pad_id: int = -1,
) -> GivenBlockRuleLaw:
    """Exact law of the verifier's outcome for one given drafted block under ``rule``.

    Parameters
    ----------
    target_rows : sequence of len(tokens) + 1 rows
        The target's row at each drafted position, then the bonus row.
    draft_rows : sequence of len(tokens) rows
    tokens : sequence of int
        Drafted ids, possibly ending in padding sentinels ``pad_id`` (fewer real drafts).
    rule : Rule, optional
    pad_id : int, optional
        The padding sentinel (default -1).

    Returns
    -------
    GivenBlockRuleLaw

    Raises
    ------
    InvalidDistribution
        Row counts that do not fit, an id outside [0, V) that is not a trailing sentinel, a real
        draft after a sentinel.

    Notes
    -----
    With ``rule.padding == "stop"`` the verifier treats the drafts before the first sentinel as
    the block and draws the bonus token from the row after the last real draft; with
    ``"wraparound"`` a sentinel s is read as id ``V + s`` and verified like a draft.

    Examples
    --------
    >>> half = ["1/2", "1/2"]
    >>> law = given_block_law([half, half, half], [half, half], [0, -1])
    >>> law.real_drafts, law.accepted_length_law
    (1, (Fraction(0, 1), Fraction(1, 1)))
    """
    n = len(tokens)
    if n < 1 or len(target_rows) != n + 1 or len(draft_rows) != n:
        raise InvalidDistribution(
            f"need >= 1 tokens, len(tokens) + 1 target rows and len(tokens) draft rows; got {n} tokens, "
            f"{len(target_rows)} target rows, {len(draft_rows)} draft rows"
        )
    first = target_rows[0]
    vocab = len(first) if isinstance(first, Logits) else len(as_distribution(first, "p"))
    ids: list[int] = []
    padded = False
    for i, t in enumerate(tokens):
        if isinstance(t, bool) or not isinstance(t, int):
            raise InvalidDistribution(f"drafted token {i} is {t!r}, not an integer")
        if t == pad_id:
            padded = True
            if rule.padding == "wraparound" and -vocab <= t < 0:
                ids.append(vocab + t)
            continue
        if padded and rule.padding == "stop":
            raise InvalidDistribution(f"drafted token {i} ({t}) follows a padding sentinel {pad_id}")
        if not 0 <= t < vocab:
            raise InvalidDistribution(f"drafted token {i} is {t}, not a token id in [0, {vocab})")
        ids.append(t)
    real = len(ids)
    steps = []
    for i, x in enumerate(ids):
        try:
            tree = position_tree(target_rows[i], draft_rows[i], rule, drafted=x, unchecked=i < rule.unchecked_drafts)
        except (InvalidDistribution, ResidualUndefined) as exc:
            raise type(exc)(f"position {i}: {exc}") from None
        if tree.vocab_size != vocab:
            raise InvalidDistribution(f"position {i}: V = {tree.vocab_size}, not {vocab}")
        keep = tree.accept_probability()
        rejected = [Fraction(0)] * vocab
        for (output, accepted), m in tree.outcomes().items():
            if not accepted and 0 <= output < vocab:
                rejected[output] += m
        steps.append(
            (keep, tuple(r / (1 - keep) for r in rejected) if keep != 1 else tuple(Fraction(0) for _ in rejected))
        )
    bonus = _normalized(_rows(target_rows[real], target_rows[real], rule, None)[0]["target"])
    lengths, rows_out = given_block(steps, bonus)
    passes = tuple(keep for keep, _ in steps)
    expected = sum((i * m for i, m in enumerate(lengths)), Fraction(0))
    flags = sum(passes, Fraction(0))
    return GivenBlockRuleLaw(
        real, passes, lengths, expected, flags, flags if rule.accepted_count == "flags" else expected, rows_out
    )


def accepted_prefix_expectation(pass_probabilities: Sequence[Any]) -> tuple[Fraction, Fraction]:
    """E[accepted prefix] and E[sum of flags] for independent per-position pass probabilities.

    ``E[prefix] = sum_k prod_{i <= k} a_i`` (the k-th draft counts only if all before it passed);
    the non-causal flag sum is ``sum_i a_i``.

    Parameters
    ----------
    pass_probabilities : sequence of exact rationals
        P(the draft at position i passes its test), independent across positions.

    Returns
    -------
    prefix : Fraction
        E[length of the accepted prefix].
    flags : Fraction
        E[number of positions that pass], counting passes after the first rejection.

    Examples
    --------
    >>> accepted_prefix_expectation(["1/2", "9/10", "9/10"])
    (Fraction(271, 200), Fraction(23, 10))
    """
    from specproof.laws.rational import to_fraction

    a = [to_fraction(x, what=f"pass probability {i}") for i, x in enumerate(pass_probabilities)]
    prefix, run = Fraction(0), Fraction(1)
    for x in a:
        run *= x
        prefix += run
    return prefix, sum(a, Fraction(0))


def acceptance_rate(accepted: Any, gamma: int, definition: str = "per-draft") -> Fraction:
    """The acceptance rate of a block with ``accepted`` of ``gamma`` drafts accepted.

    ``per-draft``: accepted / gamma (the fraction of drafts accepted, the rate alpha estimates);
    ``per-emitted``: accepted / (accepted + 1), the fraction of emitted tokens that were drafts
    (a biased stand-in for the same quantity).

    Parameters
    ----------
    accepted : exact rational
        Accepted drafts (or their expectation).
    gamma : int
        Drafts in the block.
    definition : {"per-draft", "per-emitted"}

    Returns
    -------
    Fraction

    Raises
    ------
    InvalidDistribution
        An unknown definition or an inexact ``accepted``.

    Examples
    --------
    >>> acceptance_rate(1, 3), acceptance_rate(1, 3, "per-emitted")
    (Fraction(1, 3), Fraction(1, 2))
    """
    from specproof.laws.rational import to_fraction

    a = to_fraction(accepted, what="accepted")
    if definition == "per-draft":
        return a / gamma
    if definition == "per-emitted":
        return a / (a + 1)
    raise InvalidDistribution(f"unknown acceptance-rate definition {definition!r}: per-draft or per-emitted")


def greedy_margin(row: Any) -> tuple[int, Fraction]:
    """The argmax of a row (ties to the smallest id) and its margin over the runner-up.

    A greedy verifier's output flips when two rows (a float32 and a bf16 target, say) disagree
    by more than this margin.

    Parameters
    ----------
    row : sequence of exact rationals, shape [V]
        A distribution.

    Returns
    -------
    argmax : int
    margin : Fraction
        ``row[argmax]`` minus the second largest entry (the entry itself when V = 1).

    Examples
    --------
    >>> greedy_margin(["5001/10000", "4999/10000"])
    (0, Fraction(1, 5000))
    """
    r = as_distribution(row, "row").fractions()
    order = sorted(range(len(r)), key=lambda i: (-r[i], i))
    if len(r) == 1:
        return 0, r[0]
    return order[0], r[order[0]] - r[order[1]]


# --------------------------------------------------------------------------- counterexamples


@dataclass(frozen=True)
class Counterexample:
    """A pair (p, q) on which a rule is lossy, with its exact TV."""

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    tv: Fraction


@dataclass(frozen=True)
class SearchResult:
    """The outcome of :func:`search_counterexample`.

    Attributes
    ----------
    smallest : Counterexample or None
        The first lossy pair in the order (V, common denominator, p, q): the smallest
        vocabulary, then the smallest denominator.
    largest : Counterexample or None
        The pair with the largest exact TV found (the first one found on ties).
    pairs : int
        How many pairs were evaluated.
    """

    smallest: Counterexample | None
    largest: Counterexample | None
    pairs: int


def _compositions(total: int, parts: int):
    for cut in itertools.combinations(range(total + parts - 1), parts - 1):
        prev, out = -1, []
        for c in cut:
            out.append(c - prev - 1)
            prev = c
        out.append(total + parts - 1 - prev - 1)
        yield out


def search_counterexample(
    rule: Rule,
    *,
    max_vocab: int = 4,
    max_denominator: int = 8,
    random_pairs: int = 0,
    random_vocab: int = 6,
    random_denominator: int = 64,
    seed: int = 0,
    progress: Callable[[int], Any] | None = None,
) -> SearchResult:
    """Search for inputs on which ``rule`` is lossy: exhaustive over small pairs, then random.

    Parameters
    ----------
    rule : Rule
    max_vocab : int
        Exhaustive phase: every V in 1..max_vocab ...
    max_denominator : int
        ... and every common denominator d in 1..max_denominator, every pair of distributions
        with entries k/d (pairs already seen at a smaller d skipped).
    random_pairs : int
        Random phase: this many pairs, V in 2..random_vocab, entries k/d with d up to
        ``random_denominator``, from ``random.Random(seed)``.
    progress : callable, optional
        Called with 1 after each pair (for a progress bar).

    Returns
    -------
    SearchResult

    Notes
    -----
    Pairs on which the rule raises (an empty residual under fallback ``"error"``) are skipped.

    Examples
    --------
    >>> from specproof.rules.policy import named_rule
    >>> found = search_counterexample(named_rule("resample-from-target"), max_vocab=2, max_denominator=2)
    >>> found.smallest.p, found.smallest.q, found.smallest.tv
    ((Fraction(1, 2), Fraction(1, 2)), (Fraction(0, 1), Fraction(1, 1)), Fraction(1, 4))
    """
    smallest = largest = None
    count = 0

    def consider(p, q):
        nonlocal smallest, largest, count
        count += 1
        if progress is not None:
            progress(1)
        try:
            tv = position_law(p, q, rule).tv
        except ResidualUndefined:
            return
        if tv > 0:
            found = Counterexample(tuple(p), tuple(q), tv)
            if smallest is None:
                smallest = found
            if largest is None or tv > largest.tv:
                largest = found

    for v in range(1, max_vocab + 1):
        for d in range(1, max_denominator + 1):
            comps = list(_compositions(d, v))
            for a in comps:
                for b in comps:
                    if math.gcd(d, *a, *b) != 1:
                        continue
                    consider(tuple(Fraction(x, d) for x in a), tuple(Fraction(x, d) for x in b))
    rng = random.Random(seed)
    for _ in range(random_pairs):
        v = rng.randint(2, max(2, random_vocab))
        d = rng.randint(1, random_denominator)
        pair = []
        for _ in range(2):
            cuts = sorted(rng.randint(0, d) for _ in range(v - 1))
            parts = [b - a for a, b in zip([0, *cuts], [*cuts, d])]
            pair.append(tuple(Fraction(x, d) for x in parts))
        consider(*pair)
    return SearchResult(smallest, largest, count)


__getattr__ = renamed(
    __name__, {"PositionLaw": ("PositionRuleLaw", "checker.PositionLaw is the checker's own record")}, globals()
)
