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

A chain certificate (schema ``specproof.chain-certificate/2``, :func:`build_chain_certificate`)
covers one verification step over gamma drafted tokens and the bonus token::

    {"schema": ..., "name": ..., "statement": ..., "provenance": {...}, "labels": [...],
     "vocab_size": V, "gamma": gamma,
     "rows": {"encoding": "rational" | "float64-le-base64/renormalize",
              "table": [row, ...]},
     "nodes": [{"prefix": [token ids], "p": row index, "q": row index, "reach": "n/d",
                "stop": "n/d"}, ...],
     "totals": {"accepted_length": ["n/d", ...], "expected_emitted": "n/d", "mean_alpha": "n/d"},
     "claims": {"stream_equals_target_law": true}}

An outcome certificate (schema ``specproof.outcome-certificate/1``,
:func:`build_outcome_certificate`) covers one position of a verifier under an engine's rule,
written as an outcome tree (:mod:`specproof.laws.outcome`)::

    {"schema": ..., "name": ..., "statement": ..., "provenance": {...}, "vocab_size": V,
     "rows": {name: {"recipe": [kind, args...], "values": ["n/d", ...] (input/given rows)}},
     "reference": row name,
     "nodes": [{"label": str, "reach": "n/d",
                "branches": [{"event": {...}, "probability": "n/d",
                              "child": node index | {"leaf": [token id, accepted]}}]}],
     "law": ["n/d", ...], "totals": {"alpha": "n/d", "out_of_range": "n/d", "tv": "n/d"},
     "claims": {"lossless": bool}}

A bundle (schema ``specproof.bundle/1``) holds several certificates under ``"certificates"``
with their ``"count"``.
"""

from __future__ import annotations

import base64
import heapq
import json
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from specproof import checker
from specproof.errors import InvalidDistribution, renamed
from specproof.laws.block import tree_law
from specproof.laws.exact import EmittedLaw, emitted_law
from specproof.laws.rational import RationalVector, as_distribution, from_floats

__all__ = [
    "STATEMENT",
    "COMPACT_ROWS",
    "build_certificate",
    "build_compact_certificate",
    "select_tokens",
    "build_chain_certificate",
    "CHAIN_STATEMENT",
    "fraction_text",
    "parse_exact",
    "build_bundle",
    "build_outcome_certificate",
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
        Target and draft, as accepted by :func:`specproof.laws.exact.emitted_law` (use
        :func:`specproof.laws.rational.from_floats` for floats; its policy is recorded).
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
        Bad p or q (as :func:`specproof.laws.exact.emitted_law`), or ``labels`` of the wrong length.

    Examples
    --------
    >>> cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="example")
    >>> cert["totals"]["alpha"], cert["rows"][0]["emitted"], cert["claims"]["dist_equals_p"]
    ('3/4', '1/2', True)
    """
    pv, qv = as_distribution(p, "p"), as_distribution(q, "q")
    law = emitted_law(pv, qv)
    return _document(law, pv, qv, range(len(law)), name, provenance, labels)


def _document(
    law: EmittedLaw,
    pv: RationalVector,
    qv: RationalVector,
    tokens: Iterable[int],
    name: str,
    provenance: Mapping[str, Any] | None,
    labels: Sequence[str] | None,
) -> dict[str, Any]:
    v = len(law)
    if labels is not None and len(labels) != v:
        raise InvalidDistribution(f"labels has {len(labels)} entries, not V={v}")
    tv = law.tv
    info = dict(provenance or {})
    info["float_policy"] = {"p": _policy(pv), "q": _policy(qv)}
    return {
        "schema": checker.CERTIFICATE_SCHEMA,
        "name": name,
        "statement": STATEMENT,
        "provenance": info,
        "vocab_size": v,
        "rows": _rows(law, tokens, labels),
        "totals": {
            "alpha": fraction_text(law.alpha),
            "tv": fraction_text(tv),
            "normalizer": _nd(law.normalizer, law.denominator),
            "rejection": _nd(law.reject_numerator, law.denominator),
        },
        "claims": {
            # decided exactly on the integer law (see EmittedLaw.is_lossless)
            "dist_equals_p": law.is_lossless(),
            "alpha_equals_one_minus_tv": law.alpha == 1 - tv,
        },
    }


#: How many of the largest p, q and residual masses, and of the first zeros of p and of q, a
#: compact certificate (and an abbreviated transcript table) shows.
TOP_ROWS, ZERO_ROWS = 5, 3
COMPACT_ROWS = f"the {TOP_ROWS} largest p, q and residual masses, and the first {ZERO_ROWS} zeros of p and of q"


