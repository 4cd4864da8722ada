"""Proof transcripts: readable Markdown rendered from a certificate and the checker's verdict.

Transcripts are never written by hand: :func:`render` fills a Jinja2 template
(``specproof/report/templates/*.md.j2``) from the JSON document alone, so the same document and
verdict always give the same bytes. Long per-token tables are abbreviated to the rows that
matter (largest masses, zeros of p or q, the residual's support), with the totals.
"""

from __future__ import annotations

import decimal
import hashlib
import heapq
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import jinja2

from specproof import checker
from specproof.certify.certificate import COMPACT_ROWS, select_tokens
from specproof.checker import Verdict
from specproof.laws.numtext import (
    _DIGITS,
    NUMBER_TEXT_EXACT_CHARS,  # noqa: F401
    _digits,
    _parts,
    column_texts,
    exact_text,
    number_text,
    show,
)

__all__ = ["ASSUMPTIONS", "NOT_PROVED", "checker_identity", "exact_text", "number_text", "render", "show"]

#: What every instance proof assumes.
ASSUMPTIONS = (
    "A finite vocabulary of V >= 1 tokens.",
    "p and q are exactly normalized rational vectors (each entry a non-negative rational, "
    "each vector summing to exactly 1).",
    "The verifier is the standard speculative-sampling step: x ~ q, accept with probability "
    "min(1, p(x)/q(x)), otherwise draw from (p - q)+ normalized.",
)

#: What no transcript claims.
NOT_PROVED = (
    "the float path (specproof.laws.numeric) is measured against the exact law, not proved; "
    "a proof about floats made exact is a proof about the exact rationals they were made into; "
    "the wording of names, statements, token texts, notes and provenance is descriptive and "
    "not verified by the checker."
)

#: Per-token tables longer than this are abbreviated.
FULL_TABLE_ROWS = 40

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("specproof.report", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)


def checker_identity() -> dict[str, str]:
    """The trust base: the checker's version and the sha256 of its source file."""
    source = Path(checker.__file__).read_bytes()
    return {"version": checker.VERSION, "sha256": hashlib.sha256(source).hexdigest()}


def _fractions(rows: list[Mapping[str, Any]], key: str) -> list[Fraction]:
    return [Fraction(*_parts(r[key])) for r in rows]


#: Provenance is shown to this depth of nesting (deeper values are named, not shown), and as at
#: most this many fields.
PROVENANCE_DEPTH = 8
PROVENANCE_FIELDS = 200


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, Mapping):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _provenance(info: Any) -> list[tuple[str, str]]:
    """Provenance as (field, value) rows: nested objects flattened to dotted field names (to
    :data:`PROVENANCE_DEPTH` levels; deeper values are named, not shown), lists and scalars
    written as JSON, everything escaped (it is descriptive, not verified). No recursion, so any
    nesting the parser accepts is shown or named."""
    items: list[tuple[str, str]] = []
    stack = [(info, "", 0)]
    while stack and len(items) < PROVENANCE_FIELDS:
        value, key, level = stack.pop()
        if isinstance(value, Mapping) and value and level < PROVENANCE_DEPTH:
            stack.extend(
                (value[k], f"{key}.{k}" if key else str(k), level + 1) for k in sorted(value, key=str, reverse=True)
            )
            continue
        if isinstance(value, str):
            text = value
        elif _depth(value) > PROVENANCE_DEPTH:
            text = f"(nested more than {PROVENANCE_DEPTH} levels deep: not shown)"
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)[:1000]
        items.append((_plain(key or "provenance"), _plain(text)))
    if stack:
        items.append((_plain("..."), _plain(f"more fields than {PROVENANCE_FIELDS}: not shown")))
    return items


#: What the checker re-derives, per kind of document (for the trust base).
_FROM_PQ = "re-derived every value below from p and q alone"
_FROM_FLOATS = "re-derived the law from the float inputs made exact, and every claimed row and total"
_FROM_ROWS = "re-derived every exact value below from the target's and the draft's rows alone"


def _trust(verdict: Verdict, what: str = _FROM_PQ) -> str:
    """What the checker did, in one sentence, for the trust base."""
    if not verdict.valid:
        return "it REJECTED this document; the values below are what the document claims, not re-derived facts"
    return f"standard library only; it {what}"


def _offset(raw_sum: checker.Ratio) -> str:
    """A float row's exact sum as ``1``, ``1 + 2.2e-16`` or ``1 − 1.1e-16`` (6 digits)."""
    diff = raw_sum.num - raw_sum.den
    if diff == 0:
        return "1"
    return f"1 {'+' if diff > 0 else '−'} {_digits(checker.Ratio(abs(diff), raw_sum.den), 6)}"


def _float_rows(verdict: Verdict) -> str:
    """What the checker did with float64 rows, and their raw sums, for the trust base ("" if none)."""
    sums: list[tuple[str | None, checker.Ratio]] = []
    for facts in verdict.facts if verdict.valid else ():
        raw = facts["raw_sums"]
        sums.extend(raw.items() if isinstance(raw, dict) else ((None, x) for x in raw))
    if not sums:
        return ""
    num, den = checker.FLOAT_ROW_TOLERANCE
    head = (
        f"the checker made each float64 row exact and divided it by its exact sum, accepting a row only if "
        f"that sum is within {num}/{den} of 1 (its own fixed tolerance; a certificate cannot set it). "
    )
    if len(sums) <= 2:
        return head + "Raw sums: " + ", ".join(f"{k} {_offset(x)}" for k, x in sums) + "."
    ordered = sorted((x for _, x in sums), key=lambda x: Fraction(x.num - x.den, x.den))
    return head + f"Raw sums of the {len(sums)} float rows: from {_offset(ordered[0])} to {_offset(ordered[-1])}."


