"""Chain certificates: built from the exact chain law, re-verified by the trusted checker from
the rows alone; every tampering is refused with its reason."""

import copy
import json
from fractions import Fraction
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.certify.certificate import build_chain_certificate, dumps, fraction_text, parse_exact
from specproof.checker import Reason, check
from specproof.errors import InvalidDistribution
from specproof.laws.chain import verification_law
from specproof.models.fixtures import phone_lm_chain

# The hand-checked chain of test_chain.py: gamma = 2, V = 2, alpha 3/4 at the root, 1 after
# token 0 (p == q there), 1/2 after token 1.
HALF = (F(1, 2), F(1, 2))
TARGET = {(): HALF, (0,): (F(1, 3), F(2, 3)), (1,): (F(1), F(0))}
DRAFT = {(): (F(1, 4), F(3, 4)), (0,): (F(1, 3), F(2, 3)), (1,): HALF}
for _a in (0, 1):
    for _b in (0, 1):
        TARGET[(_a, _b)] = HALF


def _hand():
    return build_chain_certificate(TARGET.__getitem__, DRAFT.__getitem__, 2, name="hand")


def test_hand_chain_certificate_by_hand():
    doc = _hand()
    assert check(doc).valid and check(dumps(doc)).valid
    assert doc["rows"] == {
        "encoding": "rational",
        "table": [["1/2", "1/2"], ["1/4", "3/4"], ["1/3", "2/3"], ["1/1", "0/1"]],
    }
    # reach: 1 at the root, min(p, q) = 1/4 and 1/2 for the drafts 0 and 1; stop = reach * (1 - alpha)
    assert doc["nodes"] == [
        {"prefix": [], "p": 0, "q": 1, "reach": "1/1", "stop": "1/4"},
        {"prefix": [0], "p": 2, "q": 2, "reach": "1/4", "stop": "0/1"},
        {"prefix": [1], "p": 3, "q": 0, "reach": "1/2", "stop": "1/4"},
    ]
    # P(accepted = 2) = 1/4 * 1 + 1/2 * 1/2; mean alpha = (3/4 + 1/4 + 1/4) / (7/4)
    assert doc["totals"] == {"accepted_length": ["1/4", "1/4", "1/2"], "expected_emitted": "9/4", "mean_alpha": "5/7"}
    assert doc["claims"] == {"stream_equals_target_law": True}


def _set(path, value):
    def edit(doc):
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return edit


