"""TRUSTED: re-verify a specproof certificate from the target's and the draft's rows alone.

This is the small trusted kernel. It uses the standard library only, never a float, and
believes nothing it did not recompute. It knows few concepts: rows, row recipes, events,
trees, one walk and one law comparison. Every document kind is a front end that builds those
objects; none has its own arithmetic of the verifier.

Objects
-------
- A **row** (:class:`Row`) is a probability row held as integers over one denominator, so no
  step reduces a fraction and every sum is an integer sum. A row is stated (``"n/d"`` strings,
  or float64 bit patterns divided by their exact sum) or derived by a **recipe**, one step on
  other rows (:data:`RECIPES`, one small function each): ``copy``, ``positive-part`` max(a - b, 0), ``floor-difference``
  max(a - b, eps), ``normalized`` a / sum(a), ``without`` (tokens set to 0), ``one-hot-argmax``,
  ``uniform``, ``times-capped-ratio`` c min(1, a[x]/b[x]), ``scaled`` c a, ``minimum``
  min(a, b), and the float steps (:data:`FLOAT_FORMATS`, each the exact IEEE rounding,
  :func:`_round_float`): ``float-rounded`` fl(a), ``float-positive-part`` max(fl(a - b), 0),
  ``float-normalized`` fl(a / s), s the float sum of a left to right, ``float-divided``
  fl(a / s), s the float sum of a in the order the recipe names (:func:`_ordered_sum`: left to
  right or a tree, in a named accumulator; a library's order) or, stated as a number, bounded
  (:func:`_some_float_sum`) and reported as a stated value.
- An **event** (:data:`EVENTS`, one small function each) is a branch's primitive, its probability
  re-derived from the rows: ``draw`` (a token from a row), ``coin`` (a uniform between two
  thresholds, :func:`_threshold` and :data:`SOURCES`: ``ratio`` a[x]/b[x], ``cdf``, ``masses`` sum(a)/sum(b),
  ``const`` (a stated value, reported), ``float-ratio`` fl(a[x]/b[x]), ``float-product`` the grid
  coins with fl(u b[x]) < a[x], ``rounded-coin-ratio`` and ``rounded-coin-product`` the same with
  the coin rounded to the format first; under a coin model: continuous, a float grid, or fixed), ``choice`` (a
  condition on the rows: argmax, zero, positive, always) and ``race`` (an exponential race
  sharing its noise with an earlier one, :func:`_race_given`). Trees the kernel builds itself
  also draw every token of a row at once (``every``).
- A **tree** is a list of :class:`Node` values, parents first; each branch is an event, its
  claimed probability (if the document states one) and a child (a later node, or a leaf).

The three tables :data:`RECIPES`, :data:`EVENTS` and :data:`SOURCES` are the kernel's signature:
every primitive a document can name, and the one function that gives its row or probability.

One walk, one comparison
------------------------
- **The walk** (:func:`_walk`) re-derives every branch's probability, checks that each node's
  branches sum to 1 and each claimed reach (the parent's reach times the branch, summed over
  incoming branches), and returns the leaves with their re-derived masses. Claims are only
  compared, never computed with.
- **The law comparison** (:func:`_law_tv`) is the total variation between the leaves' law by
  token (:func:`_token_law`) and a reference row; a verifier is lossless at a position iff it
  is 0. Over a block, :func:`_stream_gap` makes the same comparison over token sequences: the
  emitted block continued by the target against the target's joint law.

Front ends (document kinds)
---------------------------
- ``specproof.certificate/1`` (every token's p, q, accept, residual and emitted masses as
  ``"n/d"`` strings, and the totals alpha, TV, normalizer, rejection) and
  ``specproof.compact-certificate/2`` (p and q as float64 bit patterns, each divided by its
  exact sum, which must lie within :data:`FLOAT_ROW_TOLERANCE` of 1; claimed rows at some tokens
  only): :func:`_check_position` reads p and q and :func:`_textbook_position` writes the
  sampler's steps (draw x from q, keep it with probability min(1, p(x)/q(x)), else draw from the
  residual (p - q)+ normalized) as a tree on the rows p, q, ``minimum p q`` and
  ``positive-part p q``; every claim is compared with what the walk and the comparison give.
- ``specproof.chain-certificate/2`` (one step over gamma drafts and the bonus token; rows at
  every prefix the verifier can accept): :func:`_check_chain` builds the textbook position of
  each distinct pair of rows once and composes them along the prefixes (reaches, the
  accepted-length law, E[emitted], mean alpha); the stream is the target's iff every pair's
  position is lossless.
- ``specproof.outcome-certificate/1`` (one position under an engine's rule): the document's
  own tree on rows re-derived from recipes (:func:`_outcome_rows`), walked, its law compared
  with the reference row (p, argmax of p, or a given row): :func:`_check_outcome`.
- ``specproof.block-certificate/1`` (one step over a block of gamma drafts): the same, with
  input rows after each prefix and leaves that are token sequences, compared by the stream
  gap: :func:`_check_block`.
- ``specproof.bundle/1``: a list of certificates of one kind: :func:`_check_document`.

Binding (``specproof check --target --draft``): :func:`input_rows` reads a JSON file's rows (exact ``"n/d"``
strings, or decimal numbers rounded to float64 exactly and divided by their exact sum), :func:`bind` compares
them with every input row the certificates read, and :func:`gate` says why a valid document does not certify
that the law is exactly p (``--require-lossless``).

Reading order for a reviewer: the file itself, top to bottom. It is ordered by audit priority,
each part under a banner saying what a fault in it can do: the vocabulary (the objects above, the
schemas); 1. the soundness core (:func:`_walk`, the events and coin thresholds, :func:`_token_law`,
:func:`_law_tv`, :func:`_stream_gap`: a fault here can make a false verdict); 2. rows and recipes (the
float steps, the recipes, stated rows: a fault gives the core wrong rows); 3. the front ends
(:func:`check` and one function per document kind: a fault compares the wrong claim or skips one);
4. parsing, messages and resource limits (:func:`parse`, the ``MAX_*`` bounds, which keep the cost of
a document bounded by its length: a fault rejects a valid document or costs time); 5. the binding.
docs/trust.md gives each part's size and what to check in it.

References: Leviathan et al. 2023 (Algorithm 1, Theorem 3.5, Appendix A.1); Chen et al. 2023
(Algorithm 2, Theorem 1).
"""

import base64
import json
import re
import struct
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from itertools import accumulate
from math import gcd, lcm
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, TypeVar, cast

if TYPE_CHECKING:  # for annotations only: never imported when the checker runs
    from os import PathLike

#: A JSON value as parsed: arbitrary by nature, narrowed with isinstance (or ``type(...) is``)
#: where the checker reads it.
Json: TypeAlias = Any

#: What the checker recomputed for one certificate (keys by kind: see :func:`check`).
Facts: TypeAlias = dict[str, Any]

#: An IEEE 754 binary format: (precision, the smallest and the largest normal exponent).
Format: TypeAlias = tuple[int, int, int]

#: A token sequence: a chain's prefix, or a block's ids.
Ids: TypeAlias = tuple[int, ...]

#: A row recipe as the document writes it: ``[kind, *arguments]``.
Recipe: TypeAlias = list[Json]

#: The charge for a row before it is built: ``room(den, where)``.
Room: TypeAlias = Callable[[int, str], None]

LeafKey = TypeVar("LeafKey", bound=Hashable)

#: The version names the tolerance on float rows, which the checker fixes (no document can).
VERSION = "2.0 (float rows within 1/1000 of 1)"

CERTIFICATE_SCHEMA = "specproof.certificate/1"

COMPACT_SCHEMA = "specproof.compact-certificate/2"

COMPACT_ENCODING = "float64-le-base64/renormalize"

CHAIN_SCHEMA = "specproof.chain-certificate/2"

EXACT_ENCODING = "rational"  # a chain's rows as lists of "n/d" strings

BUNDLE_SCHEMA = "specproof.bundle/1"

OUTCOME_SCHEMA = "specproof.outcome-certificate/1"

OUTCOME_CLAIMS = ("lossless",)

BLOCK_SCHEMA = "specproof.block-certificate/1"

BLOCK_TOTALS = ("accepted_length", "expected_emitted", "stream_tv")

#: The input rows of an outcome certificate: the target's, the draft's, and the law the draft
#: is really drawn from when it is not q.
INPUT_ROWS = ("p", "q", "proposal")

ROW_FIELDS = ("accept", "emitted", "p", "q", "residual")

TOTAL_FIELDS = ("alpha", "normalizer", "rejection", "tv")

CLAIMS = ("alpha_equals_one_minus_tv", "dist_equals_p")

CHAIN_TOTALS = ("accepted_length", "expected_emitted", "mean_alpha")

CHAIN_CLAIMS = ("stream_equals_target_law",)

CHAIN_NODE_FIELDS = {"prefix", "p", "q", "reach", "stop"}

#: A float64 row is a distribution iff its exact sum is within this of 1 (numerator, denominator):
#: the float path's default tolerance. It is then divided by that exact sum.
FLOAT_ROW_TOLERANCE = (1, 1000)


class Reason(str, Enum):  # noqa: UP042 (StrEnum would change str(reason) for callers: "Reason.NAME")
    """Why a document was rejected."""

    UNREADABLE = "unreadable"  # the file could not be read
    MALFORMED = "malformed"  # not JSON, truncated, or not an object/list where one belongs
    SCHEMA = "schema"  # unknown or missing schema version
    MISSING_FIELD = "missing-field"
    NOT_RATIONAL = "not-rational"  # a float, int, null or malformed string where "n/d" belongs
    TOKENS = "tokens"  # rows not exactly tokens 0..V-1 in order (dropped, duplicated, shuffled)
    NEGATIVE = "negative"  # a negative probability or mass
    NOT_NORMALIZED = "not-normalized"  # p or q does not sum to 1
    INPUT = "input"  # a compact certificate's row claims a p or q that its inputs do not give
    ACCEPT = "accept"  # claimed accept mass differs from q * min(1, p/q)
    RESIDUAL = "residual"  # claimed (p - q)+ differs
    EMITTED = "emitted"  # claimed emitted mass differs from the sampler's law
    TOTAL = "total"  # alpha, TV, normalizer, rejection or a chain total differs
    NODES = "nodes"  # a chain's nodes are not exactly the prefixes the verifier accepts, in order
    NODE_MASS = "node-mass"  # a chain node's claimed reach or stop mass differs
    CLAIM = "claim"  # a claim differs from what the recomputed law shows
    BRANCH = "branch"  # an outcome tree's branch probability differs from its primitive's on the rows


class Ratio(NamedTuple):
    """A non-negative rational kept as two integers, never reduced (reducing costs a gcd)."""

    num: int
    den: int


class Row(NamedTuple):
    """A probability row as integers over one denominator: entry i is ``nums[i] / den``."""

    nums: list[int]
    den: int


class PositionLaw(NamedTuple):
    """The law of one verification position, every mass over the common denominator ``den``.

    ``target`` and ``draft`` are p and q, ``accept`` the accept masses min(p, q), ``residual``
    the masses (p - q)+, ``accepted`` their sum alpha, ``normalizer`` the residual's mass Z.
    """

    den: int
    target: list[int]
    draft: list[int]
    accept: list[int]
    residual: list[int]
    accepted: int
    normalizer: int


@dataclass(frozen=True)
class Verdict:
    """The checker's answer: ``valid``, or the ``reason`` and a ``detail`` naming the values.

    ``facts`` holds, for a valid document, what the checker recomputed (one dict per
    certificate, in order), so that a report can show re-derived values instead of claims.
    """

    valid: bool
    reason: Reason | None = None
    detail: str = ""
    facts: tuple[Facts, ...] = field(default=(), compare=False, repr=False)

    def __bool__(self) -> bool:  # so that `if check(doc):` means "valid"
        return self.valid


class Rejection(Exception):
    """A rejection on its way out of nested checks: a :class:`Reason` and a detail."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class Number:
    """A JSON number that is not an integer (or NaN, Infinity), kept as its text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


# ================================================================ 1. the soundness core
#
# What a verdict rests on: the walk over a tree, each event's probability on the rows, and the one
# law comparison. A fault here can make a false verdict. Read this part first, and in full.

#
# Rows are held as integers over one denominator (:class:`Row`), so deriving a row never reduces
# a fraction: normalizing only replaces the denominator by the sum of the numerators, and a
# difference of two rows is taken over the lcm of their denominators (numbers grow by adding
# bits, and a row's common denominator is capped at MAX_ROW_BITS). Branch probabilities,
# reaches and sums are unreduced :class:`Ratio` values compared by cross-multiplication, as in
# the chain check; only the exponential race (V <= MAX_RACE_VOCAB) uses fractions.


class _Named:
    """A row of a tree: the :class:`Row`, its running sums of numerators, and its argmax (ties to
    the smallest id), each computed once (the argmax when first asked for)."""

    __slots__ = ("row", "cumulative", "_top")
    row: Row
    cumulative: list[int]
    _top: int | None

    def __init__(self, row: Row) -> None:
        self.row, self.cumulative, self._top = row, list(accumulate(row.nums)), None

    @property
    def top(self) -> int:
        if self._top is None:
            nums = self.row.nums
            self._top = max(range(len(nums)), key=lambda i: (nums[i], -i))
        return self._top


_named = _Named


class Node(NamedTuple):
    """A node of an outcome tree, as the walk reads it: the claimed reach (an "n/d" text, or None
    in a tree the checker built itself) and its branches."""

    reach: Json
    branches: list["Branch"]


class Branch(NamedTuple):
    """A branch: one event (a primitive), its claimed probability (or None in a tree the checker
    built), and its child: the index of a later node, or a leaf (checked by the walk's
    ``leaf_key``). The event ``{"every": row}`` (trees the checker builds only; no document can
    name it) is a draw of every token t of the row at once, each to the leaf (t, child)."""

    event: dict[str, Json]
    probability: Json
    child: Json


def _product(a: Ratio, b: Ratio) -> Ratio:
    return Ratio(a.num * b.num, a.den * b.den)


def _sum(terms: Iterable[Ratio], where: str | None = None) -> Ratio:
    """The exact sum of many unreduced ratios: the numerators of terms over one denominator are
    added first (one integer sum each), then the distinct denominators are merged pairwise in a
    balanced tree, so the numbers stay as small as the result needs.

    With ``where`` (the masses of an outcome or block tree), a partial sum over a denominator of
    more than :data:`MAX_MASS_BITS` bits is rejected (MALFORMED), so that a sum costs at most one
    product of bounded numbers per term.
    """
    by_den: dict[int, int] = {}
    for term in terms:
        by_den[term.den] = by_den.get(term.den, 0) + term.num
    level = [Ratio(num, den) for den, num in by_den.items()] or [Ratio(0, 1)]
    while len(level) > 1:
        merged = [Ratio(a.num * b.den + b.num * a.den, a.den * b.den) for a, b in zip(level[0::2], level[1::2])]
        if where is not None:
            _bounded_mass(max(merged, key=lambda r: r.den), where)
        if len(level) % 2:
            merged.append(level[-1])
        level = merged
    return level[0]


def _bounded_mass(value: Ratio, where: str) -> Ratio:
    """A re-derived mass (a reach, a branch's mass, a sum of them) of an outcome or block tree
    holds a denominator of at most :data:`MAX_MASS_BITS` bits."""
    if value.den.bit_length() > MAX_MASS_BITS:
        raise Rejection(
            Reason.MALFORMED,
            f"{where}: a mass over a denominator of {value.den.bit_length()} bits "
            f"(outcome and block trees hold masses up to {MAX_MASS_BITS} bits)",
        )
    return value


def _equal(a: Ratio, b: Ratio) -> bool:
    return a.num * b.den == b.num * a.den


def _same(reason: Reason, where: str, expected: Ratio, claimed: Ratio) -> None:
    if not _equal(expected, claimed):
        raise Rejection(reason, f"{where}: expected {_show(expected)}, claimed {_show(claimed)}")