def _verdict_words(verdict: Verdict) -> tuple[str, str]:
    ident = checker_identity()
    if verdict.valid:
        return "PROVED", f"Valid: checker version {ident['version']} {verdict.detail}."
    reason = verdict.reason.value if verdict.reason is not None else "unknown"
    return "REJECTED", f"Rejected by the checker ({reason}): {verdict.detail}."


def _columns(cert: Mapping[str, Any], facts: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """Every token's p, q, accept, residual and emitted mass, as Fractions, and its id (``"token"``).

    From what the checker recomputed (``facts``, one entry of a valid verdict's ``facts``)
    when there is one; otherwise, for a rejected document, from the rows it claims (a compact
    certificate claims only some tokens: only those are shown).
    """
    keys = ("p", "q", "accept", "residual", "emitted")
    out: dict[str, list[Any]]  # Fractions, and the ids in "token"
    if facts is None:
        out = {k: _fractions(cert["rows"], k) for k in keys}
        out["token"] = [r["token"] for r in cert["rows"]]
        return out
    law, (emitted, emitted_den) = facts["law"], facts["emitted"]
    cols = (law.target, law.draft, law.accept, law.residual)
    out = {k: [Fraction(n, law.den) for n in col] for k, col in zip(keys, cols)}
    out["emitted"] = [Fraction(n, emitted_den) for n in emitted]
    out["token"] = list(range(len(law.target)))
    return out


def _residual_column(cert: Mapping[str, Any], facts: Mapping[str, Any] | None) -> tuple[Sequence[Any], Sequence[int]]:
    """The residual column and its token ids, as :func:`_columns` has them but without making
    Fractions: the checker's integer numerators (over the law's one denominator) when there
    are facts, else the claimed rows' Fractions."""
    if facts is None:
        return _fractions(cert["rows"], "residual"), [r["token"] for r in cert["rows"]]
    return facts["law"].residual, range(len(facts["law"].residual))


def _selection(cert: Mapping[str, Any], cols: Mapping[str, list[Fraction]]) -> tuple[list[int], str]:
    """Tokens to show, and how they were chosen (from the whole recomputed law, not the claims)."""
    v = len(cols["p"])
    if v <= FULL_TABLE_ROWS:
        return list(range(v)), ""
    return select_tokens(cols["p"], cols["q"], cols["residual"]), COMPACT_ROWS


def _outcome(holds: bool, verdict: Verdict) -> str:
    if not holds:
        return "does NOT hold"
    return "holds; re-derived by the checker" if verdict.valid else "holds as stated, but the certificate was rejected"


def _certificate_steps(
    cert: Mapping[str, Any], cols: Mapping[str, list[Fraction]], verdict: Verdict
) -> list[dict[str, str]]:
    p, q, acc, res, emi = (cols[k] for k in ("p", "q", "accept", "residual", "emitted"))
    tot = {k: Fraction(*_parts(v)) for k, v in cert["totals"].items()}
    v = len(p)
    normalized = sum(p) == 1 and sum(q) == 1 and min(p + q) >= 0
    equal = sum(1 for a, b in zip(emi, p) if a == b)
    z_zero = tot["normalizer"] == 0
    return [
        {
            "claim": "p and q are probability vectors.",
            "justification": f"All {2 * v} entries are non-negative rationals; each vector sums to exactly 1.",
            "outcome": _outcome(normalized, verdict),
        },
        {
            "claim": "The accept mass of token x is q(x)·min(1, p(x)/q(x)), and 0 where q(x) = 0.",
            "justification": f"x is drafted with probability q(x) and kept with probability min(1, p(x)/q(x)); "
            f"their sum is alpha = {show(tot['alpha'])}.",
            "outcome": _outcome(sum(acc) == tot["alpha"], verdict),
        },
        {
            "claim": "The residual's mass equals the rejection mass: Z = Σ(p − q)+ = 1 − alpha.",
            "justification": f"Z = {show(tot['normalizer'])}, 1 − alpha = {show(tot['rejection'])} "
            "(per token min(p, q) + (p − q)+ = p, summed over a normalized p).",
            "outcome": _outcome(sum(res) == tot["normalizer"] == 1 - tot["alpha"], verdict),
        },
        {
            "claim": "The emitted mass of token x is p(x).",
            "justification": (
                "Z = 0 (p == q): the draft is always accepted and the residual never sampled, "
                "so the emitted mass is the accept mass. "
                if z_zero
                else "Emitted = accept + (1 − alpha)·(p − q)+/Z. "
            )
            + f"Compared with p(x) for all {v} tokens: {equal} of {v} equal.",
            "outcome": _outcome(equal == v and cert["claims"]["dist_equals_p"], verdict),
        },
        {
            "claim": "alpha = 1 − TV(p, q).",
            "justification": f"TV = ½·Σ|p − q| = {show(tot['tv'])}; 1 − TV = {show(1 - tot['tv'])}.",
            "outcome": _outcome(tot["alpha"] == 1 - tot["tv"] and cert["claims"]["alpha_equals_one_minus_tv"], verdict),
        },
    ]


def _table(cert: Mapping[str, Any], cols: Mapping[str, list[Fraction]]) -> dict[str, Any]:
    """The per-token table of one certificate (abbreviated when long), with its totals."""
    labels = {r["token"]: r["label"] for r in cert["rows"] if "label" in r}
    shown, selection = _selection(cert, cols)
    table = []
    for t in shown:
        table.append(
            {
                "token": cols["token"][t],
                "label": _cell(labels.get(cols["token"][t], "")),
                "equal": "yes" if cols["emitted"][t] == cols["p"][t] else "NO",
            }
        )
    for k in ("p", "q", "accept", "residual", "emitted"):
        for row, text in zip(table, column_texts([cols[k][t] for t in shown])):
            row[k] = text
    return {
        "vocab_size": cert["vocab_size"],
        "shown": len(shown),
        "selection": selection,
        "rows": table,
        "has_labels": bool(labels),
        "totals": {k: show(v) for k, v in cert["totals"].items()},
        "all_shown": len(shown) == len(cols["p"]),
        "zeros_p": sum(1 for x in cols["p"] if x == 0),
        "zeros_q": sum(1 for x in cols["q"] if x == 0),
        "residual_support": sum(1 for x in cols["residual"] if x > 0),
    }


def _rederived(cert: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """A one-position certificate with its totals and claims replaced by what the checker
    re-derived (equal in value to the claims of a valid document, but in the checker's own
    bounded form: a claim written unreduced shows as the value it is)."""
    return {**cert, "totals": dict(facts["totals"]), "claims": dict(facts["claims"])}


def _render_certificate(cert: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    cert = _rederived(cert, verdict.facts[0])  # rendered for a valid verdict only
    word, detail = _verdict_words(verdict)
    cols = _columns(cert, verdict.facts[0] if verdict.valid else None)
    return _ENV.get_template("certificate.md.j2").render(
        name=_plain(cert.get("name", "(unnamed)")),
        statement=_plain(cert.get("statement", "(none given)"), STATEMENT_LIMIT),
        assumptions=ASSUMPTIONS,
        checker=checker_identity(),
        json_name=json_name,
        schema=cert["schema"],
        not_proved=NOT_PROVED,
        trust=_trust(verdict, _FROM_FLOATS if cert["schema"] == checker.COMPACT_SCHEMA else _FROM_PQ),
        float_rows=_float_rows(verdict),
        provenance=_provenance(cert.get("provenance", {})),
        table=_table(cert, cols),
        steps=_certificate_steps(cert, cols, verdict),
        verdict=word,
        verdict_detail=detail,
    )


#: Characters that give Markdown (CommonMark with GFM tables) structure inside a line; each is
#: backslash-escaped in free text, which CommonMark renders as the character itself.
_MARKDOWN_SPECIAL = frozenset("\\`*_[]<>|#~!&")


def _plain(text: Any, limit: int = 300) -> str:
    """Free text from a document, made inert: one line, every Markdown-structural character
    backslash-escaped (no HTML, emphasis, links, headings or table cells can come from it), at
    most ``limit`` characters (statements get :data:`STATEMENT_LIMIT`).

    >>> print(_plain("a | b <i>x</i>  # y"))
    a \\| b \\<i\\>x\\</i\\> \\# y
    >>> print(_plain("- a"), _plain("12) b"))
    \\- a 12\\) b
    """
    flat = _visible(" ".join(str(text).split()))
    if len(flat) > limit:
        flat = flat[:limit] + "…"
    out = "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in flat)
    # a line may start a list item, a thematic break or a setext underline: escape its marker
    number = re.match(r"[0-9]+(?=[.)])", out)
    if out[:1] in ("-", "+", "="):
        out = "\\" + out
    elif number:
        out = out[: number.end()] + "\\" + out[number.end() :]
    return out


#: Statements and assumptions are shown up to this many characters (names and notes up to 300).
STATEMENT_LIMIT = 2000


def _code(text: Any) -> str:
    """``text`` as one CommonMark code span, shown literally: fenced by one more backtick than
    its longest run of backticks (a backslash does not escape inside a code span), padded with
    a space where it starts or ends with a backtick, or both starts and ends with a space (one of
    which CommonMark strips from each end).

    >>> print(_code("a`b"), _code("``x"), _code("<img>"))
    ``a`b`` ``` ``x ``` `<img>`
    """
    text = " ".join(str(text).split()) if "\n" in str(text) or "\r" in str(text) else str(text)
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if "`" in (text[:1], text[-1:]) or (text[:1] == text[-1:] == " " and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    """Token text safe inside a Markdown table cell: a code span (:func:`_code`) of its JSON
    escaping (visible whitespace and control characters), with pipes escaped for the table."""
    return _code(_visible(json.dumps(str(text), ensure_ascii=False)[1:-1])).replace("|", "\\|")


#: Unicode's bidirectional controls (embeddings, overrides, isolates, marks).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _visible(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, line and paragraph separators, bidi
    controls) written as a visible ``\\xNN`` or ``\\uNNNN``: a transcript printed to a terminal
    cannot move its cursor, erase a line or reorder what it shows.

    >>> print(_visible("a\x1b[2Kb\u202e"))
    a\\x1b[2Kb\\u202e
    """
    return "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        if c in _BIDI or unicodedata.category(c) in ("Cc", "Zl", "Zp")
        else c
        for c in text
    )


_CARRIERS = 3


def _residual_carriers(cert: Mapping[str, Any], res: Sequence[Any], tokens: Sequence[int]) -> str:
    """The tokens carrying the most residual mass, with their share of it: ``AH 52%, N 20%``
    (from the recomputed law of a valid document, over every token).

    ``res`` is the residual column: integers over one denominator (the checker's law) or
    Fractions (the rows a rejected document claims); ``tokens`` their token ids. The largest
    :data:`_CARRIERS`, ties to the smaller id, are found in one pass (``heapq.nsmallest`` with
    the key of a full sort: the same tokens), and each share is rounded from its exact value.
    """
    labels = {r["token"]: r["label"] for r in cert["rows"] if isinstance(r, Mapping) and "label" in r}
    total = sum(res)
    if total == 0:
        return "none (p == q)"
    top = heapq.nsmallest(_CARRIERS, range(len(res)), key=lambda i: (-res[i], tokens[i]))
    parts = []
    for i in top:
        if res[i] == 0:
            break
        t = tokens[i]
        name = _cell(labels[t]) if t in labels else str(t)
        parts.append(f"{name} {round(Fraction(res[i]) * 100 / total)}%")
    return ", ".join(parts)


#: Bundles with at most this many instances get each instance's per-token table; larger
#: bundles get the first instance's.
BUNDLE_DETAILS = 8


def _render_bundle(bundle: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    certs = [_rederived(c, f) for c, f in zip(bundle["certificates"], verdict.facts)]  # a valid verdict only
    detailed = certs if len(certs) <= BUNDLE_DETAILS else certs[:1]
    # Fraction columns only for the instances shown in detail; the summary rows read the
    # checker's integer columns (one denominator per instance) directly.
    columns = [_columns(c, verdict.facts[i] if verdict.valid else None) for i, c in enumerate(detailed)]
    claims = [f["claims"] for f in verdict.facts] if verdict.valid else [c["claims"] for c in certs]
    summaries = []
    for i, c in enumerate(certs):
        tot = c["totals"]
        summaries.append(
            {
                "index": i,
                "name": _plain(c.get("name", "")),
                "vocab_size": c["vocab_size"],
                "alpha": show(tot["alpha"]),
                "tv": show(tot["tv"]),
                "normalizer": show(tot["normalizer"]),
                "residual": _residual_carriers(c, *_residual_column(c, verdict.facts[i] if verdict.valid else None)),
                "dist": "yes" if claims[i]["dist_equals_p"] else "NO",
                "alpha_tv": "yes" if claims[i]["alpha_equals_one_minus_tv"] else "NO",
            }
        )
    shown = summaries  # every instance gets its summary row
    alphas = [Fraction(*_parts(c["totals"]["alpha"])) for c in certs]
    sizes = sorted({c["vocab_size"] for c in certs})
    equal_pairs = sum(1 for a in alphas if a == 1)
    all_hold = all(c["claims"]["dist_equals_p"] and c["claims"]["alpha_equals_one_minus_tv"] for c in certs)
    summary = (
        f"{len(certs)} instances, V in {sizes}; alpha ranges from {show(min(alphas))} to "
        f"{show(max(alphas))}; {equal_pairs} instance(s) with alpha = 1 (p == q, residual empty); "
        f"dist == p and alpha == 1 − TV claimed for {'all' if all_hold else 'NOT all'} instances."
    )
    steps = [
        {
            "claim": "Every instance is a pair of probability vectors.",
            "justification": "Each certificate's p and q are non-negative rationals summing to exactly 1.",
            "outcome": _outcome(True, verdict),
        },
        {
            "claim": "For every instance, the emitted law equals p.",
            "justification": "Each certificate lists the accept, residual and emitted masses per token.",
            "outcome": _outcome(all(c["claims"]["dist_equals_p"] for c in certs), verdict),
        },
        {
            "claim": "For every instance, alpha = 1 − TV.",
            "justification": "Each certificate lists alpha and TV as exact rationals.",
            "outcome": _outcome(all(c["claims"]["alpha_equals_one_minus_tv"] for c in certs), verdict),
        },
    ]
    word, detail = _verdict_words(verdict)
    return _ENV.get_template("bundle.md.j2").render(
        name=_plain(bundle.get("name", "(unnamed)")),
        statement=_plain(bundle.get("statement", "(none given)"), STATEMENT_LIMIT),
        assumptions=ASSUMPTIONS,
        checker=checker_identity(),
        json_name=json_name,
        schema=bundle["schema"],
        count=len(certs),
        trust=_trust(verdict, _FROM_FLOATS if any(c["schema"] == checker.COMPACT_SCHEMA for c in certs) else _FROM_PQ),
        float_rows=_float_rows(verdict),
        not_proved=NOT_PROVED,
        provenance=_provenance(bundle.get("provenance", {})),
        shown=len(shown),
        selection=f"the first {len(shown)}",
        instances=shown,
        summary=summary,
        details=[
            {"index": i, "name": _plain(c.get("name", "")), "note": _plain(_note(c)), "table": _table(c, columns[i])}
            for i, c in enumerate(detailed)
        ],
        details_note=""
        if len(detailed) == len(certs)
        else f"Instance 0 of {len(certs)} in detail (every instance is in {json_name}).",
        steps=steps,
        verdict=word,
        verdict_detail=detail,
    )


def _note(cert: Mapping[str, Any]) -> Any:
    """A certificate's provenance note ("" when it has none, or its provenance is not an object)."""
    info = cert.get("provenance", {})
    return info.get("note", "") if isinstance(info, dict) else ""


def _render_symbolic(doc: Mapping[str, Any], json_name: str) -> str:
    proved = bool(doc["proved"]) and all(s["verified"] for s in doc["steps"])
    failed = [s["id"] for s in doc["steps"] if not s["verified"]]
    detail = (
        f"Proved: all {len(doc['steps'])} steps verified by SymPy {doc['sympy_version']}."
        if proved
        else f"Not proved: SymPy could not verify {', '.join(failed) or 'the conclusion'}."
    )
    return _ENV.get_template("symbolic.md.j2").render(
        name=_plain(doc["name"]),
        statement=_plain(doc["statement"], STATEMENT_LIMIT),
        assumptions=[_plain(a, STATEMENT_LIMIT) for a in doc["assumptions"]],
        sympy_version=doc["sympy_version"],
        json_name=json_name,
        schema=doc["schema"],
        not_proved="nothing about floats; the argument covers exact real p, q.",
        steps=doc["steps"],
        conclusion=doc["conclusion"],
        verdict="PROVED" if proved else "NOT PROVED",
        verdict_detail=detail,
    )


#: What every chain proof assumes.
CHAIN_ASSUMPTIONS = (
    "A finite vocabulary of V >= 1 tokens; the same at every position.",
    "At every prefix the target's and the draft's rows are exactly normalized rational vectors.",
    "The verifier is the standard block step: gamma drafts from q, each accepted with probability "
    "min(1, p/q) until the first rejection, which is replaced by a draw from (p - q)+ normalized; "
    "after gamma acceptances the bonus token is drawn from p; then plain sampling from p.",
)


_EQ1_PRECISION = 40


def _decimal(value: checker.Ratio) -> decimal.Decimal:
    """``value`` as a Decimal of :data:`_EQ1_PRECISION` digits (from its leading bits)."""
    with decimal.localcontext() as ctx:
        ctx.prec = _EQ1_PRECISION
        return decimal.Decimal(_digits(value, _EQ1_PRECISION))


def _eq1(alpha: decimal.Decimal, gamma: int) -> decimal.Decimal:
    """Leviathan et al. Eq. 1, (1 - alpha^(gamma + 1)) / (1 - alpha), in Decimal arithmetic of
    :data:`_EQ1_PRECISION` digits: shown to 12 digits, never an exact power of a huge rational."""
    with decimal.localcontext() as ctx:
        ctx.prec = _EQ1_PRECISION
        if alpha == 1:
            return decimal.Decimal(gamma + 1)
        return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def _round(x: decimal.Decimal, places: int) -> str:
    with decimal.localcontext() as ctx:
        ctx.prec = places
        return str(+x).replace("E", "e")


def _render_chain(doc: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    """A chain certificate, or a bundle of them: one row per certificate, with Eq. 1 beside it.

    The exact values come from the document (the checker re-derived them when it accepted it);
    Eq. 1 at the reach-weighted mean alpha is computed here from that verified mean alpha.
    """
    certs = doc["certificates"] if doc["schema"] == checker.BUNDLE_SCHEMA else [doc]
    rows = []
    for c, facts in zip(certs, verdict.facts if verdict.valid else ()):  # only what the checker re-derived
        exact, mean = _decimal(facts["expected_emitted"]), _decimal(facts["mean_alpha"])
        eq1 = _eq1(mean, facts["gamma"])
        info = c.get("provenance") if isinstance(c.get("provenance"), Mapping) else {}
        rows.append(
            {
                "name": _plain(c.get("name", "")),
                "context": _plain(info.get("context", "")),
                "gamma": facts["gamma"],
                "vocab_size": c["vocab_size"],
                "nodes": facts["nodes"],
                "accepted_length": ", ".join(_digits(x, 6) for x in facts["accepted_length"]),
                "expected_emitted": _digits(facts["expected_emitted"]),
                "mean_alpha": _digits(facts["mean_alpha"]),
                "eq1": _round(eq1, _DIGITS),
                "difference": _round(eq1 - exact, 4),
                "lossless": "yes" if facts["claims"]["stream_equals_target_law"] else "NO",
            }
        )
    stops = sorted({t for facts in (verdict.facts if verdict.valid else ()) for t in facts.get("stop_tokens", ())})
    labels = (
        doc.get("labels")
        if isinstance(doc.get("labels"), list)
        else (certs[0].get("labels") if certs and isinstance(certs[0].get("labels"), list) else None)
    )
    named = ", ".join(f"{_plain(labels[t])} (id {t})" if labels and t < len(labels) else f"id {t}" for t in stops)
    stop_note = (
        (
            f"Stop tokens: {named}. A block ends at its first stop token (an accepted one is followed by "
            "no draft and no bonus token); E[emitted] counts the tokens up to and including it, and "
            "P(accepted = k) counts an accepted stop token as accepted. Eq. 1 has no stop tokens, so the "
            "last column also holds the blocks that end early."
        )
        if stops
        else ""
    )
    word, detail = _verdict_words(verdict)
    return _ENV.get_template("chain.md.j2").render(
        stop_note=stop_note,
        name=_plain(doc.get("name", "(unnamed)")),
        statement=_plain(doc.get("statement", "(none given)"), STATEMENT_LIMIT),
        assumptions=[
            *CHAIN_ASSUMPTIONS,
            *(
                _plain(a, STATEMENT_LIMIT)
                for a in doc.get("assumptions", [])
                if isinstance(doc.get("assumptions"), list)
            ),
        ],
        checker=checker_identity(),
        json_name=json_name,
        schema=doc["schema"],
        count=len(certs),
        trust=_trust(verdict, _FROM_ROWS),
        float_rows=_float_rows(verdict),
        not_proved=NOT_PROVED,
        provenance=_provenance(doc.get("provenance", {})),
        results=rows,
        verdict=word,
        verdict_detail=detail,
    )


def _signed(a: checker.Ratio, b: checker.Ratio) -> str:
    """a - b with its sign, without reducing (linear in the numbers' size)."""
    diff = a.num * b.den - b.num * a.den
    return "0" if diff == 0 else ("+" if diff > 0 else "−") + show(checker.Ratio(abs(diff), a.den * b.den))


def _recipe_text(recipe: Sequence[Any]) -> str:
    kind, *args = recipe
    text = " ".join(
        [kind, *(a if isinstance(a, str) else json.dumps(a, ensure_ascii=False, default=str) for a in args)]
    )
    return text if len(text) <= 120 else text[:120] + "..."


#: Branches of an outcome tree listed per certificate in a transcript (the JSON holds them all).
TREE_ROWS = 60


def _bound_text(bound: Any) -> str:
    if bound is None:
        return ""
    kind, *args = bound["source"]
    if kind == "ratio":
        text = f"{args[0]}[{args[2]}] / {args[1]}[{args[2]}]"
    elif kind == "cdf":
        text = f"cdf of {args[0]} at {args[1]}"
    elif kind == "masses":
        text = f"sum({args[0]}) / sum({args[1]})"
    elif kind == "float-ratio":
        text = f"{args[3]}({args[0]}[{args[2]}] / {args[1]}[{args[2]}])"
    elif kind == "float-product":
        text = f"the {args[4]} coins with {args[3]}(u * {args[1]}[{args[2]}]) {args[5]} {args[0]}[{args[2]}]"
    elif kind == "rounded-coin-ratio":
        text = f"the {args[4]} coins with {args[3]}(u) {args[5]} {args[3]}({args[0]}[{args[2]}] / {args[1]}[{args[2]}])"
    elif kind == "rounded-coin-product":
        text = f"the {args[4]} coins with {args[3]}({args[3]}(u) * {args[1]}[{args[2]}]) {args[5]} {args[0]}[{args[2]}]"
    else:
        text = f"{show(args[0])} (stated)"
    return text


def _event_text(event: Mapping[str, Any]) -> str:
    """One primitive event in words (from a document the checker accepted)."""
    ((kind, body),) = event.items()
    if kind == "draw":
        return f"draw {body['token']} from {body['row']}"
    if kind == "coin":
        low, high = body["lower"], body["upper"]
        left = f"{_bound_text(low)} {'<' if low['strict'] else '≤'} " if low else ""
        right = f" {'<' if high['strict'] else '≤'} {_bound_text(high)}" if high else ""
        return f"coin u ({body['model']}): {left}u{right}"
    if kind == "choice":
        return "choice: " + " ".join(str(x) for x in body["condition"])
    return f"race on {body['second']} won by {body['winner']}, given the race on {body['first']} won by {body['given']}"


def _tree_rows(cert: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for i, node in enumerate(cert["nodes"]):
        for branch in node["branches"]:
            child = branch["child"]
            if isinstance(child, int):
                goes = f"node {child}"
            elif isinstance(child["leaf"][0], list):  # a block certificate's leaf: [ids], accepted drafts
                goes = f"emit {child['leaf'][0]} ({child['leaf'][1]} accepted)"
            else:
                goes = f"emit {child['leaf'][0]} ({'accepted' if child['leaf'][1] else 'not accepted'})"
            rows.append(
                {
                    "node": f"{i}: {_cell(str(node['label'])[:60])}",
                    "event": _cell(_event_text(branch["event"])[:160]),
                    "probability": "(not stated)" if branch["probability"] is None else show(branch["probability"]),
                    "then": goes,
                }
            )
            if len(rows) == TREE_ROWS:
                return rows
    return rows


def _recipe_rows(recipes: Mapping[str, Any]) -> dict[str, Any]:
    """The first rows' recipes for a transcript table, and how many more rows there are."""
    return {
        "recipes": [
            {"name": _cell(k if len(k) <= 60 else k[:60] + "..."), "recipe": _cell(_recipe_text(v))}
            for k, v in list(recipes.items())[:FULL_TABLE_ROWS]
        ],
        "more_rows": max(0, len(recipes) - FULL_TABLE_ROWS),
    }


def _render_outcome(doc: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    """Outcome certificates (a verifier under a rule, one position each): alpha, TV and the
    law, every value from what the checker re-derived (``verdict.facts``), and each row's recipe,
    the rows the tree reads and how the reference derives from p, so a reader sees what the law
    was computed from."""
    certs = doc["certificates"] if doc["schema"] == checker.BUNDLE_SCHEMA else [doc]
    rows, given = [], set()
    for c, facts in zip(certs, verdict.facts if verdict.valid else ()):
        reference, law = facts["reference"], facts["law"]
        diff = [t for t, (e, r) in enumerate(zip(law, reference)) if e.num * r.den != r.num * e.den]
        given.update(facts["given"])
        shown = diff if len(law) > FULL_TABLE_ROWS else range(len(law))
        rows.append(
            {
                "name": _plain(c.get("name", "")),
                "vocab_size": len(law),
                "nodes": facts["nodes"],
                "alpha": show(facts["totals"]["alpha"]),
                "tv": show(facts["totals"]["tv"]),
                "outside": show(facts["totals"]["out_of_range"]),
                "lossless": "yes" if facts["claims"]["lossless"] else "NO",
                "differing": (", ".join(map(str, diff[:20])) + (" ..." if len(diff) > 20 else "")) if diff else "none",
                "reference": _plain(facts["reference_source"]),
                "reads": f"the tree reads the inputs {', '.join(facts['reads'])}"
                if facts["reads"]
                else "the tree reads no input row",
                **_stated_rows(facts),
                **_recipe_rows(facts["recipes"]),
                "table": [
                    {
                        "token": t,
                        "reference": show(reference[t]),
                        "emitted": show(law[t]),
                        "difference": _signed(law[t], reference[t]),
                    }
                    for t in list(shown)[:FULL_TABLE_ROWS]
                ],
                "tree": _tree_rows(c),
                "branches": sum(len(n["branches"]) for n in c["nodes"]),
            }
        )
    return _render_tree_document(
        "outcome.md.j2", doc, verdict, json_name, len(certs), rows, given, _outcome_summary(rows)
    )


def _stated_rows(facts: Mapping[str, Any]) -> dict[str, list[str] | int]:
    """The stated values a tree's verdict depends on (const thresholds, stated float sums) and the float
    sums re-derived in a named order, for a transcript (each list cut to its first entries)."""
    stated = [_plain(x) for x in facts.get("stated", [])]
    sums = [
        _plain(f"{name}: {row} summed {order}, then rounded to {fmt}")
        for name, row, fmt, order in facts.get("sums", [])
    ]
    return {"stated": stated[:10], "more_stated": max(0, len(stated) - 10), "sums": sums[:10]}


def _render_tree_document(
    template: str,
    doc: Mapping[str, Any],
    verdict: Verdict,
    json_name: str,
    count: int,
    rows: list,
    given: set,
    summary: str,
) -> str:
    """The header and verdict an outcome or block transcript shares, around its ``rows``."""
    word, detail = _verdict_words(verdict)
    word = "VALID" if verdict.valid else word  # the checker's verdict on the document; the law's is the summary
    return _ENV.get_template(template).render(
        name=_plain(doc.get("name", "(unnamed)")),
        statement=_plain(doc.get("statement", "(none given)"), STATEMENT_LIMIT),
        checker=checker_identity(),
        json_name=json_name,
        schema=doc["schema"],
        count=count,
        trust=_trust(verdict, "re-derived every value below from the rows and the tree's primitives"),
        given=", ".join(_plain(g) for g in sorted(given)),
        not_proved=NOT_PROVED,
        provenance=_provenance(doc.get("provenance", {})),
        results=rows,
        verdict=word,
        verdict_detail=detail,
        summary=summary,
    )


def _render_block(doc: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    """Block certificates (one verification step over gamma drafts each): the accepted-length
    law, the expected emitted tokens, the stream TV and the law of the emitted block, every
    value from what the checker re-derived (``verdict.facts``), with each row's recipe and the
    tree's first branches."""
    certs = doc["certificates"] if doc["schema"] == checker.BUNDLE_SCHEMA else [doc]
    rows, given = [], set()
    for c, facts in zip(certs, verdict.facts if verdict.valid else ()):
        given.update(facts["given"])
        law = list(facts["law"].items())
        rows.append(
            {
                "name": _plain(c.get("name", "")),
                "vocab_size": len(facts["inputs"][("p", ())]),
                "gamma": facts["gamma"],
                "nodes": facts["nodes"],
                "expected": show(facts["expected_emitted"]),
                "tv": show(facts["stream_tv"]),
                "lossless": "yes" if facts["claims"]["lossless"] else "NO",
                "lengths": [show(x) for x in facts["accepted_length"]],
                **_stated_rows(facts),
                **_recipe_rows(facts["recipes"]),
                "tree": _tree_rows(c),
                "branches": sum(len(n["branches"]) for n in c["nodes"]),
                "table": [{"block": str(list(b)), "mass": show(m)} for b, m in law[:FULL_TABLE_ROWS]],
                "more_blocks": max(0, len(law) - FULL_TABLE_ROWS),
            }
        )
    lossy = [r for r in rows if r["lossless"] != "yes"]
    summary = (
        ""
        if not rows
        else (
            (
                f"all {len(rows)} blocks lossless"
                if len(rows) > 1
                else "lossless (the stream has the target's joint law exactly)"
            )
            if not lossy
            else f"LOSSY, exact stream TV {lossy[0]['tv']}"
            + (f" ({len(lossy)} of {len(rows)} blocks lossy)" if len(rows) > 1 else "")
        )
    )
    return _render_tree_document("block.md.j2", doc, verdict, json_name, len(certs), rows, given, summary)


def _outcome_summary(rows: list[dict[str, Any]]) -> str:
    """ "lossless ..." or "LOSSY ..." from the re-derived results ("" when rejected)."""
    if not rows:
        return ""
    lossy = [r for r in rows if r["lossless"] != "yes"]
    if not lossy:
        return (
            "lossless (emitted law = the reference law exactly)"
            if len(rows) == 1
            else f"all {len(rows)} positions lossless"
        )
    if len(rows) == 1:
        return f"LOSSY, exact TV {rows[0]['tv']} from the reference law"
    return f"LOSSY at {len(lossy)} of {len(rows)} positions"


def render(
    document: Mapping[str, Any],
    verdict: Verdict | None = None,
    *,
    json_name: str = "certificate.json",
    figures: Sequence[tuple[str, str]] = (),
) -> str:
    """Render a certificate, bundle or symbolic-proof document as Markdown.

    Parameters
    ----------
    document : dict
        A parsed JSON document (schemas ``specproof.certificate/1``,
        ``specproof.compact-certificate/2``, ``specproof.chain-certificate/2``,
        ``specproof.outcome-certificate/1``, ``specproof.block-certificate/1``, ``specproof.bundle/1``,
        ``specproof.symbolic-proof/1``).
    verdict : Verdict, optional
        The checker's verdict on ``document``; computed with :func:`specproof.checker.check`
        if omitted (ignored for symbolic proofs, which SymPy checked).
    json_name : str, optional
        How the transcript names the JSON file it was rendered from.
    figures : sequence of (caption, file name), optional
        Images beside the transcript (from :func:`specproof.report.plots.figures_for`), linked in a
        "Figures" section before the verdict.

    Returns
    -------
    str
        Markdown text ending in a newline; identical for identical inputs.

    Raises
    ------
    KeyError
        If ``document`` lacks a field the template needs (check it first: a rejected
        certificate still renders if it is well formed).
    """
    schema = document.get("schema")
    json_name = _code(json_name)
    if schema == "specproof.symbolic-proof/1":
        return _render_symbolic(document, json_name)
    if verdict is None:
        verdict = checker.check(dict(document))
    if not verdict.valid:
        return _with_figures(_render_rejected(document, verdict, json_name), figures)
    chains = [document] if schema == checker.CHAIN_SCHEMA else document.get("certificates", [])
    if chains and all(isinstance(c, Mapping) and c.get("schema") == checker.CHAIN_SCHEMA for c in chains):
        text = _render_chain(document, verdict, json_name)
    elif schema == checker.OUTCOME_SCHEMA or (
        chains and all(isinstance(c, Mapping) and c.get("schema") == checker.OUTCOME_SCHEMA for c in chains)
    ):
        text = _render_outcome(document, verdict, json_name)
    elif schema == checker.BLOCK_SCHEMA or (
        chains and all(isinstance(c, Mapping) and c.get("schema") == checker.BLOCK_SCHEMA for c in chains)
    ):
        text = _render_block(document, verdict, json_name)
    elif schema == checker.BUNDLE_SCHEMA:
        text = _render_bundle(document, verdict, json_name)
    else:
        text = _render_certificate(document, verdict, json_name)
    return _with_figures(text, figures)


def _cut_text(text: str, limit: int = STATEMENT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _render_rejected(document: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    """A rejected document: its name, schema and the checker's reason only (none of its values,
    which the checker did not re-derive)."""
    reason = verdict.reason.value if verdict.reason is not None else "unknown"
    detail = f"Rejected by the checker ({reason}): {_code(_visible(_cut_text(verdict.detail)))}."
    schema = document.get("schema")
    return _ENV.get_template("rejected.md.j2").render(
        name=_plain(document.get("name", "(unnamed)")) if _depth(document.get("name")) == 0 else "(unnamed)",
        checker=checker_identity(),
        json_name=json_name,
        schema=_code(schema) if isinstance(schema, str) else "(none)",
        verdict_detail=detail,
    )


def _with_figures(text: str, figures: Sequence[tuple[str, str]]) -> str:
    """``text`` with a "Figures" section (one linked image each) inserted before the verdict."""
    if not figures:
        return text
    section = "## Figures\n\n" + "".join(f"![{_plain(caption)}](<{name}>)\n\n" for caption, name in figures)
    head, sep, tail = text.rpartition("## Verdict\n")
    return head + section + sep + tail if sep else text + "\n" + section