TAMPERING = {
    "reach off by 1/10^9": (_set(("nodes", 2, "reach"), "500000001/1000000000"), Reason.NODE_MASS, "nodes[2].reach"),
    "stop mass moved": (_set(("nodes", 1, "stop"), "1/4"), Reason.NODE_MASS, "nodes[1].stop"),
    "node dropped": (lambda d: d["nodes"].pop(1), Reason.NODES, "nodes[1] has prefix [1]"),
    "node duplicated": (lambda d: d["nodes"].insert(1, copy.deepcopy(d["nodes"][1])), Reason.NODES, "nodes[2]"),
    "nodes out of order": (lambda d: d["nodes"].reverse(), Reason.NODES, "nodes[0] has prefix [1]"),
    "a node past gamma": (
        lambda d: d["nodes"].append(dict(d["nodes"][1], prefix=[0, 0])),
        Reason.NODES,
        "accepts only 3 nodes",
    ),
    "last node missing": (lambda d: d["nodes"].pop(), Reason.NODES, "lists 2 nodes; the verifier accepts at least 3"),
    "row index out of range": (_set(("nodes", 0, "q"), 4), Reason.MALFORMED, "not the index of a row"),
    "row index a string": (_set(("nodes", 0, "p"), "0"), Reason.MALFORMED, "not the index of a row"),
    "extra node field": (_set(("nodes", 0, "label"), "x"), Reason.MALFORMED, "nodes[0] has unknown fields ['label']"),
    "p row sums past 1": (_set(("rows", "table", 2), ["1/3", "3/4"]), Reason.NOT_NORMALIZED, "table[2] sums to 13/12"),
    "row of the wrong length": (_set(("rows", "table", 0), ["1/1"]), Reason.TOKENS, "table[0] has 1 entries"),
    "a float in a row": (_set(("rows", "table", 0, 0), 0.5), Reason.NOT_RATIONAL, "table[0][0]"),
    "a negative entry": (_set(("rows", "table", 3), ["3/2", "-1/2"]), Reason.NEGATIVE, "which is negative"),
    "a base64 row in a rational table": (_set(("rows", "table", 0), "AAAAAAAA4D8="), Reason.MALFORMED, "not a list"),
    "unknown encoding": (_set(("rows", "encoding"), "float32"), Reason.SCHEMA, "encoding 'float32'"),
    "draft row changed": (_set(("rows", "table", 1), ["1/2", "1/2"]), Reason.NODE_MASS, "nodes[0].stop: expected 0/1"),
    "accepted length": (_set(("totals", "accepted_length", 2), "1/3"), Reason.TOTAL, "accepted_length[2]"),
    "accepted length too short": (
        _set(("totals", "accepted_length"), ["1/4", "3/4"]),
        Reason.MALFORMED,
        "gamma + 1 = 3",
    ),
    "expected emitted": (_set(("totals", "expected_emitted"), "2/1"), Reason.TOTAL, "expected_emitted"),
    "mean alpha": (_set(("totals", "mean_alpha"), "3/4"), Reason.TOTAL, "expected 5/7, claimed 3/4"),
    "claim flipped": (_set(("claims", "stream_equals_target_law"), False), Reason.CLAIM, "stream_equals_target_law"),
    "claim missing": (lambda d: d["claims"].clear(), Reason.MISSING_FIELD, "no field 'stream_equals_target_law'"),
    "claim unknown": (_set(("claims", "dist_equals_p"), True), Reason.MALFORMED, "unknown fields"),
    "gamma 0": (_set(("gamma",), 0), Reason.MALFORMED, "gamma is 0"),
    "gamma 1 for a gamma 2 chain": (_set(("gamma",), 1), Reason.MALFORMED, "gamma + 1 = 2 rationals"),
    "gamma 3 for a gamma 2 chain": (_set(("gamma",), 3), Reason.MALFORMED, "gamma + 1 = 4 rationals"),
    "gamma 10^9, a short document": (_set(("gamma",), 10**9), Reason.MALFORMED, "gamma + 1 = 1000000001"),
    "gamma 1 with a matching length claim": (
        lambda d: d.update(gamma=1, totals=dict(d["totals"], accepted_length=["1/4", "3/4"])),
        Reason.NODES,
        "the verifier accepts only 1 nodes",
    ),
    "a schema that is a list": (_set(("schema",), []), Reason.SCHEMA, "unknown schema []"),
    "a hex number of 200,000 digits": (
        _set(("nodes", 0, "reach"), "0x1" + "0" * 200_000 + "/1"),
        Reason.NOT_RATIONAL,
        "too many digits",
    ),
    "nodes not a list": (_set(("nodes",), {}), Reason.MALFORMED, "nodes is not a non-empty list"),
    "a prefix of booleans": (_set(("nodes", 2, "prefix"), [True]), Reason.NODES, "has prefix [True]"),
    "uppercase hex": (_set(("nodes", 0, "reach"), "0X1/1"), Reason.NOT_RATIONAL, "not an 'n/d' string"),
    "no nodes": (_set(("nodes",), []), Reason.MALFORMED, "nodes is not a non-empty list"),
    "an empty table": (_set(("rows", "table"), []), Reason.MALFORMED, "rows.table is not a non-empty list"),
    "a table that is a number": (_set(("rows", "table"), 5), Reason.MALFORMED, "rows.table is not a non-empty list"),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_chain_tampering_is_caught(case):
    edit, reason, detail = TAMPERING[case]
    doc = _hand()
    edit(doc)
    verdict = check(doc)
    assert not verdict.valid
    assert verdict.reason is reason, verdict
    assert detail in verdict.detail, verdict.detail
    assert check(json.dumps(doc)).reason is reason  # the same from JSON text


def test_a_gamma_too_large_to_print_is_rejected_not_raised():
    doc = _hand()
    doc["gamma"] = 2**20000
    verdict = check(doc)
    assert verdict.reason is Reason.MALFORMED and "an integer of 20001 bits" in verdict.detail


def test_hex_integers_are_exact_text():
    doc = _hand()
    doc["nodes"][2]["reach"] = "0x1/0x2"
    assert check(doc).valid
    x = F(3, 2**40000)
    assert parse_exact(fraction_text(x)) == x and fraction_text(x).startswith("3/0x1")


def test_a_chain_of_one_position_and_bad_inputs():
    doc = build_chain_certificate(lambda s: ["1/2", "1/2"], lambda s: ["1/4", "3/4"], 1, name="one")
    assert check(doc).valid
    assert doc["totals"]["accepted_length"] == ["1/4", "3/4"] and doc["totals"]["expected_emitted"] == "7/4"
    with pytest.raises(InvalidDistribution, match="labels has 3 entries"):
        build_chain_certificate(lambda s: ["1/2", "1/2"], lambda s: ["1/4", "3/4"], 1, name="x", labels="abc")
    with pytest.raises(InvalidDistribution, match="gamma must be an integer >= 1"):
        build_chain_certificate(lambda s: ["1/2", "1/2"], lambda s: ["1/4", "3/4"], 0, name="x")


def test_phone_chain_certificate_uses_float_rows_and_is_deterministic():
    target, draft, labels = phone_lm_chain(("S", "T"))
    doc = build_chain_certificate(target, draft, 2, name="phone", labels=labels)
    assert doc["rows"]["encoding"] == "float64-le-base64/renormalize"
    assert check(dumps(doc)).valid
    law = verification_law(target, draft, 2)
    assert [parse_exact(x) for x in doc["totals"]["accepted_length"]] == list(law.accepted_length_law)
    assert parse_exact(doc["totals"]["mean_alpha"]) == law.mean_alpha
    # the nodes are the root and every token the root can accept (min(p, q) > 0), read off the rows
    root_accepts = sum(1 for a, b in zip(target(()).fractions(), draft(()).fractions()) if min(a, b) > 0)
    assert len(doc["nodes"]) == len(law.alphas) == 1 + root_accepts
    assert dumps(build_chain_certificate(target, draft, 2, name="phone", labels=labels)) == dumps(doc)
    # the last bit of one float flipped: still normalized within atol, but the masses change;
    # an exponent bit flipped: the row no longer sums to 1 within atol
    import base64

    for byte, bit, reason, where in (
        (0, 0x01, Reason.NODE_MASS, "nodes[2].stop"),
        (7, 0x01, Reason.NOT_NORMALIZED, "table[3]"),
    ):
        bad = copy.deepcopy(doc)
        raw = bytearray(base64.b64decode(bad["rows"]["table"][3]))
        raw[byte] ^= bit
        bad["rows"]["table"][3] = base64.b64encode(bytes(raw)).decode()
        verdict = check(bad)
        assert verdict.reason is reason and where in verdict.detail, verdict


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 2))
def test_random_small_chains_are_verified_and_match_the_library(data, gamma):
    v = data.draw(st.integers(2, 3))
    rows = {}

    def model(name):
        def row(prefix):
            key = (name, prefix)
            if key not in rows:
                w = data.draw(st.lists(st.integers(0, 3), min_size=v, max_size=v).filter(any))
                rows[key] = [F(x, sum(w)) for x in w]
            return rows[key]

        return row

    target, draft = model("p"), model("q")
    doc = build_chain_certificate(target, draft, gamma, name="random")
    assert check(doc).valid
    law = verification_law(target, draft, gamma)
    assert [parse_exact(x) for x in doc["totals"]["accepted_length"]] == list(law.accepted_length_law)
    assert sum(law.accepted_length_law) == 1


