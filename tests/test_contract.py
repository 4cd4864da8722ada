"""The law contract, run on every registered verifier (specproof.certify.registry) and every one of its examples.

One parametrized suite: a position law sums to 1, its TV from its reference is the TV of the two rows,
its tree sums to it, its certificate is re-verified by the trusted checker to the same numbers; a step
law's emitted blocks and accepted lengths sum to 1 and agree, its stream TV is the enumeration's, its
block tree sums to it, its certificate is re-verified to the same numbers. Every comparison is exact.
What is special to one verifier (hand-derived laws, closed forms, brute-force oracles of its own
algorithm) stays in its own test module.
"""

from __future__ import annotations

import importlib.util
import itertools
from fractions import Fraction as F

import pytest

from specproof import checker
from specproof.certify import registry
from specproof.laws.block import stream_tv, tree_law
from specproof.laws.contract import HasStreamTV, HasTree, PositionContract, StepContract
from specproof.laws.rational import as_distribution

VERIFIERS = registry.verifiers()


def _missing(v):
    return [m for m in v.requires if importlib.util.find_spec(m) is None]


def _cases(kind, *, need=None):
    out = []
    for v in VERIFIERS:
        if v.kind != kind or (need is not None and getattr(v, need) is None):
            continue
        marks = [pytest.mark.slow] if v.slow else []
        if _missing(v):
            marks.append(pytest.mark.skip(reason=f"{v.name} needs {', '.join(_missing(v))}"))
        for i, example in enumerate(v.examples):
            out.append(pytest.param(v, example, id=f"{v.name}-{i}", marks=marks))
    return out


_LAWS: dict[tuple[str, int], object] = {}


def _law(v, example):
    """The law of one example, built once for the whole suite (laws are immutable)."""
    key = (v.name, id(example))
    if key not in _LAWS:
        _LAWS[key] = v.law(example.target, example.draft, example.params)
    return _LAWS[key]


def _row(values):
    return tuple(as_distribution(values, "row").fractions())


def _tv(a, b, outside=F(0)):
    return (sum((abs(x - y) for x, y in zip(a, b)), F(0)) + outside) / 2


def _ratio(r):
    return F(r.num, r.den)


# --------------------------------------------------------------------------- the registry itself


def test_every_name_is_registered_once_with_examples():
    names = [v.name for v in VERIFIERS]
    assert len(names) == len(set(names))
    for v in VERIFIERS:
        assert v.kind in ("position", "step") and v.examples and v.source, v.name
        if v.kind == "step":
            assert all(1 <= e.params["gamma"] <= 2 for e in v.examples), v.name


def test_every_verifier_the_project_knows_is_registered():
    from specproof.laws.multidraft import MULTIDRAFT_METHODS
    from specproof.laws.relaxed import RULES
    from specproof.rules.policy import NAMED_RULES

    names = {v.name for v in VERIFIERS}
    for rule in NAMED_RULES:
        assert {f"rule:{rule}", f"rule-block:{rule}"} <= names
    for rule in RULES:
        assert {f"relaxed:{rule}", f"relaxed-block:{rule}"} <= names
    for method in MULTIDRAFT_METHODS:
        assert f"multidraft:{method}" in names
    assert {
        "textbook",
        "textbook-chain",
        "typical",
        "typical-block",
        "block-verification",
        "tree:deterministic",
        "tree:greedy",
        "traced:transformers",
    } <= names


def test_an_unknown_name_is_refused_naming_the_known_ones():
    assert registry.verifier("textbook").kind == "position"
    with pytest.raises(registry.UnknownVerifier, match="no verifier 'nope' is registered; known: textbook, "):
        registry.verifier("nope")


def _rows():
    out = []
    for v in VERIFIERS:
        marks = [pytest.mark.slow] if v.slow else []
        if _missing(v):
            marks.append(pytest.mark.skip(reason=f"{v.name} needs {', '.join(_missing(v))}"))
        out.append(pytest.param(v, id=v.name, marks=marks))
    return out


@pytest.mark.parametrize("v", _rows())
def test_a_lossy_verifier_shows_it_on_an_example(v):
    laws = [_law(v, e) for e in v.examples]
    if v.lossless:
        assert all(law.lossless for law in laws)
    else:
        assert not all(law.lossless for law in laws)


# --------------------------------------------------------------------------- position laws


@pytest.mark.parametrize("v,example", _cases("position"))
def test_position_law_keeps_the_contract(v, example):
    law = _law(v, example)
    assert isinstance(law, PositionContract)
    p = _row(example.target)
    outside = sum(getattr(law, "out_of_range", {}).values(), F(0))
    assert len(law.law) == len(p) and all(m >= 0 for m in law.law)
    assert sum(law.law) + outside == 1
    assert tuple(law.reference) == _row(v.reference(example.target, example.draft, example.params))
    assert law.tv_reference == _tv(law.law, law.reference, outside)
    assert law.lossless == (law.tv_reference == 0)
    assert 0 <= law.alpha <= 1
    if v.lossless:
        assert tuple(law.law) == tuple(law.reference)


