"""TRUSTED: re-verify a specproof certificate from p and q alone.

The small trusted kernel: standard library only, never a float, believes nothing it did not
recompute. From p and q it re-derives the verifier's law by the sampler's steps (x ~ q; accept
with probability min(1, p(x)/q(x)); else draw from (p - q)+ normalized) and accepts only if
every claimed value equals the recomputed one exactly and dist == p, alpha == 1 - TV hold.
Documents: ``specproof.certificate/1`` (one row per token, rationals as ``"n/d"`` strings),
``specproof.compact-certificate/1`` (p and q as float64 bit patterns, each divided by its exact
sum; claimed rows at some tokens), ``specproof.chain-certificate/1`` (one block of gamma drafts
and the bonus token: the target and draft rows at every prefix the verifier can accept) and
``specproof.bundle/1`` (a list of these).
"""

import base64
import json
import re
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

VERSION = "1.0"
CERTIFICATE_SCHEMA = "specproof.certificate/1"
COMPACT_SCHEMA = "specproof.compact-certificate/1"
COMPACT_ENCODING = "float64-le-base64/renormalize"
BUNDLE_SCHEMA = "specproof.bundle/1"
CHAIN_SCHEMA = "specproof.chain-certificate/1"
EXACT_ENCODING = "rational"  # a chain's rows as lists of "n/d" strings
ROW_FIELDS = ("accept", "emitted", "p", "q", "residual")
TOTAL_FIELDS = ("alpha", "normalizer", "rejection", "tv")
CLAIMS = ("alpha_equals_one_minus_tv", "dist_equals_p")
CHAIN_TOTALS = ("accepted_length", "expected_emitted", "mean_alpha")
_RATIONAL, _text = re.compile(r"-?([0-9]+|0x[0-9a-f]+)/([0-9]+|0x[0-9a-f]+)"), str.strip


class Reason(str, Enum):
    """Why a certificate was rejected."""

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
    TOTAL = "total"  # alpha, TV, normalizer or rejection mass differs
    NODES = "nodes"  # a chain's nodes are not exactly the prefixes the verifier accepts, in order
    NODE_MASS = "node-mass"  # a chain node's claimed reach or stop mass differs
    CLAIM = "claim"  # a claim differs from what the recomputed law shows


@dataclass(frozen=True)
class Verdict:
    """The checker's answer: ``valid``, or the ``reason`` and a ``detail`` naming the values."""

    valid: bool
    reason: Reason | None = None
    detail: str = ""

    def __bool__(self):  # so that `if check(doc):` means "valid"
        return self.valid


