"""A mutation fuzzer over genuine certificates of every schema (one position, compact, bundle,
chain with exact and with float rows): each mutant of one JSON value must be rejected with a
reason, or re-verify to exactly the same law; no exception may escape the checker.

The number of mutants is bounded (``FUZZ_MUTANTS`` per document, seeded) so the run is the same
on every machine; ``benchmarks/bench_checker.py`` measures how long checks take.
"""

import base64
import copy
import importlib.util
import json
import os
import random
from fractions import Fraction

import numpy as np
import pytest

from specproof import checker
from specproof.certify.blocks import block_verification_certificate
from specproof.certify.certificate import (
    build_bundle,
    build_certificate,
    build_chain_certificate,
    build_compact_certificate,
    build_outcome_certificate,
)
from specproof.laws.rational import from_floats
from specproof.rules.audit import position_law
from specproof.rules.policy import named_rule

FUZZ_MUTANTS = int(os.environ.get("SPECPROOF_FUZZ_MUTANTS", "250"))


def _row(prefix, shift, v=3):
    last = prefix[-1] if prefix else 0
    weights = [1 + (i * 5 + last * 2 + shift) % 4 for i in range(v)]
    return [Fraction(w, sum(weights)) for w in weights]


def _float_row(prefix, shift):
    rng = np.random.default_rng(100 * shift + (prefix[-1] + 1 if prefix else 0))
    return from_floats(rng.dirichlet(np.ones(3)), atol=1e-3, name="row")


def _genuine():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(50) * 0.5), rng.dirichlet(np.ones(50) * 0.5)
    single = build_certificate(["1/2", "1/4", "1/4", 0], ["1/4", "1/4", 0, "1/2"], name="mixed")
    return {
        "single": single,
        "compact": build_compact_certificate(p, q, name="compact", atol=1e-3, labels=[f"t{i}" for i in range(50)]),
        "bundle": build_bundle(
            [single, build_certificate(["1/3", "2/3"], ["1/3", "2/3"], name="equal")], name="b", statement="s"
        ),
        "chain-exact": build_chain_certificate(lambda s: _row(s, 0), lambda s: _row(s, 1), 2, name="chain"),
        "chain-stop": build_chain_certificate(
            lambda s: _row(s, 0), lambda s: _row(s, 1), 2, name="chain-s", stop_tokens=[1]
        ),
        "chain-float": build_chain_certificate(
            lambda s: _float_row(s, 0), lambda s: _float_row(s, 1), 2, name="chain-f"
        ),
        **{
            f"outcome-{rule}": build_outcome_certificate(
                position_law(["1/6", "1/3", "1/2"], ["1/2", "1/4", "1/4"], named_rule(rule)).tree,
                name=rule,
                statement="s",
            )
            for rule in ("coin-reuse-inverse-cdf", "race-reuse", "le-float32-grid", "match-rule")
        },
        "block-verification": block_verification_certificate(lambda s: _row(s, 0, 2), lambda s: _row(s, 1, 2), 2),
    }


GENUINE = _genuine()


def _paths(value, path=()):
    """Every location in a JSON value (containers and leaves)."""
    yield path
    if isinstance(value, dict):
        for key in value:
            yield from _paths(value[key], path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, path + (i,))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _replace(doc, path, value):
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _nearby_rational(text, rng):
    num, den = (int(x, 16) if x.startswith("0x") else int(x) for x in text.split("/"))
    choice = rng.randrange(5)
    if choice == 0:
        return f"{num + 1}/{den}"
    if choice == 1:
        return f"{max(num - 1, 0)}/{den}"
    if choice == 2:
        return f"{num * 2}/{den * 2}"  # the same value: must stay valid with the same law
    if choice == 3:
        return f"-{num}/{den}"
    return f"{num}/{den + 1}"


def _is_base64(text):
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def _mutate(doc, rng):
    """One random change to one JSON value."""
    doc = copy.deepcopy(doc)
    path = rng.choice(list(_paths(doc)))
    value = _get(doc, path)
    if isinstance(value, str) and checker._RATIONAL.fullmatch(value) and rng.random() < 0.7:
        return _replace(doc, path, _nearby_rational(value, rng))
    if isinstance(value, str) and len(value) > 16 and _is_base64(value) and rng.random() < 0.7:  # float rows
        raw = bytearray(base64.b64decode(value))
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        return _replace(doc, path, base64.b64encode(bytes(raw)).decode())
    if isinstance(value, bool):
        return _replace(doc, path, not value)
    if isinstance(value, int):
        return _replace(doc, path, value + rng.choice([-1, 1, 10**6]))
    if isinstance(value, list) and value and rng.random() < 0.6:
        i, j = rng.randrange(len(value)), rng.randrange(len(value))
        op = rng.randrange(3)
        if op == 0:
            value.pop(i)
        elif op == 1:
            value.insert(i, copy.deepcopy(value[j]))
        else:
            value[i], value[j] = value[j], value[i]
        return doc
    if isinstance(value, dict) and value and rng.random() < 0.6:
        key = rng.choice(sorted(value))
        if rng.random() < 0.5:
            del value[key]
        else:
            value[key + "_"] = value[key]
        return doc
    return _replace(doc, path, rng.choice([None, 0.5, "x", [], {}, -1, "1/0", "NaN"]))


