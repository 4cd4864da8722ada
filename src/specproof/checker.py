"""TRUSTED: re-verify a specproof certificate from p and q alone.

This module is the small trusted kernel. It uses the standard library only, never a float,
and believes nothing it did not recompute. From each row's target p(x) and draft q(x) it
re-derives the verifier's operational law by the sampler's steps (draw x ~ q; accept with
probability min(1, p(x)/q(x)); otherwise draw from the normalized residual (p - q)+) and
accepts the certificate only if every claimed value equals the recomputed one as an exact
rational, and the claims dist == p and alpha == 1 - TV hold.

Documents: a certificate (schema ``specproof.certificate/1``) or a bundle of them
(``specproof.bundle/1``). Rationals are strings ``"n/d"`` (``d > 0``); anything else where
a rational belongs is rejected.
"""

import json
import re
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

VERSION = "1.0"
CERTIFICATE_SCHEMA = "specproof.certificate/1"
BUNDLE_SCHEMA = "specproof.bundle/1"
ROW_FIELDS = ("accept", "emitted", "p", "q", "residual")
TOTAL_FIELDS = ("alpha", "normalizer", "rejection", "tv")
CLAIMS = ("alpha_equals_one_minus_tv", "dist_equals_p")
_RATIONAL = re.compile(r"-?[0-9]+/[0-9]+")


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


class Rejected(Exception):
    """Internal: carries a rejection out of nested checks."""

    def __init__(self, reason, detail):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _rational(value, where):
    if not isinstance(value, str) or _RATIONAL.fullmatch(value) is None:
        raise Rejected(Reason.NOT_RATIONAL, f"{where} is {value!r}, not an 'n/d' string")
    num, den = value.split("/")
    try:
        num, den = int(num), int(den)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        raise Rejected(Reason.NOT_RATIONAL, f"{where} has {len(value)} characters: too many digits") from None
    if den == 0:
        raise Rejected(Reason.NOT_RATIONAL, f"{where} is {value!r}, which has a zero denominator")
    return Fraction(num, den)


def _field(obj, key, where):
    if not isinstance(obj, dict):
        raise Rejected(Reason.MALFORMED, f"{where} is not a JSON object")
    if key not in obj:
        raise Rejected(Reason.MISSING_FIELD, f"{where} has no field {key!r}")
    return obj[key]


def _same(reason, where, expected, claimed):
    if expected != claimed:
        raise Rejected(reason, f"{where}: expected {_show(expected)}, claimed {_show(claimed)}")


def _show(x):
    return f"{x.numerator}/{x.denominator}" if isinstance(x, Fraction) else repr(x)


