"""Certificates: the verifier's exact law for one pair (p, q), as a JSON document.

A certificate lists, per token x, the target p(x), the draft q(x), the accept mass
q(x) min(1, p(x)/q(x)), the rejection-side mass (p(x) - q(x))+ and the emitted mass; then the
totals (alpha, TV, the residual normalizer Z, the rejection mass 1 - alpha), the claims
dist == p and alpha == 1 - TV, and provenance (where p and q came from, and the
float-to-rational policy if one was used). Rationals are ``"n/d"`` strings; keys are sorted;
regenerating a certificate gives identical bytes. :mod:`specproof.checker` re-verifies it
from p and q alone.

Document layout (schema ``specproof.certificate/1``)::

    {"schema": ..., "name": ..., "statement": ..., "provenance": {...},
     "vocab_size": V,
     "rows": [{"token": 0, "p": "n/d", "q": "n/d", "accept": "n/d", "residual": "n/d",
               "emitted": "n/d", "label": "optional token text"}, ...],
     "totals": {"alpha": "n/d", "tv": "n/d", "normalizer": "n/d", "rejection": "n/d"},
     "claims": {"dist_equals_p": true, "alpha_equals_one_minus_tv": true}}

A bundle (schema ``specproof.bundle/1``) holds several certificates under ``"certificates"``
with their ``"count"``.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import checker
from .errors import InvalidDistribution
from .exact import emitted_law
from .rational import RationalVector, as_distribution, format_fraction

__all__ = [
    "STATEMENT",
    "build_certificate",
    "build_bundle",
    "dumps",
    "write",
]

#: The theorem every single-position certificate states.
STATEMENT = (
    "For target p and draft q over the same finite vocabulary, the token emitted by the "
    "speculative-sampling verifier (draw x ~ q, accept with probability min(1, p(x)/q(x)), "
    "otherwise draw from (p - q)+ normalized) has law exactly p, and the acceptance "
    "probability alpha = sum_x min(p(x), q(x)) equals 1 - TV(p, q)."
)


def build_certificate(
    p: Any,
    q: Any,
    *,
    name: str,
    provenance: Mapping[str, Any] | None = None,
    labels: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Compute the exact law of (p, q) and return it as a certificate document.

    Parameters
    ----------
    p, q : RationalVector or sequence of exact rationals, shape [V]
        Target and draft, as accepted by :func:`specproof.exact.emitted_law` (use
        :func:`specproof.rational.from_floats` for floats; its policy is recorded).
    name : str
        A short name of the instance, for example ``"identical-draft"``.
    provenance : mapping, optional
        JSON-ready facts about where p and q came from (source, model, context...). The
        float policies of p and q are added under ``"float_policy"``.
    labels : sequence of str, optional
        Token texts, length V, recorded as each row's ``"label"``.

    Returns
    -------
    dict
        The certificate (see the module docstring for the layout). The claims state what
        the computed law shows; they are not assumed.

    Raises
    ------
    InvalidDistribution
        Bad p or q (as :func:`specproof.exact.emitted_law`), or ``labels`` of the wrong length.

    Examples
    --------
    >>> cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="example")
    >>> cert["totals"]["alpha"], cert["rows"][0]["emitted"], cert["claims"]["dist_equals_p"]
    ('3/4', '1/2', True)
    """
    pv, qv = as_distribution(p, "p"), as_distribution(q, "q")
    law = emitted_law(pv, qv)
    v = len(law)
    if labels is not None and len(labels) != v:
        raise InvalidDistribution(f"labels has {len(labels)} entries, not V={v}")
    d, z = law.denominator, law.normalizer
    emitted_den = law.emitted_denominator
    rows = []
    cols = zip(law.target.tolist(), law.draft.tolist(), law.accept.tolist(),
               law.residual_mass.tolist(), law.emitted.tolist())
    for token, (pp, qq, acc, res, emi) in enumerate(cols):
        row = {
            "token": token,
            "p": _nd(pp, d),
            "q": _nd(qq, d),
            "accept": _nd(acc, d),
            "residual": _nd(res, d),
            "emitted": _nd(emi, emitted_den),
        }
        if labels is not None:
            row["label"] = str(labels[token])
        rows.append(row)
    tv = law.tv
    info = dict(provenance or {})
    info["float_policy"] = {"p": _policy(pv), "q": _policy(qv)}
    return {
        "schema": checker.CERTIFICATE_SCHEMA,
        "name": name,
        "statement": STATEMENT,
        "provenance": info,
        "vocab_size": v,
        "rows": rows,
        "totals": {
            "alpha": format_fraction(law.alpha),
            "tv": format_fraction(tv),
            "normalizer": _nd(z, d),
            "rejection": _nd(law.rejected, d),
        },
        "claims": {
            "dist_equals_p": law.is_lossless() and law.dist() == pv.fractions(),
            "alpha_equals_one_minus_tv": law.alpha == 1 - tv,
        },
    }


def build_bundle(
    certificates: Sequence[Mapping[str, Any]], *, name: str, statement: str,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Wrap several certificates (for example an exhaustive grid) in one bundle document.

    Parameters
    ----------
    certificates : sequence of dict
        Certificates from :func:`build_certificate`.
    name, statement : str
        What the bundle proves, in words.
    provenance : mapping, optional
        JSON-ready facts about how the instances were generated.

    Returns
    -------
    dict
        ``{"schema": "specproof.bundle/1", "count": n, "certificates": [...], ...}``.
    """
    return {
        "schema": checker.BUNDLE_SCHEMA,
        "name": name,
        "statement": statement,
        "provenance": dict(provenance or {}),
        "count": len(certificates),
        "certificates": list(certificates),
    }


def dumps(document: Mapping[str, Any]) -> str:
    """Canonical JSON text: sorted keys, one-space indent, UTF-8 text, final newline.

    The same document always gives the same text, so regenerated certificates are
    byte-identical.
    """
    return json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write(document: Mapping[str, Any], path: str | Path) -> Path:
    """Write :func:`dumps` of ``document`` to ``path`` (UTF-8, ``\\n`` newlines); return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(document), encoding="utf-8", newline="\n")
    return out


def _nd(numerator: int, denominator: int) -> str:
    return format_fraction(Fraction(numerator, denominator))


def _policy(vec: RationalVector) -> dict[str, str] | None:
    return None if vec.policy is None else vec.policy.as_dict()
