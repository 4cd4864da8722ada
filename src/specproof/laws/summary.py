"""One summary per textbook variant, as the command line prints it (``specproof audit --verifier``).

:func:`audit_summary` computes one variant's exact law on (p, q) (multi-draft, a token tree, block
verification, typical acceptance) and returns it as JSON-ready data; :func:`format_summary` prints it.
It is the command line's view of four variants, not a list of verifiers: every verifier the project knows,
by name, with its examples, is in :mod:`specproof.certify.registry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from specproof.laws._verifiers import InvalidVerifier, _fr, _positive_int
from specproof.laws.block_verification import block_verification_law
from specproof.laws.multidraft import multidraft_law
from specproof.laws.token_trees import deterministic_tree_law, stochastic_tree_law, topk_tree
from specproof.laws.typical import typical_block_law, typical_law

__all__ = ["VERIFIERS", "audit_summary", "format_summary"]

#: Verifiers of :func:`audit_summary` (``chain`` is :mod:`specproof.rules.audit`'s own path).
VERIFIERS = ("block", "multidraft", "tree", "typical")


def audit_summary(
    p: Any,
    q: Any,
    verifier: str,
    *,
    drafts: int = 2,
    method: str = "with-replacement",
    tree: Any = None,
    gamma: int | None = None,
) -> dict[str, Any]:
    """The exact law of one verifier on the rows (p, q), as JSON-ready data (rationals ``"n/d"``).

    Parameters
    ----------
    p, q : sequences of exact rationals, shape [V]
        The same rows serve every position (of a block or a tree).
    verifier : {"block", "multidraft", "tree", "typical"}
        ``multidraft``: :func:`multidraft_law` with ``drafts`` and ``method``; with ``gamma``, also
        the stochastic tree with ``drafts`` children per node and depth gamma. ``tree``:
        :func:`deterministic_tree_law` on ``tree`` (nested ``[[token, children], ...]``, or None
        for q's top-``drafts`` at each of ``gamma`` (default 1) depths). ``block``:
        :func:`block_verification_law` at ``gamma`` (default 1). ``typical``: :func:`typical_law`,
        and :func:`typical_block_law` with ``gamma``.
    drafts, method, tree, gamma
        As above.

    Returns
    -------
    dict
        Always ``verifier``, ``verdict`` (``"lossless"`` / ``"lossy"``), ``accepted_length`` and
        ``expected_accepted`` (one position unless ``gamma``/a tree), ``expected_emitted``; plus the
        verifier's own fields (``acceptance``, ``law``, ``tv``, ``upper_bound``, ...).

    Raises
    ------
    InvalidVerifier
        Unknown verifier or bad parameters; InvalidDistribution for bad rows.

    Examples
    --------
    >>> audit_summary(["1/2", "1/2"], ["1", "0"], "multidraft")["expected_accepted"]
    '1/2'
    """

    def ff(x: Fraction) -> str:
        return _fr(Fraction(x))

    def lengths(law: Any) -> dict[str, Any]:
        return {
            "accepted_length": [ff(x) for x in law.accepted_length_law],
            "expected_accepted": ff(law.expected_accepted),
            "expected_emitted": ff(law.expected_emitted),
        }

    if verifier not in VERIFIERS:
        raise InvalidVerifier(f"unknown verifier {verifier!r}; expected chain or one of {VERIFIERS}")
    if gamma is not None:
        _positive_int(gamma, "gamma")
    out: dict[str, Any] = {"verifier": verifier}
    if verifier == "multidraft":
        law = multidraft_law(p, q, drafts, method=method)
        out.update(
            method=method,
            drafts=drafts,
            acceptance=ff(law.acceptance),
            accepted_at=[ff(x) for x in law.accepted_at],
            law=[ff(x) for x in law.law],
            tv=ff(law.tv),
            accepted_length=[ff(1 - law.acceptance), ff(law.acceptance)],
            expected_accepted=ff(law.acceptance),
            expected_emitted=ff(1 + law.acceptance),
        )
        lossless = law.lossless
        if gamma is not None:
            tlaw = stochastic_tree_law(p, q, [drafts] * gamma, method=method)
            out.update(gamma=gamma, **lengths(tlaw))
            lossless = lossless and tlaw.lossless
    elif verifier == "tree":
        shape = topk_tree(q, [drafts] * (gamma or 1)) if tree is None else tree
        tlaw = deterministic_tree_law(p, shape)
        out.update(tree=shape, depth=tlaw.depth, **lengths(tlaw))
        lossless = tlaw.lossless
    elif verifier == "block":
        g = gamma or 1
        blaw = block_verification_law(p, q, g)
        out.update(
            gamma=g,
            token_expected_accepted=ff(blaw.token_expected_accepted),
            upper_bound=ff(blaw.upper_bound),
            stream_tv=ff(blaw.stream_tv),
            **lengths(blaw),
        )
        lossless = blaw.lossless
    else:
        tl = typical_law(p, q)
        out.update(
            acceptance=ff(tl.acceptance),
            law=[ff(x) for x in tl.law],
            tv=ff(tl.tv),
            accepted_length=[ff(1 - tl.acceptance), ff(tl.acceptance)],
            expected_accepted=ff(tl.acceptance),
            expected_emitted=ff(1 + tl.acceptance),
        )
        lossless = tl.tv == 0
        if gamma is not None:
            bl = typical_block_law(p, q, gamma)
            out.update(gamma=gamma, stream_tv=ff(bl.stream_tv), **lengths(bl))
            lossless = lossless and bl.stream_tv == 0
    out["verdict"] = "lossless" if lossless else "lossy"
    return out


def format_summary(out: Mapping[str, Any]) -> str:
    """:func:`audit_summary`'s data as a few readable lines."""
    skip = {"verifier", "verdict", "law", "tree"}
    lines = [f"verifier {out['verifier']}: {out['verdict'].upper()}"]
    for key in sorted(k for k in out if k not in skip):
        value = out[key]
        lines.append(f"  {key}: {', '.join(map(str, value)) if isinstance(value, list) else value}")
    return "\n".join(lines)