class Rejected(Exception):  # internal: carries a rejection out of nested checks
    def __init__(self, reason, detail):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def _rational(value, where):
    """A non-negative rational from its "n/d" string (every rational in a certificate is >= 0).
    Integers are decimal, or hexadecimal "0x..." (numbers too long for decimal text)."""
    if not isinstance(value, str) or _RATIONAL.fullmatch(value) is None:
        raise Rejected(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, not an 'n/d' string")
    try:  # at most 2^17 characters (decimal integers stop at Python's 4300-digit limit)
        if len(value) > 2 ** 17:
            raise ValueError
        num, den = (int(x, 16) if x.startswith("0x") else int(x) for x in value.lstrip("-").split("/"))
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        raise Rejected(Reason.NOT_RATIONAL, f"{where} has {len(value)} characters: too many digits") from None
    if den == 0:
        raise Rejected(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, which has a zero denominator")
    if value.startswith("-") and num:
        raise Rejected(Reason.NEGATIVE, f"{where} is {value[:80]}, which is negative")
    return Fraction(num, den)


def _unique(pairs):  # a JSON object with a repeated key holds two claims for one value
    if len({key for key, _ in pairs}) != len(pairs):
        raise Rejected(Reason.MALFORMED, f"a JSON object repeats a key: {sorted(key for key, _ in pairs)}")
    return dict(pairs)


def _field(obj, key, where):
    if not isinstance(obj, dict):
        raise Rejected(Reason.MALFORMED, f"{where} is not a JSON object")
    if key not in obj:
        raise Rejected(Reason.MISSING_FIELD, f"{where} has no field {key!r}")
    return obj[key]


def _same(reason, where, expected, claimed):
    if expected != claimed:
        raise Rejected(reason, f"{where}: expected {_show(expected)}, claimed {_show(claimed)}")


def _show(x):  # a value for a message: long ones cut, huge numbers by size (str() stops at 4300 digits)
    if isinstance(x, Fraction) and max(abs(x.numerator), x.denominator).bit_length() > 4000:
        return f"a rational with a {x.denominator.bit_length()}-bit denominator"
    try:
        text = f"{x.numerator}/{x.denominator}" if isinstance(x, Fraction) else repr(x)
    except ValueError:
        return "a huge integer"
    return text if len(text) <= 80 else text[:80] + "..."




_ROW_REASONS = (("p", Reason.INPUT), ("q", Reason.INPUT), ("accept", Reason.ACCEPT),
                ("residual", Reason.RESIDUAL), ("emitted", Reason.EMITTED))


def _rows(cert, where, size, full):
    """The claimed rows: every token 0..V-1 in order (full), or a strictly increasing subset."""
    rows = _field(cert, "rows", where)
    if not isinstance(rows, list) or (full and not rows):
        raise Rejected(Reason.MALFORMED, f"{where}.rows is not a non-empty list")
    if full and size != len(rows):
        raise Rejected(Reason.TOKENS, f"{where} has vocab_size {_show(size)} but {len(rows)} rows")
    claimed, last = [], -1
    for i, row in enumerate(rows):
        here = f"{where}.rows[{i}]"
        token = _field(row, "token", here)
        if type(token) is not int or (token != i if full else not last < token < size):
            want = f"token {i}" if full else f"a token above {last} and below {size}"
            raise Rejected(Reason.TOKENS, f"{here} is token {_show(token)}, expected {want}")
        claimed.append((token, {k: _rational(_field(row, k, here), f"{here}.{k}") for k in ROW_FIELDS}))
        last = token
    return claimed


def _float64s(text, where):
    """Exact values of little-endian IEEE 754 binary64 numbers given as base64, no float used."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (TypeError, ValueError):
        raw = b"?"  # not base64: rejected just below
    if len(raw) % 8:
        raise Rejected(Reason.MALFORMED, f"{where} is not base64 text of 8-byte numbers")
    values = []
    for i in range(0, len(raw), 8):
        bits = int.from_bytes(raw[i:i + 8], "little")
        sign, exponent, fraction = bits >> 63, (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
        if exponent == 0x7FF or (sign and bits != 1 << 63):  # NaN, infinity, or below zero
            raise Rejected(Reason.NOT_RATIONAL, f"{where}[{i // 8}] is NaN, infinite or negative")
        mantissa, shift = (fraction, -1074) if exponent == 0 else ((1 << 52) | fraction, exponent - 1075)
        values.append(Fraction(mantissa << shift) if shift >= 0 else Fraction(mantissa, 1 << -shift))
    return values


def _normalized(x, where, size, atol):
    """``x`` divided by its exact sum, refused unless it has ``size`` entries summing to 1 +- atol."""
    total = sum(x, Fraction(0))
    if len(x) != size:
        raise Rejected(Reason.TOKENS, f"{where} has {len(x)} entries, vocab_size {_show(size)}")
    if total == 0 or abs(total - 1) > atol:
        off = f"off from 1 by more than {_show(atol)}" if atol else "not 1"
        raise Rejected(Reason.NOT_NORMALIZED, f"{where} sums to {_show(total)}, {off}")
    return [v / total for v in x]


def _atol(obj, where):
    atol = _rational(_field(obj, "atol", where), f"{where}.atol")
    if atol >= 1:
        raise Rejected(Reason.NOT_NORMALIZED, f"{where}.atol is {_show(atol)}, not below 1")
    return atol


def _inputs(cert, where, size):
    """p and q of a compact certificate: float64 vectors, each divided by its exact sum."""
    inputs = _field(cert, "inputs", where)
    if _field(inputs, "encoding", f"{where}.inputs") != COMPACT_ENCODING:
        raise Rejected(Reason.SCHEMA, f"{where}.inputs.encoding is not {COMPACT_ENCODING!r}")
    atol = _atol(inputs, f"{where}.inputs")
    return [_normalized(_float64s(_field(inputs, k, f"{where}.inputs"), f"{where}.inputs.{k}"),
                        f"{where}.inputs.{k}", size, atol) for k in "pq"]


def _size(cert, where):
    size = _field(cert, "vocab_size", where)
    if type(size) is not int or size < 1:
        raise Rejected(Reason.TOKENS, f"{where} has vocab_size {_show(size)}")
    return size


def _section(cert, where, name, keys):  # "totals" or "claims": a JSON object with only known keys
    obj = _field(cert, name, where)
    if isinstance(obj, dict) and set(obj) - set(keys):
        raise Rejected(Reason.MALFORMED, f"{where}.{name} has unknown fields {sorted(set(obj) - set(keys))}")
    return [(f"{where}.{name}.{key}", _field(obj, key, f"{where}.{name}")) for key in keys]


def _claims(cert, where, truth):
    """Each claim must be made (true or false) and equal what the recomputed law shows."""
    for (here, value), key in zip(_section(cert, where, "claims", truth), truth):
        if type(value) is not bool:
            raise Rejected(Reason.MALFORMED, f"{here} is {_show(value)}, not true/false")
        _same(Reason.CLAIM, here, truth[key], value)
    return truth


def _step(p, q):
    """One position of the sampler, from p and q alone: accept masses, residual, rejection, and
    the emitted law (accept, or reject and draw from the normalized residual)."""
    accept = [b * min(Fraction(1), a / b) if b != 0 else Fraction(0) for a, b in zip(p, q)]
    residual = [max(a - b, Fraction(0)) for a, b in zip(p, q)]
    rejection, normalizer = 1 - sum(accept, Fraction(0)), sum(residual, Fraction(0))
    # when Z == 0 (p == q) the draft is never rejected and the residual never sampled
    drawn = [rejection * r / normalizer for r in residual] if normalizer else [Fraction(0)] * len(p)
    return accept, residual, rejection, normalizer, drawn


def _check_certificate(cert, where):
    size, full = _size(cert, where), cert["schema"] == CERTIFICATE_SCHEMA
    claimed = _rows(cert, where, size, full)
    p, q = ([v[k] for _, v in claimed] for k in "pq") if full else _inputs(cert, where, size)
    for name, total in (("p", sum(p, Fraction(0))), ("q", sum(q, Fraction(0)))):
        if total != 1:
            raise Rejected(Reason.NOT_NORMALIZED, f"{where}: {name} sums to {_show(total)}, not 1")
    accept, residual, rejection, normalizer, drawn = _step(p, q)
    emitted = [m + r for m, r in zip(accept, drawn)]
    alpha, tv = 1 - rejection, sum((abs(a - b) for a, b in zip(p, q)), Fraction(0)) / 2
    recomputed = {"p": p, "q": q, "accept": accept, "residual": residual, "emitted": emitted}
    for i, (token, values) in enumerate(claimed):
        for key, reason in _ROW_REASONS:
            _same(reason, f"{where}.rows[{i}].{key}", recomputed[key][token], values[key])
    recomputed = {"alpha": alpha, "normalizer": normalizer, "rejection": rejection, "tv": tv}
    for (here, value), key in zip(_section(cert, where, "totals", TOTAL_FIELDS), TOTAL_FIELDS):
        _same(Reason.TOTAL, here, recomputed[key], _rational(value, here))
    return _claims(cert, where, {"alpha_equals_one_minus_tv": alpha == 1 - tv, "dist_equals_p": emitted == p})


def _table(cert, where, size):
    """A chain's rows: lists of "n/d" strings, or float64 base64 texts divided by their sums."""
    rows = _field(cert, "rows", where)
    encoding, table = _field(rows, "encoding", f"{where}.rows"), _field(rows, "table", f"{where}.rows")
    if encoding not in (EXACT_ENCODING, COMPACT_ENCODING) or not isinstance(table, list):
        raise Rejected(Reason.SCHEMA, f"{where}.rows has encoding {_show(encoding)} or a table that is not a list")
    exact = encoding == EXACT_ENCODING
    atol, out = Fraction(0) if exact else _atol(rows, f"{where}.rows"), []
    for i, row in enumerate(table):
        here = f"{where}.rows.table[{i}]"
        if exact and not isinstance(row, list):
            raise Rejected(Reason.MALFORMED, f"{here} is not a list of 'n/d' strings")
        x = [_rational(v, f"{here}[{j}]") for j, v in enumerate(row)] if exact else _float64s(row, here)
        out.append(_normalized(x, here, size, atol))
    return out


def _check_chain(cert, where):
    """One step over gamma drafts, node by node. At each prefix s of depth < gamma the verifier
    can accept (breadth first, tokens in order), with A(s) the mass of reaching it, E(s) of
    outputs starting with s whose block ended inside s, P(s) the target's: the output's mass of
    s + (t,), accepted (A min(p, q)) or drawn (A (1 - alpha) residual / Z; E p after the block),
    must be P(s) p(t). At depth gamma the bonus token and the continuation both draw from p, and
    past a prefix never accepted the output is target sampling: the law is the target's."""
    size, gamma = _size(cert, where), _field(cert, "gamma", where)
    if type(gamma) is not int or gamma < 1:
        raise Rejected(Reason.MALFORMED, f"{where}.gamma is {_show(gamma)}, not an integer >= 1")
    (at, lengths), *rest = _section(cert, where, "totals", CHAIN_TOTALS)  # gamma + 1 claims bound gamma
    if not isinstance(lengths, list) or len(lengths) != gamma + 1:
        raise Rejected(Reason.MALFORMED, f"{at} is not a list of gamma + 1 = {_show(gamma + 1)} rationals")
    table, nodes, steps = _table(cert, where, size), _field(cert, "nodes", where), {}
    order, mass = [()], {(): (Fraction(1), Fraction(0), Fraction(1))}  # prefix -> A, E, P
    stops, weighted, inner, stream = [Fraction(0)] * (gamma + 1), Fraction(0), Fraction(0), True
    for i, node in enumerate(nodes if isinstance(nodes, list) else [None]):
        here, prefix = f"{where}.nodes[{i}]", _field(node, "prefix", f"{where}.nodes[{i}]")
        if i >= len(order) or prefix != list(order[i]) or any(type(x) is not int for x in prefix):
            want = f"prefix {list(order[i])}" if i < len(order) else f"only {len(order)} nodes"
            raise Rejected(Reason.NODES, f"{here} has prefix {_show(prefix)}; the verifier accepts {want}")
        if set(node) != {"prefix", "p", "q", "reach", "stop"}:
            raise Rejected(Reason.MALFORMED, f"{here} has fields {sorted(node)}, not p, prefix, q, reach, stop")
        if any(type(node[k]) is not int or not 0 <= node[k] < len(table) for k in "pq"):
            raise Rejected(Reason.MALFORMED, f"{here}: p or q is not the index of a row of the table")
        prefix, (a, e, total), p = order[i], mass[order[i]], table[node["p"]]
        if (node["p"], node["q"]) not in steps:  # the same pair of rows at many nodes: one step
            steps[node["p"], node["q"]] = _step(p, table[node["q"]])
        accept, _, rejection, _, drawn = steps[node["p"], node["q"]]
        stop, weighted, inner = a * rejection, weighted + a * (1 - rejection), inner + a
        for t in range(size):
            now = (a * accept[t], a * drawn[t] + e * p[t], total * p[t])
            stream = stream and now[0] + now[1] == now[2]
            if accept[t] and len(prefix) + 1 < gamma:
                order.append(prefix + (t,))
                mass[prefix + (t,)] = now
        for key, value in (("reach", a), ("stop", stop)):
            _same(Reason.NODE_MASS, f"{here}.{key}", value, _rational(node[key], f"{here}.{key}"))
        stops[len(prefix)] += stop
        stops[gamma] += a * (1 - rejection) if len(prefix) + 1 == gamma else 0
    if len(nodes) != len(order):
        raise Rejected(Reason.NODES, f"{where} lists {len(nodes)} nodes; the verifier accepts {len(order)} prefixes")
    recomputed = [(f"{at}[{k}]", s, v) for k, (s, v) in enumerate(zip(stops, lengths))]
    recomputed += [(h, x, v) for (h, v), x in zip(rest, (1 + sum(k * s for k, s in enumerate(stops)), weighted / inner))]
    for where_, expected, value in recomputed:
        _same(Reason.TOTAL, where_, expected, _rational(value, where_))
    return _claims(cert, where, {"stream_equals_target_law": stream})


_CHECKS = {CERTIFICATE_SCHEMA: _check_certificate, COMPACT_SCHEMA: _check_certificate, CHAIN_SCHEMA: _check_chain}


def _check_one(cert, where):
    schema = _field(cert, "schema", where)
    if not isinstance(schema, str) or schema not in _CHECKS:
        raise Rejected(Reason.SCHEMA, f"{where} has unknown schema {_show(schema)}, expected one of {sorted(_CHECKS)}")
    return _CHECKS[schema](cert, where)


def _check_document(doc):
    if _field(doc, "schema", "document") != BUNDLE_SCHEMA:
        return [_check_one(doc, "certificate")]
    certs, count = _field(doc, "certificates", "bundle"), _field(doc, "count", "bundle")
    if not isinstance(certs, list) or not certs:
        raise Rejected(Reason.MALFORMED, "bundle.certificates is not a non-empty list")
    if type(count) is not int or count != len(certs):
        raise Rejected(Reason.TOKENS, f"bundle has count {_show(count)} but {len(certs)} certificates")
    return [_check_one(c, f"certificates[{i}]") for i, c in enumerate(certs)]


def check(document):
    """Re-verify a certificate or bundle (a parsed JSON object, or its JSON text).

    Returns a :class:`Verdict`: valid iff the document is well formed, every claimed value
    equals the law recomputed from p and q, and every claim (dist == p and alpha == 1 - TV for
    one position; the stream's law == the target's for a chain) is made and holds; otherwise
    the :class:`Reason` and a detail naming the values.
    """
    try:
        if isinstance(document, (str, bytes)):
            try:
                # JSON floats and NaN stay text, so they are rejected as not rational
                document = json.loads(document, parse_float=_text, parse_constant=_text,
                                      object_pairs_hook=_unique)
            except ValueError as exc:
                raise Rejected(Reason.MALFORMED, f"not valid JSON: {exc}") from None
        truths = _check_document(document)
    except Rejected as rej:
        return Verdict(False, rej.reason, rej.detail)
    except RecursionError:
        return Verdict(False, Reason.MALFORMED, "nested too deeply")
    for i, truth in enumerate(truths):
        for key, holds in truth.items():
            if not holds:
                return Verdict(False, Reason.CLAIM, f"certificate {i}: {key} does not hold")
    return Verdict(True, None, f"re-verified {len(truths)} certificate(s)")


def check_file(path):
    """Read ``path`` (UTF-8 JSON) and :func:`check` it; a file that cannot be read is UNREADABLE."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return Verdict(False, Reason.UNREADABLE, f"cannot read {path}: {exc.strerror}")
    return check(data)
