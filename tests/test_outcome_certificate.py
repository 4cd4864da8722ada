"""Outcome certificates: a verifier under an engine's rule, re-verified by the trusted checker
from the rows and the tree's primitives (issue 11, item 4)."""

import copy
import json
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof import checker
from specproof.certify.certificate import build_outcome_certificate, dumps
from specproof.cli import main
from specproof.report import transcript
from specproof.rules.audit import position_law
from specproof.rules.policy import named_rule

R = checker.Reason

#: (rule, p, q, hand-derived TV) from the engine-rules issue's fault table.
TABLE = [
    ("accept-all", ["9/10", "1/10"], ["1/10", "9/10"], F(4, 5)),
    ("le-float32-grid", ["0", "1"], ["1", "0"], F(1, 2**24)),
    ("lt-float32-grid", ["0", "1"], ["1", "0"], F(0)),
    ("resample-from-target", ["1/2", "1/2"], ["1/4", "3/4"], F(1, 8)),
    ("residual-floor:1/1000", ["0", "1/2", "1/2"], ["1", "0", "0"], F(1, 1001)),
    ("coin-reuse-inverse-cdf", ["1/4", "1/4", "1/2"], ["1", "0", "0"], F(1, 6)),
    ("match-rule", ["1/2", "1/2"], ["1/4", "3/4"], F(0)),
    ("standard", ["1/2", "1/2"], ["1/4", "3/4"], F(0)),
]


def _cert(rule, p, q):
    return build_outcome_certificate(position_law(p, q, named_rule(rule)).tree, name=rule, statement="s")