@pytest.mark.parametrize("v,example", _cases("position", need="tree"))
def test_position_tree_gives_the_law_and_alpha(v, example):
    law = _law(v, example)
    assert isinstance(law, HasTree)
    tree = v.tree(example.target, example.draft, example.params, law)
    emitted, outside = tree.law()
    assert emitted == tuple(law.law)
    assert sum(outside.values(), F(0)) == sum(getattr(law, "out_of_range", {}).values(), F(0))
    assert tree.accept_probability() == law.alpha
    tree.rederive()


@pytest.mark.parametrize("v,example", _cases("position", need="certificate"))
def test_position_certificate_is_rederived_to_the_same_numbers(v, example):
    law = _law(v, example)
    verdict = checker.check(v.certificate(example.target, example.draft, example.params, law))
    assert verdict.valid, verdict.detail
    facts = verdict.facts[0]
    assert tuple(map(_ratio, facts["law"])) == tuple(law.law)
    assert tuple(map(_ratio, facts["reference"])) == tuple(law.reference)
    assert _ratio(facts["totals"]["tv"]) == law.tv_reference
    assert _ratio(facts["totals"]["alpha"]) == law.alpha
    assert facts["claims"]["lossless"] == law.lossless


# --------------------------------------------------------------------------- step laws


def _enumerated_stream_tv(emitted, reference, gamma):
    """Brute force: every block continued by the reference to gamma + 1 tokens, against the
    reference's joint law, over all V**(gamma + 1) sequences."""
    v = len(reference(()))
    stream = {}
    for block, m in emitted.items():
        for rest in itertools.product(range(v), repeat=gamma + 1 - len(block)):
            seq, w = block + rest, m
            for j in range(len(block), gamma + 1):
                w *= reference(seq[:j])[seq[j]]
            stream[seq] = stream.get(seq, F(0)) + w
    joint = {}
    for seq in itertools.product(range(v), repeat=gamma + 1):
        w = F(1)
        for j in range(gamma + 1):
            w *= reference(seq[:j])[seq[j]]
        joint[seq] = w
    return sum((abs(stream.get(s, F(0)) - joint.get(s, F(0))) for s in set(stream) | set(joint)), F(0)) / 2


@pytest.mark.parametrize("v,example", _cases("step"))
def test_step_law_keeps_the_contract(v, example):
    law = _law(v, example)
    assert isinstance(law, StepContract)
    gamma = example.params["gamma"]
    emitted = dict(law.emitted)
    assert law.gamma == gamma and len(law.accepted_length_law) == gamma + 1
    assert all(1 <= len(b) <= gamma + 1 and m > 0 for b, m in emitted.items())
    assert sum(emitted.values()) == 1 and sum(law.accepted_length_law) == 1
    by_length = [sum((m for b, m in emitted.items() if len(b) == i + 1), F(0)) for i in range(gamma + 1)]
    assert tuple(by_length) == tuple(law.accepted_length_law)
    assert law.expected_accepted == sum(i * m for i, m in enumerate(law.accepted_length_law))
    assert law.expected_emitted == 1 + law.expected_accepted  # no stop tokens in the examples


@pytest.mark.parametrize("v,example", _cases("step"))
def test_step_stream_tv_is_the_enumeration(v, example):
    law = _law(v, example)
    gamma = example.params["gamma"]
    reference = registry.model(v.reference(example.target, example.draft, example.params))
    rows = lambda prefix: _row(reference(prefix))  # noqa: E731
    tv = stream_tv(dict(law.emitted), rows, gamma)
    assert tv == _enumerated_stream_tv(dict(law.emitted), rows, gamma)
    if isinstance(law, HasStreamTV) and law.stream_tv is not None:
        assert law.stream_tv == tv
    if law.lossless:
        assert tv == 0
    if v.lossless:
        assert law.lossless


@pytest.mark.parametrize("v,example", _cases("step", need="tree"))
def test_step_tree_gives_the_emitted_blocks(v, example):
    law = _law(v, example)
    gamma = example.params["gamma"]
    tree = v.tree(example.target, example.draft, example.params, law)
    emitted, lengths = tree_law(tree, gamma)
    assert emitted == dict(law.emitted) and lengths == tuple(law.accepted_length_law)


@pytest.mark.parametrize("v,example", _cases("step", need="certificate"))
def test_step_certificate_is_rederived_to_the_same_numbers(v, example):
    law = _law(v, example)
    gamma = example.params["gamma"]
    doc = v.certificate(example.target, example.draft, example.params, law)
    verdict = checker.check(doc)
    assert verdict.valid, verdict.detail
    facts = verdict.facts[0]
    assert {tuple(b): F(m) for b, m in doc["law"]} == dict(law.emitted)
    assert tuple(map(_ratio, facts["accepted_length"])) == tuple(law.accepted_length_law)
    assert _ratio(facts["expected_emitted"]) == law.expected_emitted
    assert facts["stream_tv"] == stream_tv(dict(law.emitted), registry.model(example.target), gamma)
    assert facts["claims"]["lossless"] == law.lossless