def select_tokens(
    p: Sequence[Any] | np.ndarray, q: Sequence[Any] | np.ndarray, residual: Sequence[Any] | np.ndarray
) -> list[int]:
    """The tokens that matter in a long table, sorted: see :data:`COMPACT_ROWS`.

    Parameters
    ----------
    p, q, residual : sequences (or 1-D arrays) of comparable numbers (Fractions, or integers over
        one denominator), length V.

    Returns
    -------
    list of int
        Token ids in increasing order.

    Examples
    --------
    >>> select_tokens([0, 1, 2], [2, 1, 0], [0, 0, 2])
    [0, 1, 2]
    """
    v = len(p)
    picked: set[int] = set()
    for col in (p, q, residual):
        # the TOP_ROWS largest, ties to the smaller id: sorted(range(v), key=(-col[t], t))[:TOP_ROWS],
        # found in one pass (the keys are distinct, so nlargest picks exactly those)
        picked.update(t for t in heapq.nlargest(TOP_ROWS, range(v), key=lambda t: (col[t], -t)) if col[t] > 0)
    picked.update([t for t in range(v) if p[t] == 0][:ZERO_ROWS])
    picked.update([t for t in range(v) if q[t] == 0][:ZERO_ROWS])
    return sorted(picked)


def build_compact_certificate(
    p_floats: Any,
    q_floats: Any,
    *,
    name: str,
    atol: float,
    provenance: Mapping[str, Any] | None = None,
    labels: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A certificate for a large vocabulary: the float inputs themselves, and rows that matter.

    p and q are stored as their float64 bit patterns (base64 of little-endian IEEE 754
    binary64: 8 bytes a token, exact), and both the certificate and the checker make them
    exact by the ``dyadic-renormalize`` policy (each float's exact value, divided by the
    vector's exact sum, refused if that sum is off from 1 by more than ``atol``). The checker
    fixes its own tolerance on those sums (:data:`specproof.checker.FLOAT_ROW_TOLERANCE`,
    1/1000), so rows further off are refused here too. Rows are claimed only at
    :func:`select_tokens`; totals and claims cover the whole vocabulary.

    Parameters
    ----------
    p_floats, q_floats : array_like of float, shape [V]
        Target and draft rows (float16/32/64; stored as float64, which is exact).
    name : str
        Instance name.
    atol : float
        The policy's tolerance on the float sums (recorded as an exact rational).
    provenance : mapping, optional
        JSON-ready facts about where p and q came from.
    labels : sequence of str, optional
        Token texts, length V; recorded on the claimed rows.

    Returns
    -------
    dict
        Schema ``specproof.compact-certificate/2``.

    Raises
    ------
    InvalidDistribution
        As :func:`specproof.laws.rational.from_floats`, or ``labels`` of the wrong length, or a row
        whose float sum is off from 1 by more than the checker's tolerance.
    """
    pv = from_floats(p_floats, atol=atol, name="p")  # validates first: dtype, shape, values
    qv = from_floats(q_floats, atol=atol, name="q")
    p64 = np.asarray(p_floats).astype("<f8")  # exact: from_floats accepted at most 64-bit floats
    q64 = np.asarray(q_floats).astype("<f8")
    law = emitted_law(pv, qv)
    tokens = select_tokens(law.target_numerators, law.draft_numerators, law.residual_numerators)
    full = _document(law, pv, qv, tokens, name, provenance, labels)
    full["schema"] = checker.COMPACT_SCHEMA
    full["selection"] = COMPACT_ROWS
    for key, vec in (("p", pv), ("q", qv)):
        policy = vec.policy
        assert policy is not None  # from_floats records its policy
        if not _within_checker_tolerance(policy.float_sum):
            raise InvalidDistribution(
                f"{key} sums to {float(policy.float_sum)!r} as floats: a compact certificate needs every float "
                f"row within {_tolerance_text()} of 1 (the checker's fixed tolerance); use the full form"
            )
    full["inputs"] = {
        "encoding": checker.COMPACT_ENCODING,
        "p": base64.b64encode(p64.tobytes()).decode("ascii"),
        "q": base64.b64encode(q64.tobytes()).decode("ascii"),
    }
    return full


#: The theorem every chain certificate states.
CHAIN_STATEMENT = (
    "One speculative-decoding step with gamma drafted tokens (drafted autoregressively from q; "
    "each accepted with probability min(1, p/q) until the first rejection, which is replaced by "
    "a draw from (p - q)+ normalized; after gamma acceptances a bonus token drawn from p), "
    "continued by plain sampling from p, outputs tokens whose first gamma + 1 have exactly the "
    "target's joint law prod_i p(x_i | x_<i)."
)


def build_chain_certificate(
    target: Any,
    draft: Any,
    gamma: int,
    *,
    name: str,
    provenance: Mapping[str, Any] | None = None,
    labels: Sequence[str] | None = None,
    stop_tokens: Sequence[int] = (),
) -> dict[str, Any]:
    """A certificate for one verification step over ``gamma`` drafted tokens and the bonus token.

    It holds the target's and the draft's rows at every prefix the verifier can accept (the
    nodes, breadth first, tokens in increasing order), each node's reach and stop masses, the
    law of the number of accepted drafts, E[emitted tokens], the reach-weighted mean alpha, and
    the claim that the output stream's first gamma + 1 tokens have the target's joint law.
    :func:`specproof.checker.check` re-derives all of it from the rows.

    Parameters
    ----------
    target, draft : callable
        As in :func:`specproof.laws.chain.verification_law`: prefix (tuple of int) -> row over V
        tokens (exact rationals, or vectors from :func:`specproof.laws.rational.from_floats`).
    gamma : int
        Draft length, >= 1.
    name : str
        Instance name.
    provenance : mapping, optional
        JSON-ready facts about where the rows came from.
    labels : sequence of str, optional
        Token texts, length V (recorded, not verified).
    stop_tokens : sequence of int, optional
        Stop ids (EOS): the block ends at an accepted stop token, and E[emitted] counts the
        tokens up to the first one (see :func:`specproof.laws.chain.verification_law`). Written as
        ``"stop_tokens"`` when not empty.

    Returns
    -------
    dict
        Schema ``specproof.chain-certificate/2``. Rows are stored once each: as float64 bit
        patterns (base64, made exact by ``dyadic-renormalize`` again by the checker) when every
        row came from floats by that policy or is exactly a float64 vector, else as ``"n/d"``
        strings.

    Raises
    ------
    InvalidDistribution
        As :func:`specproof.laws.chain.verification_law`, or ``labels`` of the wrong length.

    References
    ----------
    Leviathan et al. 2023, Algorithm 1 and Appendix A.1; Chen et al. 2023, Algorithm 2.
    """
    from specproof.laws.chain import verification_law  # chain imports nothing from here; kept local for clarity

    law = verification_law(target, draft, gamma, stop_tokens=stop_tokens)
    if labels is not None and len(labels) != law.vocab_size:
        raise InvalidDistribution(f"labels has {len(labels)} entries, not V={law.vocab_size}")
    order = sorted(law.alphas, key=lambda s: (len(s), s))  # the accepted prefixes of depth < gamma
    models = [(s, key, as_distribution(fn(s), key)) for s in order for key, fn in (("p", target), ("q", draft))]
    distinct: dict[tuple[tuple[int, ...], int], RationalVector] = {}  # each row once, in first-seen order
    for _, _, vec in models:
        distinct.setdefault((vec.numerators, vec.denominator), vec)
    texts = [_float64_text(vec) for vec in distinct.values()]  # None: not floats within the checker's tolerance
    floats = all(t is not None for t in texts)
    table = texts if floats else [[fraction_text(x) for x in vec] for vec in distinct.values()]
    index = {ident: i for i, ident in enumerate(distinct)}
    nodes: dict[tuple[int, ...], dict[str, Any]] = {
        s: {"prefix": list(s), "reach": fraction_text(law.reach[s]), "stop": fraction_text(law.stop(s))} for s in order
    }
    for s, key, vec in models:
        nodes[s][key] = index[vec.numerators, vec.denominator]
    rows: dict[str, Any] = {"encoding": checker.COMPACT_ENCODING if floats else checker.EXACT_ENCODING, "table": table}
    doc = {
        "schema": checker.CHAIN_SCHEMA,
        "name": name,
        "statement": CHAIN_STATEMENT,
        "provenance": dict(provenance or {}),
        "vocab_size": law.vocab_size,
        "gamma": gamma,
        "rows": rows,
        "nodes": [nodes[s] for s in order],
        "totals": {
            "accepted_length": [fraction_text(x) for x in law.accepted_length_law],
            "expected_emitted": fraction_text(law.expected_emitted),
            "mean_alpha": fraction_text(law.mean_alpha),
        },
        "claims": {"stream_equals_target_law": law.lossless},
    }
    if labels is not None:
        doc["labels"] = [str(x) for x in labels]
    if law.stop_tokens:
        doc["stop_tokens"] = sorted(law.stop_tokens)
        doc["statement"] = CHAIN_STATEMENT + STOP_STATEMENT
    return doc


#: Added to a chain certificate's statement when it has stop tokens.
STOP_STATEMENT = (
    " The block ends at its first stop token (an accepted stop token is followed by no draft and no "
    "bonus token), and E[emitted] counts the tokens up to and including it."
)


def fraction_text(x: Fraction) -> str:
    """``"n/d"`` text of a non-negative rational; integers of more than 3000 decimal digits are
    written in hexadecimal (``"0x..."``), which Python reads in linear time and without its
    4300-digit limit on decimal text (a chain's totals reach tens of thousands of digits).

    >>> fraction_text(Fraction(3, 4)), fraction_text(Fraction(1, 2 ** 20000))[:8]
    ('3/4', '1/0x1000')
    """
    return "/".join(str(n) if n.bit_length() <= 9965 else hex(n) for n in (x.numerator, x.denominator))


def parse_exact(text: str) -> Fraction:
    """Inverse of :func:`fraction_text`.

    >>> parse_exact("1/0x10") == Fraction(1, 16)
    True
    """
    num, den = (int(n, 16) if n.startswith("0x") else int(n) for n in text.split("/"))
    return Fraction(num, den)


def _float64_text(vec: RationalVector) -> str | None:
    """Base64 float64 text of the floats ``vec`` was made exact from (its values times the
    recorded float sum; or its values, if exact, when it came from no floats), or None."""
    scale = vec.policy.float_sum if vec.policy is not None else Fraction(1)
    if not _within_checker_tolerance(scale):
        return None
    # value i is n_i * sn / (den * sd); int / int is correctly rounded (as float(Fraction) is), and
    # the float is exact iff its own ratio a/b equals it: a * d == num * b (no Fraction, no gcd)
    sn, d = scale.numerator, vec.denominator * scale.denominator
    floats = []
    for n in vec.numerators:
        num = n * sn
        f = num / d
        a, b = f.as_integer_ratio()
        if a * d != num * b:
            return None
        floats.append(f)
    return base64.b64encode(np.array(floats, dtype="<f8").tobytes()).decode("ascii")


def _within_checker_tolerance(float_sum: Fraction) -> bool:
    """Whether a float row's exact sum is within the checker's fixed tolerance of 1."""
    return abs(float_sum - 1) <= Fraction(*checker.FLOAT_ROW_TOLERANCE)


def _tolerance_text() -> str:
    return "{}/{}".format(*checker.FLOAT_ROW_TOLERANCE)


def build_bundle(
    certificates: Sequence[Mapping[str, Any]],
    *,
    name: str,
    statement: str,
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


def build_outcome_certificate(
    tree: Any,
    *,
    name: str,
    statement: str,
    reference: str = "reference",
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The certificate of one position's outcome tree: rows with recipes, nodes with their
    reach, the emitted law, alpha, the TV from the reference row, and whether it is lossless.

    Parameters
    ----------
    tree : specproof.laws.outcome.OutcomeTree
        For example :func:`specproof.rules.audit.position_tree` of a rule. Its rows named in
        ``tree.recipes`` with kind ``input`` or ``given`` (and rows without a recipe, which
        count as given) carry their values; the checker re-derives every other row.
    name, statement : str
        What the certificate proves, in words.
    reference : str, optional
        The row whose law the output should have (default ``"reference"``).
    provenance : mapping, optional
        JSON-ready facts (the rule, where p and q came from).

    Returns
    -------
    dict
        A ``specproof.outcome-certificate/1`` document (see the module docstring), which
        :func:`specproof.checker.check` re-verifies.

    Raises
    ------
    InvalidDistribution
        ``reference`` is not a row of the tree.

    Notes
    -----
    The checker re-derives each branch's probability from its primitive and the rows, so
    what it trusts is only that the tree is the verifier's program and the ``given`` rows.
    """
    from specproof.laws.outcome import Branch, Choice, Leaf, Node

    if reference not in tree.rows:
        raise InvalidDistribution(f"the reference row {reference!r} is not a row of the tree")
    if isinstance(tree.root, Leaf):  # a verifier that needs no randomness: one certain branch
        root = Node("certain", (Branch(Choice(("always",)), Fraction(1), tree.root),))
        tree = type(tree)(tree.rows, root, tree.vocab_size, tree.derivations, tree.recipes)
    nodes, rows = _tree_parts(tree)
    law, outside = tree.law()
    ref = tree.rows[reference]
    alpha = tree.accept_probability()
    out_mass = sum(outside.values(), Fraction(0))
    tv = (sum((abs(a - b) for a, b in zip(law, ref)), Fraction(0)) + out_mass) / 2
    return {
        "schema": checker.OUTCOME_SCHEMA,
        "name": name,
        "statement": statement,
        "provenance": dict(provenance or {}),
        "vocab_size": tree.vocab_size,
        "rows": rows,
        "reference": reference,
        "nodes": nodes,
        "law": [fraction_text(x) for x in law],
        "totals": {"alpha": fraction_text(alpha), "out_of_range": fraction_text(out_mass), "tv": fraction_text(tv)},
        "claims": {"lossless": tv == 0},
    }


def _tree_parts(tree: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An outcome tree's nodes, each with its reach, and its rows, each with its recipe (values
    for input and given rows only), as a certificate lists them."""
    from specproof.laws.outcome import Node

    data = tree.as_dict()
    reach = [m for n, m in tree.reaches() if isinstance(n, Node)]  # as_dict numbers the nodes in this order
    nodes = [
        {"label": n["label"], "reach": fraction_text(m), "branches": n["branches"]}
        for n, m in zip(data["nodes"], reach)
    ]
    rows = {}
    for key, values in data["rows"].items():
        recipe = list(tree.recipes.get(key, ("given",)))
        rows[key] = {"recipe": recipe, **({"values": values} if recipe[0] in ("input", "given") else {})}
    return nodes, rows


def build_block_certificate(
    tree: Any,
    *,
    gamma: int,
    stream_tv: Fraction,
    name: str,
    statement: str,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The certificate of one verification step over a block: an outcome tree whose leaves are
    the emitted blocks (``Leaf(output=(ids...), accepted=count)``), its rows with recipes (the
    inputs ``("input", "p" or "q", [ids])``: the target's and draft's rows after a prefix).

    Parameters
    ----------
    tree : specproof.laws.outcome.OutcomeTree
        For example :func:`specproof.laws.variants.block_verification_tree`.
    gamma : int
        Drafts per block.
    stream_tv : Fraction
        The claimed TV between the stream (block, then target sampling) and the target's joint
        law over gamma + 1 tokens; the checker recomputes it.
    name, statement : str
        What the certificate proves, in words.
    provenance : mapping, optional
        JSON-ready facts.

    Returns
    -------
    dict
        A ``specproof.block-certificate/1`` document: ``law`` lists ``[[ids], "n/d"]`` by
        increasing ids; ``totals`` holds ``accepted_length`` (gamma + 1 entries),
        ``expected_emitted`` and ``stream_tv``; ``claims`` holds ``lossless`` (stream TV = 0).
    """
    nodes, rows = _tree_parts(tree)
    for node in nodes:  # a leaf's block (a tuple of ids) as a JSON list
        for branch in node["branches"]:
            if isinstance(branch["child"], dict):
                block, accepted = branch["child"]["leaf"]
                branch["child"] = {"leaf": [list(block), accepted]}
    law, lengths = tree_law(tree, gamma)
    expected = sum((len(b) * m for b, m in law.items()), Fraction(0))
    return {
        "schema": checker.BLOCK_SCHEMA,
        "name": name,
        "statement": statement,
        "provenance": dict(provenance or {}),
        "vocab_size": tree.vocab_size,
        "gamma": gamma,
        "rows": rows,
        "nodes": nodes,
        "law": [[list(b), fraction_text(m)] for b, m in sorted(law.items()) if m],
        "totals": {
            "accepted_length": [fraction_text(x) for x in lengths],
            "expected_emitted": fraction_text(expected),
            "stream_tv": fraction_text(stream_tv),
        },
        "claims": {"lossless": stream_tv == 0},
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


def _rows(law: EmittedLaw, tokens: Iterable[int], labels: Sequence[str] | None) -> list[dict[str, Any]]:
    d, emitted_den = law.denominator, law.emitted_denominator
    emitted = law.emitted
    rows = []
    for token in tokens:
        row = {
            "token": int(token),
            "p": _nd(law.target_numerators[token], d),
            "q": _nd(law.draft_numerators[token], d),
            "accept": _nd(law.accept_numerators[token], d),
            "residual": _nd(law.residual_numerators[token], d),
            "emitted": _nd(emitted[token], emitted_den),
        }
        if labels is not None:
            row["label"] = str(labels[token])
        rows.append(row)
    return rows


def _nd(numerator: int, denominator: int) -> str:
    return fraction_text(Fraction(numerator, denominator))


def _policy(vec: RationalVector) -> dict[str, str] | None:
    return None if vec.policy is None else vec.policy.as_dict()


# the old names, with a DeprecationWarning that says where they went (issue 34: one name, one meaning)
__getattr__ = renamed(
    __name__,
    {"exact_text": ("fraction_text", "specproof.laws.numtext.exact_text is the checker's display form, another text")},
    globals(),
)