def _fractions(value):
    """The checker's facts with its unreduced ratios as Fractions (to compare with ==)."""
    if isinstance(value, checker.Ratio):
        return F(value.num, value.den)
    if isinstance(value, dict):
        return {k: _fractions(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fractions(v) for v in value]
    return value


def _check(doc):
    verdict = checker.check(json.loads(dumps(doc)))
    return checker.Verdict(verdict.valid, verdict.reason, verdict.detail, tuple(map(_fractions, verdict.facts)))


@pytest.mark.parametrize("rule,p,q,tv", TABLE)
def test_the_fault_table_through_the_checker(rule, p, q, tv):
    verdict = _check(_cert(rule, p, q))
    assert verdict.valid, verdict
    facts = verdict.facts[0]
    assert facts["totals"]["tv"] == tv
    assert facts["claims"]["lossless"] is (tv == 0)


def test_hand_laws_and_alphas():
    facts = _check(_cert("coin-reuse-inverse-cdf", ["1/4", "1/4", "1/2"], ["1", "0", "0"])).facts[0]
    assert facts["law"] == [F(1, 4), F(1, 12), F(2, 3)]
    facts = _check(_cert("match-rule", ["1/2", "1/2"], ["1/4", "3/4"])).facts[0]
    assert facts["totals"]["alpha"] == F(1, 2)  # sum p q
    facts = _check(_cert("resample-from-target", ["1/2", "1/2"], ["1/4", "3/4"])).facts[0]
    assert (facts["law"], facts["totals"]["alpha"]) == ([F(3, 8), F(5, 8)], F(3, 4))
    facts = _check(_cert("le-float32-grid", ["0", "1"], ["1", "0"])).facts[0]
    assert facts["law"] == [F(1, 2**24), 1 - F(1, 2**24)]


def test_race_reuse_lossy_case_by_hand():
    # p = [1/2, 1/2, 0]... draft from q = [1/2, 1/2, 0] with target p = [0, 1/2, 1/2]:
    # x = 0 (prob 1/2) is always rejected (p(0) = 0); the residual (p - q)+ = [0, 0, 1/2] has one
    # token, so the shared race cannot matter: lossless. With two residual tokens it does:
    # p = [0, 1/2, 1/2], q = [1, 0, 0]: every draft is token 0, rejected; residual [0, 1/2, 1/2];
    # the race that drew 0 from q = [1, 0, 0] says nothing about E_1, E_2: lossless too.
    # p = [1/4, 1/4, 1/2], q = [1/2, 1/2, 0]: see the brute-force oracle below.
    p, q = ["1/4", "1/4", "1/2"], ["1/2", "1/2", "0"]
    facts = _check(_cert("race-reuse", p, q)).facts[0]
    law = position_law(p, q, named_rule("race-reuse"))
    assert facts["law"] == list(law.law) and facts["totals"]["tv"] == law.tv


def _rows(v):
    return (
        st.lists(st.integers(0, 6), min_size=v, max_size=v)
        .filter(lambda w: sum(w) > 0)
        .map(lambda w: [F(x, sum(w)) for x in w])
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.integers(2, 4).flatmap(lambda v: st.tuples(_rows(v), _rows(v))),
    st.sampled_from(["standard", "le-float32-grid", "coin-reuse-inverse-cdf", "race-reuse", "residual-floor:1/100"]),
)
def test_random_pairs_agree(pq, rule):
    p, q = pq
    law = position_law(p, q, named_rule(rule))
    facts = _check(_cert(rule, p, q)).facts[0]
    assert facts["law"] == list(law.law) and facts["totals"]["tv"] == law.tv


# ---------------------------------------------------------------- tampering and hostile input

BASE = _cert("coin-reuse-inverse-cdf", ["1/6", "1/3", "1/2"], ["1/2", "1/4", "1/4"])


def _tamper(edit):
    doc = copy.deepcopy(BASE)
    edit(doc)
    return _check(doc)


def _first_branch(doc):
    return doc["nodes"][0]["branches"][0]


def _set(path, value):
    def edit(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def test_the_genuine_base_is_valid():
    assert _check(BASE).valid


@pytest.mark.parametrize(
    "edit,reason",
    [
        (lambda d: _first_branch(d).update(probability="1/3"), R.BRANCH),
        (_set(("law", 0), "1/5"), R.EMITTED),
        (_set(("totals", "tv"), "0/1"), R.TOTAL),
        (_set(("totals", "alpha"), "1/1"), R.TOTAL),
        (_set(("totals", "out_of_range"), "1/9"), R.TOTAL),
        (lambda d: d["claims"].update(lossless=not d["claims"]["lossless"]), R.CLAIM),
        (lambda d: d["nodes"][1].update(reach="1/7"), R.NODE_MASS),
        (lambda d: d["nodes"][0]["branches"].pop(), R.TOTAL),  # branches no longer sum to 1
        # a different draft row changes the ratio p/q the coins read
        (_set(("rows", "draft"), {"recipe": ["copy", "p"]}), R.BRANCH),
        (
            _set(("rows", "residual"), {"recipe": ["positive-part", "target", "draft"], "values": ["0", "0", "1"]}),
            R.MALFORMED,
        ),  # a derived row cannot carry values
        (_set(("rows", "draft"), {"recipe": ["given"], "values": ["1/4", "1/4", "1/2"]}), R.BRANCH),
        (_set(("rows", "target"), {"recipe": ["copy", "residual"]}), R.MALFORMED),  # a cycle
        (_set(("rows", "target"), {"recipe": ["copy", "nowhere"]}), R.MALFORMED),
        (_set(("rows", "target"), {"recipe": [["copy"], "p"]}), R.MALFORMED),
        (_set(("rows", "target"), {"recipe": ["copy"]}), R.MALFORMED),
        (_set(("rows", "p"), {"recipe": ["input", "p"], "values": ["1/4", "1/4", "1/4"]}), R.NOT_NORMALIZED),
        (_set(("rows", "p"), {"recipe": ["input", "p"], "values": ["1/4", "1/4"]}), R.TOKENS),
        (_set(("reference",), "nowhere"), R.MALFORMED),
        (_set(("reference",), "q"), R.MALFORMED),  # the reference must be the target p
        (lambda d: _first_branch(d).update(child=0), R.MALFORMED),  # a cycle in the tree
        (lambda d: _first_branch(d).update(child={"leaf": [0, 1]}), R.MALFORMED),  # accepted must be a boolean
        (lambda d: _first_branch(d).update(child={"leaf": [0]}), R.MALFORMED),
        (lambda d: _first_branch(d).update(event={"draw": {"row": "proposal", "token": 3}}), R.TOKENS),
        (lambda d: _first_branch(d).update(event={"draw": {"row": "proposal", "token": True}}), R.TOKENS),
        (lambda d: _first_branch(d).update(event={"toss": {}}), R.MALFORMED),
        (lambda d: _first_branch(d).update(event={"draw": {"row": "proposal", "token": 0}, "coin": {}}), R.MALFORMED),
        (
            lambda d: d["nodes"].append(
                {
                    "label": "orphan",
                    "reach": "0/1",
                    "branches": [
                        {
                            "event": {"choice": {"condition": ["always"]}},
                            "probability": "1/1",
                            "child": {"leaf": [0, False]},
                        }
                    ],
                }
            ),
            R.NODES,
        ),
        (lambda d: d["nodes"].append({"label": "empty", "reach": "0/1", "branches": []}), R.MALFORMED),
        (
            lambda d: d["rows"].update(proposal={"recipe": ["input", "proposal"], "values": ["1/4", "1/4", "1/2"]}),
            R.BRANCH,
        ),
        (
            lambda d: d["rows"].update(extra={"recipe": ["input", "extra"], "values": ["1/2", "1/4", "1/4"]}),
            R.MALFORMED,
        ),
        (lambda d: d["rows"].pop("p"), R.MISSING_FIELD),  # p is the input that bounds V
        (lambda d: d["rows"].pop("q"), R.MALFORMED),  # the draft row reads q, no longer listed
        (lambda d: d.update(vocab_size=4), R.TOKENS),
    ],
)
def test_tampering_is_rejected(edit, reason):
    verdict = _tamper(edit)
    assert not verdict.valid and verdict.reason is reason, verdict


def _coin_doc(model, lower, upper, probability):
    return {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 2,
        "reference": "p",
        "rows": {
            "p": {"recipe": ["input", "p"], "values": ["1/3", "2/3"]},
            "q": {"recipe": ["input", "q"], "values": ["1/3", "2/3"]},
        },
        "nodes": [
            {
                "label": "coin",
                "reach": "1/1",
                "branches": [
                    {
                        "event": {"coin": {"model": model, "lower": lower, "upper": upper}},
                        "probability": probability,
                        "child": {"leaf": [0, True]},
                    },
                    {
                        "event": {"coin": {"model": model, "lower": upper, "upper": None}},
                        "probability": "0/1",
                        "child": {"leaf": [1, False]},
                    },
                ],
            }
        ],
        "law": ["1/1", "0/1"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "2/3"},
        "claims": {"lossless": False},
    }


@pytest.mark.parametrize(
    "model,bound,below",
    [
        ("continuous", ["const", "3/2"], F(1)),
        ("float32", ["const", "1/3"], F(5592406, 2**24)),  # ceil(2^24 / 3) grid points below 1/3
        ("float32", ["cdf", "p", 0], F(5592406, 2**24)),
        ("float32", ["ratio", "p", "p", 1], F(1)),  # u < 1 holds for every grid point of [0, 1)
        ("float32-(0,1]", ["ratio", "p", "p", 1], 1 - F(1, 2**24)),  # except u = 1 on (0, 1]
        ("float64", ["const", "0/1"], F(0)),
        ("fixed:0/1", ["const", "0/1"], F(0)),
    ],
)
def test_coin_models_count_grid_points(model, bound, below):
    """A coin's probability is re-derived by the checker's own counting (hand values)."""
    doc = _coin_doc(model, None, {"source": bound, "strict": True}, "1/1")
    verdict = checker.check(doc)
    assert verdict.reason in (R.BRANCH, None)
    got = F(verdict.detail.split("expected ")[1].split(",")[0]) if not verdict.valid else F(1)
    assert got == below


@pytest.mark.parametrize("model", ["fixed:3/2", "fixed:x", "float16", "", "continuous "])
def test_unknown_coin_models_are_rejected(model):
    verdict = checker.check(_coin_doc(model, None, {"source": ["const", "1/2"], "strict": True}, "1/2"))
    assert not verdict.valid and verdict.reason in (R.MALFORMED, R.NOT_RATIONAL)


def test_races_are_checked_only_on_small_vocabularies():
    v = checker.MAX_RACE_VOCAB + 1
    doc = _cert("race-reuse", [F(1, v)] * v, [F(1, v - 1)] * (v - 1) + [F(0)])
    verdict = _check(doc)
    assert not verdict.valid and "races are checked up to" in verdict.detail


def test_derived_rows_are_bounded_by_the_tree():
    """Deriving a row costs V steps; a document may not ask for many more than its branches pay for."""
    doc = copy.deepcopy(BASE)
    for i in range(40):
        doc["rows"][f"u{i}"] = {"recipe": ["uniform"]}
    verdict = _check(doc)
    assert not verdict.valid and verdict.reason is R.MALFORMED and "derives" in verdict.detail


def test_a_long_recipe_chain_does_not_recurse():
    doc = copy.deepcopy(BASE)
    for i in range(8):
        doc["rows"][f"c{i}"] = {"recipe": ["copy", f"c{i - 1}" if i else "p"]}
    assert _check(doc).valid
    doc["rows"]["c0"] = {"recipe": ["copy", "c7"]}
    verdict = _check(doc)
    assert not verdict.valid and "depends on itself" in verdict.detail


# ---------------------------------------------------------------- command line and transcript


def test_audit_writes_a_certificate_check_binds_it(tmp_path, capsys):
    (tmp_path / "p.json").write_text('["1/4", "1/4", "1/2"]')
    (tmp_path / "q.json").write_text('["1", "0", "0"]')
    (tmp_path / "p2.json").write_text('["1/4", "1/2", "1/4"]')
    cert = tmp_path / "c.json"
    args = [
        "audit",
        "--target",
        str(tmp_path / "p.json"),
        "--draft",
        str(tmp_path / "q.json"),
        "--policy",
        "coin-reuse-inverse-cdf",
        "--certificate",
        str(cert),
        "--json",
    ]
    assert main(args) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["certificate"] == str(cert) and out["tv"] == "1/6"
    assert main(["check", str(cert), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True
    assert main(["check", str(cert), "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json")]) == 0
    capsys.readouterr()
    assert main(["check", str(cert), "--target", str(tmp_path / "p2.json"), "--draft", str(tmp_path / "q.json")]) == 1
    assert "p(1) is 1/4, but --target gives 1/2" in capsys.readouterr().out
    doc = json.loads(cert.read_text())
    doc["nodes"][0]["branches"][0]["probability"] = "1/2"
    cert.write_text(json.dumps(doc))
    assert main(["check", str(cert)]) == 1
    assert "REJECTED (branch)" in capsys.readouterr().out


def test_real_pairs_bundle(tmp_path, capsys):
    cert = tmp_path / "b.json"
    assert main(["audit", "--real", "phone", "--policy", "lt-float32-grid", "--certificate", str(cert), "--json"]) == 1
    results = json.loads(capsys.readouterr().out)["pairs"]
    verdict = checker.check_file(cert)
    assert verdict.valid and len(verdict.facts) == len(results) == 20
    tvs = [_fractions(f["totals"]["tv"]) for f in verdict.facts]
    assert [F(r["tv"]) for r in results] == tvs
    assert all(tv > 0 for tv in tvs)  # the float32 grid is lossy, by a tiny exact amount


def test_transcript_shows_only_rederived_values():
    doc = copy.deepcopy(BASE)
    doc["name"] = "a | b <b>x</b>\n# heading"
    verdict = checker.check(json.loads(dumps(doc)))
    text = transcript.render(doc, verdict, json_name="c.json")
    assert "LOSSY, exact TV" in text and "\\| b \\<b\\>x\\</b\\> \\# heading" in text
    facts = verdict.facts[0]
    for t, value in enumerate(facts["law"]):
        assert f"| {t} | {transcript.show(facts['reference'][t])} | {transcript.show(value)} |" in text
    doc["law"][1] = "1/5"  # rejected: no value of the document is shown
    bad = checker.check(json.loads(dumps(doc)))
    text = transcript.render(doc, bad, json_name="c.json")
    assert "REJECTED" in text and "emitted law against the reference" not in text and "| 0 |" not in text


@pytest.mark.parametrize("verifier,count,lossless", [("multidraft", 1, True), ("typical", 1, False), ("tree", 3, True)])
def test_variant_audits_write_certificates(tmp_path, capsys, verifier, count, lossless):
    (tmp_path / "p.json").write_text('["1/2", "1/4", "1/4"]')
    (tmp_path / "q.json").write_text('["1/4", "1/4", "1/2"]')
    cert = tmp_path / "c.json"
    code = main(
        [
            "audit",
            "--target",
            str(tmp_path / "p.json"),
            "--draft",
            str(tmp_path / "q.json"),
            "--verifier",
            verifier,
            "--drafts",
            "2",
            "--gamma",
            "2",
            "--certificate",
            str(cert),
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    verdict = checker.check_file(cert)
    assert verdict.valid and len(verdict.facts) == count
    assert all(f["claims"]["lossless"] is lossless for f in verdict.facts)
    assert code == (0 if lossless else 1) and out["certificate"] == str(cert)
    if verifier == "typical":  # every p(x) >= 1/4 > min(9/100, (3/10) e^-H(p)) = 9/100: every draft passes, law = q
        assert _fractions(verdict.facts[0]["law"]) == [F(1, 4), F(1, 4), F(1, 2)]
        assert _fractions(verdict.facts[0]["totals"]["tv"]) == F(1, 4)


def test_block_verification_audit_writes_a_block_certificate_check_binds_it(tmp_path, capsys):
    (tmp_path / "p.json").write_text('["1/3", "2/3"]')
    (tmp_path / "q.json").write_text('["2/3", "1/3"]')
    cert = tmp_path / "c.json"
    args = [
        "audit",
        "--target",
        str(tmp_path / "p.json"),
        "--draft",
        str(tmp_path / "q.json"),
        "--verifier",
        "block",
        "--gamma",
        "2",
        "--certificate",
        str(cert),
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["expected_accepted"] == "11/9" and out["certificate"] == str(cert)  # Sun et al.'s example
    verdict = checker.check_file(cert)
    assert verdict.valid and verdict.facts[0]["schema"] == checker.BLOCK_SCHEMA
    assert [F(x.num, x.den) for x in verdict.facts[0]["accepted_length"]] == [F(1, 3), F(1, 9), F(5, 9)]
    bind = ["check", str(cert), "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json")]
    assert main(bind) == 0
    text = capsys.readouterr().out
    assert (
        "p and q are exactly --target's and --draft's values" in text and "the certified verifier is LOSSLESS" in text
    )
    assert main(["check", str(cert), "--target", str(tmp_path / "q.json"), "--draft", str(tmp_path / "q.json")]) == 1
    assert "p after [](0) is 1/3, but --target gives 2/3" in capsys.readouterr().out


def _race_doc(v, probability):
    """One race on uniform rows at V = v: the first race won by 0, the second by 0 (probability 1)."""
    return {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": v,
        "reference": "p",
        "rows": {"p": {"recipe": ["input", "p"], "values": [f"1/{v}"] * v}},
        "nodes": [
            {
                "label": "race",
                "reach": "1/1",
                "branches": [
                    {
                        "event": {"race": {"first": "p", "given": 0, "second": "p", "winner": 0}},
                        "probability": probability,
                        "child": {"leaf": [0, True]},
                    }
                ],
            }
        ],
        "law": ["1/1"] + ["0/1"] * (v - 1),
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": f"{v - 1}/{v}"},
        "claims": {"lossless": False},
    }


def test_races_are_checked_up_to_the_race_vocabulary_exactly():
    # the same race on uniform rows wins with probability 1 (both races are the same race)
    v = checker.MAX_RACE_VOCAB
    assert v == 32
    verdict = checker.check(_race_doc(v, "1/2"))
    assert verdict.reason is R.BRANCH and "expected 1/1, claimed 1/2" in verdict.detail
    assert checker.check(_race_doc(v, "1/1")).valid
    verdict = checker.check(_race_doc(v + 1, "1/1"))
    assert verdict.reason is R.MALFORMED and "races are checked up to V = 32" in verdict.detail


@pytest.mark.parametrize("rows", [{}, [], "p"])
def test_rows_must_be_a_non_empty_object(rows):
    verdict = _tamper(_set(("rows",), rows))
    assert verdict.reason is R.MALFORMED and verdict.detail == "certificate.rows is not a non-empty JSON object"


def test_a_row_with_an_unknown_field_is_rejected():
    verdict = _tamper(lambda d: d["rows"]["p"].update(note="1/2"))
    assert verdict.reason is R.MALFORMED and "rows.p is not an object with a recipe (and values)" in verdict.detail


def test_derived_rows_up_to_16_plus_branches_over_v_are_allowed():
    doc = copy.deepcopy(BASE)
    v = doc["vocab_size"]
    branches = sum(len(node["branches"]) for node in doc["nodes"])
    derived = sum(1 for row in doc["rows"].values() if row["recipe"][0] not in ("input", "given"))
    inputs = sum(1 for row in doc["rows"].values() if row["recipe"][0] == "input")
    assert v == 3 and branches // v >= 1 and inputs == 2
    for i in range(16 + branches // v + 8 * inputs - derived):  # an unused uniform row costs V steps, as any
        doc["rows"][f"u{i}"] = {"recipe": ["uniform"]}
    assert _check(doc).valid
    doc["rows"]["one-more"] = {"recipe": ["uniform"]}
    verdict = _check(doc)
    assert verdict.reason is R.MALFORMED
    assert f"derives {17 + branches // v + 8 * inputs} rows for {branches} branches and 2 input rows" in verdict.detail


def test_given_rows_are_reported_once_each():
    doc = copy.deepcopy(BASE)
    assert _check(doc).facts[0]["given"] == []
    # q is read by "draft", which is listed before it: q is reached twice, and reported once
    doc["rows"]["q"] = {"recipe": ["given"], "values": ["1/2", "1/4", "1/4"]}
    assert list(doc["rows"]).index("draft") < list(doc["rows"]).index("q")
    verdict = _check(doc)
    assert verdict.valid and verdict.facts[0]["given"] == ["q"]


def _first_branch_probability(model, lower, upper):
    """The checker's probability of the coin branch (lower, upper), read from its verdict on a
    claim of 1/1 (which passes iff it is 1)."""
    verdict = checker.check(_coin_doc(model, lower, upper, "1/1"))
    if verdict.valid or "branches[1]" in verdict.detail:  # the claim 1/1 passed (the other branch may not)
        return F(1)
    assert verdict.reason is R.BRANCH and "branches[0].probability: expected " in verdict.detail, verdict
    return F(verdict.detail.split("expected ")[1].split(",")[0])


def _bound(value, strict):
    return {"source": ["const", value], "strict": strict}


H = 2**23  # float32 grid: k / 2^24, so 1/2 is the point k = H


@pytest.mark.parametrize(
    "model,lower,upper,probability",
    [
        # upper bound only: P(u < t) or P(u <= t), counted by hand on the grid
        ("float32", None, _bound("1/2", True), F(H, 2 * H)),  # k = 0 .. H - 1
        ("float32", None, _bound("1/2", False), F(H + 1, 2 * H)),  # k = 0 .. H
        ("float32-(0,1]", None, _bound("1/2", True), F(H - 1, 2 * H)),  # k = 1 .. H - 1
        ("float32-(0,1]", None, _bound("1/2", False), F(H, 2 * H)),  # k = 1 .. H
        ("float32", None, _bound("3/2", False), F(1)),  # every point
        ("float32-(0,1]", None, _bound("0/1", False), F(0)),  # no point of (0, 1] is <= 0
        ("float32-(0,1]", None, _bound("1/1", False), F(1)),
        ("float64", None, _bound("1/2", False), F(2**52 + 1, 2**53)),
        ("float64-(0,1]", None, _bound("1/2", True), F(2**52 - 1, 2**53)),  # k = 1 .. 2^52 - 1
        ("continuous", None, _bound("1/3", False), F(1, 3)),
        ("fixed:1/1", None, _bound("1/1", False), F(1)),  # u = 1 is allowed, and 1 <= 1
        ("fixed:1/1", None, _bound("1/1", True), F(0)),
        ("fixed:1/2", None, _bound("1/2", False), F(1)),
        ("fixed:1/2", None, _bound("1/2", True), F(0)),
        ("fixed:1/4", None, _bound("1/2", True), F(1)),  # u = 1/4 < 1/2
        ("fixed:1/4", None, _bound("1/2", False), F(1)),
        ("fixed:3/4", None, _bound("1/2", True), F(0)),
        ("fixed:3/4", None, _bound("1/2", False), F(0)),
        # lower bound only: 1 - P(u <= t) (strict lower bound) or 1 - P(u < t)
        ("float32", _bound("1/2", True), None, F(H - 1, 2 * H)),  # k = H + 1 .. 2H - 1
        ("float32", _bound("1/2", False), None, F(H, 2 * H)),  # k = H .. 2H - 1
        ("continuous", _bound("3/2", False), None, F(0)),
        # both: an empty interval has probability 0, not a negative one
        ("continuous", _bound("1/2", False), _bound("1/4", True), F(0)),
        ("continuous", _bound("1/4", True), _bound("3/4", True), F(1, 2)),
        ("float32", _bound("1/4", False), _bound("1/2", False), F(H // 2 + 1, 2 * H)),  # k = H/2 .. H
    ],
)
def test_coin_probabilities_by_hand(model, lower, upper, probability):
    assert _first_branch_probability(model, lower, upper) == probability


# ---------------------------------------------------------------- recipes and primitives by hand

P3, Q3 = ["1/6", "1/3", "1/2"], ["1/2", "1/4", "1/4"]
RECIPES = {
    "pp": ["positive-part", "p", "q"],  # [0, 1/12, 1/4]
    "fd": ["floor-difference", "p", "q", "1/10"],  # [1/10, 1/10, 1/4]
    "nf": ["normalized", "fd"],  # [2/9, 2/9, 5/9]
    "wo": ["without", "p", [2]],  # [1/6, 1/3, 0]
    "ah": ["one-hot-argmax", "wo"],  # [0, 1, 0]
    "un": ["uniform"],
    "tie": ["one-hot-argmax", "un"],  # a tie goes to the smallest id
    "ap": ["one-hot-argmax", "p"],
    "cq": ["copy", "q"],
    "zero": ["without", "p", [0, 1, 2]],
}


def _doc(event, probability="1/1", leaf=(0, True), rows=None, **changes):
    """One node, one branch; the rows p, q (inputs) and RECIPES. With the branch's probability 1
    to leaf [0, True]: law [1, 0, 0], alpha 1, TV from p = 5/6."""
    spec = {"p": {"recipe": ["input", "p"], "values": P3}, "q": {"recipe": ["input", "q"], "values": Q3}}
    spec.update({name: {"recipe": recipe} for name, recipe in RECIPES.items()})
    spec.update(rows or {})
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 3,
        "reference": "p",
        "rows": spec,
        "nodes": [
            {
                "label": "n",
                "reach": "1/1",
                "branches": [{"event": event, "probability": probability, "child": {"leaf": list(leaf)}}],
            }
        ],
        "law": ["1/1", "0/1", "0/1"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "5/6"},
        "claims": {"lossless": False},
    }
    doc.update(changes)
    return doc


ALWAYS = {"choice": {"condition": ["always"]}}


def test_every_recipe_by_hand():
    verdict = checker.check(_doc(ALWAYS, rows={"g": {"recipe": ["given"], "values": ["1/1", "0/1", "2/1"]}}))
    assert verdict.reason is checker.Reason.MALFORMED and "an entry above 1" in verdict.detail  # rows are in [0, 1]
    verdict = checker.check(_doc(ALWAYS, rows={"g": {"recipe": ["given"], "values": ["1/1", "0/1", "1/2"]}}))
    assert verdict.valid, verdict
    rows = _fractions(verdict.facts[0]["rows"])
    third = F(1, 3)
    assert rows["pp"] == [0, F(1, 12), F(1, 4)]
    assert rows["fd"] == [F(1, 10), F(1, 10), F(1, 4)]
    assert rows["nf"] == [F(2, 9), F(2, 9), F(5, 9)]
    assert rows["wo"] == [F(1, 6), F(1, 3), 0]
    assert rows["ah"] == [0, 1, 0] and rows["tie"] == [1, 0, 0] and rows["ap"] == [0, 0, 1]
    assert rows["un"] == [third, third, third] and rows["cq"] == [F(1, 2), F(1, 4), F(1, 4)]
    assert rows["zero"] == [0, 0, 0] and rows["g"] == [1, 0, F(1, 2)]  # a given row is taken as stated
    assert verdict.facts[0]["given"] == ["g"]
    assert _fractions(verdict.facts[0]["totals"]) == {"alpha": 1, "out_of_range": 0, "tv": F(5, 6)}


def _probability(event):
    """The checker's probability of ``event`` (on the rows of :func:`_doc`), from a claim of 1/1."""
    verdict = checker.check(_doc(event))
    if verdict.valid:
        return F(1)
    assert verdict.reason is R.BRANCH and "branches[0].probability: expected " in verdict.detail, verdict
    return F(verdict.detail.split("expected ")[1].split(",")[0])


def _coin(source, strict=True):
    return {"coin": {"model": "continuous", "lower": None, "upper": {"source": source, "strict": strict}}}


@pytest.mark.parametrize(
    "event,probability",
    [
        ({"draw": {"row": "pp", "token": 2}}, F(3, 4)),  # (1/4) / (1/3)
        ({"draw": {"row": "nf", "token": 0}}, F(2, 9)),
        ({"draw": {"row": "ah", "token": 0}}, F(0)),
        ({"choice": {"condition": ["argmax-is", "ah", 1]}}, F(1)),
        ({"choice": {"condition": ["argmax-is", "ah", 0]}}, F(0)),
        ({"choice": {"condition": ["argmax-is-not", "ah", 0]}}, F(1)),
        ({"choice": {"condition": ["argmax-is-not", "ah", 1]}}, F(0)),
        ({"choice": {"condition": ["argmax-is", "un", 0]}}, F(1)),  # ties to the smallest id
        ({"choice": {"condition": ["argmax-is", "un", 1]}}, F(0)),
        ({"choice": {"condition": ["zero", "pp", 0]}}, F(1)),
        ({"choice": {"condition": ["zero", "pp", 1]}}, F(0)),
        ({"choice": {"condition": ["positive", "pp", 1]}}, F(1)),
        ({"choice": {"condition": ["positive", "pp", 0]}}, F(0)),
        (_coin(["ratio", "pp", "p", 2]), F(1, 2)),  # (1/4) / (1/2)
        (_coin(["ratio", "p", "q", 0]), F(1, 3)),
        (_coin(["cdf", "p", 1]), F(1, 2)),  # 1/6 + 1/3
        (_coin(["cdf", "pp", 1]), F(1, 4)),  # (0 + 1/12) / (1/3): the cdf of the normalized row
        (_coin(["cdf", "pp", 0]), F(0)),
        (_coin(["const", "2/5"]), F(2, 5)),
        ({"race": {"first": "p", "given": 2, "second": "p", "winner": 2}}, F(1)),  # the same race
        ({"race": {"first": "p", "given": 2, "second": "pp", "winner": 0}}, F(0)),  # weight 0 never wins
    ],
)
def test_primitive_probabilities_by_hand(event, probability):
    assert _probability(event) == probability


def test_a_race_by_hand():
    """P(y wins the race b | x won the race a) with shared Exp(1) clocks, by hand on V = 2:
    a = [1/2, 1/2], b = [1/4, 3/4]. Token i wins a race w iff E_i / w_i is least. Given 0 won a
    (E_0 < E_1), token 1 wins b iff E_1 / (3/4) < E_0 / (1/4), i.e. E_0 < E_1 < 3 E_0:
    P(E_0 < E_1 < 3 E_0) = 1/2 - 1/4 = 1/4, so the conditional is (1/4) / (1/2) = 1/2."""
    rows = {
        "a": {"recipe": ["given"], "values": ["1/2", "1/2"]},
        "b": {"recipe": ["given"], "values": ["1/4", "3/4"]},
        "p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"]},
    }
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 2,
        "reference": "a",
        "rows": rows,
        "nodes": [
            {
                "label": "n",
                "reach": "1/1",
                "branches": [
                    {
                        "event": {"race": {"first": "a", "given": 0, "second": "b", "winner": 1}},
                        "probability": "1/1",
                        "child": {"leaf": [0, True]},
                    }
                ],
            }
        ],
        "law": ["1/1", "0/1"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "1/2"},
        "claims": {"lossless": False},
    }
    verdict = checker.check(doc)
    assert verdict.reason is R.BRANCH and "expected 1/2, claimed 1/1" in verdict.detail
    doc["nodes"][0]["branches"][0]["event"]["race"]["winner"] = 0  # E_1 > 3 E_0: 1/4, over 1/2
    verdict = checker.check(doc)
    assert verdict.reason is R.BRANCH and "expected 1/2, claimed 1/1" in verdict.detail
    doc["nodes"][0]["branches"][0]["event"]["race"].update(given=1, winner=1)  # E_1 < E_0 wins b too: 1
    assert checker.check(doc).valid


@pytest.mark.parametrize(
    "edit,reason,detail",
    [
        (dict(event={"draw": {"row": "zero", "token": 0}}), R.MALFORMED, "draws from a row of mass 0"),
        (
            dict(rows={"nz": {"recipe": ["normalized", "zero"]}}),
            R.NOT_NORMALIZED,
            "normalizing row zero, which has mass 0",
        ),
        (dict(rows={"w": {"recipe": ["without", "p", [3]]}}), R.TOKENS, "removes [3]"),
        (dict(rows={"w": {"recipe": ["without", "p", [True]]}}), R.TOKENS, "removes [True]"),
        (dict(rows={"w": {"recipe": ["without", "p", "0"]}}), R.TOKENS, "removes '0'"),
        (dict(rows={"w": {"recipe": ["without", "p", [-1]]}}), R.TOKENS, "removes [-1]"),
        (dict(rows={"f": {"recipe": ["floor-difference", "p", "q", 0.1]}}), R.NOT_RATIONAL, "recipe eps"),
        (dict(rows={"q2": {"recipe": ["input", "q"], "values": Q3}}), R.MALFORMED, "named after itself"),
        (dict(rows={"c": {"recipe": ["copy", 5]}}), R.MALFORMED, "reads row 5, which is not listed"),
        (dict(rows={"i": {"recipe": ["input", "i"]}}), R.MALFORMED, "values belong to input and given rows only"),
        (
            dict(rows={"c": {"recipe": ["copy", "p"], "values": P3}}),
            R.MALFORMED,
            "values belong to input and given rows only",
        ),
        (dict(rows={"c": {"recipe": "copy"}}), R.MALFORMED, "not a list that starts with a known kind"),
        (dict(rows={"c": {"recipe": []}}), R.MALFORMED, "not a list that starts with a known kind"),
        (dict(rows={"c": {"recipe": ["sqrt", "p"]}}), R.MALFORMED, "not a list that starts with a known kind"),
        (dict(rows={"c": {"recipe": ["copy", "p", "q"]}}), R.MALFORMED, "has the wrong arguments"),
        (dict(event=_coin(["ratio", "p", "pp", 0])), R.MALFORMED, "divides by pp[0] = 0"),
        (dict(event=_coin(["ratio", "p", "pp"])), R.MALFORMED, "not ratio/cdf/masses/const"),
        (dict(event=_coin(["ratio", "p", "q", 3])), R.TOKENS, "token is 3"),
        (dict(event=_coin(["cdf", "zero", 0])), R.MALFORMED, "the cdf of row zero, which has mass 0"),
        (dict(event=_coin(["cdf", "p"])), R.MALFORMED, "not ratio/cdf/masses/const"),
        (dict(event=_coin(["const"])), R.MALFORMED, "not ratio/cdf/masses/const"),
        (dict(event=_coin(["log", "p"])), R.MALFORMED, "not ratio/cdf/masses/const"),
        (dict(event=_coin([])), R.MALFORMED, "not a source list and a strict flag"),
        (dict(event=_coin("const")), R.MALFORMED, "not a source list and a strict flag"),
        (dict(event=_coin(["const", "1/2"], strict=1)), R.MALFORMED, "not a source list and a strict flag"),
        (dict(event={"coin": {"model": "fixed:1/1", "lower": None, "upper": None}}), None, ""),  # u = 1 is a coin
        (
            dict(event={"coin": {"model": "fixed:1/1", "lower": None, "upper": None}}, probability="1/2"),
            R.BRANCH,
            "expected 1/1, claimed 1/2",
        ),
        (dict(event={"choice": {"condition": ["argmax-is", "p"]}}), R.MALFORMED, "has condition"),
        (dict(event={"choice": {"condition": ["larger", "p", 0]}}), R.MALFORMED, "has condition"),
        (dict(event={"choice": {"condition": "always"}}), R.MALFORMED, "has condition"),
        (dict(event={"choice": {"condition": ["zero", "p", 3]}}), R.TOKENS, "token is 3"),
        (dict(event={"choice": {"condition": ["zero", "nowhere", 0]}}), R.MALFORMED, "refers to row 'nowhere'"),
        (
            dict(event={"race": {"first": "pp", "given": 0, "second": "p", "winner": 0}}),
            R.MALFORMED,
            "cannot be won by 0",
        ),
        (dict(event={"race": {"first": "p", "given": 3, "second": "p", "winner": 0}}), R.TOKENS, "given is 3"),
        (dict(event={"race": {"first": "p", "given": 0, "second": "p", "winner": -1}}), R.TOKENS, "winner is -1"),
        (dict(event={"draw": {"row": "p", "token": -1}}), R.TOKENS, "token is -1"),
        (dict(event="draw"), R.MALFORMED, "not one known event"),
        (dict(event={}), R.MALFORMED, "not one known event"),
        (dict(nodes=[]), R.MALFORMED, "nodes is not a non-empty list"),
        (dict(nodes={"0": {}}), R.MALFORMED, "nodes is not a non-empty list"),
        (dict(nodes=[{"label": "n", "reach": "1/1", "branches": []}]), R.MALFORMED, "branches is not a non-empty list"),
        (dict(nodes=[{"label": "n", "reach": "1/1", "branches": {}}]), R.MALFORMED, "branches is not a non-empty list"),
        (dict(reference=["p"]), R.MALFORMED, "refers to row ['p']"),
        (dict(law=["1/1", "0/1"]), R.TOKENS, "law is not a list of vocab_size = 3 entries"),
        (dict(law=["1/1", "0/1", "1/2"]), R.EMITTED, "law[2]: expected 0/1, claimed 1/2"),
        (dict(leaf=(0, False)), R.TOTAL, "totals.alpha: expected 0/1, claimed 1/1"),  # a rejected path
    ],
)
def test_hostile_recipes_events_and_trees(edit, reason, detail):
    verdict = checker.check(_doc(**{"event": ALWAYS, **edit}))
    assert verdict.reason is reason and detail in verdict.detail, verdict


@pytest.mark.parametrize(
    "child",
    [
        1,
        -1,
        True,
        0.0,
        None,
        {"leaf": [0, True], "x": 1},
        {"leaf": (0, True, 1)},
        {"leaf": [True, True]},
        {"leaf": "0"},
    ],
)
def test_a_branch_child_is_a_later_node_or_a_leaf(child):
    doc = _doc(ALWAYS)
    doc["nodes"][0]["branches"][0]["child"] = child
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED and "child is" in verdict.detail, verdict


@pytest.mark.parametrize("output", [3, -1, 10**30])
def test_outputs_outside_the_vocabulary_are_counted_not_emitted(output):
    # every path ends at an output outside [0, V): the law is 0, TV = (1 + 1) / 2 = 1
    doc = _doc(
        ALWAYS, leaf=(output, False), law=["0/1"] * 3, totals={"alpha": "0/1", "out_of_range": "1/1", "tv": "1/1"}
    )
    verdict = checker.check(doc)
    assert verdict.valid, verdict
    assert _fractions(verdict.facts[0]["totals"]) == {"alpha": 0, "out_of_range": 1, "tv": 1}


def test_two_nodes_into_one_add_their_inflow():
    # node 0 draws 0 (1/6), 1 (1/3) or 2 (1/2) from p; 0 and 1 lead to node 1, 2 to a leaf;
    # node 1's reach is 1/6 + 1/3 = 1/2, and it always outputs 1 (accepted)
    doc = _doc(ALWAYS)
    doc["nodes"] = [
        {
            "label": "a",
            "reach": "1/1",
            "branches": [
                {
                    "event": {"draw": {"row": "p", "token": t}},
                    "probability": P3[t],
                    "child": 1 if t < 2 else {"leaf": [2, False]},
                }
                for t in range(3)
            ],
        },
        {
            "label": "b",
            "reach": "1/2",
            "branches": [{"event": ALWAYS, "probability": "1/1", "child": {"leaf": [1, True]}}],
        },
    ]
    doc.update(law=["0/1", "1/2", "1/2"], totals={"alpha": "1/2", "out_of_range": "0/1", "tv": "1/6"})
    verdict = checker.check(doc)
    assert verdict.valid, verdict
    assert _fractions(verdict.facts[0]["law"]) == [0, F(1, 2), F(1, 2)] and verdict.facts[0]["nodes"] == 2
    doc["nodes"][1]["reach"] = "1/3"
    verdict = checker.check(doc)
    assert verdict.reason is R.NODE_MASS and "expected 1/2, claimed 1/3" in verdict.detail


def _race_oracle(a, b, x, y):
    """P(y wins the race b | x wins the race a) on V = 3, shared clocks E_i ~ Exp(1), derived
    in the clocks (s, t) = (E_x, E_y) (the checker integrates over s and the ratio t / s):
    x wins a and y wins b iff m1 s < t < m2 s (m1 = a_y/a_x, m2 = b_y/b_x) and the third clock
    u exceeds max(alpha s, beta t) (alpha = a_k/a_x, beta = b_k/b_y). The double integral of
    exp(-c1 s - c2 t) over the cone m_lo s < t < m_hi s is (1/c2)(1/(c1 + c2 m_lo) - 1/(c1 + c2 m_hi))."""
    if b[y] == 0:
        return F(0)
    if x == y:
        return 1 / sum(max(a[i] / a[x], b[i] / b[x]) for i in range(3)) * sum(a) / a[x]
    (k,) = {0, 1, 2} - {x, y}
    m1, m2 = a[y] / a[x], (b[y] / b[x] if b[x] else None)
    alpha, beta = a[k] / a[x], b[k] / b[y]

    def cone(c1, c2, lo, hi):
        if hi is not None and lo >= hi:
            return F(0)
        return (1 / (c1 + c2 * lo) - (0 if hi is None else 1 / (c1 + c2 * hi))) / c2

    if beta == 0:  # u > alpha s only
        joint = cone(1 + alpha, F(1), m1, m2)
    else:  # alpha s >= beta t below the ray t = (alpha/beta) s
        ray = alpha / beta
        joint = cone(1 + alpha, F(1), m1, ray if m2 is None else min(m2, ray)) + cone(F(1), 1 + beta, max(m1, ray), m2)
    return joint * sum(a) / a[x]


RACE_ROWS = [
    ([F(1, 2), F(1, 6), F(1, 3)], [F(1, 6), F(1, 2), F(1, 3)]),  # every ratio a_i/b_i distinct: 3, 1/3, 1
    ([F(1, 4), F(1, 4), F(1, 2)], [F(0), F(1, 2), F(1, 2)]),  # b_0 = 0: an unbounded piece
    ([F(1, 5), F(2, 5), F(2, 5)], [F(3, 5), F(1, 5), F(1, 5)]),
    ([F(1, 3), F(1, 3), F(1, 3)], [F(1, 2), F(1, 2), F(0)]),  # b_2 = 0
    ([F(1, 7), F(2, 7), F(4, 7)], [F(4, 7), F(1, 7), F(2, 7)]),
    # ratios 27/22, 15/22, 45/44: a piece [45/44, 27/22] shorter than its left end (a probe at a
    # third of left + right would fall below the breakpoint 45/44)
    ([F(9, 22), F(4, 22), F(9, 22)], [F(5, 15), F(4, 15), F(6, 15)]),
    # given rows need not sum to 1: the first case with a doubled and b tripled then halved (same
    # answers; rows hold values in [0, 1])
    ([F(1), F(1, 3), F(2, 3)], [F(1, 4), F(3, 4), F(1, 2)]),
    # x = 0, y = 1: lo = 5/13, hi = 1, and the third ratio 5 lies above hi (no breakpoint)
    ([F(1, 4), F(1, 4), F(1, 2)], [F(1, 4), F(13, 20), F(1, 10)]),
    # x = 0, y = 1: lo = 1/16, hi = 1/2, the breakpoint a_2/b_2 = 1/4 with a_2 b_2 = 1 and b_2/a_2 = 4
    ([F(1, 2), F(1, 16), F(1, 2)], [F(1, 2), F(1, 2), F(1)]),
]


@pytest.mark.parametrize("a,b", RACE_ROWS)
def test_races_against_an_integral_in_the_clocks(a, b):
    rows = {
        name: {"recipe": ["given"], "values": [f"{v.numerator}/{v.denominator}" for v in row]}
        for name, row in (("a", a), ("b", b))
    }
    for x in range(3):
        if a[x] == 0:
            continue
        total = F(0)
        for y in range(3):
            want = _race_oracle(a, b, x, y)
            total += want
            event = {"race": {"first": "a", "given": x, "second": "b", "winner": y}}
            verdict = checker.check(_doc(event, probability="7/9", rows=rows))
            assert verdict.reason is R.BRANCH, verdict
            assert verdict.detail.endswith(f"expected {want.numerator}/{want.denominator}, claimed 7/9"), (
                x,
                y,
                verdict.detail,
            )
        assert total == 1  # given x, some token wins the second race


def test_spectr_rows_derive_from_p_and_q_by_scaled_and_minimum():
    from specproof.laws.variants import multidraft_tree

    p, q = ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]
    doc = build_outcome_certificate(
        multidraft_tree(p, q, 2, method="spectr", rho=2), name="spectr", statement="s", reference="p"
    )
    verdict = _check(doc)
    assert verdict.valid and verdict.facts[0]["given"] == []
    rows = {k: _fractions(v) for k, v in verdict.facts[0]["rows"].items()}
    assert rows["p-over-rho"] == [F(1, 4), F(1, 8), F(1, 8)]  # scaled p 1/2
    assert rows["spectr-min"] == [F(1, 4), F(1, 8), F(1, 8)]  # minimum with q = (1/4, 1/4, 1/2)
    beta = F(1, 2)  # c = (1 - (1 - beta)^2) / beta = 3/2
    assert rows["spectr-scaled-min"] == [F(3, 8), F(3, 16), F(3, 16)]
    assert rows["spectr-residual"] == [F(1, 8), F(1, 16), F(1, 16)] and sum(rows["spectr-residual"]) == 1 - 3 * beta / 2
    assert verdict.facts[0]["claims"] == {"lossless": True}
    tampered = copy.deepcopy(doc)
    tampered["rows"]["p-over-rho"]["recipe"][2] = "1/3"  # another rho: the test thresholds change
    assert _check(tampered).reason is checker.Reason.BRANCH
    tampered["rows"]["p-over-rho"]["recipe"][2] = "-1/2"
    assert _check(tampered).reason is checker.Reason.NEGATIVE
    tampered["rows"]["spectr-min"]["recipe"] = ["minimum", "q", "q"]  # min(q, q) = q: the residual changes
    tampered["rows"]["p-over-rho"]["recipe"][2] = "1/2"
    assert _check(tampered).reason is checker.Reason.BRANCH