# ---------------------------------------------------------------- stop tokens (issue 11 item 8)


def test_stop_token_chain_by_hand():
    """V = 2, token 0 = EOS, p = q = [1/2, 1/2], gamma = 2 (the engine-rules issue's table):
    the block is 0 (1/2), 1 0 (1/4), 1 1 then the bonus token (1/8 each): E[emitted] = 1/2 + 2/4
    + 3/4 = 7/4, where counting past EOS gives 3."""
    from specproof.laws.chain import verification_law

    half = lambda s: ["1/2", "1/2"]  # noqa: E731
    law = verification_law(half, half, 2, stop_tokens=[0])
    assert dict(law.emitted) == {
        (0,): Fraction(1, 2),
        (1, 0): Fraction(1, 4),
        (1, 1, 0): Fraction(1, 8),
        (1, 1, 1): Fraction(1, 8),
    }
    assert law.accepted_length_law == (0, Fraction(1, 2), Fraction(1, 2))
    assert law.expected_emitted == Fraction(7, 4) and law.lossless
    assert verification_law(half, half, 2).expected_emitted == 3
    verdict = check(build_chain_certificate(half, half, 2, name="eos", stop_tokens=[0]))
    expected = verdict.facts[0]["expected_emitted"]
    assert verdict.valid and Fraction(expected.num, expected.den) == Fraction(7, 4)


