"""Proof transcripts: readable Markdown rendered from a certificate and the checker's verdict.

Transcripts are never written by hand: :func:`render` fills a Jinja2 template
(``specproof/templates/*.md.j2``) from the JSON document alone, so the same document and
verdict always give the same bytes. Long per-token tables are abbreviated to the rows that
matter (largest masses, zeros of p or q, the residual's support), with the totals.
"""

from __future__ import annotations

import base64
import decimal
import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import jinja2
import numpy as np

from . import checker
from .certificate import COMPACT_ROWS, select_tokens
from .checker import Verdict
from .exact import emitted_law
from .rational import from_floats

__all__ = ["ASSUMPTIONS", "NOT_PROVED", "checker_identity", "render", "show"]

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
    "the float path (specproof.numeric) is measured against the exact law, not proved; "
    "a proof about floats made exact is a proof about the exact rationals they were made into; "
    "the wording of names, statements, token texts, notes and provenance is descriptive and "
    "not verified by the checker."
)

#: Per-token tables longer than this are abbreviated.
FULL_TABLE_ROWS = 40
_DIGITS = 12
_SHORT = 24

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("specproof", "templates"),
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


def show(value: str | Fraction) -> str:
    """A rational for people: exact ``n/d`` if short, else 12 significant digits and "…".

    Examples
    --------
    >>> show("1/3"), show("0/1"), show("1/1")
    ('1/3', '0', '1')
    >>> show(Fraction(1, 3 * 10**30)), show(Fraction(10**30, 3 * 10**30 + 1))
    ('3.33333333333e-31…', '0.333333333333…')
    """
    x = value if isinstance(value, Fraction) else Fraction(value)
    if x.denominator == 1:
        return str(x.numerator)
    text = f"{x.numerator}/{x.denominator}"
    if len(text) <= _SHORT:
        return text
    return _digits(x) + "…"


def _digits(x: Fraction, places: int = _DIGITS) -> str:
    """``x`` to ``places`` significant digits, correctly rounded (exact integers in, any size)."""
    with decimal.localcontext() as ctx:
        ctx.prec = places
        return str(decimal.Decimal(x.numerator) / decimal.Decimal(x.denominator)).replace("E", "e")


def _fractions(rows: list[Mapping[str, Any]], key: str) -> list[Fraction]:
    return [Fraction(r[key]) for r in rows]


def _provenance(info: Any) -> list[tuple[str, str]]:
    if not isinstance(info, Mapping):
        return [("provenance", _plain(json.dumps(info, sort_keys=True, ensure_ascii=False)))]
    items = []
    for key in sorted(info):
        value = info[key]
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        items.append((_plain(key), _plain(text)))
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


def _verdict_words(verdict: Verdict) -> tuple[str, str]:
    ident = checker_identity()
    if verdict.valid:
        return "PROVED", f"Valid: checker version {ident['version']} {verdict.detail}."
    reason = verdict.reason.value if verdict.reason is not None else "unknown"
    return "REJECTED", f"Rejected by the checker ({reason}): {verdict.detail}."


def _columns(cert: Mapping[str, Any]) -> dict[str, list[Fraction]]:
    """Every token's p, q, accept, residual and emitted mass, as Fractions.

    A full certificate lists them; a compact one lists only some tokens, so its law is
    recomputed here from its float inputs (this is rendering, not checking: the checker
    re-derives it independently).
    """
    keys = ("p", "q", "accept", "residual", "emitted")
    if cert["schema"] != checker.COMPACT_SCHEMA:
        return {k: _fractions(cert["rows"], k) for k in keys}
    inputs = cert["inputs"]
    atol = Fraction(inputs["atol"])  # exactly the checker's test
    pv, qv = (from_floats(np.frombuffer(base64.b64decode(inputs[k]), dtype="<f8"), atol=atol, name=k)
              for k in ("p", "q"))
    law = emitted_law(pv, qv)
    d, e = law.denominator, law.emitted_denominator
    cols = (law.target, law.draft, law.accept, law.residual_mass, law.emitted)
    return {k: [Fraction(n, e if k == "emitted" else d) for n in col.tolist()] for k, col in zip(keys, cols)}


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


