"""Exact laws of verifiers beyond one chain: multi-draft, token trees, block verification, typical acceptance.

Every single-position verifier here is written as an :class:`~specproof.laws.outcome.OutcomeTree` in
the existing primitives (``Draw``, ``Coin`` with a continuous coin, ``Choice``), every row it reads
named and given a recipe from :class:`~specproof.laws.outcome.OutcomeTree`'s list, so a checker that
re-derives outcome trees re-verifies it without new code. Where a verifier needs a row no recipe
makes (Medusa's typical-acceptance mask, decided with exp and log), the row's recipe is
``("given",)`` and its derivation names the recipe it would need (:data:`PROPOSED_RECIPES`).
Blocks (block verification, typical acceptance over gamma drafts) are block certificates:
:func:`specproof.certify.blocks.block_verification_certificate`, :func:`specproof.certify.blocks.typical_block_certificate`.

The verifiers live by role in :mod:`~specproof.laws.multidraft`, :mod:`~specproof.laws.token_trees`,
:mod:`~specproof.laws.block_verification` and :mod:`~specproof.laws.typical` (shared pieces in
``_verifiers``); this module gathers their public names and the one summary per verifier the CLI
prints (:func:`audit_summary`).

=============================== ===================================================================
:func:`multidraft_tree`         k drafts at one position: recursive rejection sampling with or
                                without replacement (SpecInfer; Jeon et al. 2024), or SpecTr's
                                k-sequential selection
:func:`multidraft_law`          its emitted law, acceptance, P(draft i is the one accepted), TV
:func:`acceptance_by_k`         exact acceptance for k = 1..K
:func:`spectr_rho`              the smallest valid rho of SpecTr's k-sequential rule (bisection)
:func:`sibling_tree`            deterministic children at one node: q one-hot, renormalized
                                between siblings
:func:`greedy_sibling_tree`     greedy tree verification at one node (argmax, ties to smallest id)
:func:`topk_tree`               a token tree from the draft's top-k at each node
:func:`deterministic_tree_law`  recursive rejection down a given token tree, bonus at the deepest
                                accepted node
:func:`stochastic_tree_law`     the same with children drafted from q at each node (k per depth)
:func:`greedy_tree_law`         greedy tree verification as its own law
:func:`block_verification_law`  Sun et al. 2024's block verification: joint law, E[accepted],
                                token verification and the full-information bound beside it
:func:`full_information_bound`  ``sum_i sum_{x^i} min(M_b(x^i), M_s(x^i))``
:func:`typical_accepts`         Medusa's ``p(x) > min(eps, delta exp(-H(p)))``, decided exactly
:func:`typical_tree`            one position of typical acceptance as an outcome tree
:func:`typical_law`             its law and exact TV from p
:func:`typical_block_law`       a block of gamma drafts: law, per-position and stream TV
=============================== ===================================================================

References
----------
Miao et al. 2024, "SpecInfer", Section 4 and Algorithm 2 (multi-step speculative sampling, token
trees). Jeon et al. 2024, "Recursive Speculative Decoding" (sampling without replacement). Sun et
al. 2023, "SpecTr: Fast Speculative Decoding via Optimal Transport", the k-sequential selection
(acceptance ``1 - (1 - beta_{p,q}(rho))^k``). Sun et al. 2024 (ICLR 2025), "Block verification
accelerates speculative decoding", Algorithm 2 and Theorems 1-2. Cai et al. 2024, "Medusa",
Section 2.3.1 (typical acceptance) and ``medusa/model/utils.py::evaluate_posterior``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from specproof.laws._verifiers import InvalidVerifier, _fr, _positive_int
from specproof.laws.block import extend_by_target, stream_tv, target_joint
from specproof.laws.block_verification import (
    BlockVerificationLaw,
    block_verification_law,
    block_verification_tree,
    full_information_bound,
)
from specproof.laws.multidraft import (
    MULTIDRAFT_METHODS,
    MultiDraftLaw,
    acceptance_by_k,
    multidraft_law,
    multidraft_tree,
    spectr_rho,
)
from specproof.laws.token_trees import (
    TokenTreeLaw,
    deterministic_tree_law,
    greedy_sibling_tree,
    greedy_tree_law,
    sibling_tree,
    stochastic_tree_law,
    topk_tree,
)
from specproof.laws.typical import (
    MEDUSA_DELTA,
    MEDUSA_EPS,
    PROPOSED_RECIPES,
    TypicalBlockLaw,
    TypicalLaw,
    Undecidable,
    typical_accepts,
    typical_block_law,
    typical_law,
    typical_tree,
)

__all__ = [
    "InvalidVerifier",
    "Undecidable",
    "PROPOSED_RECIPES",
    "MULTIDRAFT_METHODS",
    "multidraft_tree",
    "MultiDraftLaw",
    "multidraft_law",
    "acceptance_by_k",
    "spectr_rho",
    "sibling_tree",
    "greedy_sibling_tree",
    "topk_tree",
    "TokenTreeLaw",
    "deterministic_tree_law",
    "stochastic_tree_law",
    "greedy_tree_law",
    "BlockVerificationLaw",
    "block_verification_law",
    "full_information_bound",
    "block_verification_tree",
    "stream_tv",
    "MEDUSA_EPS",
    "MEDUSA_DELTA",
    "typical_accepts",
    "typical_tree",
    "TypicalLaw",
    "typical_law",
    "TypicalBlockLaw",
    "typical_block_law",
    "extend_by_target",
    "target_joint",
    "VERIFIERS",
    "audit_summary",
    "format_summary",
]

# --------------------------------------------------------------------------- one summary per verifier (CLI)

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
