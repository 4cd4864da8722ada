"""The registry of verifiers: every verifier the project knows, registered once with its examples.

One row (:class:`Verifier`) per verifier: its name, whether its law is a position law or a step law
(:mod:`specproof.laws.contract`), a constructor ``law(target, draft, params)``, small exact examples
(V = 2..4, gamma 1..2), the reference law it claims, whether it is lossless, and, where it has them, its
outcome tree and its certificate builder. ``tests/test_contract.py`` runs every property of the
contract on every row and example: the law sums to 1, its TV (or stream TV) is the enumeration's, its
tree sums to it, and its certificate is re-verified by the trusted checker to the same numbers.

Why here, in the certify layer: a row names the rules of :mod:`specproof.rules` (each named engine
rule), a traced adapter of :mod:`specproof.trace` and the certificate builders of this layer, so it
stands above them all (``docs/architecture.md``'s layers); the protocols it relies on stand lowest, in
:mod:`specproof.laws.contract`. Rows that need an optional dependency (torch, transformers) name it in
:attr:`Verifier.requires` and import it only when their law is built.

========================================== ========================================================
``textbook``                               the textbook position (:func:`specproof.rules.audit.position_law`)
``textbook-chain``                         the textbook chain over gamma drafts
                                           (:func:`specproof.laws.chain.verification_law`)
``rule:NAME``, ``rule-block:NAME``         each named engine rule (:data:`specproof.rules.policy.NAMED_RULES`),
                                           at one position and over a block
``multidraft:METHOD``                      recursive rejection with and without replacement, SpecTr
``tree:...``                               token trees: deterministic (q's top-k), stochastic, greedy
``typical``, ``typical-block``             Medusa's typical acceptance
``block-verification``                     Sun et al. 2024's block verification
``relaxed:RULE``, ``relaxed-block:RULE``   relaxed acceptance as engines ship it
                                           (:data:`specproof.laws.relaxed.RULES`)
``traced:transformers``                    transformers' own ``_speculative_sampling``, traced (slow; torch and
                                           transformers)
========================================== ========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any

from specproof.errors import SpecProofError

__all__ = ["Example", "Verifier", "UnknownVerifier", "verifiers", "verifier", "model"]


class UnknownVerifier(SpecProofError):
    """No verifier of that name is registered."""


@dataclass(frozen=True)
class Example:
    """One input of a verifier: the target and draft (an exact row used at every prefix, or a callable
    ``prefix -> row``) and the verifier's parameters (``gamma`` for a step law, knobs)."""

    target: Any
    draft: Any
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verifier:
    """One registered verifier.

    Attributes
    ----------
    name : str
        Unique; ``family:variant`` where a family has several.
    kind : {"position", "step"}
        The contract its law keeps: :class:`~specproof.laws.contract.PositionContract` or
        :class:`~specproof.laws.contract.StepContract`.
    law : callable (target, draft, params) -> law
        Builds the exact law of one example.
    examples : tuple of Example
        Small exact inputs. A lossy verifier has at least one example on which it is lossy.
    reference : callable (target, draft, params) -> row or callable
        The law the verifier claims its output has: a row (position) or a model ``prefix -> row``
        (step; a row serves every prefix). p itself unless said otherwise (a greedy path: p's argmax).
    lossless : bool
        Whether the verifier's law equals its reference on every input (checked on every example).
    tree : callable (target, draft, params, law) -> OutcomeTree, optional
        Its outcome tree: for a position, the tree whose leaves give the law; for a step, the block
        tree whose leaves give the emitted blocks and the accepted lengths.
    certificate : callable (target, draft, params, law) -> dict, optional
        A document the trusted checker re-verifies (an outcome or block certificate).
    requires : tuple of str
        Modules the law needs (the contract suite skips the row where one is missing).
    slow : bool
        The contract suite marks its cases slow.
    source : str
        Where the verifier comes from (a paper, an engine).
    """

    name: str
    kind: str
    law: Callable[[Any, Any, Mapping[str, Any]], Any]
    examples: tuple[Example, ...]
    reference: Callable[[Any, Any, Mapping[str, Any]], Any]
    lossless: bool
    tree: Callable[[Any, Any, Mapping[str, Any], Any], Any] | None = None
    certificate: Callable[[Any, Any, Mapping[str, Any], Any], dict] | None = None
    requires: tuple[str, ...] = ()
    slow: bool = False
    source: str = ""