def _random_model(seed, v=3):
    import random

    def row(prefix):
        rng = random.Random(f"{seed}-{prefix}")
        w = [rng.randint(0, 4) for _ in range(v)]
        w[rng.randrange(v)] += 1
        return [Fraction(x, sum(w)) for x in w]

    return row


@pytest.mark.parametrize("seed", range(30))
def test_stop_token_chains_agree_with_the_audit_and_the_checker(seed):
    """Two independent implementations (chain.verification_law, audit.block_law) and the
    checker's own recount agree on random chains with stop tokens."""
    from specproof.laws.chain import verification_law
    from specproof.rules.audit import block_law

    target, draft = _random_model(f"t{seed}"), _random_model(f"d{seed}")
    gamma, stops = 1 + seed % 3, [seed % 3] if seed % 2 else [0, 2]
    law = verification_law(target, draft, gamma, stop_tokens=stops)
    ref = block_law(target, draft, gamma, stop_tokens=stops, enumeration_limit=0)
    assert dict(law.emitted) == ref.emitted and law.accepted_length_law == ref.accepted_length_law
    assert law.expected_emitted == ref.expected_emitted_to_stop and law.lossless
    verdict = check(build_chain_certificate(target, draft, gamma, name="s", stop_tokens=stops))
    facts = verdict.facts[0]
    assert Fraction(facts["expected_emitted"].num, facts["expected_emitted"].den) == law.expected_emitted
    assert [Fraction(x.num, x.den) for x in facts["accepted_length"]] == list(law.accepted_length_law)


def test_stop_tokens_cannot_be_dropped_added_or_malformed():
    from specproof.laws.chain import verification_law

    target, draft = _random_model("t-eos"), _random_model("d-eos")
    assert sum(verification_law(target, draft, 2, stop_tokens=[1]).ended.values()) > 0
    doc = build_chain_certificate(target, draft, 2, name="s", stop_tokens=[1])
    assert check(doc).valid
    dropped = {k: v for k, v in doc.items() if k != "stop_tokens"}
    assert not check(dropped).valid  # the nodes, lengths and E[emitted] then differ
    for bad in ([1, 1], [2, 1], [3], [-1], [True], "1", [1.0]):
        verdict = check({**doc, "stop_tokens": bad})
        assert not verdict.valid and verdict.reason is Reason.TOKENS, bad
    assert not check({**doc, "stop_tokens": [0, 1]}).valid


@pytest.mark.parametrize("bad", [[-1], [True], [1.0], ["1"], [3]])
def test_verification_law_refuses_stop_tokens_that_are_not_token_ids(bad):
    half = lambda s: ["1/2", "1/4", "1/4"]  # noqa: E731
    with pytest.raises(InvalidDistribution, match="stop_tokens"):
        verification_law(half, half, 2, stop_tokens=bad)


def test_a_float_chain_reports_each_row_raw_sum():
    import base64

    import numpy as np

    from specproof.laws.rational import from_floats

    rows = {0: [0.5, 0.25, 0.25], 1: [0.2, 0.3, 0.5000001]}
    doc = build_chain_certificate(
        lambda s: from_floats(rows[0], atol=1e-3, name="p"),
        lambda s: from_floats(rows[1], atol=1e-3, name="q"),
        1,
        name="f",
    )
    assert doc["rows"]["encoding"] == "float64-le-base64/renormalize"
    verdict = check(doc)
    assert verdict.valid
    sums = [
        sum(Fraction(float(x)) for x in np.frombuffer(base64.b64decode(t), dtype="<f8")) for t in doc["rows"]["table"]
    ]
    assert [Fraction(r.num, r.den) for r in verdict.facts[0]["raw_sums"]] == sums
    assert len(sums) == 2 and sums[0] == 1 and sums[1] != 1
