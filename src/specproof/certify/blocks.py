"""Block certificates of the variants beyond one chain: block verification (Sun et al. 2024) and Medusa's typical
acceptance, as ``specproof.block-certificate/1`` documents the checker re-verifies.

Their laws are in :mod:`specproof.laws.block_verification` and :mod:`specproof.laws.typical`; the documents are
built here, in the certify layer (they moved from those modules, which no longer import this layer).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from specproof.certify.certificate import build_block_certificate
from specproof.checker import MAX_BLOCK_GAMMA
from specproof.laws._verifiers import InvalidVerifier, Prefix, Row, _fr, _model, _positive_int
from specproof.laws.block import stream_tv, tree_law
from specproof.laws.block_verification import block_verification_tree
from specproof.laws.outcome import Branch, Choice, Leaf, Node, OutcomeTree, block_tree
from specproof.laws.outcome import argmax as _argmax
from specproof.laws.typical import MEDUSA_DELTA, MEDUSA_EPS, typical_tree

__all__ = ["block_verification_certificate", "typical_block_certificate"]


def block_verification_certificate(
    target: Any,
    draft: Any,
    gamma: int,
    *,
    name: str | None = None,
    statement: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> dict:
    """A ``specproof.block-certificate/1`` document for block verification on these rows.

    The tree is :func:`block_verification_tree`; its law, accepted-length law and expected
    emitted tokens are summed from the tree's leaves, and the stream TV is the block engine's
    :func:`specproof.laws.block.stream_tv` (the checker recomputes it with its own code).
    :func:`specproof.checker.check` re-verifies it.

    Parameters
    ----------
    target, draft, gamma
        As :func:`block_verification_tree`.
    name, statement : str, optional
        What the certificate proves, in words (defaults name block verification and gamma).
    provenance : mapping, optional
        JSON-ready facts (where the rows came from).

    Returns
    -------
    dict

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        As :func:`block_verification_tree`.

    Examples
    --------
    >>> from specproof import checker
    >>> doc = block_verification_certificate(["1/3", "2/3"], ["2/3", "1/3"], 2)
    >>> doc["totals"]["accepted_length"], doc["claims"], bool(checker.check(doc))
    (['1/3', '1/9', '5/9'], {'lossless': True}, True)
    """
    tree = block_verification_tree(target, draft, gamma)
    tv = stream_tv(tree_law(tree, gamma)[0], _model(target), gamma)
    return build_block_certificate(
        tree,
        gamma=gamma,
        stream_tv=tv,
        name=name or f"block verification, gamma = {gamma}",
        statement=statement
        or (
            f"Block verification (Sun et al. 2024, Algorithm 2) with gamma = {gamma}: the "
            f"emitted block, continued by sampling the target, has the target's joint law "
            f"over gamma + 1 tokens"
        ),
        provenance=provenance,
    )


def typical_block_certificate(
    target: Any,
    draft: Any,
    gamma: int,
    *,
    eps: Any = MEDUSA_EPS,
    delta: Any = MEDUSA_DELTA,
    offset: Any = 0,
    name: str | None = None,
    statement: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> dict:
    """A ``specproof.block-certificate/1`` document for typical acceptance over gamma drafts.

    The block tree composes :func:`typical_tree` at every accepted prefix
    (:func:`specproof.laws.outcome.block_tree`): draft from q, keep the draft iff it passes the
    typical test (a ``given`` mask row after each prefix, decided exactly by
    :func:`typical_accepts`), else emit the target's argmax there; after gamma accepted drafts,
    the target's argmax. Its stream TV (from the target's joint law over gamma + 1 tokens) is
    :func:`stream_tv` of the tree's law, which the checker recomputes; it equals
    :attr:`TypicalBlockLaw.stream_tv` (tested).

    Parameters
    ----------
    target, draft, gamma, eps, delta, offset
        As :func:`typical_block_law` (gamma at most :data:`specproof.checker.MAX_BLOCK_GAMMA`).
    name, statement : str, optional
    provenance : mapping, optional

    Returns
    -------
    dict

    Raises
    ------
    InvalidDistribution, InvalidVerifier, Undecidable
        As :func:`typical_block_law`.

    Examples
    --------
    >>> from specproof import checker
    >>> doc = typical_block_certificate(["1/2", "1/2"], ["1/2", "1/2"], 1)
    >>> doc["totals"]["stream_tv"], doc["claims"], bool(checker.check(doc))
    ('1/2', {'lossless': False}, True)
    """

    _positive_int(gamma, "gamma")
    if gamma > MAX_BLOCK_GAMMA:
        raise InvalidVerifier(f"gamma = {gamma}; block certificates hold blocks of at most {MAX_BLOCK_GAMMA} drafts")
    tmodel, dmodel = _model(target), _model(draft, "q")

    def position(prefix: Prefix) -> OutcomeTree[int]:
        return typical_tree(tmodel(prefix), dmodel(prefix), eps=eps, delta=delta, offset=offset)

    def greedy(prefix: Prefix, p_row: str, row: Row) -> Node[Prefix]:
        top = _argmax(row)
        return Node(
            f"greedy token after {list(prefix)}",
            (
                Branch(
                    Choice(("argmax-is", p_row, top), "the target's argmax"), Fraction(1), Leaf(prefix + (top,), gamma)
                ),
            ),
        )

    tree = block_tree(position, gamma, greedy)
    tv = stream_tv(tree_law(tree, gamma)[0], tmodel, gamma)
    return build_block_certificate(
        tree,
        gamma=gamma,
        stream_tv=tv,
        name=name or f"typical acceptance, gamma = {gamma}",
        statement=statement
        or (
            f"Typical acceptance (Medusa) over {gamma} drafts: the emitted block, continued by "
            f"sampling the target, is at exact TV {_fr(tv)} from the target's joint law "
            f"over gamma + 1 tokens."
        ),
        provenance=provenance,
    )