def _law(facts):
    """What a verdict re-derived, as plain Fractions, to compare two documents' laws."""
    out = []
    for f in facts:
        if f["schema"] == checker.BLOCK_SCHEMA:
            out.append(
                (
                    "block",
                    tuple((k, Fraction(x.num, x.den)) for k, x in f["law"].items()),
                    tuple(Fraction(x.num, x.den) for x in f["accepted_length"]),
                    Fraction(f["expected_emitted"].num, f["expected_emitted"].den),
                    f["stream_tv"],
                    tuple(sorted(f["claims"].items())),
                    tuple(sorted((k, tuple(Fraction(x.num, x.den) for x in v)) for k, v in f["inputs"].items())),
                )
            )
        elif f["schema"] == checker.OUTCOME_SCHEMA:
            # (a mutant may add or drop a row no branch reads: the law stays the same)
            out.append(
                (
                    "outcome",
                    tuple(Fraction(x.num, x.den) for x in f["law"]),
                    tuple(sorted((k, Fraction(x.num, x.den)) for k, x in f["totals"].items())),
                    tuple(sorted(f["claims"].items())),
                    tuple(Fraction(x.num, x.den) for k in ("p", "q") for x in f["inputs"][k]),
                )
            )
        elif "law" in f:
            law = f["law"]
            out.append(
                (
                    "position",
                    tuple(
                        Fraction(x, law.den) for col in (law.target, law.draft, law.accept, law.residual) for x in col
                    ),
                    tuple(Fraction(x.num, x.den) for x in f["totals"].values()),
                    tuple(sorted(f["claims"].items())),
                )
            )
        else:
            out.append(
                (
                    "chain",
                    f["gamma"],
                    f["nodes"],
                    tuple(Fraction(x.num, x.den) for x in f["accepted_length"]),
                    Fraction(f["expected_emitted"].num, f["expected_emitted"].den),
                    Fraction(f["mean_alpha"].num, f["mean_alpha"].den),
                    tuple(sorted(f["claims"].items())),
                )
            )
    return out


@pytest.mark.parametrize("kind", sorted(GENUINE))
def test_every_mutant_is_rejected_or_has_the_same_law(kind):
    original = checker.check(GENUINE[kind])
    assert original.valid, original
    rng = random.Random(f"fuzz-{kind}")
    outcomes = {"rejected": 0, "same law": 0}
    for _ in range(FUZZ_MUTANTS):
        mutant = _mutate(GENUINE[kind], rng)
        verdict = checker.check(mutant)  # any exception other than a verdict fails the test
        if verdict.valid:
            # a bundle's certificates may be reordered: the same laws, as a multiset
            assert sorted(map(repr, _law(verdict.facts))) == sorted(map(repr, _law(original.facts))), json.dumps(
                mutant
            )[:300]
            outcomes["same law"] += 1
        else:
            assert isinstance(verdict.reason, checker.Reason) and verdict.detail
            outcomes["rejected"] += 1
        # the same bytes give the same verdict through the text path
        assert checker.check(json.dumps(mutant)).valid == verdict.valid
    assert outcomes["rejected"] > FUZZ_MUTANTS // 3  # the fuzzer does reach the checks


def _resize(doc, rng):
    """A change of form that keeps every value (issue 18): one rational rewritten unreduced as
    (k n)/(k d) with k an odd number of up to 2,000 bits, or an outcome or block certificate's
    rows listed in another order (derivation order must not matter). A tree's stated row values
    are left as written (a row is held over the common denominator its text states, and races
    are checked only on rows of small denominators)."""
    doc = copy.deepcopy(doc)
    rationals = [
        path
        for path in _paths(doc)
        if isinstance(_get(doc, path), str)
        and "values" not in path
        and checker._RATIONAL.fullmatch(_get(doc, path))
        and not _get(doc, path).startswith("-")
    ]
    trees = [c for c in [doc, *doc.get("certificates", [])] if isinstance(c.get("rows"), dict)]
    if trees and rng.random() < 0.3:
        cert = rng.choice(trees)
        names = list(cert["rows"])
        rng.shuffle(names)
        cert["rows"] = {name: cert["rows"][name] for name in names}
        return doc
    path = rng.choice(rationals)
    num, den = (int(x, 0) for x in _get(doc, path).split("/"))
    k = rng.getrandbits(rng.choice([8, 64, 2000])) | 1
    return _replace(doc, path, f"{k * num:#x}/{k * den:#x}")


