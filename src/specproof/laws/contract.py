"""The one law contract every verifier's law keeps: a position law and a step law, each one small protocol.

A verifier's exact law is one of two shapes, whatever built it (a rule's outcome tree, a variant's own
steps, a traced sampler):

=============================== ===================================================================
:class:`PositionContract`       one verification position: the emitted law over V ids, the law it
                                should have (``reference``), ``alpha``, ``tv_reference`` and
                                ``lossless``; most also carry their outcome ``tree``
                                (:class:`HasTree`)
:class:`StepContract`           one step over a block of gamma drafts: the emitted blocks, the law
                                of the accepted length, its expectations and ``lossless``; some
                                also state their ``stream_tv`` (:class:`HasStreamTV`)
=============================== ===================================================================

The existing laws keep them as they are, or with thin read-only aliases (no attribute was renamed):
:class:`~specproof.rules.audit.PositionRuleLaw`, :class:`~specproof.laws.multidraft.MultiDraftLaw`,
:class:`~specproof.laws.typical.TypicalLaw` and :class:`~specproof.laws.relaxed.RelaxedLaw` are position
laws; every :class:`~specproof.laws.block.StepLaw` (chains, token trees, typical, relaxed and block
verification), :class:`~specproof.rules.audit.BlockRuleLaw` and the traced
:class:`~specproof.trace.adapters.transformers.TransformersBlockLaw` are step laws.

The registry of verifiers (:mod:`specproof.certify.registry`, one row per verifier with its examples,
reference, losslessness and certificate builder) and ``tests/test_contract.py`` (every property on every
row) stand on these protocols; docs/adding-a-verifier.md says how a new verifier joins them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

__all__ = ["PositionContract", "StepContract", "HasTree", "HasStreamTV"]


@runtime_checkable
class PositionContract(Protocol):
    """The exact law of one verification position.

    Attributes
    ----------
    law : sequence of Fraction, length V
        P(the verifier emits each token id).
    reference : sequence of Fraction, length V
        The law the output should have: p, or what the verifier claims (the argmax of p for a greedy
        path, p after a rule's processing).
    alpha : Fraction
        P(the drafted token, or some draft, is accepted).
    tv_reference : Fraction
        TV(law, reference), an id outside [0, V) counted in full.
    lossless : bool
        True iff ``tv_reference == 0``.
    """

    @property
    def law(self) -> Sequence[Fraction]: ...

    @property
    def reference(self) -> Sequence[Fraction]: ...

    @property
    def alpha(self) -> Fraction: ...

    @property
    def tv_reference(self) -> Fraction: ...

    @property
    def lossless(self) -> bool: ...


@runtime_checkable
class HasTree(Protocol):
    """A position law that carries its outcome tree (:class:`~specproof.laws.outcome.OutcomeTree`),
    whose leaves sum to :attr:`PositionContract.law` and whose accepted leaves sum to ``alpha``."""

    @property
    def tree(self) -> Any: ...


@runtime_checkable
class StepContract(Protocol):
    """The exact law of one verification step over a block of gamma drafts.

    Attributes
    ----------
    gamma : int
        The most drafts a step can accept (a token tree's depth).
    emitted : mapping of tuple of int -> Fraction
        P(the emitted block): the accepted drafts, then one more token (1 to gamma + 1 ids).
    accepted_length_law : sequence of Fraction, length gamma + 1
        P(exactly i drafts accepted), i = 0..gamma.
    expected_accepted, expected_emitted : Fraction
        E[accepted drafts] and E[emitted tokens] (1 + expected_accepted without stop tokens).
    lossless : bool
        True iff the emitted stream's first gamma + 1 tokens have the reference's joint law.
    """

    @property
    def gamma(self) -> int: ...

    @property
    def emitted(self) -> Mapping[tuple[int, ...], Fraction]: ...

    @property
    def accepted_length_law(self) -> Sequence[Fraction]: ...

    @property
    def expected_accepted(self) -> Fraction: ...

    @property
    def expected_emitted(self) -> Fraction: ...

    @property
    def lossless(self) -> bool: ...


@runtime_checkable
class HasStreamTV(Protocol):
    """A step law that states its stream TV: TV between the first gamma + 1 output tokens (the block,
    then sampling the reference) and the reference's joint law (:func:`specproof.laws.block.stream_tv`);
    None where it was not enumerated."""

    @property
    def stream_tv(self) -> Fraction | None: ...