def _certificate_steps(cert: Mapping[str, Any], cols: Mapping[str, list[Fraction]],
                       verdict: Verdict) -> list[dict[str, str]]:
    p, q, acc, res, emi = (cols[k] for k in ("p", "q", "accept", "residual", "emitted"))
    tot = {k: Fraction(v) for k, v in cert["totals"].items()}
    v = len(p)
    normalized = sum(p) == 1 and sum(q) == 1 and min(p + q) >= 0
    equal = sum(1 for a, b in zip(emi, p) if a == b)
    z_zero = tot["normalizer"] == 0
    return [
        {"claim": "p and q are probability vectors.",
         "justification": f"All {2 * v} entries are non-negative rationals; each vector sums to exactly 1.",
         "outcome": _outcome(normalized, verdict)},
        {"claim": "The accept mass of token x is q(x)·min(1, p(x)/q(x)), and 0 where q(x) = 0.",
         "justification": f"x is drafted with probability q(x) and kept with probability min(1, p(x)/q(x)); "
                          f"their sum is alpha = {show(tot['alpha'])}.",
         "outcome": _outcome(sum(acc) == tot["alpha"], verdict)},
        {"claim": "The residual's mass equals the rejection mass: Z = Σ(p − q)+ = 1 − alpha.",
         "justification": f"Z = {show(tot['normalizer'])}, 1 − alpha = {show(tot['rejection'])} "
                          "(per token min(p, q) + (p − q)+ = p, summed over a normalized p).",
         "outcome": _outcome(sum(res) == tot["normalizer"] == 1 - tot["alpha"], verdict)},
        {"claim": "The emitted mass of token x is p(x).",
         "justification": ("Z = 0 (p == q): the draft is always accepted and the residual never sampled, "
                           "so the emitted mass is the accept mass. " if z_zero else
                           "Emitted = accept + (1 − alpha)·(p − q)+/Z. ")
                          + f"Compared with p(x) for all {v} tokens: {equal} of {v} equal.",
         "outcome": _outcome(equal == v and cert["claims"]["dist_equals_p"], verdict)},
        {"claim": "alpha = 1 − TV(p, q).",
         "justification": f"TV = ½·Σ|p − q| = {show(tot['tv'])}; 1 − TV = {show(1 - tot['tv'])}.",
         "outcome": _outcome(tot["alpha"] == 1 - tot["tv"] and cert["claims"]["alpha_equals_one_minus_tv"], verdict)},
    ]


def _table(cert: Mapping[str, Any], cols: Mapping[str, list[Fraction]]) -> dict[str, Any]:
    """The per-token table of one certificate (abbreviated when long), with its totals."""
    labels = {r["token"]: r["label"] for r in cert["rows"] if "label" in r}
    shown, selection = _selection(cert, cols)
    table = []
    for t in shown:
        table.append({
            "token": t,
            "label": _cell(labels.get(t, "")),
            **{k: show(cols[k][t]) for k in ("p", "q", "accept", "residual", "emitted")},
            "equal": "yes" if cols["emitted"][t] == cols["p"][t] else "NO",
        })
    return {
        "vocab_size": cert["vocab_size"], "shown": len(shown), "selection": selection, "rows": table,
        "has_labels": bool(labels),
        "totals": {k: show(v) for k, v in cert["totals"].items()},
        "zeros_p": sum(1 for x in cols["p"] if x == 0),
        "zeros_q": sum(1 for x in cols["q"] if x == 0),
        "residual_support": sum(1 for x in cols["residual"] if x > 0),
    }


def _render_certificate(cert: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    word, detail = _verdict_words(verdict)
    cols = _columns(cert)
    return _ENV.get_template("certificate.md.j2").render(
        name=_plain(cert["name"]), statement=_plain(cert["statement"], STATEMENT_LIMIT), assumptions=ASSUMPTIONS,
        checker=checker_identity(), json_name=json_name, schema=cert["schema"], not_proved=NOT_PROVED,
        trust=_trust(verdict, _FROM_FLOATS if cert["schema"] == checker.COMPACT_SCHEMA else _FROM_PQ),
        provenance=_provenance(cert.get("provenance", {})), table=_table(cert, cols),
        steps=_certificate_steps(cert, cols, verdict), verdict=word, verdict_detail=detail,
    )


def _plain(text: Any, limit: int = 300) -> str:
    """Free text from a document, made inert: one line, no HTML or emphasis, at most ``limit``
    characters (statements get :data:`STATEMENT_LIMIT`)."""
    flat = " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")
    return flat if len(flat) <= limit else flat[:limit] + "…"


#: Statements and assumptions are shown up to this many characters (names and notes up to 300).
STATEMENT_LIMIT = 2000


def _cell(text: str) -> str:
    """Token text safe inside a Markdown table cell (visible whitespace, escaped pipes)."""
    return "`" + json.dumps(text, ensure_ascii=False)[1:-1].replace("|", "\\|").replace("`", "\\`") + "`"


_BUNDLE_SHOWN = 30
_CARRIERS = 3


