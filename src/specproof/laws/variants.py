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
``_verifiers``); this module gathers their public names. Every verifier the project knows, by name,
with its examples: :mod:`specproof.certify.registry`. The command line's summary of one variant is
:mod:`specproof.laws.summary` (``VERIFIERS``, ``audit_summary`` and ``format_summary`` here are deprecated
aliases of it).

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

from typing import Any

from specproof.laws._verifiers import InvalidVerifier
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
]

#: Names this module used to define, now deprecated aliases: name -> (module, attribute).
_DEPRECATED = {
    "VERIFIERS": "specproof.laws.summary",
    "audit_summary": "specproof.laws.summary",
    "format_summary": "specproof.laws.summary",
}


def __getattr__(name: str) -> Any:
    """The deprecated names, with a DeprecationWarning saying where they live now."""
    if name not in _DEPRECATED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(
        f"specproof.laws.variants.{name} is deprecated: the command line's summary is "
        f"{_DEPRECATED[name]}.{name}, and every verifier by name is in specproof.certify.registry",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(_DEPRECATED[name]), name)