# --------------------------------------------------------------------------- shared pieces


def model(rows: Any) -> Callable[[tuple[int, ...]], Any]:
    """``rows`` as a model ``prefix -> row`` (a row serves every prefix)."""
    return rows if callable(rows) else (lambda prefix: rows)


def _p(target: Any, draft: Any, params: Mapping[str, Any]) -> Any:
    return target


def _with(function: Callable[..., Any], target: Any, draft: Any, params: Mapping[str, Any], **kw: Any) -> Any:
    """``function(target, draft, **kw)``: a law that reads no parameter of the example."""
    return function(target, draft, **kw)


def _with_gamma(function: Callable[..., Any], target: Any, draft: Any, params: Mapping[str, Any], **kw: Any) -> Any:
    """``function(target, draft, gamma, **kw)``, gamma the example's."""
    return function(target, draft, params["gamma"], **kw)


def _with_drafts(function: Callable[..., Any], target: Any, draft: Any, params: Mapping[str, Any], **kw: Any) -> Any:
    """``function(target, draft, k, **kw)``, k the example's number of drafts."""
    return function(target, draft, params["k"], **kw)


def _argmax_row(row: Any) -> tuple[Fraction, ...]:
    from specproof.laws.rational import as_distribution

    values = tuple(as_distribution(row, "p").fractions())
    top = max(range(len(values)), key=lambda i: (values[i], -i))
    return tuple(Fraction(int(i == top)) for i in range(len(values)))


def _greedy(target: Any, draft: Any, params: Mapping[str, Any]) -> Any:
    """The greedy path's reference: p's argmax (ties to the smallest id), at every prefix."""
    if callable(target):
        return lambda prefix: _argmax_row(target(prefix))
    return _argmax_row(target)


def _position_certificate(reference: str) -> Callable[[Any, Any, Mapping[str, Any], Any], dict]:
    def build(target: Any, draft: Any, params: Mapping[str, Any], law: Any) -> dict:
        from specproof.certify.certificate import build_outcome_certificate

        return build_outcome_certificate(
            law.tree, name="contract", statement="one position of a registered verifier", reference=reference
        )

    return build


def _block_certificate(tree: Callable[[Any, Any, Mapping[str, Any], Any], Any]) -> Callable[..., dict]:
    def build(target: Any, draft: Any, params: Mapping[str, Any], law: Any) -> dict:
        from specproof.certify.certificate import build_block_certificate
        from specproof.laws.block import stream_tv

        gamma = params["gamma"]
        return build_block_certificate(
            tree(target, draft, params, law),
            gamma=gamma,
            stream_tv=stream_tv(dict(law.emitted), model(target), gamma),
            name="contract",
            statement="one step of a registered verifier",
        )

    return build


# the worked pair of docs/variants.md, Sun et al.'s pair, and a V = 4 pair with a zero in p
WORKED = (("1/2", "1/4", "1/4"), ("1/4", "1/4", "1/2"))
PAPER = (("1/3", "2/3"), ("2/3", "1/3"))
FOUR = (("1/5", "0", "3/10", "1/2"), ("1/4", "1/4", "1/4", "1/4"))
PAIRS = (WORKED, PAPER, FOUR)


#: Harder pairs for the engine rules: p and q with zeros where the other is not, p == q, q one-hot.
EDGE_PAIRS = (
    (("1/2", "1/3", "1/6"), ("1/6", "1/2", "1/3")),
    (("0", "1/4", "3/4"), ("1/2", "1/2", "0")),
    (("1/3", "1/3", "1/3"), ("1/3", "1/3", "1/3")),
    (("1/7", "0", "6/7"), ("0", "1", "0")),
)