def _check_certificate(cert, where):
    schema = _field(cert, "schema", where)
    if schema != CERTIFICATE_SCHEMA:
        raise Rejected(Reason.SCHEMA, f"{where} has schema {schema!r}, expected {CERTIFICATE_SCHEMA!r}")
    rows = _field(cert, "rows", where)
    size = _field(cert, "vocab_size", where)
    if not isinstance(rows, list) or not rows:
        raise Rejected(Reason.MALFORMED, f"{where}.rows is not a non-empty list")
    if type(size) is not int or size != len(rows):
        raise Rejected(Reason.TOKENS, f"{where} has vocab_size {size!r} but {len(rows)} rows")
    p, q, claimed = [], [], []
    for i, row in enumerate(rows):
        here = f"{where}.rows[{i}]"
        token = _field(row, "token", here)
        if type(token) is not int or token != i:
            raise Rejected(Reason.TOKENS, f"{here} is token {token!r}, expected token {i}")
        values = {k: _rational(_field(row, k, here), f"{here}.{k}") for k in ROW_FIELDS}
        for k, v in values.items():
            if v < 0:
                raise Rejected(Reason.NEGATIVE, f"{here}.{k} is {_show(v)}, which is negative")
        p.append(values["p"])
        q.append(values["q"])
        claimed.append(values)
    for name, vec in (("p", p), ("q", q)):
        total = sum(vec, Fraction(0))
        if total != 1:
            raise Rejected(Reason.NOT_NORMALIZED, f"{where}: {name} sums to {_show(total)}, not 1")

    # The sampler's steps, recomputed from p and q alone.
    accept = [b * min(Fraction(1), a / b) if b != 0 else Fraction(0) for a, b in zip(p, q)]
    residual = [max(a - b, Fraction(0)) for a, b in zip(p, q)]
    alpha = sum(accept, Fraction(0))
    rejection = 1 - alpha
    normalizer = sum(residual, Fraction(0))
    if normalizer == 0:
        emitted = list(accept)  # p == q: never rejected, the residual is never sampled
    else:
        emitted = [m + rejection * r / normalizer for m, r in zip(accept, residual)]
    tv = sum((abs(a - b) for a, b in zip(p, q)), Fraction(0)) / 2

    for i, values in enumerate(claimed):
        here = f"{where}.rows[{i}]"
        _same(Reason.ACCEPT, f"{here}.accept", accept[i], values["accept"])
        _same(Reason.RESIDUAL, f"{here}.residual", residual[i], values["residual"])
        _same(Reason.EMITTED, f"{here}.emitted", emitted[i], values["emitted"])
    totals = _field(cert, "totals", where)
    recomputed = {"alpha": alpha, "normalizer": normalizer, "rejection": rejection, "tv": tv}
    for key in TOTAL_FIELDS:
        value = _rational(_field(totals, key, f"{where}.totals"), f"{where}.totals.{key}")
        _same(Reason.TOTAL, f"{where}.totals.{key}", recomputed[key], value)
    claims = _field(cert, "claims", where)
    truth = {"alpha_equals_one_minus_tv": alpha == 1 - tv, "dist_equals_p": emitted == p}
    for key in CLAIMS:
        value = _field(claims, key, f"{where}.claims")
        if type(value) is not bool:
            raise Rejected(Reason.MALFORMED, f"{where}.claims.{key} is {value!r}, not true/false")
        _same(Reason.CLAIM, f"{where}.claims.{key}", truth[key], value)
    return truth


def _check_document(doc):
    schema = _field(doc, "schema", "document")
    if schema == CERTIFICATE_SCHEMA:
        truth = _check_certificate(doc, "certificate")
        return [truth]
    if schema == BUNDLE_SCHEMA:
        certs = _field(doc, "certificates", "bundle")
        if not isinstance(certs, list) or not certs:
            raise Rejected(Reason.MALFORMED, "bundle.certificates is not a non-empty list")
        count = _field(doc, "count", "bundle")
        if type(count) is not int or count != len(certs):
            raise Rejected(Reason.TOKENS, f"bundle has count {count!r} but {len(certs)} certificates")
        return [_check_certificate(c, f"certificates[{i}]") for i, c in enumerate(certs)]
    raise Rejected(Reason.SCHEMA, f"unknown schema {schema!r}")


def check(document):
    """Re-verify a certificate or bundle: a parsed JSON object, or its JSON text.

    Returns
    -------
    Verdict
        ``valid`` is True iff the document is well formed, every claimed value equals the
        law recomputed from p and q, and every claim it makes is true and holds (dist == p,
        alpha == 1 - TV). Otherwise ``reason`` (a :class:`Reason`) and ``detail``.
    """
    try:
        if isinstance(document, (str, bytes)):
            try:
                document = json.loads(document, parse_float=_keep_float, parse_constant=_keep_float)
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


def _keep_float(text):
    """Keep a JSON float or NaN as its text, so that it is rejected as not rational."""
    return ("float", text)


def check_file(path):
    """Read ``path`` (UTF-8 JSON) and :func:`check` it; a file that cannot be read is UNREADABLE."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return Verdict(False, Reason.UNREADABLE, f"cannot read {path}: {exc.strerror}")
    return check(data)