@pytest.mark.parametrize("kind", sorted(GENUINE))
def test_claims_written_unreduced_or_reordered_keep_the_law(kind):
    """Unreduced claims and reordered rows change no value: each such mutant re-verifies to the
    same law (the checker computes with re-derived values, whatever form a claim is written in)."""
    original = checker.check(GENUINE[kind])
    rng = random.Random(f"resize-{kind}")
    for _ in range(max(20, FUZZ_MUTANTS // 5)):
        mutant = _resize(GENUINE[kind], rng)
        verdict = checker.check(mutant)
        assert verdict.valid, (verdict, json.dumps(mutant)[:300])
        assert sorted(map(repr, _law(verdict.facts))) == sorted(map(repr, _law(original.facts)))


@pytest.mark.parametrize("kind", sorted(k for k in GENUINE if k.startswith(("outcome", "block"))))
@pytest.mark.parametrize("limit", ["MAX_MASS_BITS", "MAX_TABLE_BITS"])
def test_mutants_at_the_size_limits(kind, limit, monkeypatch):
    """With a size limit just below what the genuine document needs, it is rejected by that limit
    (a clean MALFORMED), and every mutant is rejected or has the same law: no exception escapes."""
    original = checker.check(GENUINE[kind])
    if limit == "MAX_MASS_BITS":
        monkeypatch.setattr(checker, "MAX_MASS_BITS", 3)
    else:
        monkeypatch.setattr(checker, "MAX_TABLE_BITS", 0)
        monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 0)
    verdict = checker.check(GENUINE[kind])
    assert verdict.reason is checker.Reason.MALFORMED and (
        "a mass over" in verdict.detail or "the rows hold more than" in verdict.detail
    ), verdict
    rng = random.Random(f"limits-{kind}-{limit}")
    for _ in range(max(20, FUZZ_MUTANTS // 5)):
        mutant = _mutate(GENUINE[kind], rng)
        verdict = checker.check(mutant)
        if verdict.valid:
            assert sorted(map(repr, _law(verdict.facts))) == sorted(map(repr, _law(original.facts)))
        else:
            assert isinstance(verdict.reason, checker.Reason) and verdict.detail


# ------------------------------------------------------------------ sums and constants (issue 30, item 5)
# Documents whose law depends on a float sum or on a threshold constant, each with its law derived
# independently of the kernel: the untrusted builder's (rules.audit.position_law: float sums by
# laws.floats, library logs and exps by rules.libm), or the hand derivation of test_checker_derived.
# A mutant the kernel accepts must have that law, or name the stated value it changed (the sum or
# constant it could not derive) and fail --require-lossless's gate: a forged sum or constant never
# flips a verdict silently.


def _member(dtype, test, library):
    from specproof.rules.faithful import FAMILY

    return next(
        m
        for m in FAMILY
        if (m.rule.arithmetic.dtype, m.rule.arithmetic.test, m.rule.arithmetic.library, m.rule.arithmetic.normalization)
        == (dtype, test, library, "divide")
    )


def _derived_documents():
    from test_checker_derived import P16, Q16, _divided, _textbook
    from test_checker_derived import _law as derived_law

    from specproof.laws.floats import FORMATS

    p, q = ["1/6", "1/3", "1/2"], ["1/2", "1/4", "1/4"]
    docs = {}
    for dtype, test, library in (
        ("float16", "ratio", "torch"),
        ("bfloat16", "product", "torch"),
        ("float32", "log", "numpy"),
        ("float64", "exp", "torch"),
    ):
        if importlib.util.find_spec(library) is None:  # the law of a library's own sum or exp needs it (no torch in
            continue  # CI's oldest-dependency run)
        law = position_law(p, q, _member(dtype, test, library).rule)
        docs[f"{dtype}-{test}-{library}"] = (
            build_outcome_certificate(law.tree, name="m", statement="s"),
            list(law.law),
        )
    w = [max(a - b, Fraction(0)) for a, b in zip(P16, Q16)]
    truth = derived_law(P16, Q16, _divided(w, sum(w), FORMATS["float16"]))
    for name, order in (
        ("float16-left-to-right", ["left-to-right", "float32"]),
        ("float16-tree", ["tree", "float32", [[2, 1], 0]]),
        ("float16-stated-sum", "1025/4096"),
    ):
        docs[name] = (_textbook(P16, Q16, ["float-divided", "w", "float16", order], truth), truth)
    return docs


DERIVED = _derived_documents()


def _sum_or_constant_paths(doc):
    """Where a document states a float sum or a threshold constant (mutated more often)."""

    def stated_at(path):
        if len(path) < 2 or path[-1] not in (1, 3):
            return False
        parent = _get(doc, path[:-1])
        return (path[-2] == "source" and path[-1] == 1 and parent[0] == "const") or (
            path[-2] == "recipe" and path[-1] == 3 and parent[0] == "float-divided"
        )

    return [path for path in _paths(doc) if stated_at(path)]


@pytest.mark.parametrize("kind", sorted(DERIVED))
def test_a_forged_sum_or_constant_never_flips_a_verdict(kind):

    doc, truth = DERIVED[kind]
    original = checker.check(doc)
    assert original.valid, original
    assert [Fraction(x.num, x.den) for x in original.facts[0]["law"]] == [Fraction(x) for x in truth]
    stated = original.facts[0]["stated"]
    rng = random.Random(f"derived-{kind}")
    targeted = _sum_or_constant_paths(doc)
    assert targeted or not stated  # every stated value is where the fuzzer aims
    for i in range(FUZZ_MUTANTS):
        if targeted and i % 2 == 0:  # half the mutants change a stated sum or constant to a nearby value
            mutant = copy.deepcopy(doc)
            path = rng.choice(targeted)
            value = _get(mutant, path)
            if isinstance(value, str) and checker._RATIONAL.fullmatch(value):
                _replace(mutant, path, _nearby_rational(value, rng))
            else:
                _replace(mutant, path, rng.choice(["1/4", "1025/4096", "1/1", "0/1", "2/1"]))
        else:
            mutant = _mutate(doc, rng)
        verdict = checker.check(mutant)
        if not verdict.valid:
            assert isinstance(verdict.reason, checker.Reason) and verdict.detail
            continue
        law = [Fraction(x.num, x.den) for x in verdict.facts[0]["law"]] if "law" in verdict.facts[0] else None
        if law == [Fraction(x) for x in truth]:
            continue
        # a law the rows do not give: only through a stated value, which the verdict names, and the gate fails
        assert verdict.facts[0]["stated"] and verdict.facts[0]["stated"] != stated or law is None, json.dumps(mutant)[
            :300
        ]
        assert checker.gate(verdict.facts, None), json.dumps(mutant)[:300]
    if stated:  # a stated value is never evidence: the genuine document fails the gate too, and says why
        assert any("stated" in reason for reason in checker.gate(original.facts, None)), checker.gate(
            original.facts, None
        )


def test_a_consistent_forgery_of_a_stated_sum_is_named_and_fails_the_gate():
    """The reviewer's attack made whole: a stated sum S' replaced and the document's law, totals and
    claims re-stated to what S' gives (derived here, by test_checker_derived's own arithmetic), down
    to S' = 1/4, under which the law is exactly p and the claim LOSSLESS. The kernel computes with
    S' only as a named stated value: every such document fails --require-lossless's gate."""
    from test_checker_derived import P16, Q16, _divided, _textbook
    from test_checker_derived import _law as derived_law

    from specproof.laws.floats import FORMATS

    w = [max(a - b, Fraction(0)) for a, b in zip(P16, Q16)]
    true_sum = sum(w)
    forged = [
        Fraction(1, 4),
        true_sum,
        true_sum * (1 + Fraction(1, 2**10)),
        true_sum * (1 - Fraction(1, 2**11)),
        Fraction(1, 2),
        Fraction(1025, 4097),
    ]
    lossless_seen = False
    for s in forged:
        law = derived_law(P16, Q16, _divided(w, s, FORMATS["float16"]))
        verdict = checker.check(
            _textbook(P16, Q16, ["float-divided", "w", "float16", f"{s.numerator}/{s.denominator}"], law)
        )
        if not verdict.valid:
            assert isinstance(verdict.reason, checker.Reason) and verdict.detail
            continue
        facts = verdict.facts[0]
        assert [Fraction(x.num, x.den) for x in facts["law"]] == law  # the kernel computes with S', exactly
        assert any("sum" in item for item in facts["stated"]), facts["stated"]
        assert checker.gate(verdict.facts, None)
        lossless_seen |= law == P16
    assert lossless_seen  # S' = 1/4 does give the law p: only the gate stands between it and a false LOSSLESS