def _context_target(prefix: tuple[int, ...]) -> tuple[str, ...]:
    """A target that depends on the context: the worked p after an even prefix, uniform after an odd one."""
    return WORKED[0] if len(prefix) % 2 == 0 else ("1/3", "1/3", "1/3")


def _context_draft(prefix: tuple[int, ...]) -> tuple[str, ...]:
    """A draft that depends on the last token: the worked q at the start and after 0, (1/2, 1/2, 0) after 1 or 2."""
    return WORKED[1] if not prefix or prefix[-1] == 0 else ("1/2", "1/2", "0")


def _positions(pairs: tuple = PAIRS, **params: Any) -> tuple[Example, ...]:
    return tuple(Example(p, q, dict(params)) for p, q in pairs)


def _steps(**params: Any) -> tuple[Example, ...]:
    """The pairs at gamma 1 and 2, and context-dependent rows at gamma 2."""
    return (
        *(Example(p, q, {"gamma": 1, **params}) for p, q in PAIRS),
        Example(*WORKED, {"gamma": 2, **params}),
        Example(*PAPER, {"gamma": 2, **params}),
        Example(_context_target, _context_draft, {"gamma": 2, **params}),
    )


# --------------------------------------------------------------------------- the rows, by family


def _textbook() -> list[Verifier]:
    from specproof.laws.chain import verification_law
    from specproof.laws.outcome import block_tree
    from specproof.rules.audit import position_law, position_tree
    from specproof.rules.policy import STANDARD

    def chain_tree(target, draft, params, law):
        t, d = model(target), model(draft)
        return block_tree(lambda prefix: position_tree(t(prefix), d(prefix), STANDARD), params["gamma"], bonus_row="p")

    return [
        Verifier(
            "textbook",
            "position",
            lambda p, q, params: position_law(p, q),
            _positions(),
            _p,
            True,
            tree=lambda p, q, params, law: law.tree,
            certificate=_position_certificate("reference"),
            source="Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2",
        ),
        Verifier(
            "textbook-chain",
            "step",
            lambda p, q, params: verification_law(model(p), model(q), params["gamma"]),
            _steps(),
            _p,
            True,
            tree=chain_tree,
            certificate=_block_certificate(chain_tree),
            source="Leviathan et al. 2023, Algorithm 1 over gamma drafts",
        ),
    ]


#: Named rules whose law equals their reference on every input (the others are lossy on an example).
#: commit-past-stop, flag-sum-count and padding-wraparound keep the law; their faults are in stop
#: tokens, counts and padded blocks (tests/test_audit.py).
LOSSLESS_RULES = frozenset(
    {"standard", "match-rule", "greedy", "commit-past-stop", "flag-sum-count", "padding-wraparound"}
)


def _rules() -> list[Verifier]:
    from specproof.laws.outcome import block_tree
    from specproof.rules.audit import block_law, position_law, position_tree
    from specproof.rules.policy import NAMED_RULES, named_rule

    out = []
    for name, named in NAMED_RULES.items():
        rule = named_rule(name)
        greedy = rule.acceptance == "greedy"
        reference = _greedy if greedy else _p
        certified = not greedy  # a block certificate states the stream against p itself, not p's argmax

        def tree(target, draft, params, law, rule=rule):
            t, d = model(target), model(draft)
            # the bonus token is drawn from the row the code samples from: p, or p rounded to the rule's format
            bonus = "p" if position_tree(t(()), d(()), rule).recipes.get("target") == ("copy", "p") else "target"
            return block_tree(
                lambda prefix: position_tree(t(prefix), d(prefix), rule, unchecked=len(prefix) < rule.unchecked_drafts),
                params["gamma"],
                bonus_row=bonus,
            )

        lossless = name in LOSSLESS_RULES
        # inverse-cdf-last-id refuses p == q (ResidualUndefined: a rejection with an empty residual)
        edges = tuple(e for e in EDGE_PAIRS if name != "inverse-cdf-last-id" or e[0] != e[1])
        out.append(
            Verifier(
                f"rule:{name}",
                "position",
                partial(_with, position_law, rule=rule),
                _positions(PAIRS + edges),
                reference,
                lossless,
                tree=lambda p, q, params, law: law.tree,
                certificate=_position_certificate("reference"),
                source=named.source,
            )
        )
        out.append(
            Verifier(
                f"rule-block:{name}",
                "step",
                partial(_with_gamma, block_law, rule=rule),
                _steps(),
                reference,
                lossless,
                tree=tree,
                certificate=_block_certificate(tree) if certified else None,
                source=named.source,
            )
        )
    return out