def _walk(
    nodes: Sequence[Node],
    rows: dict[str, _Named],
    size: int,
    where: str,
    leaf_key: Callable[[Json, str], LeafKey | None],
    bounded: bool = True,
    stated: list[str] | None = None,
) -> tuple[dict[LeafKey, list[Ratio]], list[tuple[Ratio, str, Json]], set[str]]:
    """THE WALK: every document kind's tree goes through it. Walk the nodes (parents first):
    re-derive each branch's probability from its primitive and the rows, check it against the
    claim (if any) and each node's branches sum to 1, and check each node's claimed reach (if
    any): the root's is 1, any other's is the sum over its incoming branches of the parent's reach
    times the branch's probability, and every node but the root has a parent.

    Claims are only compared, never computed with: every sum and product is of re-derived
    values, so a claim written unreduced (``X/X``, ``j/(300 j)``) costs one comparison. A node's
    branches are grouped by where they lead (a later node or a leaf); each group's probabilities
    are summed first and multiplied by the node's reach once. With ``bounded`` (a document's own
    tree) every mass is bounded by :data:`MAX_MASS_BITS` (:func:`_sum`); a tree the checker built
    from rows whose size the document paid for is not. Returns (the leaves, each
    ``leaf_key(child)``, with their re-derived masses; the spread leaves of ``every`` draws, as
    (s, row name, child) with mass s x the row's numerator at each token; the names of the rows
    the events read). The stated values the events use (``const`` thresholds) are appended to
    ``stated``."""
    bound = where if bounded else None
    # re-derived reach x probability of each branch group into node i
    inflow: list[list[Ratio]] = [[] for _ in nodes]
    inflow[0].append(Ratio(1, 1))
    leaves: dict[LeafKey, list[Ratio]] = {}  # leaf key -> masses
    spread: list[tuple[Ratio, str, Json]] = []  # every-draws
    read: set[str] = set()  # rows the events read
    for i, node in enumerate(nodes):
        here = f"{where}.nodes[{i}]"
        if not inflow[i]:
            raise Rejection(Reason.NODES, f"{here} has no parent: no branch leads to it")
        reach = _sum(inflow[i], bound and f"{here}.reach")
        if node.reach is not None:
            _same(Reason.NODE_MASS, f"{here}.reach", reach, _rational(node.reach, f"{here}.reach"))
        inflow[i] = []  # freed: branches lead to later nodes only, never back to node i
        probabilities: list[Ratio] = []
        # ("node", index) or ("leaf", key) -> probabilities: the second item an int or a LeafKey
        groups: dict[tuple[str, Any], list[Ratio]] = {}
        for j, branch in enumerate(node.branches):
            there = f"{here}.branches[{j}]"
            if "every" in branch.event:  # a draw of every token of a row: each token's mass kept apart
                row = rows[branch.event["every"]]
                read.add(branch.event["every"])
                spread.append((Ratio(reach.num, reach.den * row.cumulative[-1]), branch.event["every"], branch.child))
                probabilities.append(Ratio(1, 1))
                continue
            probability = _event_probability(branch.event, rows, size, f"{there}.event", read, stated)
            if branch.probability is not None:
                _same(
                    Reason.BRANCH,
                    f"{there}.probability",
                    probability,
                    _rational(branch.probability, f"{there}.probability"),
                )
            probabilities.append(probability)
            child = branch.child
            if type(child) is int and i < child < len(nodes):
                groups.setdefault(("node", child), []).append(probability)
                continue
            key = leaf_key(child, f"{there}.child")
            if key is None:
                raise Rejection(
                    Reason.MALFORMED, f"{there}.child is {_show(child)}: not a later node or a leaf {leaf_key.__doc__}"
                )
            groups.setdefault(("leaf", key), []).append(probability)
        total = _sum(probabilities, bound and f"{here}.branches")
        if total.num != total.den:
            raise Rejection(Reason.TOTAL, f"{here}: its branches sum to {_show(total)}, not 1")
        for (kind, target), group in groups.items():
            mass = _product(reach, _sum(group, bound and here))
            if bounded:
                _bounded_mass(mass, f"{here}.branches")
            if kind == "node":
                inflow[target].append(mass)
            else:
                leaves.setdefault(target, []).append(mass)
    return leaves, spread, read


def _event_probability(
    event: dict[str, Json],
    rows: dict[str, _Named],
    size: int,
    where: str,
    read: set[str],
    stated: list[str] | None = None,
) -> Ratio:
    """A branch's probability (a :class:`Ratio`) from its primitive and the rows alone: the event
    :data:`EVENTS` names; the names of the rows it reads are added to ``read``, and a ``const``
    coin threshold is appended to ``stated`` (:func:`_threshold`)."""
    ((kind, body),) = event.items()  # one event: checked by _branch_shapes
    probability = EVENTS.get(kind)
    if probability is None:
        raise Rejection(Reason.MALFORMED, f"{where} has unknown event {_show(kind)}")
    return probability(body, rows, size, where, read, stated)


def _draw(
    body: Json, rows: dict[str, _Named], size: int, where: str, read: set[str], stated: list[str] | None
) -> Ratio:
    """``draw {row, token}``: row[token] / sum(row); a row of mass 0 is refused."""
    body = _only_fields(body, ("row", "token"), where)
    row = _named_row(rows, body["row"], where)
    if row.cumulative[-1] == 0:
        raise Rejection(Reason.MALFORMED, f"{where} draws from a row of mass 0")
    read.add(body["row"])
    return Ratio(row.row.nums[_token(body["token"], size, f"{where}.token")], row.cumulative[-1])


def _coin(
    body: Json, rows: dict[str, _Named], size: int, where: str, read: set[str], stated: list[str] | None
) -> Ratio:
    """``coin {model, lower, upper}``: the probability that the coin lies between the two thresholds
    (either may be null: no bound), under its model (continuous, a float grid, or fixed)."""
    body = _only_fields(body, ("model", "lower", "upper"), where)
    model = body["model"]
    if not isinstance(model, str) or not (model == "continuous" or model in _COIN_GRIDS or model.startswith("fixed:")):
        raise Rejection(Reason.MALFORMED, f"{where} has coin model {_show(model)}")
    top = Ratio(1, 1)
    if body["upper"] is not None:
        top = _coin_below(model, *_threshold(body["upper"], rows, size, f"{where}.upper", read, model, True, stated))
    if body["lower"] is None:
        return top
    value, strict = _threshold(body["lower"], rows, size, f"{where}.lower", read, model, False, stated)
    under = _coin_below(model, value, not strict)  # P(u at or below the lower end)
    gap = top.num * under.den - under.num * top.den
    return Ratio(gap, top.den * under.den) if gap > 0 else Ratio(0, 1)


def _choice(
    body: Json, rows: dict[str, _Named], size: int, where: str, read: set[str], stated: list[str] | None
) -> Ratio:
    """``choice {condition}``: 1 if the condition holds on the rows, else 0: ``["always"]``, or
    ``[argmax-is | argmax-is-not | zero | positive, row, token]``."""
    condition = _field(body, "condition", where)
    if condition == ["always"]:
        return Ratio(1, 1)
    if (
        not isinstance(condition, list)
        or len(condition) != 3
        or condition[0] not in ("argmax-is", "argmax-is-not", "zero", "positive")
    ):
        raise Rejection(Reason.MALFORMED, f"{where} has condition {_show(condition)}")
    row, t = _named_row(rows, condition[1], where), _token(condition[2], size, f"{where} token")
    read.add(condition[1])
    if condition[0].startswith("argmax"):
        holds = (row.top == t) == (condition[0] == "argmax-is")
    else:
        holds = (row.row.nums[t] == 0) == (condition[0] == "zero")
    return Ratio(int(holds), 1)


def _race(
    body: Json, rows: dict[str, _Named], size: int, where: str, read: set[str], stated: list[str] | None
) -> Ratio:
    """``race {first, given, second, winner}``: P(the second race is won by ``winner`` | the first,
    sharing its noise, was won by ``given``) (:func:`_race_given`), up to V = MAX_RACE_VOCAB."""
    body = _only_fields(body, ("first", "given", "second", "winner"), where)
    first, second = _named_row(rows, body["first"], where).row, _named_row(rows, body["second"], where).row
    given, winner = _token(body["given"], size, f"{where}.given"), _token(body["winner"], size, f"{where}.winner")
    if size > MAX_RACE_VOCAB or max(first.den, second.den).bit_length() > MAX_RACE_BITS:
        raise Rejection(
            Reason.MALFORMED,
            f"{where}: races are checked up to V = {MAX_RACE_VOCAB} and rows over denominators of {MAX_RACE_BITS} bits",
        )
    if first.nums[given] == 0:
        raise Rejection(Reason.MALFORMED, f"{where}: the first race cannot be won by {given} (weight 0)")
    read.update((body["first"], body["second"]))
    chance = _race_given(first.nums, given, second.nums, winner)  # weights: a row's numerators
    return Ratio(chance.numerator, chance.denominator)


#: A branch's primitive: ``probability(body, rows, V, where, read, stated)``.
Event: TypeAlias = Callable[[Json, dict[str, _Named], int, str, set[str], "list[str] | None"], Ratio]

#: Every event the kernel knows, by the key a branch writes it under.
EVENTS: dict[str, Event] = {"draw": _draw, "coin": _coin, "choice": _choice, "race": _race}


def _race_given(a: list[int], x: int, b: list[int], y: int) -> Fraction:
    """P(argmax_i b_i/E_i = y | argmax_i a_i/E_i = x), with E_i i.i.d. Exp(1) shared by both races
    (a and b: non-negative integer weights; a race depends only on their ratios).

    P(x wins the first race) = a_x / sum(a). The joint probability: for x == y it is
    1 / sum_i max(a_i/a_x, b_i/b_x). For x != y, write E_x = a_x s and E_y = b_y s l: both races
    are won as stated iff every other E_i exceeds s max(a_i, b_i l) and a_y/b_y < l < a_x/b_x
    (the second bound only if b_x > 0); integrating s out leaves a_x b_y / K(l)^2 with K(l) =
    a_x + b_y l + sum_{i != x, y} max(a_i, b_i l), linear c + d l between the breakpoints
    a_i/b_i, and the integral of 1/(c + d l)^2 from lo to hi is 1/(d(c + d lo)) - 1/(d(c + d hi)).
    """
    if b[y] == 0:
        return Fraction(0)
    if x == y:
        joint = Fraction(1) / sum(max(Fraction(a[i], a[x]), Fraction(b[i], b[x])) for i in range(len(a)))
    else:
        lo, hi = Fraction(a[y], b[y]), (Fraction(a[x], b[x]) if b[x] else None)
        others = [i for i in range(len(a)) if i not in (x, y)]
        cuts = sorted(
            {
                Fraction(a[i], b[i])
                for i in others
                if b[i] and lo < Fraction(a[i], b[i]) and (hi is None or Fraction(a[i], b[i]) < hi)
            }
        )
        # the pieces between consecutive edges lo, *cuts, hi (hi None: unbounded)
        pieces: list[tuple[Fraction, Fraction | None]] = (
            list(zip([lo, *cuts], [*cuts, hi])) if hi is None or lo < hi else []
        )
        total = Fraction(0)
        for left, right in pieces:
            probe = left + 1 if right is None else (left + right) / 2  # a point inside the piece
            c = a[x] + sum(a[i] for i in others if b[i] * probe <= a[i])
            d = b[y] + sum(b[i] for i in others if b[i] * probe > a[i])
            total += 1 / (d * (c + d * left)) - (0 if right is None else 1 / (d * (c + d * right)))
        joint = a[x] * b[y] * total
    return joint * sum(a) / a[x]


_COIN_GRIDS = {"float32": (24, False), "float64": (53, False), "float32-(0,1]": (24, True), "float64-(0,1]": (53, True)}


def _less(a: Ratio, b: Ratio, strict: bool) -> bool:
    """a < b (strict) or a <= b, for unreduced ratios with positive denominators."""
    left, right = a.num * b.den, b.num * a.den
    return left < right if strict else left <= right


