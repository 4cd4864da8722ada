"""TRUSTED: re-verify a specproof certificate from p and q alone.

The small trusted kernel: standard library only, never a float, believes nothing it did not
recompute. From p and q it re-derives the verifier's law by the sampler's steps (x ~ q; accept
with probability min(1, p(x)/q(x)); else draw from (p - q)+ normalized) and accepts only if
every claimed value equals the recomputed one exactly and dist == p, alpha == 1 - TV hold.
Documents: ``specproof.certificate/1`` (one row per token, rationals as ``"n/d"`` strings),
``specproof.compact-certificate/1`` (p and q as float64 bit patterns, each divided by its exact
sum; claimed rows at some tokens) and ``specproof.bundle/1`` (a list of either).
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
ROW_FIELDS = ("accept", "emitted", "p", "q", "residual")
TOTAL_FIELDS = ("alpha", "normalizer", "rejection", "tv")
CLAIMS = ("alpha_equals_one_minus_tv", "dist_equals_p")
_RATIONAL, _text = re.compile(r"-?[0-9]+/[0-9]+"), str.strip


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
    """A non-negative rational from its "n/d" string (every rational in a certificate is >= 0)."""
    if not isinstance(value, str) or _RATIONAL.fullmatch(value) is None:
        raise Rejected(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, not an 'n/d' string")
    num, den = value.split("/")
    try:
        num, den = int(num), int(den)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        raise Rejected(Reason.NOT_RATIONAL, f"{where} has {len(value)} characters: too many digits") from None
    if den == 0:
        raise Rejected(Reason.NOT_RATIONAL, f"{where} is {_show(value)}, which has a zero denominator")
    if num < 0:
        raise Rejected(Reason.NEGATIVE, f"{where} is {value}, which is negative")
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


def _inputs(cert, where, size):
    """p and q of a compact certificate: float64 vectors, each divided by its exact sum."""
    inputs = _field(cert, "inputs", where)
    if _field(inputs, "encoding", f"{where}.inputs") != COMPACT_ENCODING:
        raise Rejected(Reason.SCHEMA, f"{where}.inputs.encoding is not {COMPACT_ENCODING!r}")
    atol = _rational(_field(inputs, "atol", f"{where}.inputs"), f"{where}.inputs.atol")
    if atol >= 1:
        raise Rejected(Reason.NOT_NORMALIZED, f"{where}.inputs.atol is {_show(atol)}, not below 1")
    vectors = []
    for name in ("p", "q"):
        x = _float64s(_field(inputs, name, f"{where}.inputs"), f"{where}.inputs.{name}")
        total = sum(x, Fraction(0))
        if len(x) != size:
            raise Rejected(Reason.TOKENS, f"{where}.inputs.{name} has {len(x)} entries, vocab_size {size}")
        if total == 0 or abs(total - 1) > atol:
            raise Rejected(Reason.NOT_NORMALIZED, f"{where}: {name} sums to {_show(total)}, off by more than atol")
        vectors.append([v / total for v in x])
    return vectors


def _check_certificate(cert, where):
    schema = _field(cert, "schema", where)
    if schema not in (CERTIFICATE_SCHEMA, COMPACT_SCHEMA):
        raise Rejected(Reason.SCHEMA, f"{where} has schema {_show(schema)}, expected {CERTIFICATE_SCHEMA!r}")
    size = _field(cert, "vocab_size", where)
    if type(size) is not int or size < 1:
        raise Rejected(Reason.TOKENS, f"{where} has vocab_size {_show(size)}")
    full = schema == CERTIFICATE_SCHEMA
    claimed = _rows(cert, where, size, full)
    p, q = ([v[k] for _, v in claimed] for k in "pq") if full else _inputs(cert, where, size)
    for name, total in (("p", sum(p, Fraction(0))), ("q", sum(q, Fraction(0)))):
        if total != 1:
            raise Rejected(Reason.NOT_NORMALIZED, f"{where}: {name} sums to {_show(total)}, not 1")
    # The sampler's steps, recomputed from p and q alone.
    accept = [b * min(Fraction(1), a / b) if b != 0 else Fraction(0) for a, b in zip(p, q)]
    residual = [max(a - b, Fraction(0)) for a, b in zip(p, q)]
    alpha = sum(accept, Fraction(0))
    rejection = 1 - alpha
    normalizer = sum(residual, Fraction(0))
    # when Z == 0 (p == q) the draft is never rejected and the residual never sampled
    emitted = [m + rejection * r / normalizer for m, r in zip(accept, residual)] if normalizer else accept
    tv = sum((abs(a - b) for a, b in zip(p, q)), Fraction(0)) / 2

    recomputed = {"p": p, "q": q, "accept": accept, "residual": residual, "emitted": emitted}
    for i, (token, values) in enumerate(claimed):
        for key, reason in _ROW_REASONS:
            _same(reason, f"{where}.rows[{i}].{key}", recomputed[key][token], values[key])
    totals, claims = _field(cert, "totals", where), _field(cert, "claims", where)
    for name, obj, keys in (("totals", totals, TOTAL_FIELDS), ("claims", claims, CLAIMS)):
        if isinstance(obj, dict) and set(obj) - set(keys):
            raise Rejected(Reason.MALFORMED, f"{where}.{name} has unknown fields {sorted(set(obj) - set(keys))}")
    recomputed = {"alpha": alpha, "normalizer": normalizer, "rejection": rejection, "tv": tv}
    for key in TOTAL_FIELDS:
        value = _rational(_field(totals, key, f"{where}.totals"), f"{where}.totals.{key}")
        _same(Reason.TOTAL, f"{where}.totals.{key}", recomputed[key], value)
    truth = {"alpha_equals_one_minus_tv": alpha == 1 - tv, "dist_equals_p": emitted == p}
    for key in CLAIMS:
        value = _field(claims, key, f"{where}.claims")
        if type(value) is not bool:
            raise Rejected(Reason.MALFORMED, f"{where}.claims.{key} is {_show(value)}, not true/false")
        _same(Reason.CLAIM, f"{where}.claims.{key}", truth[key], value)
    return truth


def _check_document(doc):
    schema = _field(doc, "schema", "document")
    if schema in (CERTIFICATE_SCHEMA, COMPACT_SCHEMA):
        return [_check_certificate(doc, "certificate")]
    if schema == BUNDLE_SCHEMA:
        certs = _field(doc, "certificates", "bundle")
        if not isinstance(certs, list) or not certs:
            raise Rejected(Reason.MALFORMED, "bundle.certificates is not a non-empty list")
        count = _field(doc, "count", "bundle")
        if type(count) is not int or count != len(certs):
            raise Rejected(Reason.TOKENS, f"bundle has count {_show(count)} but {len(certs)} certificates")
        return [_check_certificate(c, f"certificates[{i}]") for i, c in enumerate(certs)]
    raise Rejected(Reason.SCHEMA, f"unknown schema {_show(schema)}")


def check(document):
    """Re-verify a certificate or bundle (a parsed JSON object, or its JSON text).

    Returns a :class:`Verdict`: valid iff the document is well formed, every claimed value
    equals the law recomputed from p and q, and both claims (dist == p, alpha == 1 - TV) are
    made and hold; otherwise the :class:`Reason` and a detail naming the values.
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
        for key in CLAIMS:
            if not truth[key]:
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