def _multidraft() -> list[Verifier]:
    from specproof.laws.multidraft import MULTIDRAFT_METHODS, multidraft_law

    return [
        Verifier(
            f"multidraft:{method}",
            "position",
            partial(_with_drafts, multidraft_law, method=method),
            (*_positions(k=2), Example(*WORKED, {"k": 3})),
            _p,
            True,
            tree=lambda p, q, params, law: law.tree,
            certificate=_position_certificate("p"),
            source="SpecTr (Sun et al. 2023)"
            if method == "spectr"
            else "SpecInfer (Miao et al. 2024); Jeon et al. 2024",
        )
        for method in MULTIDRAFT_METHODS
    ]


def _trees() -> list[Verifier]:
    from specproof.laws.multidraft import MULTIDRAFT_METHODS
    from specproof.laws.token_trees import deterministic_tree_law, greedy_tree_law, stochastic_tree_law, topk_tree

    def _stochastic(target: Any, draft: Any, params: Mapping[str, Any], method: str) -> Any:
        return stochastic_tree_law(target, draft, [2] * params["gamma"], method=method)

    def shape(q, params):
        return topk_tree(model(q)(()), [2] * params["gamma"])

    out = [
        Verifier(
            "tree:deterministic",
            "step",
            lambda p, q, params: deterministic_tree_law(p, shape(q, params)),
            _steps(),
            _p,
            True,
            source="SpecInfer (Miao et al. 2024), Algorithm 2 on a given token tree (q's top 2 at each depth)",
        ),
        Verifier(
            "tree:greedy",
            "step",
            lambda p, q, params: greedy_tree_law(p, shape(q, params)),
            _steps(),
            _greedy,
            True,
            source="greedy token-tree verification (Medusa, EAGLE), ties to the smallest id",
        ),
    ]
    for method in MULTIDRAFT_METHODS:
        if method == "spectr":
            continue  # a token tree drafts by recursive rejection
        out.append(
            Verifier(
                f"tree:stochastic:{method}",
                "step",
                partial(_stochastic, method=method),
                _steps(),
                _p,
                True,
                source="SpecInfer (Miao et al. 2024): 2 children drafted from q at each depth",
            )
        )
    return out


def _typical_and_block() -> list[Verifier]:
    from specproof.certify.blocks import block_verification_certificate, typical_block_certificate
    from specproof.laws.block_verification import block_verification_law, block_verification_tree
    from specproof.laws.typical import typical_block_law, typical_law

    return [
        Verifier(
            "typical",
            "position",
            lambda p, q, params: typical_law(p, q),
            _positions(),
            _p,
            False,
            tree=lambda p, q, params, law: law.tree,
            certificate=_position_certificate("p"),
            source="Medusa (Cai et al. 2024), Section 2.3.1",
        ),
        Verifier(
            "typical-block",
            "step",
            lambda p, q, params: typical_block_law(p, q, params["gamma"]),
            _steps(),
            _p,
            False,
            certificate=lambda p, q, params, law: typical_block_certificate(p, q, params["gamma"]),
            source="Medusa (Cai et al. 2024), over gamma drafts",
        ),
        Verifier(
            "block-verification",
            "step",
            lambda p, q, params: block_verification_law(p, q, params["gamma"]),
            _steps(),
            _p,
            True,
            tree=lambda p, q, params, law: block_verification_tree(p, q, params["gamma"]),
            certificate=lambda p, q, params, law: block_verification_certificate(p, q, params["gamma"]),
            source="Sun et al. 2024, Algorithm 2",
        ),
    ]