def _coin_below(model: str, t: Ratio, strict: bool) -> Ratio:
    """P(u < t) (strict) or P(u <= t), a :class:`Ratio`, for the coin ``model``: U[0,1)
    ("continuous"), a grid of multiples of 2^-b on [0, 1) or (0, 1], or "fixed:v" (u is always
    v). A grid's probability is a count of grid points: those k with k < t 2^b (strict) or
    k <= t 2^b."""
    if model == "continuous":
        return Ratio(0, 1) if t.num <= 0 else Ratio(1, 1) if t.num >= t.den else t
    if model.startswith("fixed:"):
        value = _constant(model[len("fixed:") :], "a fixed coin")
        if value.num > value.den:
            raise Rejection(Reason.MALFORMED, f"a fixed coin at {_show(value)}, outside [0, 1]")
        return Ratio(int(_less(value, t, strict)), 1)
    bits, open_closed = _COIN_GRIDS[model]
    n = 1 << bits
    scaled = t.num * n
    top = -((-scaled) // t.den) - 1 if strict else scaled // t.den  # the largest admissible k
    low, high = (1, n) if open_closed else (0, n - 1)
    return Ratio(max(0, min(high, top) - low + 1), n)


def _threshold(
    bound: Json,
    rows: dict[str, _Named],
    size: int,
    where: str,
    read: set[str],
    model: str,
    upper: bool,
    stated: list[str] | None = None,
) -> tuple[Ratio, bool]:
    """A coin interval's end: ``{"source": [...], "strict": bool}``, its value re-derived; ``model``
    is the coin's, ``upper`` whether this is the upper end. A ``const`` end is the one value that is
    not re-derived: it is appended to ``stated`` (where it is, and its value), which the check reports
    as a stated value the verdict depends on."""
    bound = _only_fields(bound, ("source", "strict"), where)
    source, strict = bound["source"], bound["strict"]
    if type(strict) is not bool or not isinstance(source, list) or not source:
        raise Rejection(Reason.MALFORMED, f"{where} is not a source list and a strict flag")
    kind = source[0]
    known = SOURCES.get(kind) if isinstance(kind, str) else None
    if known is None or len(source) != known[0]:
        raise Rejection(
            Reason.MALFORMED,
            f"{where} has source {_show(source)}, not ratio/cdf/masses/const/"
            "float-ratio/float-product/rounded-coin-ratio/rounded-coin-product",
        )
    if kind in _GRID_TESTS and (source[5] != model or strict != upper):
        # the passing coins are u < t: the upper end, strict; or the failing ones, u >= t: the lower end, not strict
        raise Rejection(
            Reason.MALFORMED,
            f"{where}: a {kind} threshold counts the coins of its own grid "
            f"{_show(source[5])} that pass (u < t, an upper end, strict) or fail "
            f"(u >= t, a lower end, not strict); here the coin is {_show(model)}, "
            f"an {'upper' if upper else 'lower'} end, strict {strict}",
        )
    value = known[1](source, rows, size, where, read)
    if kind == "const" and stated is not None:  # the one value not re-derived
        stated.append(f"{where}: the constant {_show(value)}")
    return value, strict


def _ratio_source(source: list[Json], rows: dict[str, _Named], size: int, where: str, read: set[str]) -> Ratio:
    """``[ratio, a, b, x]``: a[x] / b[x]; b[x] = 0 is refused."""
    a, b = _named_row(rows, source[1], where).row, _named_row(rows, source[2], where).row
    x = _token(source[3], size, f"{where} token")
    if b.nums[x] == 0:
        raise Rejection(Reason.MALFORMED, f"{where} divides by {_cut(source[2])}[{x}] = 0")
    read.update(source[1:3])
    return Ratio(a.nums[x] * b.den, a.den * b.nums[x])


def _cdf_source(source: list[Json], rows: dict[str, _Named], size: int, where: str, read: set[str]) -> Ratio:
    """``[cdf, a, i]``: (a[0] + ... + a[i]) / sum(a); a row of mass 0 is refused."""
    r, i = _named_row(rows, source[1], where), _token(source[2], size, f"{where} token")
    if r.cumulative[-1] == 0:
        raise Rejection(Reason.MALFORMED, f"{where}: the cdf of row {_cut(source[1])}, which has mass 0")
    read.add(source[1])
    return Ratio(r.cumulative[i], r.cumulative[-1])


def _masses_source(source: list[Json], rows: dict[str, _Named], size: int, where: str, read: set[str]) -> Ratio:
    """``[masses, a, b]``: sum(a) / sum(b); sum(b) = 0 is refused."""
    top, bottom = _named_row(rows, source[1], where), _named_row(rows, source[2], where)
    if bottom.cumulative[-1] == 0:
        raise Rejection(Reason.MALFORMED, f"{where} divides by the mass of row {_cut(source[2])}, which is 0")
    read.update(source[1:3])
    return Ratio(top.cumulative[-1] * bottom.row.den, top.row.den * bottom.cumulative[-1])


def _const_source(source: list[Json], rows: dict[str, _Named], size: int, where: str, read: set[str]) -> Ratio:
    """``[const, c]``: the stated value c, not re-derived (:func:`_threshold` reports it as stated)."""
    return _constant(source[1], f"{where} constant")


def _float_ratio_source(source: list[Json], rows: dict[str, _Named], size: int, where: str, read: set[str]) -> Ratio:
    """``[float-ratio, a, b, x, format]``: fl(a[x] / b[x]); +inf is 2, above every coin."""
    a, b = _named_row(rows, source[1], where).row, _named_row(rows, source[2], where).row
    x = _token(source[3], size, f"{where} token")
    fmt = _float_format(source[4], where)
    if b.nums[x] == 0:
        raise Rejection(Reason.MALFORMED, f"{where} divides by {_cut(source[2])}[{x}] = 0")
    read.update(source[1:3])
    rounded = _round_float(Ratio(a.nums[x] * b.den, a.den * b.nums[x]), fmt)
    return Ratio(2, 1) if rounded is None else rounded


#: A coin threshold's source: ``value(source, rows, V, where, read)``.
Source: TypeAlias = Callable[[list[Json], dict[str, _Named], int, str, set[str]], Ratio]

#: The thresholds that count the grid coins passing a float test (:func:`_float_product`).
_GRID_TESTS = ("float-product", "rounded-coin-ratio", "rounded-coin-product")


def _float_product(source: list[Json], rows: dict[str, _Named], size: int, where: str, read: set[str]) -> Ratio:
    """``[kind, a, b, x, format, coin, cmp]``: the threshold t with ``u < t`` exactly for the grid
    coins u that pass the float test ``kind`` (:data:`_GRID_TESTS`):

    - ``float-product``: ``fl(u * b[x]) cmp a[x]``, the product rounded in the wider of the format
      and the coin's own (float32 for a 24-bit grid, float64 for 53 bits);
    - ``rounded-coin-ratio``: ``fl(u) cmp fl(a[x] / b[x])``, the coin rounded to the format first
      (NumPy >= 2 meeting a Python-float coin with a float32 value, NEP 50), a ratio that overflows
      +inf (every coin passes);
    - ``rounded-coin-product``: ``fl(fl(u) * b[x]) cmp a[x]``, the coin and the product rounded to
      the format.

    Rounding is monotone, so the passing coins are the grid's first ones; their count is found by
    bisection (at most 54 tests of at most two roundings each)."""
    kind, a_name, b_name, x, fmt_name, coin, cmp = source
    a, b = _named_row(rows, a_name, where).row, _named_row(rows, b_name, where).row
    x = _token(x, size, f"{where} token")
    fmt = _float_format(fmt_name, where)
    if not isinstance(coin, str) or coin not in _COIN_GRIDS or cmp not in ("<", "<="):
        raise Rejection(
            Reason.MALFORMED,
            f"{where}: the {kind} test needs a grid coin and < or <=, not {_show(coin)} and {_show(cmp)}",
        )
    bits, open_closed = _COIN_GRIDS[coin]
    wide = max(fmt, FLOAT_FORMATS["float32" if bits <= 24 else "float64"])
    read.update((a_name, b_name))
    n = 1 << bits
    right: Ratio | None = Ratio(a.nums[x], a.den)
    if kind == "rounded-coin-ratio":
        if b.nums[x] == 0:
            raise Rejection(Reason.MALFORMED, f"{where} divides by {_cut(b_name)}[{x}] = 0")
        right = _round_float(Ratio(a.nums[x] * b.den, a.den * b.nums[x]), fmt)  # None: +inf

    def passes(k: int) -> bool:
        if right is None:  # fl(a[x] / b[x]) = +inf: every coin passes
            return True
        if kind == "float-product":
            value = _round_float(Ratio(k * b.nums[x], n * b.den), wide)
            if value is None:
                return False
        else:
            value = cast(Ratio, _round_float(Ratio(k, n), fmt))  # a coin in [0, 1] never overflows
            if kind == "rounded-coin-product":
                value = cast(Ratio, _round_float(Ratio(value.num * b.nums[x], value.den * b.den), fmt))  # <= b[x] <= 1
        return _less(value, right, cmp == "<")

    lo, hi = (1, n + 1) if open_closed else (0, n)  # the first failing k lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(mid):
            lo = mid + 1
        else:
            hi = mid
    return Ratio(lo, n)


#: Every coin threshold's source the kernel knows: the length of its list, and its value.
SOURCES: dict[str, tuple[int, Source]] = {
    "ratio": (4, _ratio_source),
    "cdf": (3, _cdf_source),
    "masses": (3, _masses_source),
    "const": (2, _const_source),
    "float-ratio": (5, _float_ratio_source),
    "float-product": (7, _float_product),
    "rounded-coin-ratio": (7, _float_product),
    "rounded-coin-product": (7, _float_product),
}


def _token_law(
    leaves: dict[tuple[int, bool], list[Ratio]],
    spread: list[tuple[Ratio, str, Json]],
    rows: dict[str, _Named],
    size: int,
    where: str | None,
) -> tuple[list[Ratio], list[Ratio], list[Ratio]]:
    """The emitted law by token, from a walk over leaves [output, accepted]: each token's masses
    summed. Returns (the law, a :class:`Ratio` per token; the masses outside [0, V) and the
    accepted leaves' masses, to be summed into the mass outside and alpha); ``where`` bounds the
    sums (None: a tree the checker built)."""
    by_output: dict[int, list[Ratio]] = {}
    for (output, _), masses in leaves.items():
        by_output.setdefault(output if 0 <= output < size else -1, []).extend(masses)
    accepted = [m for (_, flag), masses in leaves.items() if flag for m in masses]
    vector, den = [0] * size, 1  # the spread leaves' masses by token, over one denominator
    for scale, name, flag in spread:
        common = lcm(den, scale.den)
        old, new = common // den, scale.num * (common // scale.den)
        vector, den = [x * old + new * n for x, n in zip(vector, rows[name].row.nums)], common
        if flag:
            accepted.append(Ratio(scale.num * rows[name].cumulative[-1], scale.den))
    law = [
        _sum(by_output[t] + [Ratio(x, den)] * bool(spread), where and f"{where}.law[{t}]")
        if t in by_output
        else Ratio(x, den)
        for t, x in enumerate(vector)
    ]
    return law, by_output.get(-1, []), accepted


def _law_tv(
    law: Sequence[Ratio],
    reference: Row,
    outside: Ratio = Ratio(0, 1),  # noqa: B008 (an immutable NamedTuple)
    where: str | None = None,
) -> Ratio:
    """THE LAW COMPARISON: the total variation between a law over tokens (a :class:`Ratio` per
    token, and the mass outside [0, V)) and a reference row, (1/2) (sum_t |law(t) - ref(t)| +
    outside). The verdict of every position (one-position, compact and chain certificates' row
    pairs, outcome trees) is this TV against its reference being 0; a block's stream TV
    (:func:`_stream_gap`) is the same comparison over token sequences. ``where`` bounds the sum."""
    dens = {e.den for e in law}
    if len(dens) == 1:  # a law over one denominator (a position's): the gaps are added as integers
        (den,) = dens
        gaps = [
            Ratio(sum(abs(e.num * reference.den - r * den) for e, r in zip(law, reference.nums)), den * reference.den)
        ]
    else:
        gaps = [
            Ratio(abs(e.num * reference.den - r * e.den), e.den * reference.den) for e, r in zip(law, reference.nums)
        ]
    distance = _sum(gaps + [outside], where and f"{where}.totals.tv")
    return Ratio(distance.num, 2 * distance.den)


def _stream_gap(law: dict[Ids, Ratio], targets: dict[Ids, _Named], where: str, streamed: set[Ids]) -> Fraction:
    """The stream statement: TV between the target's joint law of gamma + 1 tokens and the
    output stream (the emitted block, continued by sampling the target after it).

    With T(s) the target's probability of the prefix s and E(s) the stream's probability of
    passing through s after the block was emitted (E(()) = 0), the gap F = T - E obeys F(()) = 1
    and F(s + (t,)) = F(s) p_s(t) - law(s + (t,)): the stream reaches s + (t,) either through s
    after the block (mass E(s) p_s(t)) or as the emitted block itself. The TV is half the sum
    of |F| at length gamma + 1. Below a prefix s that no emitted block passes through (s is not
    a proper prefix of a block: not "live"), F is F(s) times the target's conditional
    probabilities, which sum to 1 at every depth: that subtree adds |F(s)|. So the walk visits
    live prefixes only: at a live s, the children that are live or emitted are taken one by one,
    and all the other children together add |F(s)| times their target mass (one sum of
    numerators). The target's row ``p_s`` is needed only at live prefixes with F(s) != 0
    (``targets``: input rows by prefix); a missing one is rejected. The work is linear in the
    blocks and rows. Returns a Fraction; adds the prefixes whose target row it read to
    ``streamed``.
    """
    live = {tokens[:i] for tokens in law for i in range(len(tokens))}
    taken: dict[Ids, set[int]] = {}  # live prefix -> its children that are live or emitted
    for tokens in live | set(law):
        if tokens:
            taken.setdefault(tokens[:-1], set()).add(tokens[-1])
    level: dict[Ids, Fraction] = {(): Fraction(1)}
    total = Fraction(0)
    while level:
        nxt: dict[Ids, Fraction] = {}
        for prefix, gap in level.items():
            row: _Named | None = None
            if gap:
                if prefix not in targets:
                    raise Rejection(
                        Reason.MISSING_FIELD,
                        f"{where}: the stream's gap at prefix {_show(list(prefix))} "
                        f"is {_show(gap)}, and the certificate has no target row p after it",
                    )
                row = targets[prefix]
                streamed.add(prefix)
            children = taken.get(prefix, set())
            if row is not None:  # the children no block reaches, together
                rest = row.cumulative[-1] - sum(row.row.nums[t] for t in children)
                total += abs(gap) * Fraction(rest, row.row.den)
            for t in children:
                child = prefix + (t,)
                value = gap * Fraction(row.row.nums[t], row.row.den) if row is not None else Fraction(0)
                if child in law:
                    value -= Fraction(law[child].num, law[child].den)
                if child in live:
                    nxt[child] = value
                else:
                    total += abs(value)
        level = nxt
    return total / 2


# ================================================================ 2. rows and recipes
#
# The rows the core reads: stated rows made exact, derived rows one recipe step each, float steps as
# the exact IEEE rounding. A fault here gives the core wrong rows.

#: IEEE 754 binary formats a float step may name: (precision in bits, the implicit one included;
#: the smallest and the largest normal exponent). A float step is the exact result rounded to
#: nearest, ties to even (IEEE 754-2019, 4.3.1), with gradual underflow.
FLOAT_FORMATS = {
    "float16": (11, -14, 15),
    "bfloat16": (8, -126, 127),
    "float32": (24, -126, 127),
    "float64": (53, -1022, 1023),
}


def _float_format(name: Json, where: str) -> Format:
    if not isinstance(name, str) or name not in FLOAT_FORMATS:
        raise Rejection(
            Reason.MALFORMED, f"{where} names the float format {_show(name)}, not one of {', '.join(FLOAT_FORMATS)}"
        )
    return FLOAT_FORMATS[name]


def _round_float(value: Ratio, fmt: Format) -> Ratio | None:
    """fl(value): the float of ``fmt`` nearest to the ratio ``value`` >= 0, ties to even, as a
    :class:`Ratio` (a power of two below); None when it overflows to +inf."""
    precision, emin, emax = fmt
    num, den = value.num, value.den
    if num == 0:
        return Ratio(0, 1)
    e = num.bit_length() - den.bit_length()  # 2^e <= num/den < 2^(e + 1) after the correction
    if (num << -e if e < 0 else num) < (den << e if e > 0 else den):
        e -= 1
    step = max(e, emin) - precision + 1  # the spacing of floats there is 2^step
    top, bottom = (num << -step, den) if step < 0 else (num, den << step)
    m, rest = divmod(top, bottom)
    if 2 * rest > bottom or (2 * rest == bottom and m % 2 == 1):
        m += 1
    if m > 0 and m.bit_length() + step > emax + 1:  # m 2^step >= 2^(emax + 1): beyond the largest finite
        return None
    return Ratio(m << step, 1) if step >= 0 else Ratio(m, 1 << -step)


def _rounded_row(values: list[int], den: int, fmt: Format) -> Row:
    """Each entry n_i / den rounded to ``fmt``, as a :class:`Row` over one power-of-two denominator."""
    # Entries here are at most 1 (rows hold probabilities): none rounds to +inf (None).
    rounded = [cast(Ratio, _round_float(Ratio(n, den), fmt)) for n in values]
    common = max(r.den for r in rounded)
    return Row([r.num * (common // r.den) for r in rounded], common)


def _float_sum(row: Row, fmt: Format) -> Ratio | None:
    """The row's sum in ``fmt``, left to right, one rounding per addition (float16 and bfloat16:
    in a float32 accumulator, rounded once at the end), as NumPy and PyTorch sum short rows; None
    when it overflows (see :func:`_ordered_sum`)."""
    acc = FLOAT_FORMATS["float32"] if fmt[0] < 24 else fmt
    return _ordered_sum(row, list(range(len(row.nums))), acc, fmt, "a left-to-right sum")


#: The summation orders a ``float-divided`` recipe may name (its fourth argument): the order the
#: kernel evaluates, in an accumulator format it names, then rounded once to the row's format.
SUM_ORDERS = ("left-to-right", "tree")


def _ordered_sum(row: Row, tree: Json, acc: Format, fmt: Format, where: str) -> Ratio | None:
    """The float sum of ``row`` (a :class:`Row`) in the order ``tree``, evaluated exactly as IEEE
    code does: every token id of ``tree`` (a non-empty list of token ids and of such lists) is one
    entry, converted to the accumulator ``acc`` (an IEEE rounding); a list is the left-to-right
    sum of its members, each addition rounded to ``acc`` (:func:`_round_float`, to nearest, ties to
    even); the whole is rounded once to ``fmt``. Every token of the row is added exactly once. The
    walk is iterative (no recursion however deep the lists), one rounding per entry and per
    addition. Returns the sum (a :class:`Ratio`), or None when an addition or the last rounding
    overflows to +inf."""
    size, nums, den = len(row.nums), row.nums, row.den
    if not isinstance(tree, list) or not tree:
        raise Rejection(Reason.MALFORMED, f"{where} is not a non-empty list of token ids and lists")
    seen = bytearray(size)
    overflow = False

    def add(a: Ratio | None, b: Ratio | None) -> Ratio | None:
        nonlocal overflow
        if a is None:
            return b
        if b is None or overflow:
            return b
        out = _round_float(Ratio(a.num * b.den + b.num * a.den, a.den * b.den), acc)
        overflow = out is None
        return out

    # frames: [list, next member, partial sum]
    stack: list[list[Any]] = [[tree, 0, None]]
    result: Ratio | None = None
    while stack:
        frame = stack[-1]
        members, i = frame[0], frame[1]
        if i == len(members):
            stack.pop()
            if stack:
                stack[-1][2] = add(stack[-1][2], frame[2])
            else:
                result = frame[2]
            continue
        frame[1] = i + 1
        member = members[i]
        if isinstance(member, list):
            if not member:
                raise Rejection(Reason.MALFORMED, f"{where} holds an empty list")
            stack.append([member, 0, None])
            continue
        t = _token(member, size, f"{where} member")
        if seen[t]:
            raise Rejection(Reason.TOKENS, f"{where} adds token {t} twice")
        seen[t] = 1
        frame[2] = add(frame[2], _round_float(Ratio(nums[t], den), acc))
    if overflow or result is None:
        return None
    if not all(seen):
        raise Rejection(Reason.TOKENS, f"{where} does not add token {seen.index(0)} (a sum adds every token once)")
    return _round_float(result, fmt)


def _named_sum(a: _Named, fmt: Format, order: Json, where: str) -> Ratio | None:
    """The sum a ``float-divided`` recipe divides by. ``order`` is
    ``["left-to-right", accumulator]`` or ``["tree", accumulator, tree]`` (:func:`_ordered_sum`):
    re-derived; or an ``"n/d"`` string, a sum the document states (a library's own, whose order the
    document does not name): checked as far as any order allows (:func:`_some_float_sum`) and
    reported as a stated value the verdict depends on. None: the sum overflows."""
    if isinstance(order, str):
        return _some_float_sum(a, fmt, order, where)
    if (
        not isinstance(order, list)
        or not order
        or order[0] not in SUM_ORDERS
        or len(order) != (2 if order[0] == "left-to-right" else 3)
    ):
        raise Rejection(
            Reason.MALFORMED,
            f'{where}.recipe sum is {_show(order)}: not ["left-to-right", '
            f"accumulator], [\"tree\", accumulator, tree] or a stated 'n/d' sum",
        )
    acc = _float_format(order[1], f"{where}.recipe accumulator")
    tree = list(range(len(a.row.nums))) if order[0] == "left-to-right" else order[2]
    return _ordered_sum(a.row, tree, acc, fmt, f"{where}.recipe sum order")


def _some_float_sum(row: _Named, fmt: Format, value: Json, where: str) -> Ratio:
    """A stated sum ``s`` of the derived row ``row`` (a library's ``r.sum()`` whose order the document
    does not name), checked as far as any order allows, which bounds it but does not derive it (the
    check reports it as a stated value): a float of ``fmt``; 0 iff the row's mass is 0; at least the
    row's largest entry (rounding is monotone, so no order of adding non-negative floats gives less);
    and, for n non-zero entries (k = n - 1 additions that can round) with unit roundoff
    u = 2^-precision, within ``k u`` of the exact sum S, relative: every order of summation in
    ``fmt`` lies there (Rump, BIT Numer. Math. 52, 2012, 201-220: the bound (n - 1) u for
    floating-point summation in any order, with no condition on n). float16 and bfloat16 rows,
    which the libraries sum in a wider accumulator rounded to the format once, are allowed
    ``(k + 1) u``."""
    s = _constant(value, f"{where}.recipe sum")
    precision = fmt[0]
    if not _is_float(s, fmt):
        raise Rejection(Reason.MALFORMED, f"{where}.recipe sum {_show(value)} is not a finite float of the format")
    total, den = row.cumulative[-1], row.row.den  # S = total / den
    if total == 0 or s.num == 0:
        if total != s.num:
            raise Rejection(
                Reason.TOTAL, f"{where}.recipe sum {_show(value)}: the row's mass is {'0' if total == 0 else 'not 0'}"
            )
        return s
    if s.num * den < max(row.row.nums) * s.den:
        raise Rejection(Reason.TOTAL, f"{where}.recipe sum {_show(value)} is less than the row's largest entry")
    k = sum(1 for n in row.row.nums if n) - 1  # adding a 0 is exact, in any order
    bound = k + (1 if precision < 24 else 0)  # |s - S| <= bound u S: |s.num den - total s.den| 2^p <= bound total s.den
    if abs(s.num * den - total * s.den) << precision > bound * total * s.den:
        raise Rejection(
            Reason.TOTAL,
            f"{where}.recipe sum {_show(value)} is farther from the row's sum than "
            f"any order of its {k} additions rounds",
        )
    return s


def _is_float(value: Ratio, fmt: Format) -> bool:
    """True iff the ratio ``value`` >= 0 is a finite float of ``fmt`` (its own rounding)."""
    rounded = _round_float(value, fmt)
    return rounded is not None and rounded.num * value.den == value.num * rounded.den


def _derive(kind: str, args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """One recipe step on rows already derived (see :func:`_outcome_rows`), in integers: the step
    :data:`RECIPES` names for ``kind``; ``room(den, where)`` is called with the new row's
    denominator before its entries are built."""
    derive = RECIPES[kind].derive
    assert derive is not None, kind  # input and given rows are stated, never derived
    return derive(args, rows, size, where, room)


def _uniform(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``uniform``: 1/V at every token."""
    room(size, where)
    return Row([1] * size, size)


def _copy(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``copy a``: a itself."""
    a = _named_row(rows, args[0], where)
    room(a.row.den, where)
    return a.row


def _normalized_recipe(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``normalized a``: a / sum(a), as (n_i / d) / (sum n / d) = n_i / sum n; a row of mass 0 is refused."""
    a = _named_row(rows, args[0], where)
    if a.cumulative[-1] == 0:
        raise Rejection(Reason.NOT_NORMALIZED, f"{where}: normalizing row {_cut(args[0])}, which has mass 0")
    room(a.cumulative[-1], where)
    return Row(list(a.row.nums), a.cumulative[-1])


def _one_hot_argmax(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``one-hot-argmax a``: 1 at a's argmax (ties to the smallest id), 0 elsewhere."""
    a = _named_row(rows, args[0], where)
    room(1, where)
    return Row([int(i == a.top) for i in range(size)], 1)


def _times_capped_ratio(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``times-capped-ratio c a b x``: c min(1, a[x] / b[x]) (block verification's p_i M_b); b[x] = 0 is refused."""
    c = _named_row(rows, args[0], where)
    a, b = _named_row(rows, args[1], where).row, _named_row(rows, args[2], where).row
    x = _token(args[3], size, f"{where}.recipe token")
    if b.nums[x] == 0:
        raise Rejection(Reason.MALFORMED, f"{where}.recipe divides by {_cut(args[2])}[{x}] = 0")
    num, den = a.nums[x] * b.den, a.den * b.nums[x]
    if num >= den:
        room(c.row.den, where)
        return c.row
    room(c.row.den * den, where)
    return Row([v * num for v in c.row.nums], c.row.den * den)


def _scaled(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``scaled a c``: c a, c a rational >= 0."""
    a = _named_row(rows, args[0], where)
    c = _constant(args[1], f"{where}.recipe factor")
    room(a.row.den * c.den, where)
    return Row([x * c.num for x in a.row.nums], a.row.den * c.den)


def _without(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``without a [t...]``: a with those tokens set to 0."""
    a, tokens = _named_row(rows, args[0], where), args[1]
    if not isinstance(tokens, list) or any(type(t) is not int or not 0 <= t < size for t in tokens):
        raise Rejection(Reason.TOKENS, f"{where}.recipe removes {_show(tokens)}, not token ids in [0, {size})")
    removed = set(tokens)
    room(a.row.den, where)
    return Row([0 if i in removed else x for i, x in enumerate(a.row.nums)], a.row.den)


# A float row is over a power of two of at most precision - 1 - emin bits (1074 for float64): it is
# built, then charged (so one row of V such entries is built before the charge).


def _float_rounded(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``float-rounded a format``: fl(a_i), a row as float code holds it."""
    a = _named_row(rows, args[0], where)
    return _charged(_rounded_row(a.row.nums, a.row.den, _float_format(args[1], f"{where}.recipe format")), where, room)


def _float_normalized(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``float-normalized a format``: fl(a_i / s), s the float sum of a left to right (:func:`_float_sum`)."""
    a = _named_row(rows, args[0], where)
    fmt = _float_format(args[1], f"{where}.recipe format")
    return _float_divided_by(a, _float_sum(a.row, fmt), fmt, args[0], where, room)


def _float_divided(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``float-divided a format order``: fl(a_i / s), s the float sum of a in the order the recipe names
    (:func:`_named_sum`)."""
    a = _named_row(rows, args[0], where)
    fmt = _float_format(args[1], f"{where}.recipe format")
    return _float_divided_by(a, _named_sum(a, fmt, args[2], where), fmt, args[0], where, room)


def _float_divided_by(a: _Named, total: Ratio | None, fmt: Format, name: Json, where: str, room: Room) -> Row:
    """fl(a_i / total) (``total`` None: the float sum overflowed). A row of mass 0 is kept (it is all
    zeros: no draw reads it); a row of positive mass whose float sum is 0 or overflows is refused."""
    if a.cumulative[-1] == 0:
        room(a.row.den, where)
        return a.row
    if total is None or total.num == 0:
        raise Rejection(
            Reason.TOTAL,
            f"{where}: the float sum of row {_cut(name)} "
            f"{'overflows to inf' if total is None else 'is 0'} while its mass is not 0 "
            f"(float code would divide by it: inf or NaN entries)",
        )
    return _charged(_rounded_row([n * total.den for n in a.row.nums], a.row.den * total.num, fmt), where, room)


def _float_positive_part(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``float-positive-part a b format``: max(fl(a_i - b_i), 0), the residual as float code forms it."""
    a, b = _named_row(rows, args[0], where).row, _named_row(rows, args[1], where).row
    fmt = _float_format(args[2], f"{where}.recipe format")
    den = lcm(a.den, b.den)
    sa, sb = den // a.den, den // b.den
    return _charged(_rounded_row([max(x * sa - y * sb, 0) for x, y in zip(a.nums, b.nums)], den, fmt), where, room)


def _minimum(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``minimum a b``: min(a_i, b_i)."""
    a, b = _named_row(rows, args[0], where).row, _named_row(rows, args[1], where).row
    den = lcm(a.den, b.den)
    room(den, where)
    sa, sb = den // a.den, den // b.den
    return Row([min(x * sa, y * sb) for x, y in zip(a.nums, b.nums)], den)


def _positive_part(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``positive-part a b``: max(a_i - b_i, 0)."""
    a, b = _named_row(rows, args[0], where).row, _named_row(rows, args[1], where).row
    return _difference_above(a, b, Ratio(0, 1), where, room)


def _floor_difference(args: list[Json], rows: dict[str, _Named], size: int, where: str, room: Room) -> Row:
    """``floor-difference a b eps``: max(a_i - b_i, eps)."""
    a, b = _named_row(rows, args[0], where).row, _named_row(rows, args[1], where).row
    return _difference_above(a, b, _constant(args[2], f"{where}.recipe eps"), where, room)


def _difference_above(a: Row, b: Row, floor: Ratio, where: str, room: Room) -> Row:
    """max(a_i - b_i, floor), over the lcm of the three denominators."""
    den = lcm(a.den, b.den, floor.den)
    room(den, where)
    low, sa, sb = floor.num * (den // floor.den), den // a.den, den // b.den
    return Row([max(x * sa - y * sb, low) for x, y in zip(a.nums, b.nums)], den)


#: How a recipe ``[kind, *arguments]`` derives its row: ``derive(arguments, rows, V, where, room)``.
Derivation: TypeAlias = Callable[[list[Json], dict[str, _Named], int, str, Room], Row]


class RecipeKind(NamedTuple):
    """A row recipe's signature: how many arguments it takes, which of them name rows, and its step
    (None for ``input`` and ``given``, whose rows are stated)."""

    arity: int
    rows: tuple[int, ...]
    derive: Derivation | None


#: Every recipe kind the kernel knows: its signature and its one step.
RECIPES: dict[str, RecipeKind] = {
    "input": RecipeKind(1, (), None),
    "given": RecipeKind(0, (), None),
    "copy": RecipeKind(1, (0,), _copy),
    "positive-part": RecipeKind(2, (0, 1), _positive_part),
    "floor-difference": RecipeKind(3, (0, 1), _floor_difference),
    "normalized": RecipeKind(1, (0,), _normalized_recipe),
    "without": RecipeKind(2, (0,), _without),
    "one-hot-argmax": RecipeKind(1, (0,), _one_hot_argmax),
    "uniform": RecipeKind(0, (), _uniform),
    "times-capped-ratio": RecipeKind(4, (0, 1, 2), _times_capped_ratio),
    "scaled": RecipeKind(2, (0,), _scaled),
    "minimum": RecipeKind(2, (0, 1), _minimum),
    "float-rounded": RecipeKind(2, (0,), _float_rounded),
    "float-positive-part": RecipeKind(3, (0, 1), _float_positive_part),
    "float-normalized": RecipeKind(2, (0,), _float_normalized),
    "float-divided": RecipeKind(3, (0,), _float_divided),
}

#: Recipe kind -> which of its arguments name rows (public: the certificate builders in ``laws/`` write
#: recipes in this vocabulary).
RECIPE_ROWS = {kind: recipe.rows for kind, recipe in RECIPES.items()}


def _charged(row: Row, where: str, room: Room) -> Row:
    room(row.den, where)
    return row


def _constant(value: Json, where: str) -> Ratio:
    """A rational constant of a tree (a coin threshold, a fixed coin, a factor, a floor), with
    numerator and denominator of at most MAX_ROW_BITS bits, as a row's entries."""
    ratio = _rational(value, where)
    if max(ratio.num.bit_length(), ratio.den.bit_length()) > MAX_ROW_BITS:
        raise Rejection(
            Reason.MALFORMED,
            f"{where} is a rational of {ratio.num.bit_length()}/{ratio.den.bit_length()} "
            f"bits (constants hold up to {MAX_ROW_BITS} bits, as rows do)",
        )
    return ratio


def _list(value: Json, size: int, where: str) -> list[Json]:
    if not isinstance(value, list) or len(value) != size:
        raise Rejection(Reason.TOKENS, f"{where} is not a list of vocab_size = {size} entries")
    return value


def _named_row(rows: dict[str, _Named], name: Json, where: str) -> _Named:
    if not isinstance(name, str) or name not in rows:
        raise Rejection(Reason.MALFORMED, f"{where} refers to row {_show(name)}, which is not listed")
    return rows[name]


def _token(value: Json, size: int, where: str) -> int:
    if type(value) is not int or not 0 <= value < size:
        raise Rejection(Reason.TOKENS, f"{where} is {_show(value)}, not a token id in [0, {size})")
    return value


def _exact_row(texts: Json, where: str, size: int) -> Row:
    """A row given as "n/d" strings, over the least common denominator of its entries."""
    if not isinstance(texts, list):
        raise Rejection(Reason.MALFORMED, f"{where} is not a list of 'n/d' strings")
    if len(texts) != size:
        raise Rejection(Reason.TOKENS, f"{where} has {len(texts)} entries, vocab_size {_show(size)}")
    values = [_rational(text, f"{where}[{i}]") for i, text in enumerate(texts)]
    return _over_common_denominator(values)


def _over_common_denominator(values: list[Ratio]) -> Row:
    """Stated entries as one :class:`Row` over the least common denominator of their reduced
    forms: each entry is reduced first (one gcd on its own digits), so an entry written
    unreduced (``k/(k V)``) cannot inflate the row's denominator."""
    values = [Ratio(v.num // g, v.den // g) for v in values for g in (gcd(v.num, v.den),)]
    den = lcm(*(v.den for v in values))
    return Row([v.num * (den // v.den) for v in values], den)


def _float_row(text: Json, where: str, size: int) -> tuple[Row, Ratio]:
    """A row of little-endian IEEE 754 binary64 numbers (base64 text), made exact and divided
    by its exact sum, which must lie within :data:`FLOAT_ROW_TOLERANCE` of 1.

    A finite float is m * 2^e exactly (m, e integers); with e0 the least exponent of a non-zero
    entry in the row, entry i is (m_i * 2^(e_i - e0)) * 2^e0, and dividing by the sum cancels 2^e0.
    Returns the :class:`Row` and the raw sum (a :class:`Ratio`).
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except (TypeError, ValueError):
        raise Rejection(Reason.MALFORMED, f"{where} is not base64 text") from None
    if len(raw) % 8:
        raise Rejection(Reason.MALFORMED, f"{where} is not a whole number of 8-byte floats")
    if len(raw) // 8 != size:
        raise Rejection(Reason.TOKENS, f"{where} has {len(raw) // 8} entries, vocab_size {_show(size)}")
    parts = [_float64_parts(bits, f"{where}[{i}]") for i, bits in enumerate(struct.unpack(f"<{size}Q", raw))]
    least = min((exponent for mantissa, exponent in parts if mantissa), default=0)  # zeros stay 0
    nums = [mantissa << (exponent - least) if mantissa else 0 for mantissa, exponent in parts]
    total = sum(nums)
    raw_sum = Ratio(total << least, 1) if least >= 0 else Ratio(total, 1 << -least)
    _within_tolerance(raw_sum, where)
    return Row(nums, total), raw_sum


def _float64_parts(bits: int, where: str) -> tuple[int, int]:
    """(mantissa, exponent) with value mantissa * 2^exponent, for a finite float >= 0."""
    sign, exponent, fraction = bits >> 63, (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
    if exponent == 0x7FF:
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is NaN or infinite")
    if sign and bits != 1 << 63:  # -0.0 is zero
        raise Rejection(Reason.NEGATIVE, f"{where} is negative")
    if exponent == 0:  # zero or subnormal
        return fraction, -1074
    return (1 << 52) | fraction, exponent - 1075


def _within_tolerance(raw_sum: Ratio, where: str) -> None:
    """|raw_sum - 1| <= FLOAT_ROW_TOLERANCE, and raw_sum > 0 (integers only)."""
    tol_num, tol_den = FLOAT_ROW_TOLERANCE
    if raw_sum.num == 0 or abs(raw_sum.num - raw_sum.den) * tol_den > tol_num * raw_sum.den:
        raise Rejection(
            Reason.NOT_NORMALIZED,
            f"{where} sums to {_show(raw_sum)}, off from 1 by more than "
            f"{tol_num}/{tol_den} (the checker's fixed tolerance)",
        )


def _normalized(row: Row, where: str) -> None:
    """An exact row must sum to exactly 1."""
    if sum(row.nums) != row.den:
        raise Rejection(Reason.NOT_NORMALIZED, f"{where} sums to {_show(Ratio(sum(row.nums), row.den))}, not 1")


def _outcome_rows(
    cert: Json, where: str, size: int, branches: int, gamma: int | None = None
) -> tuple[dict[str, _Named], dict[str, Recipe], list[str], dict[tuple[str, Ids], str]]:
    """The named rows of an outcome certificate, each re-derived from its recipe.

    A row is ``{"recipe": [...]}`` with ``"values"`` ("n/d" strings) only for an ``input`` row
    or a ``given`` row (taken as stated, and reported as given). The inputs are the rows named
    ``p`` (required), ``q`` and ``proposal`` (optional: a token tree's drafts need no q), each
    summing to 1, with the recipe ``["input", its name]``; in a block certificate (``gamma``
    given) they are the target's and the draft's rows after a prefix, ``["input", "p" or "q",
    [ids]]`` (at most one of each per prefix of length <= gamma; p after the empty prefix is
    required). Every other recipe is one step on other rows (a row that depends on itself is
    rejected): ``copy a``; ``positive-part a b`` = max(a - b, 0); ``floor-difference a b eps`` =
    max(a - b, eps); ``normalized a`` = a / sum(a); ``without a [t...]`` = a with those tokens
    set to 0; ``one-hot-argmax a`` (ties to the smallest id); ``uniform`` = 1/V;
    ``times-capped-ratio c a b x`` = c * min(1, a[x] / b[x]); ``scaled a c`` = c * a (c a
    rational); ``minimum a b`` = min(a, b). At most 16 + branches // V + 8 per input
    row are derived (a derived row costs V steps; a genuine tree reads each derived row in at
    least V branches, or derives a few rows from each input row, which the document lists), and every row's common denominator has at most MAX_ROW_BITS bits, so the work
    stays linear in the document. Returns (rows by name, as :class:`_Named`; each row's recipe;
    the names of given rows; the input rows' names by (role, prefix), the prefix () outside a
    block certificate).
    """
    spec = _field(cert, "rows", where)
    if not isinstance(spec, dict) or not spec:
        raise Rejection(Reason.MALFORMED, f"{where}.rows is not a non-empty JSON object")
    recipes: dict[str, Recipe] = {}
    inputs: dict[tuple[str, Ids], str] = {}
    for name, item in spec.items():
        here = f"{where}.rows.{_cut(name)}"
        if not isinstance(item, dict) or not set(item) <= {"recipe", "values"}:
            raise Rejection(Reason.MALFORMED, f"{here} is not an object with a recipe (and values)")
        recipe = _field(item, "recipe", here)
        if not isinstance(recipe, list) or not recipe or not isinstance(recipe[0], str) or recipe[0] not in RECIPES:
            raise Rejection(
                Reason.MALFORMED, f"{here}.recipe is {_show(recipe)}: not a list that starts with a known kind"
            )
        if (recipe[0] in ("input", "given")) != ("values" in item):
            raise Rejection(Reason.MALFORMED, f"{here}: values belong to input and given rows only")
        if recipe[0] == "input":
            key = _input_key(recipe, name, size, gamma, here)
            if key in inputs:
                raise Rejection(
                    Reason.MALFORMED, f"{here} is a second input row {key[0]} after the prefix {list(key[1])}"
                )
            inputs[key] = name
        elif len(recipe) != 1 + RECIPES[recipe[0]].arity:
            raise Rejection(Reason.MALFORMED, f"{here}.recipe {_show(recipe)} has the wrong arguments (a count)")
        recipes[name] = recipe
    if ("p", ()) not in inputs:
        raise Rejection(Reason.MISSING_FIELD, f"{where}.rows has no input row 'p' (the target's row)")
    derived = sum(1 for recipe in recipes.values() if recipe[0] not in ("input", "given"))
    if derived > 16 + branches // size + 8 * len(inputs):
        raise Rejection(
            Reason.MALFORMED,
            f"{where} derives {derived} rows for {branches} branches and {len(inputs)} "
            f"input rows: more than 16 + branches // vocab_size + 8 per input row",
        )
    budget = [MAX_TABLE_BITS + STATED_ROW_BITS_PER_CHAR * _stated_lengths(spec, recipes, size, where)]

    def room(den: int, here: str) -> None:  # called before a row over ``den`` is built
        if den.bit_length() > MAX_ROW_BITS:
            raise Rejection(
                Reason.MALFORMED,
                f"{here}: a row over a common denominator of {den.bit_length()} bits "
                f"(outcome certificates hold rows up to {MAX_ROW_BITS} bits)",
            )
        budget[0] -= size * max(1, den.bit_length())
        if budget[0] < 0:
            raise Rejection(
                Reason.MALFORMED,
                f"{here}: the rows hold more than {MAX_TABLE_BITS} + "
                f"{STATED_ROW_BITS_PER_CHAR} x (characters of stated row values) bits",
            )

    rows: dict[str, _Named] = {}
    given: list[str] = []
    for name in _dependency_order(recipes, where):
        here, (kind, *args) = f"{where}.rows.{_cut(name)}", recipes[name]
        if kind in ("input", "given"):
            row = _exact_row(spec[name]["values"], f"{here}.values", size)
            room(row.den, here)
            if kind == "input":
                _normalized(row, here)
            else:
                given.append(name)
        else:
            row = _derive(kind, args, rows, size, here, room)
        if max(row.nums) > row.den:  # so numerators are bounded too: every row is a (sub-)probability row
            raise Rejection(
                Reason.MALFORMED,
                f"{here}: an entry above 1 (rows hold probabilities, masks and residual masses, each in [0, 1])",
            )
        rows[name] = _named(row)
    return rows, recipes, given, inputs


def _stated_lengths(spec: dict[str, Json], recipes: dict[str, Recipe], size: int, where: str) -> int:
    """Every input and given row states exactly V values (checked before any row is derived, so
    that no recipe, ``uniform`` included, builds a row of a vocabulary its inputs do not have);
    returns the characters of all stated values (what pays for the rows' memory)."""
    chars = 0
    for name, recipe in recipes.items():
        if recipe[0] in ("input", "given"):
            values = spec[name]["values"]
            if not isinstance(values, list) or len(values) != size:
                raise Rejection(
                    Reason.TOKENS,
                    f"{where}.rows.{_cut(name)}.values is not a list of vocab_size = {_show(size)} 'n/d' strings",
                )
            chars += sum(len(v) for v in values if isinstance(v, str))
    return chars


def _input_key(recipe: Recipe, name: str, size: int, gamma: int | None, where: str) -> tuple[str, Ids]:
    """An input row's (role, prefix): ``["input", name]`` with name one of INPUT_ROWS, or in a
    block certificate ``["input", "p" or "q", [ids]]``, a prefix of at most gamma ids in [0, V)."""
    if gamma is None:
        if len(recipe) != 2 or recipe[1] != name or name not in INPUT_ROWS:
            raise Rejection(
                Reason.MALFORMED,
                f"{where}.recipe {_show(recipe)} has the wrong arguments "
                f"(an input row is one of {INPUT_ROWS}, named after itself)",
            )
        return name, ()
    if len(recipe) != 3 or recipe[1] not in ("p", "q") or not isinstance(recipe[2], list) or len(recipe[2]) > gamma:
        raise Rejection(
            Reason.MALFORMED,
            f'{where}.recipe {_show(recipe)} is not ["input", "p" or "q", a prefix of at most gamma ids]',
        )
    return recipe[1], tuple(_token(t, size, f"{where}.recipe prefix") for t in recipe[2])


def _dependency_order(recipes: dict[str, Recipe], where: str) -> list[str]:
    """The row names, each after the rows its recipe reads (depth first, without recursion)."""
    order: list[str] = []
    state: dict[str, int] = {}  # state: 1 while a row's dependencies are being visited, 2 when done
    for start in recipes:
        stack = [start]
        while stack:
            name = stack[-1]
            if state.get(name) == 2:
                stack.pop()
                continue
            state[name] = 1
            kind, *args = recipes[name]
            pending: list[str] = []
            for i in RECIPE_ROWS[kind]:
                arg = args[i]
                if not isinstance(arg, str) or arg not in recipes:
                    raise Rejection(
                        Reason.MALFORMED, f"{where}.rows.{_cut(name)} reads row {_show(arg)}, which is not listed"
                    )
                if state.get(arg) == 1:
                    raise Rejection(
                        Reason.MALFORMED, f"{where}.rows.{_cut(name)} depends on itself through {_cut(arg)}"
                    )
                if state.get(arg) != 2:
                    pending.append(arg)
            if pending:
                stack.extend(pending)
            else:
                state[name] = 2
                order.append(stack.pop())
    return order


# ================================================================ 3. the front ends (document kinds)
#
# Each document kind builds rows and a tree, walks it and compares every claim with what the walk
# gives. A fault here compares the wrong claim or skips one.


def _check_position(cert: Json, where: str) -> Facts:
    """A one-position certificate: recompute the law from p and q, compare every claimed value."""
    size = _size(cert, where)
    every_token = cert["schema"] == CERTIFICATE_SCHEMA
    claimed = _claimed_rows(cert, where, size, every_token)
    if every_token:
        p, q = (_over_common_denominator([values[k] for _, values in claimed]) for k in "pq")
        raw_sums: dict[str, Ratio] = {}
    else:
        p, q, raw_sums = _compact_inputs(cert, where, size)
    _normalized(p, f"{where}: p")
    _normalized(q, f"{where}: q")
    _position_budget(p, q, size, _stated_characters(cert, every_token), where)
    position = _textbook_position(p, q, where)
    law, (emitted_nums, emitted_den) = position.law, position.emitted
    for i, (token, values) in enumerate(claimed):
        recomputed = {
            "p": Ratio(law.target[token], law.den),
            "q": Ratio(law.draft[token], law.den),
            "accept": Ratio(law.accept[token], law.den),
            "residual": Ratio(law.residual[token], law.den),
            "emitted": Ratio(emitted_nums[token], emitted_den),
        }
        for key in ("p", "q", "accept", "residual", "emitted"):
            _same(_ROW_REASONS[key], f"{where}.rows[{i}].{key}", recomputed[key], values[key])
    totals = {
        "alpha": position.alpha,
        "normalizer": position.normalizer,
        "rejection": position.rejection,
        "tv": position.tv,
    }
    claimed_totals = _only_fields(_field(cert, "totals", where), TOTAL_FIELDS, f"{where}.totals")
    for key in TOTAL_FIELDS:
        here = f"{where}.totals.{key}"
        _same(Reason.TOTAL, here, totals[key], _rational(claimed_totals[key], here))
    truth = {
        "alpha_equals_one_minus_tv": _equal(_sum([position.alpha, position.tv]), Ratio(1, 1)),
        "dist_equals_p": position.lossless,
    }
    _claims(cert, where, CLAIMS, truth)
    return {
        "schema": cert["schema"],
        "law": law,
        "emitted": (emitted_nums, emitted_den),
        "raw_sums": raw_sums,
        "totals": totals,
        "claims": truth,
    }


def _check_chain(cert: Json, where: str) -> Facts:
    """One verification step over gamma drafted tokens, node by node.

    The verifier drafts x ~ q(. | s) at the prefix s, accepts it as at one position, and goes
    on from s + (x,) until a rejection (replaced by a residual draw) or gamma acceptances
    (then a bonus token from p). So the prefixes it can accept are found breadth first from
    the empty prefix: the children of s (depth < gamma - 1) are the tokens t with accept mass
    min(p, q)(t) > 0 at s, in increasing order. Each node claims

    - reach A(s): A(()) = 1 and A(s + (t,)) = A(s) * accept_s(t); checked against the parent's
      claim, which was checked before (so no number grows beyond the claims and one row);
    - stop: A(s) * (1 - alpha(s)), the mass of a rejection at s.

    With stop tokens (optional ``stop_tokens``, EOS ids), an accepted stop token ends the block:
    it is not a node (no draft or bonus token follows it), and its accept mass A(s) * accept(t)
    is an end with len(s) + 1 accepted drafts and nothing after it.

    From the checked claims: P(k drafts accepted) is the sum of the stops at depth k plus the
    accepted stop tokens at depth k - 1 for k < gamma, and the sum of A(s) * alpha(s) at depth
    gamma - 1 for k = gamma; E[emitted] = 1 + sum_k k P(k accepted) - P(an accepted stop token
    ends the block); the mean alpha is sum A(s) alpha(s) / sum A(s). Sums of A(s) * alpha(s) are
    grouped by the pair of rows at s, so each row's alpha multiplies one sum.

    The claim ``stream_equals_target_law`` (the first gamma + 1 output tokens have the target's
    joint law) holds iff each pair of rows used at a node is lossless at one position: with
    A(s) + E(s) = P(s) (E: mass of outputs through s after the block ended, P: the target's)
    true at the root (1 + 0 = 1), a child's A(s)accept(t) + A(s)drawn(t) + E(s)p(t) equals
    P(s)p(t) for every t iff accept(t) + drawn(t) = p(t), as every node has A(s) > 0; at depth
    gamma the bonus token and the continuation both draw from p.
    """
    size = _size(cert, where)
    gamma = _field(cert, "gamma", where)
    if type(gamma) is not int or gamma < 1:
        raise Rejection(Reason.MALFORMED, f"{where}.gamma is {_show(gamma)}, not an integer >= 1")
    totals = _only_fields(_field(cert, "totals", where), CHAIN_TOTALS, f"{where}.totals")
    lengths = totals["accepted_length"]
    if not isinstance(lengths, list) or len(lengths) != gamma + 1:  # bounds gamma by the document
        raise Rejection(
            Reason.MALFORMED,
            f"{where}.totals.accepted_length is not a list of gamma + 1 = {_show(gamma + 1)} rationals",
        )
    nodes = _field(cert, "nodes", where)
    if not isinstance(nodes, list) or not nodes:
        raise Rejection(Reason.MALFORMED, f"{where}.nodes is not a non-empty list")
    table, raw_sums = _chain_rows(cert, where, size)
    stop_set = _stop_tokens(cert, where, size)

    # (p index, q index) -> its Position (with the PositionLaw), and its children tokens
    laws: dict[tuple[int, int], Position] = {}
    children: dict[tuple[int, int], list[int]] = {}
    # prefixes the verifier accepts, breadth first
    order: list[Ids] = [()]
    expected_reach: dict[Ids, Ratio] = {(): Ratio(1, 1)}
    stops: list[list[Ratio]] = [[] for _ in range(gamma)]  # checked stop masses, by depth
    # checked reaches by pair of rows: all nodes; depth gamma - 1
    reach_by_pair: dict[tuple[int, int], list[Ratio]] = {}
    last_by_pair: dict[tuple[int, int], list[Ratio]] = {}
    # checked reaches by pair, by depth + 1 of an accepted stop
    ended_by_depth: list[dict[tuple[int, int], list[Ratio]]] = [{} for _ in range(gamma)]
    uncounted = 0  # children of listed nodes beyond the number of nodes listed
    for i, node in enumerate(nodes):
        here = f"{where}.nodes[{i}]"
        node = _only_fields(node, CHAIN_NODE_FIELDS, here)
        _check_prefix(node, order[i] if i < len(order) else None, len(order), here)
        pair = (_row_index(node, "p", table, here), _row_index(node, "q", table, here))
        if pair not in laws:
            laws[pair] = _textbook_position(table[pair[0]], table[pair[1]], here)
            children[pair] = _children(laws[pair].law, stop_set)
        law, prefix = laws[pair].law, order[i]
        reach = _rational(node["reach"], f"{here}.reach")
        _same(Reason.NODE_MASS, f"{here}.reach", expected_reach.pop(prefix), reach)
        stop = _rational(node["stop"], f"{here}.stop")
        _same(Reason.NODE_MASS, f"{here}.stop", _product(reach, laws[pair].rejection), stop)
        stops[len(prefix)].append(stop)
        reach_by_pair.setdefault(pair, []).append(reach)
        if len(prefix) + 1 < gamma:
            ended_by_depth[len(prefix) + 1].setdefault(pair, []).append(reach)
        if len(prefix) + 1 == gamma:
            last_by_pair.setdefault(pair, []).append(reach)
            continue
        room = len(nodes) - len(order)  # children past the listed nodes are counted, never stored
        uncounted += max(0, len(children[pair]) - room)
        for t in children[pair][:room]:
            order.append(prefix + (t,))
            expected_reach[prefix + (t,)] = _product(reach, Ratio(law.accept[t], law.den))
    if uncounted:  # the children of unlisted prefixes are not enumerated: a lower bound
        raise Rejection(
            Reason.NODES,
            f"{where} lists {len(nodes)} nodes; the verifier accepts at least {len(order) + uncounted} prefixes",
        )
    if len(nodes) != len(order):
        raise Rejection(Reason.NODES, f"{where} lists {len(nodes)} nodes; the verifier accepts {len(order)} prefixes")

    def passed(
        groups: dict[tuple[int, int], list[Ratio]],
    ) -> Ratio:  # sum of A(s) * alpha(s) over the nodes grouped by pair of rows
        return _sum([_product(_sum(reaches), laws[pair].alpha) for pair, reaches in groups.items()])

    def ended(
        groups: dict[tuple[int, int], list[Ratio]],
    ) -> Ratio:  # sum of A(s) * (accept mass on stop tokens at s), grouped by pair of rows
        return _sum(
            [
                _product(_sum(reaches), Ratio(sum(laws[pair].law.accept[t] for t in stop_set), laws[pair].law.den))
                for pair, reaches in groups.items()
            ]
        )

    length_law = [_sum([*terms, ended(ended_by_depth[k])]) for k, terms in enumerate(stops)] + [passed(last_by_pair)]
    for k, value in enumerate(lengths):
        here = f"{where}.totals.accepted_length[{k}]"
        _same(Reason.TOTAL, here, length_law[k], _rational(value, here))
    expected = _sum([Ratio(1, 1)] + [Ratio(k * x.num, x.den) for k, x in enumerate(length_law)])
    if stop_set:
        stopped = ended(reach_by_pair)
        expected = _sum([expected, Ratio(-stopped.num, stopped.den)])
    weighted = passed(reach_by_pair)
    reached = _sum([_sum(reaches) for reaches in reach_by_pair.values()])
    mean_alpha = Ratio(weighted.num * reached.den, weighted.den * reached.num)
    for key, value in (("expected_emitted", expected), ("mean_alpha", mean_alpha)):
        _same(Reason.TOTAL, f"{where}.totals.{key}", value, _rational(totals[key], f"{where}.totals.{key}"))
    truth = {"stream_equals_target_law": all(position.lossless for position in laws.values())}
    _claims(cert, where, CHAIN_CLAIMS, truth)
    return {
        "schema": CHAIN_SCHEMA,
        "gamma": gamma,
        "nodes": len(nodes),
        "row_pairs": len(laws),
        "stop_tokens": stop_set,
        "raw_sums": raw_sums,
        "accepted_length": length_law,
        "expected_emitted": expected,
        "mean_alpha": mean_alpha,
        "claims": truth,
    }


def _check_outcome(cert: Json, where: str) -> Facts:
    """One position of a verifier under an engine's rule, given as an outcome tree.

    The document lists the rows (each re-derived from its recipe; p and q are its inputs), the
    reference row (the law the output should have: p, or the argmax of p for greedy rules, or a
    given row), and the verifier's outcomes as nodes: each node claims its reach (the
    probability that the verifier gets there) and lists branches, each an event (a primitive)
    with its claimed probability and a child (a later node, or a leaf ``[output, accepted]``).
    The checker re-derives every branch's probability from its primitive and the rows, requires
    each node's branches to sum to 1 and each node's claimed reach to equal the sum over its
    incoming branches of the parent's reach times the branch's probability (the root's reach is
    1, every other node has a parent), sums the leaves by output into the emitted law, and
    compares the claimed law, the mass of outputs outside [0, V), alpha (the accepted leaves'
    mass), the TV from the reference row, and the claim ``lossless`` (TV = 0).

    What is trusted: that the tree is the verifier's program (built by specproof.rules.audit from the
    rule, not re-derived here), the values of ``given`` rows, ``const`` thresholds and stated float
    sums. The facts name the input rows the tree reads, how the reference derives from p, the stated
    values (``stated``) and the float sums derived in a named order (``sums``), so that all can be
    shown.
    """
    size = _size(cert, where)
    nodes = _field(cert, "nodes", where)
    if not isinstance(nodes, list) or not nodes:
        raise Rejection(Reason.MALFORMED, f"{where}.nodes is not a non-empty list")
    rows, recipes, given, _ = _outcome_rows(cert, where, size, _branch_shapes(nodes, where))
    reference_name = _field(cert, "reference", where)
    reference = _named_row(rows, reference_name, f"{where}.reference").row
    reference_source = _reference(recipes, reference_name, where)
    stated: list[str] = []  # the const thresholds the events use
    leaves, spread, read = _walk(_document_nodes(nodes), rows, size, where, _position_leaf, stated=stated)
    claimed_law = [
        _rational(v, f"{where}.law[{t}]") for t, v in enumerate(_list(_field(cert, "law", where), size, f"{where}.law"))
    ]
    law, outside_masses, accepted = _token_law(
        leaves, spread, rows, size, where
    )  # re-derived: the claims are only compared
    for t, claimed in enumerate(claimed_law):
        _same(Reason.EMITTED, f"{where}.law[{t}]", law[t], claimed)
    outside = _sum(outside_masses, f"{where}.totals.out_of_range")
    alpha = _sum(accepted, f"{where}.totals.alpha")
    tv = _law_tv(law, reference, outside, where)
    totals = {"alpha": alpha, "out_of_range": outside, "tv": tv}
    claimed_totals = _only_fields(_field(cert, "totals", where), tuple(totals), f"{where}.totals")
    for key, value in totals.items():
        _same(Reason.TOTAL, f"{where}.totals.{key}", value, _rational(claimed_totals[key], f"{where}.totals.{key}"))
    truth = _claims(cert, where, OUTCOME_CLAIMS, {"lossless": tv.num == 0})
    return {
        "schema": OUTCOME_SCHEMA,
        "law": law,
        "reference": [Ratio(r, reference.den) for r in reference.nums],
        "reference_source": reference_source,
        "inputs": {k: [Ratio(x, rows[k].row.den) for x in rows[k].row.nums] for k in INPUT_ROWS if k in rows},
        "reads": _reads(recipes, read | {reference_name}),
        "given_reads": _reads(recipes, read | {reference_name}, "given"),
        "recipes": recipes,
        "given": given,
        "rows": {k: [Ratio(x, r.row.den) for x in r.row.nums] for k, r in rows.items()},
        "stated": _stated_sums(recipes, read | {reference_name}, where) + stated,
        "sums": _sum_orders(recipes, read | {reference_name}),
        "totals": totals,
        "nodes": len(nodes),
        "claims": truth,
    }


def _check_block(cert: Json, where: str) -> Facts:
    """One verification step over a block of gamma drafts, given as an outcome tree.

    As an outcome certificate (:func:`_check_outcome`: rows re-derived from recipes, every
    branch re-derived from its primitive, reaches, sums to 1), but the inputs are the target's
    and the draft's rows after each prefix (``["input", "p" or "q", [ids]]``) and each leaf is
    the block the verifier emits with its count of accepted drafts. The checker sums the leaves
    by block into the emitted law and compares the claimed law (a list of ``[[ids], mass]``, by
    increasing ids, every block of positive mass once), the accepted-length law, the expected
    emitted tokens, the stream TV (:func:`_stream_gap`) and the claim ``lossless`` (stream TV
    = 0: the stream statement of Leviathan et al. 2023, Theorem 3.5 over a block, and Sun et al.
    2024, Theorem 1).

    What is trusted: that the tree is the verifier's program, the ``given`` rows, ``const``
    thresholds and stated float sums (named in the facts' ``stated``).
    """
    size = _size(cert, where)
    gamma = _field(cert, "gamma", where)
    if type(gamma) is not int or not 1 <= gamma <= MAX_BLOCK_GAMMA:
        raise Rejection(Reason.MALFORMED, f"{where}.gamma is {_show(gamma)}, not an integer in [1, {MAX_BLOCK_GAMMA}]")
    nodes = _field(cert, "nodes", where)
    if not isinstance(nodes, list) or not nodes:
        raise Rejection(Reason.MALFORMED, f"{where}.nodes is not a non-empty list")
    rows, recipes, given, inputs = _outcome_rows(cert, where, size, _branch_shapes(nodes, where), gamma)

    def leaf(child: Json, there: str) -> tuple[Ids, int] | None:
        return _block_leaf(child, there, size, gamma)

    leaf.__doc__ = "[[ids], accepted]"
    stated: list[str] = []  # the const thresholds the events use
    leaves, _, read = _walk(_document_nodes(nodes), rows, size, where, leaf, stated=stated)
    by_block: dict[Ids, list[Ratio]] = {}
    lengths: list[list[Ratio]] = [[] for _ in range(gamma + 1)]
    for (tokens, accepted), masses in leaves.items():
        by_block.setdefault(tokens, []).extend(masses)
        lengths[accepted].extend(masses)
    law = {tokens: _sum(masses, f"{where}.law") for tokens, masses in sorted(by_block.items())}
    law = {tokens: mass for tokens, mass in law.items() if mass.num}
    claimed = _field(cert, "law", where)
    if not isinstance(claimed, list) or any(
        not isinstance(e, list) or len(e) != 2 or not isinstance(e[0], list) for e in claimed
    ):
        raise Rejection(Reason.MALFORMED, f"{where}.law is not a list of [[ids], mass] pairs")
    listed = [tuple(_token(t, size, f"{where}.law[{i}] id") for t in e[0]) for i, e in enumerate(claimed)]
    if listed != list(law):
        extra = sorted(set(listed) ^ set(law))
        raise Rejection(
            Reason.EMITTED,
            f"{where}.law lists {len(listed)} blocks; the tree emits {len(law)} blocks of "
            f"positive mass, by increasing ids" + (f" (differs at {_show(list(extra[0]))})" if extra else ""),
        )
    for i, (tokens, (_, mass)) in enumerate(zip(listed, claimed)):
        _same(Reason.EMITTED, f"{where}.law[{i}]", law[tokens], _rational(mass, f"{where}.law[{i}]"))
    accepted_length = [_sum(masses, f"{where}.totals.accepted_length") for masses in lengths]
    emitted = _sum([Ratio(len(tokens) * m.num, m.den) for tokens, m in law.items()], f"{where}.totals.expected_emitted")
    targets = {prefix: rows[name] for (role, prefix), name in inputs.items() if role == "p"}
    streamed: set[Ids] = set()  # the prefixes whose target row the stream check reads
    tv = _stream_gap(law, targets, where, streamed)
    tree_reads = set(_reads(recipes, read))
    totals = _only_fields(_field(cert, "totals", where), BLOCK_TOTALS, f"{where}.totals")
    lengths_claimed = totals["accepted_length"]
    if not isinstance(lengths_claimed, list) or len(lengths_claimed) != gamma + 1:
        raise Rejection(Reason.MALFORMED, f"{where}.totals.accepted_length is not a list of gamma + 1 rationals")
    for k, value in enumerate(lengths_claimed):
        here = f"{where}.totals.accepted_length[{k}]"
        _same(Reason.TOTAL, here, accepted_length[k], _rational(value, here))
    for key, value in (("expected_emitted", emitted), ("stream_tv", Ratio(tv.numerator, tv.denominator))):
        _same(Reason.TOTAL, f"{where}.totals.{key}", value, _rational(totals[key], f"{where}.totals.{key}"))
    truth = _claims(cert, where, OUTCOME_CLAIMS, {"lossless": tv == 0})
    return {
        "schema": BLOCK_SCHEMA,
        "gamma": gamma,
        "law": law,
        "accepted_length": accepted_length,
        "expected_emitted": emitted,
        "stream_tv": tv,
        "recipes": recipes,
        "given": given,
        "inputs": {key: [Ratio(x, rows[name].row.den) for x in rows[name].row.nums] for key, name in inputs.items()},
        "reads": sorted(
            key for key, name in inputs.items() if name in tree_reads or (key[0] == "p" and key[1] in streamed)
        ),
        "given_reads": _reads(recipes, read, "given"),
        "rows": {k: [Ratio(x, r.row.den) for x in r.row.nums] for k, r in rows.items()},
        "stated": _stated_sums(recipes, read, where) + stated,
        "sums": _sum_orders(recipes, read),
        "nodes": len(nodes),
        "claims": truth,
    }


_CHECKS: dict[str, Callable[[Json, str], Facts]] = {
    CERTIFICATE_SCHEMA: _check_position,
    COMPACT_SCHEMA: _check_position,
    CHAIN_SCHEMA: _check_chain,
    OUTCOME_SCHEMA: _check_outcome,
    BLOCK_SCHEMA: _check_block,
}


def _check_one(cert: Json, where: str) -> Facts:
    schema = _field(cert, "schema", where)
    if not isinstance(schema, str) or schema not in _CHECKS:
        raise Rejection(Reason.SCHEMA, f"{where} has unknown schema {_show(schema)}, expected one of {sorted(_CHECKS)}")
    return _CHECKS[schema](cert, where)


def _check_document(doc: Json, progress: Callable[[], object] | None = None) -> list[Facts]:
    """A certificate, or a bundle of them; returns what was recomputed, one dict each.
    ``progress()`` (optional) is called after each certificate is checked."""
    if _field(doc, "schema", "document") != BUNDLE_SCHEMA:
        facts = [_check_one(doc, "certificate")]
        if progress is not None:
            progress()
        return facts
    certs, count = _field(doc, "certificates", "bundle"), _field(doc, "count", "bundle")
    if not isinstance(certs, list) or not certs:
        raise Rejection(Reason.MALFORMED, "bundle.certificates is not a non-empty list")
    if type(count) is not int or count != len(certs):
        raise Rejection(Reason.TOKENS, f"bundle has count {_show(count)} but {len(certs)} certificates")
    families = {
        _FAMILIES.get(cert.get("schema"))
        for cert in certs
        if isinstance(cert, dict) and isinstance(cert.get("schema"), str)
    }
    if len(families - {None}) > 1:
        raise Rejection(
            Reason.SCHEMA,
            "bundle mixes kinds of certificate (one position, chain, outcome tree, block): a bundle holds one kind",
        )
    facts = []
    for i, cert in enumerate(certs):
        facts.append(_check_one(cert, f"certificates[{i}]"))
        if progress is not None:
            progress()
    return facts


#: Kinds of certificate: a bundle holds one kind (a report is about one kind of statement).
_FAMILIES: dict[object, str] = {
    CERTIFICATE_SCHEMA: "position",
    COMPACT_SCHEMA: "position",
    CHAIN_SCHEMA: "chain",
    OUTCOME_SCHEMA: "outcome",
    BLOCK_SCHEMA: "block",
}


def check(document: Json, progress: Callable[[], object] | None = None) -> Verdict:
    """Re-verify a certificate or bundle: a parsed JSON value, or its JSON text or bytes.

    Parameters
    ----------
    document : dict, list, str, bytes or bytearray
        A certificate or bundle of any schema above, parsed or as JSON text.
    progress : callable, optional
        Called with no arguments after each certificate is checked (a progress bar's step); it
        has no effect on the verdict.

    Returns
    -------
    Verdict
        Valid (truthy) iff the document is well formed, every claimed value equals the law
        recomputed from the rows, and every claim equals what that law shows; then ``facts``
        holds the recomputed values, one dict per certificate (``facts[i]["schema"]`` names its
        kind). Otherwise the :class:`Reason` and a detail. Valid means *the claims are true*,
        not *the verifier is lossless*: an outcome or block certificate may truthfully claim
        ``lossless: false``. Test ``facts[i]["claims"]["lossless"]`` (the TV is
        ``facts[i]["totals"]["tv"]`` for an outcome certificate, ``facts[i]["stream_tv"]`` for a
        block certificate; rationals are :class:`Ratio` or :class:`fractions.Fraction`).

    Examples
    --------
    >>> from specproof.certify.blocks import block_verification_certificate, typical_block_certificate
    >>> verdict = check(block_verification_certificate(["1/3", "2/3"], ["2/3", "1/3"], 2))
    >>> bool(verdict), verdict.facts[0]["claims"]["lossless"], verdict.facts[0]["stream_tv"]
    (True, True, Fraction(0, 1))
    >>> verdict = check(typical_block_certificate(["1/2", "1/2"], ["1/2", "1/2"], 1))
    >>> bool(verdict), verdict.facts[0]["claims"]["lossless"], verdict.facts[0]["stream_tv"]
    (True, False, Fraction(1, 2))
    """
    try:
        if isinstance(document, (str, bytes, bytearray)):
            document = parse(document)
        else:
            _no_lone_surrogates(document)
        facts = _check_document(document, progress)
    except Rejection as rejection:
        return Verdict(False, rejection.reason, rejection.detail)
    except RecursionError:
        return Verdict(False, Reason.MALFORMED, "nested too deeply")
    return Verdict(True, None, f"re-verified {len(facts)} certificate(s)", tuple(facts))


def read(path: "str | PathLike[str]") -> bytes:
    """The bytes of ``path``, or :class:`Rejection` (UNREADABLE). Read once: check what you show."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise Rejection(Reason.UNREADABLE, f"cannot read {path}: {exc.strerror}") from None


def check_file(path: "str | PathLike[str]") -> Verdict:
    """Read ``path`` and :func:`check` its bytes; a file that cannot be read is UNREADABLE."""
    try:
        return check(read(path))
    except Rejection as rejection:
        return Verdict(False, rejection.reason, rejection.detail)


class Position(NamedTuple):
    """A position checked by the walk (:func:`_textbook_position`): the rows over one denominator
    (``law``, a :class:`PositionLaw`: p, q, accept = min(p, q), residual = (p - q)+ over D = lcm of
    p's and q's denominators), and what the walk and the law comparison re-derived: the emitted
    law (numerators, denominator), alpha, the rejection's mass 1 - alpha, the residual's mass Z,
    TV(p, q) and whether the emitted law is p."""

    law: PositionLaw
    emitted: tuple[list[int], int]
    alpha: Ratio
    rejection: Ratio
    normalizer: Ratio
    tv: Ratio
    lossless: bool


#: The textbook position's events (Leviathan et al. 2023, Algorithm 1), on the rows p, q, accept =
#: min(p, q) and residual = (p - q)+: a draft x ~ q kept with probability min(1, p(x)/q(x)) is
#: token x accepted with mass q(x) min(1, p(x)/q(x)) = min(p, q)(x) (Appendix A.1), so the draft
#: and its test are one coin u < alpha = sum(accept) / sum(q), then a draw from accept; a
#: rejection (u >= alpha) is a draw from the residual.
_ACCEPT = {
    "coin": {"model": "continuous", "lower": None, "upper": {"source": ["masses", "accept", "q"], "strict": True}}
}

_REJECT = {
    "coin": {"model": "continuous", "lower": {"source": ["masses", "accept", "q"], "strict": False}, "upper": None}
}


def _free(den: int, where: str) -> None:
    """No row budget: a textbook position's rows are over p's and q's common denominator, whose
    size the document paid for (:func:`_position_budget`)."""


def _textbook_position(p: Row, q: Row, where: str) -> Position:
    """THE FRONT END of one-position, compact and chain certificates: the sampler's steps on p and
    q (normalized :class:`Row` values of one length) written as an outcome tree, walked by
    :func:`_walk` and compared with p by :func:`_law_tv`.

    Rows: p, q, and by the recipes ``minimum p q`` (the accept masses) and ``positive-part p q``
    (the residual masses). Tree: the root's coin u < alpha (:data:`_ACCEPT`) leads to a draw of
    every token from the accept row (leaves [t, accepted]); u >= alpha (:data:`_REJECT`) to a draw
    of every token from the residual (leaves [t, not accepted]); a branch of probability 0 is left
    out (alpha = 0: p and q disjoint; Z = 0: p == q, the residual is never drawn). Returns a
    :class:`Position`.
    """
    size = len(p.nums)
    rows = {"p": _named(p), "q": _named(q)}
    for name, kind in (("accept", "minimum"), ("residual", "positive-part")):
        rows[name] = _named(_derive(kind, ["p", "q"], rows, size, where, _free))
    root: list[Branch] = []
    nodes = [Node(None, root)]  # the root, replaced below once its branches are known
    for event, row, flag in ((_ACCEPT, "accept", True), (_REJECT, "residual", False)):
        if rows[row].cumulative[-1]:
            root.append(Branch(event, None, len(nodes)))
            nodes.append(Node(None, [Branch({"every": row}, None, flag)]))
    nodes[0] = Node(None, root)
    leaves, spread, _ = _walk(nodes, rows, size, where, _position_leaf, bounded=False)
    law, _, accepted = _token_law(leaves, spread, rows, size, None)
    den = lcm(*{e.den for e in law})  # one denominator: the spread leaves are summed over one
    emitted = ([e.num * (den // e.den) for e in law], den)
    alpha = _sum(accepted)
    accept, residual = rows["accept"], rows["residual"]
    common = accept.row.den  # = lcm(p.den, q.den), the den of min(p, q) and of (p - q)+
    scaled = [Row([x * (common // r.den) for x in r.nums], common) for r in (p, q)]
    rows_over_d = PositionLaw(
        common,
        scaled[0].nums,
        scaled[1].nums,
        accept.row.nums,
        residual.row.nums,
        accept.cumulative[-1],
        residual.cumulative[-1],
    )
    return Position(
        rows_over_d,
        emitted,
        alpha,
        Ratio(alpha.den - alpha.num, alpha.den),
        Ratio(residual.cumulative[-1], common),
        _law_tv([Ratio(x, common) for x in scaled[0].nums], q),
        _law_tv(law, p).num == 0,
    )


def _claims(cert: Json, where: str, keys: tuple[str, ...], truth: dict[str, bool]) -> dict[str, bool]:
    """Each claim is made (true or false) and equals what the recomputed law shows."""
    claims = _only_fields(_field(cert, "claims", where), keys, f"{where}.claims")
    for key in keys:
        value = claims[key]
        if type(value) is not bool:
            raise Rejection(Reason.MALFORMED, f"{where}.claims.{key} is {_show(value)}, not true/false")
        if value != truth[key]:
            raise Rejection(Reason.CLAIM, f"{where}.claims.{key}: expected {truth[key]}, claimed {value}")
    return truth


_ROW_REASONS = {
    "p": Reason.INPUT,
    "q": Reason.INPUT,
    "accept": Reason.ACCEPT,
    "residual": Reason.RESIDUAL,
    "emitted": Reason.EMITTED,
}


def _claimed_rows(cert: Json, where: str, size: int, every_token: bool) -> list[tuple[int, dict[str, Ratio]]]:
    """The claimed rows: every token 0..V-1 in order, or (compact) a strictly increasing subset."""
    rows = _field(cert, "rows", where)
    if not isinstance(rows, list) or (every_token and not rows):
        raise Rejection(Reason.MALFORMED, f"{where}.rows is not a non-empty list")
    if every_token and len(rows) != size:
        raise Rejection(Reason.TOKENS, f"{where} has vocab_size {_show(size)} but {len(rows)} rows")
    claimed: list[tuple[int, dict[str, Ratio]]] = []
    last = -1
    for i, row in enumerate(rows):
        here = f"{where}.rows[{i}]"
        token = _field(row, "token", here)
        if type(token) is not int or not (token == i if every_token else last < token < size):
            want = f"token {i}" if every_token else f"a token above {last} and below {size}"
            raise Rejection(Reason.TOKENS, f"{here} is token {_show(token)}, expected {want}")
        claimed.append((token, {key: _rational(_field(row, key, here), f"{here}.{key}") for key in ROW_FIELDS}))
        last = token
    return claimed


def _compact_inputs(cert: Json, where: str, size: int) -> tuple[Row, Row, dict[str, Ratio]]:
    """p and q of a compact certificate, and their raw float sums."""
    inputs = _only_fields(_field(cert, "inputs", where), ("encoding", "p", "q"), f"{where}.inputs")
    if inputs["encoding"] != COMPACT_ENCODING:
        raise Rejection(
            Reason.SCHEMA, f"{where}.inputs.encoding is {_show(inputs['encoding'])}, not {COMPACT_ENCODING!r}"
        )
    (p, p_sum), (q, q_sum) = (_float_row(inputs[k], f"{where}.inputs.{k}", size) for k in "pq")
    return p, q, {"p": p_sum, "q": q_sum}


def _stated_characters(cert: Json, every_token: bool) -> int:
    """The characters of a one-position certificate's stated p and q (its rows' "n/d" texts, or
    the compact inputs' base64 texts), which pay for the law's memory."""
    if every_token:
        return sum(len(row[k]) for row in cert["rows"] for k in "pq")
    return sum(len(cert["inputs"][k]) for k in "pq")


def _position_budget(p: Row, q: Row, size: int, chars: int, where: str) -> None:
    """The law over D = lcm of p's and q's denominators holds V entries of D's bits in each of
    its rows: V x bits(D) is bounded by MAX_TABLE_BITS + STATED_ROW_BITS_PER_CHAR per stated
    character (checked before the law is built), so that its cost is bounded by the size."""
    bits = size * lcm(p.den, q.den).bit_length()
    if bits > MAX_TABLE_BITS + STATED_ROW_BITS_PER_CHAR * chars:
        raise Rejection(
            Reason.MALFORMED,
            f"{where}: p and q over a common denominator of "
            f"{lcm(p.den, q.den).bit_length()} bits at V = {size}: more than "
            f"{MAX_TABLE_BITS} + {STATED_ROW_BITS_PER_CHAR} x (characters of p and q) bits",
        )


def _chain_rows(cert: Json, where: str, size: int) -> tuple[list[Row], list[Ratio]]:
    """A chain's table of rows ("n/d" lists, or float64 texts divided by their sums)."""
    rows = _only_fields(_field(cert, "rows", where), ("encoding", "table"), f"{where}.rows")
    encoding, table = rows["encoding"], rows["table"]
    if encoding not in (EXACT_ENCODING, COMPACT_ENCODING):
        raise Rejection(
            Reason.SCHEMA,
            f"{where}.rows has encoding {_show(encoding)}, not {EXACT_ENCODING!r} or {COMPACT_ENCODING!r}",
        )
    if not isinstance(table, list) or not table:
        raise Rejection(Reason.MALFORMED, f"{where}.rows.table is not a non-empty list")
    out: list[Row] = []
    raw_sums: list[Ratio] = []
    for i, item in enumerate(table):
        here = f"{where}.rows.table[{i}]"
        if encoding == EXACT_ENCODING:
            row = _exact_row(item, here, size)
            _normalized(row, here)
        else:
            row, raw_sum = _float_row(item, here, size)
            raw_sums.append(raw_sum)
        out.append(row)
    return out, raw_sums


def _row_index(node: dict[str, Json], key: str, table: list[Row], where: str) -> int:
    index = node[key]
    if type(index) is not int or not 0 <= index < len(table):
        raise Rejection(Reason.MALFORMED, f"{where}.{key} is {_show(index)}, not the index of a row of the table")
    return index


def _check_prefix(node: dict[str, Json], expected: Ids | None, count: int, where: str) -> None:
    """A node's prefix must be the next prefix the verifier can accept (breadth first)."""
    prefix = node["prefix"]
    if expected is None:
        raise Rejection(Reason.NODES, f"{where} has prefix {_show(prefix)}; the verifier accepts only {count} nodes")
    if not isinstance(prefix, list) or any(type(x) is not int for x in prefix) or tuple(prefix) != expected:
        raise Rejection(Reason.NODES, f"{where} has prefix {_show(prefix)}; the verifier accepts {list(expected)} next")


def _children(law: PositionLaw, stops: frozenset[int]) -> list[int]:
    """The tokens with accept mass min(p, q)(t) > 0 that are not stop tokens: the drafts the
    verifier can accept and go on from (an accepted stop token ends the block)."""
    return [t for t, mass in enumerate(law.accept) if mass and t not in stops]


def _stop_tokens(cert: Json, where: str, size: int) -> frozenset[int]:
    """A chain's stop ids (absent: none), strictly increasing ids in [0, V)."""
    stops = cert.get("stop_tokens", [])
    if (
        not isinstance(stops, list)
        or any(type(t) is not int or not 0 <= t < size for t in stops)
        or any(a >= b for a, b in zip(stops, stops[1:]))
    ):
        raise Rejection(
            Reason.TOKENS, f"{where}.stop_tokens is {_show(stops)}, not increasing token ids in [0, {size})"
        )
    return frozenset(stops)


def _branch_shapes(nodes: list[Json], where: str) -> int:
    """Every node is ``{"label", "reach", "branches"}`` and every branch ``{"event", "probability",
    "child"}`` with one event of a known kind; returns the number of branches (checked before any
    row is derived, so that only well-formed branches pay for derived rows)."""
    count = 0
    for i, node in enumerate(nodes):
        here = f"{where}.nodes[{i}]"
        branches = _only_fields(node, ("label", "reach", "branches"), here)["branches"]
        if not isinstance(branches, list) or not branches:
            raise Rejection(Reason.MALFORMED, f"{here}.branches is not a non-empty list")
        for j, branch in enumerate(branches):
            event = _only_fields(branch, ("event", "probability", "child"), f"{here}.branches[{j}]")["event"]
            if (
                not isinstance(event, dict)
                or len(event) != 1
                or next(iter(event)) not in ("draw", "coin", "choice", "race")
            ):
                raise Rejection(Reason.MALFORMED, f"{here}.branches[{j}].event is {_show(event)}: not one known event")
        count += len(branches)
    return count


def _reference(recipes: dict[str, Recipe], name: Json, where: str) -> str:
    """The reference row must be the target p itself, a copy or the argmax of a copy of it
    (greedy rules), or a given row (reported as trusted); returns how it derives from p."""
    seen: set[str] = set()
    path: list[str] = []
    while name not in seen:
        seen.add(name)
        kind, *args = recipes[name]
        if kind == "input":
            if name != "p":
                break
            return " of ".join(path + ["p"])
        if kind == "given":
            return " of ".join(path + [f"given row {name}"])
        if kind not in ("copy", "one-hot-argmax"):
            break
        if kind == "one-hot-argmax":
            path.append("argmax")
        name = args[0]
    raise Rejection(Reason.MALFORMED, f"{where}.reference must be p, a copy or the argmax of p, or a given row")


def _reads(recipes: dict[str, Recipe], names: Iterable[str], source: str = "input") -> list[str]:
    """The input rows (or, with ``source="given"``, the given rows) that the rows ``names`` are
    derived from (their recipes, transitively)."""
    out: set[str] = set()
    stack = list(names)
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        kind, *args = recipes[name]
        if kind == source:
            out.add(name)
        stack.extend(args[i] for i in RECIPE_ROWS[kind])
    return sorted(out)


def _derived_from(recipes: dict[str, Recipe], names: Iterable[str]) -> list[str]:
    """The rows ``names`` and every row they are derived from (their recipes, transitively), sorted."""
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            kind, *args = recipes[name]
            stack.extend(args[i] for i in RECIPE_ROWS[kind])
    return sorted(seen)


def _stated_sums(recipes: dict[str, Recipe], names: Iterable[str], where: str) -> list[str]:
    """The float sums that rows read by the tree (``names``, transitively) divide by as stated, not
    derived (a ``float-divided`` recipe whose sum is an ``"n/d"`` string), in words."""
    out = []
    for name in _derived_from(recipes, names):
        recipe = recipes[name]
        if recipe[0] == "float-divided" and isinstance(recipe[3], str):
            out.append(
                f"{where}.rows.{_cut(name)}: the float sum {_cut(recipe[3])} of row {_cut(recipe[1])}, "
                f"stated (bounded, not derived)"
            )
    return out


def _sum_orders(recipes: dict[str, Recipe], names: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """The float sums that rows read by the tree (``names``, transitively) divide by, re-derived in a
    named order: (row, summed row, format, order in words), the order a modelling assumption about
    the code (which library sums in which order) that the output names."""
    out = []
    for name in _derived_from(recipes, names):
        kind, *args = recipes[name]
        if kind == "float-normalized":
            out.append(
                (
                    name,
                    args[0],
                    args[1],
                    "left to right" + (", in a float32 accumulator" if FLOAT_FORMATS[args[1]][0] < 24 else ""),
                )
            )
        elif kind == "float-divided" and isinstance(args[2], list):
            order = "left to right" if args[2][0] == "left-to-right" else "in a stated tree order"
            out.append((name, args[0], args[1], f"{order}, in a {args[2][1]} accumulator"))
    return out


def _position_leaf(child: Json, where: str) -> tuple[int, bool] | None:
    """[output id, accepted]"""
    if (
        isinstance(child, dict)
        and set(child) == {"leaf"}
        and isinstance(child["leaf"], list)
        and len(child["leaf"]) == 2
        and type(child["leaf"][0]) is int
        and type(child["leaf"][1]) is bool
    ):
        return tuple(child["leaf"])
    return None


def _document_nodes(nodes: list[Json]) -> list[Node]:
    """A document's nodes (shapes checked by :func:`_branch_shapes`) as :class:`Node` values."""
    return [
        Node(node["reach"], [Branch(b["event"], b["probability"], b["child"]) for b in node["branches"]])
        for node in nodes
    ]


def _block_leaf(child: Json, where: str, size: int, gamma: int) -> tuple[Ids, int] | None:
    """A block certificate's leaf ``{"leaf": [[ids], accepted]}``: the emitted ids (1 to gamma + 1,
    each in [0, V)) and how many of them are accepted drafts (len - 1 or len: a block ends at a
    stop token), as ((ids), accepted), or None."""
    if not (
        isinstance(child, dict)
        and set(child) == {"leaf"}
        and isinstance(child["leaf"], list)
        and len(child["leaf"]) == 2
        and isinstance(child["leaf"][0], list)
        and type(child["leaf"][1]) is int
    ):
        return None
    tokens, accepted = child["leaf"]
    if not tokens or not len(tokens) - 1 <= accepted <= min(len(tokens), gamma):  # so len(tokens) <= gamma + 1
        raise Rejection(
            Reason.TOKENS,
            f"{where}: a block of {len(tokens)} ids with {_show(accepted)} accepted "
            f"(1 to gamma + 1 ids, of which all or all but the last are accepted drafts)",
        )
    return tuple(_token(t, size, f"{where} id") for t in tokens), accepted


# ================================================================ 4. parsing, messages and resource limits
#
# One parser for every document, the bounds that keep a document's cost bounded by its length, and
# the messages. A fault here can reject a valid document or cost time; it cannot accept a false one
# unless it changes a value.

#: Longest block a block certificate may state (its stream check multiplies gamma + 1 rows).
MAX_BLOCK_GAMMA = 16

#: Largest vocabulary, and largest row denominator in bits, on which the exponential-race
#: primitive is checked (each race is about V^2 operations on fractions of such rows).
MAX_RACE_VOCAB = 32

MAX_RACE_BITS = 256

#: Largest common denominator, in bits, of a row of an outcome certificate (stated or derived),
#: so that each primitive costs a bounded number of operations on bounded numbers.
MAX_ROW_BITS = 2**14

#: Largest denominator, in bits, of a re-derived mass of an outcome or block tree (a reach, a
#: branch's mass, a sum of them: the law, alpha, TV), so that every sum and product in the walk
#: is of bounded numbers (a genuine tree's masses are products of a few rows' entries). Measured
#: (tests/data/trust/gen_dos_mass_bits.py, 100 KB, masses at the limit): 0.26 s and 43 MB at
#: 2^18, 0.59 s at 2^19, 1.15 s at 2^20; 2^18 admits a node of 32 races at the race limits.
MAX_MASS_BITS = 2**18

#: Bits that the rows of an outcome or block certificate may hold in all (V x the bits of each
#: row's common denominator, summed over its rows, stated and derived): this allowance plus
#: STATED_ROW_BITS_PER_CHAR per character of the rows' stated values (input and given rows), so
#: that the memory of derived rows is bounded by the document's size (a genuine tree derives a
#: few rows from each input row, over a denominator of a few times the input rows').
MAX_TABLE_BITS = 2**25

STATED_ROW_BITS_PER_CHAR = 32

#: Longest number text read (hex integers are read in linear time; decimal ones stop at 4300 digits).
MAX_NUMBER_CHARS = 2**17

_RATIONAL = re.compile(
    r"""
    (?P<sign> - )?                      # a minus sign, allowed only on zero
    (?P<num> [0-9]+ | 0x[0-9a-f]+ )     # numerator: decimal, or hexadecimal for long numbers
    /
    (?P<den> [0-9]+ | 0x[0-9a-f]+ )     # denominator: the same forms
    """,
    re.VERBOSE,
)


def parse(data: str | bytes | bytearray) -> Json:
    """JSON text or bytes -> a JSON value, the one parsing path for every document.

    Bytes may be UTF-8 (with or without a byte-order mark), UTF-16 or UTF-32 (as JSON allows).
    JSON numbers other than integers, and NaN or Infinity, become :class:`Number` (neither a
    string nor a number, so they are rejected wherever a rational, a name or a count belongs,
    as a Python float in the same place is); a repeated key in an object, a lone surrogate in a string, and
    invalid or truncated JSON raise :class:`Rejection` (MALFORMED).
    """
    try:
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode(json.detect_encoding(data))
        if data.startswith("\ufeff"):
            data = data[1:]
        value = json.loads(data, parse_float=Number, parse_constant=Number, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise Rejection(Reason.MALFORMED, "nested too deeply") from None
    except ValueError as exc:  # includes UnicodeDecodeError and json.JSONDecodeError
        raise Rejection(Reason.MALFORMED, f"not valid JSON: {_cut(str(exc))}") from None
    _no_lone_surrogates(value)
    return value


def _unique_keys(pairs: list[tuple[str, Json]]) -> dict[str, Json]:
    """A JSON object; a repeated key would hold two claims for one value."""
    out = dict(pairs)
    if len(out) != len(pairs):  # linear: one pass to find the repeated keys
        seen: set[str] = set()
        repeated: set[str] = set()
        for key, _ in pairs:
            (repeated if key in seen else seen).add(key)
        raise Rejection(Reason.MALFORMED, f"a JSON object repeats the key(s) {_cut(repr(sorted(repeated)))}")
    return out


def _no_lone_surrogates(value: Json) -> None:
    """Every string must be valid Unicode text (a lone surrogate cannot be written out), and
    every object key a string (as in JSON text; a Python dict may hold other keys)."""
    stack: list[Json] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(not isinstance(key, str) for key in item):
                raise Rejection(Reason.MALFORMED, "an object has a key that is not a string")
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise Rejection(Reason.MALFORMED, "a string holds a lone surrogate (not Unicode text)") from None


def _field(obj: Json, key: str, where: str) -> Json:
    if not isinstance(obj, dict):
        raise Rejection(Reason.MALFORMED, f"{where} is not a JSON object")
    if key not in obj:
        raise Rejection(Reason.MISSING_FIELD, f"{where} has no field {key!r}")
    return obj[key]


def _only_fields(obj: Json, keys: Collection[str], where: str) -> dict[str, Json]:
    """A section such as "totals" or a chain node: a JSON object with exactly these keys."""
    if not isinstance(obj, dict):
        raise Rejection(Reason.MALFORMED, f"{where} is not a JSON object")
    unknown = sorted(set(obj) - set(keys))
    if unknown:
        raise Rejection(Reason.MALFORMED, f"{where} has unknown fields {_cut(repr(unknown))}")
    for key in keys:
        _field(obj, key, where)
    return obj


def _rational(value: Json, where: str) -> Ratio:
    """A non-negative rational from its "n/d" string, as an unreduced :class:`Ratio`."""
    if isinstance(value, str) and len(value) > MAX_NUMBER_CHARS:
        raise Rejection(Reason.NOT_RATIONAL, f"{where} has {len(value)} characters: too many digits")
    if not isinstance(value, str):
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, not an 'n/d' string")
    match = _RATIONAL.fullmatch(value)
    if match is None:
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, not an 'n/d' string")
    try:
        num, den = (_integer(match[part]) for part in ("num", "den"))
    except ValueError:  # a decimal integer past Python's digit limit
        raise Rejection(Reason.NOT_RATIONAL, f"{where} has {len(value)} characters: too many digits") from None
    if den == 0:
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, which has a zero denominator")
    if match["sign"] and num:
        raise Rejection(Reason.NEGATIVE, f"{where} is {_cut(value)}, which is negative")
    return Ratio(num, den)


def _integer(text: str) -> int:
    return int(text, 16) if text.startswith("0x") else int(text)


def _size(cert: Json, where: str) -> int:
    size = _field(cert, "vocab_size", where)
    if type(size) is not int or size < 1:
        raise Rejection(Reason.TOKENS, f"{where} has vocab_size {_show(size)}")
    return size


def _show(x: object) -> str:
    """A value for a message: long ones cut, huge numbers by size (never printed in full)."""
    if isinstance(x, Fraction):
        x = Ratio(x.numerator, x.denominator)
    if isinstance(x, Ratio):
        if max(x.num.bit_length(), x.den.bit_length()) > 256:
            return f"a rational of {x.num.bit_length()}/{x.den.bit_length()} bits"
        common = gcd(x.num, x.den)  # small numbers: reduced, as a person writes them
        return _cut(f"{x.num // common}/{x.den // common}")
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 256:
        return f"an integer of {x.bit_length()} bits"
    return _cut(repr(x))


def _cut(text: str) -> str:
    return text if len(text) <= 80 else text[:80] + "..."


# ================================================================ 5. the binding (check --target --draft)
#
# A --target/--draft JSON file's rows made exact and compared with every input row the certificates
# read; the --require-lossless gate.


def input_rows(data: str | bytes | bytearray, name: str, atol: Fraction) -> list[tuple[Fraction, ...]]:
    """The rows of a ``--target`` or ``--draft`` JSON file, made exact: a list of entries, or a list of
    equal lists (an [N, V] stack). Entries are non-negative integers and ``"n/d"`` strings (exact; a row must
    sum to 1), or JSON decimal numbers (each the float64 the standard library's correctly rounded parse gives,
    made exact; a row is divided by its exact sum, which must lie within ``atol`` of 1: the dyadic-renormalize
    policy). One decimal number makes every entry of the file a float: an ``"n/d"`` string beside it is
    refused, and an integer past 2^53 too (a float64 cannot hold it). Raises :class:`Rejection` (INPUT)
    naming the entry."""
    value = parse(data)
    if not isinstance(value, list) or not value:
        raise Rejection(Reason.INPUT, f"{name} is not a non-empty JSON list (of numbers, or of equal lists)")
    stacked = all(isinstance(row, list) for row in value)
    if not stacked and any(isinstance(row, list) for row in value):
        raise Rejection(Reason.INPUT, f"{name} mixes numbers and lists")
    rows: list[list[Json]] = value if stacked else [value]
    if len({len(row) for row in rows}) != 1 or not rows[0]:
        raise Rejection(Reason.INPUT, f"{name} has rows of different lengths, or an empty row")
    floats = any(isinstance(x, Number) for row in rows for x in row)
    out = []
    for i, row in enumerate(rows):
        where = f"{name}[{i}]" if stacked else name
        values = [_input_value(x, f"{where}[{t}]", floats) for t, x in enumerate(row)]
        total = sum(values, Fraction(0))
        if floats and abs(total - 1) > atol:
            raise Rejection(Reason.INPUT, f"{where} sums to {_show(total)}, off from 1 by more than {_show(atol)}")
        if not floats and total != 1:
            raise Rejection(Reason.INPUT, f"{where} sums to {_show(total)}, not 1")
        out.append(tuple(x / total for x in values) if floats else tuple(values))
    return out


_DIGITS = re.compile(r"[0-9]+")

_DECIMAL = re.compile(r"(?P<sign>-?)(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]*))?(?:[eE](?P<exp>[+-]?[0-9]+))?")


def _decimal_float64(text: str, where: str) -> Ratio:
    """The float64 nearest to the JSON decimal number ``text`` (ties to even: what a correctly rounded parse,
    as Python's ``float``, gives), exactly, by :func:`_round_float` on the decimal's exact value; NaN, an
    infinity, a value past the largest float64 or a negative one is refused."""
    match = _DECIMAL.fullmatch(text) if len(text) <= MAX_NUMBER_CHARS else None
    if match is None or len(match["exp"] or "") > 12:
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(text)}, not a finite decimal number")
    digits = (match["int"] + (match["frac"] or "")).lstrip("0")
    if not digits:
        return Ratio(0, 1)
    try:
        mantissa = int(digits)
    except ValueError:  # past Python's limit on decimal digits
        raise Rejection(Reason.NOT_RATIONAL, f"{where} has {len(text)} characters: too many digits") from None
    if match["sign"]:
        raise Rejection(Reason.NEGATIVE, f"{where} is {_show(text)}, which is negative")
    exp10 = int(match["exp"] or "0") - len(match["frac"] or "")
    magnitude = exp10 + len(digits)  # 10^(magnitude - 1) <= value < 10^magnitude
    if magnitude > 310:  # >= 10^309, past the largest float64 (about 1.8 10^308)
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(text)}, past the largest float64")
    if magnitude < -330:  # < 10^-330, under half the least subnormal (about 4.9 10^-324): rounds to 0
        return Ratio(0, 1)
    exact = Ratio(mantissa * 10**exp10, 1) if exp10 >= 0 else Ratio(mantissa, 10**-exp10)
    rounded = _round_float(exact, FLOAT_FORMATS["float64"])
    if rounded is None:
        raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(text)}, past the largest float64")
    return rounded


def _input_value(x: Json, where: str, floats: bool) -> Fraction:
    """One entry of an input row (see :func:`input_rows`)."""
    if type(x) is int:
        if x < 0:
            raise Rejection(Reason.NEGATIVE, f"{where} is {_show(x)}, which is negative")
        if floats and x > 2**53:
            raise Rejection(Reason.INPUT, f"{where} is the integer {_show(x)}, which a float64 cannot hold exactly")
        return Fraction(x)
    if isinstance(x, Number):
        r = _decimal_float64(x.text, where)
        return Fraction(r.num, r.den)
    if isinstance(x, str) and not floats:
        r = _rational(x + "/1" if _DIGITS.fullmatch(x) else x, where)  # "3" as "3/1"
        return Fraction(r.num, r.den)
    if isinstance(x, str):
        raise Rejection(Reason.INPUT, f"{where} is the fraction {_show(x)} among decimal numbers")
    raise Rejection(Reason.NOT_RATIONAL, f"{where} is {_show(x)}, not a number or an 'n/d' string")


Rows = Sequence[tuple[Fraction, ...]]


def bind(facts: Sequence[Facts], target: Rows, draft: Rows) -> tuple[str, dict[str, list[str]]]:
    """Compare every input row a valid document's certificates read with ``--target``'s and ``--draft``'s rows
    (from :func:`input_rows`): row i with certificate i, or a single row with every certificate (an outcome or
    block tree reads the same pair at every position). Returns ("", what was compared) if every compared row is
    equal, else (why not, {}). What was compared: ``bound`` (the rows compared: "p", "q", or "p after [ids]" in
    a block), ``unread`` (p or q, never read by a tree) and ``unbound`` (rows the tree reads that nothing was
    compared with: the input row ``proposal``, given rows, stated values)."""
    n, m = len(target), len(draft)
    if n != m and 1 not in (n, m):
        return f"--target holds {n} rows and --draft {m}; give the same number, or one row for all", {}
    if len(target[0]) != len(draft[0]):
        return f"--target has V = {len(target[0])} tokens and --draft V = {len(draft[0])}", {}
    pairs = [(target[min(i, n - 1)], draft[min(i, m - 1)]) for i in range(max(n, m))]
    if any("law" not in f for f in facts):
        return "--target/--draft bind one-position certificates; a chain certificate holds many rows", {}
    if len(pairs) == 1 and all(f["schema"] in (OUTCOME_SCHEMA, BLOCK_SCHEMA) for f in facts):
        pairs = pairs * len(facts)  # the same rows at every position of a tree or block
    if len(pairs) != len(facts):
        return f"the certificate holds {len(facts)} pair(s), --target and --draft give {len(pairs)}", {}
    bound: set[str] = set()
    unread: set[str] = set()
    unbound: set[str] = set()
    for i, (f, (p, q)) in enumerate(zip(facts, pairs)):
        mine: list[tuple[str, str, list[Ratio]]]
        if f["schema"] == BLOCK_SCHEMA:  # the input rows the tree and the stream check read
            read = set(f["reads"])
            mine = [
                (f"{role} after {list(at)}", role, row)
                for (role, at), row in sorted(f["inputs"].items())
                if (role, at) in read
            ]
            unread.update(k for k in ("p", "q") if not any(role == k for role, _ in read))
        elif f["schema"] == OUTCOME_SCHEMA:  # the input rows the tree reads
            mine = [(k, k, f["inputs"][k]) for k in ("p", "q") if k in f["reads"]]
            unread.update(k for k in ("p", "q") if k not in f["reads"])
            unbound.update(k for k in f["reads"] if k not in ("p", "q"))  # proposal
        else:
            law = f["law"]
            mine = [
                ("p", "p", [Ratio(x, law.den) for x in law.target]),
                ("q", "q", [Ratio(x, law.den) for x in law.draft]),
            ]
        if f["schema"] in (OUTCOME_SCHEMA, BLOCK_SCHEMA):
            unbound.update(f"given row {g}" for g in f["given_reads"])
            unbound.update(f"stated value {v}" for v in f.get("stated", []))
        for label, role, row in mine:
            option, theirs = ("--target", p) if role == "p" else ("--draft", q)
            if len(row) != len(theirs):
                return f"certificate {i}: {label} has {len(row)} tokens, {option} has {len(theirs)}", {}
            for t, (x, y) in enumerate(zip(row, theirs)):
                if x.num * y.denominator != y.numerator * x.den:
                    return f"certificate {i}: {label}({t}) is {_show(x)}, but {option} gives {_show(y)}", {}
            bound.add(label)
    return "", {"bound": sorted(bound), "unread": sorted(unread), "unbound": sorted(unbound)}


def lossless(f: Facts) -> bool:
    """Whether a valid certificate's re-derived law is its reference's (every kind)."""
    claims = f["claims"]
    return bool(claims.get("lossless", claims.get("dist_equals_p", claims.get("stream_equals_target_law"))))


def gate(facts: Sequence[Facts], binding: dict[str, list[str]] | None) -> list[str]:
    """Why a valid document does not certify that a verifier's law is exactly p ([] if it does), for
    ``check --require-lossless``: p bound to ``--target`` (``binding``, from :func:`bind`) or, without
    ``--target`` (``binding`` None), the certificate's own input p. Fails: a law that is not its reference's; a
    reference that is not p (a given row, the argmax of p); a stated value the verdict depends on (a constant
    threshold, a stated float sum) or a given row the tree reads; with ``--target``, a row the tree reads that
    is bound to nothing, or no p compared."""
    out = []
    for i, f in enumerate(facts):
        at = f"certificate {i}: " if len(facts) > 1 else ""
        if not lossless(f):
            out.append(f"{at}the certified verifier is not lossless")
        if f["schema"] == OUTCOME_SCHEMA and f["reference_source"] != "p":
            out.append(f"{at}its reference is {f['reference_source']}, not p")
        if f.get("stated"):
            out.append(f"{at}the verdict depends on {len(f['stated'])} stated value(s), not re-derived")
        if f.get("given_reads"):
            out.append(f"{at}the tree reads given rows ({', '.join(f['given_reads'][:5])}), stated, not re-derived")
    if binding is not None:
        if binding.get("unbound"):
            out.append("rows the tree reads are bound to nothing: " + ", ".join(binding["unbound"][:5]))
        if not any(label.split()[0] == "p" for label in binding.get("bound", [])):
            out.append("no p row was compared with --target")
    return out