def _residual_carriers(cert: Mapping[str, Any]) -> str:
    """The tokens carrying the most residual mass, with their share of it: ``AH 52%, N 20%``."""
    rows = cert["rows"]
    res = _fractions(rows, "residual")
    total = Fraction(cert["totals"]["normalizer"])
    if total == 0:
        return "none (p == q)"
    top = sorted(range(len(rows)), key=lambda t: (-res[t], t))[:_CARRIERS]
    parts = []
    for t in top:
        if res[t] == 0:
            break
        name = _cell(rows[t]["label"]) if "label" in rows[t] else str(rows[t]["token"])
        parts.append(f"{name} {round(100 * res[t] / total)}%")
    return ", ".join(parts)
#: Bundles with at most this many instances get each instance's per-token table; larger
#: bundles get the first instance's.
BUNDLE_DETAILS = 8


def _render_bundle(bundle: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    certs = bundle["certificates"]
    summaries = []
    for i, c in enumerate(certs):
        tot = c["totals"]
        summaries.append({
            "index": i, "name": _plain(c["name"]), "vocab_size": c["vocab_size"],
            "alpha": show(tot["alpha"]), "tv": show(tot["tv"]), "normalizer": show(tot["normalizer"]),
            "residual": _residual_carriers(c),
            "dist": "yes" if c["claims"]["dist_equals_p"] else "NO",
            "alpha_tv": "yes" if c["claims"]["alpha_equals_one_minus_tv"] else "NO",
        })
    shown = summaries if len(summaries) <= _BUNDLE_SHOWN else summaries[:_BUNDLE_SHOWN]
    detailed = certs if len(certs) <= BUNDLE_DETAILS else certs[:1]
    alphas = [Fraction(c["totals"]["alpha"]) for c in certs]
    sizes = sorted({c["vocab_size"] for c in certs})
    equal_pairs = sum(1 for a in alphas if a == 1)
    all_hold = all(c["claims"]["dist_equals_p"] and c["claims"]["alpha_equals_one_minus_tv"] for c in certs)
    summary = (f"{len(certs)} instances, V in {sizes}; alpha ranges from {show(min(alphas))} to "
               f"{show(max(alphas))}; {equal_pairs} instance(s) with alpha = 1 (p == q, residual empty); "
               f"dist == p and alpha == 1 − TV claimed for {'all' if all_hold else 'NOT all'} instances.")
    steps = [
        {"claim": "Every instance is a pair of probability vectors.",
         "justification": "Each certificate's p and q are non-negative rationals summing to exactly 1.",
         "outcome": _outcome(True, verdict)},
        {"claim": "For every instance, the emitted law equals p.",
         "justification": "Each certificate lists the accept, residual and emitted masses per token.",
         "outcome": _outcome(all(c["claims"]["dist_equals_p"] for c in certs), verdict)},
        {"claim": "For every instance, alpha = 1 − TV.",
         "justification": "Each certificate lists alpha and TV as exact rationals.",
         "outcome": _outcome(all(c["claims"]["alpha_equals_one_minus_tv"] for c in certs), verdict)},
    ]
    word, detail = _verdict_words(verdict)
    return _ENV.get_template("bundle.md.j2").render(
        name=_plain(bundle["name"]), statement=_plain(bundle["statement"], STATEMENT_LIMIT), assumptions=ASSUMPTIONS,
        checker=checker_identity(), json_name=json_name, schema=bundle["schema"], count=len(certs),
        trust=_trust(verdict, _FROM_FLOATS if any(c["schema"] == checker.COMPACT_SCHEMA for c in certs) else _FROM_PQ),
        not_proved=NOT_PROVED, provenance=_provenance(bundle.get("provenance", {})),
        shown=len(shown), selection=f"the first {len(shown)}", instances=shown, summary=summary,
        details=[{"index": i, "name": _plain(c["name"]), "note": _plain(c.get("provenance", {}).get("note", "")),
                  "table": _table(c, _columns(c))} for i, c in enumerate(detailed)],
        details_note="" if len(detailed) == len(certs) else
        f"Instance 0 of {len(certs)} in detail (every instance is in `{json_name}`).",
        steps=steps, verdict=word, verdict_detail=detail,
    )


def _render_symbolic(doc: Mapping[str, Any], json_name: str) -> str:
    proved = bool(doc["proved"]) and all(s["verified"] for s in doc["steps"])
    failed = [s["id"] for s in doc["steps"] if not s["verified"]]
    detail = (f"Proved: all {len(doc['steps'])} steps verified by SymPy {doc['sympy_version']}."
              if proved else f"Not proved: SymPy could not verify {', '.join(failed) or 'the conclusion'}.")
    return _ENV.get_template("symbolic.md.j2").render(
        name=_plain(doc["name"]), statement=_plain(doc["statement"], STATEMENT_LIMIT),
        assumptions=[_plain(a, STATEMENT_LIMIT) for a in doc["assumptions"]],
        sympy_version=doc["sympy_version"], json_name=json_name, schema=doc["schema"],
        not_proved="nothing about floats; the argument covers exact real p, q.",
        steps=doc["steps"], conclusion=doc["conclusion"],
        verdict="PROVED" if proved else "NOT PROVED", verdict_detail=detail,
    )


#: What every chain proof assumes.
CHAIN_ASSUMPTIONS = (
    "A finite vocabulary of V >= 1 tokens; the same at every position.",
    "At every prefix the target's and the draft's rows are exactly normalized rational vectors.",
    "The verifier is the standard block step: gamma drafts from q, each accepted with probability "
    "min(1, p/q) until the first rejection, which is replaced by a draw from (p - q)+ normalized; "
    "after gamma acceptances the bonus token is drawn from p; then plain sampling from p.",
)


def _render_chain(doc: Mapping[str, Any], verdict: Verdict, json_name: str) -> str:
    """A chain certificate, or a bundle of them: one row per certificate, with Eq. 1 beside it.

    The exact values come from the document (the checker re-derived them when it accepted it);
    Eq. 1 at the reach-weighted mean alpha is computed here from that verified mean alpha.
    """
    from .certificate import parse_exact
    from .chain import expected_tokens

    certs = doc["certificates"] if doc["schema"] == checker.BUNDLE_SCHEMA else [doc]
    rows = []
    for c in certs if verdict.valid else []:  # values only from a document the checker accepted
        tot = c["totals"]
        exact, mean = parse_exact(tot["expected_emitted"]), parse_exact(tot["mean_alpha"])
        eq1 = expected_tokens(mean, c["gamma"])
        info = c.get("provenance") if isinstance(c.get("provenance"), Mapping) else {}
        rows.append({
            "name": _plain(c.get("name", "")), "context": _plain(info.get("context", "")),
            "gamma": c["gamma"], "vocab_size": c["vocab_size"], "nodes": len(c["nodes"]),
            "accepted_length": ", ".join(_digits(parse_exact(x), 6) for x in tot["accepted_length"]),
            "expected_emitted": _digits(exact), "mean_alpha": _digits(mean), "eq1": _digits(eq1),
            "difference": _digits(eq1 - exact, 4), "lossless": "yes" if c["claims"]["stream_equals_target_law"] else "NO",
        })
    word, detail = _verdict_words(verdict)
    return _ENV.get_template("chain.md.j2").render(
        name=_plain(doc.get("name", "(unnamed)")), statement=_plain(doc.get("statement", "(none given)"), STATEMENT_LIMIT),
        assumptions=[*CHAIN_ASSUMPTIONS, *(_plain(a, STATEMENT_LIMIT) for a in doc.get("assumptions", [])
                                          if isinstance(doc.get("assumptions"), list))],
        checker=checker_identity(), json_name=json_name, schema=doc["schema"], count=len(certs),
        trust=_trust(verdict, _FROM_ROWS), not_proved=NOT_PROVED, provenance=_provenance(doc.get("provenance", {})),
        results=rows, verdict=word, verdict_detail=detail,
    )


def render(document: Mapping[str, Any], verdict: Verdict | None = None, *, json_name: str = "certificate.json") -> str:
    """Render a certificate, bundle or symbolic-proof document as Markdown.

    Parameters
    ----------
    document : dict
        A parsed JSON document (schemas ``specproof.certificate/1``,
        ``specproof.compact-certificate/1``, ``specproof.chain-certificate/1``,
        ``specproof.bundle/1``, ``specproof.symbolic-proof/1``).
    verdict : Verdict, optional
        The checker's verdict on ``document``; computed with :func:`specproof.checker.check`
        if omitted (ignored for symbolic proofs, which SymPy checked).
    json_name : str, optional
        How the transcript names the JSON file it was rendered from.

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
    if schema == "specproof.symbolic-proof/1":
        return _render_symbolic(document, json_name)
    if verdict is None:
        verdict = checker.check(dict(document))
    chains = [document] if schema == checker.CHAIN_SCHEMA else document.get("certificates", [])
    if chains and all(isinstance(c, Mapping) and c.get("schema") == checker.CHAIN_SCHEMA for c in chains):
        return _render_chain(document, verdict, json_name)
    if schema == checker.BUNDLE_SCHEMA:
        return _render_bundle(document, verdict, json_name)
    return _render_certificate(document, verdict, json_name)