#: Knobs of each relaxed rule in the registry's examples (the rule's defaults where it has them).
RELAXED_KNOBS: dict[str, dict[str, Any]] = {
    "trtllm-relaxed": {"topk": 2, "delta": Fraction(1, 2)},
    "sglang-threshold": {},
    "max-logit-eps": {},
    "typical": {},
    "match": {},
    "standard": {},
}
#: Relaxed rules whose law equals their reference on every input.
LOSSLESS_RELAXED = frozenset({"sglang-threshold", "match", "standard"})


def _relaxed() -> list[Verifier]:
    from specproof.laws.relaxed import RULES, relaxed_block_law

    def block_knobs(rule: str) -> dict[str, Any]:
        if rule == "trtllm-relaxed":
            return {"relaxed_topk": 2, "relaxed_delta": Fraction(1, 2)}
        return dict(RELAXED_KNOBS.get(rule, {}))

    out = []
    for rule, function in RULES.items():
        knobs = RELAXED_KNOBS.get(rule, {})
        lossless = rule in LOSSLESS_RELAXED
        out.append(
            Verifier(
                f"relaxed:{rule}",
                "position",
                partial(_with, function, **knobs),
                _positions(),
                _greedy if rule == "trtllm-relaxed" else _p,
                lossless,
                source="relaxed acceptance as engines ship it (specproof.laws.relaxed)",
            )
        )
        out.append(
            Verifier(
                f"relaxed-block:{rule}",
                "step",
                partial(_with_gamma, relaxed_block_law, rule=rule, **block_knobs(rule)),
                _steps(),
                _p,
                lossless,
                source="relaxed acceptance over a chain of gamma drafts (specproof.laws.relaxed)",
            )
        )
    return out


def _support_logits(row: Any) -> list[float]:
    """Logits whose float softmax is exactly ``row``: 0 on its support, -inf elsewhere (``row`` must be
    uniform on its support)."""
    return [0.0 if Fraction(x) else float("-inf") for x in row]


def _traced() -> list[Verifier]:
    def law(p, q, params):
        from specproof.trace.adapters.transformers import speculative_sampling_law

        gamma = params["gamma"]
        return speculative_sampling_law([_support_logits(p)] * (gamma + 1), [_support_logits(q)] * gamma)

    half, uniform = ("1/2", "1/2", "0", "0"), ("1/4",) * 4
    return [
        Verifier(
            "traced:transformers",
            "step",
            law,
            (Example(half, uniform, {"gamma": 1}), Example(uniform, half, {"gamma": 1})),
            _p,
            False,
            requires=("torch", "transformers"),
            slow=True,
            source="transformers' _speculative_sampling, traced on its own code (specproof.trace)",
        )
    ]


_REGISTRY: tuple[Verifier, ...] | None = None


def verifiers() -> tuple[Verifier, ...]:
    """Every registered verifier, in a fixed order (built on first use).

    Returns
    -------
    tuple of Verifier

    Examples
    --------
    >>> [v.name for v in verifiers()][:2]
    ['textbook', 'textbook-chain']
    """
    global _REGISTRY
    if _REGISTRY is None:
        rows = [*_textbook(), *_rules(), *_multidraft(), *_trees(), *_typical_and_block(), *_relaxed(), *_traced()]
        names = [v.name for v in rows]
        if len(set(names)) != len(names):  # pragma: no cover - a registry bug
            raise AssertionError(f"verifier names registered twice: {sorted(n for n in names if names.count(n) > 1)}")
        _REGISTRY = tuple(rows)
    return _REGISTRY


def verifier(name: str) -> Verifier:
    """The registered verifier called ``name``.

    Raises
    ------
    UnknownVerifier
        No verifier of that name (the message lists the names).
    """
    for v in verifiers():
        if v.name == name:
            return v
    raise UnknownVerifier(f"no verifier {name!r} is registered; known: {', '.join(v.name for v in verifiers())}")
